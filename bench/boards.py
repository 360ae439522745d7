#!/usr/bin/env python3
"""The same models on every QEMU board: firmware image, on-chip SRAM, guest instructions per
inference and per multiply-accumulate.

For each model and board the project's SCons builds and runs ``model=X board=Y icount=1 run``
(one private build folder) and this script reads the reports: the ELF's load image
(``<m>.size.json``), static on-chip SRAM, and the WORK figure, which each board's firmware names
with its own SysTick clock (32 MHz on mps3-an547, 25 MHz on mps2-an386/an500, 20 MHz on
mps2-an505), so instructions compare across boards. MACs come from the plan as tigris-ml's reader
decodes it (``bench/kernel_work.py``'s ``plan_macs``). Instructions are work, not latency: QEMU
models none of these cores' timing.

Usage:
    .venv/bin/python bench/boards.py [--models ds_cnn,mobilenetv2_035] [--boards a,b] [--build-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

from bench import kernel_work
from tigris_scons.boards import BOARDS, DEFAULT_BOARD


def measure(build_dir: Path, model: str, machine: str) -> dict:
    """Build and run one model on one board; its figures from the reports."""
    cmd = [sys.executable, "-m", "SCons", "-Q", f"model={model}", f"board={machine}", "icount=1",
           "budget_mode=warn", f"build_dir={build_dir}", "run"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    folder = build_dir / model if machine == DEFAULT_BOARD else build_dir / machine / model
    check = json.loads((folder / f"{model}.check.json").read_text())
    size = json.loads((folder / f"{model}.size.json").read_text())
    from tigris.emitters.binary.reader import read_binary_plan

    plan = read_binary_plan((folder / f"{model}.tgrs").read_bytes(), decompress_weights=False)
    return {"model": model, "board": machine, "core": BOARDS[machine].core, "image": size["load_image"],
            "sram_static": size["on_chip_ram"], "instructions": check["work"]["instructions_approx"],
            "macs": sum(kernel_work.plan_macs(plan)), "output_ok": check["verdict"]["ok"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="ds_cnn,mobilenetv2_035")
    parser.add_argument("--boards", default=",".join(BOARDS))
    parser.add_argument("--build-dir", type=Path, default=REPO / "build" / "bench-boards")
    args = parser.parse_args()
    rows = [measure(args.build_dir, model, machine)
            for model in args.models.split(",") for machine in args.boards.split(",")]
    print(f"{'model':<16} {'board':<11} {'core':<11} {'image B':>9} {'SRAM static B':>14} "
          f"{'instructions':>13} {'instr/MAC':>9}  check")
    for r in rows:
        print(f"{r['model']:<16} {r['board']:<11} {r['core']:<11} {r['image']:>9,} {r['sram_static']:>14,} "
              f"{r['instructions']:>13,} {r['instructions'] / r['macs']:>9.2f}  {'ok' if r['output_ok'] else 'FAILED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
