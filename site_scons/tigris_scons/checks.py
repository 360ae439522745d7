"""Budget comparison: measurements + declared budgets -> table rows and one-line reasons.

Pure functions of already-parsed inputs (size map, plan facts, run log, host reference), so each
rule is unit-tested without building anything. The SCons layer only decides when to call them
and turns a failing :class:`Verdict` into ``BuildError(errstr=verdict.reason)``.

Rules (issue 3, item 4):

* every ELF region within its declared budget and its physical size;
* firmware flash (load image) plus plan within the part's flash;
* static on-chip SRAM, and the firmware's reported ``total_sram``, within the part's SRAM;
* ``fast_peak`` within the fast arena and within the compile budget (plus LZ4 reserve);
* ``slow_used`` within the slow arena;
* the static worst-case stack (stackuse.py) within the ``.stack`` reservation, and the firmware's
  measured ``stack_peak`` within that static figure (a run deeper than the analysis is an error,
  never a budget matter);
* output bytes identical to the host reference, and not degenerate (all elements equal).
"""

from __future__ import annotations

import math
import struct
from dataclasses import asdict, dataclass, field
from typing import Any

from .elfsize import SizeMap
from .inputs import fnv1a32
from .runlog import RunLog
from .units import fmt_bytes, fmt_kib

OK, OVER, WARN, INFO = "ok", "OVER", "WARN", "-"


@dataclass
class Row:
    """One line of the budget table."""

    label: str
    used: int
    reserved: int = 0
    budget: int | None = None
    capacity: int | None = None
    status: str = OK
    over_by: int = 0
    note: str = ""
    group: str = "static"  # static | runtime | output

    @property
    def total(self) -> int:
        return self.used + self.reserved

    @property
    def limit(self) -> int | None:
        """What use/budget is measured against: the budget, else the physical size."""
        return self.budget if self.budget is not None else self.capacity


@dataclass
class Verdict:
    model: str
    rows: list[Row] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # correctness: never downgraded
    failures: list[str] = field(default_factory=list)  # budgets: warnings with budget_mode=warn
    notes: list[str] = field(default_factory=list)
    mode: str = "error"  # error | warn

    @property
    def ok(self) -> bool:
        return not self.errors and not self.failures

    @property
    def problems(self) -> list[str]:
        return self.errors + self.failures

    @property
    def reason(self) -> str:
        """The one-line reason for ``BuildError``: every problem, correctness first."""
        problems = self.problems
        if not problems:
            return ""
        head = f"{self.model}: {problems[0]}"
        more = len(problems) - 1
        return head + (f" (+{more} more: " + "; ".join(problems[1:]) + ")" if more else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "ok": self.ok,
            "mode": self.mode,
            "reason": self.reason,
            "errors": list(self.errors),
            "failures": list(self.failures),
            "notes": list(self.notes),
            "rows": [asdict(r) | {"total": r.total} for r in self.rows],
        }


def _limit_row(verdict: Verdict, row: Row, what: str) -> Row:
    """Set status of ``row`` against its budget and capacity; record a failure if over."""
    breaches = []
    if row.budget is not None and row.total > row.budget:
        breaches.append((row.total - row.budget, f"budget {fmt_kib(row.budget)}"))
    if row.capacity is not None and row.total > row.capacity:
        breaches.append((row.total - row.capacity, f"size {fmt_kib(row.capacity)}"))
    if breaches:
        over_by, against = max(breaches)
        row.status, row.over_by = OVER, over_by
        verdict.failures.append(
            f"{what} {fmt_bytes(row.total)} over {against} by {fmt_bytes(over_by)}"
            + (f" ({row.note})" if row.note else "")
        )
    elif row.budget is None and row.capacity is None:
        row.status = INFO
    verdict.rows.append(row)
    return row


