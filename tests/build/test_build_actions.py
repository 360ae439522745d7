"""What the build's actions do around the pure modules: running an executable the build has just
written (``tgr_plan_needs``) survives the fork/exec "Text file busy" race, and only that."""

from __future__ import annotations

import errno
import subprocess

import pytest

from tigris_tool import actions


def _flaky_run(failures: int, code: int = errno.ETXTBSY):
    """A stand-in for subprocess.run that fails ``failures`` times with ``code``, then succeeds."""
    calls = []

    def run(cmd, **_kw):
        calls.append(cmd)
        if len(calls) <= failures:
            raise OSError(code, "Text file busy" if code == errno.ETXTBSY else "other")
        return subprocess.CompletedProcess(cmd, 0, "ok\n", "")

    return run, calls


def test_a_busy_executable_is_run_again(monkeypatch) -> None:
    run, calls = _flaky_run(3)
    monkeypatch.setattr(actions.subprocess, "run", run)
    monkeypatch.setattr(actions.time, "sleep", lambda _s: None)
    assert actions._run_just_built(["tgr_plan_needs"]).stdout == "ok\n"
    assert len(calls) == 4


def test_busy_for_good_is_raised(monkeypatch) -> None:
    run, calls = _flaky_run(100)
    monkeypatch.setattr(actions.subprocess, "run", run)
    monkeypatch.setattr(actions.time, "sleep", lambda _s: None)
    with pytest.raises(OSError) as raised:
        actions._run_just_built(["tgr_plan_needs"], attempts=5)
    assert raised.value.errno == errno.ETXTBSY and len(calls) == 5


def test_any_other_failure_is_raised_at_once(monkeypatch) -> None:
    run, calls = _flaky_run(1, errno.ENOENT)
    monkeypatch.setattr(actions.subprocess, "run", run)
    with pytest.raises(OSError):
        actions._run_just_built(["tgr_plan_needs"])
    assert len(calls) == 1
