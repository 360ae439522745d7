"""The fit sweep's pure parts: the ladder search, the rows, the Pareto front and the table."""

from __future__ import annotations

import json

import pytest

from tigris_scons.fit import failed_row, mark_front, point_row, progress_line, render_table
from tigris_scons.ladder import find_ladder, resolution


def staircase(steps: dict[int, int], smallest: int):
    """A stage-count function: no plan below ``smallest``, ``steps[b]`` stages from budget b on."""
    edges = sorted(steps)

    def stages_at(budget: int) -> int | None:
        if budget < smallest:
            return None
        return steps[max(e for e in edges if e <= budget)]

    return stages_at


def test_ladder_finds_the_smallest_plan_and_every_stage_count_once():
    stages_at = staircase({0: 11, 8064: 10, 16000: 1}, smallest=641)
    ladder = find_ladder(stages_at, 16000)
    assert [s for _, s in ladder.rungs] == [11, 10, 1]
    assert ladder.rungs[0][0] == 641  # bisection to the byte
    assert ladder.rungs[-1] == (16000, 1)
    budget10 = ladder.rungs[1][0]
    assert 8064 <= budget10 <= 8064 + resolution(8064)  # within the search's resolution
    assert stages_at(budget10) == 10
    assert all(stages_at(b) == s for b, s in ladder.probes.items())  # every probe recorded as answered


def test_ladder_with_many_counts_keeps_each_once_in_budget_order():
    steps = {0: 64, 3000: 60, 9000: 41, 20000: 17, 90000: 9, 300000: 3, 700000: 1}
    ladder = find_ladder(staircase(steps, 2500), 700000)
    assert [s for _, s in ladder.rungs] == [64, 60, 41, 17, 9, 3, 1]
    budgets = [b for b, _ in ladder.rungs]
    assert budgets == sorted(budgets)
    for (budget, stages), edge in zip(ladder.rungs[1:], [3000, 9000, 20000, 90000, 300000, 700000]):
        assert edge <= budget <= edge + resolution(edge)


def test_ladder_refuses_a_peak_without_a_plan():
    with pytest.raises(ValueError, match="no plan at the unscheduled peak"):
        find_ladder(lambda b: None, 1000)


def _check_doc(ok=True, output="ok", instructions=1000, warn=()):
    rows = [{"label": "output", "status": output}] + [{"label": w, "status": "WARN"} for w in warn]
    return {"run": {"arena": {"fast_peak": 900, "slow_used": 64, "stack_peak": 500}},
            "verdict": {"ok": ok, "rows": rows, "reason": "" if ok else "output differs"},
            "work": {"instructions_approx": instructions}}


def test_point_row_takes_its_figures_from_the_point_files():
    row = point_row(1024, 3, 30000, _check_doc(warn=("ISRAM",)), {"on_chip_ram": 5000, "load_image": 40000},
                    {"reserved_bytes": 1600}, {"fast_arena_bytes": 1024})
    assert row == {"budget": 1024, "stages": 3, "fast_peak": 900, "slow_peak": 64, "stack": 1600,
                   "stack_peak": 500, "sram_static": 5000, "fast_arena": 1024, "flash": 70000,
                   "plan_bytes": 30000, "image_bytes": 40000, "instructions": 1000, "output": "match",
                   "ok": True, "reason": "over budget: ISRAM"}
    bad = point_row(1024, 3, 1, _check_doc(ok=False, output="FAIL"), {"on_chip_ram": 1, "load_image": 1},
                    {"reserved_bytes": 1}, {"fast_arena_bytes": 1})
    assert (bad["ok"], bad["output"], bad["reason"]) == (False, "differs", "output differs")


def _row(budget, sram, instructions, ok=True):
    return {"budget": budget, "stages": 1, "fast_peak": budget, "slow_peak": 0, "stack": 1000, "sram_static": sram,
            "fast_arena": budget, "flash": 50000, "plan_bytes": 1, "image_bytes": 1, "instructions": instructions,
            "output": "match" if ok else "differs", "ok": ok, "reason": "" if ok else "output differs"}


def test_front_and_smallest():
    rows = mark_front([_row(1, 100, 900), _row(2, 200, 500), _row(3, 250, 600), _row(4, 300, 400),
                       _row(5, 50, 100, ok=False), failed_row(6, 1, "does not link")])
    assert [r["pareto"] for r in rows] == [True, True, False, True, False, False]
    assert [r["smallest"] for r in rows] == [True, False, False, False, False, False]


