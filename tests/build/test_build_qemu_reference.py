"""QEMU runner (with a stand-in emulator script), host reference and main.c rendering."""

from __future__ import annotations

import os
import signal
import stat
import time
from pathlib import Path

import pytest

from tests.support import REPO, host_library
from tigris_scons.errors import TigrisError
from tigris_scons.firmware import FirmwareParams, render_main, template_context
from tigris_scons.inputs import fnv1a32, generate_inputs
from tigris_scons.plan import read_plan
from tigris_scons.qemu import END_MARKER, describe_work, exit_meaning, icount_shift, qemu_command, run_qemu, work_figure
from tigris_scons.reference import bundled_runtime_available, compute_reference, reference_in_process


def fake(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-qemu"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_command_line_follows_the_documented_flags():
    cmd = qemu_command("qemu-system-arm", "fw.elf", "plan.tgrs", extra=["-icount", "shift=0"])
    joined = " ".join(cmd)
    assert "-M mps3-an547 -cpu cortex-m55" in joined
    assert "-semihosting-config enable=on,target=native,chardev=sh0 -chardev stdio,id=sh0" in joined
    assert "-no-reboot" in cmd and "-kernel fw.elf" in joined
    assert "-device loader,file=plan.tgrs,addr=0x60000000" in joined
    assert cmd[-2:] == ["-icount", "shift=0"]


def test_icount_shift_and_work_figure():
    assert icount_shift(["-icount", "shift=0"]) == 0
    assert icount_shift(["-d", "guest_errors", "-icount", "shift=5,align=off,sleep=off"]) == 5
    assert icount_shift(["-icount", "3"]) == 3
    assert icount_shift(["-icount", "shift=auto"]) is None and icount_shift([]) is None
    figure = work_figure(1_000_000, "32MHz-virtual", 0)
    assert figure["deterministic"] and figure["instructions_approx"] == 31_250_000  # 31.25 per tick
    assert work_figure(1024, "32MHz-virtual", 5)["instructions_approx"] == 1000  # 32 ns per instruction
    assert "not latency" in figure["note"] and "31,250,000 guest instructions" in describe_work(figure)
    host_time = work_figure(1_000_000, "32MHz-virtual", None)
    assert not host_time["deterministic"] and "instructions_approx" not in host_time
    assert "not repeatable" in describe_work(host_time)
    assert not work_figure(None, None, 0)["deterministic"]  # a firmware without the WORK line


def test_success_needs_exit_zero_and_the_marker(tmp_path):
    ok = run_qemu([fake(tmp_path, f"echo hello\necho '{END_MARKER}'\n")], tmp_path / "a.log", timeout=10)
    assert ok.ok and ok.exit_code == 0 and ok.marker_seen and ok.failure() == ""
    assert (tmp_path / "a.log").read_text() == f"hello\n{END_MARKER}\n"
    assert ok.to_dict()["ok"] is True and "transcript" not in ok.to_dict()

    reset = run_qemu([fake(tmp_path, "echo BENCH_START x\nexit 0\n")], tmp_path / "b.log", timeout=10)
    assert not reset.ok and "guest reset or early exit" in reset.failure()


def test_firmware_exit_codes_are_named(tmp_path):
    fault = run_qemu([fake(tmp_path, f"echo '{END_MARKER}'\nexit 3\n")], tmp_path / "c.log", timeout=10)
    assert not fault.ok and fault.failure() == "QEMU exited with status 3 (HardFault)"
    assert exit_meaning(7).startswith("runtime error") and exit_meaning(2).startswith("bad plan")
    assert "SIGABRT" in exit_meaning(-signal.SIGABRT) and "lockup" in exit_meaning(-signal.SIGABRT)
    assert exit_meaning(99) == "unknown exit status"


def test_timeout_kills_and_keeps_what_was_printed(tmp_path):
    start = time.monotonic()
    hung = run_qemu([fake(tmp_path, "echo started\nexec sleep 30\n")], tmp_path / "d.log", timeout=1)
    assert time.monotonic() - start < 10
    assert hung.timed_out and not hung.ok and hung.exit_code is None
    assert "did not finish within 1 s" in hung.failure()
    log = (tmp_path / "d.log").read_text()
    assert log.startswith("started\n") and "killed after 1 s timeout" in log


def test_stdin_is_not_the_terminal(tmp_path):
    result = run_qemu([fake(tmp_path, "if [ -t 0 ]; then echo tty; else echo notty; fi\necho '" + END_MARKER + "'\n")],
                      tmp_path / "e.log", timeout=10)
    assert result.transcript.startswith("notty")


def test_missing_binary(tmp_path):
    with pytest.raises(FileNotFoundError, match="cannot start"):
        run_qemu([str(tmp_path / "no-such-qemu")], tmp_path / "f.log", timeout=1)


def test_reference_on_the_same_plan_and_input(ds_cnn_plan):
    if not bundled_runtime_available():
        pytest.skip("tigris-ml has no bundled host runtime on this platform")
    doc = compute_reference(ds_cnn_plan, 0x9E3779B9)
    assert doc["runtime"] == {"source": "bundled", "version": "0.12.1"}
    info = read_plan(ds_cnn_plan)
    raw = generate_inputs(info.inputs)
    assert doc["inputs"][0]["fnv1a32"] == f"0x{fnv1a32(raw[0]):08x}"
    out = bytes.fromhex(doc["outputs"][0]["hex"])
    assert len(out) == 12 and len(set(out)) > 1
    assert doc["checksum"] == f"0x{fnv1a32(out):08x}"
    assert doc["host_memory"]["fast_peak_bytes"] == 16000
    assert compute_reference(ds_cnn_plan, 0x1234)["outputs"] != doc["outputs"]


def test_reference_ignores_a_user_host_library_override(ds_cnn_plan, monkeypatch, tmp_path):
    if not bundled_runtime_available():
        pytest.skip("tigris-ml has no bundled host runtime on this platform")
    monkeypatch.setenv("TIGRIS_HOST_LIBRARY", str(tmp_path / "not-a-library.so"))
    assert compute_reference(ds_cnn_plan, 0x9E3779B9)["runtime"]["source"] == "bundled"


def test_reference_fallback_needs_our_library(ds_cnn_plan, monkeypatch, tmp_path):
    import tigris_scons.reference as reference

    monkeypatch.setattr(reference, "bundled_runtime_available", lambda: False)
    with pytest.raises(TigrisError, match="no fallback host library"):
        compute_reference(ds_cnn_plan, 1)
    # our library built for this (under xdist another worker may not have built it yet: no "if it exists")
    doc = compute_reference(ds_cnn_plan, 0x9E3779B9, fallback_library=host_library())
    assert doc["runtime"]["source"].startswith("TIGRIS_HOST_LIBRARY=")


def test_reference_errors_are_one_line(tmp_path):
    bogus = tmp_path / "bogus.tgrs"
    bogus.write_bytes(b"TGRS" + b"\0" * 60)
    with pytest.raises(TigrisError, match="host reference failed"):
        compute_reference(bogus, 1)


def test_in_process_reference_matches_child(tiny_plan):
    if not bundled_runtime_available():
        pytest.skip("tigris-ml has no bundled host runtime on this platform")
    env_backup = os.environ.pop("TIGRIS_HOST_LIBRARY", None)
    try:
        assert reference_in_process(tiny_plan, 7)["outputs"] == compute_reference(tiny_plan, 7)["outputs"]
    finally:
        if env_backup is not None:
            os.environ["TIGRIS_HOST_LIBRARY"] = env_backup


def test_template_context_and_render(ds_cnn_plan):
    info = read_plan(ds_cnn_plan)
    params = FirmwareParams("ds_cnn", None, 4096, False, 0x9E3779B9, 16)
    ctx = template_context(params, info)
    assert ctx["fast_arena_bytes"] == 20480 and ctx["workspace_tensors"] == 14
    assert ctx["io_buffer_bytes"] == info.io_buffer_bytes == 490 + 12
    assert ctx["plan_window_bytes"] == 16 * 1024 * 1024
    text = render_main(REPO / "firmware_templates", ctx)
    assert "#define FW_FAST_ARENA_BYTES 20480u" in text
    assert "#define FW_INPUT_SEED 0x9E3779B9u" in text
    explicit = template_context(FirmwareParams("ds_cnn", 32768, 4096, True, 1, 16), info)
    assert explicit["fast_arena_bytes"] == 32768 and explicit["slow_in_ddr"] is True
    with pytest.raises(TigrisError, match="plan window"):
        template_context(FirmwareParams("x", None, 1, False, 1, 16, plan_window=1024), info)


def test_render_is_strict_about_missing_context(tmp_path):
    (tmp_path / "main.c.j2").write_text("{{ model_name }} {{ missing_key }}\n")
    with pytest.raises(TigrisError, match="missing_key"):
        render_main(tmp_path, {"model_name": "m"})
    with pytest.raises(TigrisError, match="does not exist"):
        render_main(tmp_path / "nowhere", {})
