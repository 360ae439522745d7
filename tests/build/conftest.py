"""Fixtures for the build-system tests: real plans, a real Cortex-M55 ELF, an scons runner."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_helpers import REPO, TINY_BUILDER, Scons, require_tool, tigris_compile  # noqa: E402


@pytest.fixture(scope="session")
def tiny_onnx(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tiny") / "tiny.onnx"
    subprocess.run([sys.executable, str(TINY_BUILDER), "-o", str(out)], check=True, capture_output=True)
    return out


@pytest.fixture(scope="session")
def tiny_plan(tiny_onnx) -> Path:
    return tigris_compile(tiny_onnx, tiny_onnx.with_suffix(".tgrs"), "2K")


@pytest.fixture(scope="session")
def ds_cnn_plan(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("ds_cnn")
    onnx_path = folder / "ds_cnn.onnx"
    subprocess.run([sys.executable, str(REPO / "models/ds_cnn/build.py"), "-o", str(onnx_path)],
                   check=True, capture_output=True)
    return tigris_compile(onnx_path, folder / "ds_cnn.tgrs", "20K")


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


@pytest.fixture(scope="session")
def cm55_elf(tmp_path_factory) -> Path:
    gcc = require_tool("arm-none-eabi-gcc")
    folder = tmp_path_factory.mktemp("elf")
    (folder / "fw.c").write_text(ELF_C)
    (folder / "fw.ld").write_text(ELF_LD)
    elf = folder / "fw.elf"
    subprocess.run([gcc, "-mcpu=cortex-m55+nomve", "-mthumb", "-mfloat-abi=hard", "-O1", "-nostdlib",
                    "-T", str(folder / "fw.ld"), str(folder / "fw.c"), "-o", str(elf)], check=True)
    return elf


@pytest.fixture
def repo_scons(tmp_path) -> tuple[Scons, Path]:
    """The repository's SConstruct with a private build directory under ``tmp_path``."""
    require_tool("arm-none-eabi-gcc")
    return Scons(REPO), tmp_path / "build"


