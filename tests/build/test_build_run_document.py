"""What the QEMU step decides (tigris_scons/qemu.py): the ``-icount`` flags, ``<m>.run.json``, the
reason a run failed and the transcript as the console shows it."""

from __future__ import annotations

from tigris_scons.qemu import ICOUNT_FLAGS, QemuResult, console_transcript, run_document, run_failure, with_icount
from tigris_scons.runlog import parse_run_log

TRANSCRIPT = """\
BENCH_START m @ Cortex-M55 (QEMU mps3-an547)
WORK systick_ticks=64 clock=32MHz-virtual
PROFILE op=0 type=Conv ticks=60 macs=100
OUTPUT_BYTES 0 y fd000107
BENCH_END status=ok
"""


def result(transcript: str = TRANSCRIPT, code: int | None = 0, timed_out: bool = False) -> QemuResult:
    return QemuResult(["qemu-system-arm", "-icount", "shift=0"], code, timed_out, 0.25, 60.0,
                      "BENCH_END status=ok" in transcript, transcript)


def test_icount_is_added_when_asked_unless_the_users_flags_choose_a_shift():
    assert with_icount([], True) == ICOUNT_FLAGS
    assert with_icount(["-d", "guest_errors"], True) == ["-d", "guest_errors", *ICOUNT_FLAGS]
    assert with_icount(["-icount", "shift=3"], True) == ["-icount", "shift=3"]
    assert with_icount(["-d", "guest_errors"], False) == ["-d", "guest_errors"]


def test_the_run_document_records_the_exit_the_work_and_what_the_firmware_measured():
    document = run_document(result(), parse_run_log(TRANSCRIPT), model="m", started=1.0, finished=2.0,
                            log_path="b/m.run.log", shift=0)
    assert (document["schema"], document["model"], document["log"], document["ok"]) == (1, "m", "b/m.run.log", True)
    assert (document["started"], document["finished"], document["exit_code"]) == (1.0, 2.0, 0)
    assert document["work"]["systick_ticks"] == 64 and document["work"]["instructions_approx"] == 2_000
    assert document["profile"]["ops"][0]["ticks"] == 60
    assert "stage_memory" not in document and "transcript" not in document


def test_without_a_shift_the_work_is_not_deterministic():
    document = run_document(result(), parse_run_log(TRANSCRIPT), model="m", started=1.0, finished=2.0,
                            log_path="b/m.run.log", shift=None)
    assert not document["work"]["deterministic"] and "instructions_approx" not in document["work"]


def test_a_failed_run_names_the_firmwares_last_error_and_the_log():
    crashed = "BENCH_START m\nERROR first\nHARDFAULT pc=0x1234\n"
    assert run_failure("m", result(crashed, code=3), "b/m.run.log") == \
        "m: QEMU exited with status 3 (HardFault); firmware said: HARDFAULT pc=0x1234 (log: b/m.run.log)"
    assert run_failure("m", result("", code=None, timed_out=True), "b/m.run.log").startswith(
        "m: QEMU did not finish within 60 s")


def test_the_console_cuts_long_output_bytes_lines_only():
    long_line = "OUTPUT_BYTES 0 y " + "ab" * 100
    shown = console_transcript(f"ARENA {'x' * 200}\n{long_line}\n", width=40).splitlines()
    assert shown[0] == f"ARENA {'x' * 200}"
    assert shown[1] == long_line[:40] + f"... ({len(long_line)} chars, see the run log)"
