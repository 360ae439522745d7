"""Budget comparison rules and the budget table / JSON rendering."""

from __future__ import annotations

import json

import pytest

from tigris_scons.checks import (Verdict, apply_mode, check_log_consistency, check_outputs, check_runtime,
                                 check_stack, check_static, compare_outputs)
from tigris_scons.elfsize import RegionUsage, SizeMap
from tigris_scons.report import bar, render_table, write_json
from tigris_scons.runlog import parse_run_log

KIB = 1024


def size_map(itcm=40_000, dtcm=(2_000, 36_864), isram=(0, 4_096), image=41_000, unattributed=()) -> SizeMap:
    regions = {
        "ITCM": RegionUsage("ITCM", 0, 512 * KIB, False, itcm, 0, image),
        "SRAM": RegionUsage("SRAM", 0x0100_0000, 2048 * KIB, True),
        "DTCM": RegionUsage("DTCM", 0x2000_0000, 512 * KIB, True, *dtcm),
        "ISRAM": RegionUsage("ISRAM", 0x2100_0000, 4096 * KIB, True, *isram),
        "DDR": RegionUsage("DDR", 0x6000_0000, 2048 * 1024 * KIB, False),
    }
    return SizeMap("fw.elf", [], regions, image, [], list(unattributed))


BUDGETS = {"compile_budget": 20 * KIB, "sram": 64 * KIB, "flash": 128 * KIB,
           "regions": {"ITCM": 64 * KIB, "DTCM": 56 * KIB, "ISRAM": 8 * KIB}}

LOG = """\
BENCH_START ds_cnn @ Cortex-M55 (QEMU mps3-an547)
Ops: 13  Stages: 1  Tensors: 14  Budget: 20480 bytes
OUTPUT n=4 checksum=1245295796 min=-3 max=7 nonmin=3
ARENA fast_peak=16000 slow_used=512 total_sram=16512 bytes (fast_cap=20480 slow_cap=4096)
OUTPUT_BYTES 0 y fd000107
BENCH_END status=ok
"""
REFERENCE = {"outputs": [{"name": "y", "dtype": 3, "hex": "fd000107"}],
             "runtime": {"source": "bundled", "version": "0.12.1"}, "checksum": "0x4a39b4b4"}


def test_static_pass_rows():
    v = Verdict("m")
    check_static(v, size_map(), 30_000, BUDGETS)
    assert v.ok and v.reason == ""
    labels = [r.label for r in v.rows]
    assert labels == ["ITCM", "DTCM", "ISRAM", "flash", "SRAM static"]  # empty SRAM/DDR rows left out
    flash = next(r for r in v.rows if r.label == "flash")
    assert flash.used == 71_000 and flash.budget == 128 * KIB
    sram = next(r for r in v.rows if r.label == "SRAM static")
    assert sram.used == 2_000 + 36_864 + 4_096


@pytest.mark.parametrize(
    ("kwargs", "plan", "budgets", "fragment"),
    [
        ({"dtcm": (5_000, 56 * KIB)}, 30_000, BUDGETS, "DTCM region 62,344 B over budget 56.0 KiB by 5,000 B"),
        ({}, 100_000, BUDGETS, "flash (plan + firmware image) 141,000 B over budget 128.0 KiB by 9,928 B"),
        ({}, 30_000, BUDGETS | {"sram": 32 * KIB}, "on-chip SRAM (static) 42,960 B over budget 32.0 KiB by 10,192 B"),
        ({"itcm": 600 * KIB}, 30_000, {"regions": {}}, "ITCM region 614,400 B over size 512.0 KiB"),
    ],
)
def test_static_failures(kwargs, plan, budgets, fragment):
    v = Verdict("m")
    check_static(v, size_map(**kwargs), plan, budgets)
    assert not v.ok
    assert fragment in v.reason
    assert v.reason.startswith("m: ")


