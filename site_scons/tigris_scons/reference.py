"""Host reference: run the same plan bytes on the same generated input with tigris-ml's runtime.

The firmware's output must be byte-identical to this reference. It is computed by the runtime
bundled in the tigris-ml wheel (``tigris.runtime.Session``); only where that library is not
available (e.g. no wheel for the host platform) does it fall back to our own host library
through ``TIGRIS_HOST_LIBRARY``, and the result records which one was used.

:func:`compute_reference` runs the work in a child Python process with a controlled
environment: a ``TIGRIS_HOST_LIBRARY`` the user happens to have exported cannot silently replace
the bundled reference, and a crash in a native library cannot take the SCons process down.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from .errors import TigrisError
from .inputs import fnv1a32, generate_run_inputs
from .plan import read_plan

HOST_LIBRARY_ENV = "TIGRIS_HOST_LIBRARY"


def bundled_runtime_available() -> bool:
    """True if the installed tigris-ml wheel ships its native host runtime.

    Looks at the installed distribution's files instead of importing ``tigris``: inside SCons
    the name ``tigris`` is taken by our own tool module (SCons registers tools in
    ``sys.modules`` under their plain name), so tigris-ml is only ever imported in child
    processes.
    """
    from importlib import metadata

    try:
        dist = metadata.distribution("tigris-ml")
    except metadata.PackageNotFoundError:
        return False
    native = Path(str(dist.locate_file("tigris/native")))
    return (native / "manifest.json").is_file() and any(native.glob("libtigris_host*"))


def reference_in_process(plan_path: str | Path, seed: int, runs: int = 1) -> dict[str, Any]:
    """Run `runs` inferences in a row (one Session: state variables carry from one to the next)
    with whatever host runtime the environment selects. ``outputs`` are the last inference's,
    ``earlier_runs`` the outputs of those before it, in order."""
    import numpy as np
    from tigris.runtime import Session, runtime_info

    info = read_plan(plan_path)
    run_inputs = generate_run_inputs(info.inputs, seed, runs)
    raw_inputs = run_inputs[-1]
    every_run = []
    with Session(str(plan_path)) as session:
        for raw_run in run_inputs:
            feeds = {}
            for tensor, spec, raw in zip(info.inputs, session.inputs, raw_run):
                if spec["name"] != tensor.name or spec["size_bytes"] != len(raw):
                    raise TigrisError(f"{plan_path}: host runtime disagrees about input {tensor.name!r}")
                feeds[spec["name"]] = np.frombuffer(raw, dtype=spec["dtype"]).reshape(spec["shape"]).copy()
            result = session.run(feeds)
            every_run.append([{"name": t.name, "dtype": t.dtype, "shape": list(t.shape),
                               "hex": np.ascontiguousarray(result[t.name]).tobytes().hex()} for t in info.outputs])
        memory = dict(session.memory)
    outputs = every_run[-1]
    checksum = 0x811C9DC5
    for out in outputs:
        checksum = fnv1a32(bytes.fromhex(out["hex"]), checksum)
    return {
        "schema": 1,
        "plan": str(plan_path),
        "seed": seed,
        "inputs": [{"name": t.name, "dtype": t.dtype, "shape": list(t.shape), "bytes": len(raw),
                    "fnv1a32": f"0x{fnv1a32(raw):08x}"} for t, raw in zip(info.inputs, raw_inputs)],
        "outputs": outputs,
        "earlier_runs": every_run[:-1],
        "checksum": f"0x{checksum:08x}",
        "runtime": dict(runtime_info()),
        "host_memory": memory,
    }


def compute_reference(
    plan_path: str | Path,
    seed: int,
    runs: int = 1,
    *,
    fallback_library: str | Path | None = None,
    python: str = sys.executable,
    timeout: float = 300.0,
) -> dict[str, Any]:
    """Reference outputs for ``plan_path`` computed in a child process.

    Uses the bundled runtime when available, else ``fallback_library`` (our host library).
    Raises :class:`TigrisError` with the child's message when the reference cannot be made.
    """
    env = dict(os.environ)
    env.pop(HOST_LIBRARY_ENV, None)
    if not bundled_runtime_available():
        if fallback_library is None or not Path(fallback_library).is_file():
            raise TigrisError(
                "the tigris-ml bundled host runtime is not available on this platform and no "
                "fallback host library was built (scons host)"
            )
        env[HOST_LIBRARY_ENV] = str(Path(fallback_library).resolve())
    package_root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = package_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd = [python, "-m", "tigris_scons.reference", str(plan_path), str(seed), str(runs)]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise TigrisError(f"host reference for {plan_path} did not finish within {timeout:g} s") from None
    if proc.returncode != 0:
        message = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise TigrisError(f"host reference failed for {plan_path}: {message}")
    return json.loads(proc.stdout)


def _main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print("usage: python -m tigris_scons.reference PLAN SEED [RUNS]", file=sys.stderr)
        return 2
    try:
        document = reference_in_process(argv[0], int(argv[1], 0), int(argv[2]) if len(argv) == 3 else 1)
    except TigrisError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except Exception as exc:  # report the library's message, not a traceback, to the parent
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    json.dump(document, sys.stdout, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
