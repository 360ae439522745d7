"""``fit``: one row per budget of the sweep, the Pareto front, the table and which parts fit.

A row is read from the files the point's ordinary build wrote (plan, size map, stack analysis,
firmware context, check report), so a sweep row and a single ``scons model=X budget=B run`` at
the same budget show the same figures by construction. A point that did not get that far
(refused, did not link, crashed on QEMU, output differs) is a row with its reason.

On-chip SRAM is the ELF's static figure (``.data``/``.bss`` + arenas + stack on on-chip
regions): what the part must have, not what one run touched. Work is guest instructions per
inference under ``-icount shift=0``: repeatable, a count of work, not a latency.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .boards import Board, board_for_core
from .units import fmt_bytes

#: The reason of a point SCons never got to: without ``-k`` the build stops at the first failure.
NOT_BUILT = "not built: the build stopped at another failure (fit needs -k)"
ROW_KEYS = ("budget", "stages", "fast_peak", "slow_peak", "stack", "sram_static", "fast_arena", "flash",
            "plan_bytes", "image_bytes", "instructions", "output", "ok", "reason")


def _read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def point_row(budget: int, stages: int, plan_bytes: int, check: dict[str, Any], size: dict[str, Any],
              stack: dict[str, Any], firmware: dict[str, Any]) -> dict[str, Any]:
    """The row of a point whose check ran (``check`` is its ``<m>.check.json``)."""
    arena = check["run"].get("arena", {})
    verdict = check["verdict"]
    output = next((r for r in verdict["rows"] if r["label"] == "output"), None)
    matched = output is not None and output["status"] == "ok"
    breaches = [r["label"] for r in verdict["rows"] if r["status"] == "WARN"]
    return {
        "budget": budget, "stages": stages,
        "fast_peak": arena.get("fast_peak"), "slow_peak": arena.get("slow_used"),
        "stack": stack["reserved_bytes"], "stack_peak": arena.get("stack_peak"),
        "sram_static": size["on_chip_ram"], "fast_arena": firmware["fast_arena_bytes"],
        "flash": plan_bytes + size["load_image"], "plan_bytes": plan_bytes, "image_bytes": size["load_image"],
        "instructions": check["work"].get("instructions_approx"),
        "output": "match" if matched else "differs",
        "ok": bool(verdict["ok"]) and matched,
        "reason": ("over budget: " + ", ".join(breaches) if breaches else "") if verdict["ok"] else verdict["reason"],
    }


def read_point(folder: Path, name: str, budget: int, stages: int) -> dict[str, Any]:
    """The row of the point built in ``folder`` (files named ``<name>.*``)."""
    plan_bytes = (folder / f"{name}.tgrs").stat().st_size
    return point_row(budget, stages, plan_bytes, _read(folder / f"{name}.check.json"),
                     _read(folder / f"{name}.size.json"), _read(folder / f"{name}.stack.json"),
                     _read(folder / "firmware.json"))


def failed_row(budget: int, stages: int, reason: str) -> dict[str, Any]:
    """A point that did not build, run or check: the row carries the reason, no figures."""
    row = dict.fromkeys(ROW_KEYS)
    row.update(budget=budget, stages=stages, output="-", ok=False, reason=reason)
    return row


def rows_after_failures(points: Sequence[tuple[int, int, str]], built: Sequence[dict[str, Any] | None],
                        failures: Sequence[tuple[Sequence[str], str]]) -> list[dict[str, Any]]:
    """The rows of a sweep whose build failed somewhere, for the report written at exit.

    ``points`` are ``(budget, stages, folder)`` with the folder ending in a separator, ``built``
    the row each point wrote (None: none), ``failures`` the paths each failure names and its
    reason. A point with a failure under its folder is a row with that reason; one with a row and
    no failure is that row; any other was never built.
    """
    rows = []
    for (budget, stages, folder), row in zip(points, built, strict=True):
        reason = next((why for paths, why in failures if any(p.startswith(folder) for p in paths)), None)
        rows.append(row if reason is None and row is not None else failed_row(budget, stages, reason or NOT_BUILT))
    return rows


def extra_boards(cores: Iterable[str], board: Board, wanted: str = "all") -> list[Board]:
    """The boards a sweep also runs on so that every catalog part's core has its own work figure:
    one per core among ``cores`` other than ``board``'s that some QEMU board emulates, in a stable
    order. A core no board emulates gets none (its part lines say so). ``wanted`` (``fit_cores=``)
    is ``all`` or a comma list of cores to measure; the others' part lines show no work."""
    chosen = set(cores) if wanted.strip().lower() == "all" else {c.strip() for c in wanted.split(",")} & set(cores)
    found = {b.machine: b for b in (board_for_core(c) for c in sorted(chosen) if c != board.core) if b}
    return [found[m] for m in sorted(found)]


