"""Reductions and pools of our runtime against the reference host runtime, byte for byte.

ReduceMean (26; TFLite MEAN requantization, also with equal quantization), ReduceSum (62;
QM(s_in/s_out) on sum - zp_in * count), ReduceMax/ReduceMin (60/61; equal quantization only,
the compiler refuses others), GlobalMaxPool (31; maximum requantized in double), and the
MaxPool/AveragePool variants the ONNX front end resolves into explicit pads (ceil_mode,
SAME_UPPER/SAME_LOWER). The ONNX front end only emits ReduceX for a rank-3 input and one axis;
multi-axis and non-adjacent reductions come from the compiler's TFLite fixtures. CumSum (63):
running sums along one axis, inclusive/exclusive, forward/reverse, on tie-prone scales, in row
bands, and refused where the reference's accumulator can overflow (it then fails the run).
ArgMax/ArgMin (64/65): int32 indices as model outputs (int64 at an ONNX interface), whole and in
row bands, including outputs that drop the reduced axis.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.ops.models_data import (
    assert_refused,
    assert_same_as_reference,
    const,
    fixture_plan,
    graph,
    node,
    opcodes,
    plan_for,
    read_plan,
    reference_paths,
)

pytest.importorskip("tigris.runtime")

CUMSUM = 63
OPCODE = {"ReduceMean": 26, "ReduceMax": 60, "ReduceMin": 61, "ReduceSum": 62, "GlobalMaxPool": 31,
          "MaxPool": 5, "AveragePool": 6, "ArgMax": 64, "ArgMin": 65}

QUANT = {  # (input, output)
    "same": ((0.02, 3), (0.02, 3)),
    "down": ((0.02, 3), (0.03, -4)),
    "up": ((0.05, -10), (0.01, 7)),
    "wide": ((0.03, 5), (0.11, -20)),
    "tie_half": ((0.1, 3), (0.2, -5)),
}


def _quant(name: str):
    (si, zi), (so, zo) = QUANT[name]
    return {"x": (si, zi), "y": (so, zo)}


def _reduce_model(op: str, shape, axis: int, keepdims: int):
    if op == "ReduceSum":  # opset 13: axes is an input
        return graph([node(op, ["x", "a"], ["y"], keepdims=keepdims)], {"x": shape}, [const("a", [axis])])
    return graph([node(op, ["x"], ["y"], axes=[axis], keepdims=keepdims)], {"x": shape})


@pytest.mark.parametrize("keepdims", [1, 0])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("qset", ["same", "down", "up", "wide"])
@pytest.mark.parametrize("op", ["ReduceMean", "ReduceSum"])
def test_reduce_mean_sum(op: str, qset: str, axis: int, keepdims: int, work: Path, lib: Path) -> None:
    shape = [3, 7, 5] if axis else [4, 6, 5]
    plan = plan_for(work, f"{op}_{qset}_{axis}_{keepdims}", _reduce_model(op, shape, axis, keepdims), _quant(qset))
    assert OPCODE[op] in opcodes(read_plan(plan))
    if (op, axis, keepdims) == ("ReduceMean", 0, 0):
        # The compiler reduces stored NLC [4, 5, 6] over N into a model-order [6, 5] output
        # without a Transpose: the kept axes come out permuted, and the reference refuses the
        # plan ("operator contract is not executable"). Our check sees the same mismatch.
        assert_refused(plan, lib, "ReduceMean", reference_refuses=True)
        return
    assert_same_as_reference(plan, lib, n_inputs=4)


@pytest.mark.parametrize("keepdims", [1, 0])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
def test_reduce_max_min(op: str, axis: int, keepdims: int, work: Path, lib: Path) -> None:
    plan = plan_for(work, f"{op}_{axis}_{keepdims}", _reduce_model(op, [3, 7, 5], axis, keepdims), _quant("same"))
    assert OPCODE[op] in opcodes(read_plan(plan))
    assert_same_as_reference(plan, lib, n_inputs=4)


@pytest.mark.parametrize("qset", sorted(QUANT))
@pytest.mark.parametrize("shape", [[1, 4, 5, 6], [2, 3, 7, 1], [1, 256, 2, 2]], ids=str)
def test_global_max_pool(shape, qset: str, work: Path, lib: Path) -> None:
    plan = plan_for(work, f"gmp_{'x'.join(map(str, shape))}_{qset}", graph([node("GlobalMaxPool", ["x"], ["y"])],
                                                                            {"x": shape}), _quant(qset))
    assert OPCODE["GlobalMaxPool"] in opcodes(read_plan(plan))
    assert_same_as_reference(plan, lib, n_inputs=4)


POOLS = {
    "max_ceil": ("MaxPool", [1, 4, 7, 7], {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}),
    "max_same_upper": ("MaxPool", [1, 4, 7, 8], {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    "max_same_lower": ("MaxPool", [1, 4, 7, 8], {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_LOWER"}),
    "avg_ceil": ("AveragePool", [1, 4, 7, 7], {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}),
    "avg_same_upper": ("AveragePool", [1, 4, 7, 8], {"kernel_shape": [3, 3], "strides": [2, 2],
                                                     "auto_pad": "SAME_UPPER"}),
    "avg_count_pad_nopad": ("AveragePool", [1, 4, 6, 6], {"kernel_shape": [3, 3], "strides": [3, 3],
                                                          "count_include_pad": 1}),
}


@pytest.mark.parametrize("qset", ["same", "down"])
@pytest.mark.parametrize("case", sorted(POOLS))
def test_pool_variants(case: str, qset: str, work: Path, lib: Path) -> None:
    """ceil_mode and SAME padding arrive as explicit asymmetric pads; the pooling family
    (ops_pool.c) already executes them exactly. count_include_pad=1 with padding is refused by
    the compiler ("not encoded"), without padding it is the ordinary average."""
    op, shape, attrs = POOLS[case]
    plan = plan_for(work, f"pool_{case}_{qset}", graph([node(op, ["x"], ["y"], **attrs)], {"x": shape}), _quant(qset))
    assert OPCODE[op] in opcodes(read_plan(plan))
    assert_same_as_reference(plan, lib, n_inputs=4)


FIXTURES = [
    "mean_all", "mean_channels", "mean_rows", "mean_spatial", "mean_nonadjacent_image", "mean_nonadjacent_keep",
    "mean_nonadjacent_negative", "mean_nonadjacent_tokens", "reduce_max_channels", "reduce_max_spatial",
    "reduce_min_rows", "sum_channels", "sum_spatial", "avg_pool_same", "avg_pool_valid", "max_pool_same",
    "max_pool_valid", "cumsum", "cumsum_exclusive_reverse", "cumsum_offset", "cumsum_offset_exclusive_reverse",
    "arg_max", "arg_max_channels", "arg_min_rows",
]


@pytest.mark.parametrize("name", FIXTURES)
def test_tflite_fixture(name: str, work: Path, lib: Path) -> None:
    assert_same_as_reference(fixture_plan(name, work), lib)


# --------------------------------------------------------------------------- CumSum

#: (s_in, s_out) pairs: an ordinary one, exact .5 ties, and s_in = 0.1f - 1 ulp against 0.04f,
#: where float32 and double ratios round ties differently (neither is what the reference does)
CUMSUM_SCALES = {"plain": (0.05, 0.21), "ties": (0.02, 0.04),
                 "ulp": (float(np.nextafter(np.float32(0.1), np.float32(0))), 0.04)}


def _cumsum(shape, axis: int, exclusive: int, reverse: int):
    return graph([node("CumSum", ["x", "a"], ["y"], exclusive=exclusive, reverse=reverse)], {"x": shape},
                 [const("a", np.array(axis, np.int64))])


@pytest.mark.parametrize("scales", sorted(CUMSUM_SCALES))
@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("axis", [1, 2])
def test_cumsum(axis: int, exclusive: int, reverse: int, scales: str, work: Path, lib: Path) -> None:
    # The compiler takes ONNX CumSum for a rank-3 input with input zero point 0 only.
    si, so = CUMSUM_SCALES[scales]
    plan = plan_for(work, f"cumsum_{axis}_{exclusive}{reverse}_{scales}", _cumsum([2, 6, 5], axis, exclusive, reverse),
                    {"x": (si, 0), "y": (so, -7)})
    assert CUMSUM in opcodes(read_plan(plan))
    assert_same_as_reference(plan, lib, n_inputs=4)


def test_cumsum_in_row_bands(work: Path, lib: Path) -> None:
    plan = plan_for(work, "cumsum_rows", _cumsum([8, 30, 16], 2, 0, 0), {"x": (0.05, 0), "y": (0.21, 3)}, budget="1K")
    assert "rows" in reference_paths(plan)
    assert_same_as_reference(plan, lib, n_inputs=3)


def test_cumsum_that_can_overflow_is_refused(work: Path, lib: Path) -> None:
    """40 steps of 127: the reference's sum, lifted by 2^19, passes 2^31 and it fails that run;
    a run of ours cannot fail after init, so the plan is refused at load."""
    from tigris.runtime import RuntimeError as TigrisError

    from tests.runtime.oracle import open_session

    plan = plan_for(work, "cumsum_long", _cumsum([1, 4, 40], 2, 0, 0), {"x": (0.02, 0), "y": (0.5, 0)})
    message = assert_refused(plan, lib, "CumSum", reference_refuses=False)
    assert "overflow" in message
    with open_session(plan, None) as ref, pytest.raises(TigrisError):
        ref.run({s["name"]: np.full(s["shape"], 127, np.int8) for s in ref.inputs})


# --------------------------------------------------------------------------- ArgMax / ArgMin

def _arg_model(op: str, shape, axis: int, keepdims: int) -> onnx.ModelProto:
    """int8 input -> DequantizeLinear -> ArgMax/ArgMin -> int64 output: the indices leave the plan
    as int32 widened to the ONNX int64 interface."""
    out_shape = list(shape)
    if keepdims:
        out_shape[axis] = 1
    else:
        out_shape.pop(axis)
    nodes = [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["xf"]),
             helper.make_node(op, ["xf"], ["y"], axis=axis, keepdims=keepdims)]
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "s"), numpy_helper.from_array(np.array(3, np.int8), "z")]
    g = helper.make_graph(nodes, "arg", [helper.make_tensor_value_info("x", TensorProto.INT8, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.INT64, out_shape)], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model, full_check=True)
    return model


ARG_CASES = [  # shape, axis, keepdims, budget: whole, and banded along the leading or last axis
    ([1, 10], 1, 0, "256K"), ([1, 8, 16, 16], 1, 0, "256K"), ([1, 8, 16, 16], 1, 0, "1K"),
    ([1, 8, 16, 16], 1, 1, "1K"), ([4, 32, 20], 2, 0, "1K"), ([4, 32, 20], 1, 0, "1K"), ([2, 30, 40], 0, 1, "1K"),
]


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("shape,axis,keepdims,budget", ARG_CASES, ids=[f"{s}-{a}{k}-{b}" for s, a, k, b in ARG_CASES])
def test_arg_extreme(op: str, shape, axis: int, keepdims: int, budget: str, work: Path, lib: Path) -> None:
    from tests.ops.models_data import compile_model

    name = f"{op}_{'x'.join(map(str, shape))}_{axis}{keepdims}_{budget}"
    onnx_path = work / f"{name}.onnx"
    onnx.save(_arg_model(op, shape, axis, keepdims), onnx_path)
    plan = compile_model(onnx_path, work / f"{name}.tgrs", budget)
    assert OPCODE[op] in opcodes(read_plan(plan))
    if budget != "256K":
        assert "rows" in reference_paths(plan), f"{name} no longer runs in row bands"
    assert_same_as_reference(plan, lib, n_inputs=4)


def test_int32_outside_arg_outputs_is_refused(work: Path, lib: Path) -> None:
    """int32 tensors hold indices, and of the reductions only an ArgMax/ArgMin may write one:
    the same plan with the op turned into a ReduceMax is refused, as by the reference."""
    from tests.runtime.plantools import PlanView

    plan = fixture_plan("arg_max", work)
    view = PlanView(plan)
    op = next(i for i, o in enumerate(view.info["ops"]) if o["op_type"] == OPCODE["ArgMax"])
    edited = work / "arg_max_as_reduce_max.tgrs"
    edited.write_bytes(view.set_op(op, "op_type", OPCODE["ReduceMax"]))
    message = assert_refused(edited, lib, "ReduceMax", reference_refuses=True)
    assert "operand dtypes this runtime does not execute (int32 only as indices" in message
