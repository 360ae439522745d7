"""Our runtime against the bundled reference host runtime, plan by plan (issue 2, item 7).

For every ``tests/opmodels`` case (at its ``budget`` and, when set, its ``multistage_budget``)
and for DS-CNN at 20K (one untiled stage), 10K and 4K (chains, a tiled stage) and with LZ4
weights: random inputs through both runtimes, then the
strict acceptance ladder of tgrs-executor.md §4.6 (see oracle.py): byte-identical outputs, our
fast/slow peaks <= the reference's, counters equal, event streams equal. Today they are equal
for every supported case, so the comparison is kept strict; a difference is a runtime bug.

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

from opmodels import CASES, random_inputs, read_plan
from .oracle import ENV, assert_strict, compare, open_session, run_plan

tigris_runtime = pytest.importorskip("tigris.runtime")

#: case -> substring of our load-time refusal. Recorded from what the runtime does today.
EXPECTED_REFUSALS: dict[str, str] = {
    "relu_rescale": "op 0 (Relu) is not supported",
    "relu_symmetric": "op 0 (Relu) is not supported",
    "relu6_rescale": "op 0 (Relu6) is not supported",
    # Transpose (29) + Flatten/Reshape. The compiler lists the Transpose's model-order
    # intermediate as a stage output although no later stage reads it; our stage-list check
    # refuses that before the kernel check would name the unsupported Transpose. The reference
    # accepts and runs these plans (see README of tests/opmodels).
    "flatten_spatial": "stage 0 output tensor 1 is not produced there or not needed later",
    "reshape_spatial": "stage 0 output tensor 1 is not produced there or not needed later",
}

#: DS-CNN variants: id -> (budget, extra ``tigris compile`` args). 20K is one untiled stage;
#: 10K / 4K are chains (line-buffered) and a tiled GAP stage; the LZ4 variants decompress weight
#: blocks into fast memory (64K: one stage, 28K: chains), tgrs-executor.md §1.7 and §2.
DS_CNN_VARIANTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "20K": ("20K", ()),
    "10K": ("10K", ()),
    "4K": ("4K", ()),
    "64K-lz4": ("64K", ("-c", "lz4")),
    "28K-lz4": ("28K", ("-c", "lz4")),
}

#: DS-CNN variant -> refusal substring, for what our runtime does not execute yet.
DS_CNN_EXPECTED_REFUSALS: dict[str, str] = {
    "64K-lz4": "LZ4",
    "28K-lz4": "LZ4",
}


def _case_params() -> list:
    params = []
    for name in sorted(CASES):
        case = CASES[name]
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
    if budget == CASES[name].multistage_budget:
        # keep this the multi-stage untiled case it is meant to be
        assert read_plan(plan)["num_stages"] >= 2, f"{name} at {budget} is no longer multi-stage"
    if name in EXPECTED_REFUSALS:
        _expect_refusal(plan, our_library, EXPECTED_REFUSALS[name], f"EXPECTED_REFUSALS[{name!r}]")
        return
    assert_strict(compare(plan, our_library, n_inputs=n_inputs, seed=0))


def test_expected_refusals_name_real_cases() -> None:
    assert set(EXPECTED_REFUSALS) <= set(CASES), set(EXPECTED_REFUSALS) - set(CASES)


@pytest.mark.parametrize("variant", sorted(DS_CNN_VARIANTS))
def test_ds_cnn(variant: str, plan_cache, our_library: Path, n_inputs: int) -> None:
    budget, extra = DS_CNN_VARIANTS[variant]
    plan = plan_cache.ds_cnn_plan(budget, extra)
    stages = read_plan(plan)["stages"]
    if variant == "20K":
        assert len(stages) == 1
    if variant in ("10K", "4K"):
        assert any(s["chain_len"] for s in stages), f"DS-CNN at {budget} has no chain"
    if variant in DS_CNN_EXPECTED_REFUSALS:
        _expect_refusal(plan, our_library, DS_CNN_EXPECTED_REFUSALS[variant],
                        f"DS_CNN_EXPECTED_REFUSALS[{variant!r}]")
        return
    assert_strict(compare(plan, our_library, n_inputs=n_inputs, seed=1))


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
