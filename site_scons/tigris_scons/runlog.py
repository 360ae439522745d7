"""Parse the lines the firmware prints on QEMU (contract: docs/firmware.md#printed-lines).

A successful run prints, in this order (keys may be appended at the end of a line, never
changed or removed)::

    BENCH_START <model name> @ Cortex-M55 (QEMU mps3-an547)
    Ops: <n>  Stages: <n>  Tensors: <n>  Budget: <plan budget> bytes
    OUTPUT n=<elements> checksum=<fnv1a32, unsigned decimal> min=<v> max=<v> nonmin=<count>
    ARENA fast_peak=<b> slow_used=<b> total_sram=<b> bytes (fast_cap=<b> slow_cap=<b>) slow_end=<b> stack_peak=<b>
    WORK systick_ticks=<n> clock=32MHz-virtual    (optional: firmwares before it lack the line)
    PROFILE op=<i> type=<Op> ticks=<n> macs=<n>  (profile=1 only: one per op, then
    PROFILE unit=<stage> ticks=<n>                  one per execution unit that ran)
    STAGE_MEM stage=<s> fast=<b> slow=<b> unit=<first stage of its unit>   (stage_memory=1 only:
                                              one per stage that ran, in stage order)
    OUTPUT_BYTES <index> <name> <hex>         (one per output)
    BENCH_END status=ok

A plan with state variables runs several inferences in a row; each before the last prints,
before the OUTPUT line, ``RUN index=<k> checksum=<fnv1a32>`` and ``RUN_BYTES <k> <index> <name>
<hex>`` per output (the other lines describe the last inference).

``STAGE_MEM`` (runtime built with ``TGR_STAGE_MEMORY=1``, see ``tgr_stage_memory`` in
runtime/include/tgr.h): for each stage of the measured inference, the high-water marks of the
fast and slow arenas (bytes from the arena start, allocations rounded to ``TGR_TENSOR_ALIGN``)
during the execution unit that ran it; the stages of a chain run as one unit and share its
figures (``unit`` = the chain head). Comparable with the plan's per-unit fast need and equal to
the host reference trace's per-unit maxima with alignment 32 (reference.stage_memory_reference).

The parser is tolerant of noise (QEMU warnings, carriage returns, extra keys) so that harmless
additions never break the build, and strict about what the checks rely on: a missing or
malformed required line is reported by name instead of being read as zero.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .inputs import fnv1a32

_START = re.compile(r"^BENCH_START (?P<model>\S.*?) @ (?P<target>.+)$")
_SHAPE = re.compile(r"^Ops:\s*(?P<ops>\d+)\s+Stages:\s*(?P<stages>\d+)\s+Tensors:\s*(?P<tensors>\d+)"
                    r"\s+Budget:\s*(?P<budget>\d+) bytes")
_OUTPUT_BYTES = re.compile(r"^OUTPUT_BYTES (?P<index>\d+) (?P<name>\S+)(?: (?P<hex>[0-9a-fA-F]*|-))?\s*$")
_RUN_BYTES = re.compile(r"^RUN_BYTES (?P<run>\d+) (?P<index>\d+) (?P<name>\S+)(?: (?P<hex>[0-9a-fA-F]*|-))?\s*$")
_FAILURE_PREFIXES = ("ERROR", "HARDFAULT", "UNEXPECTED_EXCEPTION")
_KV = re.compile(r"(\w+)=([^\s()]+)")
_END = re.compile(r"^BENCH_END(?P<rest>.*)$")


def _kv(text: str) -> dict[str, str]:
    return dict(_KV.findall(text))


def _int(value: str) -> int:
    return int(value, 0)


@dataclass
class RunLog:
    """What the firmware reported; ``problems`` lists every missing or malformed line."""

    model: str | None = None
    target: str | None = None
    ops: int | None = None
    stages: int | None = None
    tensors: int | None = None
    plan_budget: int | None = None
    output: dict[str, str] = field(default_factory=dict)  # n, checksum, min, max, nonmin, ...
    arena: dict[str, int] = field(default_factory=dict)  # fast_peak, slow_used, total_sram, caps
    output_bytes: dict[int, tuple[str, bytes]] = field(default_factory=dict)
    earlier_runs: dict[int, dict[int, tuple[str, bytes]]] = field(default_factory=dict)  # RUN_BYTES by run
    run_checksums: dict[int, int] = field(default_factory=dict)  # RUN index -> checksum
    work: dict[str, str] = field(default_factory=dict)  # systick_ticks, clock (WORK line)
    profile_ops: list[dict[str, Any]] = field(default_factory=list)  # op, type, ticks, macs (PROFILE op=)
    profile_units: dict[int, int] = field(default_factory=dict)  # stage -> ticks (PROFILE unit=)
    stage_memory: list[dict[str, int]] = field(default_factory=list)  # stage, fast, slow, unit (STAGE_MEM)
    end_status: str | None = None
    end: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.end_status == "ok" and not self.problems

    def output_checksum(self) -> int | None:
        value = self.output.get("checksum")
        return _int(value) if value is not None else None

    def work_ticks(self) -> int | None:
        """SysTick ticks of one inference (the WORK line), or None when the firmware printed none."""
        value = self.work.get("systick_ticks")
        return _int(value) if value is not None else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "target": self.target,
            "ops": self.ops,
            "stages": self.stages,
            "tensors": self.tensors,
            "plan_budget": self.plan_budget,
            "output": dict(self.output),
            "arena": dict(self.arena),
            "output_bytes": {str(i): {"name": n, "hex": b.hex()} for i, (n, b) in sorted(self.output_bytes.items())},
            **({"earlier_runs": {str(r): {str(i): {"name": n, "hex": b.hex()} for i, (n, b) in sorted(outs.items())}
                                 for r, outs in sorted(self.earlier_runs.items())}} if self.earlier_runs else {}),
            "work": dict(self.work),
            **({"profile": {"ops": list(self.profile_ops),
                            "units": {str(k): v for k, v in sorted(self.profile_units.items())}}}
               if self.profile_ops or self.profile_units else {}),
            **({"stage_memory": [dict(row) for row in self.stage_memory]} if self.stage_memory else {}),
            "end_status": self.end_status,
            "problems": list(self.problems),
        }


REQUIRED_ARENA_KEYS = ("fast_peak", "slow_used", "total_sram", "fast_cap", "slow_cap")


def parse_run_log(text: str) -> RunLog:
    """Parse a run log; never raises on bad input, reports it in ``problems`` instead."""
    log = RunLog()
    seen: set[str] = set()
    for raw in text.splitlines():
        line = raw.strip().strip("\r")
        if not line:
            continue
        if m := _START.match(line):
            if "BENCH_START" in seen:
                log.problems.append("BENCH_START printed more than once (the guest reset)")
            log.model, log.target = m["model"], m["target"]
            seen.add("BENCH_START")
        elif line.startswith("Ops:"):
            if m := _SHAPE.match(line):
                log.ops, log.stages = int(m["ops"]), int(m["stages"])
                log.tensors, log.plan_budget = int(m["tensors"]), int(m["budget"])
                seen.add("Ops")
            else:
                log.problems.append(f"malformed line: {line!r}")
        elif line.startswith("RUN_BYTES"):
            if (m := _RUN_BYTES.match(line)) and len(hex_text := "" if m["hex"] in (None, "-") else m["hex"]) % 2 == 0:
                log.earlier_runs.setdefault(int(m["run"]), {})[int(m["index"])] = (m["name"], bytes.fromhex(hex_text))
            else:
                log.problems.append(f"malformed line: {line[:80]!r}")
        elif line.startswith("RUN "):
            values = _kv(line)
            try:
                log.run_checksums[_int(values["index"])] = _int(values["checksum"])
            except (KeyError, ValueError):
                log.problems.append(f"malformed line: {line!r}")
        elif line.startswith("OUTPUT_BYTES"):
            if m := _OUTPUT_BYTES.match(line):
                hex_text = "" if m["hex"] in (None, "-") else m["hex"]
                if len(hex_text) % 2:
                    log.problems.append(f"odd number of hex digits in OUTPUT_BYTES {m['index']}")
                    continue
                log.output_bytes[int(m["index"])] = (m["name"], bytes.fromhex(hex_text))
            else:
                log.problems.append(f"malformed line: {line[:80]!r}")
        elif line.startswith("OUTPUT "):
            log.output = _kv(line[len("OUTPUT "):])
            seen.add("OUTPUT")
        elif line.startswith("ARENA "):
            values = _kv(line)
            try:
                log.arena = {k: _int(v) for k, v in values.items()}
            except ValueError:
                log.problems.append(f"malformed line: {line!r}")
                continue
            missing = [k for k in REQUIRED_ARENA_KEYS if k not in log.arena]
            if missing:
                log.problems.append(f"ARENA line lacks {', '.join(missing)}")
            seen.add("ARENA")
        elif line.startswith("WORK "):
            log.work = _kv(line)
            try:
                _int(log.work["systick_ticks"])
            except (KeyError, ValueError):
                log.problems.append(f"malformed line: {line!r}")
                log.work = {}
        elif line.startswith("PROFILE "):
            values = _kv(line)
            try:
                if "op" in values:
                    log.profile_ops.append({"op": _int(values["op"]), "type": values["type"],
                                            "ticks": _int(values["ticks"]), "macs": _int(values["macs"])})
                else:
                    log.profile_units[_int(values["unit"])] = _int(values["ticks"])
            except (KeyError, ValueError):
                log.problems.append(f"malformed line: {line!r}")
        elif line.startswith("STAGE_MEM"):
            values = _kv(line)
            try:
                if line.split(None, 1)[0] != "STAGE_MEM":
                    raise ValueError(line)
                row = {key: _int(values[key]) for key in ("stage", "fast", "slow")}
                row["unit"] = _int(values.get("unit", values["stage"]))
                if min(row.values()) < 0 or row["unit"] > row["stage"]:  # a unit starts at or before its stages
                    raise ValueError(line)
            except (KeyError, ValueError):
                log.problems.append(f"malformed line: {line[:80]!r}")
                continue
            if any(earlier["stage"] == row["stage"] for earlier in log.stage_memory):
                log.problems.append(f"STAGE_MEM stage={row['stage']} printed more than once")
                continue
            log.stage_memory.append(row)
        elif line.startswith(_FAILURE_PREFIXES):
            log.problems.append(f"firmware reported: {line[:200]}")
        elif m := _END.match(line):
            log.end = _kv(m["rest"])
            log.end_status = log.end.get("status", "")
    for marker in ("BENCH_START", "Ops", "OUTPUT", "ARENA"):
        if marker not in seen:
            log.problems.append(f"no {marker} line")
    if log.output:
        for key in ("n", "checksum", "min", "max", "nonmin"):
            if key not in log.output:
                log.problems.append(f"OUTPUT line lacks {key}=")
        checksum = log.output.get("checksum")
        if checksum is not None and log.output_bytes:
            data = b"".join(b for _, (_, b) in sorted(log.output_bytes.items()))
            try:
                if int(checksum, 0) != fnv1a32(data):
                    log.problems.append(f"OUTPUT checksum {checksum} does not match the OUTPUT_BYTES lines "
                                        f"(0x{fnv1a32(data):08x})")
            except ValueError:
                log.problems.append(f"OUTPUT checksum {checksum!r} is not a number")
    for run, checksum in sorted(log.run_checksums.items()):
        data = b"".join(b for _, (_, b) in sorted(log.earlier_runs.get(run, {}).items()))
        if checksum != fnv1a32(data):
            log.problems.append(f"RUN {run} checksum {checksum} does not match its RUN_BYTES lines (0x{fnv1a32(data):08x})")
    if log.end_status is None:
        log.problems.append("no BENCH_END line (the firmware did not finish)")
    elif log.end_status != "ok":
        log.problems.append(f"firmware reported BENCH_END status={log.end_status}")
    return log