def test_unattributed_section_is_an_error():
    v = Verdict("m")
    check_static(v, size_map(unattributed=[".weird at 0xf0000000 (4 B)"]), 1, BUDGETS)
    assert v.errors == ["section outside the memory map: .weird at 0xf0000000 (4 B)"]


def test_runtime_rows_and_failures():
    log = parse_run_log(LOG)
    v = Verdict("m")
    check_runtime(v, log, BUDGETS, 20 * KIB)
    assert v.ok
    over_budget = parse_run_log(LOG.replace("fast_peak=16000", "fast_peak=20000"))
    v = Verdict("m")
    check_runtime(v, over_budget, BUDGETS, 16 * KIB)
    assert "fast arena peak 20,000 B over budget 16.0 KiB by 3,616 B" in v.reason
    over_arena = parse_run_log(LOG.replace("fast_peak=16000", "fast_peak=30000"))
    v = Verdict("m")
    check_runtime(v, over_arena, BUDGETS, 40 * KIB)
    assert "fast arena peak 30,000 B over size 20.0 KiB by 9,520 B" in v.reason
    sram = parse_run_log(LOG.replace("total_sram=16512", "total_sram=70000"))
    v = Verdict("m")
    check_runtime(v, sram, BUDGETS, 20 * KIB)
    assert "on-chip SRAM (firmware total_sram) 70,000 B over budget 64.0 KiB" in v.reason
    stack = parse_run_log(LOG.replace("slow_cap=4096)", "slow_cap=4096) stack_peak=20000"))
    v = Verdict("m")
    check_runtime(v, stack, BUDGETS, 20 * KIB, stack_size=16 * KIB)
    assert "main stack high-water mark 20,000 B over size 16.0 KiB by 3,616 B" in v.reason
    v = Verdict("m")
    check_runtime(v, stack, BUDGETS, 20 * KIB)  # no .stack section known: no row
    assert v.ok and "stack peak" not in [r.label for r in v.rows]
    v = Verdict("m")
    check_runtime(v, parse_run_log("BENCH_START m @ x\n"), BUDGETS, 1)
    assert v.errors == ["run log has no complete ARENA line"]


def test_stack_rows_static_bound_and_measured_peak():
    """The static worst case must fit the reservation (a budget: warn mode may pass it); a run
    deeper than the static worst case is an error in every mode (the analysis missed a path)."""
    v = Verdict("m")
    check_stack(v, 1_176, 1_392, auto=True)
    assert v.ok and v.rows[-1].label == "stack static" and "(auto)" in v.rows[-1].note
    v = Verdict("m")
    check_stack(v, 1_176, 1_024, auto=False)
    assert "main stack (static worst case) 1,176 B over size 1.0 KiB by 152 B" in v.reason
    apply_mode(v, "warn")
    assert v.ok
    within = parse_run_log(LOG.replace("slow_cap=4096)", "slow_cap=4096) stack_peak=752"))
    v = Verdict("m")
    check_runtime(v, within, BUDGETS, 20 * KIB, stack_size=1_392, stack_static=1_176)
    row = next(r for r in v.rows if r.label == "stack peak")
    assert v.ok and row.budget == 1_176 and "static 1,176 B" in row.note
    deeper = parse_run_log(LOG.replace("slow_cap=4096)", "slow_cap=4096) stack_peak=1200"))
    v = Verdict("m")
    check_runtime(v, deeper, BUDGETS, 20 * KIB, stack_size=1_392, stack_static=1_176)
    apply_mode(v, "warn")
    assert not v.ok and any("more than the static worst case of 1,176 B" in e for e in v.errors)


