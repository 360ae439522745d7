"""Fixtures for the build-system tests: real plans, a real Cortex-M55 ELF, the session's SCons cache.

Session fixtures run once per pytest-xdist worker: the models and plans here are built once per
run in a folder all workers share (``tests.support.shared_dir``); the ELF, one gcc call, per worker.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.build.build_helpers import ELF_C, ELF_LD, TINY_BUILDER, Scons, tigris_compile
from tests.support import REPO, require_tool, run_dir, shared_dir


def _model_and_plan(builder: Path, name: str, budget: str) -> Callable[[Path], None]:
    """``make`` for ``shared_dir``: ``<name>.onnx`` from ``builder`` and ``<name>.tgrs`` at ``budget``."""

    def make(folder: Path) -> None:
        onnx_path = folder / f"{name}.onnx"
        subprocess.run([sys.executable, str(builder), "-o", str(onnx_path)], check=True, capture_output=True)
        tigris_compile(onnx_path, folder / f"{name}.tgrs", budget)

    return make


@pytest.fixture(scope="session")
def tiny_onnx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model (``tiny.tgrs`` at 2K beside it), built once per run for every worker."""
    return shared_dir(run_dir(tmp_path_factory) / "tiny", _model_and_plan(TINY_BUILDER, "tiny", "2K")) / "tiny.onnx"


@pytest.fixture(scope="session")
def tiny_plan(tiny_onnx: Path) -> Path:
    return tiny_onnx.with_suffix(".tgrs")


@pytest.fixture(scope="session")
def ds_cnn_plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """DS-CNN at 20K (``ds_cnn.onnx`` beside it), built once per run for every worker."""
    builder = REPO / "models/ds_cnn/build.py"
    return shared_dir(run_dir(tmp_path_factory) / "ds_cnn", _model_and_plan(builder, "ds_cnn", "20K")) / "ds_cnn.tgrs"


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
    Scons.cache_dir = Path(override).resolve() if override else run_dir(tmp_path_factory) / "scons-cache"
    return Scons.cache_dir
