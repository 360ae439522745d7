"""Hooks and fixtures for every test folder; the shared policy itself lives in tests/support.py.

* Each test runs inside ``support.running(item)``, so ``require_tool`` and the SCons runner can
  check that the test carries the marker its tools need (tests/README.md#markers).
* ``qemu`` implies ``cross``: a test that runs a firmware on QEMU cross-compiled it first, so
  ``-m "not cross"`` leaves out the QEMU tests too.
* A test that took more than ``SLOW_SECONDS`` without the ``slow`` marker is named at the end of
  the run: ``./test quick`` relies on that marker to stay quick. Only named, not failed: a loaded
  machine can make any test slow once.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import REPO, running

#: A test (setup + call + teardown) slower than this alone on a 2-core machine should be marked ``slow``.
SLOW_SECONDS = 30.0
_UNMARKED_SLOW: dict[str, float] = {}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """``qemu`` implies ``cross`` (tryfirst: before ``-m`` deselects by marker)."""
    for item in items:
        if item.get_closest_marker("qemu") is not None and item.get_closest_marker("cross") is None:
            item.add_marker(pytest.mark.cross)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[object]:
    """Setup, call and teardown of ``item`` (fixtures included) run as ``item`` for the marker check."""
    with running(item):
        return (yield)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Add up each test's phases; remember the slow ones that lack the marker (on the xdist
    controller too: reports carry the test's keywords, markers included)."""
    if "slow" not in report.keywords:
        _UNMARKED_SLOW[report.nodeid] = _UNMARKED_SLOW.get(report.nodeid, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    slow = {nodeid: s for nodeid, s in _UNMARKED_SLOW.items() if s > SLOW_SECONDS}
    if slow:
        terminalreporter.write_sep("-", f"over {SLOW_SECONDS:.0f} s without the slow marker (tests/README.md#markers)")
        for nodeid, seconds in sorted(slow.items(), key=lambda kv: -kv[1]):
            terminalreporter.write_line(f"{seconds:7.1f}s {nodeid}")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO
