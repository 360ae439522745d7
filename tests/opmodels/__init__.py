"""Single-op int8 QDQ ONNX models for differential tests of our C runtime.

Usage (repository root on ``sys.path``, as pytest.ini's ``pythonpath`` arranges)::

    from tests.opmodels import CASES, compile_plan, random_inputs, read_plan
    onnx_path = CASES["conv3x3_c3_p1"].build(tmp_dir)                   # deterministic .onnx
    plan_path = compile_plan(onnx_path, "256K", tmp_dir / "conv.tgrs")
    plan = read_plan(plan_path)                                         # read_binary_plan dict
    with tigris.runtime.Session(str(plan_path)) as s:
        out = s.run(random_inputs(s, np.random.default_rng(0)))

Every case compiles at a generous budget (its ``budget``, 256K) into ONE untiled stage. Cases and
the plan contents observed with tigris-ml 0.12.1 are listed in README.md.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .cases import CASES, OP, OpCase

__all__ = ["CASES", "OP", "OpCase", "TIGRIS", "compile_plan", "path_signature", "random_inputs",
           "read_plan", "untiled_stages"]

#: The tigris CLI of the running interpreter's environment (the project venv).
TIGRIS = Path(sys.executable).parent / "tigris"


def compile_plan(onnx_path: str | Path, budget: str, out_path: str | Path,
                 extra_args: Sequence[str] = ()) -> Path:
    """``tigris compile ONNX -m BUDGET -o OUT [extra_args]``, run in this process (click's
    runner); return ``out_path``.

    In this process because the CLI's start-up costs ~0.5 s per plan in a subprocess and ~7 ms
    here, and the runtime and path tests compile a few hundred plans. An existing ``out_path``
    is replaced. Raises ``RuntimeError`` with the CLI's output when no plan is written (tigris
    prints the reason above ``Error: no plan written``).
    """
    from click.testing import CliRunner
    from tigris.cli import cli

    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    args = ["compile", str(onnx_path), "-m", budget, "-o", str(out), *extra_args]
    res = CliRunner().invoke(cli, args)
    if res.exit_code != 0 or not out.exists():
        raise RuntimeError(f"tigris {' '.join(args)} failed ({res.exit_code}):\n{res.output}"
                           + (f"\n{res.exception!r}" if res.exception and not isinstance(res.exception, SystemExit)
                              else ""))
    return out


def read_plan(plan: str | Path | bytes) -> dict[str, Any]:
    """Parse a ``.tgrs`` with ``tigris.emitters.binary.reader.read_binary_plan``."""
    from tigris.emitters.binary.reader import read_binary_plan

    data = plan if isinstance(plan, bytes) else Path(plan).read_bytes()
    return read_binary_plan(data)


def _interface(source: Any) -> list[dict[str, Any]]:
    """[{name, dtype, shape}] of the model inputs, from a Session, a plan path/bytes or plan dict."""
    from onnx.helper import tensor_dtype_to_np_dtype

    if hasattr(source, "inputs") and not isinstance(source, Mapping):
        return [{"name": i["name"], "dtype": np.dtype(i["dtype"]), "shape": tuple(i["shape"])}
                for i in source.inputs]
    plan = source if isinstance(source, Mapping) else read_plan(source)
    out = []
    for t in plan["model_inputs"]:
        rec = plan["tensors"][t]
        code = rec["iface_dtype"] or rec["dtype"]  # ONNX TensorProto.DataType codes
        out.append({"name": rec["name"], "dtype": np.dtype(tensor_dtype_to_np_dtype(code)),
                    "shape": tuple(rec["shape"])})
    return out


def random_inputs(session_or_plan: Any, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Random inputs keyed by interface name, in the plan's stored (NHWC) shape and dtype.

    ``session_or_plan``: a ``tigris.runtime.Session``, a plan path/bytes, or a ``read_plan`` dict.
    integer inputs are uniform over all codes (saturating every kernel path); float32 inputs are
    standard normal, the distribution the cases were calibrated on (plus a few values beyond the
    calibrated range, which the boundary quantizer must saturate).
    """
    inputs = {}
    for spec in _interface(session_or_plan):
        if spec["dtype"].kind in "iu":
            info = np.iinfo(spec["dtype"])
            arr = rng.integers(info.min, info.max, size=spec["shape"], dtype=spec["dtype"],
                               endpoint=True)
        else:
            arr = rng.standard_normal(spec["shape"]).astype(np.float32)
            flat = arr.reshape(-1)
            flat[: min(2, flat.size)] = [8.0, -8.0][: min(2, flat.size)]
        inputs[spec["name"]] = np.ascontiguousarray(arr)
    return inputs


def untiled_stages(plan: Mapping[str, Any]) -> list[bool]:
    """Per stage: True if it runs on the normal (untiled) path.

    That is: no tile plan (``tile_plan_idx == 0xFFFF``), not a chain member (``chain_len == 0``),
    and Σ stage input + output bytes ≤ the stage's ``peak_bytes`` (and the plan budget), so the
    runtime's needs-tiling test (docs/execution.md#fast-limit-and-the-needs-tiling-test) is
    false. A sufficient condition in every plan observed; stages failing it ran tiled in one case
    and normal in others (README.md), so check the host trace's ``stage_begin`` path when it
    matters.
    """
    result = []
    for s in plan["stages"]:
        io = sum(plan["tensors"][t]["size_bytes"] for t in s["inputs"] + s["outputs"])
        limit = min(s["peak_bytes"], plan["budget"]) if s["peak_bytes"] else plan["budget"]
        result.append(s["tile_plan_idx"] == 0xFFFF and s["chain_len"] == 0 and io <= limit)
    return result


def path_signature(plan: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> str:
    """The execution units of one traced run, as ``"STAGE:PATH"`` tokens joined by spaces.

    ``events`` from ``Session.trace``; one token per ``stage_begin`` (a chain is one unit, named
    by its head stage). Variants the path name alone does not show are suffixed from the plan:
    ``chainN-lb`` / ``chainN-tb`` (N member stages; head flag bit 0 set = line-buffered, clear =
    tile-buffered), ``by_input-grouped`` (schema-10 tile record with ``input_channel_group``).
    Example (executor_cnn at 4K): ``"0:chain2-lb 2:chain2-lb 4:chain2-tb 6:normal"``.
    """
    tokens = []
    for e in events:
        if e["kind"] != "stage_begin":
            continue
        stage = plan["stages"][e["stage"]]
        name = e["path"]
        if name == "chain":
            name = f"chain{stage['chain_len']}-{'lb' if stage['flags'] & 1 else 'tb'}"
        elif name == "by_input" and stage["tile_plan_idx"] != 0xFFFF:
            if plan["tile_plans"][stage["tile_plan_idx"]].get("input_channel_group"):
                name = "by_input-grouped"
        tokens.append(f"{e['stage']}:{name}")
    return " ".join(tokens)
