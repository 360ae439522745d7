"""Differential oracle: run a plan on the bundled reference host runtime and on ours, compare.

Why: our C runtime (``runtime/``) must be indistinguishable from the reference host runtime
bundled in tigris-ml 0.12.1 (the acceptance ladder, docs/execution.md#acceptance-ladder):
byte-identical outputs, fast/slow peaks no larger than the reference's, identical counters and
identical execution-event streams. Both runtimes are driven through the very same Python front
end, ``tigris.runtime.Session``, which loads ``$TIGRIS_HOST_LIBRARY`` instead of the bundled library
when that variable is set *at Session creation* (``tigris/runtime.py: _library()``). So one
process can open a reference Session and a Session on our library side by side, feed both the
same arrays, and compare everything the host ABI exposes (outputs, ``Session.memory``,
``Session.counters`` and ``Session.trace`` events).

API::

    from tests.runtime.oracle import run_plan, compare, assert_strict
    res = run_plan(plan, feeds)                    # reference (bundled) runtime
    res = run_plan(plan, feeds, library=our_so)    # our libtigris_host.so
    cmp = compare(plan, our_so, n_inputs=10, seed=0)
    assert_strict(cmp)        # outputs, peaks, counters, events; messages say what differs

Nothing here asserts on its own: ``compare`` collects, the ``assert_*`` helpers judge and
produce messages meant to be read in a failing CI log.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tests.opmodels import random_inputs

ENV = "TIGRIS_HOST_LIBRARY"

__all__ = ["ENV", "RunResult", "InputComparison", "Comparison", "host_library", "open_session",
           "run_plan", "compare", "assert_outputs_identical", "assert_peaks_not_above",
           "assert_counters_equal", "assert_events_equal", "assert_strict", "first_event_difference"]


@dataclass
class RunResult:
    """Everything one traced run exposes through the host ABI.

    ``memory`` is ``Session.memory`` (metrics 0-4: capacities, fast/slow peaks, workspace) and
    ``counters`` is ``Session.counters`` (metrics 5-11), both read right after the run: both
    runtimes reset peaks and counters at the start of every run, so they describe this input.
    ``events`` are the decoded ``Session.trace`` events, in order.
    """

    outputs: dict[str, np.ndarray]
    memory: dict[str, int]
    counters: dict[str, int]
    events: list[dict[str, Any]]
    runtime_source: str = ""


@contextlib.contextmanager
def host_library(library: str | os.PathLike[str] | None) -> Iterator[None]:
    """Temporarily select the host library: a path (ours) or None (the bundled reference).

    ``tigris.runtime`` reads ``$TIGRIS_HOST_LIBRARY`` only when a Session is created, so the
    variable has to be right just for that moment; the previous value is always restored, so
    an outer setting (e.g. a developer's shell) cannot leak into the "reference" side.
    """
    old = os.environ.get(ENV)
    try:
        if library is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = str(library)
        yield
    finally:
        if old is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = old


def open_session(plan_path: str | os.PathLike[str], library: str | os.PathLike[str] | None = None):
    """A ``tigris.runtime.Session`` on ``library`` (None = bundled). Refusals raise
    ``tigris.runtime.RuntimeError`` carrying the library's message."""
    from tigris.runtime import Session

    with host_library(library):
        session = Session(str(plan_path))
    expected = "bundled" if library is None else f"{ENV}={Path(library).resolve()}"
    if session.runtime_source != expected:  # never compare a runtime with itself by accident
        session.close()
        raise AssertionError(f"Session loaded {session.runtime_source!r}, wanted {expected!r}")
    return session


def _traced_run(session, feeds: Mapping[str, np.ndarray]) -> RunResult:
    outputs, events, counters = session.trace(dict(feeds))
    return RunResult(outputs=outputs, memory=dict(session.memory), counters=dict(counters),
                     events=events, runtime_source=session.runtime_source)


def run_plan(plan_path: str | os.PathLike[str], feeds: Mapping[str, np.ndarray],
             library: str | os.PathLike[str] | None = None) -> RunResult:
    """One traced run of ``plan_path`` on ``feeds``; ``library`` None = bundled reference."""
    with open_session(plan_path, library) as session:
        return _traced_run(session, feeds)


@dataclass
class InputComparison:
    """Reference vs ours for one input vector."""

    index: int
    feeds: dict[str, np.ndarray]
    reference: RunResult
    ours: RunResult
    #: our outputs from a plain ``Session.run`` (no trace buffer attached): tracing must not
    #: change what the runtime computes
    ours_untraced: dict[str, np.ndarray] = field(default_factory=dict)

    def output_mismatches(self) -> list[str]:
        """Human-readable description of every output that is not byte-identical."""
        problems = []
        ref, ours = self.reference.outputs, self.ours.outputs
        if set(ref) != set(ours):
            return [f"output names differ: reference {sorted(ref)}, ours {sorted(ours)}"]
        for name in ref:
            a, b = ref[name], ours[name]
            if a.dtype != b.dtype or a.shape != b.shape:
                problems.append(f"{name}: reference {a.dtype}{a.shape}, ours {b.dtype}{b.shape}")
                continue
            if a.tobytes() != b.tobytes():
                fa, fb = a.reshape(-1), b.reshape(-1)
                bad = np.flatnonzero(fa.view(f"u{fa.itemsize}") != fb.view(f"u{fb.itemsize}"))
                first = int(bad[0])
                problems.append(f"{name}: {bad.size} of {fa.size} elements differ; first at flat index "
                                f"{first}: reference {fa[first]!r}, ours {fb[first]!r}")
            if name in self.ours_untraced and self.ours_untraced[name].tobytes() != b.tobytes():
                problems.append(f"{name}: our untraced run differs from our traced run")
        return problems


@dataclass
class Comparison:
    """Result of :func:`compare`: one :class:`InputComparison` per random input."""

    plan: Path
    library: Path
    seed: int
    inputs: list[InputComparison]

    def describe(self) -> str:
        return f"{self.plan.name} (seed {self.seed}, {len(self.inputs)} inputs, ours = {self.library})"


def compare(plan_path: str | os.PathLike[str], library: str | os.PathLike[str], n_inputs: int = 10,
            seed: int = 0) -> Comparison:
    """Run ``n_inputs`` random inputs (``opmodels.random_inputs``, rng ``seed``) through the
    reference and through ``library``, one Session each, and collect everything.

    Inputs are drawn once and fed to both runtimes, so any difference is the runtime's. The
    int8 inputs cover all 256 codes, float inputs include values the boundary quantizer must
    saturate. Each input is traced on both sides; ours is also run untraced once per input, on a
    session of its own (a plan with state variables carries them from run to run, so every
    session sees each input once, in the same order).
    """
    plan_path = Path(plan_path)
    rng = np.random.default_rng(seed)
    results = []
    with (open_session(plan_path, None) as ref, open_session(plan_path, library) as ours,
          open_session(plan_path, library) as ours_untraced):
        for index in range(n_inputs):
            feeds = random_inputs(ref, rng)
            r = _traced_run(ref, feeds)
            o = _traced_run(ours, feeds)
            untraced = ours_untraced.run(feeds)
            results.append(InputComparison(index, feeds, r, o, untraced))
    return Comparison(plan_path, Path(library), seed, results)


# ----------------------------------------------------------------------------- assertions


def assert_outputs_identical(cmp: Comparison) -> None:
    """Every output byte-identical to the reference, for every input (ladder step 1)."""
    problems = [f"input {c.index}: {p}" for c in cmp.inputs for p in c.output_mismatches()]
    assert not problems, f"{cmp.describe()}: outputs differ from the reference:\n  " + "\n  ".join(problems)


def assert_peaks_not_above(cmp: Comparison) -> None:
    """Our fast and slow peaks are <= the reference's (ladder step 2, allowing us to be better).

    The message reports both runtimes' peaks so an improvement or a regression is visible.
    """
    problems = []
    for c in cmp.inputs:
        for key in ("fast_peak_bytes", "slow_peak_bytes"):
            ours, ref = c.ours.memory[key], c.reference.memory[key]
            if ours > ref:
                problems.append(f"input {c.index}: {key} ours {ours} > reference {ref}")
    assert not problems, (f"{cmp.describe()}: peaks above the reference:\n  " + "\n  ".join(problems)
                          + f"\n  (reference memory {cmp.inputs[0].reference.memory}, "
                            f"ours {cmp.inputs[0].ours.memory})")


def assert_counters_equal(cmp: Comparison) -> None:
    """load/spill/weight/copy bytes, compactions, tiles and tensor_align equal (ladder step 3)."""
    problems = []
    for c in cmp.inputs:
        if c.ours.counters != c.reference.counters:
            diff = {k: (c.reference.counters.get(k), c.ours.counters.get(k))
                    for k in sorted(set(c.ours.counters) | set(c.reference.counters))
                    if c.ours.counters.get(k) != c.reference.counters.get(k)}
            problems.append(f"input {c.index}: (reference, ours) {diff}")
    assert not problems, f"{cmp.describe()}: counters differ:\n  " + "\n  ".join(problems)


def first_event_difference(reference: list[dict[str, Any]], ours: list[dict[str, Any]]) -> str | None:
    """None if the event streams are equal, else where and how they first differ."""
    for i, (r, o) in enumerate(zip(reference, ours)):
        if r != o:
            keys = [k for k in sorted(set(r) | set(o)) if r.get(k) != o.get(k)]
            return (f"event {i} differs in {keys}:\n    reference {r}\n    ours      {o}")
    if len(reference) != len(ours):
        n = min(len(reference), len(ours))
        extra = reference[n] if len(reference) > n else ours[n]
        side = "reference" if len(reference) > n else "ours"
        return (f"streams have {len(reference)} (reference) vs {len(ours)} (ours) events; "
                f"first extra event {n} ({side}): {extra}")
    return None


def assert_events_equal(cmp: Comparison) -> None:
    """Event streams identical: kinds, stages, tensors, offsets, bytes, rows, pool usage
    (ladder step 4). Reports the first differing event index and both events."""
    for c in cmp.inputs:
        diff = first_event_difference(c.reference.events, c.ours.events)
        assert diff is None, f"{cmp.describe()}: input {c.index}: {diff}"


def assert_strict(cmp: Comparison) -> None:
    """All four checks; outputs first, since a wrong output makes the rest moot."""
    assert cmp.inputs, "no inputs were compared"
    assert_outputs_identical(cmp)
    assert_peaks_not_above(cmp)
    assert_counters_equal(cmp)
    assert_events_equal(cmp)
