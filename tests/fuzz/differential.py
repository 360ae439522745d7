"""Run plans on the reference runtime and on ours side by side, and judge the pair of verdicts.

Why: ours must refuse every plan the reference refuses, fail every run the reference fails
(or refuse the plan outright: fail closed), never crash, and where both run give identical
outputs. ``diff_plan.c`` computes one verdict per runtime per plan in forked children (the
reference may crash on a corrupted plan); this module builds it, feeds it plans, and applies
the rule (``is_finding``, the same rule diff_plan.c's fuzz mode applies).

    .venv/bin/python tests/fuzz/differential.py edits [BASE.tgrs...] # every boundary edit, counts
                                                         # (all verdicts: build/fuzz/differential/edits.tsv)
    .venv/bin/python tests/fuzz/differential.py fuzz --seconds 1800 --seed 1 [SEED.tgrs...]
    .venv/bin/python tests/fuzz/differential.py explain BASE.tgrs FINDING.tgrs   # which fields differ
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DRIVER = REPO / "build" / "fuzz" / "diff_plan"
CORPUS = HERE / "corpus"

#: plans whose every field gets every boundary edit, together covering every section kind the
#: loader reads: header and directory (all), tensors/ops/stages/pools/weights/quant/attributes
#: (all), v9 tile plans (ds_cnn_20K), v10 tile plans with row bands and an output band extent
#: (case_clamp_cnn_128, conformance_resize_nearest_128), LZ4 weight blocks (ds_cnn_28K-lz4),
#: subgraphs (control_if_conv, conformance_while_conv_256K), state (state_svdf_batch), chains
#: (case_executor_cnn_1536), index inputs (int32_gather_runtime), v9 row bands in the model's own
#: layout (int32_tight_gather_runtime_2)
BASES = ("ds_cnn_20K", "ds_cnn_28K-lz4", "case_clamp_cnn_128", "conformance_resize_nearest_128",
         "case_executor_cnn_1536", "control_if_conv", "conformance_while_conv_256K", "state_svdf_batch",
         "int32_gather_runtime", "int32_tight_gather_runtime_2")


def reference_library() -> Path:
    """The host library bundled with tigris-ml, as tigris.runtime finds it."""
    import tigris.runtime

    return Path(tigris.runtime.__file__).with_name("native") / "libtigris_host.so"


def build_driver(cc: str = "gcc") -> Path:
    """``build/fuzz/diff_plan``, rebuilt when diff_plan.c is newer."""
    source = HERE / "diff_plan.c"
    if not DRIVER.is_file() or DRIVER.stat().st_mtime < source.stat().st_mtime:
        DRIVER.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([cc, "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", str(source), "-ldl", "-o", str(DRIVER)],
                       check=True)
    return DRIVER


@dataclass(frozen=True)
class Verdict:
    """What one runtime did with one plan: ``refuse``, ``fail``, ``ok`` (with the output digest
    as ``detail``), ``crash`` or ``hang``."""

    kind: str
    detail: str

    @classmethod
    def parse(cls, text: str) -> Verdict:
        kind, _, detail = text.partition(" ")
        return cls(kind, detail)

    def __str__(self) -> str:
        return f"{self.kind} {self.detail}".strip()


def is_finding(ref: Verdict, ours: Verdict) -> bool:
    """Ours ran where the reference refused or failed, both ran to different outputs, ours failed a
    run of a plan the reference refuses, ours crashed, or ours hung where the reference did not."""
    if ours.kind == "crash" or (ours.kind == "hang" and ref.kind != "hang"):
        return True
    if ours.kind == "ok":
        return ref.kind in ("refuse", "fail") or (ref.kind == "ok" and ref.detail != ours.detail)
    if ours.kind == "fail":
        return ref.kind == "refuse"
    return False


def category(ref: Verdict, ours: Verdict) -> str:
    """The row of the counts table a pair falls in."""
    if is_finding(ref, ours):
        return "finding"
    if ref.kind == "ok":
        return "both ran, identical" if ours.kind == "ok" else "reference ran, ours refused or failed"
    if ref.kind in ("crash", "hang"):
        return f"reference {ref.kind}ed, ours {ours.kind}"
    return f"both {ref.kind}d" if ours.kind == ref.kind else f"reference {ref.kind}d, ours refused"


def run_pairs(plans: Sequence[Path], ours: Path, reference: Path | None = None) -> list[tuple[Verdict, Verdict]]:
    """Both verdicts for each plan, in order."""
    driver = build_driver()
    pairs: list[tuple[Verdict, Verdict]] = []
    for chunk in range(0, len(plans), 500):  # keep the command line short
        part = plans[chunk:chunk + 500]
        r = subprocess.run([str(driver), str(reference or reference_library()), str(ours), *map(str, part)],
                           capture_output=True, text=True, check=True)
        lines = r.stdout.splitlines()
        assert len(lines) == len(part), r.stderr
        for line in lines:
            _, a, b = line.split("\t")
            pairs.append((Verdict.parse(a), Verdict.parse(b)))
    return pairs


def edit_pairs(base: Path, ours: Path, every_record: bool = True) -> list[tuple[str, Verdict, Verdict]]:
    """Every boundary edit of ``base`` (tests/fuzz/plan_fields.edits) with both verdicts."""
    from tests.fuzz.plan_fields import edits
    from tests.runtime.plantools import PlanView

    view = PlanView(base)
    all_edits = edits(view, every_record)
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, e in enumerate(all_edits):
            path = Path(tmp) / f"{i}.tgrs"
            path.write_bytes(e.apply(view.data))
            paths.append(path)
        pairs = run_pairs(paths, ours)
    return [(e.label, a, b) for e, (a, b) in zip(all_edits, pairs)]


def counts(rows: Iterable[tuple[str, Verdict, Verdict]]) -> dict[str, int]:
    tally = collections.Counter(category(a, b) for _, a, b in rows)
    return dict(sorted(tally.items()))


def _ours_default() -> Path:
    from tests.support import host_library

    return host_library()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    e = sub.add_parser("edits", help="every boundary edit of the given plans (default: BASES)")
    e.add_argument("plans", nargs="*", type=Path)
    f = sub.add_parser("fuzz", help="random field-sized edits of seed plans for a given time")
    f.add_argument("--seconds", type=int, default=60)
    f.add_argument("--seed", type=int, default=1)
    f.add_argument("--out", type=Path, default=REPO / "build" / "fuzz" / "differential")
    f.add_argument("plans", nargs="*", type=Path)
    x = sub.add_parser("explain", help="which fields of BASE a finding changed")
    x.add_argument("base", type=Path)
    x.add_argument("finding", type=Path)
    args = parser.parse_args(argv)
    if args.command == "explain":
        from tests.fuzz.plan_fields import field_at
        from tests.runtime.plantools import PlanView

        view, data = PlanView(args.base), args.finding.read_bytes()
        for i, (a, b) in enumerate(zip(view.data, data)):
            if a != b:
                print(f"byte {i}: {a:#04x} -> {b:#04x}  {field_at(view, i)}")
        return 0
    ours = _ours_default()
    plans = args.plans or [CORPUS / f"{name}.tgrs" for name in BASES]
    if args.command == "fuzz":
        driver = build_driver()
        r = subprocess.run([str(driver), str(reference_library()), str(ours), "--fuzz", str(args.seconds),
                            str(args.seed), str(args.out), *map(str, plans or sorted(CORPUS.iterdir()))])
        return r.returncode
    total: collections.Counter[str] = collections.Counter()
    log = REPO / "build" / "fuzz" / "differential" / "edits.tsv"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        out.write("plan\tedit\treference\tours\n")
    for plan in plans:
        rows = edit_pairs(plan, ours)
        with log.open("a") as out:
            out.writelines(f"{plan.name}\t{label}\t{a}\t{b}\n" for label, a, b in rows)
        for label, a, b in rows:
            if is_finding(a, b):
                print(f"FINDING {plan.name} {label}: reference {a} | ours {b}")
        c = counts(rows)
        total.update(c)
        print(json.dumps({"plan": plan.name, "edits": len(rows), **c}))
    print(json.dumps({"plan": "all", "edits": sum(total.values()), **dict(sorted(total.items()))}))
    return 1 if total.get("finding") else 0


if __name__ == "__main__":
    sys.exit(main())
