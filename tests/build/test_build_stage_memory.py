"""stage_memory=1 on QEMU: the firmware's STAGE_MEM lines against the plan and the host reference.

A runtime built with ``TGR_STAGE_MEMORY=1`` reports each execution unit's fast and slow
high-water marks (``tgr_stage_memory``, runtime/include/tgr.h) and the firmware prints one
``STAGE_MEM stage=<s> fast=<b> slow=<b> unit=<head>`` line per stage that ran. With
``tensor_align=32`` (the bundled host runtime's alignment) every figure must equal the maximum of
the reference trace's ``fast_used`` / ``slow_used`` over the same unit
(``tigris_scons.reference.stage_memory_reference``); with the target's default 16 it may only be
smaller. Fast use never exceeds the plan's budget nor, for a stage that runs alone, the stage's
own fast limit; the untiled stage uses exactly its ``peak_bytes``. Plans: DS-CNN at 4K (11 stages
in 3 chains, a banded and an untiled stage), the compiler's If/While fixtures (nested units of a
control stage, a branch not taken, at 256K and at a quarter of their peak) and its LSTM (state
variables: three inferences, the lines describe the last). A build without the option has
neither the lines nor any of the code.
"""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.build.build_helpers import Scons
from tests.support import REPO, require_tool, skip_or_fail

pytestmark = [pytest.mark.scons, pytest.mark.qemu]

DS_CNN = ("model=ds_cnn", "budget=4K", "region_isram=32K")  # the declared 4K ISRAM budget is for 20K


@pytest.fixture(autouse=True)
def _tools():
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    from tigris_scons.reference import bundled_runtime_available

    if not bundled_runtime_available():
        skip_or_fail("tigris-ml has no bundled host runtime on this platform (the reference)")


