"""Our runtime against the bundled reference host runtime, plan by plan (issue 2, item 7).

For every ``tests/opmodels`` case (at its ``budget`` and, when set, its ``multistage_budget``),
for a set of them at budgets that force the tiled paths (1-D stripes, 2-D tiles, by-input
reduction), and for DS-CNN from 20K (one untiled stage) down to 1K (chains, stripes, 2-D tiles,
by-input) and with LZ4 weights: random inputs through both runtimes, then the strict acceptance
ladder of docs/execution.md#acceptance-ladder (see oracle.py): byte-identical outputs, our
fast/slow peaks <= the reference's, counters equal, event streams equal. The comparison is kept
strict on purpose: a difference is a runtime bug to fix (or a reference behaviour to copy), never
a tolerance to add here.

Plans the runtime does not execute yet must be refused at load time with a message that says
what is missing. Those are listed explicitly (``EXPECTED_REFUSALS``, ``DS_CNN_EXPECTED_REFUSALS``)
and the entry is checked both ways: the refusal message must contain the recorded substring, and
a listed plan that starts loading fails the test with "remove from EXPECTED_REFUSALS", so the
list can never silently go stale. The reference must accept every listed plan (the plan itself
is fine; only our runtime lacks the feature).

Finally the ``tigris run`` CLI is run on both libraries to check the TIGRIS_HOST_LIBRARY path the
way a user takes it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.opmodels import CASES, random_inputs, read_plan

from .conftest import EXTRA_CASES
from .oracle import ENV, assert_strict, compare, open_session, run_plan
from .plantools import LoaderProbe

tigris_runtime = pytest.importorskip("tigris.runtime")

#: case (``opmodels.CASES`` or conftest.EXTRA_CASES) -> substring of our load-time refusal,
#: recorded from what the runtime does today. (Relu/Relu6, Transpose and LogSoftmax left this list
#: as the runtime gained them.)
EXPECTED_REFUSALS: dict[str, str] = {
}

#: DS-CNN variants: id -> (budget, extra ``tigris compile`` args). 20K is one untiled stage;
#: 10K..2K are line-buffered chains (plus a by-input GAP from 4K down), 1K is stripes, 2-D tiles
#: and by-input; the LZ4 variants decompress weight blocks into fast memory (64K: one stage,
#: 28K: chains); docs/execution.md#lz4-weight-blocks and docs/execution.md#execution-paths.
DS_CNN_VARIANTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "20K": ("20K", ()),
    "10K": ("10K", ()),
    "8K": ("8K", ()),
    "4K": ("4K", ()),
    "2K": ("2K", ()),
    "1K": ("1K", ()),
    "64K-lz4": ("64K", ("-c", "lz4")),
    "28K-lz4": ("28K", ("-c", "lz4")),
}
#: execution paths the reference takes for each DS-CNN variant (path names as in
#: docs/execution.md#path-codes-and-signatures); checked on the reference trace so each variant
#: keeps covering what it is here for
DS_CNN_PATHS: dict[str, set[str]] = {
    "20K": {"normal"}, "10K": {"chain", "normal"}, "8K": {"chain", "normal"},
    "4K": {"chain", "by_input", "normal"}, "2K": {"chain", "by_input", "normal"},
    "1K": {"tiled", "tiled_2d", "by_input", "normal"}, "64K-lz4": {"normal"},
    "28K-lz4": {"chain", "by_input", "normal"},
}

#: single-op cases at budgets below their untiled peak: the tiled paths on one operator at a time
TILED_CASES: dict[str, tuple[tuple[str, set[str]], ...]] = {
    "conv3x3_c3_p1": (("1K", {"tiled"}), ("256", {"tiled_2d"})),
    "conv10x4_s2_kws": (("1K", {"tiled"}), ("256", {"tiled_2d"})),
    "dw3x3_s1_p1": (("1K", {"tiled"}), ("256", {"tiled_2d"})),
    "dw3x3_s2_p1": (("1K", {"tiled"}), ("512", {"tiled_2d"})),
    "maxpool3x3_s2_p1": (("512", {"tiled"}), ("256", {"tiled_2d"})),
    "avgpool3x3_s2_p1": (("512", {"tiled"}), ("256", {"tiled_2d"})),
    "gap": (("512", {"by_input"}),),
    "inverted_residual": (("2K", {"tiled", "tiled_2d"}), ("512", {"tiled", "tiled_2d"})),
}

#: DS-CNN variant -> refusal substring, for what our runtime does not execute yet (empty since
#: the runtime gained chains and LZ4; keep the mechanism for the next feature).
DS_CNN_EXPECTED_REFUSALS: dict[str, str] = {}


def _case_params() -> list:
    params = []
    for name in sorted(CASES) + sorted(EXTRA_CASES):
        case = CASES[name] if name in CASES else EXTRA_CASES[name]
        params.append(pytest.param(name, case.budget, id=f"{name}-{case.budget}"))
        if case.multistage_budget:
            params.append(pytest.param(name, case.multistage_budget, id=f"{name}-{case.multistage_budget}"))
    return params


def _expect_refusal(plan: Path, library: Path, substring: str, entry: str) -> None:
    """Our library refuses ``plan`` at Session creation with ``substring``; the reference loads
    and runs it (so the refusal is about our runtime, not a broken plan)."""
    ref = run_plan(plan, random_inputs(plan, np.random.default_rng(0)))
    assert ref.outputs, "the reference produced no outputs"
    try:
        session = open_session(plan, library)
    except tigris_runtime.RuntimeError as exc:
        message = str(exc)
        assert substring in message, (f"{entry}: refusal message {message!r} does not contain the "
                                      f"recorded {substring!r}")
        return
    session.close()
    pytest.fail(f"{entry} now loads on our runtime: remove from EXPECTED_REFUSALS / "
                f"DS_CNN_EXPECTED_REFUSALS and let the strict comparison run")


@pytest.mark.parametrize(("name", "budget"), _case_params())
def test_opmodel_case(name: str, budget: str, plan_cache, our_library: Path, n_inputs: int) -> None:
    plan = plan_cache.case_plan(name, budget)
    if name in CASES and budget == CASES[name].multistage_budget:
        # keep this the multi-stage untiled case it is meant to be
        assert read_plan(plan)["num_stages"] >= 2, f"{name} at {budget} is no longer multi-stage"
    if name in EXPECTED_REFUSALS:
        _expect_refusal(plan, our_library, EXPECTED_REFUSALS[name], f"EXPECTED_REFUSALS[{name!r}]")
        return
    assert_strict(compare(plan, our_library, n_inputs=n_inputs, seed=0))
    LoaderProbe(our_library).bind_matches_load(plan.read_bytes())


def test_expected_refusals_name_real_cases() -> None:
    known = set(CASES) | set(EXTRA_CASES)
    assert set(EXPECTED_REFUSALS) <= known, set(EXPECTED_REFUSALS) - known


def _reference_paths(plan: Path) -> set[str]:
    """Execution paths (docs/execution.md#path-codes-and-signatures) the reference takes for ``plan``."""
    with open_session(plan) as session:
        _, events, _ = session.trace(random_inputs(plan, np.random.default_rng(0)))
    return {e["path"] for e in events if e["kind"] == "stage_begin"}


@pytest.mark.parametrize("variant", list(DS_CNN_VARIANTS))
def test_ds_cnn(variant: str, plan_cache, our_library: Path, n_inputs: int) -> None:
    budget, extra = DS_CNN_VARIANTS[variant]
    plan = plan_cache.ds_cnn_plan(budget, extra)
    assert _reference_paths(plan) == DS_CNN_PATHS[variant]
    if variant in DS_CNN_EXPECTED_REFUSALS:
        _expect_refusal(plan, our_library, DS_CNN_EXPECTED_REFUSALS[variant],
                        f"DS_CNN_EXPECTED_REFUSALS[{variant!r}]")
        return
    assert_strict(compare(plan, our_library, n_inputs=n_inputs, seed=1))
    LoaderProbe(our_library).bind_matches_load(plan.read_bytes())


@pytest.mark.parametrize(("name", "budget", "paths"),
                         [pytest.param(n, b, p, id=f"{n}-{b}") for n, v in TILED_CASES.items() for b, p in v])
def test_opmodel_case_tiled(name: str, budget: str, paths: set[str], plan_cache, our_library: Path,
                            n_inputs: int) -> None:
    plan = plan_cache.case_plan(name, budget)
    assert _reference_paths(plan) == paths
    assert_strict(compare(plan, our_library, n_inputs=n_inputs, seed=2))
    LoaderProbe(our_library).bind_matches_load(plan.read_bytes())


def test_expected_refusals_name_real_variants() -> None:
    assert set(DS_CNN_EXPECTED_REFUSALS) <= set(DS_CNN_VARIANTS)


def test_tigris_run_cli(plan_cache, our_library: Path, tmp_path: Path) -> None:
    """``tigris run PLAN --input in.bin --output out.bin --json`` on both libraries."""
    tigris = Path(sys.executable).parent / "tigris"
    plan = plan_cache.ds_cnn_plan("20K")
    feeds = random_inputs(plan, np.random.default_rng(7))
    (x,) = feeds.values()
    inp = tmp_path / "in.bin"
    inp.write_bytes(x.tobytes())

    def run(library: Path | None, out: Path) -> dict:
        env = {k: v for k, v in os.environ.items() if k != ENV}
        if library is not None:
            env[ENV] = str(library)
        r = subprocess.run([str(tigris), "run", str(plan), "--input", str(inp), "--output", str(out),
                            "--json"], capture_output=True, text=True, env=env)
        assert r.returncode == 0, f"tigris run ({library or 'bundled'}) failed:\n{r.stdout}\n{r.stderr}"
        return json.loads(r.stdout)

    ref_json = run(None, tmp_path / "ref.bin")
    our_json = run(our_library, tmp_path / "ours.bin")
    assert ref_json["runtime_source"] == "bundled"
    assert our_json["runtime_source"] == f"{ENV}={our_library.resolve()}"
    assert our_json["runtime_version"].startswith("tigris-scons-"), our_json["runtime_version"]
    ours, ref = (tmp_path / "ours.bin").read_bytes(), (tmp_path / "ref.bin").read_bytes()
    assert len(ref) == 12 and ours == ref
    assert our_json["tensors"] == ref_json["tensors"]
    assert our_json["memory"]["fast_peak_bytes"] <= ref_json["memory"]["fast_peak_bytes"]
    assert our_json["memory"]["slow_peak_bytes"] <= ref_json["memory"]["slow_peak_bytes"]
