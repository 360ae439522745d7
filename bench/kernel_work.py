#!/usr/bin/env python3
"""Guest instructions per multiply-accumulate, per model and per op type, in the default
(cortex-m55+nomve, DSP kernels) and the Helium (``mve=1``) firmware.

For each declared model the project's SCons builds and runs the firmware on QEMU under
``-icount shift=0`` (``icount=1``), where one SysTick tick is 31.25 guest instructions and every
figure repeats exactly:

* ``model=X icount=1 [mve=1] run``: the WORK line, one inference, the figure teams compare;
* ``model=X icount=1 profile=1 [mve=1] run``: PROFILE lines, ticks and MACs per op (the
  firmware's hooks add a little work of their own, so the per-op rows do not sum to the first).

MACs are the firmware's own count (``tgr_plan_op_macs``), checked here against the plan as
tigris-ml's reader decodes it (:func:`plan_macs`): a row whose two counts disagree is an error.
``--before PATH`` also measures another checkout (e.g. a ``git worktree`` of an older commit)
with its own SConstruct, whole-model figures only. Instructions are work, not latency: QEMU does
not model the M55's pipeline, caches or memory.

Usage:
    .venv/bin/python bench/kernel_work.py [--models a,b] [--builds default,mve] [--before PATH]
                                          [--build-dir DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
INSTRUCTIONS_PER_TICK = 31.25  # -icount shift=0: 1 ns per instruction, SysTick at 32 MHz
BUILDS: dict[str, tuple[str, ...]] = {"default": (), "mve": ("mve=1",)}

# opcodes (docs/plan-format.md) of the ops that multiply-accumulate
CONV, DEPTHWISE, GEMM, CONV_TRANSPOSE, MATMUL = 1, 2, 9, 24, 25

# --------------------------------------------------------------------------------------------
# Pure functions (tested in tests/build/test_bench_kernel_work.py)
# --------------------------------------------------------------------------------------------


def _elements(shape: Sequence[int]) -> int:
    count = 1
    for d in shape:
        count *= d
    return count


def plan_macs(plan: Mapping[str, Any]) -> list[int]:
    """MACs of every op of a plan decoded by ``tigris.emitters.binary.reader.read_binary_plan``
    (tensor shapes are stored NHWC): Conv out x kh x kw x in_c, DepthwiseConv out x kh x kw,
    ConvTranspose in x kh x kw x out_c, Gemm out x in_features, MatMul out x depth; 0 else."""
    tensors = plan["tensors"]
    out = []
    for op in plan["ops"]:
        kind = op["op_type"]
        x = tensors[op["inputs"][0]]["shape"]
        y = tensors[op["outputs"][0]]["shape"]
        sp = op.get("spatial") or {}
        taps = sp.get("kernel_h", 1) * sp.get("kernel_w", 1)
        if kind == CONV:
            out.append(_elements(y) * taps * x[-1])
        elif kind == DEPTHWISE:
            out.append(_elements(y) * taps)
        elif kind == CONV_TRANSPOSE:
            out.append(_elements(x) * taps * y[-1])
        elif kind in (GEMM, MATMUL):
            out.append(_elements(y) * x[-1])
        else:
            out.append(0)
    return out


@dataclass(frozen=True)
class OpTypeWork:
    """One op type's share of a profiled inference."""

    op_type: str
    count: int
    macs: int
    instructions: float
    share: float  # of the profiled ops' instructions

    @property
    def per_mac(self) -> float | None:
        return self.instructions / self.macs if self.macs else None


def by_op_type(profile_ops: Sequence[Mapping[str, Any]]) -> list[OpTypeWork]:
    """PROFILE op rows (run.json ``profile.ops``) summed per op type, most work first."""
    rows: dict[str, list[int]] = {}
    for op in profile_ops:
        row = rows.setdefault(op["type"], [0, 0, 0])
        row[0] += 1
        row[1] += op["macs"]
        row[2] += op["ticks"]
    total = sum(r[2] for r in rows.values()) or 1
    work = [OpTypeWork(t, n, m, ticks * INSTRUCTIONS_PER_TICK, ticks / total) for t, (n, m, ticks) in rows.items()]
    return sorted(work, key=lambda w: -w.instructions)


