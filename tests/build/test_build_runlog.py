"""Run-log parsing: the firmware contract lines, tolerant of noise, strict about what checks use."""

from __future__ import annotations

import pytest

from tigris_scons.runlog import parse_run_log

GOOD = """\
BENCH_START ds_cnn @ Cortex-M55 (QEMU mps3-an547)
Ops: 13  Stages: 1  Tensors: 14  Budget: 20480 bytes
OUTPUT n=12 checksum=1055238670 min=-127 max=-74 nonmin=10
ARENA fast_peak=16000 slow_used=512 total_sram=16512 bytes (fast_cap=20480 slow_cap=4096) slow_end=16 stack_peak=716
OUTPUT_BYTES 0 output_QuantizeLinear_Output 9c839481b6b68688869281b6
BENCH_END status=ok
"""


def test_good_log():
    log = parse_run_log(GOOD)
    assert log.complete and log.problems == []
    assert (log.model, log.target) == ("ds_cnn", "Cortex-M55 (QEMU mps3-an547)")
    assert (log.ops, log.stages, log.tensors, log.plan_budget) == (13, 1, 14, 20480)
    assert log.output == {"n": "12", "checksum": "1055238670", "min": "-127", "max": "-74", "nonmin": "10"}
    assert log.output_checksum() == 0x3EE5AA0E
    assert log.arena == {"fast_peak": 16000, "slow_used": 512, "total_sram": 16512, "fast_cap": 20480,
                         "slow_cap": 4096, "slow_end": 16, "stack_peak": 716}
    assert log.output_bytes == {0: ("output_QuantizeLinear_Output", bytes.fromhex("9c839481b6b68688869281b6"))}
    assert log.to_dict()["output_bytes"]["0"]["hex"] == "9c839481b6b68688869281b6"


def test_work_line_is_optional_and_parsed():
    assert parse_run_log(GOOD).work_ticks() is None
    work = "WORK systick_ticks=1270768 clock=32MHz-virtual\n"
    log = parse_run_log(GOOD.replace("OUTPUT_BYTES", work + "OUTPUT_BYTES"))
    assert log.complete and log.work_ticks() == 1270768 and log.work["clock"] == "32MHz-virtual"
    assert log.to_dict()["work"] == {"systick_ticks": "1270768", "clock": "32MHz-virtual"}
    bad = parse_run_log(GOOD.replace("OUTPUT_BYTES", "WORK systick_ticks=many\nOUTPUT_BYTES"))
    assert any("malformed line" in p and "WORK" in p for p in bad.problems) and bad.work_ticks() is None


def test_noise_crlf_and_appended_keys_are_fine():
    noisy = ("qemu-system-arm: warning: something harmless\r\n"
             + GOOD.replace("\n", "\r\n").replace("nonmin=10", "nonmin=10 argmax=3")
             .replace("BENCH_END status=ok", "BENCH_END status=ok ticks=123"))
    log = parse_run_log(noisy)
    assert log.complete, log.problems
    assert log.output["argmax"] == "3" and log.end["ticks"] == "123"


def test_truncated_log_lists_what_is_missing():
    log = parse_run_log("\n".join(GOOD.splitlines()[:2]))
    assert not log.complete
    assert "no OUTPUT line" in log.problems and "no ARENA line" in log.problems
    assert any("no BENCH_END" in p for p in log.problems)


def test_failure_status_and_error_lines():
    log = parse_run_log(GOOD.replace("status=ok", "status=fail"))
    assert not log.complete and "firmware reported BENCH_END status=fail" in log.problems
    crashed = parse_run_log("BENCH_START x @ y\nHARDFAULT pc=0x1234\n")
    assert not crashed.complete and crashed.model == "x"


def test_malformed_lines_are_reported_not_read_as_zero():
    bad = (GOOD.replace("Ops: 13  Stages: 1", "Ops: many")
           .replace("fast_peak=16000", "fast_peak=lots")
           .replace("9c839481b6b68688869281b6", "9c8"))
    log = parse_run_log(bad)
    assert any("malformed line" in p and "Ops" in p for p in log.problems)
    assert any("ARENA" in p for p in log.problems)
    assert any("odd number of hex digits" in p for p in log.problems)
    assert "fast_peak" not in log.arena


