"""Small helpers shared by the synthetic-weight model builders."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from models.qdq import BoundaryQuant, save_model


def feature_stats(body: onnx.ModelProto, batches: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature mean and std of ``body``'s single output over fixed-seed inputs (fp32 ORT).

    Rounded to 3 decimals so last-ulp differences between CPUs (ORT kernels differ by ISA)
    cannot change the weights derived from them, keeping rebuilds byte-identical.
    """
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3  # the truncated body leaves the head's initializers unused
    sess = ort.InferenceSession(body.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    feats = np.concatenate([sess.run(None, {name: x})[0] for x in batches])
    mean = np.round(feats.mean(axis=0).astype(np.float64), 3)
    std = np.maximum(np.round(feats.std(axis=0).astype(np.float64), 3), 1e-3)
    return mean, std


def centred_head(w: np.ndarray, mean: np.ndarray, std: np.ndarray,
                 gain: float) -> tuple[np.ndarray, np.ndarray]:
    """Scale a random ``[out, in]`` classifier and give it a bias that cancels the mean feature.

    With random conv weights the pooled features are dominated by their (input-independent)
    mean, so a plain random head gives nearly the same output for every input. Centring on the
    mean and scaling by one common factor (the RMS of the per-feature stds; not a per-feature
    1/std, which would amplify features that vary by less than one int8 step) makes the logits
    vary by about ``gain`` across inputs.
    """
    rms = float(np.round(np.sqrt(np.mean(std**2)), 3))
    w_s = (w * gain / (rms * np.sqrt(w.shape[1]))).astype(np.float32)
    b = (-(w_s.astype(np.float64) @ mean)).astype(np.float32)
    return w_s, b


def fp32_graph(name: str, nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto],
               input_shape: Sequence[int], output: str, out_dims: Sequence[int]) -> onnx.ModelProto:
    """An fp32 model with one input named ``input``, opset 13 and IR 8 (the recipe's versions)."""
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, list(input_shape))],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, list(out_dims))],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name=f"tigris-scons/models/{name}")
    model.ir_version = 8
    return model


def normal_batches(shape: Sequence[int], n: int, seed: int) -> list[np.ndarray]:
    """Fixed-seed calibration inputs: unit-variance normal float32 (normalised features/pixels)."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(n)]


BuildModel = Callable[[], tuple[onnx.ModelProto, list[BoundaryQuant], list[BoundaryQuant]]]


def builder_main(description: str, build_model: BuildModel, argv: list[str] | None = None) -> int:
    """The command line every builder shares: ``build.py -o OUT.onnx``."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("-o", "--output", required=True, type=Path, help="output .onnx path")
    args = ap.parse_args(argv)
    model, ins, outs = build_model()
    save_model(model, args.output)
    for q in ins + outs:
        print(f"{q.tensor}: scale {q.scale!r} zero_point {q.zero_point} (was {q.original})")
    print(f"wrote {args.output}")
    return 0
