"""Run firmware on QEMU ``mps3-an547`` with a timeout, capturing everything to a log.

Why it is shaped like this (docs/firmware.md#running-on-qemu):

* semihosting goes to a ``stdio`` chardev so the firmware's lines arrive on QEMU's stdout, in
  order, and stdin is ``/dev/null`` so QEMU never switches the user's terminal to raw mode;
* the plan is placed at 0x60000000 with ``-device loader`` and read in place by the firmware;
* ``-no-reboot`` turns a guest reset into an immediate exit, and because that exit status is 0,
  success also requires the ``BENCH_END status=ok`` marker: a reset never looks like success;
* a hung guest is killed after ``timeout`` seconds; QEMU stays in the caller's process group so
  Ctrl-C reaches it directly;
* the whole transcript is returned as one string so the caller prints it with one write and
  parallel builds never interleave it.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .an547 import PLAN_LOAD_ADDRESS
from .runlog import RunLog

END_MARKER = "BENCH_END status=ok"

#: ``icount=1``: virtual time advances 2^0 ns per guest instruction, so SysTick readings repeat
#: exactly from run to run (docs/firmware.md#work-counter).
ICOUNT_FLAGS = ["-icount", "shift=0"]
#: SysTick on the processor clock of QEMU's mps3-an547 CPU: 32 MHz of virtual time (the MPS2
#: boards: 25 MHz, the AN505 20 MHz); the firmware names its clock in the WORK line.
SYSTICK_HZ = 32_000_000
WORK_NOTE = "a count of work, not latency: QEMU does not model the core's timing"
_CLOCK = re.compile(r"^(?P<mhz>[0-9]+)MHz-virtual$")


def clock_hz(clock: str | None) -> int:
    """The SysTick frequency a WORK line names (``25MHz-virtual``); 32 MHz when it names none."""
    match = _CLOCK.match(clock or "")
    return int(match["mhz"]) * 1_000_000 if match else SYSTICK_HZ

#: Firmware exit codes (docs/firmware.md#exit-codes) and the QEMU ones worth naming.
EXIT_MEANINGS = {
    0: "ok",
    1: "QEMU error (bad command line, loader overlap) or plain SYS_EXIT failure",
    2: "bad plan, or arena/workspace/io buffer too small",
    3: "HardFault",
    4: "unexpected exception or interrupt",
    7: "runtime error from tgr_session_init/tgr_run",
    124: "timeout",
    134: "QEMU abort: CPU lockup",
}


def exit_meaning(code: int | None) -> str:
    if code is None:
        return "no exit status"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        extra = " (QEMU aborted: CPU lockup?)" if -code == signal.SIGABRT else ""
        return f"killed by {name}{extra}"
    return EXIT_MEANINGS.get(code, "unknown exit status")


def qemu_command(
    qemu: str,
    elf: str | Path,
    plan: str | Path | None,
    *,
    machine: str = "mps3-an547",
    cpu: str = "cortex-m55",
    plan_address: int = PLAN_LOAD_ADDRESS,
    extra: list[str] | None = None,
) -> list[str]:
    """The QEMU command line for one firmware run (``boards.Board`` gives machine, cpu and where
    the plan goes)."""
    cmd = [
        qemu, "-M", machine, "-cpu", cpu, "-nographic", "-monitor", "none", "-serial", "none",
        "-semihosting-config", "enable=on,target=native,chardev=sh0", "-chardev", "stdio,id=sh0",
        "-no-reboot", "-kernel", str(elf),
    ]
    if plan is not None:
        cmd += ["-device", f"loader,file={plan},addr=0x{plan_address:08x}"]
    return cmd + list(extra or [])


def icount_shift(flags: list[str]) -> int | None:
    """The ``-icount`` shift in QEMU arguments; None without ``-icount`` or with ``shift=auto``."""
    for flag, value in zip(flags, flags[1:]):
        if flag in ("-icount", "--icount"):
            first = value.split(",")[0]
            first = first[len("shift="):] if first.startswith("shift=") else first
            return int(first) if first.isdigit() else None
    return None


def with_icount(flags: list[str], on: bool) -> list[str]:
    """QEMU's extra arguments with :data:`ICOUNT_FLAGS` added when ``on``, unless the user's own
    flags already choose an ``-icount`` shift (theirs wins)."""
    return flags + ICOUNT_FLAGS if on and icount_shift(flags) is None else list(flags)


def work_figure(ticks: int | None, clock: str | None, shift: int | None) -> dict[str, Any]:
    """The firmware's WORK reading for ``run.json``.

    Under ``-icount shift=N`` virtual time is instructions x 2^N ns and SysTick ticks every
    1/f (1/32 MHz = 31.25 ns on the AN547), so one tick is 1e9 / f / 2^N guest instructions and
    the figure repeats exactly; without ``-icount`` it follows host time and is not comparable
    between runs.
    """
    figure: dict[str, Any] = {"systick_ticks": ticks, "clock": clock, "icount_shift": shift,
                              "deterministic": shift is not None and ticks is not None, "note": WORK_NOTE}
    if figure["deterministic"]:
        figure["instructions_approx"] = round(ticks * 1e9 / clock_hz(clock) / 2**shift)
    return figure


def describe_work(figure: dict[str, Any]) -> str:
    """One line for the budget table, e.g. ``work: 1,234 SysTick ticks @ 32MHz-virtual ...``."""
    text = f"work: {figure['systick_ticks']:,} SysTick ticks @ {figure['clock']}"
    if figure.get("instructions_approx") is not None:
        text += f" ~ {figure['instructions_approx']:,} guest instructions (-icount shift={figure['icount_shift']})"
    else:
        text += " (no -icount: follows host time, not repeatable)"
    return f"{text}; {figure['note']}"


@dataclass
class QemuResult:
    command: list[str]
    exit_code: int | None
    timed_out: bool
    seconds: float
    timeout: float
    marker_seen: bool
    transcript: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.marker_seen

    def failure(self) -> str:
        """One-line explanation of why the run does not count as a success ('' if it does)."""
        if self.timed_out:
            return f"QEMU did not finish within {self.timeout:g} s (killed; raise qemu_timeout= if the model is slow)"
        if self.exit_code != 0:
            return f"QEMU exited with status {self.exit_code} ({exit_meaning(self.exit_code)})"
        if not self.marker_seen:
            return (f"QEMU exited with status 0 but the firmware never printed '{END_MARKER}' "
                    "(guest reset or early exit)")
        return ""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("transcript")
        data["command_line"] = shlex.join(self.command)
        data["meaning"] = exit_meaning(self.exit_code) if not self.timed_out else "timeout"
        data["ok"] = self.ok
        return data


def run_document(result: QemuResult, log: RunLog, *, model: str, started: float, finished: float, log_path: str,
                 shift: int | None) -> dict[str, Any]:
    """``<m>.run.json``: how QEMU ended, the work figure, and the ``PROFILE`` and ``STAGE_MEM``
    readings when the firmware printed them (``profile=1``, ``stage_memory=1``)."""
    document = result.to_dict() | {"schema": 1, "model": model, "started": started, "finished": finished,
                                   "log": log_path,
                                   "work": work_figure(log.work_ticks(), log.work.get("clock"), shift)}
    logged = log.to_dict()
    document.update({key: logged[key] for key in ("profile", "stage_memory") if key in logged})
    return document


def run_failure(model: str, result: QemuResult, log_path: str) -> str:
    """Why a run failed, with the firmware's last error line when it printed one."""
    errors = [line.strip() for line in result.transcript.splitlines()
              if line.startswith(("ERROR", "HARDFAULT", "UNEXPECTED_EXCEPTION"))]
    hint = f"; firmware said: {errors[-1]}" if errors else ""
    return f"{model}: {result.failure()}{hint} (log: {log_path})"


