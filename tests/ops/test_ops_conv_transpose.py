"""ConvTranspose of our runtime against the reference host runtime, byte for byte.

QDQ models (per-channel int8 filters, int32 bias: tests/opmodels/qdq_manual.py) with strides 1
and 2, kernels 2 to 4, symmetric and one-sided pads and ONNX output_padding (extra output rows
that only some taps reach), whole and at budgets where the compiler gives the op 2-D tiles
(input rectangles inverted with floor division, the tile offset folded into the padding); with
a pointwise op in its stage, and inside a decoder next to chained convolutions. Outputs
identical, peaks not above the reference's, counters and events equal.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from tests.ops.models_data import (
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

CONV_TRANSPOSE = 24
RNG = np.random.default_rng(11)

#: name -> (ConvTranspose attributes, input channels, output channels, kernel)
GEOMETRIES = {
    "s2_k3_output_padding": (dict(strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]), 8, 6, 3),
    "s2_k4": (dict(strides=[2, 2], pads=[1, 1, 1, 1]), 8, 6, 4),
    "s1_k3": (dict(strides=[1, 1], pads=[1, 1, 1, 1]), 8, 6, 3),
    "s2_k2": (dict(strides=[2, 2]), 8, 4, 2),
    "s2_k3_one_sided": (dict(strides=[2, 2], pads=[0, 0, 1, 1]), 8, 6, 3),
}


def _filter(cin: int, cout: int, k: int) -> list[onnx.TensorProto]:
    return [const("w", (RNG.standard_normal((cin, cout, k, k)) * 0.3).astype(np.float32), np.float32),
            const("b", (RNG.standard_normal(cout) * 0.1).astype(np.float32), np.float32)]


def _model(name: str, tail: list[onnx.NodeProto] = ()) -> onnx.ModelProto:
    attrs, cin, cout, k = GEOMETRIES[name]
    out = "c" if tail else "y"
    return graph([node("ConvTranspose", ["x", "w", "b"], [out], **attrs), *tail], {"x": [1, cin, 16, 16]},
                 _filter(cin, cout, k))


@pytest.mark.parametrize("budget,path", [("256K", "normal"), ("2K", "tiled_2d")])
@pytest.mark.parametrize("name", list(GEOMETRIES))
def test_conv_transpose(name: str, budget: str, path: str, work: Path, lib: Path) -> None:
    plan = plan_for(work, f"{name}_{budget}", _model(name), budget=budget)
    assert CONV_TRANSPOSE in opcodes(read_plan(plan))
    assert path in reference_paths(plan), f"{name} at {budget} no longer takes the {path} path"
    assert_same_as_reference(plan, lib)


@pytest.mark.parametrize("tail", ["Sigmoid", "LeakyRelu"])
def test_conv_transpose_with_a_pointwise_op(tail: str, work: Path, lib: Path) -> None:
    plan = plan_for(work, f"ct_{tail}", _model("s2_k3_output_padding", [node(tail, ["c"], ["y"])]), budget="2K")
    assert "tiled_2d" in reference_paths(plan)
    assert_same_as_reference(plan, lib)


@pytest.mark.parametrize("budget", ["4K", "1K"])
def test_decoder(budget: str, work: Path, lib: Path) -> None:
    """Conv -> Relu -> ConvTranspose (x2) -> Conv: stripes, chains and 2-D tiles in one plan."""
    attrs, _, _, _ = GEOMETRIES["s2_k3_output_padding"]
    consts = [const("wc", (RNG.standard_normal((8, 4, 3, 3)) * 0.3).astype(np.float32), np.float32),
              const("bc", (RNG.standard_normal(8) * 0.1).astype(np.float32), np.float32),
              const("w2", (RNG.standard_normal((4, 6, 3, 3)) * 0.3).astype(np.float32), np.float32),
              const("b2", (RNG.standard_normal(4) * 0.1).astype(np.float32), np.float32), *_filter(8, 6, 3)]
    model = graph([node("Conv", ["x", "wc", "bc"], ["a"], pads=[1, 1, 1, 1]), node("Relu", ["a"], ["r"]),
                   node("ConvTranspose", ["r", "w", "b"], ["c"], **attrs),
                   node("Conv", ["c", "w2", "b2"], ["y"], pads=[1, 1, 1, 1])], {"x": [1, 4, 16, 16]}, consts)
    plan = plan_for(work, f"decoder_{budget}", model, budget=budget)
    assert "tiled_2d" in reference_paths(plan)
    assert_same_as_reference(plan, lib)


def test_tflite_fixture(work: Path, lib: Path) -> None:
    plan = fixture_plan("transpose_conv", work)
    assert CONV_TRANSPOSE in opcodes(read_plan(plan))
    assert_same_as_reference(plan, lib)


@pytest.mark.parametrize("field,value", [("stride_h", 3), ("pad_top", 2), ("pad_bottom", 0)])
def test_geometry_that_does_not_produce_the_output_is_refused(field: str, value: int, work: Path, lib: Path) -> None:
    """The reference runs these edited plans without checking the output extent; we refuse them
    at load instead of computing something the geometry does not describe."""
    from tigris.runtime import RuntimeError as TigrisError

    from tests.runtime.oracle import open_session
    from tests.runtime.plantools import PlanView

    view = PlanView(fixture_plan("transpose_conv", work))
    op = next(i for i, o in enumerate(view.info["ops"]) if o["op_type"] == CONV_TRANSPOSE)
    plan = work / f"transpose_conv_{field}_{value}.tgrs"
    plan.write_bytes(view.set_op(op, field, value))
    with pytest.raises(TigrisError, match=r"\(ConvTranspose\): kernel, stride and pads do not produce the output"):
        open_session(plan, lib).close()
