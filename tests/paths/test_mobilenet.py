"""MobileNetV2-0.35 (models/mobilenetv2_035) through our host library at 96K, 128K, 192K, 256K.

The model is built once and each plan compiled once per session (``plan_cache``, a
``tmp_path_factory`` directory). Per budget, ``MBV2_INPUTS`` random int8 inputs through the
reference and through ours: outputs byte-identical, fast and slow peaks ≤ the reference's (and
the fast peak ≤ 131072 at 128K: the model's declared ``-m 128K`` budget,
docs/models.md#compile-figures), the same path signature as the reference and as recorded here,
counters equal. One traced run takes ~0.1 s per runtime, so the whole file takes about 16 s (the
model build and four compiles included).
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest

from tests.opmodels import path_signature, random_inputs, read_plan
from tests.runtime.oracle import (
    assert_counters_equal,
    assert_outputs_identical,
    assert_peaks_not_above,
    compare,
    run_plan,
)

tigris_runtime = pytest.importorskip("tigris.runtime")

MBV2_INPUTS = 5

#: budget -> the reference's path signature (tigris-ml 0.12.1) and a fast-peak ceiling for ours
MBV2_BUDGETS: dict[str, tuple[str, int | None]] = {
    "96K": ("0:chain6-lb 6:chain3-lb 9:chain4-lb 13:chain2-lb 15:tiled 16:chain2-lb 18:normal", None),
    "128K": ("0:chain6-lb 6:chain3-lb 9:chain4-lb 13:tiled 14:normal 15:tiled 16:normal", 131072),
    "192K": ("0:chain6-lb 6:chain2-lb 8:normal", None),
    "256K": ("0:chain6-lb 6:tiled 7:normal", None),
}


def _build(out_dir: Path) -> Path:
    from models.mobilenetv2_035.build import build

    return build(out_dir / "mobilenetv2_035.onnx")


@pytest.mark.parametrize("budget", sorted(MBV2_BUDGETS, key=lambda b: int(b[:-1])))
def test_mobilenetv2(budget: str, plan_cache, our_library: Path) -> None:
    plan_path = plan_cache.plan("mobilenetv2_035", _build, budget)
    plan = read_plan(plan_path)
    expected, ceiling = MBV2_BUDGETS[budget]
    ref = run_plan(plan_path, random_inputs(plan_path, np.random.default_rng(0)))
    got = path_signature(plan, ref.events)
    assert got == expected, f"MBv2 @ {budget}: the reference now takes {got!r}, recorded {expected!r}"

    try:
        cmp = compare(plan_path, our_library, n_inputs=MBV2_INPUTS, seed=zlib.crc32(f"mbv2/{budget}".encode()))
    except tigris_runtime.RuntimeError as exc:
        pytest.fail(f"MBv2 @ {budget} ({expected}): our runtime raised: {exc}", pytrace=False)
    assert_outputs_identical(cmp)
    assert_peaks_not_above(cmp)
    for c in cmp.inputs:
        ours = path_signature(plan, c.ours.events)
        assert ours == expected, f"MBv2 @ {budget}: input {c.index}: our paths {ours!r}, reference {expected!r}"
        if ceiling is not None:
            assert c.ours.memory["fast_peak_bytes"] <= ceiling, (
                f"MBv2 @ {budget}: our fast peak {c.ours.memory['fast_peak_bytes']} > {ceiling}")
    assert_counters_equal(cmp)