def test_equal_points_are_both_on_the_front():
    rows = mark_front([_row(1, 100, 500), _row(2, 100, 500)])
    assert [r["pareto"] for r in rows] == [True, True]


def test_table_lists_every_point_the_marks_and_the_parts():
    rows = mark_front([_row(640, 20112, 11820906), _row(16000, 19504, 10323031),
                       failed_row(752640, 1, "does not fit mps3-an547: the fast arena is larger than DTCM")])
    parts = [{"name": "nRF52840", "core": "Cortex-M4", "fits": True, "budget": 16000, "instructions": 10995200,
              "measured_on": "mps2-an386", "sizes_from": "mps2-an386"},
             {"name": "TINY", "core": "Cortex-M0", "fits": False, "reason": "SRAM 19,504 B > 16 KiB"}]
    text = render_table("ds_cnn", "mps3-an547", rows, parts, "build/ds_cnn/ds_cnn.fit.svg")
    lines = text.splitlines()
    assert "16,000       1" in next(ln for ln in lines if ln.lstrip().startswith("16,000"))
    assert next(ln for ln in lines if ln.lstrip().startswith("16,000")).rstrip().endswith("*<")
    assert "failed  does not fit mps3-an547" in next(ln for ln in lines if ln.lstrip().startswith("752,640"))
    assert "nRF52840         Cortex-M4   fits at budget 16,000 B (10,995,200 instructions on mps2-an386)" in text
    assert "TINY             Cortex-M0   does not fit: SRAM 19,504 B > 16 KiB" in text
    assert "picture: build/ds_cnn/ds_cnn.fit.svg" in text
    assert lines[-1] == "result: 2 of 3 points ran and matched the reference"
    json.dumps(rows)  # the rows go to <m>.fit.json as they are


def test_progress_line_names_the_point_and_its_reason():
    assert progress_line("m", 2, 5, failed_row(700, 3, "QEMU timed out")) == \
        "FIT m [2/5] budget 700 B, 3 stages: QEMU timed out\n"
    assert "SRAM 20,112 B" in progress_line("m", 1, 5, _row(640, 20112, 5))


def test_extra_boards_one_per_other_core_with_a_board():
    from tigris_scons.boards import get_board
    from tigris_scons.fit import extra_boards

    an547 = get_board("mps3-an547")
    cores = ["Cortex-M55", "Cortex-M4", "Cortex-M4", "Cortex-M7", "Cortex-M33", "Cortex-M85"]
    assert [b.machine for b in extra_boards(cores, an547)] == ["mps2-an386", "mps2-an500", "mps2-an505"]
    assert [b.machine for b in extra_boards(cores, get_board("mps2-an386"))] == \
        ["mps2-an500", "mps2-an505", "mps3-an547"]
    assert extra_boards(["Cortex-M55"], an547) == []
    assert [b.machine for b in extra_boards(cores, an547, "Cortex-M4, Cortex-M85")] == ["mps2-an386"]
    assert extra_boards(cores, an547, "Cortex-M55") == []


def test_table_says_where_each_parts_work_was_measured():
    rows = mark_front([_row(16000, 19760, 7_899_219)])
    parts = [{"name": "nRF52840", "core": "Cortex-M4", "fits": True, "budget": 16000, "instructions": 8_324_840,
              "measured_on": "mps2-an386", "sizes_from": "mps2-an386", "reason": ""},
             {"name": "M85", "core": "Cortex-M85", "fits": True, "budget": 16000, "instructions": None,
              "measured_on": None, "sizes_from": "mps3-an547", "reason": ""}]
    cores = {"Cortex-M4": {"board": "mps2-an386", "rows": [dict(rows[0], instructions=8_324_840)]}}
    text = render_table("ds_cnn", "mps3-an547", rows, parts, None, cores)
    assert "nRF52840         Cortex-M4   fits at budget 16,000 B (8,324,840 instructions on mps2-an386)" in text
    assert "no QEMU board emulates Cortex-M85: work not measured" in text
    assert "work on Cortex-M4 (mps2-an386), instr/inference per budget: 16,000 B: 8,324,840" in text
    assert "7,899,219 instructions" not in text.split("parts (catalog)")[1]
    m7 = dict(parts[1], name="H7", core="Cortex-M7")
    assert "fit_cores= leaves Cortex-M7 out: work not measured" in render_table("m", "mps3-an547", rows, [m7])
