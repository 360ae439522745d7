"""The two gates of a model build, whole: which rules each runs, in which order, against which
limits, and the document and table each leaves.

:mod:`checks` holds the single rules; this module composes them as the build applies them, so the
composition (the fast limit, the firmware's own checksum against the reference, the order of the
reasons, what each JSON report records) is unit-tested without SCons. The SCons actions only read
the inputs, call these functions and write what they return.

* static gate (``<m>.size.ok``, ``<m>.size-check.json``), before the firmware boots: ELF regions,
  flash, static on-chip SRAM and the static stack bound;
* final check (``<m>.check.ok``, ``<m>.check.json``), after the run: the static rows again, then
  the run log's own problems, the arenas and the stack high-water mark, the outputs against the
  host reference, the firmware's checksum, the log against the plan, and the work figure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .checks import (Verdict, apply_mode, check_log_consistency, check_outputs, check_runtime, check_stack,
                     check_static)
from .elfsize import SizeMap
from .qemu import describe_work, work_figure
from .report import render_table
from .runlog import RunLog


@dataclass
class Check:
    """One gate's verdict, the JSON document it writes and the title of its table."""

    verdict: Verdict
    document: dict[str, Any]
    title: str

    def conclude(self, mode: str) -> str:
        """Apply ``budget_mode`` (``error`` or ``warn``) and render the table; the document gets the
        verdict and the table, so the JSON always says what the console said. Returns the table."""
        apply_mode(self.verdict, mode)
        table = render_table(self.verdict, title=self.title)
        self.document["verdict"] = self.verdict.to_dict()
        self.document["table"] = table
        return table


def fast_limit(compile_budget: int | None, plan_budget: int, weight_reserve: int) -> tuple[int, int]:
    """The budget a run is held to and its fast-peak limit.

    The budget is the declared compile budget, else the plan's own (a ready ``.tgrs``); the limit
    adds the LZ4 weight reserve, the fast memory a plan compiled for that budget may use beyond it.
    """
    budget = compile_budget or plan_budget
    return budget, budget + weight_reserve


def check_checksum(verdict: Verdict, log: RunLog, reference: dict[str, Any]) -> None:
    """The FNV-1a the firmware computes over its outputs on the target (``OUTPUT checksum=``) must
    be the reference's: a second witness beside the byte comparison, computed by other code."""
    got = log.output_checksum()
    if got is not None and f"0x{got:08x}" != reference["checksum"]:
        verdict.errors.append(f"firmware checksum 0x{got:08x} differs from the reference {reference['checksum']}")


def static_gate(model: str, board: str | None, size: SizeMap, plan_path: str, plan_bytes: int,
                budgets: dict[str, Any], stack: dict[str, Any]) -> Check:
    """The gate an image passes before it boots: what the ELF and the plan occupy, against the
    budgets, and the static stack bound against its reservation (``stack`` is ``<m>.stack.json``)."""
    verdict = Verdict(model)
    check_static(verdict, size, plan_bytes, budgets, board)
    check_stack(verdict, stack["worst_bytes"], stack["reserved_bytes"], stack["auto"])
    document = {"schema": 1, "kind": "size-check", "board": board, "model": model, "elf": size.elf, "stack": stack,
                "plan": plan_path, "plan_bytes": plan_bytes, "budgets": budgets}
    return Check(verdict, document, f"tigris budget: {model}  ({size.elf}, plan {plan_path}, static)")


def final_check(model: str, board: str | None, log: RunLog, size: SizeMap, reference: dict[str, Any],
                stack: dict[str, Any], budgets: dict[str, Any], *, limit: int, plan_path: str, plan_bytes: int,
                plan_budget: int, plan_tensors: int, log_path: str, icount_shift: int | None,
                stage_memory: bool) -> Check:
    """The check after the run: everything the static gate holds, then the run itself.

    ``limit`` is :func:`fast_limit`'s; ``reference`` is ``<m>.ref.json``; ``icount_shift`` the
    run's ``-icount`` shift (None: the work figure follows host time and is not reported in the
    table). With ``stage_memory`` the firmware must have printed its ``STAGE_MEM`` lines.
    Correctness errors come first in the reason, budget failures after.
    """
    verdict = Verdict(model)
    verdict.errors.extend(f"run log: {problem}" for problem in log.problems)
    check_static(verdict, size, plan_bytes, budgets, board)
    check_stack(verdict, stack["worst_bytes"], stack["reserved_bytes"], stack["auto"])
    check_runtime(verdict, log, budgets, limit, stack["reserved_bytes"], stack["worst_bytes"])
    check_outputs(verdict, log, reference)
    check_checksum(verdict, log, reference)
    check_log_consistency(verdict, log, plan_budget, plan_tensors)
    work = work_figure(log.work_ticks(), log.work.get("clock"), icount_shift)
    if work["deterministic"]:
        verdict.notes.append(describe_work(work))
    if stage_memory and not log.stage_memory:
        verdict.errors.append("stage_memory=1 but the firmware printed no STAGE_MEM line")
    document = {"schema": 1, "kind": "check", "model": model, "board": board, "elf": size.elf, "work": work,
                "plan": plan_path, "plan_bytes": plan_bytes, "budgets": budgets, "run": log.to_dict(),
                "reference": {k: reference[k] for k in ("runtime", "checksum", "inputs", "seed")}, "log": log_path}
    return Check(verdict, document, f"tigris budget: {model}  ({size.elf}, run {log_path})")
