"""Helpers shared by the build-system tests: the SCons runner, model folders, a tiny ELF.

The policy (``require_tool``, ``in_ci``, ``REPO``) is tests/support.py's; import it from there."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

from tests.support import REPO, require_marker, require_tool

FIXTURES = Path(__file__).resolve().parent / "fixtures"
TINY_BUILDER = FIXTURES / "tiny_model.py"
TIGRIS_CLI = "import sys; from tigris.cli import main; sys.argv[0] = 'tigris'; sys.exit(main())"


def tigris_compile(source: Path, out: Path, budget: str, *extra: str) -> Path:
    subprocess.run([sys.executable, "-c", TIGRIS_CLI, "compile", str(source), "-m", budget, *extra, "-o", str(out)],
                   check=True, capture_output=True)
    return out


#: Targets that run the firmware on QEMU (and so need the ``qemu`` marker), also as ``<target>-<model>``.
QEMU_TARGETS = ("run", "fit")
#: Options after which SCons builds nothing (help, clean).
NO_BUILD_OPTIONS = frozenset({"-h", "--help", "-c", "--clean"})
#: marker -> the tool it stands for and the variable a test uses to put a stand-in there instead.
MARKED_TOOLS = {"cross": ("arm-none-eabi-gcc", "cross="), "qemu": ("qemu-system-arm", "qemu=")}


def markers_for(args: Sequence[str]) -> tuple[str, ...]:
    """The markers a test needs to run ``scons *args`` (tests/README.md#markers).

    ``scons`` always; ``qemu`` (which implies ``cross``) when a target runs the firmware;
    ``cross`` for any other build (the default target cross-compiles a firmware); nothing more
    for help, clean or the host library alone. Checked on every call, so a test cannot reach QEMU
    or the cross compiler without the marker that ``-m "not qemu"`` relies on.
    """
    targets = [a for a in args if not a.startswith("-") and "=" not in a]
    if any(t in QEMU_TARGETS or t.split("-", 1)[0] in QEMU_TARGETS for t in targets):
        return ("scons", "cross", "qemu")
    if NO_BUILD_OPTIONS & set(args) or (targets and all(t == "host" for t in targets)):
        return ("scons",)
    return ("scons", "cross")


def require_markers_and_tools(args: Sequence[str]) -> None:
    """Fail the running test without the markers ``scons *args`` needs; skip it (fail under CI)
    without the tools, unless the test put a stand-in in their place (``qemu=``, ``cross=``)."""
    shown = " ".join(args)
    for marker in markers_for(args):
        require_marker(marker, f"runs `scons {shown}`")
        tool, override = MARKED_TOOLS.get(marker, (None, ""))
        if tool is not None and not any(a.startswith(override) for a in args):
            require_tool(tool)


#: Entries of the repository a checkout view leaves out: its own outputs and tool folders.
VIEW_SKIPS = frozenset({"build", ".git", ".venv", ".pytest_cache", ".cache", "__pycache__"})


def checkout_view(build_dir: Path) -> Path:
    """A folder beside ``build_dir`` that SCons takes for the repository: one symlink per
    top-level entry (SConstruct, site_scons, runtime, models, ...) and ``build`` -> ``build_dir``.

    Why: SCons keys a cached file on its path inside the checkout (docs/cache.md). Every test
    builds into its own absolute ``build_dir=``, so its runtime library would have a key of its
    own and never be shared. Built from a view with the default ``build`` folder, every test's
    ``build/cm55/runtime-a16/...`` has the same key, and the session cache (``Scons.cache_dir``)
    serves the libraries, objects, host tools and plans that another test already built. The
    outputs still land in ``build_dir``, where the test looks for them.
    """
    view = build_dir.with_name(build_dir.name + ".checkout")
    if not view.is_dir():
        build_dir.mkdir(parents=True, exist_ok=True)
        staging = view.with_name(view.name + ".tmp")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        for entry in REPO.iterdir():
            if entry.name not in VIEW_SKIPS:
                (staging / entry.name).symlink_to(entry)
        (staging / "build").symlink_to(build_dir, target_is_directory=True)
        staging.rename(view)
    return view


class Scons:
    """Runs ``python -m SCons`` and keeps the last result for assertions.

    On the repository's SConstruct with an absolute ``build_dir=`` (what the tests pass), the
    build runs in ``checkout_view(build_dir)`` with the session's shared SCons cache, unless
    ``shared_cache=False`` (a test of the cache itself, or one that needs a cold build). Plans,
    objects, libraries and ELFs may then come from the cache; QEMU runs and checks always
    execute (docs/cache.md). ``--cache-show`` prints the step a retrieved file was saved by
    instead of ``Retrieved ... from cache``, so the transcript reads as a cold build's.
    """

    #: The session's SCons cache, shared by every pytest-xdist worker (tests/build/conftest.py sets it).
    cache_dir: Path | None = None

    def __init__(self, cwd: Path, shared_cache: bool = True) -> None:
        self.cwd = cwd
        self.shared_cache = shared_cache

    def command(self, args: Sequence[str]) -> tuple[list[str], Path, dict[str, str]]:
        """The command line, working folder and environment that run ``scons *args``."""
        env = dict(os.environ)
        env.pop("TIGRIS_HOST_LIBRARY", None)
        env.pop("TIGRIS_CACHE_DIR", None)
        env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
        cwd, args = self.cwd, list(args)
        build_dirs = [a for a in args if a.startswith("build_dir=") and os.path.isabs(a.removeprefix("build_dir="))]
        if self.shared_cache and self.cache_dir is not None and cwd == REPO and len(build_dirs) == 1:
            cwd = checkout_view(Path(build_dirs[0].removeprefix("build_dir=")))
            args = [a for a in args if a != build_dirs[0]] + [f"cache_dir={self.cache_dir}", "--cache-show"]
        return [sys.executable, "-m", "SCons", "-Q", *args], cwd, env

    def __call__(self, *args: str, expect: int | None = 0, timeout: float = 600) -> subprocess.CompletedProcess:
        require_markers_and_tools(args)
        cmd, cwd, env = self.command(args)
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
        if expect is not None and proc.returncode != expect:
            raise AssertionError(f"scons {' '.join(args)} exited {proc.returncode}, expected {expect}\n"
                                 f"(ran: {' '.join(cmd[2:])} in {cwd})\n"
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