def report(model: str, board: str, rows: list[dict[str, Any]], parts: list[dict[str, Any]],
           picture: str, cores: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """``<m>.fit.json``: the rows (marked by :func:`mark_front`), the part lines, the picture, the
    rows measured on the other cores' boards (``cores``: core -> board and rows) and the table
    the console prints (``<m>.fit.txt``)."""
    cores = cores or {}
    return {"schema": 2, "kind": "fit", "model": model, "board": board, "rows": rows, "parts": parts,
            "cores": cores, "table": render_table(model, board, rows, parts, picture, cores), "picture": picture}


def mark_front(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Set ``pareto`` (no other good point has both less or equal on-chip SRAM and less or equal
    work, one of them strictly less) and ``smallest`` (least on-chip SRAM that runs and matches)."""
    good = [r for r in rows if r["ok"] and r["instructions"] is not None]
    for row in rows:
        row["pareto"] = row in good and not any(
            o["sram_static"] <= row["sram_static"] and o["instructions"] <= row["instructions"]
            and (o["sram_static"], o["instructions"]) != (row["sram_static"], row["instructions"]) for o in good)
        row["smallest"] = False
    if good:
        min(good, key=lambda r: (r["sram_static"], r["instructions"]))["smallest"] = True
    return rows


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def render_table(model: str, board: str, rows: list[dict[str, Any]], parts: list[dict[str, Any]],
                 picture: str | None = None, cores: dict[str, dict[str, Any]] | None = None) -> str:
    """The sweep as text: one row per point, the marks, then one line per catalog part."""
    head = ("budget B", "stages", "fast peak", "slow peak", "stack", "SRAM static", "flash", "instr/inference",
            "output", "")
    body = []
    for r in rows:
        mark = ("*" if r.get("pareto") else "") + ("<" if r.get("smallest") else "")
        body.append((_cell(r["budget"]), _cell(r["stages"]), _cell(r["fast_peak"]), _cell(r["slow_peak"]),
                     _cell(r["stack"]), _cell(r["sram_static"]), _cell(r["flash"]), _cell(r["instructions"]),
                     r["output"] if r["ok"] or r["output"] == "differs" else "failed",
                     mark + (" " if mark and r["reason"] else "") + (r["reason"] or "")))
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    lines = [f"tigris fit: {model} on {board} ({len(rows)} budgets, one per stage count; work under icount=1)"]
    for cells in (head, *body):
        lines.append("  ".join(c.rjust(w) if i < 8 else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))
                     .rstrip())
    lines.append("* Pareto front (on-chip SRAM against instructions), < smallest on-chip SRAM that runs and "
                 "matches; SRAM static = .data/.bss + arenas + stack on on-chip regions (ELF); flash = plan + image")
    for core, measured in (cores or {}).items():
        figures = ", ".join(f"{_cell(r['budget'])} B: {_cell(r['instructions']) if r['ok'] else 'failed'}"
                            for r in measured["rows"])
        lines.append(f"work on {core} ({measured['board']}), instr/inference per budget: {figures}")
    if parts:
        lines.append("parts (catalog): fits = the point with the least work on the part's own core whose SRAM, "
                     "largest block and flash fit the part")
        for p in parts:
            if not p["fits"]:
                lines.append(f"  {p['name']:<16} {p['core']:<11} does not fit: {p['reason']}")
            elif p.get("measured_on"):
                lines.append(f"  {p['name']:<16} {p['core']:<11} fits at budget {p['budget']:,} B "
                             f"({_cell(p['instructions'])} instructions on {p['measured_on']})")
            else:
                why = (f"no QEMU board emulates {p['core']}" if board_for_core(p["core"]) is None
                       else f"fit_cores= leaves {p['core']} out")
                lines.append(f"  {p['name']:<16} {p['core']:<11} fits at budget {p['budget']:,} B (sizes from "
                             f"{p['sizes_from']}; {why}: work not measured)")
    if picture:
        lines.append(f"picture: {picture}")
    ok = sum(1 for r in rows if r["ok"])
    lines.append(f"result: {ok} of {len(rows)} points ran and matched the reference")
    return "\n".join(lines) + "\n"


def progress_line(model: str, index: int, count: int, row: dict[str, Any]) -> str:
    """The line printed as each point finishes (``model`` names the board too off the sweep's)."""
    if not row["ok"]:
        return f"FIT {model} [{index}/{count}] budget {row['budget']:,} B, {row['stages']} stages: {row['reason']}\n"
    return (f"FIT {model} [{index}/{count}] budget {row['budget']:,} B, {row['stages']} stages: SRAM "
            f"{fmt_bytes(row['sram_static'])}, flash {fmt_bytes(row['flash'])}, "
            f"{_cell(row['instructions'])} instructions, output {row['output']}\n")
