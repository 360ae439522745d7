"""State variables (schema 10) against the reference host runtime: SVDF carried from run to run.

The sdist's ``svdf`` (one batch row, rank 2) and ``svdf_batch`` (two rows, rank 1) run 40
inferences in a row on one session per runtime, with ``reset_state`` after the 20th: every output
identical, so the state each run leaves is the reference's. At 256K and below the peak (where
the compiler bands the batch rows) the event trace is compared too (assert_same_as_reference,
which feeds each session every input once, in order). Plans whose state section the reference
refuses are refused by ours, naming the fault.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from tests.ops.models_data import assert_same_as_reference, compile_model, fixture_plan, refused_by_both, sdist_ops_dir

pytest.importorskip("tigris.runtime")


SEC_STATE = 12
FIXTURES = ("svdf", "svdf_batch", "lstm", "lstm_time_major_clip")


def _tight(name: str, work: Path) -> Path:
    from tests.conformance import coverage

    peak = coverage.plan_info(fixture_plan(name, work))["peak"]
    for numerator in (2, 3):
        budget = str(peak * numerator // 4)
        try:
            return compile_model(sdist_ops_dir() / f"{name}.tflite", work / f"{name}_{budget}.tgrs", budget)
        except RuntimeError:
            continue
    pytest.fail(f"tigris-ml writes no plan for {name} below its peak")


@pytest.mark.parametrize("name", FIXTURES)
def test_state_carries_like_the_reference(name: str, work: Path, lib: Path) -> None:
    from tests.runtime.oracle import open_session

    plan = fixture_plan(name, work)
    rng = np.random.default_rng(11)
    with open_session(plan, None) as reference, open_session(plan, lib) as ours:
        (spec,) = reference.inputs
        outputs = set()
        for run in range(40):
            if run == 20:
                reference.reset_state()
                ours.reset_state()
            feeds = {spec["name"]: rng.integers(-128, 128, size=spec["shape"]).astype(np.int8)}
            expected, got = reference.run(feeds), ours.run(feeds)
            for key in expected:
                assert got[key].tobytes() == expected[key].tobytes(), f"run {run}: {key} differs"
                outputs.add(expected[key].tobytes())
        # the same input twice gives different outputs once the state moved: the state is live
        feeds = {spec["name"]: np.zeros(spec["shape"], np.int8)}
        first, second = ours.run(feeds), ours.run(feeds)
        assert any(first[k].tobytes() != second[k].tobytes() for k in first)


@pytest.mark.parametrize("name", FIXTURES)
def test_state_plans_match_the_reference_with_events(name: str, work: Path, lib: Path) -> None:
    assert_same_as_reference(fixture_plan(name, work), lib, n_inputs=8)


def test_banded_svdf_matches_the_reference(work: Path, lib: Path) -> None:
    from tests.ops.models_data import reference_paths

    plan = _tight("svdf_batch", work)
    assert "rows" in reference_paths(plan)
    assert_same_as_reference(plan, lib, n_inputs=8)


def _state_section(view) -> int:
    return view.sections[SEC_STATE]


@pytest.mark.parametrize("edit, expect", [
    ("state_bytes_0", "state section holds"),
    ("offset_4", "offset, size or initial value is out of place"),
    ("bytes_2", "offset, size or initial value is out of place"),
    ("initial_past_the_end", "offset, size or initial value is out of place"),
    ("no_output", "STATE flag disagrees"),
    ("input_not_state", "not its STATE tensors"),
])
def test_bad_state_sections_are_refused_like_the_reference(edit: str, expect: str, work: Path, lib: Path) -> None:
    """The reference refuses each of these edits of svdf's state section (its runtime's own
    checks); ours refuses them too, with the reason."""
    from tests.runtime.plantools import PlanView

    plan = fixture_plan("svdf", work)
    view = PlanView(plan)
    section = _state_section(view)
    entry = section + 8
    data = bytearray(view.data)
    if edit == "state_bytes_0":
        struct.pack_into("<I", data, section + 4, 0)
    elif edit == "offset_4":
        struct.pack_into("<I", data, entry + 4, 4)
    elif edit == "bytes_2":
        struct.pack_into("<I", data, entry + 8, 2)
    elif edit == "initial_past_the_end":
        struct.pack_into("<I", data, entry + 12, 0xFFFF)
    elif edit == "no_output":
        struct.pack_into("<H", data, entry + 2, 0xFFFF)
    elif edit == "input_not_state":
        struct.pack_into("<H", data, entry, 0)  # the model input, not a STATE tensor
    message = refused_by_both(lib, bytes(data), work / f"svdf_{edit}.tgrs")
    assert expect in message, message
