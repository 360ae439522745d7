"""Fixtures for the build-system tests: real plans, a real Cortex-M55 ELF, an scons runner."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_helpers import ELF_C, ELF_LD, REPO, TINY_BUILDER, Scons, require_tool, tigris_compile  # noqa: E402


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


