"""Conformance folder: collects every fixture's outcome and prints a tally after the run.

The tally (``-- conformance: ...`` at the end of the pytest output) is the closing-note material of
issue 5: fixtures compiled, passed byte-identical, refused by us (and why), refused by tigris-ml.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

_OUTCOMES: dict[tuple[str, str], tuple[str, str]] = {}
_PROPERTY = "conformance_outcome"


@pytest.fixture
def record_outcome(request: pytest.FixtureRequest):
    """``record_outcome(variant, outcome, detail="")`` for the running fixture test.

    Kept in the test's report (``user_properties``), not in this process: under pytest-xdist the
    test runs in a worker and the tally is printed by the controller, which sees only reports.
    """

    def record(variant: str, outcome: str, detail: str = "") -> None:
        request.node.user_properties.append((_PROPERTY, (request.node.callspec.id, variant, outcome, detail)))

    return record


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    for name, value in report.user_properties:
        if name == _PROPERTY:
            test_id, variant, outcome, detail = value
            _OUTCOMES[(test_id, variant)] = (outcome, detail)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ARG001
    if not _OUTCOMES:
        return
    tr = terminalreporter
    by_variant: dict[str, Counter] = defaultdict(Counter)
    for (_, variant), (outcome, _) in _OUTCOMES.items():
        by_variant[variant][outcome] += 1
    tr.write_sep("-", "conformance: tigris-ml 0.12.1 sdist fixtures")
    for variant in sorted(by_variant):
        counts = by_variant[variant]
        tr.write_line(f"{variant}: {sum(counts.values())} fixtures: "
                      + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if config.getoption("verbose") > 0:
        for (name, variant), (outcome, detail) in sorted(_OUTCOMES.items()):
            if outcome != "identical":
                tr.write_line(f"  {variant} {name}: {outcome}{': ' + detail if detail else ''}")
