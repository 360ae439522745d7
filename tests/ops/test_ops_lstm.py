"""LSTM (int8 activations, int16 cell state) against the reference host runtime.

The sdist's ``lstm`` (batch major) and ``lstm_time_major_clip`` are the only LSTM plans tigris-ml
writes, so these tests edit them: their weights, biases, zero points, pairs, cell exponent and
clip are rewritten in place (same shapes) and both runtimes run the edited plan. Two sweeps make
every gate activation visible: with zero weights a gate's pre-activation is its bias, the other
gates are held at known values, and the cell state starts at minus an estimate of the probed
activation, so the hidden output of the first step is the estimate's error in cell units. Run on
both runtimes, the sweeps compare every tanh gate pre-activation the table covers (0..21844, the
rest saturates) and every sigmoid pre-activation on a grid, value for value. The state carried
from run to run is covered in test_ops_state.py (both fixtures are among its FIXTURES).
"""

from __future__ import annotations

import math
import struct
from pathlib import Path

import numpy as np
import pytest

from tests.ops.models_data import fixture_plan, refused_by_both

pytest.importorskip("tigris.runtime")

LSTM_ATTR = 16
FIXTURES = ("lstm", "lstm_time_major_clip")
ONE = 1 << 30  # the multiplier of 1/2: with shift 1 a pair is exact unit scaling


def _layout(plan: Path) -> tuple[bytes, int, list[tuple[int, int]], int]:
    """(plan bytes, offset of the LSTM attribute payload, (offset, size) of its 12 constants,
    offset of the state section's initial values)."""
    from tigris.emitters.binary.reader import read_binary_plan

    data = plan.read_bytes()
    parsed = read_binary_plan(data)
    (attr,) = [a["data"] for a in parsed["op_attributes"] if a["type"] == LSTM_ATTR]
    assert data.count(attr) == 1
    constants = [(w["blob_base"] + w["offset"], w["size_bytes"]) for w in parsed["weights"]]
    initial = b"".join(entry["initial"] for entry in parsed["state"]["entries"])
    assert data.endswith(initial)
    return data, data.find(attr), constants, len(data) - len(initial)


def _same_outputs(plan: Path, lib: Path, runs: int, seed: int) -> list[np.ndarray]:
    """Runs both runtimes `runs` times on one session each (state reset half way); returns the
    reference's outputs after asserting ours are byte-identical."""
    from tests.runtime.oracle import open_session

    rng = np.random.default_rng(seed)
    seen = []
    with open_session(plan, None) as reference, open_session(plan, lib) as ours:
        (spec,) = reference.inputs
        for run in range(runs):
            if run == runs // 2:
                reference.reset_state()
                ours.reset_state()
            feeds = {spec["name"]: rng.integers(-128, 128, size=spec["shape"]).astype(np.int8)}
            expected, got = reference.run(feeds), ours.run(feeds)
            for key in expected:
                assert got[key].tobytes() == expected[key].tobytes(), f"{plan.name} run {run}: {key} differs"
            seen.append(next(iter(expected.values())))
    return seen


