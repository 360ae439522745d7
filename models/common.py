"""Small helpers shared by the synthetic-weight model builders."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx


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
