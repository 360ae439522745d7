"""A sweep's report when points failed, the report document, and the ladder's cache key
(tigris_scons/fit.py, tigris_scons/ladder.py): what ``fit`` decides without building anything."""

from __future__ import annotations

import json
from pathlib import Path

from tigris_scons import ladder
from tigris_scons.fit import NOT_BUILT, mark_front, report, rows_after_failures

POINTS = [(640, 11, "/b/fit/640/"), (8080, 10, "/b/fit/8080/"), (16000, 1, "/b/fit/16000/")]


def good_row(budget: int, stages: int, sram: int, instructions: int) -> dict:
    return {"budget": budget, "stages": stages, "fast_peak": budget, "slow_peak": 512, "stack": 1_656,
            "sram_static": sram, "fast_arena": budget, "flash": 80_000, "plan_bytes": 30_000, "image_bytes": 50_000,
            "instructions": instructions, "output": "match", "ok": True, "reason": ""}


def test_a_failure_under_a_points_folder_is_that_points_row():
    built = [good_row(640, 11, 20_112, 11_820_906), good_row(8080, 10, 27_552, 15_126_062), None]
    failures = [(("/b/fit/16000/main.c", "/b/fit/16000/main.c"), "fast arena 14336 B is smaller than the plan needs")]
    rows = rows_after_failures(POINTS, built, failures)
    assert rows[:2] == built[:2]
    assert (rows[2]["budget"], rows[2]["stages"], rows[2]["ok"], rows[2]["output"]) == (16000, 1, False, "-")
    assert rows[2]["reason"] == "fast arena 14336 B is smaller than the plan needs" and rows[2]["instructions"] is None


def test_a_point_never_built_says_fit_needs_k():
    rows = rows_after_failures(POINTS, [good_row(640, 11, 1, 1), None, None],
                               [(("None", "/b/fit/16000/ds_cnn.tgrs"), "tigris compile refused")])
    assert rows[0]["ok"] and rows[1]["reason"] == NOT_BUILT and rows[2]["reason"] == "tigris compile refused"
    assert "fit needs -k" in NOT_BUILT


def test_a_failure_wins_over_a_stale_row_and_a_sibling_folder_is_not_a_match():
    stale = good_row(640, 11, 1, 1)
    rows = rows_after_failures([(640, 11, "/b/fit/640/"), (6400, 3, "/b/fit/6400/")], [stale, good_row(6400, 3, 2, 2)],
                               [(("/b/fit/640/ds_cnn.check.ok",), "output differs")])
    assert rows[0]["reason"] == "output differs" and rows[1]["ok"]  # "/b/fit/6400/" does not start with ".../640/"


def test_the_report_document_carries_the_table_it_prints():
    rows = mark_front([good_row(640, 11, 20_112, 11_820_906), good_row(16000, 1, 19_504, 10_323_031)])
    document = report("ds_cnn", "mps3-an547", rows, [], "b/ds_cnn.fit.svg")
    assert (document["kind"], document["model"], document["board"], document["picture"]) == \
        ("fit", "ds_cnn", "mps3-an547", "b/ds_cnn.fit.svg")
    assert document["rows"] is rows and document["parts"] == []
    lines = document["table"].splitlines()
    assert lines[0] == "tigris fit: ds_cnn on mps3-an547 (2 budgets, one per stage count; work under icount=1)"
    assert lines[-2:] == ["picture: b/ds_cnn.fit.svg", "result: 2 of 2 points ran and matched the reference"]


def test_the_ladder_is_searched_again_only_when_its_inputs_change(tmp_path: Path):
    model = tmp_path / "m.onnx"
    model.write_bytes(b"model")
    key = ladder.ladder_key([model], ["--compress", "lz4"], None, "0.12.1")
    assert key == ladder.ladder_key([str(model)], ["--compress", "lz4"], None, "0.12.1")
    assert key != ladder.ladder_key([model], [], None, "0.12.1")
    assert key != ladder.ladder_key([model], ["--compress", "lz4"], 65_536, "0.12.1")
    assert key != ladder.ladder_key([model], ["--compress", "lz4"], None, "0.13.0")
    model.write_bytes(b"model v2")
    assert key != ladder.ladder_key([model], ["--compress", "lz4"], None, "0.12.1")


def test_the_ladder_file_keeps_its_key(tmp_path: Path):
    path = tmp_path / "fit" / "ladder.json"
    assert ladder.cached_rungs(path, "k") is None
    found = {"schema": 1, "peak": 16000, "rungs": [{"budget": 640, "stages": 11}, {"budget": 16000, "stages": 1}]}
    ladder.keep(path, found, "k")
    assert json.loads(path.read_text())["key"] == "k" and "key" not in found
    assert ladder.cached_rungs(path, "k") == [(640, 11), (16000, 1)] == ladder.rungs_of(found)
    assert ladder.cached_rungs(path, "other") is None