def _mutated(data: bytes, attr: int, constants: list[tuple[int, int]], rng: np.random.Generator) -> bytes:
    """Random weights, biases, zero points, cell exponent (over the whole range the reference
    accepts, wrapping products included), clip with or without a float clip, and pairs."""
    buf = bytearray(data)
    for k, (offset, size) in enumerate(constants):
        if k < 8:
            buf[offset:offset + size] = rng.integers(-128, 128, size).astype(np.int8).tobytes()
        else:
            scale = float(rng.choice([1e2, 1e4, 1e6, 1e8]))
            buf[offset:offset + size] = (rng.standard_normal(size // 4) * scale).astype(np.int32).tobytes()
    if rng.random() < 0.5:
        struct.pack_into("<f", buf, attr + 4, float(rng.choice([0.0, 0.25, 3.0])))
    struct.pack_into("<iiii", buf, attr + 8, *map(int, rng.integers(-128, 128, 2)), int(rng.integers(-30, 16)),
                     int(rng.integers(0, 32768)))
    for k in range(11):
        if rng.random() < 0.3:
            multiplier, shift = int(rng.integers(0, 2**31)), int(rng.integers(-31, 31))
        else:
            multiplier = int(rng.integers(2**30, 2**31))
            shift = int(rng.integers(-22, 2)) if k < 8 else int(rng.integers(-24, -10))
        struct.pack_into("<ii", buf, attr + 24 + 8 * k, multiplier, shift)
    return bytes(buf)


@pytest.mark.parametrize("name", FIXTURES)
def test_random_variants_match_the_reference(name: str, work: Path, lib: Path) -> None:
    data, attr, constants, _ = _layout(fixture_plan(name, work))
    rng = np.random.default_rng(29)
    distinct = set()
    for trial in range(60):
        plan = work / f"{name}_variant.tgrs"
        plan.write_bytes(_mutated(data, attr, constants, rng))
        distinct.update(out.tobytes() for out in _same_outputs(plan, lib, runs=6, seed=trial))
    assert len(distinct) > 200  # the variants exercise more than saturated outputs


def _probe_plan(data: bytes, attr: int, constants: list[tuple[int, int]], initial: int, *, gate: int,
                pre: list[int], cell: list[int], held: dict[int, int], power: int, pairs: dict[int, tuple[int, int]]) -> bytes:
    """Zero weights; gate `gate`'s biases are `pre` (its input pair is unit scaling, so they are
    its pre-activations), the other gates' biases are `held`; hidden state 0, zero points 0."""
    buf = bytearray(data)
    for k, (offset, size) in enumerate(constants):
        if k < 8:
            buf[offset:offset + size] = bytes(size)
        else:
            values = pre if k - 8 == gate else [held.get(k - 8, 0)] * (size // 4)
            buf[offset:offset + size] = np.array(values, np.int32).tobytes()
    struct.pack_into("<fiiii", buf, attr + 4, 0.0, 0, 0, power, 0)
    for k in range(11):
        struct.pack_into("<ii", buf, attr + 24 + 8 * k, *pairs.get(k, (ONE, 1)))
    units = len(pre)
    buf[initial:initial + units] = bytes(units)
    buf[initial + units:initial + 3 * units] = np.array(cell, np.int16).tobytes()
    return bytes(buf)


def _first_step(plan: Path, lib: Path, units: int) -> np.ndarray:
    """The first step's hidden output on both runtimes (asserted identical), as ints."""
    from tests.runtime.oracle import open_session

    with open_session(plan, None) as reference, open_session(plan, lib) as ours:
        (spec,) = reference.inputs
        feeds = {spec["name"]: np.zeros(spec["shape"], np.int8)}
        expected, got = reference.run(feeds), ours.run(feeds)
        for key in expected:
            assert got[key].tobytes() == expected[key].tobytes(), f"{plan.name}: {key} differs"
        return next(iter(expected.values())).reshape(-1)[:units].astype(int)


# cell exponent -8 makes tanh(cell) about 128 per cell unit near 0; the output pair 2^-21 with the
# output gate at sigmoid(0) = 2^14 then prints the cell state itself, for |cell| up to ~30
_READ = {"power": -8, "pairs": {8: (ONE, -13), 9: (ONE, -13), 10: (ONE, -20)}}


@pytest.mark.slow
def test_every_tanh_gate_value_matches_the_reference(work: Path, lib: Path) -> None:
    """cell = -estimate + tanh(pre) (forget and input gates at sigmoid(0) = 2^14, products
    scaled by 2^-14): the printed residual is the reference's tanh minus our float estimate."""
    data, attr, constants, initial = _layout(fixture_plan("lstm", work))
    units = constants[8][1] // 4
    plan = work / "lstm_tanh_probe.tgrs"
    residuals = []
    for start in range(0, 21845, units):
        pre = [min(start + u, 21844) for u in range(units)]
        estimate = [round(32768 * math.tanh(p / 4096)) for p in pre]
        plan.write_bytes(_probe_plan(data, attr, constants, initial, gate=2, pre=pre,
                                     cell=[-e for e in estimate], held={}, **_READ))
        residuals.extend(_first_step(plan, lib, units))
    # the read stays in the linear range: every value was seen exactly, not clamped
    assert max(abs(r) for r in residuals) < 25
    assert any(r != 0 for r in residuals)


@pytest.mark.slow
def test_every_sigmoid_gate_value_matches_the_reference(work: Path, lib: Path) -> None:
    """cell = -estimate + sigmoid(pre) x tanh(saturated) (= 32767): the printed residual is the
    reference's sigmoid minus our float estimate, over every 3rd pre-activation (all 64 table
    steps of 1/24 and their interpolation)."""
    data, attr, constants, initial = _layout(fixture_plan("lstm", work))
    units = constants[8][1] // 4
    plan = work / "lstm_sigmoid_probe.tgrs"
    pairs = {**_READ["pairs"], 9: (ONE, -14)}  # input gate x 32767 x 2^-15
    residuals = []
    for start in range(-32768, 32768, 3 * units):
        pre = [min(start + 3 * u, 32767) for u in range(units)]
        estimate = [round(32767 / (1 + math.exp(-p / 4096)) * 32767 / 32768) for p in pre]
        plan.write_bytes(_probe_plan(data, attr, constants, initial, gate=0, pre=pre, cell=[-e for e in estimate],
                                     held={2: 32767}, power=_READ["power"], pairs=pairs))
        residuals.extend(_first_step(plan, lib, units))
    assert max(abs(r) for r in residuals) < 25
    assert any(r != 0 for r in residuals)


@pytest.mark.parametrize("field, value, fmt", [
    (0, 2, "<i"),                      # time_major
    (4, -1.0, "<f"),                   # float cell clip
    (8, 128, "<i"),                    # input zero point
    (12, -129, "<i"),                  # hidden zero point
    (16, 16, "<i"),                    # cell exponent
    (16, -31, "<i"),
    (20, 32768, "<i"),                 # clip in cell units
    (24, -5, "<i"),                    # a gate multiplier
    (28, 31, "<i"),                    # a gate shift
    (108, -32, "<i"),                  # the output product's shift
])
def test_out_of_range_attributes_are_refused_like_the_reference(field: int, value, fmt: str, work: Path,
                                                                 lib: Path) -> None:
    data, attr, _, _ = _layout(fixture_plan("lstm", work))
    buf = bytearray(data)
    struct.pack_into(fmt, buf, attr + field, value)
    message = refused_by_both(lib, bytes(buf), work / f"lstm_attr_{field}.tgrs")
    assert "(Lstm)" in message and "out of range" in message, message


def test_edge_values_the_reference_accepts_run(work: Path, lib: Path) -> None:
    """The ends of every range the reference accepts load and match (wrapping tanh inputs at
    exponent 15, a zero multiplier, shifts -31 and 30)."""
    data, attr, _, _ = _layout(fixture_plan("lstm_time_major_clip", work))
    for power, clip, pair in ((15, 32767, (0, 30)), (-30, 0, (2**31 - 1, -31)), (2, 1, (1, 0))):
        buf = bytearray(data)
        struct.pack_into("<ii", buf, attr + 16, power, clip)
        struct.pack_into("<ii", buf, attr + 24 + 8 * 3, *pair)
        plan = work / f"lstm_edge_{power}.tgrs"
        plan.write_bytes(bytes(buf))
        _same_outputs(plan, lib, runs=4, seed=abs(power))
