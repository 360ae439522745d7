#!/usr/bin/env python3
"""MobileNetV2-0.35 across compile budgets: stages, fast/slow peaks, working set, plan size, work.

For each budget (default 64K, 96K, 128K, 192K, 256K) the declared model ``models/mobilenetv2_035``
is built through the SCons tools (``scons model=mobilenetv2_035 budget=<B> ... icount=1 run``), so
every figure comes from the same pipeline as a normal build:

* stages, fast peak, slow peak: our firmware's ``Ops:`` and ``ARENA`` lines on QEMU, and the host
  reference runtime's memory figures (``tigris.runtime.Session.memory``, run by the build's
  reference step on the same plan and input);
* working set = fast peak + slow peak, against the plan header's unscheduled peak (what the
  model needs without scheduling: 735 KiB);
* plan size (the ``.tgrs`` file, which goes to flash);
* work: SysTick ticks of one inference on QEMU under ``-icount shift=0`` (x 31.25 = guest
  instructions). A count of work, not latency: QEMU models no M55 timing, and DTCM, SRAM and DDR
  cost the same there.

The slow arena of each build is sized from the host reference's slow peak (a first step builds
the plan and the reference only), the fast arena is ``auto`` (what the plan needs), and the
builds run with ``budget_mode=warn``: the declared part budgets are for the 128K plan, and this
script reports figures, it does not judge them. Output mismatches still fail the build. Then the
128K plan runs once more with the slow arena in DDR (``slow_ddr=1``) and its firmware lines are
printed (``--no-ddr`` skips that run).

Usage: bench/mobilenet_budgets.py [--budgets 64K,96K,128K,192K,256K] [--json OUT.json]
                                  [--build-dir DIR] [--tensor-align 16|32] [--no-ddr]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

from tigris_scons.plan import read_plan
from tigris_scons.qemu import WORK_NOTE
from tigris_scons.runlog import parse_run_log
from tigris_scons.units import parse_size

MODEL = "mobilenetv2_035"
BUDGETS = ("64K", "96K", "128K", "192K", "256K")
DDR_BUDGET = "128K"
FIRMWARE_LINES = ("BENCH_START", "Ops:", "OUTPUT ", "ARENA", "WORK", "BENCH_END")


class BuildFailed(RuntimeError):
    pass


def scons(build_dir: Path, *args: str) -> None:
    """One scons invocation in this repository with a private build directory."""
    env = dict(os.environ)
    env.pop("TIGRIS_HOST_LIBRARY", None)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    cmd = [sys.executable, "-m", "SCons", "-Q", f"model={MODEL}", f"build_dir={build_dir}", *args]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
        raise BuildFailed(f"{' '.join(cmd[2:])} exited {proc.returncode}\n{tail}")


def measure(budget: str, build_dir: Path, extra: list[str], slow_ddr: bool = False) -> dict:
    """Build and run one budget; every figure of the table for it."""
    out = build_dir / MODEL
    common = [f"budget={budget}", *extra]
    # 1. plan + host reference only: its slow peak sizes the slow arena of the firmware
    scons(build_dir, *common, str(out / f"{MODEL}.ref.json"))
    reference = json.loads((out / f"{MODEL}.ref.json").read_text())
    host = reference["host_memory"]
    slow_kb = max(1, math.ceil(host["slow_peak_bytes"] / 1024))
    # 2. firmware with those arenas, QEMU under -icount shift=0, the full check
    scons(build_dir, *common, f"slow_kb={slow_kb}", "budget_mode=warn", "icount=1",
          *(["slow_ddr=1"] if slow_ddr else []), "run")
    plan = read_plan(out / f"{MODEL}.tgrs")
    transcript = (out / f"{MODEL}.run.log").read_text()
    log = parse_run_log(transcript)
    if not log.complete:
        raise BuildFailed(f"budget {budget}: incomplete run log: {'; '.join(log.problems)}")
    run = json.loads((out / f"{MODEL}.run.json").read_text())
    check = json.loads((out / f"{MODEL}.check.json").read_text())
    return {
        "budget": budget,
        "budget_bytes": parse_size(budget),
        "slow_in_ddr": slow_ddr,
        "plan_bytes": plan.file_size,
        "plan_budget": plan.budget,
        "unscheduled_peak": plan.peak,
        "stages_plan": plan.num_stages,
        "stages_firmware": log.stages,
        "fw_fast_peak": log.arena["fast_peak"],
        "fw_slow_peak": log.arena["slow_used"],
        "fw_total_sram": log.arena["total_sram"],
        "fast_arena": log.arena["fast_cap"],
        "slow_arena": log.arena["slow_cap"],
        "host_fast_peak": host["fast_peak_bytes"],
        "host_slow_peak": host["slow_peak_bytes"],
        "host_runtime": reference["runtime"],
        "work": run["work"],
        "check_ok": check["verdict"]["ok"],
        "check_notes": check["verdict"]["notes"],
        "firmware_lines": [line for line in transcript.splitlines() if line.startswith(FIRMWARE_LINES)],
    }


def render(rows: list[dict], ddr: dict | None, align: str) -> str:
    peak = rows[0]["unscheduled_peak"] if rows else 0
    host = rows[0]["host_runtime"] if rows else {}
    header = ("budget", "stages", "fw fast", "fw slow", "host fast", "host slow", "fast+slow",
              "of unsched.", "plan", "SysTick ticks", "~instructions")
    table = [header]
    for r in rows:
        total = r["fw_fast_peak"] + r["fw_slow_peak"]
        stages = str(r["stages_firmware"]) + ("" if r["stages_firmware"] == r["stages_plan"]
                                              else f" (plan {r['stages_plan']})")
        table.append((r["budget"], stages, f"{r['fw_fast_peak']:,}", f"{r['fw_slow_peak']:,}",
                      f"{r['host_fast_peak']:,}", f"{r['host_slow_peak']:,}", f"{total:,}",
                      f"{100 * total / peak:.1f}%", f"{r['plan_bytes']:,}", f"{r['work']['systick_ticks']:,}",
                      f"{r['work']['instructions_approx']:,}"))
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = [
        f"MobileNetV2-0.35 ({MODEL}) by compile budget: our firmware on QEMU mps3-an547 "
        f"(TGR_TENSOR_ALIGN={align}) and the host reference ({host.get('source', '?')} tigris-ml runtime "
        f"{host.get('version', '?')}); bytes unless marked",
        f"unscheduled peak (plan header): {peak:,} B ({peak / 1024:.1f} KiB); fast+slow = our firmware's working set",
        "",
    ]
    for i, row in enumerate(table):
        lines.append("  ".join(c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(row, widths))))
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines += [
        "",
        "SysTick ticks: one tgr_run under qemu -icount shift=0 (1 tick = 31.25 guest instructions,",
        f"identical run to run). {WORK_NOTE[0].upper()}{WORK_NOTE[1:]}; DTCM, SRAM and DDR cost the same there.",
        "Builds ran with budget_mode=warn (figures, not verdicts); slow arena = host slow peak rounded up to 1 KiB.",
    ]
    warned = [f"  {r['budget']}: {n}" for r in rows for n in r["check_notes"] if n.startswith("WARNING")]
    if warned:
        lines += ["declared part budgets (for the 128K plan) exceeded, reported only:", *warned]
    if ddr is not None:
        lines += ["", f"{ddr['budget']} plan with the slow arena in DDR (slow_ddr=1):",
                  *(f"  {line}" for line in ddr["firmware_lines"])]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", default=",".join(BUDGETS), help="comma-separated compile budgets")
    parser.add_argument("--build-dir", type=Path, default=REPO / "build" / "bench-mobilenet",
                        help="scons build directory (one per budget below it)")
    parser.add_argument("--json", type=Path, help="also write every figure as JSON")
    parser.add_argument("--tensor-align", choices=("16", "32"), help="TGR_TENSOR_ALIGN of the firmware "
                        "(default: the build's, 16; the host reference uses 32)")
    parser.add_argument("--no-ddr", action="store_true", help=f"skip the {DDR_BUDGET} slow_ddr=1 run")
    args = parser.parse_args()
    extra = [f"tensor_align={args.tensor_align}"] if args.tensor_align else []
    budgets = [b.strip() for b in args.budgets.split(",") if b.strip()]
    try:
        # one build directory per budget: the model name is the same, and each keeps its plan
        rows = [measure(b, args.build_dir / f"b{b}", extra) for b in budgets]
        ddr = None if args.no_ddr else measure(DDR_BUDGET, args.build_dir / f"b{DDR_BUDGET}-ddr", extra, slow_ddr=True)
    except BuildFailed as exc:
        sys.stderr.write(f"mobilenet_budgets: {exc}\n")
        return 1
    sys.stdout.write(render(rows, ddr, args.tensor_align or "16"))
    sys.stdout.flush()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"schema": 1, "model": MODEL, "work_note": WORK_NOTE, "budgets": rows,
                                         "slow_ddr": ddr}, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
