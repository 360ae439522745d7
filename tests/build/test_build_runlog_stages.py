"""Run-log parsing of the STAGE_MEM lines (stage_memory=1): kept in order, strict about numbers."""

from __future__ import annotations

from tigris_scons.runlog import parse_run_log

GOOD = """\
BENCH_START ds_cnn @ Cortex-M55 (QEMU mps3-an547)
Ops: 13  Stages: 11  Tensors: 14  Budget: 4096 bytes
OUTPUT n=12 checksum=1055238670 min=-127 max=-74 nonmin=10
ARENA fast_peak=4032 slow_used=16000 total_sram=20032 bytes (fast_cap=4096 slow_cap=16000) slow_end=16 stack_peak=716
WORK systick_ticks=1270768 clock=32MHz-virtual
{stage_mem}OUTPUT_BYTES 0 output_QuantizeLinear_Output 9c839481b6b68688869281b6
BENCH_END status=ok
"""

LINES = ("STAGE_MEM stage=0 fast=4032 slow=8512 unit=0\n"
         "STAGE_MEM stage=1 fast=4032 slow=8512 unit=0\n"
         "STAGE_MEM stage=9 fast=3840 slow=8064 unit=9\n"
         "STAGE_MEM stage=10 fast=128 slow=96 unit=10\n")


def _log(stage_mem: str):
    return parse_run_log(GOOD.format(stage_mem=stage_mem))


def test_stage_lines_are_parsed_in_order_and_kept():
    log = _log(LINES)
    assert log.complete, log.problems
    assert log.stage_memory == [
        {"stage": 0, "fast": 4032, "slow": 8512, "unit": 0},
        {"stage": 1, "fast": 4032, "slow": 8512, "unit": 0},
        {"stage": 9, "fast": 3840, "slow": 8064, "unit": 9},
        {"stage": 10, "fast": 128, "slow": 96, "unit": 10},
    ]
    assert log.to_dict()["stage_memory"] == log.stage_memory
    # to_dict hands out copies
    log.to_dict()["stage_memory"][0]["fast"] = 0
    assert log.stage_memory[0]["fast"] == 4032


def test_no_stage_lines_no_key():
    log = _log("")
    assert log.complete and log.stage_memory == []
    assert "stage_memory" not in log.to_dict()


def test_unit_is_optional_and_extra_keys_are_fine():
    log = _log("STAGE_MEM stage=3 fast=12345 slow=512\r\nSTAGE_MEM stage=4 fast=0x20 slow=0 unit=4 path=normal\n")
    assert log.complete, log.problems
    assert log.stage_memory == [{"stage": 3, "fast": 12345, "slow": 512, "unit": 3},
                                {"stage": 4, "fast": 32, "slow": 0, "unit": 4}]


def test_malformed_stage_lines_are_problems_not_zeros():
    bad = ("STAGE_MEM stage=0 fast=lots slow=1 unit=0\n"  # not a number
           "STAGE_MEM stage=1 slow=1 unit=1\n"  # no fast=
           "STAGE_MEM stage=2 fast=5 unit=2\n"  # no slow=
           "STAGE_MEM fast=5 slow=1\n"  # no stage=
           "STAGE_MEM stage=3 fast=-5 slow=1 unit=3\n"  # negative
           "STAGE_MEM stage=4 fast=5 slow=1 unit=6\n"  # a unit cannot start after its stage
           "STAGE_MEMORY stage=5 fast=5 slow=1\n"  # not the line's name
           "STAGE_MEM stage=7 fast=5 slow=1 unit=7\n"
           "STAGE_MEM stage=7 fast=6 slow=1 unit=7\n")  # printed twice
    log = _log(bad)
    assert not log.complete
    malformed = [p for p in log.problems if p.startswith("malformed line") and "STAGE_MEM" in p]
    assert len(malformed) == 7, log.problems
    assert "STAGE_MEM stage=7 printed more than once" in log.problems
    assert log.stage_memory == [{"stage": 7, "fast": 5, "slow": 1, "unit": 7}]
    assert log.to_dict()["stage_memory"] == log.stage_memory
