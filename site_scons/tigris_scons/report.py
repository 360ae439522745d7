"""Render a :class:`~tigris_scons.checks.Verdict` as a PlatformIO-style table, and as JSON.

The table is returned as ONE string so the caller can emit it with a single ``write()``: under
``scons -j`` anything written piecemeal interleaves with other actions' output. Plain ASCII,
fixed columns, exact bytes, KiB only as an aid, a 10-cell bar people recognise from PlatformIO.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from .checks import INFO, Row, Verdict
from .units import fmt_bytes, fmt_kib

HEADER = ("item", "used", "reserved", "budget", "size", "use", "bar", "status")
_GROUP_TITLES = {"static": None, "runtime": "runtime (firmware on QEMU)", "output": None}


def bar(fraction: float | None, cells: int = 10) -> str:
    """``[=====     ]``: one cell per 10 %, capped at full; blank when there is no limit."""
    if fraction is None:
        return " " * (cells + 2)
    filled = max(0, min(cells, int(fraction * cells + 1e-9)))
    return "[" + "=" * filled + " " * (cells - filled) + "]"


def _status(row: Row) -> str:
    if row.status in ("OVER", "WARN") and row.over_by:
        return f"{row.status} +{fmt_bytes(row.over_by)}"
    return row.status


def _cells(row: Row) -> list[str]:
    if row.group == "output":
        return [row.label, fmt_bytes(row.used), "", "", "", "", "", _status(row)]
    limit = row.limit
    fraction = row.total / limit if limit else None
    return [
        row.label,
        fmt_bytes(row.used),
        fmt_bytes(row.reserved) if row.reserved else "",
        fmt_kib(row.budget) if row.budget is not None else "-",
        fmt_kib(row.capacity) if row.capacity is not None else "-",
        f"{fraction * 100:.1f}%" if fraction is not None else "",
        bar(fraction) if row.status != INFO else bar(None),
        _status(row),
    ]


def render_table(verdict: Verdict, *, title: str) -> str:
    """The whole table, trailing newline included, ready for one ``sys.stdout.write``."""
    body: list[tuple[str | None, list[str], str]] = []
    group = "static"
    for row in verdict.rows:
        heading = None
        if row.group != group:
            group = row.group
            heading = _GROUP_TITLES.get(group)
        body.append((heading, _cells(row), row.note))
    widths = [len(h) for h in HEADER]
    for _, cells, _ in body:
        widths = [max(w, len(c)) for w, c in zip(widths, cells)]
    right = {1, 2, 5}  # numbers right-aligned

    def line(cells: list[str], note: str = "") -> str:
        parts = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        text = "  ".join(parts).rstrip()
        return f"{text}  {note}" if note else text

    out = [title, line(list(HEADER))]
    for heading, cells, note in body:
        if heading:
            out.append(heading)
        out.append(line(cells, note))
    for note in verdict.notes:
        out.append(note)
    if verdict.ok:
        out.append(f"result: ok ({verdict.model})")
    else:
        out.append(f"result: FAILED: {verdict.reason}")
    return "\n".join(out) + "\n"


def unchanged_table(table: str) -> str:
    """A passing table printed again without a new check: its result line says so."""
    return table.replace("\nresult: ok", "\nresult: ok, unchanged since the last check", 1)


def write_json(path: str | Path, document: dict[str, Any]) -> None:
    """Write ``document`` atomically (temp file + rename), sorted keys, trailing newline.

    Atomic so that an interrupted build never leaves a half-written report that a CI job
    would then parse.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=2, sort_keys=True)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def render_size_text(size: dict[str, Any]) -> str:
    """Human size report (sections, regions, top symbols) from a size-map dict."""
    lines = [f"size map: {size['elf']}"]
    lines.append(f"{'section':<20} {'vma':>10} {'lma':>10} {'size':>10}  {'type':<8} {'run@':<6} load@")
    for s in size["sections"]:
        lines.append(f"{s['name']:<20} 0x{s['vma']:08x} 0x{s['lma']:08x} {s['size']:>10}  {s['type']:<8} "
                     f"{s['region'] or '?':<6} {s['load_region'] or '-'}" + ("  (reserved)" if s["reserved"] else ""))
    lines.append("")
    lines.append(f"{'region':<8} {'used':>12} {'reserved':>12} {'load':>12} {'size':>11}")
    for r in size["regions"]:
        if r["used"] or r["reserved"] or r["load"]:
            lines.append(f"{r['name']:<8} {fmt_bytes(r['used']):>12} {fmt_bytes(r['reserved']):>12} "
                         f"{fmt_bytes(r['load']):>12} {fmt_kib(r['length']):>11}")
    lines.append(f"flash image (PT_LOAD file bytes): {fmt_bytes(size['load_image'])}")
    lines.append(f"on-chip SRAM (static, incl. reservations): {fmt_bytes(size['on_chip_ram'])}")
    for item in size.get("unattributed", []):
        lines.append(f"UNATTRIBUTED: {item}")
    lines.append("")
    lines.append("largest symbols")
    for sym in size["top_symbols"]:
        lines.append(f"{sym['size']:>10}  {sym['kind']:<6} 0x{sym['address']:08x} {sym['region'] or '?':<6} {sym['name']}")
    return "\n".join(lines) + "\n"
