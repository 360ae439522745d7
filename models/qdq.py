"""Int8 QDQ quantization helpers shared by the model builders and the op-model tests.

The recipe and the reasons for each setting: docs/models.md.

* `quantize_static` with QDQ, per-channel, QInt8 activations and weights, MinMax calibration,
  ``ActivationSymmetric=False`` and ``WeightSymmetric=True``: with these tigris-ml 0.12.1 produces
  correct plans *and* each conv absorbs its ReLU/ReLU6: ORT drops the Relu/Clip and lets the −128
  zero point clamp (docs/models.md#quantization-settings).
* Stripping the boundary QuantizeLinear/DequantizeLinear so the plan interface is raw int8
  (docs/models.md#int8-interface).
* tigris does not store weight zero points and silently computes wrong results when they are
  non-zero, so we refuse such models before they ever reach ``tigris compile``
  (docs/models.md#weights-and-zero-points).

Determinism: the builders feed fixed-seed calibration batches, ORT's MinMax calibration is a
deterministic reduction, and ONNX serialization of an identical ``ModelProto`` is byte-stable, so
the same inputs give a byte-identical ``.onnx`` (checked by the tests).
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

__all__ = [
    "BoundaryQuant",
    "BatchReader",
    "check_weight_zero_points",
    "quantize_qdq",
    "strip_boundary_qdq",
    "save_model",
]


@dataclass(frozen=True)
class BoundaryQuant:
    """Scale and zero point of a removed boundary Q/DQ node.

    The host side quantizes an input as ``q = clamp(round_half_away(x / scale) + zero_point,
    -128, 127)`` and dequantizes an output as ``(q - zero_point) * scale``
    (docs/models.md#int8-interface).
    ``tensor`` is the name of the int8 tensor that is now the graph input/output;
    ``original`` is the float tensor name it replaced.
    """

    tensor: str
    original: str
    scale: float
    zero_point: int


class BatchReader:
    """Minimal ORT ``CalibrationDataReader``: yields each fixed batch once, then ``None``.

    Implemented without subclassing so importing this module does not import onnxruntime;
    ``quantize_static`` only calls ``get_next`` (and ``rewind`` is provided for completeness).
    """

    def __init__(self, batches: Sequence[Mapping[str, np.ndarray]]) -> None:
        self._batches = [dict(b) for b in batches]
        self._pos = 0

    def get_next(self) -> dict[str, np.ndarray] | None:
        if self._pos >= len(self._batches):
            return None
        batch = self._batches[self._pos]
        self._pos += 1
        return batch

    def rewind(self) -> None:
        self._pos = 0

    def __len__(self) -> int:
        return len(self._batches)


class _DropPreprocessHint(logging.Filter):
    """Filter ORT's "Please consider (to run) pre-processing" warning.

    ORT logs it through the *root* logger twice per quantize call; it is advice about shape
    inference that does not apply to our programmatically built, fully shaped models.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing" not in record.getMessage()


@contextlib.contextmanager
def _quiet_ort() -> Iterator[None]:
    flt = _DropPreprocessHint()
    root = logging.getLogger()
    root.addFilter(flt)
    try:
        yield
    finally:
        root.removeFilter(flt)


def _as_batches(
    batches: Sequence[np.ndarray] | Sequence[Mapping[str, np.ndarray]], input_name: str
) -> list[dict[str, np.ndarray]]:
    out: list[dict[str, np.ndarray]] = []
    for b in batches:
        if isinstance(b, Mapping):
            out.append({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in b.items()})
        else:
            out.append({input_name: np.ascontiguousarray(b, dtype=np.float32)})
    if not out:
        raise ValueError("at least one calibration batch is required")
    return out


def quantize_qdq(
    fp32: onnx.ModelProto | str | Path,
    batches: Sequence[np.ndarray] | Sequence[Mapping[str, np.ndarray]],
    *,
    activation_symmetric: bool = False,
) -> onnx.ModelProto:
    """Quantize an fp32 model to int8 QDQ with the recipe's settings.

    The settings and why: docs/models.md#quantization-settings.

    ``batches`` are fixed-seed calibration inputs: bare arrays (for a single-input model) or
    ``{input_name: array}`` dicts. Returns the QDQ model (float interface); the weight zero
    points are verified to be zero (:func:`check_weight_zero_points`).

    ``activation_symmetric`` must stay ``False`` for real models (the recipe). It exists only so
    op-level tests can get ORT to keep standalone Relu/Clip nodes, which tigris then does not fuse
    (docs/models.md#standalone-relu-and-clip).
    """
    from onnxruntime.quantization import (
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    model = fp32 if isinstance(fp32, onnx.ModelProto) else onnx.load(str(fp32))
    if len(model.graph.input) != 1 and not all(isinstance(b, Mapping) for b in batches):
        raise ValueError("multi-input models need {name: array} calibration batches")
    reader = BatchReader(_as_batches(batches, model.graph.input[0].name))
    with tempfile.TemporaryDirectory(prefix="qdq_") as tmp:
        src = Path(tmp) / "fp32.onnx"
        dst = Path(tmp) / "int8.onnx"
        onnx.save(model, str(src))
        with _quiet_ort():
            quantize_static(
                str(src),
                str(dst),
                reader,
                quant_format=QuantFormat.QDQ,
                per_channel=True,
                activation_type=QuantType.QInt8,
                weight_type=QuantType.QInt8,
                calibrate_method=CalibrationMethod.MinMax,
                extra_options={
                    "ActivationSymmetric": activation_symmetric,
                    "WeightSymmetric": True,
                },
            )
        qmodel = onnx.load(str(dst))
    check_weight_zero_points(qmodel)
    return qmodel


def _initializers(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def check_weight_zero_points(model: onnx.ModelProto) -> None:
    """Raise ``ValueError`` if any constant (weight) DequantizeLinear has a non-zero zero point.

    tigris-ml 0.12.1 does not store weight zero points in the plan; compile and run succeed with
    no warning and the results are wrong (docs/models.md#weights-and-zero-points). A "weight" here
    is any DequantizeLinear whose data input is an initializer (this also covers int32 biases,
    whose zero point ORT always sets to 0), so builders keep every weight an initializer.
    """
    inits = _initializers(model)
    bad: list[str] = []
    for node in model.graph.node:
        if node.op_type != "DequantizeLinear" or node.input[0] not in inits:
            continue
        if len(node.input) < 3 or not node.input[2]:
            continue  # absent zero point means 0
        zp_name = node.input[2]
        if zp_name not in inits:
            raise ValueError(f"weight {node.input[0]!r}: zero point {zp_name!r} is not a constant")
        if np.any(inits[zp_name] != 0):
            bad.append(f"{node.input[0]} (zero point {inits[zp_name].ravel()[:4].tolist()}…)")
    if bad:
        raise ValueError(
            "non-zero weight zero points (asymmetric weights): tigris-ml does not store them and "
            "would compute wrong results silently; quantize with WeightSymmetric=True and QInt8 "
            "weights. Offending weights: " + ", ".join(bad)
        )


def _scalar_qparams(inits: Mapping[str, np.ndarray], node: onnx.NodeProto) -> tuple[float, int]:
    scale = inits.get(node.input[1])
    if scale is None or scale.size != 1:
        raise ValueError(f"{node.op_type} {node.name!r}: scale must be a scalar initializer")
    zp = 0
    if len(node.input) > 2 and node.input[2]:
        zp_arr = inits.get(node.input[2])
        if zp_arr is None or zp_arr.size != 1:
            raise ValueError(f"{node.op_type} {node.name!r}: zero point must be a scalar initializer")
        if zp_arr.dtype != np.int8:
            raise ValueError(
                f"{node.op_type} {node.name!r}: boundary is {zp_arr.dtype}, only int8 is supported"
            )
        zp = int(zp_arr.ravel()[0])
    return float(scale.ravel()[0]), zp


def _int8_value_info(name: str, like: onnx.ValueInfoProto) -> onnx.ValueInfoProto:
    dims = [d.dim_value if d.HasField("dim_value") else d.dim_param
            for d in like.type.tensor_type.shape.dim]
    return onnx.helper.make_tensor_value_info(name, TensorProto.INT8, dims)


def strip_boundary_qdq(
    model: onnx.ModelProto,
) -> tuple[onnx.ModelProto, list[BoundaryQuant], list[BoundaryQuant]]:
    """Remove the boundary Q/DQ nodes so the model takes and returns int8.

    Why and how to feed the result: docs/models.md#int8-interface.

    For each graph input consumed only by one ``QuantizeLinear``, that node's int8 output becomes
    the graph input; for each graph output produced by ``DequantizeLinear``, that node's int8 input
    becomes the graph output. Dims are kept. Returns ``(model, inputs, outputs)`` where the lists
    hold the removed scale/zero point per interface tensor, in graph order. The input model is not
    modified. Raises ``ValueError`` if a boundary has no Q/DQ to remove (e.g. already stripped).
    """
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    inits = _initializers(m)
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in g.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    graph_outputs = {o.name for o in g.output}

    removed: list[onnx.NodeProto] = []
    new_inputs: list[onnx.ValueInfoProto] = []
    in_q: list[BoundaryQuant] = []
    for vi in g.input:
        if vi.name in inits:
            new_inputs.append(vi)
            continue
        users = consumers.get(vi.name, [])
        if len(users) != 1 or users[0].op_type != "QuantizeLinear" or vi.name in graph_outputs:
            raise ValueError(
                f"graph input {vi.name!r} is not consumed by exactly one QuantizeLinear "
                f"(consumers: {[n.op_type for n in users]})"
            )
        q = users[0]
        scale, zp = _scalar_qparams(inits, q)
        new_inputs.append(_int8_value_info(q.output[0], vi))
        in_q.append(BoundaryQuant(q.output[0], vi.name, scale, zp))
        removed.append(q)

    producers = {out: node for node in g.node for out in node.output}
    new_outputs: list[onnx.ValueInfoProto] = []
    out_q: list[BoundaryQuant] = []
    for vi in g.output:
        dq = producers.get(vi.name)
        if dq is None or dq.op_type != "DequantizeLinear":
            raise ValueError(f"graph output {vi.name!r} is not produced by a DequantizeLinear")
        if len(consumers.get(vi.name, [])) != 0:
            raise ValueError(f"graph output {vi.name!r} is also used inside the graph")
        scale, zp = _scalar_qparams(inits, dq)
        new_outputs.append(_int8_value_info(dq.input[0], vi))
        out_q.append(BoundaryQuant(dq.input[0], vi.name, scale, zp))
        removed.append(dq)

    removed_ids = {id(n) for n in removed}
    kept = [n for n in g.node if id(n) not in removed_ids]
    del g.node[:]
    g.node.extend(kept)
    del g.input[:]
    g.input.extend(new_inputs)
    del g.output[:]
    g.output.extend(new_outputs)
    iface = {vi.name for vi in new_inputs} | {vi.name for vi in new_outputs}
    kept_vi = [vi for vi in g.value_info if vi.name not in iface]
    del g.value_info[:]
    g.value_info.extend(kept_vi)
    # Drop initializers only the removed nodes used (scales/zero points of the boundary).
    used = {name for n in g.node for name in n.input}
    kept_init = [t for t in g.initializer if t.name in used]
    del g.initializer[:]
    g.initializer.extend(kept_init)
    onnx.checker.check_model(m)
    return m, in_q, out_q


def save_model(model: onnx.ModelProto, path: str | Path) -> Path:
    """Check and save ``model`` to ``path`` (parent dirs created). Serialization is deterministic."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.checker.check_model(model)
    path.write_bytes(model.SerializeToString(deterministic=True))
    return path
