"""Runs the reference fails, failed the same way by ours; the next run on the session works.

Rsqrt of an input below its zero point (a negative value), a LogSoftmax row whose Q12 sum of exps
passes int32 (4,096 maxima and more), an L2Normalization row whose sum of squares passes int32,
a Div whose divisor code equals its zero point:
the reference accepts these plans and fails the inference (docs/execution.md#run-time-errors).
Ours fails that run with TGR_ERR_EXEC and a message naming the op, and the same session then
runs a valid input byte-identical to the reference, so a failed run leaves nothing behind.
The boundaries are the ones the reference was measured at: one element fewer runs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.ops.models_data import fixture_plan, graph, node, plan_for

pytest.importorskip("tigris.runtime")

import tigris.runtime as tr


def _sessions(plan: Path, lib: Path):
    from tests.runtime.oracle import open_session

    return open_session(plan, None), open_session(plan, lib)


def _input_name(session) -> str:
    (spec,) = session.inputs
    return spec["name"]


def _assert_both_fail_then_recover(plan: Path, lib: Path, bad, good, op: str) -> None:
    """`bad`/`good`: the single input's codes, or feeds by name."""
    reference, ours = _sessions(plan, lib)
    with reference, ours:
        if not isinstance(bad, dict):
            name = _input_name(reference)
            bad, good = {name: bad}, {name: good}
        with pytest.raises(tr.RuntimeError):
            reference.run(bad)
        with pytest.raises(tr.RuntimeError, match=rf"op \d+ \({op}\): "):
            ours.run(bad)
        expected = reference.run(good)
        got = ours.run(good)
        assert list(got) == list(expected)
        for key in expected:
            assert np.asarray(got[key]).tobytes() == np.asarray(expected[key]).tobytes(), key


def test_rsqrt_of_a_value_below_the_zero_point_fails_the_run(work: Path, lib: Path) -> None:
    """The sdist's Rsqrt fixture with its input zero point moved from -128 to 0 (a plan the
    reference accepts as it is): codes below 0 are negative values."""
    from tests.runtime.plantools import PlanView

    fixture = fixture_plan("rsqrt", work)
    view = PlanView(fixture.read_bytes())
    entry = view.info["tensors"][0]["quant_param_idx"]
    plan = work / "rsqrt_zero_point_0.tgrs"
    plan.write_bytes(view.set_quant(entry, "zero_point", 0))
    from tests.runtime.oracle import open_session

    with open_session(plan, None) as reference:
        spec = reference.inputs[0]
    good = np.arange(np.prod(spec["shape"]), dtype=np.int64).reshape(spec["shape"]) % 128
    good = good.astype(spec["dtype"])
    bad = good.copy()
    bad.flat[77] = -1
    _assert_both_fail_then_recover(plan, lib, bad, good, "Rsqrt")


@pytest.mark.parametrize("maxima, fails", [(4095, False), (4097, True)])
def test_log_softmax_row_sum_past_int32_fails_the_run(maxima: int, fails: bool, work: Path, lib: Path) -> None:
    """A row of `maxima` equal maxima and far elements: 4,097 x 2^19 passes 2^31 - 1."""
    width = 4100
    model = graph([node("LogSoftmax", ["x"], ["y"], axis=1)], {"x": [1, width]})
    plan = plan_for(work, f"log_softmax_{width}", model, {"x": (0.05, 0), "y": (1 / 16, 127)})
    from tests.runtime.oracle import open_session

    with open_session(plan, None) as reference:
        row = np.full(reference.inputs[0]["shape"], -128, dtype=reference.inputs[0]["dtype"])
    row.flat[:maxima] = 100
    good = np.full_like(row, -128)
    good.flat[:10] = 100
    if fails:
        _assert_both_fail_then_recover(plan, lib, row, good, "LogSoftmax")
    else:
        reference, ours = _sessions(plan, lib)
        with reference, ours:
            name = _input_name(reference)
            expected, got = reference.run({name: row}), ours.run({name: row})
            assert all(np.asarray(got[k]).tobytes() == np.asarray(expected[k]).tobytes() for k in expected)


def test_l2_normalization_sum_of_squares_past_int32_fails_the_run(work: Path, lib: Path) -> None:
    """33,100 elements at |x - zp| = 255 sum to 2,152,327,500 > 2^31 - 1."""
    width = 33100
    model = graph([node("LpNormalization", ["x"], ["y"], axis=-1, p=2)], {"x": [1, width]})
    plan = plan_for(work, f"l2_norm_{width}", model, {"x": (0.02, -128), "y": (1 / 128, 0)}, budget="512K")
    from tests.runtime.oracle import open_session

    with open_session(plan, None) as reference:
        spec = reference.inputs[0]
    bad = np.full(spec["shape"], 127, dtype=spec["dtype"])
    good = bad.copy()
    good.flat[33000:] = -128  # 33,000 x 255^2 = 2,145,825,000 runs
    _assert_both_fail_then_recover(plan, lib, bad, good, "L2Normalization")


def test_div_by_a_divisor_at_its_zero_point_fails_the_run(work: Path, lib: Path) -> None:
    """The sdist's Div fixture: random codes with the divisor's zero point avoided run
    byte-identical; one divisor code at its zero point fails the run on both."""
    from tests.runtime.oracle import open_session
    from tests.runtime.plantools import PlanView

    plan = fixture_plan("div", work)
    info = PlanView(plan.read_bytes()).info
    (op,) = [o for o in info["ops"] if o["op_type"] == 19]
    divisor = op["inputs"][1]
    zero_point = info["quant_params"][info["tensors"][divisor]["quant_param_idx"]]["zero_point"]
    with open_session(plan, None) as reference:
        specs = reference.inputs
    by_tensor = {t["name"]: i for i, t in enumerate(info["tensors"])}
    rng = np.random.default_rng(9)
    allowed = np.array([c for c in range(-128, 128) if c != zero_point], dtype=np.int8)
    good = {}
    for spec in specs:
        codes = rng.integers(-128, 128, spec["shape"]).astype(np.int8)
        if by_tensor.get(spec["name"]) == divisor:
            codes = rng.choice(allowed, spec["shape"]).astype(np.int8)
        good[spec["name"]] = codes
    divisor_name = next(s["name"] for s in specs if by_tensor.get(s["name"]) == divisor)
    bad = {k: v.copy() for k, v in good.items()}
    bad[divisor_name].flat[3] = zero_point
    _assert_both_fail_then_recover(plan, lib, bad, good, "Div")
