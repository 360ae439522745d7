"""Single-op int8 QDQ models for the data-movement, reduction and matmul op families.

Why a separate builder next to ``tests/opmodels``: these ops have several activation inputs
(Concat, MatMul), several outputs (Split), constant non-weight operands (Reshape shapes, Pad
pads, Resize scales, Split sizes, reduction axes), and their interesting arithmetic depends on
exactly chosen quantization (same vs different in/out scale, tie-prone scale ratios). So every
model here is an fp32 ONNX graph quantized with the hand-built QDQ of
:func:`opmodels.qdq_manual.quantize_manual` (ORT would leave most of these ops in float), with
the (scale, zero point) of every activation fixed by the case, and the boundary Q/DQ stripped so
the plan interface is raw int8 (docs/models.md#int8-interface). Models with constant Gemm/MatMul
weights use the ORT recipe instead (:func:`models.qdq.quantize_qdq`), as the real networks do.

Usage::

    from tests.ops.models_data import graph, build, compile_model
    m = graph([node("Transpose", ["x"], ["y"], perm=[0, 2, 3, 1])], {"x": [1, 3, 4, 5]})
    onnx_path = build(m, tmp / "t.onnx", quant={"x": (0.02, 3), "y": (0.02, 3)})
    plan = compile_model(onnx_path, tmp / "t.tgrs")

Everything is deterministic (fixed calibration seeds), so a rebuild gives the same plan.
"""

from __future__ import annotations

import sys
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from models.qdq import quantize_qdq, save_model, strip_boundary_qdq
from tests.opmodels import compile_plan, random_inputs, read_plan
from tests.opmodels.qdq_manual import quantize_manual
from tests.support import REPO, host_library, locked, skip_or_fail

__all__ = ["node", "const", "graph", "quantize", "build", "compile_model", "read_plan", "opcodes", "plan_for",
           "sdist_ops_dir", "fixture_plan", "require_sdist_model",
           "our_library", "code_sweep", "compare_feeds", "assert_same_as_reference", "assert_refused",
           "refused_by_both"]

node = helper.make_node


def const(name: str, value: Any, dtype: Any = np.int64) -> onnx.TensorProto:
    """An initializer (shape, pads, axes, scales, split sizes, weights)."""
    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


def graph(nodes: Sequence[onnx.NodeProto], inputs: Mapping[str, Sequence[int]],
          inits: Sequence[onnx.TensorProto] = (), outputs: Sequence[str] | None = None,
          opset: int = 13) -> onnx.ModelProto:
    """fp32 model: ``inputs`` {name: shape} in order; ``outputs`` default to the last node's
    outputs. Output shapes come from ONNX shape inference (strict), so a case that ONNX itself
    rejects fails here, not in the compiler."""
    outs = list(outputs) if outputs is not None else list(nodes[-1].output)
    g = helper.make_graph(list(nodes), "op",
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs.items()],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outs], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="tigris-scons/tests/ops")
    m.ir_version = 8
    inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    info = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    del m.graph.output[:]
    for n in outs:
        dims = [d.dim_value for d in info[n].type.tensor_type.shape.dim]
        m.graph.output.append(helper.make_tensor_value_info(n, TensorProto.FLOAT, dims))
    onnx.checker.check_model(m, full_check=True)
    return m


def _calibration(model: onnx.ModelProto, seed_tag: str) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(zlib.crc32(seed_tag.encode()))
    inits = {t.name for t in model.graph.initializer}
    batches = []
    for _ in range(4):
        batch = {}
        for vi in model.graph.input:
            if vi.name in inits:
                continue
            dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
            batch[vi.name] = rng.standard_normal(dims).astype(np.float32)
        batches.append(batch)
    return batches


def quantize(model: onnx.ModelProto, quant: Mapping[str, tuple[float, int]] | None = None, *,
             recipe: bool = False, seed_tag: str = "ops") -> onnx.ModelProto:
    """int8 QDQ with an int8 interface.

    ``quant`` fixes the (scale, zero point) of chosen activations (graph inputs and node outputs
    by name); the others get MinMax ranges from fixed-seed calibration. ``recipe`` uses the ORT
    recipe instead (for constant Gemm/MatMul weights); ``quant`` is then not applied.
    """
    calib = _calibration(model, seed_tag)
    if recipe:
        q = quantize_qdq(model, calib)
    else:
        q = quantize_manual(model, calib, overrides=dict(quant or {}))
        _quantize_extra_outputs(q, model, calib, quant or {})
    q, _, _ = strip_boundary_qdq(q)
    return q


