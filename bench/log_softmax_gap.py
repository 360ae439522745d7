#!/usr/bin/env python3
"""How far an exactly computed int8 LogSoftmax is from the reference runtime's.

Why this exists: the runtime's LogSoftmax uses the reference's fixed-point logarithm
(kernels_softmax.c, docs/execution.md#logsoftmax), not an exactly rounded one; this script
measures how often the exact one would give different bytes, the reason an exact logarithm is
not used. Re-run it whenever that question comes back.

Model checked against the bundled reference, row by row (last axis, output 1/16, zero point 127):
  d   = x - max(row)                                   (int)
  dq  = SRDHM(d * 2^S, M), (M, S) = QuantizeMultiplier(s_in * 2^26)   Q5.26, as int8 Softmax
  sum = sum over d >= diff_min of RDBPOT(exp_on_negative_values(dq), 12)   Q12.19, as Softmax
  Lq  = round(ln(sum / 2^19) * 2^26)                   exact logarithm, Q5.26
  y   = clamp(RDBPOT(dq - Lq, 22) + 127), -128 when d < diff_min
Everything but the logarithm is the int8 Softmax arithmetic (docs/execution.md#softmax). The
printed figures are how often that model differs from the reference, and the bounds the reference's
outputs put on its own logarithm L_ref relative to the exact one (Q5.26 units): the largest
lower bound and the smallest upper bound seen on any row. Both stay within a couple of units, so
the reference uses a fixed-point logarithm accurate to ~2^-25; when the largest lower bound
exceeds the smallest upper bound no constant correction of the exact logarithm reproduces it.

Usage: bench/log_softmax_gap.py [--batches 300] [--scales 0.0234,0.05,0.1]
"""

from __future__ import annotations

import argparse
import math
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent

from tests.ops.models_activation import op_model, plan_of

ROWS, WIDTH = 4096, 16
INT32_MAX = (1 << 31) - 1


def wrap(v: int) -> int:
    """Two's-complement int32 wrap of a Python int."""
    v &= (1 << 32) - 1
    return v - (1 << 32) if v >= 1 << 31 else v


def srdhm(a: int, b: int) -> int:
    if a == b == -(1 << 31):
        return INT32_MAX
    p = a * b
    p += (1 << 30) if p >= 0 else 1 - (1 << 30)
    return wrap(abs(p) // (1 << 31) * (1 if p >= 0 else -1))


def rdbpot(x: int, e: int) -> int:
    mask = (1 << e) - 1
    return (x >> e) + (1 if (x & mask) > (mask >> 1) + (1 if x < 0 else 0) else 0)


def exp_on_negative_values(a: int) -> int:
    """exp(a) of a Q5.26 a <= 0 as Q0.31 (gemmlowp barrel shifter, docs/execution.md#softmax)."""
    quarter = 1 << 24
    a_mod = wrap((a & (quarter - 1)) - quarter)
    x = wrap(max(min(a_mod, INT32_MAX >> 5), -(INT32_MAX >> 5) - 1) << 5)
    x = wrap(x + (1 << 28))
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    poly = rdbpot(wrap(srdhm(wrap(rdbpot(x4, 2) + x3), 715827883) + x2), 1)
    result = wrap(1895147668 + srdhm(1895147668, wrap(x + poly)))
    remainder = wrap(a_mod - a)
    for k, m in enumerate((1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242)):
        if remainder & (1 << (24 + k)):
            result = srdhm(result, m)
    return INT32_MAX if a == 0 else result


def tables(scale: float) -> tuple[np.ndarray, np.ndarray, int]:
    """Per difference d in -255..0: dq (Q5.26) and the Q12.19 exp term; and diff_min."""
    fraction, exponent = math.frexp(min(scale * 2.0**26, INT32_MAX))
    multiplier = int(math.floor(fraction * 2**31 + 0.5))
    if multiplier == 1 << 31:
        multiplier, exponent = multiplier // 2, exponent + 1
    diff_min = -math.floor(31 * 2**26 / 2**exponent)
    dq = np.zeros(256, np.int64)
    term = np.zeros(256, np.int64)
    for d in range(max(-255, diff_min), 1):
        dq[d + 255] = srdhm(wrap(d << exponent), multiplier)
        term[d + 255] = rdbpot(exp_on_negative_values(int(dq[d + 255])), 12)
    return dq, term, diff_min


def measure(scale: float, batches: int, work: Path) -> None:
    from tigris.runtime import Session

    plan = plan_of(work, f"log_softmax_{scale:g}", op_model("LogSoftmax", {"x": [ROWS, WIDTH]}, axis=-1),
                   {"x": (scale, 3), "y": (1 / 16, 127)}, budget="1M")
    s_in = float(np.float32(scale))
    dq_of, term_of, diff_min = tables(s_in)
    rng = np.random.default_rng(1)
    mismatches = rows_off = elements = 0
    low_needed, high_needed = -math.inf, math.inf
    with Session(str(plan)) as session:
        name, shape = session.inputs[0]["name"], session.inputs[0]["shape"]
        for b in range(batches):
            span = (128, 12, 50)[b % 3]
            x = rng.integers(-span, span, (ROWS, WIDTH)).clip(-128, 127)
            ref = list(session.run({name: x.reshape(shape).astype(np.int8)}).values())[0]
            ref = ref.reshape(ROWS, WIDTH).astype(np.int64)
            d = x - x.max(1, keepdims=True)
            live = d >= diff_min
            sums = term_of[d + 255].sum(1, keepdims=True)
            exact = np.log(sums / 2.0**19) * 2**26
            v = dq_of[d + 255] - np.floor(exact + 0.5).astype(np.int64)
            y = (v >> 22) + ((v & (2**22 - 1)) > (2**21 - 1) + (v < 0)) + 127
            y = np.where(live, y.clip(-128, 127), -128)
            mismatches += int((y != ref).sum())
            rows_off += int((y != ref).any(1).sum())
            elements += x.size
            # Where the reference's code k = ref - 127 is unclamped, RDBPOT(dq - L, 22) == k bounds L.
            inner = live & (ref > -128) & (ref < 127)
            k = ref - 127
            lo = np.where(inner, dq_of[d + 255] - (k + 0.5) * 2**22, -np.inf).max(1) - exact[:, 0]
            hi = np.where(inner, dq_of[d + 255] - (k - 0.5) * 2**22, np.inf).min(1) - exact[:, 0]
            low_needed, high_needed = max(low_needed, lo.max()), min(high_needed, hi.min())
    print(f"{s_in:<12.6g} {elements:>11,} {mismatches:>10,} {mismatches / elements * 1e6:>9.2f} "
          f"{rows_off:>9,} {low_needed:>+12.2f} {high_needed:>+12.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=300, help=f"runs of {ROWS}x{WIDTH} random rows per scale")
    parser.add_argument("--scales", default="0.023409413173794746,0.05,0.1,0.0137")
    args = parser.parse_args()
    print("input scale     elements  different  per 1e6  rows off  L_ref-L >=   L_ref-L <=")
    with tempfile.TemporaryDirectory() as tmp:
        for scale in (float(s) for s in args.scales.split(",")):
            measure(scale, args.batches, Path(tmp))


if __name__ == "__main__":
    main()
