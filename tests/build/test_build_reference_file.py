"""One reference step for both reference files (tigris_scons/reference.py ``reference_file``): the
outputs or the arena use per stage, each run as many times as the plan's state asks."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tigris_scons import reference


@pytest.fixture
def calls(monkeypatch) -> list:
    """Record what the child-process runners would be asked, for a plan with state variables."""
    seen: list = []
    monkeypatch.setattr(reference, "read_plan", lambda path: SimpleNamespace(state_bytes=64))
    monkeypatch.setattr(reference, "compute_reference",
                        lambda *args, **kw: seen.append(("outputs", args, kw)) or {"schema": 1, "outputs": []})
    monkeypatch.setattr(reference, "stage_memory_reference",
                        lambda *args, **kw: seen.append(("stages", args, kw)) or [{"stage": 0}])
    return seen


def test_outputs_are_the_reference_document(calls):
    document = reference.reference_file("outputs", "m.tgrs", 7, None, fallback_library="lib.so", python="py")
    assert document == {"schema": 1, "outputs": []}
    assert calls == [("outputs", ("m.tgrs", 7, 3), {"fallback_library": "lib.so", "python": "py"})]  # state: 3 runs


def test_stages_are_wrapped_with_their_schema(calls):
    assert reference.reference_file("stages", "m.tgrs", 7, 5) == {"schema": 1, "stages": [{"stage": 0}]}
    assert calls[0][0] == "stages" and calls[0][1] == ("m.tgrs", 7, 5)  # declared runs win


def test_an_unknown_kind_is_refused(calls):
    with pytest.raises(ValueError, match="reference kind 'trace'"):
        reference.reference_file("trace", "m.tgrs", 7, None)
    assert not calls
