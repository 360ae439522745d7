"""Fixtures for the runtime tests: our host library (built by SCons) and a plan cache.

* ``our_library``: ``tests.support.host_library``: ``scons host`` once per process, under a lock
  shared by the pytest-xdist workers, the path of ``build/host/libtigris_host.so`` (or
  ``$TGR_TEST_LIBRARY``). With ``TGR_TEST_SANITIZE=1`` it builds ``host sanitize=1``
  and returns ``build/host-san/libtigris_host.so`` (ASan + UBSan, ``-fno-sanitize-recover=all``);
  that library can only be loaded into a Python started with the sanitizer runtimes in
  ``LD_PRELOAD`` (test_sanitizers.py does that), so the fixture fails early with the recipe when
  they are missing instead of letting ctypes die with an obscure loader error.
* ``plan_cache``: builds each ``.onnx`` once and compiles each (model, budget, flags) once per
  run, in a folder every pytest-xdist worker shares. Compiling is most of this folder's run time.
* ``n_inputs``: random inputs per differential comparison: 10, or ``$TGR_TEST_INPUTS``.
* ``$TGR_TEST_PLAN_CACHE``: a plan cache directory to reuse (set by test_sanitizers.py).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from tests.opmodels import CASES, OpCase, compile_plan
from tests.opmodels.cases import unary
from tests.support import host_library, run_dir, shared_dir

#: single-op models of our own, used like ``opmodels.CASES`` (which another folder owns):
#: operators our runtime refuses on purpose, to keep the refusal path under test.
EXTRA_CASES: dict[str, OpCase] = {
    # the compiler's validator requires LogSoftmax's output encoding (1/16, 127)
    # (docs/plan-format.md#per-op-fields-and-load-checks)
    "logsoftmax": OpCase("logsoftmax", "LogSoftmax [1,10], output (1/16, 127)",
                         unary("LogSoftmax", [1, 10], axis=-1), (57,), quantizer="manual",
                         overrides={"y": (1.0 / 16.0, 127)}),
}

SANITIZE = os.environ.get("TGR_TEST_SANITIZE") == "1"
DEFAULT_INPUTS = 10


@pytest.fixture(scope="session")
def our_library() -> Path:
    """Our libtigris_host.so, (re)built by ``scons host`` (``sanitize=1`` under TGR_TEST_SANITIZE)."""
    if SANITIZE:
        preload = os.environ.get("LD_PRELOAD", "")
        if "libasan" not in preload:
            pytest.fail("TGR_TEST_SANITIZE=1 needs the sanitizer runtimes preloaded: "
                        "LD_PRELOAD=$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so) "
                        "ASAN_OPTIONS=detect_leaks=0 (test_sanitizers.py sets this up)", pytrace=False)
    return host_library(SANITIZE)


@pytest.fixture(scope="session")
def n_inputs() -> int:
    return int(os.environ.get("TGR_TEST_INPUTS", DEFAULT_INPUTS))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")


class PlanCache:
    """Build every model once and compile every (model, budget, extra args) once per run.

    Each model and plan is a folder under ``root`` made by ``tests.support.shared_dir``: the
    pytest-xdist workers of a run share ``root`` (``run_dir``), so whichever worker needs a plan
    first compiles it and the others reuse it. test_sanitizers.py hands ``root`` to its sanitized
    child run (``$TGR_TEST_PLAN_CACHE``), which reuses the plans this run compiled the same way. A folder that
    already holds a model or plan (e.g. a reused ``make_corpus.py --work``) is taken as it is.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._models: dict[str, Path] = {}
        self._plans: dict[tuple[str, str, tuple[str, ...]], Path] = {}

    def model(self, name: str, build: Callable[[Path], Path]) -> Path:
        """``build(dir)`` writes the model's one ``.onnx`` into ``dir``; run once per ``name``."""
        if name not in self._models:
            (self._models[name],) = shared_dir(self.root / "models" / _slug(name), build).glob("*.onnx")
        return self._models[name]

    def plan(self, name: str, build: Callable[[Path], Path], budget: str,
             extra_args: Sequence[str] = ()) -> Path:
        key = (name, budget, tuple(extra_args))
        if key not in self._plans:
            folder = shared_dir(self.root / "plans" / _slug("_".join([name, budget, *extra_args])),
                                lambda d: compile_plan(self.model(name, build), budget, d / "plan.tgrs", extra_args))
            self._plans[key] = folder / "plan.tgrs"
        return self._plans[key]

    # ---- the models the runtime tests use

    def case_plan(self, case: str, budget: str | None = None, extra_args: Sequence[str] = ()) -> Path:
        """An ``opmodels`` (or ``EXTRA_CASES``) case compiled at ``budget`` (default: its own)."""
        c = CASES[case] if case in CASES else EXTRA_CASES[case]
        return self.plan(f"case_{case}", c.build, budget or c.budget, extra_args)

    def ds_cnn_plan(self, budget: str, extra_args: Sequence[str] = ()) -> Path:
        from models.ds_cnn.build import build

        return self.plan("ds_cnn", lambda d: build(d / "ds_cnn.onnx"), budget, extra_args)


@pytest.fixture(scope="session")
def plan_cache(tmp_path_factory: pytest.TempPathFactory) -> PlanCache:
    shared = os.environ.get("TGR_TEST_PLAN_CACHE")
    return PlanCache(Path(shared) if shared else run_dir(tmp_path_factory) / "runtime_plans")
