"""Every per-op TFLite fixture of the tigris-ml 0.12.1 sdist, our runtime against the reference.

The sdist (``tests/fixtures/tflite/ops/``, 343 ``.tflite`` models with ``.npz`` inputs) is fetched
once by ``models_data.sdist_ops_dir()``: ``/tmp/sdist`` or ``build/sdist`` if already extracted,
else ``pip download --no-binary :all: --no-deps tigris-ml==0.12.1`` into ``build/sdist`` (the
path CI takes on a fresh clone). No sdist: one test skips, or fails under CI=true.

Each fixture is compiled in-process at 256K (collection time, ~3 s for all) and classified:

* **tigris-ml refuses it**: listed in ``COMPILER_REFUSALS`` with the reason (none in 0.12.1);
* **float plan** (no quantization parameters): our loader refuses it by design, naming float32
  (or, for plans with state/control flow, refusing those first);
* **int8 plan**: the reference and our library each run the fixture's own ``.npz`` inputs (4
  samples, when they match the plan's interface) plus generated ones (every int8 code, random),
  one Session per runtime per plan: outputs byte-identical, our fast/slow peaks <= the
  reference's. Where our loader refuses, ``EXPECTED_REFUSALS`` must list the fixture with a
  substring of the message (the op or feature it names). Where the reference refuses or fails a
  run, ours must not produce an output for it (refusing is fine).

``test_fixture_tight`` runs every int8 plan again compiled at half its 256K peak (the
compiler's tiled paths; falls back to 3/4 when no plan is written at 1/2): same checks, with its
own ``EXPECTED_TIGHT_REFUSALS``, and every path our trace reports for a stage must be one the
coverage table (``coverage.op_paths``) allows for each of its ops. ``test_fixture_quarter`` does
the same at a quarter of the peak, where the compiler bands more stages.

Both lists are honest: a listed fixture that starts running fails with "remove from ...".
``KNOWN_FAILURES`` marks cases that run but differ from the reference (strict xfail: a fix makes
them XPASS and fail until removed). ``-v`` prints every non-identical outcome after the run.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.conformance import coverage
from tests.support import skip_or_fail

pytest.importorskip("tigris.runtime")

#: tigris-ml 0.12.1's sdist holds this many .tflite fixtures
SDIST_FIXTURE_COUNT = 343

#: fixture -> why tigris-ml 0.12.1 writes no plan for it at 256K
COMPILER_REFUSALS: dict[str, str] = {}


#: int8 fixture plan (256K) -> substring of our loader's refusal
EXPECTED_REFUSALS: dict[str, str] = {
}

#: int8 fixture plan compiled at half its peak -> substring of our loader's refusal (besides the
#: fixtures of EXPECTED_REFUSALS, which must be refused for the same reason at any budget)
EXPECTED_TIGHT_REFUSALS: dict[str, str] = {
}

#: (fixture, variant) -> what differs from the reference; strict xfail
KNOWN_FAILURES: dict[tuple[str, str], str] = {
}

#: (fixture, variant) -> why our event trace differs (outputs and peaks still checked as above)
KNOWN_EVENT_DIFFERENCES: dict[tuple[str, str], str] = {
}

N_GENERATED = 2          # inputs generated per plan on top of the fixture's own (at least 3 in all)

# ----------------------------------------------------------------------------- collection

OPS_DIR = coverage.sdist_ops()
FIXTURES = coverage.fixture_names()


def _kind(name: str) -> str:
    plan = coverage.compile_fixture(name)
    if isinstance(plan, str):
        return "compile-refused"
    return "float" if coverage.is_float_plan(plan) else "int8"


KINDS = {name: _kind(name) for name in FIXTURES}


def _params(names, variant):
    out = []
    for name in names:
        marks = ()
        if (name, variant) in KNOWN_FAILURES:
            marks = pytest.mark.xfail(strict=True, reason=f"{KNOWN_FAILURES[name, variant]} "
                                                          f"(remove from KNOWN_FAILURES once it passes)")
        out.append(pytest.param(name, marks=marks, id=name))
    return out


@pytest.fixture(scope="module")
def lib() -> Path:
    from tests.ops.models_data import our_library

    return our_library()


def test_sdist_fixtures_available() -> None:
    if OPS_DIR is None:
        skip_or_fail("tigris-ml 0.12.1 sdist unavailable (pip download --no-binary :all: failed?): no fixture ran")
    assert len(FIXTURES) == SDIST_FIXTURE_COUNT, f"{OPS_DIR}: {len(FIXTURES)} .tflite fixtures"
    assert set(COMPILER_REFUSALS) <= set(FIXTURES), set(COMPILER_REFUSALS) - set(FIXTURES)
    stale = sorted(n for n in EXPECTED_REFUSALS if KINDS.get(n) != "int8")
    assert not stale, f"EXPECTED_REFUSALS lists fixtures that are not int8 plans: {stale}"
    stale = sorted(n for n in EXPECTED_TIGHT_REFUSALS if KINDS.get(n) != "int8" or n in EXPECTED_REFUSALS)
    assert not stale, f"EXPECTED_TIGHT_REFUSALS lists fixtures that are not int8 plans or already refused: {stale}"


# ----------------------------------------------------------------------------- inputs


def _inputs(name: str, session) -> tuple[list[dict[str, np.ndarray]], int]:
    """The fixture's own samples (when its .npz matches the interface) plus generated inputs."""
    from tests.opmodels import random_inputs
    from tests.ops.models_data import code_sweep

    specs = session.inputs
    feeds: list[dict[str, np.ndarray]] = []
    npz_path = OPS_DIR / f"{name}.npz"
    own = 0
    if npz_path.is_file():
        data = np.load(npz_path)
        arrays = [data.get(f"input_{k}") for k in range(len(specs))]
        if all(a is not None and a.shape[1:] == tuple(s["shape"]) and a.dtype == np.dtype(s["dtype"])
               for a, s in zip(arrays, specs)):
            for i in range(arrays[0].shape[0]):
                feeds.append({s["name"]: np.ascontiguousarray(a[i]) for a, s in zip(arrays, specs)})
            own = len(feeds)
    rng = np.random.default_rng(0)
    count = max(N_GENERATED, 3 - own)
    if all(np.dtype(s["dtype"]) == np.int8 for s in specs):
        feeds += code_sweep(session, rng, count)   # every int8 code, then uniform random
    else:
        feeds += [random_inputs(session, rng) for _ in range(count)]
    if any(np.dtype(s["dtype"]).kind == "i" and np.dtype(s["dtype"]).itemsize > 1 for s in specs):
        feeds += _index_inputs(session, rng)
    return feeds, own


