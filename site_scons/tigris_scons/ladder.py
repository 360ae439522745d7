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
import hashlib
import io
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

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


def ladder_key(model_files: Sequence[str | Path], extra: list[str], slow: int | None, tigris_version: str) -> str:
    """What a ladder depends on: the model (or its builder's sources), the compile arguments other
    than the budget, tigris-ml's version and the search itself (this module and the plan reader).
    Nothing else may make the sweep search again: the search is the slow part of reading a fit."""
    digest = hashlib.sha256()
    here = Path(__file__).resolve()
    for path in [*model_files, here, here.with_name("plan.py")]:
        digest.update(Path(path).read_bytes())
    digest.update(json.dumps([extra, slow, tigris_version]).encode())
    return digest.hexdigest()


def rungs_of(ladder: dict[str, Any]) -> list[tuple[int, int]]:
    """The ``(budget, stages)`` rungs of a ladder file's document."""
    return [(r["budget"], r["stages"]) for r in ladder["rungs"]]


def cached_rungs(path: Path, key: str) -> list[tuple[int, int]] | None:
    """The rungs kept in the ladder file at ``path`` if it was searched for ``key``, else None."""
    if not path.is_file():
        return None
    cached = json.loads(path.read_text(encoding="utf-8"))
    return rungs_of(cached) if cached.get("key") == key else None


def keep(path: Path, ladder: dict[str, Any], key: str) -> None:
    """Write the ladder file with the key it was searched for (:func:`cached_rungs` reads it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(ladder | {"key": key}, indent=1) + "\n", encoding="utf-8")


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
