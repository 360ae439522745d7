"""Helpers shared by the build-system tests (imported by tests/build/conftest.py and tests)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _shared_policy():
    """tests/conftest.py, loaded by path.

    ``from conftest import ...`` is ambiguous once several test folders have a conftest.py
    (whichever was imported last owns the name ``conftest``), so the shared policy module is
    loaded from its file under a private name instead.
    """
    import importlib.util

    name = "_tigris_tests_shared_conftest"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "tests" / "conftest.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def in_ci() -> bool:
    """The shared policy: CI=true runs everything (tests/conftest.py)."""
    return _shared_policy().in_ci()


def require_tool(name: str) -> str:
    """The shared policy: skip without the tool, fail under CI=true (tests/conftest.py)."""
    return _shared_policy().require_tool(name)
FIXTURES = Path(__file__).resolve().parent / "fixtures"
TINY_BUILDER = FIXTURES / "tiny_model.py"
TIGRIS_CLI = "import sys; from tigris.cli import main; sys.argv[0] = 'tigris'; sys.exit(main())"


def tigris_compile(source: Path, out: Path, budget: str, *extra: str) -> Path:
    subprocess.run([sys.executable, "-c", TIGRIS_CLI, "compile", str(source), "-m", budget, *extra, "-o", str(out)],
                   check=True, capture_output=True)
    return out


class Scons:
    """Runs ``python -m SCons`` and keeps the last result for assertions."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd

    def __call__(self, *args: str, expect: int | None = 0, timeout: float = 600) -> subprocess.CompletedProcess:
        env = dict(os.environ)
        env.pop("TIGRIS_HOST_LIBRARY", None)
        env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
        proc = subprocess.run([sys.executable, "-m", "SCons", "-Q", *args], cwd=self.cwd, env=env,
                              capture_output=True, text=True, timeout=timeout, check=False)
        if expect is not None and proc.returncode != expect:
            raise AssertionError(f"scons {' '.join(args)} exited {proc.returncode}, expected {expect}\n"
                                 f"--- stdout\n{proc.stdout[-6000:]}\n--- stderr\n{proc.stderr[-4000:]}")
        return proc


def write_model(folder: Path, body: str) -> Path:
    """A model folder with a ``model.toml`` (``body`` is dedented)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "model.toml"
    path.write_text(textwrap.dedent(body))
    return path


def plan_model_toml(folder: Path, name: str, plan: Path, run: str = "") -> Path:
    """A declared model whose source is a compiled plan, on a roomy part; ``run``: lines of its
    ``[run]`` table (a seed, a count of runs)."""
    return write_model(folder / name, f"""\
        name = "{name}"
        source = "{plan}"
        [compile]
        budget = "256K"
        [part]
        sram = "1M"
        flash = "1M"
        [run]
        """ + textwrap.dedent(run))


def tiny_model_toml(folder: Path, name: str = "tiny", extra: str = "", classes: int | None = None) -> Path:
    builder = folder / "build.py"
    folder.mkdir(parents=True, exist_ok=True)
    if classes is None:
        shutil.copy(TINY_BUILDER, builder)
    else:
        builder.write_text(TINY_BUILDER.read_text().replace("default=3", f"default={classes}"))
    return write_model(folder, f"""\
        name = "{name}"
        builder = "build.py"
        [compile]
        budget = "2K"
        [arena]
        slow = "1K"
        [part]
        sram = "64K"
        flash = "128K"
        """ + textwrap.dedent(extra))


# A small firmware-shaped ELF with one section of every kind the size map must classify.
ELF_C = r"""
#include <stdint.h>
const uint8_t table[300] = {1};                                     /* .rodata -> ITCM */
uint32_t counter = 7;                                               /* .data: DTCM, image in ITCM */
uint8_t zeroes[1000];                                               /* .bss -> DTCM */
uint8_t fast_arena[4096] __attribute__((section(".arena_fast"), aligned(32)));
uint8_t slow_arena[8192] __attribute__((section(".arena_slow"), aligned(32)));
uint8_t ddr_buf[512] __attribute__((section(".ddr_buf"), aligned(32)));
__attribute__((used, section(".vectors"))) const void *vectors[4] = {0};
void Reset_Handler(void) {
    counter += table[counter & 7] + zeroes[counter & 3] + fast_arena[counter] + slow_arena[counter] + ddr_buf[counter];
    for (;;) {}
}
"""
ELF_LD = """
ENTRY(Reset_Handler)
MEMORY {
  ITCM (rx) : ORIGIN = 0x00000000, LENGTH = 512K
  DTCM (rw) : ORIGIN = 0x20000000, LENGTH = 512K
  ISRAM (rw) : ORIGIN = 0x21000000, LENGTH = 4M
  DDR (rw) : ORIGIN = 0x61000000, LENGTH = 16M
}
SECTIONS {
  .vectors : { KEEP(*(.vectors)) } > ITCM
  .text : { *(.text .text.*) } > ITCM
  .rodata : { *(.rodata .rodata.*) } > ITCM
  .data : ALIGN(4) { *(.data .data.*) } > DTCM AT> ITCM
  .bss (NOLOAD) : ALIGN(4) { *(.bss .bss.*) *(COMMON) } > DTCM AT> DTCM
  .arena_fast (NOLOAD) : ALIGN(32) { KEEP(*(.arena_fast)) } > DTCM AT> DTCM
  .stack (NOLOAD) : ALIGN(8) { . = . + 2048; } > DTCM AT> DTCM
  .arena_slow (NOLOAD) : ALIGN(32) { KEEP(*(.arena_slow)) } > ISRAM AT> ISRAM
  .ddr_buf (NOLOAD) : ALIGN(32) { KEEP(*(.ddr_buf)) } > DDR AT> DDR
}
"""