def _index_inputs(session, rng: np.random.Generator) -> list[dict[str, np.ndarray]]:
    """Inputs for plans that take int32 (or int64) indices: uniform random values over the whole
    range fail every run, so add all-zero indices (inside any axis), small ones (mostly inside)
    and small ones with negatives (inside a constant table, outside a run-time gather)."""
    from tests.opmodels import random_inputs

    feeds = []
    for low, high in ((0, 1), (0, 4), (-4, 8), (-2, 3)):
        f = random_inputs(session, rng)
        for s in session.inputs:
            dtype = np.dtype(s["dtype"])
            if dtype.kind == "i" and dtype.itemsize > 1:
                f[s["name"]] = rng.integers(low, high, size=s["shape"]).astype(dtype)
        feeds.append(f)
    return feeds


# ----------------------------------------------------------------------------- checks


def _unit_ops(plan_info: dict, stage: int) -> list[int]:
    s = plan_info["stages"][stage]
    members = range(stage, stage + s["chain_len"]) if s.get("chain_len") else [stage]
    return [plan_info["ops"][o]["op_type"] for m in members for o in plan_info["stages"][m]["ops"]]


def _check_paths(plan: Path, events: list[dict]) -> list[str]:
    """Paths our trace reports, each allowed by the coverage table for every op of its unit."""
    info = coverage.plan_info(plan)
    problems = []
    for e in events:
        if e["kind"] != "stage_begin":
            continue
        for code in _unit_ops(info, e["stage"]):
            if e["path"] not in coverage.op_paths(code):
                problems.append(f"stage {e['stage']} ran on path {e['path']!r}, which docs/coverage.md does not "
                                f"list for {coverage.op_name(code)} ({', '.join(coverage.op_paths(code))})")
    return problems


