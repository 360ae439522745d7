"""Fixtures for the build-system tests: real plans, a real Cortex-M55 ELF, the session's SCons cache.

Session fixtures run once per pytest-xdist worker; the plans here take seconds, so each worker
compiles its own rather than waiting on another's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.build.build_helpers import ELF_C, ELF_LD, TINY_BUILDER, Scons, tigris_compile
from tests.support import REPO, require_tool


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


@pytest.fixture(scope="session", autouse=True)
def scons_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The SCons cache every ``Scons`` build of this session shares (``Scons.cache_dir``).

    One folder for all pytest-xdist workers of the run (beside their own temporary folders),
    removed with the run's other temporary folders; ``$TGR_TEST_SCONS_CACHE`` names a lasting
    one instead (e.g. ``build/test-cache``: SCons keys every entry on its inputs' content, so an
    entry from an earlier run is only ever reused for identical inputs).
    """
    override = os.environ.get("TGR_TEST_SCONS_CACHE")
    base = tmp_path_factory.getbasetemp()
    session = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    Scons.cache_dir = Path(override).resolve() if override else session / "scons-cache"
    return Scons.cache_dir