def console_transcript(transcript: str, width: int = 160) -> str:
    """The transcript as the console shows it: ``OUTPUT_BYTES`` lines longer than ``width`` are
    cut, with their length and a pointer to the log (which keeps them whole)."""
    rows = []
    for line in transcript.splitlines():
        if line.startswith("OUTPUT_BYTES") and len(line) > width:
            line = line[:width] + f"... ({len(line)} chars, see the run log)"
        rows.append(line)
    return "\n".join(rows)


def run_qemu(command: list[str], log_path: str | Path, *, timeout: float) -> QemuResult:
    """Run ``command``; write stdout+stderr to ``log_path`` as it arrives; kill at ``timeout``.

    The log is written incrementally so an interrupted or killed run still leaves what the
    firmware printed. ``KeyboardInterrupt`` terminates QEMU before propagating.
    """
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    chunks: list[str] = []
    timed_out = threading.Event()
    try:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
    except OSError as exc:
        raise FileNotFoundError(f"cannot start {command[0]}: {exc.strerror}") from None

    def on_timeout() -> None:
        timed_out.set()
        try:
            proc.kill()
        except OSError:
            pass

    timer = threading.Timer(timeout, on_timeout)
    timer.daemon = True
    timer.start()
    try:
        assert proc.stdout is not None
        with log_path.open("w", encoding="utf-8", errors="replace") as log:
            for raw in iter(proc.stdout.readline, b""):
                text = raw.decode("utf-8", errors="replace")
                chunks.append(text)
                log.write(text)
                log.flush()
            code = proc.wait()
            if timed_out.is_set():
                log.write(f"\n[tigris] QEMU killed after {timeout:g} s timeout\n")
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        timer.cancel()
        if proc.stdout is not None:
            proc.stdout.close()
    transcript = "".join(chunks)
    marker = any(line.strip() == END_MARKER or line.strip().startswith(END_MARKER + " ")
                 for line in transcript.splitlines())
    return QemuResult(command, None if timed_out.is_set() else code, timed_out.is_set(),
                      round(time.monotonic() - start, 3), timeout, marker, transcript)


def which_qemu(name: str = "qemu-system-arm") -> str | None:
    """Path of the QEMU binary (honours an absolute path), or None."""
    if os.path.sep in name:
        return name if os.access(name, os.X_OK) else None
    from shutil import which

    return which(name)