def _quantize_extra_outputs(q: onnx.ModelProto, fp32: onnx.ModelProto, calib: Sequence[Mapping[str, np.ndarray]],
                            quant: Mapping[str, tuple[float, int]]) -> None:
    """Give graph outputs after the first of a multi-output node (Split) their Q/DQ pair.

    ``quantize_manual`` quantizes one output per node; a Split's other outputs would stay float
    and the boundary could not be stripped. Same pair structure and MinMax ranges as it uses.
    """
    from tests.opmodels.qdq_manual import asym_qparams, observe_ranges

    producers = {o: n for n in q.graph.node for o in n.output}
    missing = [o.name for o in q.graph.output if producers[o.name].op_type != "DequantizeLinear"]
    if not missing:
        return
    ranges = observe_ranges(fp32, calib)
    for name in missing:
        scale, zp = quant[name] if name in quant else asym_qparams(*ranges[name])
        src = f"{name}_QuantizeLinear_Input"
        n = producers[name]
        n.output[list(n.output).index(name)] = src
        q.graph.initializer.extend([const(f"{name}_scale", np.float32(scale), np.float32),
                                    const(f"{name}_zero_point", int(zp), np.int8)])
        q_out = f"{name}_QuantizeLinear_Output"
        q.graph.node.extend([
            node("QuantizeLinear", [src, f"{name}_scale", f"{name}_zero_point"], [q_out], name=f"{name}_QuantizeLinear"),
            node("DequantizeLinear", [q_out, f"{name}_scale", f"{name}_zero_point"], [name],
                 name=f"{name}_DequantizeLinear")])
    onnx.checker.check_model(q)


def build(model: onnx.ModelProto, path: str | Path, quant: Mapping[str, tuple[float, int]] | None = None, *,
          recipe: bool = False) -> Path:
    """Quantize ``model`` (see :func:`quantize`) and save it to ``path``."""
    return save_model(quantize(model, quant, recipe=recipe, seed_tag=Path(path).stem), Path(path))


def compile_model(onnx_path: str | Path, plan_path: str | Path, budget: str = "256K") -> Path:
    """``tigris compile ONNX -m BUDGET -o PLAN`` in this process (``opmodels.compile_plan``).
    Raises RuntimeError with the CLI output when no plan is written."""
    return compile_plan(onnx_path, budget, plan_path)


def plan_for(directory: Path, name: str, model: onnx.ModelProto,
             quant: Mapping[str, tuple[float, int]] | None = None, *, recipe: bool = False,
             budget: str = "256K") -> Path:
    """Build and compile one case into ``directory/name.{onnx,tgrs}``."""
    return compile_model(build(model, directory / f"{name}.onnx", quant, recipe=recipe), directory / f"{name}.tgrs",
                         budget)


# --------------------------------------------------------------------------- the compiler's fixtures

SDIST = "tigris_ml-0.12.1"
_SDIST_OPS = "tests/fixtures/tflite/ops"
_SDIST_MODELS = "tests/fixtures/tflite"


def _sdist_extract(member_dir: str, wanted) -> Path | None:
    """``member_dir`` of tigris-ml 0.12.1's source distribution, with the members ``wanted``
    (a predicate on the member name) extracted.

    Looked up in /tmp/sdist (where developers extract it) and build/sdist; if absent, the archive
    is fetched once with the venv's pip (``pip download --no-binary :all: --no-deps
    tigris-ml==0.12.1``) into build/sdist. None when that fails (no network). Under a lock:
    pytest-xdist workers would otherwise fetch and extract at once, and a half-extracted folder
    passes the look-up."""
    dest = REPO / "build" / "sdist"
    with locked(dest / ".lock"):
        return _sdist_extract_unlocked(member_dir, wanted, dest)


def _sdist_extract_unlocked(member_dir: str, wanted, dest: Path) -> Path | None:
    import subprocess
    import tarfile

    for root in (Path("/tmp/sdist"), dest):
        folder = root / SDIST / member_dir
        if folder.is_dir() and any(wanted(f"{SDIST}/{member_dir}/{p.name}") for p in folder.iterdir()):
            return folder
    archive = dest / f"{SDIST}.tar.gz"
    if not archive.is_file():
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps",
                        "tigris-ml==0.12.1", "-d", str(dest)], capture_output=True, text=True)
    if not archive.is_file():
        return None
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(f"{SDIST}/{member_dir}/") and wanted(m.name)]
        tar.extractall(dest, members=members, filter="data")
    folder = dest / SDIST / member_dir
    return folder if folder.is_dir() else None


def sdist_ops_dir() -> Path | None:
    """tigris-ml 0.12.1's own per-op TFLite fixtures (in its source distribution only)."""
    return _sdist_extract(_SDIST_OPS, lambda name: name.startswith(f"{SDIST}/{_SDIST_OPS}/"))


#: The real models of the sdist (``tests/fixtures/tflite/``): keyword spotting, ResNet-8, VWW.
SDIST_MODELS = ("kws_ref_model", "pretrainedResnet_quant", "vww_96_int8")


def sdist_model(stem: str) -> Path | None:
    """One real model of the sdist (``SDIST_MODELS``) as a .tflite file, or None without the sdist."""
    folder = _sdist_extract(_SDIST_MODELS, lambda name: name.endswith(".tflite") and "/ops/" not in name)
    path = folder / f"{stem}.tflite" if folder is not None else None
    return path if path is not None and path.is_file() else None


def require_sdist_model(stem: str) -> Path:
    """``sdist_model(stem)``, or skip the test (fail it under CI) when the sdist cannot be had."""
    model = sdist_model(stem)
    if model is None:
        skip_or_fail(f"tigris-ml 0.12.1 sdist model {stem}.tflite unavailable (pip download failed?)")
    return model