def _differential(name: str, plan: Path, library: Path, refusal: str | None, variant: str, record) -> None:
    """Reference vs ours on one plan; ``refusal``: the substring our loader must refuse with."""
    from tigris.runtime import RuntimeError as TigrisError

    from tests.runtime.oracle import InputComparison, _traced_run, first_event_difference, open_session

    record(variant, "failed")  # replaced below when the checks pass
    ref_refusal = coverage.load_message(plan, None)
    try:
        ours = open_session(plan, library)
    except TigrisError as exc:
        message = str(exc)
        if ref_refusal is not None:
            record(variant, "both refuse", message)
            return
        assert refusal is not None, (f"{name} ({variant}): our loader refuses a plan the reference runs: {message!r}; "
                                     f"if that is intended, list it in EXPECTED_{'TIGHT_' if variant == 'tight' else ''}"
                                     f"REFUSALS with a substring naming the op or feature")
        assert refusal in message, f"{name} ({variant}): refused for another reason: {message!r} (expected {refusal!r})"
        record(variant, "refused by us", message)
        return
    with ours:
        if ref_refusal is not None:  # ours must not produce what the reference will not
            for feeds in _inputs(name, ours)[0]:
                with pytest.raises(TigrisError):
                    ours.run(feeds)
            record(variant, "reference refuses, ours fails its runs", ref_refusal)
            return
        assert refusal is None, (f"{name} ({variant}): our loader accepts it now; remove it from "
                                 f"EXPECTED_{'TIGHT_' if variant == 'tight' else ''}REFUSALS")
        # ours untraced on a session of its own: state variables see each input once, in order
        with open_session(plan, None) as ref, open_session(plan, library) as untraced:
            feeds_list, own = _inputs(name, ref)
            assert len(feeds_list) >= 3
            problems, paths_problems, event_problems, ref_failed = [], [], [], 0
            for index, feeds in enumerate(feeds_list):
                try:
                    r = _traced_run(ref, feeds)
                except TigrisError:
                    ref_failed += 1
                    with pytest.raises(TigrisError):  # no output where the reference gives none
                        ours.run(feeds)
                    with pytest.raises(TigrisError):
                        untraced.run(feeds)
                    continue
                try:
                    o = _traced_run(ours, feeds)
                except TigrisError as exc:
                    pytest.fail(f"{name} ({variant}): ours fails input {index}, which the reference runs: {exc}")
                c = InputComparison(index, feeds, r, o, untraced.run(feeds))
                problems += [f"input {index}: {p}" for p in c.output_mismatches()]
                for key in ("fast_peak_bytes", "slow_peak_bytes"):
                    if o.memory[key] > r.memory[key]:
                        problems.append(f"input {index}: {key} ours {o.memory[key]} > reference {r.memory[key]}")
                paths_problems += _check_paths(plan, o.events)
                difference = first_event_difference(r.events, o.events)
                if difference is not None:
                    event_problems.append(f"input {index}: {difference}")
            assert not problems, (f"{name} ({variant}, {len(feeds_list)} inputs, {own} of them the fixture's own):"
                                  "\n  " + "\n  ".join(problems))
            assert not paths_problems, f"{name} ({variant}):\n  " + "\n  ".join(sorted(set(paths_problems)))
            if (name, variant) in KNOWN_EVENT_DIFFERENCES:
                assert event_problems, (f"{name} ({variant}): the event trace equals the reference's now; remove it "
                                        "from KNOWN_EVENT_DIFFERENCES")
            else:
                assert not event_problems, (f"{name} ({variant}): event trace differs from the reference's:\n  "
                                            + "\n  ".join(event_problems[:3]))
            record(variant, "identical" if not ref_failed else "identical where the reference runs",
                   f"{len(feeds_list)} inputs, {own} of them the fixture's own"
                   + (f", reference fails {ref_failed}" if ref_failed else ""))


