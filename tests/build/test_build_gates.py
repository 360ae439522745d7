"""The two gates composed (tigris_scons/gates.py): the fast limit, the firmware's own checksum, the
order of the reasons, the work note, and what ``size-check.json`` and ``check.json`` record."""

from __future__ import annotations

from tigris_scons.checks import Verdict
from tigris_scons.elfsize import RegionUsage, SizeMap
from tigris_scons.gates import check_checksum, fast_limit, final_check, static_gate
from tigris_scons.runlog import parse_run_log

KIB = 1024
LOG = """\
BENCH_START m @ Cortex-M55 (QEMU mps3-an547)
Ops: 13  Stages: 1  Tensors: 14  Budget: 20480 bytes
OUTPUT n=4 checksum=1245295796 min=-3 max=7 nonmin=3
ARENA fast_peak=16000 slow_used=512 total_sram=16512 bytes (fast_cap=20480 slow_cap=4096) slow_end=16 stack_peak=700
WORK systick_ticks=1000 clock=32MHz-virtual
OUTPUT_BYTES 0 y fd000107
BENCH_END status=ok
"""
REFERENCE = {"outputs": [{"name": "y", "dtype": 3, "hex": "fd000107"}], "checksum": "0x4a39b4b4",
             "runtime": {"source": "bundled", "version": "0.12.1"}, "inputs": [{"name": "x"}], "seed": 7,
             "host_memory": {"fast_peak": 1}}
STACK = {"worst_bytes": 1_000, "reserved_bytes": 1_216, "auto": True}
BUDGETS = {"compile_budget": 20 * KIB, "sram": 64 * KIB, "flash": 128 * KIB, "regions": {"DTCM": 56 * KIB}}


def size_map(dtcm_used: int = 2_000) -> SizeMap:
    regions = {"ITCM": RegionUsage("ITCM", 0, 512 * KIB, False, 40_000, 0, 41_000),
               "DTCM": RegionUsage("DTCM", 0x2000_0000, 512 * KIB, True, dtcm_used, 36_864)}
    return SizeMap("fw.elf", [], regions, 41_000, [], [])


def run(log: str = LOG, **changes):
    """The final check of LOG against REFERENCE, with keyword changes to its arguments."""
    args = dict(model="m", board="mps3-an547", log=parse_run_log(log), size=size_map(), reference=REFERENCE,
                stack=STACK, budgets=BUDGETS, limit=20 * KIB, plan_path="b/m.tgrs", plan_bytes=30_000,
                plan_budget=20 * KIB, plan_tensors=14, log_path="b/m.run.log", icount_shift=0, stage_memory=False)
    args.update(changes)
    return final_check(args.pop("model"), args.pop("board"), args.pop("log"), args.pop("size"), args.pop("reference"),
                       args.pop("stack"), args.pop("budgets"), **args)


def test_the_fast_limit_is_the_declared_budget_else_the_plans_plus_the_weight_reserve():
    assert fast_limit(20 * KIB, 16_000, 512) == (20 * KIB, 20 * KIB + 512)
    assert fast_limit(None, 16_000, 0) == (16_000, 16_000)  # a ready plan: its own budget


def test_the_firmware_checksum_must_be_the_references():
    verdict = Verdict("m")
    check_checksum(verdict, parse_run_log(LOG), REFERENCE)
    assert verdict.ok
    check_checksum(verdict, parse_run_log(LOG), {**REFERENCE, "checksum": "0x00000007"})
    assert verdict.errors == ["firmware checksum 0x4a39b4b4 differs from the reference 0x00000007"]
    silent = Verdict("m")  # no OUTPUT line: the run-log parser reports it, not this rule
    check_checksum(silent, parse_run_log(LOG.replace(LOG.splitlines()[2] + "\n", "")), {**REFERENCE, "checksum": "0x1"})
    assert silent.ok


def test_the_static_gate_records_the_elf_the_plan_and_the_stack():
    check = static_gate("m", "mps3-an547", size_map(), "b/m.tgrs", 30_000, BUDGETS, STACK)
    assert check.title == "tigris budget: m  (fw.elf, plan b/m.tgrs, static)"
    assert [r.label for r in check.verdict.rows] == ["ITCM", "DTCM", "flash", "SRAM static", "stack static"]
    assert check.document == {"schema": 1, "kind": "size-check", "board": "mps3-an547", "model": "m", "elf": "fw.elf",
                              "stack": STACK, "plan": "b/m.tgrs", "plan_bytes": 30_000, "budgets": BUDGETS}
    table = check.conclude("error")
    assert table.startswith(check.title + "\n") and table.rstrip().endswith("result: ok (m)")
    assert check.document["table"] == table and check.document["verdict"]["ok"]