def test_outputs_equal_differ_and_degenerate():
    v = Verdict("m")
    check_outputs(v, parse_run_log(LOG), REFERENCE)
    assert v.ok and v.rows[-1].status == "ok" and "bundled tigris-ml runtime 0.12.1" in v.rows[-1].note

    v = Verdict("m")
    check_outputs(v, parse_run_log(LOG.replace("fd000107", "fd000307")), REFERENCE)
    assert "output differs from the host reference (bundled tigris-ml runtime 0.12.1): 1 element(s) differ, " \
           "max |diff| 2, first y[2] = 3, reference 1" in v.reason

    ref = {**REFERENCE, "outputs": [{"name": "y", "dtype": 3, "hex": "05050505"}]}
    v = Verdict("m")
    check_outputs(v, parse_run_log(LOG.replace("fd000107", "05050505")), ref)
    assert "degenerate output" in v.reason


def test_output_line_must_describe_the_output_bytes():
    v = Verdict("m")
    check_outputs(v, parse_run_log(LOG.replace("max=7", "max=6").replace("nonmin=3", "nonmin=2")), REFERENCE)
    assert ("firmware OUTPUT line disagrees with its output bytes: max=6 (the output bytes give 7), "
            "nonmin=2 (the output bytes give 3)") in v.reason
    floats = {**REFERENCE, "outputs": [{"name": "y", "dtype": 1, "hex": "0000803f00000040"}]}  # 1.0, 2.0
    line = "OUTPUT n=2 checksum=0 min=1065353216 max=1073741824 nonmin=1"
    float_log = LOG.replace("fd000107", "0000803f00000040").replace(LOG.splitlines()[2], line)
    v = Verdict("m")
    check_outputs(v, parse_run_log(float_log), floats)
    assert v.ok, v.reason
    v = Verdict("m")
    check_outputs(v, parse_run_log(float_log.replace("max=1073741824", "max=1065353216")), floats)
    assert "max=1065353216 (the output bytes give 1073741824)" in v.reason


def test_output_structure_mismatches():
    two = {**REFERENCE, "outputs": REFERENCE["outputs"] + [{"name": "z", "dtype": 1, "hex": "0000803f"}]}
    cmp = compare_outputs(parse_run_log(LOG), two["outputs"])
    assert not cmp.equal and "output 1 (z) missing from the run log" in cmp.detail
    renamed = compare_outputs(parse_run_log(LOG.replace(" y ", " q ")), REFERENCE["outputs"])
    assert not renamed.equal and any("named 'q'" in d for d in renamed.detail)
    short = compare_outputs(parse_run_log(LOG.replace("fd000107", "fd00")), REFERENCE["outputs"])
    assert any("has 2 bytes, reference 4" in d for d in short.detail)
    floats = {**REFERENCE, "outputs": [{"name": "y", "dtype": 1, "hex": "0000803f00000040"}]}
    got = parse_run_log(LOG.replace("fd000107", "0000803f00004040"))
    cmp = compare_outputs(got, floats["outputs"])
    assert cmp.mismatches == 1 and cmp.max_abs_diff == 1.0


def test_log_consistency():
    v = Verdict("m")
    check_log_consistency(v, parse_run_log(LOG), 10240, 15)
    assert len(v.errors) == 2 and "plan budget 20480" in v.errors[0]


def test_warn_mode_downgrades_budgets_but_not_correctness():
    v = Verdict("m")
    check_static(v, size_map(dtcm=(5_000, 56 * KIB)), 30_000, BUDGETS)
    apply_mode(v, "warn")
    assert v.ok and any("WARNING (budget_mode=warn)" in n for n in v.notes)
    assert next(r for r in v.rows if r.label == "DTCM").status == "WARN"
    v = Verdict("m")
    check_outputs(v, parse_run_log(LOG.replace("fd000107", "fd000307")), REFERENCE)
    apply_mode(v, "warn")
    assert not v.ok


def test_bar():
    assert bar(0.0) == "[          ]"
    assert bar(0.47) == "[====      ]"
    assert bar(1.0) == "[==========]"
    assert bar(3.2) == "[==========]"
    assert bar(None) == " " * 12


