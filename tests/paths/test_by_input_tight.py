"""The MLPerf Tiny ResNet-8 (tigris-ml 0.12.1 sdist, ``pretrainedResnet_quant.tflite``) at the
smallest budgets the compiler accepts, where its global average pool runs on the schema-10
grouped by-input path: groups of channels walked over intervals of the positions, with an
accumulator, an interval of the input and the group's output bytes in fast memory at once.

At 640..800 bytes the output buffer must hold only the group's channels, as the reference's does
(a whole-output buffer did not fit beside the interval: ours refused the plan at 736 B, "stage 12:
a reduction interval does not fit"). Each budget: outputs, peaks, counters and events against the
reference on several inputs. 640 is the smallest budget tigris-ml writes a plan for; the test
asserts that too, so a compiler that moves the edge shows up here.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from tests.ops.models_data import compile_model, require_sdist_model
from tests.runtime.oracle import assert_strict, compare

pytest.importorskip("tigris.runtime")

BUDGETS = (640, 656, 672, 704, 736, 768, 800)  # all schema 10, grouped (1K is a v9 banded plan)


@pytest.fixture(scope="module")
def resnet8(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return require_sdist_model("pretrainedResnet_quant"), tmp_path_factory.mktemp("resnet8")


def test_640_is_the_smallest_budget_the_compiler_accepts(resnet8) -> None:
    model, work = resnet8
    compile_model(model, work / "r8_640.tgrs", "640")
    with pytest.raises(RuntimeError, match="no plan written"):
        compile_model(model, work / "r8_639.tgrs", "639")


@pytest.mark.parametrize("budget", BUDGETS)
def test_grouped_reduction_at_tight_budgets(budget: int, resnet8, our_library: Path) -> None:
    from tests.opmodels import read_plan

    model, work = resnet8
    plan = compile_model(model, work / f"r8_{budget}.tgrs", str(budget))
    info = read_plan(plan)
    grouped = [s for s in info["stages"] if s["tile_plan_idx"] != 0xFFFF
               and info["tile_plans"][s["tile_plan_idx"]].get("input_channel_group")]
    assert info["version"] == 10 and grouped, f"{budget} B: no grouped reduction stage; the case tests nothing"
    assert_strict(compare(plan, our_library, n_inputs=3, seed=zlib.crc32(f"r8/{budget}".encode())))