# ----------------------------------------------------------------------------- the tests


@pytest.mark.parametrize("name", _params(FIXTURES, "256K"))
def test_fixture(name: str, lib: Path, record_outcome) -> None:
    """At 256K: compiler refusal listed, float plan refused, or int8 plan identical / refused as listed."""
    plan = coverage.compile_fixture(name)
    kind = KINDS[name]
    if kind == "compile-refused":
        assert name in COMPILER_REFUSALS, (f"tigris-ml refuses {name}: {plan}; if that is expected, list it in "
                                           "COMPILER_REFUSALS")
        record_outcome("256K", "refused by tigris-ml", plan)
        return
    assert name not in COMPILER_REFUSALS, f"tigris-ml compiles {name} now; remove it from COMPILER_REFUSALS"
    if kind == "float":
        message = coverage.load_message(plan, lib)
        assert message is not None, f"{name}: our loader accepts a float plan"
        info = coverage.plan_info(plan)
        expected = "float32"
        assert expected in message, f"{name}: float plan refused without naming {expected!r}: {message!r}"
        record_outcome("256K", "float plan, refused by us", message)
        return
    _differential(name, plan, lib, EXPECTED_REFUSALS.get(name), "256K", record_outcome)


INT8 = [n for n in FIXTURES if KINDS[n] == "int8"]


@pytest.mark.parametrize("name", _params(INT8, "tight"))
def test_fixture_tight(name: str, lib: Path, record_outcome) -> None:
    """The int8 plan compiled at half its 256K peak (3/4 if the compiler writes nothing at 1/2)."""
    peak = coverage.plan_info(coverage.compile_fixture(name))["peak"]
    attempts = [coverage.compile_fixture(name, str(max(1, peak * k // 4))) for k in (2, 3)]
    plan = next((p for p in attempts if isinstance(p, Path)), None)
    if plan is None:
        # Nothing to run: the compiler reports that it wrote no plan at either budget, which is an
        # outcome of its own rather than a skip (a crash or another complaint fails here).
        assert all(isinstance(a, str) and "no plan written" in a for a in attempts), (
            f"tigris-ml fails on {name} at {peak // 2} or {3 * peak // 4} bytes: {attempts}")
        record_outcome("tight", "no plan below the 256K peak", str(attempts[-1]))
        return
    refusal = EXPECTED_REFUSALS.get(name) or EXPECTED_TIGHT_REFUSALS.get(name)
    _differential(name, plan, lib, refusal, "tight", record_outcome)


@pytest.mark.parametrize("name", _params(INT8, "quarter"))
def test_fixture_quarter(name: str, lib: Path, record_outcome) -> None:
    """The int8 plan compiled at a quarter of its 256K peak, where the compiler bands and tiles
    more stages (reshape bands, independent bands of the indexing ops and reductions)."""
    peak = coverage.plan_info(coverage.compile_fixture(name))["peak"]
    plan = coverage.compile_fixture(name, str(max(64, peak // 4)))
    if isinstance(plan, str):
        assert "no plan written" in plan, f"tigris-ml fails on {name} at {max(64, peak // 4)} bytes: {plan}"
        record_outcome("quarter", "no plan at a quarter of the 256K peak", plan)
        return
    refusal = EXPECTED_REFUSALS.get(name) or EXPECTED_TIGHT_REFUSALS.get(name)
    _differential(name, plan, lib, refusal, "quarter", record_outcome)