def check_macs(profile_ops: Sequence[Mapping[str, Any]], expected: Sequence[int]) -> list[str]:
    """Ops whose firmware MAC count differs from the plan's (an empty list when all agree)."""
    if len(profile_ops) != len(expected):
        return [f"{len(profile_ops)} PROFILE op rows for {len(expected)} ops"]
    return [f"op {op['op']} ({op['type']}): firmware {op['macs']}, plan {want}"
            for op, want in zip(profile_ops, expected) if op["macs"] != want]


def format_rows(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
                     for r in rows)


# --------------------------------------------------------------------------------------------
# Builds and runs
# --------------------------------------------------------------------------------------------


def scons_run(repo: Path, build_dir: Path, model: str, *options: str) -> dict[str, Any]:
    """``scons model=M icount=1 <options> run`` in ``repo``; the model's run.json."""
    scons = repo / ".venv/bin/scons" if (repo / ".venv/bin/scons").exists() else REPO / ".venv/bin/scons"
    cmd = [str(scons), "-C", str(repo), f"model={model}", f"build_dir={build_dir}", "icount=1", *options, "run"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{(proc.stderr or proc.stdout)[-2000:]}")
    return json.loads((build_dir / model / f"{model}.run.json").read_text())


def work_instructions(run: Mapping[str, Any]) -> float:
    return int(run["work"]["systick_ticks"]) * INSTRUCTIONS_PER_TICK


def declared_models(repo: Path) -> list[str]:
    return sorted(p.parent.name for p in (repo / "models").glob("*/model.toml"))


def main(argv: Sequence[str] | None = None) -> int:
    from tigris.emitters.binary.reader import read_binary_plan

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", help="comma-separated declared models (default: all)")
    ap.add_argument("--builds", default="default,mve", help="comma-separated: default, mve")
    ap.add_argument("--before", type=Path, help="another checkout to measure whole-model work in")
    ap.add_argument("--build-dir", type=Path, default=REPO / "build" / "bench-work")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    models = args.models.split(",") if args.models else declared_models(REPO)
    builds = args.builds.split(",")
    results: dict[str, Any] = {"instructions_per_tick": INSTRUCTIONS_PER_TICK, "models": {}}
    summary = [["model", "MACs", *(["before"] if args.before else []), *builds]]
    detail = [["model", "build", "op type", "ops", "MACs", "instructions", "share", "instr/MAC"]]
    problems = []
    for model in models:
        entry: dict[str, Any] = {"builds": {}}
        macs = None
        if args.before:
            before = scons_run(args.before.resolve(), args.build_dir / "before", model)
            entry["before_instructions"] = work_instructions(before)
        for build in builds:
            whole = scons_run(REPO, args.build_dir / build, model, *BUILDS[build])
            profiled = scons_run(REPO, args.build_dir / f"{build}-profile", model, "profile=1", *BUILDS[build])
            ops = profiled["profile"]["ops"]
            plan = read_binary_plan((args.build_dir / f"{build}-profile" / model / f"{model}.tgrs").read_bytes())
            problems += [f"{model} {build}: {p}" for p in check_macs(ops, plan_macs(plan))]
            macs = sum(op["macs"] for op in ops)
            types = by_op_type(ops)
            entry["macs"] = macs
            entry["builds"][build] = {"instructions": work_instructions(whole),
                                      "op_types": [asdict(t) | {"per_mac": t.per_mac} for t in types]}
            for t in types:
                detail.append([model, build, t.op_type, str(t.count), f"{t.macs:,}", f"{t.instructions:,.0f}",
                               f"{100 * t.share:.1f}%", f"{t.per_mac:.2f}" if t.per_mac else "-"])
        results["models"][model] = entry
        cells = [model, f"{macs:,}" if macs else "-"]
        if args.before:
            cells.append(f"{entry['before_instructions'] / macs:.2f}" if macs else "-")
        cells += [f"{entry['builds'][b]['instructions'] / macs:.2f}" if macs else "-" for b in builds]
        summary.append(cells)
    print("instructions per MAC (WORK line, one inference, qemu -icount shift=0; 1 tick = 31.25 instructions)")
    print(format_rows(summary))
    print()
    print("per op type (profile=1: PROFILE lines; the hooks' own work is outside the op rows)")
    print(format_rows(detail))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    for p in problems:
        print(f"ERROR {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
