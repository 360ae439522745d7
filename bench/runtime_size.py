#!/usr/bin/env python3
"""Code size of the runtime on the target, per source file and per layer folder
(base, kernels, plan, memory, ops, exec, load: runtime/src/README.md).

Why a script and not a test: size is a figure to watch, not a pass/fail property. Each source
file is compiled for `cortex-m55+nomve` with the firmware's flags (-Os, function sections) and
its `.text*`/`.rodata*` bytes are summed from `arm-none-eabi-size -A`. What a linked firmware
keeps after --gc-sections can only be smaller.

Usage: bench/runtime_size.py [--opt -Os] [--align 16]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RUNTIME = REPO / "runtime"

from tigris_scons import runtime_tree

FLAGS = ["-std=c99", "-mcpu=cortex-m55+nomve", "-mthumb", "-mfloat-abi=hard", "-ffunction-sections",
         "-fdata-sections", *(f"-I{d}" for d in runtime_tree.include_dirs(RUNTIME))]


def section_sizes(obj: Path) -> dict[str, int]:
    """Bytes of code and read-only data in one object file."""
    out = subprocess.run(["arm-none-eabi-size", "-A", str(obj)], check=True, capture_output=True,
                         text=True).stdout
    sizes = {"text": 0, "rodata": 0}
    for line in out.splitlines():
        match = re.match(r"^\.(text|rodata)\S*\s+(\d+)", line)
        if match:
            sizes[match.group(1)] += int(match.group(2))
    return sizes


def measure(opt: str, align: int) -> list[tuple[str, str, dict[str, int]]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for source in runtime_tree.sources(RUNTIME):
            obj = Path(tmp) / (source.stem + ".o")
            subprocess.run(["arm-none-eabi-gcc", *FLAGS, opt, f"-DTGR_TENSOR_ALIGN={align}", "-c",
                            str(source), "-o", str(obj)], check=True)
            rows.append((source.name, source.parent.name, section_sizes(obj)))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opt", default="-Os")
    parser.add_argument("--align", type=int, default=16)
    args = parser.parse_args()
    if shutil.which("arm-none-eabi-gcc") is None:
        print("arm-none-eabi-gcc is not installed (run ./setup.sh)", file=sys.stderr)
        return 2
    rows = measure(args.opt, args.align)
    print(f"runtime code size, cortex-m55+nomve {args.opt}, TGR_TENSOR_ALIGN={args.align}")
    print(f"{'file':22s} {'layer':8s} {'.text':>7s} {'.rodata':>8s}")
    totals: dict[str, dict[str, int]] = {}
    for name, group, sizes in rows:
        print(f"{name:22s} {group:8s} {sizes['text']:7d} {sizes['rodata']:8d}")
        total = totals.setdefault(group, {"text": 0, "rodata": 0})
        for key in total:
            total[key] += sizes[key]
    for group, total in totals.items():
        print(f"{'total ' + group:31s} {total['text']:7d} {total['rodata']:8d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