def check_static(
    verdict: Verdict,
    size: SizeMap,
    plan_bytes: int,
    budgets: dict[str, Any],
    board: str | None = None,
) -> None:
    """Region, flash and static-SRAM rows from the ELF size map.

    A region budget for a region the board does not have (a declaration written for the AN547's
    DTCM, built for an MPS2 board) is named in a note rather than dropped silently; the part
    budgets (SRAM, flash) apply on every board.
    """
    region_budgets: dict[str, int] = budgets.get("regions") or {}
    absent = sorted(set(region_budgets) - set(size.regions))
    if absent:
        verdict.notes.append(f"region budgets not checked: {', '.join(absent)} "
                             f"{'is' if len(absent) == 1 else 'are'} not a region of {board or 'this board'}")
    for name, usage in size.regions.items():
        budget = region_budgets.get(name)
        if usage.total == 0 and budget is None:
            continue
        _limit_row(verdict, Row(name, usage.used, usage.reserved, budget, usage.length),
                   f"{name} region")
    for item in size.unattributed:
        verdict.errors.append(f"section outside the memory map: {item}")

    flash = budgets.get("flash")
    _limit_row(verdict, Row("flash", size.load_image + plan_bytes, 0, flash, None,
                            note=f"plan {fmt_bytes(plan_bytes)} + image {fmt_bytes(size.load_image)}"),
               "flash (plan + firmware image)")
    sram = budgets.get("sram")
    _limit_row(verdict, Row("SRAM static", size.on_chip_ram(), 0, sram, None,
                            note="on-chip .data/.bss + arenas + stack (ELF)"),
               "on-chip SRAM (static)")


def check_stack(verdict: Verdict, static_bytes: int | None, reserved: int, auto: bool) -> None:
    """The static worst-case stack against the ``.stack`` reservation (auto, or declared); no
    row without a static figure (self-test builds)."""
    if static_bytes is None:
        return
    _limit_row(verdict, Row("stack static", static_bytes, 0, None, reserved,
                            note=f"worst case of the linked code; stack {fmt_bytes(reserved)} "
                                 f"({'auto' if auto else 'declared'})"),
               "main stack (static worst case)")


def check_runtime(verdict: Verdict, log: RunLog, budgets: dict[str, Any], fast_limit: int | None,
                  stack_size: int | None = None, stack_static: int | None = None) -> None:
    """Arena rows from the firmware's ARENA line.

    ``fast_limit`` is the declared fast budget (compile budget + LZ4 weight reserve); the arena
    capacity the firmware reports is checked as well, so a fast arena sized by hand below the
    plan's need fails here with numbers rather than as a runtime error. ``stack_size`` (the
    ``.stack`` reservation) bounds the firmware's ``stack_peak`` when it reports one, and
    ``stack_static`` (the static worst case) must too: a deeper run means the analysis missed a
    path, which is an error whatever the budget mode.
    """
    arena = log.arena
    if not all(k in arena for k in ("fast_peak", "fast_cap", "slow_used", "slow_cap", "total_sram")):
        verdict.errors.append("run log has no complete ARENA line")
        return
    _limit_row(verdict, Row("fast peak", arena["fast_peak"], 0, fast_limit, arena["fast_cap"],
                            note=f"arena {fmt_bytes(arena['fast_cap'])}", group="runtime"),
               "fast arena peak")
    _limit_row(verdict, Row("slow used", arena["slow_used"], 0, None, arena["slow_cap"],
                            note=f"arena {fmt_bytes(arena['slow_cap'])}", group="runtime"),
               "slow arena use")
    _limit_row(verdict, Row("SRAM runtime", arena["total_sram"], 0, budgets.get("sram"), None,
                            note="fast peak + on-chip slow use (firmware)", group="runtime"),
               "on-chip SRAM (firmware total_sram)")
    if "stack_peak" in arena and stack_size:
        note = f"stack {fmt_bytes(stack_size)}" + (f", static {fmt_bytes(stack_static)}" if stack_static else "")
        _limit_row(verdict, Row("stack peak", arena["stack_peak"], 0, stack_static, stack_size, note=note,
                                group="runtime"),
                   "main stack high-water mark")
        if stack_static is not None and arena["stack_peak"] > stack_static:
            verdict.errors.append(f"the firmware measured a stack peak of {fmt_bytes(arena['stack_peak'])}, more than "
                                  f"the static worst case of {fmt_bytes(stack_static)}: the stack analysis missed a path")


_ELEMENT = {1: ("f", 4), 2: ("B", 1), 3: ("b", 1), 5: ("h", 2), 6: ("i", 4), 7: ("q", 8), 9: ("B", 1)}


def elements(data: bytes, dtype: int) -> list[float | int]:
    """Decode little-endian interface bytes into numbers (for mismatch summaries)."""
    code, size = _ELEMENT.get(dtype, ("B", 1))
    count = len(data) // size
    return list(struct.unpack(f"<{count}{code}", data[: count * size]))


def _f32(value: float) -> float:
    return struct.unpack("<f", struct.pack("<f", value))[0]


