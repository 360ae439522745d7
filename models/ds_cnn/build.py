"""Deterministic builder of the MLPerf Tiny keyword-spotting DS-CNN as an int8-interface QDQ ONNX.

Architecture (docs/models.md#ds_cnn): input 1×1×49×10 (NCHW); Conv 64 filters 10×4 stride 2,
pads (4,1,5,1) → 64×25×5 with BN folded + ReLU; 4 × [depthwise 3×3 pad 1 + BN + ReLU; pointwise
1×1 → 64 + BN + ReLU]; AveragePool 25×5 → 64×1×1; Flatten → Gemm 64→12 → Softmax.

Weights are synthetic (numpy ``default_rng(SEED)``), He-scaled so activations stay in a useful
range through all nine convs, with random BatchNorm statistics folded into the convs at build
time (tigris never sees a BatchNormalization). The Gemm is centred on the pooled features of
fixed-seed inputs (:func:`models.common.centred_head`) so the softmax output, and its argmax,
vary with the input. The fp32 graph is opset 13 / IR 8 and is
quantized with :func:`models.qdq.quantize_qdq` (the recipe) from 8 fixed-seed calibration batches,
then the boundary Q/DQ is stripped: the model takes int8 ``[1,1,49,10]`` and returns int8
``[1,12]`` (softmax output, scale 1/255, zero point −128 from ORT's calibration of [0, 1]).

CLI: ``python models/ds_cnn/build.py -o OUT.onnx`` (prints the boundary quantization).

Compiled with tigris-ml 0.12.1 (``tigris compile OUT.onnx -m 20K``): 1 stage, 13 ops, 14 tensors,
fast peak 16000 B (docs/models.md#compile-figures; tests/test_models_builders.py checks them).

Several stages that are all untiled: no budget gives that for DS-CNN (README.md next to this file
has the scan). Every activation between conv1 and the pool is 64×25×5 = 8000 B, so any stage
holding one of the middle convs needs 16000 B, the whole model's peak: below 16000 B the compiler
chains/tiles those convs (10K: 10 stages, 4K: 11, only the tail stage untiled), at ≥ 16000 B it is
one untiled stage. tests/opmodels case ``inverted_residual`` at 16K/17K gives 2 untiled stages.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from models.common import builder_main, centred_head, feature_stats, fp32_graph, normal_batches  # noqa: E402
from models.qdq import BoundaryQuant, quantize_qdq, save_model, strip_boundary_qdq  # noqa: E402

SEED = 20240613
CALIB_SEED = 7
NUM_CALIB_BATCHES = 8
INPUT_SHAPE = (1, 1, 49, 10)
NUM_CLASSES = 12
FILTERS = 64
NUM_DS_BLOCKS = 4
BN_EPS = 1e-3
HEAD_SEED = 11
HEAD_GAIN = 1.0
HEAD_BATCHES = 64


def _fold_bn(
    rng: np.random.Generator, w: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Draw BatchNorm statistics for ``w``'s output channels and fold them into (w, b)."""
    oc = w.shape[0]
    gamma = rng.uniform(0.8, 1.2, oc)
    beta = rng.normal(0.05, 0.1, oc)
    mean = rng.normal(0.0, 0.1, oc)
    var = rng.uniform(0.6, 1.4, oc)
    k = gamma / np.sqrt(var + BN_EPS)
    w_f = w * k.reshape(-1, *([1] * (w.ndim - 1)))
    b_f = (b - mean) * k + beta
    return w_f.astype(np.float32), b_f.astype(np.float32)


def make_fp32(seed: int = SEED) -> onnx.ModelProto:
    """Build the fp32 DS-CNN (opset 13, IR 8, BN folded, ReLU as separate nodes)."""
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def const(name: str, arr: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def conv_bn_relu(x: str, name: str, w: np.ndarray, **attrs: object) -> str:
        b = np.zeros(w.shape[0], np.float32)
        w_f, b_f = _fold_bn(rng, w, b)
        nodes.append(helper.make_node(
            "Conv", [x, const(f"{name}.weight", w_f), const(f"{name}.bias", b_f)],
            [f"{name}.conv"], name=f"{name}/Conv", **attrs))
        nodes.append(helper.make_node("Relu", [f"{name}.conv"], [f"{name}.relu"],
                                      name=f"{name}/Relu"))
        return f"{name}.relu"

    def he(shape: tuple[int, ...], fan_in: int) -> np.ndarray:
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    x = conv_bn_relu("input", "conv1", he((FILTERS, 1, 10, 4), 40),
                     kernel_shape=[10, 4], strides=[2, 2], pads=[4, 1, 5, 1])
    for i in range(1, NUM_DS_BLOCKS + 1):
        x = conv_bn_relu(x, f"dw{i}", he((FILTERS, 1, 3, 3), 9),
                         kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1], group=FILTERS)
        x = conv_bn_relu(x, f"pw{i}", he((FILTERS, FILTERS, 1, 1), FILTERS),
                         kernel_shape=[1, 1])
    nodes.append(helper.make_node("AveragePool", [x], ["pool"], name="pool/AveragePool",
                                  kernel_shape=[25, 5]))
    nodes.append(helper.make_node("Flatten", ["pool"], ["flat"], name="flatten/Flatten", axis=1))
    # Head centred on the pooled features of fixed-seed inputs (models/common.py explains why).
    mean, std = feature_stats(fp32_graph("ds_cnn", nodes, inits, INPUT_SHAPE, "flat", [1, FILTERS]),
                              calibration_batches(HEAD_BATCHES, HEAD_SEED))
    fc_w, fc_b = centred_head(rng.standard_normal((NUM_CLASSES, FILTERS)), mean, std, HEAD_GAIN)
    nodes.append(helper.make_node("Gemm", ["flat", const("fc.weight", fc_w), const("fc.bias", fc_b)],
                                  ["logits"], name="fc/Gemm", transB=1))
    nodes.append(helper.make_node("Softmax", ["logits"], ["output"], name="softmax/Softmax", axis=-1))

    model = fp32_graph("ds_cnn", nodes, inits, INPUT_SHAPE, "output", [1, NUM_CLASSES])
    onnx.checker.check_model(model)
    return model


def calibration_batches(n: int = NUM_CALIB_BATCHES, seed: int = CALIB_SEED) -> list[np.ndarray]:
    """Fixed-seed MFCC-like calibration inputs (unit-variance normal, float32, NCHW)."""
    return normal_batches(INPUT_SHAPE, n, seed)


def build_model() -> tuple[onnx.ModelProto, list[BoundaryQuant], list[BoundaryQuant]]:
    """Return the int8-interface QDQ model and its removed boundary input/output quantization."""
    qmodel = quantize_qdq(make_fp32(), calibration_batches())
    return strip_boundary_qdq(qmodel)


def build(path: str | Path) -> Path:
    """Build the int8-interface QDQ DS-CNN and write it to ``path``; returns the path."""
    model, _, _ = build_model()
    return save_model(model, path)


def main(argv: list[str] | None = None) -> int:
    return builder_main(__doc__.splitlines()[0], build_model, argv)


if __name__ == "__main__":
    raise SystemExit(main())