@pytest.fixture(scope="module")
def build32(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One build folder for the tensor_align=32 firmwares: the runtime variant is compiled once."""
    return tmp_path_factory.mktemp("stage_mem32") / "build"


def _run(build: Path, name: str):
    """The parsed run log and the rendered firmware's context of model `name`."""
    from tigris_scons.runlog import parse_run_log

    folder = build / name
    log = parse_run_log((folder / f"{name}.run.log").read_text())
    assert log.complete, log.problems
    return log, json.loads((folder / "firmware.json").read_text())


def _reference(plan: Path, context: dict) -> list[dict]:
    from tigris_scons.reference import STAGE_MEMORY_SOURCE, stage_memory_reference

    rows = stage_memory_reference(plan, context["input_seed"], context["runs"])
    assert rows and all(row["source"] == STAGE_MEMORY_SOURCE for row in rows)
    return rows


def _figures(rows: list[dict]) -> list[tuple[int, int, int, int]]:
    return [(row["stage"], row["unit"], row["fast"], row["slow"]) for row in rows]


def _symbols(elf: Path) -> str:
    return subprocess.run([require_tool("arm-none-eabi-nm"), str(elf)], check=True, capture_output=True,
                          text=True).stdout


@pytest.mark.slow
def test_ds_cnn_4k_prints_every_stage_as_the_reference_traces_it(build32: Path) -> None:
    from tigris.emitters.binary.reader import read_binary_plan

    from tigris_scons.plan import read_plan

    proc = Scons(REPO)(*DS_CNN, "stage_memory=1", "tensor_align=32", f"build_dir={build32}", "run")
    log, context = _run(build32, "ds_cnn")

    # the check drew the picture and links it from the table: both curves, both budget lines
    svg_path = build32 / "ds_cnn/ds_cnn.stages.svg"
    picture = next((line for line in proc.stdout.splitlines() if line.startswith("picture: ")), "")
    # named as the build names its outputs (relative to the checkout it ran in: build_helpers.Scons)
    assert picture.split()[1:2] == ["build/ds_cnn/ds_cnn.stages.svg"] or f"picture: {svg_path}" in picture, proc.stdout
    ids = {e.get("id") for e in ET.parse(svg_path).getroot().iter()}
    assert {f"{who}-{arena}" for who in ("firmware", "reference", "budget") for arena in ("fast", "slow")} <= ids
    drawn = json.loads((build32 / "ds_cnn/ds_cnn.stages-ref.json").read_text())["stages"]
    assert [(r["stage"], r["fast"], r["slow"]) for r in drawn] == \
        [(r["stage"], r["fast"], r["slow"]) for r in log.stage_memory]  # align 32: the curves coincide
    plan = build32 / "ds_cnn/ds_cnn.tgrs"  # compiled by the build
    info = read_plan(plan)
    rows = log.stage_memory
    assert log.to_dict()["stage_memory"] == rows

    # one line per stage, in order; a chain's stages share its head's unit
    assert info.num_stages == 11 and log.stages == 11
    assert [row["stage"] for row in rows] == list(range(info.num_stages))
    heads = {stage: chain[0] for chain in info.chains for stage in chain}
    assert len(info.chains) == 3, info.chains
    assert [row["unit"] for row in rows] == [heads.get(s, s) for s in range(info.num_stages)]
    for chain in info.chains:
        assert len({(rows[s]["fast"], rows[s]["slow"]) for s in chain}) == 1

    # within the budget; the largest stage is the run's peak (ARENA line)
    budget = info.fast_arena_required(32)
    assert budget == context["fast_arena_bytes"] == 4096
    assert all(0 < row["fast"] <= budget for row in rows), rows
    assert max(row["fast"] for row in rows) == log.arena["fast_peak"]
    assert max(row["slow"] for row in rows) == log.arena["slow_used"]
    assert all(row["slow"] <= context["slow_arena_bytes"] for row in rows)

    # equal to the reference, stage by stage
    reference = _reference(plan, context)
    assert _figures(rows) == _figures(reference)

    # against the plan: a stage that runs alone stays within its own fast limit (peak_bytes, or
    # tiled_peak_bytes with a tileable tile plan), and the untiled one uses its peak_bytes exactly
    records = read_binary_plan(plan.read_bytes(), decompress_weights=False)
    paths = {row["stage"]: row["path"] for row in reference}
    alone = [s for s in range(info.num_stages) if s not in heads]
    assert alone == [9, 10]
    for stage in alone:
        record = records["stages"][stage]
        limit = record["peak_bytes"]
        if record["tile_plan_idx"] != 0xFFFF and records["tile_plans"][record["tile_plan_idx"]]["tileable"]:
            limit = records["tile_plans"][record["tile_plan_idx"]]["tiled_peak_bytes"]
        assert rows[stage]["fast"] <= limit, (stage, limit)
    assert paths[10] == "normal" and rows[10]["fast"] == records["stages"][10]["peak_bytes"] == 128


def test_control_flow_and_state_units_match_the_reference(build32: Path, tmp_path: Path) -> None:
    """If/While: a control stage's unit holds the units of the graph it runs (their lines come
    with their own stage numbers), a branch not taken prints nothing; LSTM: the last of three runs."""
    from tests.ops.models_data import compile_model, sdist_ops_dir
    from tigris_scons.plan import read_plan

    ops = sdist_ops_dir()
    if ops is None:
        skip_or_fail("tigris-ml 0.12.1 sdist fixtures unavailable (pip download failed?)")
    plans = [compile_model(ops / f"{n}.tflite", tmp_path / f"{n}.tgrs") for n in ("if_conv", "while_conv", "lstm")]
    plans += [compile_model(ops / f"{n}.tflite", tmp_path / f"{n}_small.tgrs", str(read_plan(plans[i]).peak // 4))
              for i, n in enumerate(("if_conv", "while_conv"))]
    done = Scons(REPO)("-j2", f"model={','.join(map(str, plans))}", "stage_memory=1", "tensor_align=32",
                       f"build_dir={build32}", "run")
    skipped_a_stage = nested = False
    for plan in plans:
        assert f"result: ok ({plan.stem})" in done.stdout, plan.stem
        log, context = _run(build32, plan.stem)
        info = read_plan(plan)
        reference = _reference(plan, context)
        assert _figures(log.stage_memory) == _figures(reference), plan.stem
        assert all(row["fast"] <= info.fast_arena_required(32) for row in log.stage_memory), plan.stem
        assert max(row["fast"] for row in log.stage_memory) == log.arena["fast_peak"], plan.stem
        stages = [row["stage"] for row in log.stage_memory]
        skipped_a_stage |= stages != list(range(len(stages)))
        control = [row for row in reference if row["path"] == "control"]
        nested |= bool(control)
        if context["runs"] > 1:
            assert plan.stem == "lstm" and sorted(log.run_checksums) == list(range(context["runs"] - 1))
    assert skipped_a_stage and nested  # the plans exercise what they are here for


@pytest.mark.slow
def test_default_alignment_within_the_reference_and_no_cost_when_off(tmp_path: Path) -> None:
    """tensor_align 16 (the target default): never above the reference; the same firmware without
    stage_memory=1 prints no STAGE_MEM line and links none of the code."""
    build = tmp_path / "build"
    Scons(REPO)(*DS_CNN, "stage_memory=1", f"build_dir={build}", "run")
    log, context = _run(build, "ds_cnn")
    plan = build / "ds_cnn/ds_cnn.tgrs"
    assert context["tensor_align"] == 16 and context["stage_memory"] is True
    reference = _reference(plan, context)
    assert [(r["stage"], r["unit"]) for r in log.stage_memory] == [(r["stage"], r["unit"]) for r in reference]
    for ours, theirs in zip(log.stage_memory, reference):
        assert 0 < ours["fast"] <= theirs["fast"] and ours["slow"] <= theirs["slow"], (ours, theirs)
        assert ours["fast"] <= context["fast_arena_bytes"]
    with_option = _symbols(build / "ds_cnn/ds_cnn.elf")
    assert "tgr_stage_memory" in with_option and "fw_stage_mem_fast" in with_option
    outputs = log.output_bytes

    Scons(REPO)(*DS_CNN, f"build_dir={build}", "run")
    plain, plain_context = _run(build, "ds_cnn")
    assert plain_context["stage_memory"] is False
    assert plain.stage_memory == [] and "stage_memory" not in plain.to_dict()
    assert "STAGE_MEM" not in (build / "ds_cnn/ds_cnn.run.log").read_text()
    assert plain.output_bytes == outputs
    assert "stage_mem" not in _symbols(build / "ds_cnn/ds_cnn.elf")
    # the runtime library of the plain build neither measures nor calls
    nm = require_tool("arm-none-eabi-nm")
    plain_objects = sorted((build / "cm55").glob("runtime-a16/*/*.o"))
    option_objects = sorted((build / "cm55").glob("runtime-a16-smem/*/*.o"))
    assert plain_objects and option_objects
    referencing = lambda objs: [o.name for o in objs if "tgr_stage_memory" in subprocess.run(
        [nm, str(o)], check=True, capture_output=True, text=True).stdout]
    assert referencing(plain_objects) == []
    assert referencing(option_objects) == ["executor.o"]


@pytest.mark.parametrize("compiler", ["gcc", "arm-none-eabi-gcc"])
def test_runtime_with_the_hook_is_warning_free(compiler: str, tmp_path: Path) -> None:
    """Every runtime source with TGR_STAGE_MEMORY=1 (and TGR_PROFILE=1), -Wall -Wextra -Werror, C99, on
    the host (-O2, where gcc runs its flow warnings) and the target."""
    from tigris_scons import runtime_tree

    cc = require_tool(compiler)
    flags = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-DTGR_STAGE_MEMORY=1", "-DTGR_PROFILE=1",
             *(["-O2", "-fPIC"] if compiler == "gcc" else
               ["-mcpu=cortex-m55+nomve", "-mthumb", "-mfloat-abi=hard", "-Os", "-DTGR_TENSOR_ALIGN=16",
                "-DTGR_TRACE=0"]),
             *(f"-I{d}" for d in runtime_tree.include_dirs(REPO / "runtime"))]
    for source in runtime_tree.sources(REPO / "runtime"):
        result = subprocess.run([cc, *flags, "-c", str(source), "-o", str(tmp_path / f"{source.stem}.o")],
                                capture_output=True, text=True)
        assert result.returncode == 0 and not result.stderr.strip(), f"{source.name}:\n{result.stderr}"
