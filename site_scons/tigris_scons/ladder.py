"""The ladder of compile budgets a ``fit`` sweep builds: one rung per distinct stage count.

Why a search and not a fixed list: how many stages tigris-ml cuts a model into, and the smallest
budget it writes a plan for at all, follow from the model's tensors and are only known by
compiling. Compiling is cheap (milliseconds to a fraction of a second in-process), a firmware
build and QEMU run per budget are not, so the sweep compiles many budgets here and builds one
firmware per distinct stage count: the smallest budget that gives that count, the least fast
memory for that schedule.

The search assumes the stage count does not grow with the budget (more memory never needs more
stages): the lowest budget is found by bisection on "a plan is written", the rungs by bisecting
every interval whose two ends have different counts until it is narrower than ``resolution``
(1/256 of the budget, at least 16 bytes). A count that appears only inside such a narrow interval
is not seen; every probe is kept in the ladder file so a reader can check.

Run in a child Python that has tigris-ml (inside SCons the name ``tigris`` is the SCons tool):
``python -c "...; from tigris_scons.ladder import main; main()" MODEL OUT.json -- COMPILE ARGS``.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

#: Compile at this budget to learn the unscheduled peak (one stage holds the whole live set).
UNBOUNDED_BUDGET = 1 << 30


@dataclass
class Ladder:
    """The rungs (budget, stages) in budget order, the unscheduled peak, and every probe made."""

    peak: int
    rungs: list[tuple[int, int]]
    probes: dict[int, int | None] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"schema": 1, "peak": self.peak, "rungs": [{"budget": b, "stages": s} for b, s in self.rungs],
                "probes": {str(b): s for b, s in sorted(self.probes.items())}}


def resolution(budget: int) -> int:
    """How narrow an interval gets before the search stops splitting it."""
    return max(16, budget // 256)


def find_ladder(stages_at: Callable[[int], int | None], peak: int) -> Ladder:
    """Search the rungs between the smallest plan and ``peak`` (the unscheduled peak).

    ``stages_at(budget)`` is the stage count of the plan tigris-ml writes at ``budget``, or None
    when it writes none.
    """
    probes: dict[int, int | None] = {}

    def probe(budget: int) -> int | None:
        if budget not in probes:
            probes[budget] = stages_at(budget)
        return probes[budget]

    if probe(peak) is None:
        raise ValueError(f"no plan at the unscheduled peak ({peak} B)")
    low, high = 0, peak  # no plan at low (0 never has one), a plan at high
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if probe(mid) is not None else (mid, high)
    smallest = high

    first: dict[int, int] = {}  # stage count -> smallest budget seen with it

    def note(budget: int) -> None:
        stages = probes[budget]
        if stages is not None and budget < first.get(stages, peak + 1):
            first[stages] = budget

    def split(lo: int, hi: int) -> None:
        note(lo)
        note(hi)
        if probes[lo] == probes[hi] or hi - lo <= resolution(lo):
            return
        mid = (lo + hi) // 2
        if probe(mid) is None:  # no plan between two plans: not monotone, keep the two ends
            return
        split(lo, mid)
        split(mid, hi)

    split(smallest, peak)
    return Ladder(peak, sorted((b, s) for s, b in first.items()), probes)


def _tigris_stages(model: str, extra: list[str], fast_and_rest: Callable[[int], str]) -> Callable[[int], int | None]:
    """``stages_at`` backed by tigris-ml's own compile command, in this process."""
    from tigris.cli import cli

    from tigris_scons.plan import read_plan

    out = Path(tempfile.mkdtemp(prefix="tigris-ladder-")) / "probe.tgrs"

    def stages_at(budget: int) -> int | None:
        out.unlink(missing_ok=True)
        sink = io.StringIO()
        try:
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                cli.main(["compile", model, "-m", fast_and_rest(budget), *extra, "-o", str(out)],
                         standalone_mode=False)
        except Exception:  # click.ClickException: "no plan written" (and the like)
            return None
        return read_plan(out).num_stages if out.is_file() else None

    return stages_at


def main(argv: list[str] | None = None) -> int:
    """``MODEL OUT.json SLOW|- -- EXTRA...``: search and write the ladder file."""
    args = list(sys.argv[1:] if argv is None else argv)
    model, out, slow = args[0], args[1], args[2]
    extra = args[args.index("--") + 1:] if "--" in args else []
    suffix = "" if slow == "-" else f"+{slow}"
    stages_at = _tigris_stages(model, extra, lambda budget: f"{budget}{suffix}")
    from tigris.cli import cli

    from tigris_scons.plan import read_plan

    top = Path(tempfile.mkdtemp(prefix="tigris-ladder-")) / "top.tgrs"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        cli.main(["compile", model, "-m", f"{UNBOUNDED_BUDGET}{suffix}", *extra, "-o", str(top)],
                 standalone_mode=False)
    ladder = find_ladder(stages_at, read_plan(top).peak)
    Path(out).write_text(json.dumps(ladder.to_dict(), indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
