"""``scons model=ds_cnn fit`` on QEMU: the ladder, one row per point equal to a single run at the
same budget, the report files, incremental re-runs, and a failed point as a row."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest

from docs import examples
from tests.build.build_helpers import Scons
from tests.support import REPO, require_tool

pytestmark = [pytest.mark.scons, pytest.mark.qemu, pytest.mark.slow]


@pytest.fixture(scope="module")
def fit_run(tmp_path_factory):
    """One sweep of DS-CNN in a private build folder (QEMU with icount=1)."""
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    scons = Scons(REPO)
    build = tmp_path_factory.mktemp("fit") / "build"
    first = scons("-k", "model=ds_cnn", f"build_dir={build}", "fit", timeout=1200)  # as the README shows it
    report = json.loads((build / "ds_cnn" / "ds_cnn.fit.json").read_text())
    return scons, build, first, report


def test_the_ladder_has_one_point_per_stage_count_from_the_smallest_plan_to_the_peak(fit_run):
    _, build, _, report = fit_run
    ladder = json.loads((build / "ds_cnn" / "fit" / "ladder.json").read_text())
    rows = report["rows"]
    assert [r["budget"] for r in rows] == [r["budget"] for r in ladder["rungs"]]
    stages = [r["stages"] for r in rows]
    assert len(set(stages)) == len(stages) and stages == sorted(stages, reverse=True)
    assert rows[-1]["budget"] == ladder["peak"] and rows[-1]["stages"] == 1
    probes = {int(b): s for b, s in ladder["probes"].items()}
    assert probes[rows[0]["budget"]] is not None and probes.get(rows[0]["budget"] - 1, "unprobed") is None  # the smallest plan
    assert all(r["ok"] and r["output"] == "match" for r in rows)


def test_every_row_equals_a_single_run_at_its_budget(fit_run, tmp_path):
    scons, _, _, report = fit_run
    build = tmp_path / "single"
    for row in report["rows"]:
        scons("model=ds_cnn", f"budget={row['budget']}", "icount=1", "budget_mode=warn", f"build_dir={build}", "run",
              timeout=900)  # warn: the sweep records budget breaches too
        folder = build / "ds_cnn"
        check = json.loads((folder / "ds_cnn.check.json").read_text())
        size = json.loads((folder / "ds_cnn.size.json").read_text())
        stack = json.loads((folder / "ds_cnn.stack.json").read_text())
        plan_bytes = (folder / "ds_cnn.tgrs").stat().st_size
        arena = check["run"]["arena"]
        assert (row["stages"], row["fast_peak"], row["slow_peak"], row["stack"]) == \
            (check["run"]["stages"], arena["fast_peak"], arena["slow_used"], stack["reserved_bytes"]), row["budget"]
        assert (row["sram_static"], row["flash"], row["plan_bytes"]) == \
            (size["on_chip_ram"], plan_bytes + size["load_image"], plan_bytes), row["budget"]
        assert row["instructions"] == check["work"]["instructions_approx"], row["budget"]


def test_the_report_marks_the_front_and_names_the_parts(fit_run):
    _, build, first, report = fit_run
    rows = report["rows"]
    good = [r for r in rows if r["ok"]]
    smallest = min(good, key=lambda r: (r["sram_static"], r["instructions"]))
    assert [r["smallest"] for r in rows] == [r is smallest for r in rows]
    for row in rows:  # the front: nothing else is as small and as cheap
        dominated = any(o["sram_static"] <= row["sram_static"] and o["instructions"] <= row["instructions"]
                        and (o["sram_static"], o["instructions"]) != (row["sram_static"], row["instructions"])
                        for o in good)
        assert row["pareto"] == (row["ok"] and not dominated)
    names = {p["name"] for p in report["parts"]}
    assert {"AN547", "nRF52840", "STM32H743ZI"} <= names
    text = (build / "ds_cnn" / "ds_cnn.fit.txt").read_text()
    assert text == report["table"] and text in first.stdout
    for part in report["parts"]:
        assert re.search(rf"^  {re.escape(part['name'])}\s+\S+\s+(fits at budget|does not fit)", text, re.M)
    for i in range(1, len(rows) + 1):
        assert f"FIT ds_cnn [{i}/{len(rows)}] budget" in first.stdout
    # each part's work is its own core's, measured on that core's board
    for part in report["parts"]:
        measured = {"Cortex-M55": ("mps3-an547", rows)}
        measured.update({core: (m["board"], m["rows"]) for core, m in report["cores"].items()})
        board, core_rows = measured[part["core"]]
        assert part["measured_on"] == board, part
        if part["fits"]:
            assert part["instructions"] == next(r["instructions"] for r in core_rows if r["budget"] == part["budget"])
    assert set(report["cores"]) == {"Cortex-M4", "Cortex-M7", "Cortex-M33"}
    m4 = report["cores"]["Cortex-M4"]["rows"]
    assert all(r["ok"] for r in m4) and [r["instructions"] for r in m4] != [r["instructions"] for r in rows]
    svg = ET.parse(build / "ds_cnn" / "ds_cnn.fit.svg").getroot()
    gids = {e.get("id") for e in svg.iter()}
    assert {"part-" + re.sub(r"[^A-Za-z0-9_.-]+", "_", n) for n in names} <= gids  # one line per part
    assert {"fit-ok-sram", "fit-ok-instructions", "pareto-sram", "pareto-instructions"} <= gids


def test_the_readme_shows_this_sweep(fit_run):
    """The README's fit example (docs/examples.py) is this sweep's output, cut as the script cuts it."""
    _, build, first, _ = fit_run
    shown = examples.Output("scons -k model=ds_cnn fit", examples.normalise(first.stdout, build), "", 0)
    block = next(b for b in examples.blocks() if b.name == "ds-cnn-fit")
    assert block.text == examples.fit_example(shown), \
        "README.md's fit example differs; regenerate with: .venv/bin/python docs/examples.py --write ds-cnn-fit"


def test_a_second_fit_runs_nothing_again(fit_run):
    scons, build, _, report = fit_run
    again = scons("model=ds_cnn", f"build_dir={build}", "fit", timeout=600)
    for word in ("PLAN ", "CC ", "LINK ", "QEMU ", "FIT ds_cnn ["):
        assert word not in again.stdout, word
    assert report["table"] in again.stdout


def test_a_failed_point_is_a_row_with_its_reason(fit_run):
    scons, build, _, report = fit_run
    top = report["rows"][-1]["budget"]
    failed = scons("-k", "model=ds_cnn", f"build_dir={build}", f"fast_kb={top // 1024 - 1}", "fit_cores=Cortex-M55",
                   "fit", expect=2, timeout=900)  # the sweep's own core only: the other boards' points are not the point
    rows = json.loads((build / "ds_cnn" / "ds_cnn.fit.json").read_text())["rows"]
    assert [r["budget"] for r in rows] == [r["budget"] for r in report["rows"]]
    assert [r["ok"] for r in rows] == [True] * (len(rows) - 1) + [False]
    assert "smaller than the plan needs" in rows[-1]["reason"]
    assert "smaller than the plan needs" in failed.stdout  # the table says why
    assert f"result: {len(rows) - 1} of {len(rows)} points ran" in failed.stdout


def test_a_plan_cannot_be_swept(tiny_plan, tmp_path):
    """A .tgrs is compiled at one budget already: fit needs the model and says so."""
    require_tool("arm-none-eabi-gcc")
    refused = Scons(REPO)(f"model={tiny_plan}", "fast_kb=64", f"build_dir={tmp_path / 'b'}", "fit", expect=2)
    assert "fit compiles" in refused.stderr and "not a plan" in refused.stderr
