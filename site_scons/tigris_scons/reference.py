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

from .declaration import effective_runs
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
    return _in_child([str(plan_path), str(seed), str(runs)], plan_path, "host reference",
                     fallback_library=fallback_library, python=python, timeout=timeout)


#: ``source`` of every row :func:`stage_memory_reference` returns.
STAGE_MEMORY_SOURCE = "reference trace"


def stage_units(events: list[dict[str, Any]], chains: tuple[tuple[int, ...], ...] = ()) -> list[dict[str, Any]]:
    """Per-stage fast and slow use of one traced run, from the reference runtime's trace events.

    Every event carries ``fast_used`` / ``slow_used``, the pools' use after it (``Session.trace``).
    An execution unit runs from its ``stage_begin`` to the matching ``stage_end``; a control
    stage's graphs run nested units inside it, which count for it too (unlike
    ``tigris.cli.trace.units``, which stops the outer unit at the first nested one). A unit's
    ``fast`` / ``slow`` are the maxima of the two over its events, the unit's high-water marks:
    what our runtime reports through ``tgr_stage_memory`` and the firmware prints as
    ``STAGE_MEM``. A chain head's unit covers its member stages (``chains``: the stage indices of
    each chain, :attr:`tigris_scons.plan.PlanInfo.chains`); each stage of it gets the unit's
    figures, with ``unit`` the head. A stage that runs more than once (a While body) keeps its
    largest figures. Returns one row per stage that ran, in stage order:
    ``{stage, unit, path, fast, slow}``.
    """
    members = {chain[0]: tuple(chain) for chain in chains if chain}
    open_units: list[dict[str, Any]] = []
    rows: dict[int, dict[str, Any]] = {}
    for event in events:
        kind = event["kind"]
        if kind == "stage_begin":
            open_units.append({"stage": event["stage"], "path": event.get("path"),
                               "fast": event["fast_used"], "slow": event["slow_used"]})
            continue
        for unit in open_units:
            unit["fast"] = max(unit["fast"], event["fast_used"])
            unit["slow"] = max(unit["slow"], event["slow_used"])
        if kind != "stage_end" or not open_units:
            continue
        unit = open_units.pop()
        first = unit["stage"]
        if first is None:
            continue
        stages = members.get(first, (first,)) if unit["path"] == "chain" else (first,)
        for stage in stages:
            row = rows.setdefault(stage, {"stage": stage, "unit": first, "path": unit["path"], "fast": 0, "slow": 0})
            row["fast"] = max(row["fast"], unit["fast"])
            row["slow"] = max(row["slow"], unit["slow"])
    return [rows[stage] for stage in sorted(rows)]


def stage_memory_in_process(plan_path: str | Path, seed: int, runs: int = 1) -> list[dict[str, Any]]:
    """:func:`stage_memory_reference` in this process (``tigris`` must be tigris-ml here)."""
    import numpy as np
    from tigris.runtime import Session

    info = read_plan(plan_path)
    run_inputs = generate_run_inputs(info.inputs, seed, runs)
    with Session(str(plan_path)) as session:
        every_feed = []
        for raw_run in run_inputs:
            feeds = {}
            for tensor, spec, raw in zip(info.inputs, session.inputs, raw_run):
                if spec["name"] != tensor.name or spec["size_bytes"] != len(raw):
                    raise TigrisError(f"{plan_path}: host runtime disagrees about input {tensor.name!r}")
                feeds[spec["name"]] = np.frombuffer(raw, dtype=spec["dtype"]).reshape(spec["shape"]).copy()
            every_feed.append(feeds)
        for feeds in every_feed[:-1]:  # earlier inferences of a stateful model, as the firmware runs them
            session.run(feeds)
        _, events, _ = session.trace(every_feed[-1])
    rows = stage_units(events, info.chains)
    if not rows and info.num_stages:
        raise TigrisError(f"{plan_path}: the host runtime's trace has no execution units")
    return [dict(row, source=STAGE_MEMORY_SOURCE) for row in rows]


def stage_memory_reference(
    plan_path: str | Path,
    seed: int,
    runs: int = 1,
    *,
    fallback_library: str | Path | None = None,
    python: str = sys.executable,
    timeout: float = 300.0,
) -> list[dict[str, Any]]:
    """The reference runtime's fast and slow arena use per stage, for the firmware's STAGE_MEM lines.

    The bundled tigris-ml runtime reports no per-stage peaks of its own, only whole-run metrics
    (``Session.memory``) and, when traced, every execution event with the pools' use after it;
    the per-stage figures are derived from that trace (:func:`stage_units`) of the last of
    ``runs`` inferences on the same generated inputs the firmware uses (seed). Rows
    ``{stage, unit, path, fast, slow, source}``, ``source`` = :data:`STAGE_MEMORY_SOURCE`, one
    per stage that ran. The host runtime aligns allocations to 32 bytes: a firmware built with
    ``TGR_TENSOR_ALIGN`` 32 reports exactly these figures, one built with 16 at most these.

    Runs in a child Python like :func:`compute_reference` (same runtime choice and fallback).
    """
    document = _in_child(["--stage-memory", str(plan_path), str(seed), str(runs)], plan_path,
                         "host reference stage memory", fallback_library=fallback_library, python=python,
                         timeout=timeout)
    if not isinstance(document, list):
        raise TigrisError(f"host reference stage memory for {plan_path}: unexpected answer")
    return document


#: What a reference file holds: the outputs (``<m>.ref.json``) or, for ``stage_memory=1``, the
#: arena use per stage (``<m>.stages-ref.json``).
REFERENCE_KINDS = ("outputs", "stages")


def reference_file(kind: str, plan_path: str | Path, seed: int, runs: int | None, *,
                   fallback_library: str | Path | None = None, python: str = sys.executable) -> dict[str, Any]:
    """The document of one reference file of ``kind`` (:data:`REFERENCE_KINDS`) for the plan on
    the firmware's generated inputs; ``runs`` as declared (None: as many as the plan's state asks)."""
    runs = effective_runs(runs, read_plan(plan_path).state_bytes)
    if kind == "outputs":
        return compute_reference(plan_path, seed, runs, fallback_library=fallback_library, python=python)
    if kind == "stages":
        return {"schema": 1, "stages": stage_memory_reference(plan_path, seed, runs, fallback_library=fallback_library,
                                                              python=python)}
    raise ValueError(f"reference kind {kind!r}: expected one of {', '.join(REFERENCE_KINDS)}")


def _in_child(args: list[str], plan_path: str | Path, what: str, *, fallback_library: str | Path | None,
              python: str, timeout: float) -> Any:
    """``python -m tigris_scons.reference ARGS`` with the reference runtime selected; its JSON."""
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
    cmd = [python, "-m", "tigris_scons.reference", *args]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise TigrisError(f"{what} for {plan_path} did not finish within {timeout:g} s") from None
    if proc.returncode != 0:
        message = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise TigrisError(f"{what} failed for {plan_path}: {message}")
    return json.loads(proc.stdout)


def _main(argv: list[str]) -> int:
    work = reference_in_process
    if argv[:1] == ["--stage-memory"]:
        work, argv = stage_memory_in_process, argv[1:]
    if len(argv) not in (2, 3):
        print("usage: python -m tigris_scons.reference [--stage-memory] PLAN SEED [RUNS]", file=sys.stderr)
        return 2
    try:
        document = work(argv[0], int(argv[1], 0), int(argv[2]) if len(argv) == 3 else 1)
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
