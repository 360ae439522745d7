"""tigris_scons.plots: the SVGs exist, parse, name their series, draw the data, and repeat byte for byte."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.support import REPO
from tigris_scons import plots  # matplotlib (requirements.txt) is imported by the drawing functions

SVG = "{http://www.w3.org/2000/svg}"

# DS-CNN at 4K as the firmware prints it: three chains (0-3, 4-6, 7-8), a banded stage, an untiled one.
FIRMWARE = [{"stage": s, "fast": f, "slow": w, "unit": u} for s, (f, w, u) in enumerate(
    [(4032, 8512, 0)] * 4 + [(3840, 16000, 4)] * 3 + [(3520, 16000, 7)] * 2 + [(3840, 8064, 9), (128, 96, 10)])]
REFERENCE = [dict(row, fast=row["fast"] + 32 * (row["stage"] % 2)) for row in FIRMWARE]

FIT_ROWS = [
    {"budget": 2048, "sram_static": None, "instructions": None, "ok": False, "pareto": False},
    {"budget": 3072, "sram_static": 29000, "instructions": None, "ok": False, "pareto": False},
    {"budget": 4096, "sram_static": 30000, "instructions": 5_000_000, "ok": True, "pareto": True},
    {"budget": 8192, "sram_static": 34000, "instructions": 4_000_000, "ok": True, "pareto": True},
    {"budget": 16384, "sram_static": 42000, "instructions": 4_100_000, "ok": True, "pareto": False},
    {"budget": 65536, "sram_static": 90000, "instructions": None, "ok": True, "pareto": False},
]
PARTS = [{"name": "nRF52840", "sram_total": 262144}, {"name": "STM32F746", "sram_total": 327680},
         {"name": "tiny part", "sram_total": 40000}]


def _groups(svg: Path) -> dict[str, ET.Element]:
    root = ET.parse(svg).getroot()
    ids: dict[str, ET.Element] = {}
    for element in root.iter():
        gid = element.get("id")
        if gid is not None:
            assert gid not in ids, f"id {gid!r} appears twice in {svg.name}"
            ids[gid] = element
    return ids


def _texts(svg: Path) -> list[str]:
    return ["".join(t.itertext()) for t in ET.parse(svg).getroot().iter(f"{SVG}text")]


def _marker_ys(group: ET.Element) -> list[float]:
    """The y of each data marker of a line series, in drawing order (SVG y grows downwards)."""
    return [float(use.get("y")) for use in group.iter(f"{SVG}use")]


def _stage_svg(path: Path, **over) -> Path:
    args = {"stages": FIRMWARE, "reference": REFERENCE, "fast_budget": 4096, "slow_budget": 16384,
            "title": "ds_cnn at 4K"} | over
    plots.stage_memory_svg(path, **args)
    return path


def test_stage_memory_svg_names_every_series(tmp_path: Path) -> None:
    svg = _stage_svg(tmp_path / "stages.svg")
    ids = _groups(svg)
    for gid in ("firmware-fast", "firmware-slow", "reference-fast", "reference-slow", "budget-fast", "budget-slow"):
        assert gid in ids, gid
    texts = _texts(svg)
    for label in ("firmware fast", "reference fast", "firmware slow", "reference slow", "ds_cnn at 4K", "stage",
                  "fast budget (4,096 B)", "slow budget (16,384 B)"):
        assert label in texts, label
    assert any("bytes" in t and "fast" in t for t in texts) and any("bytes" in t and "slow" in t for t in texts)


def test_stage_memory_svg_draws_the_data(tmp_path: Path) -> None:
    ids = _groups(_stage_svg(tmp_path / "stages.svg"))
    fast = _marker_ys(ids["firmware-fast"])
    assert len(fast) == len(FIRMWARE) and len(_marker_ys(ids["firmware-slow"])) == len(FIRMWARE)
    # more bytes is higher on the page: stage 0 (4032) above stage 7 (3520) above stage 10 (128)
    assert fast[0] < fast[7] < fast[10]
    assert fast[0] == fast[3] and fast[4] == fast[9]
    slow = _marker_ys(ids["firmware-slow"])
    assert slow[4] < slow[0] < slow[10]
    # the reference is its own dashed line, not markers of the firmware's
    assert "stroke-dasharray" in ET.tostring(ids["reference-fast"], encoding="unicode")
    assert "stroke-dasharray" not in ET.tostring(ids["firmware-fast"], encoding="unicode")


def test_stage_memory_svg_without_slow_budget_or_reference(tmp_path: Path) -> None:
    ids = _groups(_stage_svg(tmp_path / "s.svg", slow_budget=None, reference=[]))
    assert "budget-fast" in ids and "budget-slow" not in ids
    assert "reference-fast" not in ids and "firmware-fast" in ids
    empty = _groups(_stage_svg(tmp_path / "e.svg", stages=[], reference=[]))  # a run that printed nothing
    assert "budget-fast" in empty and "firmware-fast" not in empty


def test_stage_memory_svg_is_deterministic(tmp_path: Path) -> None:
    first = _stage_svg(tmp_path / "a.svg").read_bytes()
    assert _stage_svg(tmp_path / "b.svg").read_bytes() == first
    changed = [dict(row, fast=row["fast"] - 32) if row["stage"] == 5 else row for row in FIRMWARE]
    assert _stage_svg(tmp_path / "c.svg", stages=changed).read_bytes() != first
    assert b"Date" not in first and b"<dc:date>" not in first


def _fit_svg(path: Path, rows=FIT_ROWS, parts=PARTS) -> Path:
    plots.fit_svg(path, rows, parts, "ds_cnn fit")
    return path


def test_fit_svg_series_and_parts(tmp_path: Path) -> None:
    svg = _fit_svg(tmp_path / "fit.svg")
    ids = _groups(svg)
    part_lines = sorted(gid for gid in ids if gid.startswith("part-") and not gid.startswith("part-label-"))
    assert part_lines == ["part-STM32F746", "part-nRF52840", "part-tiny_part"]
    assert sorted(gid for gid in ids if gid.startswith("part-label-")) == [
        "part-label-STM32F746", "part-label-nRF52840", "part-label-tiny_part"]
    texts = _texts(svg)
    for part in PARTS:
        assert any(part["name"] in t for t in texts), part["name"]
    assert "compile budget (bytes)" in texts and "ds_cnn fit" in texts
    # the SRAM panel: four rows ran, one failed with a figure, one failed without, two Pareto points
    assert len(_marker_ys(ids["fit-ok-sram"])) == 4
    assert len(_marker_ys(ids["fit-failed-sram"])) == 1
    assert len(_marker_ys(ids["fit-failed-unmeasured-sram"])) == 1
    assert len(_marker_ys(ids["pareto-sram"])) == 2
    # the instructions panel: rows without a count are left out, failed ones marked on the axis
    assert len(_marker_ys(ids["fit-ok-instructions"])) == 3
    assert "fit-failed-instructions" not in ids
    assert len(_marker_ys(ids["fit-failed-unmeasured-instructions"])) == 2
    assert len(_marker_ys(ids["pareto-instructions"])) == 2
    # a failed row is drawn as a cross, not as the dots of the rows that ran
    assert ET.tostring(ids["fit-failed-sram"]) != ET.tostring(ids["fit-ok-sram"])


def test_fit_svg_failed_rows_are_their_own_series(tmp_path: Path) -> None:
    all_ok = [dict(row, ok=True) for row in FIT_ROWS if row["sram_static"] is not None]
    ids = _groups(_fit_svg(tmp_path / "ok.svg", rows=all_ok, parts=[]))
    assert "fit-failed-sram" not in ids and "fit-failed-unmeasured-sram" not in ids
    assert len(_marker_ys(ids["fit-ok-sram"])) == len(all_ok)
    assert not any(gid.startswith("part-") for gid in ids)
    one_failed = [dict(row, ok=row["budget"] != 8192) for row in all_ok]
    ids = _groups(_fit_svg(tmp_path / "one.svg", rows=one_failed, parts=[]))
    assert len(_marker_ys(ids["fit-failed-sram"])) == 1
    assert len(_marker_ys(ids["fit-ok-sram"])) == len(all_ok) - 1


def test_fit_svg_is_deterministic(tmp_path: Path) -> None:
    first = _fit_svg(tmp_path / "a.svg").read_bytes()
    assert _fit_svg(tmp_path / "b.svg").read_bytes() == first
    assert _fit_svg(tmp_path / "c.svg", parts=PARTS[:2]).read_bytes() != first


def test_drawing_leaves_matplotlib_settings_alone(tmp_path: Path) -> None:
    import matplotlib

    before = (matplotlib.get_backend(), matplotlib.rcParams["svg.hashsalt"], matplotlib.rcParams["svg.fonttype"])
    _stage_svg(tmp_path / "a.svg")
    _fit_svg(tmp_path / "b.svg")
    assert (matplotlib.get_backend(), matplotlib.rcParams["svg.hashsalt"],
            matplotlib.rcParams["svg.fonttype"]) == before


def test_importing_plots_does_not_import_matplotlib() -> None:
    code = "import sys; import tigris_scons.plots; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, capture_output=True, text=True,
                         env={"PYTHONPATH": str(REPO / "site_scons"), "PATH": ""}).stdout
    assert out.strip() == "False"
