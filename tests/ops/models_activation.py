"""Single-op int8 QDQ models for the activation and elementwise op families.

Same construction as :mod:`models_data` (whose graph/compile/compare helpers this module
reuses): an fp32 ONNX graph, quantized with the hand-built QDQ of
:func:`opmodels.qdq_manual.quantize_manual` with the (scale, zero point) of every activation
fixed by the case, boundary Q/DQ stripped so the plan interface is raw int8. What this module
adds is **int8 constant operands** (Add/Sub/Mul/Max/Min constants, PRelu slopes): each is an int8
initializer behind its own DequantizeLinear, left out of the activation quantization, which the
compiler turns into a plan constant with OP_ATTR_CONSTANT_OPERAND and its own quant entry. Its
codes, scale and zero point are therefore exactly the case's.

Usage::

    from tests.ops.models_activation import Const, op_model, plan_of
    m = op_model("Add", {"x": [1, 4, 8, 8]}, consts=[Const("c", codes, 0.01, 3)])
    plan = plan_of(tmp, "add_c", m, {"x": (0.05, 3), "y": (0.1, 0)})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from models.qdq import save_model, strip_boundary_qdq
from tests.opmodels.qdq_manual import quantize_manual
from tests.ops.models_data import compile_model, const, graph, node

__all__ = ["Const", "op_model", "chain_model", "quantize_with_consts", "plan_of", "OPSET"]

#: HardSwish needs opset 14; everything else here is the same at 14 as at 13.
OPSET = 14


@dataclass(frozen=True)
class Const:
    """An int8 constant operand: ``codes`` (any shape ONNX broadcasting accepts) at (scale, zp)."""

    name: str
    codes: Any
    scale: float
    zero_point: int

    def initializers(self) -> list[onnx.TensorProto]:
        return [const(f"{self.name}_q", np.asarray(self.codes), np.int8),
                const(f"{self.name}_s", np.float32(self.scale), np.float32),
                const(f"{self.name}_z", int(self.zero_point), np.int8)]

    def dequantize(self) -> onnx.NodeProto:
        return node("DequantizeLinear", [f"{self.name}_q", f"{self.name}_s", f"{self.name}_z"], [self.name])


def op_model(op_type: str, inputs: Mapping[str, Sequence[int]], *, consts: Sequence[Const] = (),
             order: Sequence[str] | None = None, floats: Sequence[onnx.TensorProto] = (),
             **attrs: Any) -> onnx.ModelProto:
    """fp32 model ``y = op_type(operands)``. Operands are ``order`` (default: the runtime inputs,
    then the constants); ``floats`` are extra fp32 initializers (Clip bounds)."""
    names = list(order) if order is not None else list(inputs) + [c.name for c in consts]
    inits = [t for c in consts for t in c.initializers()] + list(floats)
    nodes = [c.dequantize() for c in consts] + [node(op_type, names, ["y"], **attrs)]
    return graph(nodes, inputs, inits, opset=OPSET)


def chain_model(nodes: Sequence[onnx.NodeProto], inputs: Mapping[str, Sequence[int]],
                consts: Sequence[Const] = (), floats: Sequence[onnx.TensorProto] = (),
                opset: int | None = None) -> onnx.ModelProto:
    """fp32 model of several nodes (e.g. Conv -> Sigmoid -> Mul for tiled stages); ``opset``
    above OPSET for newer ops (Gelu: 20)."""
    inits = [t for c in consts for t in c.initializers()] + list(floats)
    return graph([c.dequantize() for c in consts] + list(nodes), inputs, inits, opset=opset or OPSET)


def _calibration(model: onnx.ModelProto, seed: int = 0) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    inits = {t.name for t in model.graph.initializer}
    shapes = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim] for vi in model.graph.input
              if vi.name not in inits}
    return [{n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()} for _ in range(2)]


def quantize_with_consts(model: onnx.ModelProto, quant: Mapping[str, tuple[float, int]],
                         unquantized: Sequence[str] = ()) -> onnx.ModelProto:
    """QDQ with an int8 interface. Constant DequantizeLinear outputs (and ``unquantized``, e.g.
    an intermediate the compiler should fuse) get no Q/DQ pair of their own."""
    dq_consts = [n.output[0] for n in model.graph.node if n.op_type == "DequantizeLinear"]
    q = quantize_manual(model, _calibration(model), overrides=dict(quant),
                        unquantized=list(unquantized) + dq_consts)
    q, _, _ = strip_boundary_qdq(q)
    return q


def plan_of(directory: Path, name: str, model: onnx.ModelProto, quant: Mapping[str, tuple[float, int]], *,
            budget: str = "256K", unquantized: Sequence[str] = ()) -> Path:
    """Quantize, save and compile one case into ``directory/name.{onnx,tgrs}``."""
    onnx_path = save_model(quantize_with_consts(model, quant, unquantized), directory / f"{name}.onnx")
    return compile_model(onnx_path, directory / f"{name}.tgrs", budget)
