"""Every tests/opmodels case builds, compiles into the intended plan, and runs on the host runtime.

Per case: build the int8 QDQ model in a tmp dir, `tigris compile -m 256K`, check the plan's
opcodes and fields (read with read_binary_plan), that it is ONE stage on the normal (untiled)
path, and run it once on tigris.runtime.Session with a random input. The host output is also
compared with ONNX Runtime running the same QDQ model (≤ 1 LSB: one op cannot drift; whole
networks can, docs/models.md#comparing-with-onnx-runtime), which guards the models themselves
(e.g. the NHWC/NCHW flatten order). About 30 s in total.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.opmodels import CASES, compile_plan, random_inputs, read_plan, untiled_stages

tigris_runtime = pytest.importorskip("tigris.runtime")
ort = pytest.importorskip("onnxruntime")


def _stage_paths(session, inputs) -> list[str]:
    _, events, _ = session.trace(inputs)
    return [e["path"] for e in events if e["kind"] == "stage_begin"]


def _ort_run(onnx_path: Path, inputs: dict[str, np.ndarray]) -> np.ndarray:
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    # The QDQ graph as written (DequantizeLinear -> float op -> QuantizeLinear), not ORT's fused
    # int8 kernels: those differ by CPU (on an AVX2 machine without VNNI, up to 29 LSB here), the
    # QDQ semantics do not, and they are what this comparison guards (layout, flatten order).
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(onnx_path), opts, providers=["CPUExecutionProvider"])
    (arr,) = inputs.values()
    nchw = arr.transpose(0, 3, 1, 2) if arr.ndim == 4 else arr  # plan interface is NHWC
    return sess.run(None, {sess.get_inputs()[0].name: nchw})[0]


def _to_model_order(arr: np.ndarray) -> np.ndarray:
    return arr.transpose(0, 3, 1, 2) if arr.ndim == 4 else arr


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_compiles_to_intended_plan_and_runs(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    onnx_path = case.build(tmp_path)
    plan_path = compile_plan(onnx_path, case.budget, tmp_path / f"{name}.tgrs")
    plan = read_plan(plan_path)

    assert tuple(op["op_type"] for op in plan["ops"]) == case.expect_ops
    if case.check is not None:
        case.check(plan)
    assert plan["num_stages"] == 1
    (stage,) = plan["stages"]
    assert stage["tile_plan_idx"] == 0xFFFF and stage["chain_len"] == 0
    assert plan["tile_plans"] == []

    rng = np.random.default_rng(0)
    with tigris_runtime.Session(str(plan_path)) as sess:
        inputs = random_inputs(sess, rng)
        assert _stage_paths(sess, inputs) == ["normal"]
        out = sess.run(inputs)
        (spec,) = sess.outputs
        y = out[spec["name"]]
        assert y.shape == tuple(spec["shape"]) and y.dtype == spec["dtype"]

    ref = _ort_run(onnx_path, inputs)
    got = _to_model_order(y)
    assert ref.shape == got.shape
    if got.dtype == np.int8:
        assert np.abs(ref.astype(np.int32) - got.astype(np.int32)).max() <= 1
    else:  # float interface: within one output quantization step
        q = plan["quant_params"][plan["tensors"][plan["model_outputs"][0]]["quant_param_idx"]]
        assert np.abs(ref - got).max() <= q["scale"] * 1.001


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if c.multistage_budget))
def test_multistage_case_is_all_untiled(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    onnx_path = case.build(tmp_path)
    small = read_plan(compile_plan(onnx_path, case.multistage_budget, tmp_path / "small.tgrs"))
    assert small["num_stages"] >= 2
    assert all(untiled_stages(small))
    outs = []
    for plan_file in (tmp_path / "small.tgrs", compile_plan(onnx_path, case.budget, tmp_path / "big.tgrs")):
        with tigris_runtime.Session(str(plan_file)) as sess:
            inputs = random_inputs(sess, np.random.default_rng(1))
            if plan_file.name == "small.tgrs":
                assert _stage_paths(sess, inputs) == ["normal"] * small["num_stages"]
            outs.append(next(iter(sess.run(inputs).values())))
    np.testing.assert_array_equal(outs[0], outs[1])  # stage splitting never changes numerics


def test_stage_without_tile_plan_can_still_run_tiled(tmp_path: Path) -> None:
    """inverted_residual_x2 @17K: 4 stages, no tile plans/chains, but stage 1 runs tiled."""
    onnx_path = CASES["inverted_residual_x2"].build(tmp_path)
    plan_path = compile_plan(onnx_path, "17K", tmp_path / "x2.tgrs")
    plan = read_plan(plan_path)
    assert all(s["tile_plan_idx"] == 0xFFFF and s["chain_len"] == 0 for s in plan["stages"])
    assert untiled_stages(plan) == [True, False, True, True]
    with tigris_runtime.Session(str(plan_path)) as sess:
        assert _stage_paths(sess, random_inputs(sess, np.random.default_rng(0))) == [
            "normal", "tiled", "normal", "normal"]


@pytest.mark.parametrize("name", ["conv3x3_c3_p1", "avgpool3x3_s2_p1", "softmax_int"])
def test_builds_are_byte_identical(name: str, tmp_path: Path) -> None:
    a = CASES[name].build(tmp_path / "a").read_bytes()
    b = CASES[name].build(tmp_path / "b").read_bytes()
    assert a == b