def test_the_static_gate_fails_over_budget_unless_warned():
    over = static_gate("m", "mps3-an547", size_map(dtcm_used=30_000), "b/m.tgrs", 30_000, BUDGETS, STACK)
    over.conclude("error")
    assert not over.verdict.ok and over.verdict.reason.startswith("m: DTCM region 66,864 B over budget 56.0 KiB")
    warned = static_gate("m", "mps3-an547", size_map(dtcm_used=30_000), "b/m.tgrs", 30_000, BUDGETS, STACK)
    warned.conclude("warn")
    assert warned.verdict.ok and warned.document["verdict"]["mode"] == "warn"


def test_a_good_run_passes_with_every_row_and_the_work_note():
    check = run()
    assert check.verdict.ok, check.verdict.reason
    assert [r.label for r in check.verdict.rows] == ["ITCM", "DTCM", "flash", "SRAM static", "stack static",
                                                     "fast peak", "slow used", "SRAM runtime", "stack peak", "output"]
    assert check.verdict.notes == ["work: 1,000 SysTick ticks @ 32MHz-virtual ~ 31,250 guest instructions "
                                   "(-icount shift=0); a count of work, not latency: QEMU does not model the core's timing"]
    assert check.title == "tigris budget: m  (fw.elf, run b/m.run.log)"


def test_the_check_document_records_the_run_and_the_reference_used():
    document = run().document
    assert (document["kind"], document["model"], document["board"], document["elf"]) == ("check", "m", "mps3-an547", "fw.elf")
    assert (document["plan"], document["plan_bytes"], document["log"]) == ("b/m.tgrs", 30_000, "b/m.run.log")
    assert document["reference"] == {k: REFERENCE[k] for k in ("runtime", "checksum", "inputs", "seed")}
    assert document["run"]["arena"]["fast_peak"] == 16_000 and document["budgets"] == BUDGETS
    assert document["work"]["deterministic"] and document["work"]["instructions_approx"] == 31_250


def test_without_icount_the_work_figure_is_recorded_but_not_claimed():
    check = run(icount_shift=None)
    assert check.verdict.ok and not check.verdict.notes
    assert not check.document["work"]["deterministic"] and check.document["work"]["systick_ticks"] == 1_000


def test_a_fast_peak_over_the_limit_is_a_budget_failure():
    check = run(limit=15_000)
    assert check.verdict.failures == ["fast arena peak 16,000 B over budget 14.6 KiB by 1,000 B (arena 20,480 B)"]
    check.conclude("warn")
    assert check.verdict.ok and next(r for r in check.verdict.rows if r.label == "fast peak").status == "WARN"


def test_correctness_comes_before_budgets_and_is_never_waived():
    wrong = LOG.replace("fd000107", "fd000307").replace("checksum=1245295796", "checksum=2587799506")  # its FNV-1a
    check = run(wrong, limit=15_000)
    check.conclude("warn")
    assert not check.verdict.ok
    assert check.verdict.errors == [
        "output differs from the host reference (bundled tigris-ml runtime 0.12.1): 1 element(s) differ, "
        "max |diff| 2, first y[2] = 3, reference 1",
        "firmware checksum 0x9a3eafd2 differs from the reference 0x4a39b4b4"]
    assert check.verdict.reason.startswith("m: output differs")


def test_run_log_problems_and_plan_disagreements_are_errors_in_order():
    broken = LOG.replace("BENCH_END status=ok\n", "").replace("Tensors: 14", "Tensors: 15")
    errors = run(broken).verdict.errors
    assert errors == ["run log: no BENCH_END line (the firmware did not finish)",
                      "firmware reports 15 tensors, plan header says 14"]


def test_stage_memory_asked_for_but_not_printed_is_an_error():
    assert "stage_memory=1 but the firmware printed no STAGE_MEM line" in run(stage_memory=True).verdict.errors
    printed = LOG.replace("OUTPUT_BYTES", "STAGE_MEM stage=0 fast=16000 slow=512 unit=0\nOUTPUT_BYTES")
    assert run(printed, stage_memory=True).verdict.ok