def fixture_plan(name: str, directory: Path) -> Path:
    """Compile the sdist fixture ``name``.tflite at 256K (skips, or fails under CI, when the
    sdist cannot be had)."""
    ops = sdist_ops_dir()
    if ops is None or not (ops / f"{name}.tflite").is_file():
        skip_or_fail(f"tigris-ml 0.12.1 sdist fixture {name}.tflite unavailable (pip download failed?)")
    return compile_model(ops / f"{name}.tflite", directory / f"fixture_{name}.tgrs")


# --------------------------------------------------------------------------- differential runs

def our_library() -> Path:
    """Our libtigris_host.so (``tests.support.host_library``: ``scons host`` under a lock, or
    ``$TGR_TEST_LIBRARY``)."""
    return host_library()


def code_sweep(session: Any, rng: np.random.Generator, count: int) -> list[dict[str, np.ndarray]]:
    """``count`` input sets: the first holds every int8 code in each input (tiled, each input
    rotated differently so two inputs do not move in lockstep), the rest uniform random."""
    feeds = []
    first = {}
    for k, spec in enumerate(session.inputs):
        n = int(np.prod(spec["shape"]))
        codes = np.roll(np.arange(-128, 128, dtype=np.int16), 37 * k)
        first[spec["name"]] = np.resize(codes, n).astype(np.int8).reshape(spec["shape"])
    feeds.append(first)
    while len(feeds) < count:
        feeds.append(random_inputs(session, rng))
    return feeds


def compare_feeds(plan: Path, library: Path, n_inputs: int = 6, seed: int = 0):
    """Reference vs ours on :func:`code_sweep` inputs: an ``oracle.Comparison`` (outputs, peaks,
    counters and traced events of every input, plus our untraced outputs)."""
    from tests.runtime.oracle import Comparison, InputComparison, _traced_run, open_session

    rng = np.random.default_rng(seed)
    results = []
    # the untraced runs on a session of their own: state variables see each input once, in order
    with (open_session(plan, None) as ref, open_session(plan, library) as ours,
          open_session(plan, library) as ours_untraced):
        for index, feeds in enumerate(code_sweep(ref, rng, n_inputs)):
            results.append(InputComparison(index, feeds, _traced_run(ref, feeds), _traced_run(ours, feeds),
                                           ours_untraced.run(feeds)))
    return Comparison(Path(plan), Path(library), seed, results)


def reference_paths(plan: Path) -> set[str]:
    """Execution paths the reference runtime takes for ``plan`` (from its trace, zero inputs)."""
    from tests.runtime.oracle import open_session

    with open_session(plan, None) as ref:
        _, events, _ = ref.trace({spec["name"]: np.zeros(spec["shape"], spec["dtype"]) for spec in ref.inputs})
    return {e["path"] for e in events if e["kind"] == "stage_begin"}


def assert_same_as_reference(plan: Path, library: Path, n_inputs: int = 6, seed: int = 0) -> None:
    """Byte-identical outputs, peaks not above the reference's, equal counters and events."""
    from tests.runtime.oracle import (
        assert_counters_equal,
        assert_outputs_identical,
        assert_peaks_not_above,
        first_event_difference,
    )

    cmp = compare_feeds(plan, library, n_inputs, seed)
    assert_outputs_identical(cmp)
    assert_peaks_not_above(cmp)
    assert_counters_equal(cmp)
    for c in cmp.inputs:
        diff = first_event_difference(c.reference.events, c.ours.events)
        assert diff is None, f"{cmp.describe()}: input {c.index}: {diff}"


def assert_refused(plan: Path, library: Path, op_name: str, *, reference_refuses: bool | None = None) -> str:
    """Our loader refuses ``plan`` with a message naming ``op_name``; optionally the reference
    must refuse (True) or accept (False) it too. Returns our message."""
    import pytest
    from tigris.runtime import RuntimeError as TigrisError

    from tests.runtime.oracle import open_session

    if reference_refuses is not None:
        try:
            open_session(plan, None).close()
            refused = False
        except TigrisError:
            refused = True
        assert refused == reference_refuses, f"reference {'accepts' if not refused else 'refuses'} {plan.name}"
    with pytest.raises(TigrisError) as info:
        open_session(plan, library).close()
    message = str(info.value)
    assert f"({op_name})" in message, f"refusal of {plan.name} does not name {op_name}: {message}"
    return message


def refused_by_both(lib: Path, data: bytes, out: Path) -> str:
    """Write ``data`` to ``out``: the reference and our library both refuse to load it. Returns
    our message."""
    import pytest
    from tigris.runtime import RuntimeError as TigrisError

    from tests.runtime.oracle import open_session

    out.write_bytes(data)
    with pytest.raises(TigrisError):
        open_session(out, None).close()
    with pytest.raises(TigrisError) as info:
        open_session(out, lib).close()
    return str(info.value)


def opcodes(plan: Mapping[str, Any]) -> list[int]:
    return [o["op_type"] for o in plan["ops"]]