def test_missing_arena_keys_and_output_keys():
    log = parse_run_log(GOOD.replace(" total_sram=16512", "").replace(" nonmin=10", ""))
    assert "ARENA line lacks total_sram" in log.problems
    assert "OUTPUT line lacks nonmin=" in log.problems


@pytest.mark.parametrize("line", ["OUTPUT_BYTES 0 empty -", "OUTPUT_BYTES 0 empty ", "OUTPUT_BYTES 0 empty"])
def test_empty_output_tensor(line):
    log = parse_run_log(GOOD.replace("OUTPUT_BYTES 0 output_QuantizeLinear_Output 9c839481b6b68688869281b6", line)
                        .replace("checksum=1055238670", "checksum=2166136261"))
    assert log.output_bytes[0] == ("empty", b"")
    assert log.problems == []


def test_a_guest_reset_is_never_a_success():
    log = parse_run_log("BENCH_START ds_cnn @ x\nSELFTEST 5\n" + GOOD)
    assert not log.complete and "BENCH_START printed more than once (the guest reset)" in log.problems


def test_checksum_must_match_the_output_bytes():
    log = parse_run_log(GOOD.replace("checksum=1055238670", "checksum=1055238671"))
    assert not log.complete and any("does not match the OUTPUT_BYTES" in p for p in log.problems)


def test_failure_lines_are_problems():
    log = parse_run_log(GOOD.replace("BENCH_END status=ok", "ERROR TGR_ERR_ARENA: fast arena too small"))
    assert "firmware reported: ERROR TGR_ERR_ARENA: fast arena too small" in log.problems
    fault = parse_run_log("BENCH_START x @ y\nHARDFAULT pc=0x00001234 cfsr=0x00010000\n")
    assert any(p.startswith("firmware reported: HARDFAULT") for p in fault.problems)


def test_profile_lines_are_parsed_and_kept():
    profile = ("PROFILE op=0 type=Conv ticks=59617 macs=320000\nPROFILE op=1 type=DepthwiseConv ticks=20316 macs=72000\n"
               "PROFILE unit=0 ticks=79999\n")
    log = parse_run_log(GOOD.replace("OUTPUT_BYTES", profile + "OUTPUT_BYTES"))
    assert log.complete
    assert log.profile_ops == [{"op": 0, "type": "Conv", "ticks": 59617, "macs": 320000},
                               {"op": 1, "type": "DepthwiseConv", "ticks": 20316, "macs": 72000}]
    assert log.profile_units == {0: 79999}
    assert log.to_dict()["profile"] == {"ops": log.profile_ops, "units": {"0": 79999}}
    assert "profile" not in parse_run_log(GOOD).to_dict()
    bad = parse_run_log(GOOD.replace("OUTPUT_BYTES", "PROFILE op=0 type=Conv ticks=12\nOUTPUT_BYTES"))
    assert any("malformed line" in p and "PROFILE" in p for p in bad.problems)


def _stateful(first: str = "0a0b0c", second: str = "010203") -> str:
    from tigris_scons.inputs import fnv1a32

    lines = [f"RUN index={k} checksum={fnv1a32(bytes.fromhex(h))}\nRUN_BYTES {k} 0 y {h}"
             for k, h in enumerate((first, second))]
    return GOOD.replace("OUTPUT n=12", "\n".join(lines) + "\nOUTPUT n=12")


def test_earlier_runs_of_a_stateful_plan_are_parsed():
    log = parse_run_log(_stateful())
    assert log.complete, log.problems
    assert log.earlier_runs == {0: {0: ("y", bytes.fromhex("0a0b0c"))}, 1: {0: ("y", bytes.fromhex("010203"))}}
    assert log.to_dict()["earlier_runs"]["1"]["0"]["hex"] == "010203"


def test_a_run_checksum_must_match_its_bytes():
    text = _stateful().replace("RUN_BYTES 1 0 y 010203", "RUN_BYTES 1 0 y 010204")
    log = parse_run_log(text)
    assert not log.complete and any("RUN 1 checksum" in p for p in log.problems)