def _f32_bits(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def summarize_outputs(outputs: list[tuple[int, bytes]]) -> dict[str, Any]:
    """What the firmware's ``OUTPUT`` line says about ``(dtype, bytes)`` outputs in interface order.

    ``n``, ``checksum`` (FNV-1a over the concatenated bytes), ``min``, ``max``, ``nonmin`` as
    docs/firmware.md#printed-lines defines them: in the integer domain (no float32 output) plain
    ints; in the float domain every element is compared as a float32, NaN is skipped for
    min/max (all NaN: both 0x7fc00000), the first of equal values wins, and min/max are the
    IEEE-754 bit patterns. ``float_domain`` says which.
    """
    float_domain = any(dtype == 1 for dtype, _ in outputs)
    values: list[float | int] = []
    checksum = 0x811C9DC5
    for dtype, data in outputs:
        checksum = fnv1a32(data, checksum)
        values += elements(data, dtype)
    summary: dict[str, Any] = {"n": len(values), "checksum": checksum, "float_domain": float_domain}
    if not float_domain:
        low = min(values, default=0)
        return summary | {"min": low, "max": max(values, default=0), "nonmin": sum(v != low for v in values)}
    values = [_f32(float(v)) for v in values]
    numbers = [v for v in values if not math.isnan(v)]
    if numbers:
        low, high = min(numbers), max(numbers)  # min/max keep the first of equal values (-0.0, 0.0)
    else:
        low = high = math.nan if values else 0.0
    bits = (lambda v: 0x7FC00000 if math.isnan(v) else _f32_bits(v))
    return summary | {"min": bits(low), "max": bits(high), "nonmin": sum(not v == low for v in values)}


def firmware_name(name: str) -> str:
    """A tensor name as the firmware prints it: bytes outside '!'..'~' become '_', '' becomes '-'."""
    if not name:
        return "-"
    return "".join(chr(b) if 0x20 < b < 0x7F else "_" for b in name.encode("utf-8"))


@dataclass
class Comparison:
    """Output bytes of the firmware against the host reference."""

    equal: bool
    degenerate: bool
    mismatches: int = 0
    max_abs_diff: float = 0.0
    first_mismatch: str = ""
    detail: list[str] = field(default_factory=list)


def compare_outputs(
    log: RunLog,
    reference_outputs: list[dict[str, Any]],
) -> Comparison:
    """Compare ``OUTPUT_BYTES`` lines with the reference (list of {name, dtype, hex}).

    Equality is exact: the reference runs the same plan bytes on the same input with reference
    kernels, so any difference is a bug, not noise.
    """
    cmp = Comparison(equal=True, degenerate=False)
    all_values: list[float | int] = []
    for index, ref in enumerate(reference_outputs):
        expected = bytes.fromhex(ref["hex"])
        dtype = int(ref["dtype"])
        got = log.output_bytes.get(index)
        if got is None:
            cmp.equal = False
            cmp.detail.append(f"output {index} ({ref['name']}) missing from the run log")
            continue
        name, actual = got
        if name != firmware_name(ref["name"]):
            cmp.equal = False
            cmp.detail.append(f"output {index} is named {name!r} in the log, {ref['name']!r} in the plan")
        if len(actual) != len(expected):
            cmp.equal = False
            cmp.detail.append(f"output {index} ({ref['name']}) has {len(actual)} bytes, reference {len(expected)}")
            continue
        got_values, ref_values = elements(actual, dtype), elements(expected, dtype)
        all_values.extend(got_values)
        if actual != expected:
            cmp.equal = False
            diffs = [(i, g, r) for i, (g, r) in enumerate(zip(got_values, ref_values)) if g != r]
            cmp.mismatches += len(diffs)
            if diffs:
                cmp.max_abs_diff = max(cmp.max_abs_diff, max(abs(g - r) for _, g, r in diffs))
                i, g, r = diffs[0]
                if not cmp.first_mismatch:
                    cmp.first_mismatch = f"{ref['name']}[{i}] = {g}, reference {r}"
    if len(log.output_bytes) > len(reference_outputs):
        cmp.equal = False
        cmp.detail.append(f"run log has {len(log.output_bytes)} outputs, plan has {len(reference_outputs)}")
    if len(all_values) > 1 and len(set(all_values)) == 1:
        cmp.degenerate = True
    return cmp


def check_earlier_runs(verdict: Verdict, log: RunLog, reference: dict[str, Any]) -> None:
    """A stateful plan's inferences before the last (RUN_BYTES lines) against the reference's,
    one by one in the same order: each must be there and equal."""
    earlier = reference.get("earlier_runs", [])
    failed = False
    for run, outputs in enumerate(earlier):
        cmp = compare_outputs(RunLog(output_bytes=log.earlier_runs.get(run, {})), outputs)
        if not cmp.equal:
            failed = True
            summary = "; ".join(cmp.detail) if cmp.detail else (
                f"{cmp.mismatches} element(s) differ, first {cmp.first_mismatch}")
            verdict.errors.insert(0, f"inference {run + 1} of {len(earlier) + 1} differs from the host reference's: "
                                     f"{summary}")
    extra = sorted(set(log.earlier_runs) - set(range(len(earlier))))
    if extra:
        failed = True
        verdict.errors.append(f"the firmware printed inferences {extra} the reference did not run")
    if earlier:
        n = sum(len(bytes.fromhex(o["hex"])) for outputs in earlier for o in outputs)
        verdict.rows.append(Row("earlier runs", n, status=OVER if failed else OK, group="output",
                                note=f"{len(earlier)} inference(s) before the last, each equal to the host "
                                     f"reference's in the same order (state carried)" if not failed else
                                     "DIFFER from the host reference's"))


def check_outputs(verdict: Verdict, log: RunLog, reference: dict[str, Any]) -> Comparison:
    """Add the output row and its failures; ``reference`` is the reference JSON document."""
    check_earlier_runs(verdict, log, reference)
    cmp = compare_outputs(log, reference["outputs"])
    source = reference.get("runtime", {})
    who = f"{source.get('source', '?')} tigris-ml runtime {source.get('version', '?')}"
    n = sum(len(bytes.fromhex(o["hex"])) for o in reference["outputs"])
    if not cmp.equal:
        summary = "; ".join(cmp.detail) if cmp.detail else (
            f"{cmp.mismatches} element(s) differ, max |diff| {cmp.max_abs_diff:g}, first {cmp.first_mismatch}")
        verdict.errors.insert(0, f"output differs from the host reference ({who}): {summary}")
        status = OVER
    elif cmp.degenerate:
        verdict.errors.insert(0, "degenerate output: every output element has the same value")
        status = OVER
    else:
        status = OK
        _check_output_line(verdict, log, reference["outputs"])
    verdict.rows.append(Row("output", n, status=status, group="output",
                            note=("equal to" if cmp.equal else "DIFFERS from") + f" host reference ({who})"
                            + ("; degenerate" if cmp.degenerate else "")))
    return cmp


def _check_output_line(verdict: Verdict, log: RunLog, reference_outputs: list[dict[str, Any]]) -> None:
    """The firmware's ``OUTPUT`` summary (n, min, max, nonmin) must describe the bytes it printed."""
    expected = summarize_outputs([(int(o["dtype"]), bytes.fromhex(o["hex"])) for o in reference_outputs])
    wrong = []
    for key in ("n", "min", "max", "nonmin"):
        if key not in log.output:
            continue  # reported by the run-log parser
        try:
            same = int(log.output[key], 0) == expected[key]
        except ValueError:
            same = False
        if not same:
            wrong.append(f"{key}={log.output[key]} (the output bytes give {expected[key]})")
    if wrong:
        verdict.errors.append("firmware OUTPUT line disagrees with its output bytes: " + ", ".join(wrong))


def check_log_consistency(verdict: Verdict, log: RunLog, plan_budget: int, expected_tensors: int) -> None:
    """Cross-check the firmware's self-report against the plan and its own output bytes."""
    if log.plan_budget is not None and log.plan_budget != plan_budget:
        verdict.errors.append(f"firmware reports plan budget {log.plan_budget}, plan header says {plan_budget}")
    if log.tensors is not None and log.tensors != expected_tensors:
        verdict.errors.append(f"firmware reports {log.tensors} tensors, plan header says {expected_tensors}")


def apply_mode(verdict: Verdict, mode: str) -> Verdict:
    """``budget_mode=warn``: keep the table, turn budget failures into notes.

    Correctness errors (output mismatch, degenerate output, inconsistent log) still fail: a
    budget can be waived while a design is explored, a wrong answer cannot.
    """
    verdict.mode = mode
    if mode == "warn" and verdict.failures:
        verdict.notes.extend(f"WARNING (budget_mode=warn): {f}" for f in verdict.failures)
        for row in verdict.rows:
            if row.status == OVER and row.group != "output":
                row.status = WARN
        verdict.failures = []
    return verdict