def test_table_is_one_string_with_aligned_columns():
    v = Verdict("ds_cnn")
    check_static(v, size_map(dtcm=(5_000, 56 * KIB)), 30_000, BUDGETS)
    check_runtime(v, parse_run_log(LOG), BUDGETS, 20 * KIB)
    check_outputs(v, parse_run_log(LOG), REFERENCE)
    text = render_table(v, title="tigris budget: ds_cnn")
    lines = text.splitlines()
    assert text.endswith("\n") and lines[0] == "tigris budget: ds_cnn"
    header = lines[1]
    assert header.split() == ["item", "used", "reserved", "budget", "size", "use", "bar", "status"]
    dtcm = next(line for line in lines if line.startswith("DTCM"))
    assert "5,000 B" in dtcm and "57,344 B" in dtcm and "56.0 KiB" in dtcm and "OVER +5,000 B" in dtcm
    assert dtcm.index("[==========]") == header.index("bar")
    assert "runtime (firmware on QEMU)" in lines
    assert lines[-1].startswith("result: FAILED: ds_cnn: DTCM region")
    assert any(line.startswith("output") and line.rstrip().endswith("runtime 0.12.1)") for line in lines)


def test_json_is_atomic_and_sorted(tmp_path):
    out = tmp_path / "sub" / "r.json"
    write_json(out, {"b": 1, "a": [1, 2]})
    assert json.loads(out.read_text()) == {"a": [1, 2], "b": 1}
    assert out.read_text().index('"a"') < out.read_text().index('"b"')
    assert list(out.parent.iterdir()) == [out]
    v = Verdict("m")
    check_static(v, size_map(), 1, BUDGETS)
    assert json.loads(json.dumps(v.to_dict()))["ok"] is True


def test_names_compare_as_the_firmware_prints_them():
    ref = [{"name": "out put\u00e9", "dtype": 3, "hex": "0102"}]
    log = parse_run_log(LOG.replace("OUTPUT_BYTES 0 y fd000107", "OUTPUT_BYTES 0 out_put__ 0102"))
    assert compare_outputs(log, ref).equal
    empty = [{"name": "", "dtype": 3, "hex": "0102"}]
    assert compare_outputs(parse_run_log(LOG.replace("OUTPUT_BYTES 0 y fd000107", "OUTPUT_BYTES 0 - 0102")), empty).equal


def test_each_earlier_run_of_a_stateful_plan_is_compared_in_order():
    """A reference with two earlier inferences: equal RUN_BYTES pass; one differing, one missing
    or one the reference did not run fail, naming the inference."""
    from tigris_scons.inputs import fnv1a32

    def log_with(*runs: str) -> str:
        lines = [f"RUN index={k} checksum={fnv1a32(bytes.fromhex(h))}\nRUN_BYTES {k} 0 y {h}" for k, h in enumerate(runs)]
        return LOG.replace("OUTPUT n=4", "\n".join(lines) + "\nOUTPUT n=4")

    ref = {**REFERENCE, "earlier_runs": [[{"name": "y", "dtype": 3, "hex": "01020304"}],
                                         [{"name": "y", "dtype": 3, "hex": "05060708"}]]}
    v = Verdict("m")
    check_outputs(v, parse_run_log(log_with("01020304", "05060708")), ref)
    assert v.ok, v.reason
    assert any(r.label == "earlier runs" and r.status == "ok" for r in v.rows)

    v = Verdict("m")
    check_outputs(v, parse_run_log(log_with("01020304", "05060709")), ref)
    assert "inference 2 of 3 differs from the host reference's" in v.reason

    v = Verdict("m")
    check_outputs(v, parse_run_log(log_with("01020304")), ref)
    assert "inference 2 of 3 differs" in v.reason and "missing" in v.reason

    v = Verdict("m")
    check_outputs(v, parse_run_log(log_with("01020304", "05060708", "00000000")), ref)
    assert "inferences [2] the reference did not run" in v.reason
