"""models/qdq.py helpers and the DS-CNN / MobileNetV2-0.35 builders.

The figures they check are explained in docs/models.md#compile-figures.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from models.qdq import check_weight_zero_points, quantize_qdq, strip_boundary_qdq
from tests.opmodels import CASES, compile_plan, read_plan, untiled_stages

tigris_runtime = pytest.importorskip("tigris.runtime")
REPO = Path(__file__).resolve().parent.parent


def _conv_qdq() -> onnx.ModelProto:
    case = CASES["conv3x3_c3_p1"]
    fp32 = case.make_fp32()
    return quantize_qdq(fp32, case.calibration(fp32))


def test_quantize_is_deterministic() -> None:
    a, b = _conv_qdq(), _conv_qdq()
    assert a.SerializeToString(deterministic=True) == b.SerializeToString(deterministic=True)


def test_weight_zero_points_are_zero_and_nonzero_is_refused() -> None:
    model = _conv_qdq()
    check_weight_zero_points(model)
    inits = {t.name: t for t in model.graph.initializer}
    weight_dq = next(n for n in model.graph.node
                     if n.op_type == "DequantizeLinear" and n.input[0] in inits
                     and numpy_helper.to_array(inits[n.input[0]]).dtype == np.int8)
    zp = numpy_helper.to_array(inits[weight_dq.input[2]]).copy()
    zp[0] = 3
    inits[weight_dq.input[2]].CopyFrom(numpy_helper.from_array(zp, weight_dq.input[2]))
    with pytest.raises(ValueError, match="non-zero weight zero points"):
        check_weight_zero_points(model)


def test_strip_boundary_gives_int8_interface_and_qparams() -> None:
    model = _conv_qdq()
    stripped, ins, outs = strip_boundary_qdq(model)
    assert [i.type.tensor_type.elem_type for i in stripped.graph.input] == [onnx.TensorProto.INT8]
    assert [o.type.tensor_type.elem_type for o in stripped.graph.output] == [onnx.TensorProto.INT8]
    assert [d.dim_value for d in stripped.graph.input[0].type.tensor_type.shape.dim] == [1, 3, 9, 11]
    assert len(ins) == 1 and len(outs) == 1
    assert ins[0].original == "x" and ins[0].scale > 0 and -128 <= ins[0].zero_point <= 127
    assert outs[0].tensor == stripped.graph.output[0].name
    assert len(stripped.graph.node) == len(model.graph.node) - 2
    with pytest.raises(ValueError):
        strip_boundary_qdq(stripped)  # nothing left to strip


def _cli_build(builder: str, out: Path) -> Path:
    subprocess.run([sys.executable, str(REPO / "models" / builder / "build.py"), "-o", str(out)],
                   check=True, capture_output=True)
    return out


def test_ds_cnn(tmp_path: Path) -> None:
    from models.ds_cnn.build import build

    onnx_path = _cli_build("ds_cnn", tmp_path / "sub" / "ds_cnn.onnx")
    assert build(tmp_path / "again.onnx").read_bytes() == onnx_path.read_bytes()

    plan_path = compile_plan(onnx_path, "20K", tmp_path / "ds20.tgrs")
    plan = read_plan(plan_path)
    assert (plan["num_stages"], plan["num_ops"], plan["num_tensors"]) == (1, 13, 14)
    assert plan["stages"][0]["peak_bytes"] == 16000
    for budget, stages in (("10K", 10), ("4K", 11)):
        small = read_plan(compile_plan(onnx_path, budget, tmp_path / f"ds{budget}.tgrs"))
        assert small["num_stages"] == stages
        assert not all(untiled_stages(small))  # DS-CNN: never several all-untiled stages

    rng = np.random.default_rng(3)
    outs = []
    with tigris_runtime.Session(str(plan_path)) as sess:
        (spec,) = sess.inputs
        assert spec["size_bytes"] == 490 and spec["dtype"] == np.int8
        for _ in range(8):
            x = rng.integers(-128, 128, size=spec["shape"], dtype=np.int8)
            outs.append(next(iter(sess.run({spec["name"]: x}).values())).copy())
        assert sess.memory["fast_peak_bytes"] == 16000
    assert len({o.tobytes() for o in outs}) > 1, "softmax output is constant across inputs"


def test_mobilenetv2_035(tmp_path: Path) -> None:
    onnx_path = _cli_build("mobilenetv2_035", tmp_path / "mbv2.onnx")
    plan_path = compile_plan(onnx_path, "128K", tmp_path / "mbv2.tgrs")
    plan = read_plan(plan_path)
    assert (plan["num_ops"], plan["num_stages"], plan["num_tensors"]) == (65, 17, 66)
    with tigris_runtime.Session(str(plan_path)) as sess:
        (spec,) = sess.inputs
        assert tuple(spec["shape"]) == (1, 224, 224, 3) and spec["dtype"] == np.int8
        x = np.random.default_rng(0).integers(-128, 128, size=spec["shape"], dtype=np.int8)
        y = next(iter(sess.run({spec["name"]: x}).values()))
        assert y.shape == (1, 10)
        assert sess.memory["fast_peak_bytes"] == 129472
