"""Comparisons and logic of our runtime against the reference host runtime, byte for byte.

Equal/Less/LessOrEqual/Greater/GreaterOrEqual compare two int8 operands (each lifted by 2^8 and
scaled by QM of its own scale, OP_ATTR_COMPARISON_REQUANT) into bool bytes; And/Or/Not combine
bool tensors; bool tensors also pass through Reshape and leave the plan as model outputs. Every
code pair for each comparison on quantizations where the scaled values tie, and logic graphs
whole and at budgets that band or stripe them; Where picking int8 codes by a bool condition
(with a broadcasting operand). Cast and ReduceAll run on the compiler's fixtures (conformance).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.ops.models_data import assert_refused, assert_same_as_reference, compile_model, reference_paths

pytest.importorskip("tigris.runtime")

PAIR_SHAPE = [1, 16, 64, 64]    # 65 536 elements: every code pair once
COMPARISONS = ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"]
QSETS = {  # (scale, zero point) of a and b
    "same": ((0.05, 3), (0.05, 3)),
    "double": ((0.02, 0), (0.04, 0)),          # every even a equals some b exactly
    "mixed": ((0.0235, -7), (0.0117, 20)),
}


def _model(nodes: list[onnx.NodeProto], inputs: dict[str, tuple[list[int], tuple[float, int]]],
           outputs: dict[str, list[int]]) -> onnx.ModelProto:
    """int8 inputs, each behind a DequantizeLinear named ``<input>f``; bool outputs."""
    graph_inputs, inits, dq = [], [], []
    for name, (shape, (scale, zero_point)) in inputs.items():
        graph_inputs.append(helper.make_tensor_value_info(name, TensorProto.INT8, shape))
        inits += [numpy_helper.from_array(np.array(scale, np.float32), f"{name}_s"),
                  numpy_helper.from_array(np.array(zero_point, np.int8), f"{name}_z")]
        dq.append(helper.make_node("DequantizeLinear", [name, f"{name}_s", f"{name}_z"], [f"{name}f"]))
    graph_outputs = [helper.make_tensor_value_info(n, TensorProto.BOOL, s) for n, s in outputs.items()]
    model = helper.make_model(helper.make_graph(dq + nodes, "logic", graph_inputs, graph_outputs, inits),
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model, full_check=True)
    return model


def _plan(work: Path, name: str, model: onnx.ModelProto, budget: str = "256K") -> Path:
    path = work / f"{name}.onnx"
    onnx.save(model, path)
    return compile_model(path, work / f"{name}.tgrs", budget)


@pytest.mark.parametrize("qset", sorted(QSETS))
@pytest.mark.parametrize("op", COMPARISONS)
def test_comparison_every_code_pair(op: str, qset: str, work: Path, lib: Path) -> None:
    from tests.runtime.oracle import open_session

    qa, qb = QSETS[qset]
    plan = _plan(work, f"{op}_{qset}", _model([helper.make_node(op, ["af", "bf"], ["y"])],
                                             {"a": (PAIR_SHAPE, qa), "b": (PAIR_SHAPE, qb)}, {"y": PAIR_SHAPE}))
    codes = np.arange(65536)
    with open_session(plan, None) as ref, open_session(plan, lib) as ours:
        a, b = ref.inputs
        feeds = {a["name"]: ((codes >> 8) - 128).astype(np.int8).reshape(a["shape"]),
                 b["name"]: ((codes & 255) - 128).astype(np.int8).reshape(b["shape"])}
        expect = ref.run(feeds)["y"].reshape(-1)
        got = ours.run(feeds)["y"].reshape(-1)
    assert expect.dtype == got.dtype == np.bool_
    bad = np.flatnonzero(expect != got)
    assert bad.size == 0, f"{op} {qset}: {bad.size} code pairs differ, first (a, b) = ({(bad[0] >> 8) - 128}, " \
                          f"{(bad[0] & 255) - 128})"


def _band_check(shape: list[int]) -> onnx.ModelProto:
    """(a > b) and not (a == c), (a <= c) or (b < c): broadcasting operands, And/Or/Not, two
    bool outputs."""
    wide = {"a": (shape, (0.05, 3)), "b": (shape, (0.04, -2)), "c": ([1, shape[1], 1, 1], (0.03, 0))}
    nodes = [helper.make_node("Greater", ["af", "bf"], ["g"]), helper.make_node("Equal", ["af", "cf"], ["e"]),
             helper.make_node("Not", ["e"], ["ne"]), helper.make_node("And", ["g", "ne"], ["y"]),
             helper.make_node("LessOrEqual", ["af", "cf"], ["le"]), helper.make_node("Less", ["bf", "cf"], ["lt"]),
             helper.make_node("Or", ["le", "lt"], ["z"])]
    return _model(nodes, wide, {"y": shape, "z": shape})


@pytest.mark.parametrize("budget", ["256K", "2K"])
def test_logic_graph(budget: str, work: Path, lib: Path) -> None:
    plan = _plan(work, f"logic_{budget}", _band_check([1, 8, 16, 16]), budget)
    if budget != "256K":
        assert reference_paths(plan) - {"normal"}, "the logic graph no longer runs banded"
    assert_same_as_reference(plan, lib)


def _where(shape: list[int], other: list[int]) -> onnx.ModelProto:
    """Where(a > b, a, c) with c broadcasting from ``other``; the int8 result leaves through a
    Q/DQ pair and one more comparison (a bool output)."""
    nodes = [helper.make_node("Greater", ["af", "bf"], ["g"]), helper.make_node("Where", ["g", "af", "cf"], ["w"]),
             helper.make_node("QuantizeLinear", ["w", "a_s", "a_z"], ["wq"]),
             helper.make_node("DequantizeLinear", ["wq", "a_s", "a_z"], ["wf"]),
             helper.make_node("Equal", ["wf", "bf"], ["y"])]
    q = (0.05, 0)
    return _model(nodes, {"a": (shape, q), "b": (shape, (0.04, 3)), "c": (other, q)}, {"y": shape})


@pytest.mark.parametrize("budget", ["256K", "1K"])
@pytest.mark.parametrize("other", ["same", "per_channel"])
def test_where(other: str, budget: str, work: Path, lib: Path) -> None:
    shape = [1, 8, 16, 16]
    plan = _plan(work, f"where_{other}_{budget}", _where(shape, shape if other == "same" else [1, 8, 1, 1]), budget)
    if budget != "256K":
        assert reference_paths(plan) - {"normal"}, "the Where graph no longer runs banded"
    assert_same_as_reference(plan, lib)


def test_where_requantizing_is_refused(work: Path, lib: Path) -> None:
    """The compiler gives Where's operands and output one quantization; an edited plan where they
    differ is refused rather than guessed."""
    from tests.runtime.plantools import PlanView

    plan = _plan(work, "where_plain", _where([1, 4, 8, 8], [1, 4, 8, 8]))
    view = PlanView(plan)
    where = next(o for o in view.info["ops"] if o["op_type"] == 81)
    quant = view.info["tensors"][where["outputs"][0]]["quant_param_idx"]
    edited = work / "where_requant.tgrs"
    edited.write_bytes(view.set_quant(quant, "zero_point", 5))
    assert "requantizing" in assert_refused(edited, lib, "Where")
