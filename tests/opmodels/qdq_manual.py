"""Hand-built QDQ quantization for single-op test models.

Why not always ONNX Runtime: ``quantize_static`` only quantizes an op when its neighbours are
quantized, so a model made of just a Relu, AveragePool, MaxPool, Reshape or Flatten stays float;
and the recipe's asymmetric activations make every ReLU clamp collapse to the −128 zero point, so
``fused_act``/``act_min``/``act_max`` are never exercised. This module inserts the same QDQ
structure ORT writes (``T -> QuantizeLinear -> DequantizeLinear -> consumers``, per-channel
symmetric int8 weights, int32 biases at ``s_in * s_w``), with MinMax activation ranges computed
the way ORT's MinMax calibrator does, and lets a case

* leave chosen tensors unquantized (so tigris fuses e.g. ``Conv -> Relu`` into one op), and
* override any tensor's (scale, zero point), e.g. a softmax output of exactly 1/256, −128.

Everything is deterministic: fixed calibration arrays, float64 range arithmetic, float32 scales.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

QMIN, QMAX = -128, 127


def asym_qparams(rmin: float, rmax: float) -> tuple[float, int]:
    """ORT MinMax, QInt8, ActivationSymmetric=False: range widened to include 0."""
    rmin, rmax = min(float(rmin), 0.0), max(float(rmax), 0.0)
    if rmax == rmin:
        return 1.0, 0
    scale = np.float32((rmax - rmin) / (QMAX - QMIN))
    zp = int(np.clip(np.round(QMIN - rmin / float(scale)), QMIN, QMAX))
    return float(scale), zp


def sym_qparams(rmin: float, rmax: float) -> tuple[float, int]:
    """ORT MinMax, QInt8, ActivationSymmetric=True: zero point 0, range ±127, scale absmax/127."""
    absmax = max(abs(float(rmin)), abs(float(rmax)))
    if absmax == 0:
        return 1.0, 0
    return float(np.float32(absmax / 127.0)), 0


def observe_ranges(
    model: onnx.ModelProto, batches: Sequence[Mapping[str, np.ndarray]]
) -> dict[str, tuple[float, float]]:
    """Min/max of every graph input and node output over the calibration batches (fp32 ORT)."""
    import onnxruntime as ort

    m = onnx.ModelProto()
    m.CopyFrom(model)
    existing = {o.name for o in m.graph.output}
    for node in m.graph.node:
        for out in node.output:
            if out and out not in existing:
                m.graph.output.append(helper.make_tensor_value_info(out, TensorProto.FLOAT, None))
                existing.add(out)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.log_severity_level = 3
    sess = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    ranges: dict[str, tuple[float, float]] = {}

    def acc(name: str, arr: np.ndarray) -> None:
        lo, hi = float(np.min(arr)), float(np.max(arr))
        if name in ranges:
            lo, hi = min(lo, ranges[name][0]), max(hi, ranges[name][1])
        ranges[name] = (lo, hi)

    for batch in batches:
        for k, v in batch.items():
            acc(k, v)
        for name, arr in zip(names, sess.run(names, dict(batch))):
            acc(name, arr)
    return ranges


def _weight_axis(node: onnx.NodeProto) -> int:
    if node.op_type == "Gemm":
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        return 0 if attrs.get("transB", 0) else 1
    if node.op_type == "ConvTranspose":
        return 1  # IOHW, per output channel
    return 0  # Conv: OIHW, per output channel


def quantize_manual(
    model: onnx.ModelProto,
    batches: Sequence[Mapping[str, np.ndarray]],
    *,
    unquantized: Sequence[str] = (),
    overrides: Mapping[str, tuple[float, int]] | None = None,
    symmetric: bool = False,
) -> onnx.ModelProto:
    """Return a QDQ model (float interface) for ``model``.

    Every activation (graph inputs and node outputs) gets a Q/DQ pair unless listed in
    ``unquantized``. Conv/ConvTranspose/Gemm weights (input 1, an initializer) become per-channel symmetric
    int8 with a DequantizeLinear; their biases (input 2) int32 at ``s_in * s_w``. ``overrides``
    maps a tensor name to its (scale, zero point); ``symmetric`` selects zero point 0 activations.
    """
    overrides = dict(overrides or {})
    skip = set(unquantized)
    ranges = observe_ranges(model, batches)
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    graph_outputs = {o.name for o in g.output}

    qparams: dict[str, tuple[float, int]] = {}
    acts = [i.name for i in g.input if i.name not in inits]
    acts += [o for n in g.node for o in n.output if o]
    for name in acts:
        if name in skip:
            continue
        if name in overrides:
            s, z = overrides[name]
            qparams[name] = (float(np.float32(s)), int(z))
        else:
            qparams[name] = (sym_qparams if symmetric else asym_qparams)(*ranges[name])

    new_nodes: list[onnx.NodeProto] = []
    new_inits: list[onnx.TensorProto] = []

    def add_qdq(name: str, src: str, dst: str) -> None:
        s, z = qparams[name]
        new_inits.append(numpy_helper.from_array(np.array(s, np.float32), f"{name}_scale"))
        new_inits.append(numpy_helper.from_array(np.array(z, np.int8), f"{name}_zero_point"))
        q_out = f"{name}_QuantizeLinear_Output"
        new_nodes.append(helper.make_node(
            "QuantizeLinear", [src, f"{name}_scale", f"{name}_zero_point"], [q_out],
            name=f"{name}_QuantizeLinear"))
        new_nodes.append(helper.make_node(
            "DequantizeLinear", [q_out, f"{name}_scale", f"{name}_zero_point"], [dst],
            name=f"{name}_DequantizeLinear"))

    def deq(name: str) -> str:
        return f"{name}_DequantizeLinear_Output" if name in qparams else name

    for inp in g.input:
        if inp.name in qparams:
            add_qdq(inp.name, inp.name, deq(inp.name))

    dropped_inits: set[str] = set()
    for node in g.node:
        n = onnx.NodeProto()
        n.CopyFrom(node)
        for i, name in enumerate(n.input):
            if name in inits:
                continue
            n.input[i] = deq(name)
        if node.op_type in ("Conv", "ConvTranspose", "Gemm") and len(node.input) > 1 and node.input[1] in inits:
            axis = _weight_axis(node)
            w = numpy_helper.to_array(inits[node.input[1]]).astype(np.float64)
            red = tuple(a for a in range(w.ndim) if a != axis)
            absmax = np.max(np.abs(w), axis=red)
            w_scale = np.where(absmax > 0, absmax / 127.0, 1.0).astype(np.float32)
            shape = [1] * w.ndim
            shape[axis] = -1
            w_q = np.clip(np.round(w / w_scale.reshape(shape)), -127, 127).astype(np.int8)
            wn = node.input[1]
            new_inits += [
                numpy_helper.from_array(w_q, f"{wn}_quantized"),
                numpy_helper.from_array(w_scale, f"{wn}_scale"),
                numpy_helper.from_array(np.zeros_like(w_scale, np.int8), f"{wn}_zero_point"),
            ]
            new_nodes.append(helper.make_node(
                "DequantizeLinear", [f"{wn}_quantized", f"{wn}_scale", f"{wn}_zero_point"],
                [f"{wn}_DequantizeLinear_Output"], name=f"{wn}_DequantizeLinear", axis=axis))
            n.input[1] = f"{wn}_DequantizeLinear_Output"
            dropped_inits.add(wn)
            if len(node.input) > 2 and node.input[2] in inits:
                s_in = qparams[node.input[0]][0]
                b = numpy_helper.to_array(inits[node.input[2]]).astype(np.float64)
                b_scale = (np.float64(s_in) * w_scale.astype(np.float64)).astype(np.float32)
                b_q = np.round(b / b_scale.astype(np.float64)).astype(np.int32)
                bn = node.input[2]
                new_inits += [
                    numpy_helper.from_array(b_q, f"{bn}_quantized"),
                    numpy_helper.from_array(b_scale, f"{bn}_scale"),
                    numpy_helper.from_array(np.zeros_like(b_q), f"{bn}_zero_point"),
                ]
                new_nodes.append(helper.make_node(
                    "DequantizeLinear", [f"{bn}_quantized", f"{bn}_scale", f"{bn}_zero_point"],
                    [f"{bn}_DequantizeLinear_Output"], name=f"{bn}_DequantizeLinear", axis=0))
                n.input[2] = f"{bn}_DequantizeLinear_Output"
                dropped_inits.add(bn)
        for j, out in enumerate(n.output):
            if out in qparams:
                src = f"{out}_QuantizeLinear_Input" if out in graph_outputs else out
                n.output[j] = src
                new_nodes.append(n)
                n = None  # type: ignore[assignment]
                add_qdq(out, src, out if out in graph_outputs else deq(out))
                break
        if n is not None:
            new_nodes.append(n)

    kept_inits = [t for t in g.initializer if t.name not in dropped_inits]
    del g.initializer[:]
    g.initializer.extend(kept_inits + new_inits)
    del g.node[:]
    g.node.extend(_toposort(new_nodes, [i.name for i in g.input] + [t.name for t in g.initializer]))
    del g.value_info[:]
    onnx.checker.check_model(m)
    return m


def _toposort(nodes: list[onnx.NodeProto], available: Sequence[str]) -> list[onnx.NodeProto]:
    ready = set(available) | {""}
    pending = list(nodes)
    out: list[onnx.NodeProto] = []
    while pending:
        progressed = False
        for node in list(pending):
            if all(i in ready for i in node.input):
                out.append(node)
                ready.update(node.output)
                pending.remove(node)
                progressed = True
        if not progressed:
            raise ValueError(f"cycle or missing input near {pending[0].name!r}")
    return out


def set_qparams(model: onnx.ModelProto, tensor: str, scale: float, zero_point: int) -> None:
    """Overwrite, in place, the scale/zero point of the QuantizeLinear that quantizes ``tensor``.

    Used on ORT output (e.g. to turn its 1/255 softmax output into 1/256). The initializers are
    shared with the matching DequantizeLinear, so the pair stays consistent. Only safe for
    tensors that no bias scale depends on (i.e. not the input of a Conv/Gemm).
    """
    names = {tensor, f"{tensor}_QuantizeLinear_Input"}  # ORT renames graph-output producers
    q = [n for n in model.graph.node if n.op_type == "QuantizeLinear" and n.input[0] in names]
    if len(q) != 1:
        raise ValueError(f"expected one QuantizeLinear on {tensor!r}, found {len(q)}")
    targets = {q[0].input[1]: np.array(scale, np.float32), q[0].input[2]: np.array(zero_point, np.int8)}
    for i, t in enumerate(model.graph.initializer):
        if t.name in targets:
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(targets.pop(t.name), t.name))
    if targets:
        raise ValueError(f"initializers {sorted(targets)} not found")
