"""Plans with int32 tensors at run time as firmware on QEMU: index inputs and index arithmetic.

The sdist fixtures ``gather_runtime`` (an int32 index input), ``arg_max_gather`` (ArgMax feeding
a Gather), ``embedding_table`` (lookups into a constant table) and ``dynamic_update_slice_runtime``
(int32 starts), plus an ONNX Gather whose indices are an int64 graph input, are built and run by
path; the build's check compares each output with the bundled reference runtime run on the same
generated input (int32/int64 index elements 0..3, docs/firmware.md#input-generator). A firmware
for a plan without index inputs carries no index generator.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.build.build_helpers import Scons
from tests.support import REPO, require_tool

pytestmark = [pytest.mark.scons, pytest.mark.qemu]

FIXTURES = ("gather_runtime", "arg_max_gather", "embedding_table", "dynamic_update_slice_runtime")


@pytest.fixture(autouse=True)
def _tools():
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")


def test_index_plans_match_the_reference_on_qemu(tmp_path: Path) -> None:
    from tests.ops.models_data import compile_model, fixture_plan
    from tests.ops.test_ops_int32_indices import _onnx_gather_int64

    plans = [fixture_plan(name, tmp_path) for name in FIXTURES]
    plans.append(compile_model(_onnx_gather_int64(tmp_path / "gather_int64.onnx"), tmp_path / "gather_int64.tgrs"))
    build = tmp_path / "build"
    done = Scons(REPO)("-j2", f"model={','.join(map(str, plans))}", f"build_dir={build}", "run")
    for plan in plans:
        assert f"result: ok ({plan.stem})" in done.stdout, plan.stem
        log = (build / plan.stem / f"{plan.stem}.run.log").read_text()
        assert re.search(r"^OUTPUT n=\d+ checksum=\d+ ", log, re.M), plan.stem
    # the index generator is compiled only into a firmware whose plan takes index inputs
    for plan, flag in ((plans[0], 1), (plans[1], 0), (plans[-1], 1)):
        main_c = next((build / plan.stem).rglob("main.c")).read_text()
        assert f"#define FW_INDEX_INPUTS {flag}" in main_c, plan.stem
