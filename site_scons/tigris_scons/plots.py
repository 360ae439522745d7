"""SVG pictures of a firmware's memory: per-stage arena use, and a budget sweep ("fit").

Pure Python; matplotlib is imported inside the functions, and only its object API is used
(``Figure`` on an Agg canvas, no ``pyplot``, no global backend switch), so a build that draws
nothing never imports it and drawing never disturbs another user of matplotlib in the process.

Every drawn series carries an SVG id (matplotlib ``gid``) that names it, so tests and tools can
find it in the file:

* :func:`stage_memory_svg`: ``firmware-fast``, ``firmware-slow``, ``reference-fast``,
  ``reference-slow``, ``budget-fast``, ``budget-slow``;
* :func:`fit_svg`: per panel (``sram``, ``instructions``) ``fit-ok-<panel>``,
  ``fit-failed-<panel>``, ``fit-failed-unmeasured-<panel>`` (failed rows without a figure, marked
  on the budget axis), ``pareto-<panel>``; ``part-<name>`` (line) and ``part-label-<name>`` (its
  text) for each part on the SRAM panel.

A series with no points is not drawn (and has no id). The output is deterministic: the same input
gives the same bytes (fixed ``svg.hashsalt``, text kept as text, no date in the metadata).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable, Mapping

#: Salt for the SVG element ids matplotlib derives from hashes: fixed, so renders repeat exactly.
SVG_HASHSALT = "tigris-scons"

_FAST, _SLOW = "#1f77b4", "#d62728"
_REFERENCE_STYLE = {"linestyle": "--", "linewidth": 1.2, "alpha": 0.9}
_BUDGET_STYLE = {"linestyle": ":", "linewidth": 1.4, "color": "#444444"}


def _rc() -> dict[str, Any]:
    return {"svg.hashsalt": SVG_HASHSALT, "svg.fonttype": "none", "path.simplify": False,
            "font.family": "DejaVu Sans", "font.size": 9.0}


def _new_figure(width: float, height: float, rows: int, cols: int, **kw: Any):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False, **kw)
    return fig, [ax for row in axes for ax in row]


def _save(fig, path: str | Path) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(str(path), format="svg", metadata={"Date": None})


def _binary_size(value: float) -> str:
    """A power-of-two tick as people read memory sizes: 512 B, 16 KiB, 2 MiB."""
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= size:
            return f"{value / size:g} {unit}"
    return f"{value:g} B"


def _bytes_axis(axis) -> None:
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    axis.set_major_locator(MaxNLocator(nbins=6, integer=True))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}"))


def _gid_part(name: str) -> str:
    """A part name as it appears in an id (XML ids allow no spaces)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", str(name)) or "_"


def _points(rows: Iterable[Mapping[str, Any]], key: str) -> tuple[list[int], list[int]]:
    pairs = sorted((int(r["stage"]), int(r[key])) for r in rows if r.get(key) is not None)
    return [s for s, _ in pairs], [v for _, v in pairs]


def stage_memory_svg(
    path: str | Path,
    stages: list[dict],
    reference: list[dict],
    fast_budget: int,
    slow_budget: int | None,
    title: str,
) -> None:
    """Fast (top) and slow (bottom) arena use per stage, as steps over the stage index.

    ``stages``: the firmware's figures (``{stage, fast, slow}`` rows, the STAGE_MEM lines);
    ``reference``: the same keys from the reference (reference.stage_memory_reference), drawn
    dashed beside them; ``fast_budget`` (and ``slow_budget`` when not None) as dotted horizontal
    lines. Axes in bytes, x in stages.
    """
    import matplotlib

    with matplotlib.rc_context(_rc()):
        fig, (fast_ax, slow_ax) = _new_figure(7.0, 5.6, 2, 1, sharex=True)
        fig.suptitle(title)
        for ax, key, color, budget, what in ((fast_ax, "fast", _FAST, fast_budget, "fast arena"),
                                             (slow_ax, "slow", _SLOW, slow_budget, "slow arena")):
            xs, ys = _points(stages, key)
            if xs:
                (line,) = ax.step(xs, ys, where="mid", color=color, linewidth=1.8, marker="o", markersize=3.5,
                                  label=f"firmware {key}")
                line.set_gid(f"firmware-{key}")
            rx, ry = _points(reference, key)
            if rx:
                (line,) = ax.step(rx, ry, where="mid", color="#555555", label=f"reference {key}",
                                  **_REFERENCE_STYLE)
                line.set_gid(f"reference-{key}")
            if budget is not None:
                line = ax.axhline(int(budget), label=f"{key} budget ({int(budget):,} B)", **_BUDGET_STYLE)
                line.set_gid(f"budget-{key}")
            ax.set_ylabel(f"{what} in use (bytes)")
            ax.set_ylim(0, ax.get_ylim()[1] * 1.05)
            _bytes_axis(ax.yaxis)
            ax.grid(True, linewidth=0.4, alpha=0.5)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(loc="best", fontsize=8)
        slow_ax.set_xlabel("stage")
        every = sorted({int(r["stage"]) for r in [*stages, *reference]})
        if every:
            from matplotlib.ticker import MaxNLocator

            slow_ax.xaxis.set_major_locator(MaxNLocator(nbins=min(len(every), 16), integer=True))
            slow_ax.set_xlim(every[0] - 0.6, every[-1] + 0.6)
        _save(fig, path)


def fit_svg(path: str | Path, rows: list[dict], parts: list[dict], title: str) -> None:
    """A budget sweep: compile budget (x) against static on-chip SRAM (left) and against
    instructions per inference (right); the SRAM axis is logarithmic (parts span KiB to MiB).

    ``rows``: ``{budget, sram_static, instructions, ok, pareto}`` (``instructions`` and, for a
    failed row, ``sram_static`` may be None). Rows that built and ran (``ok``) are dots, failed
    ones crosses in their own series (a failed row without a figure is crossed on the budget
    axis), Pareto points ringed. ``parts``: ``{name, sram_total}``, each a labelled horizontal line
    on the SRAM panel.
    """
    import matplotlib

    with matplotlib.rc_context(_rc()):
        fig, (sram_ax, work_ax) = _new_figure(11.0, 5.0, 1, 2)
        fig.suptitle(title)
        ordered = sorted(rows, key=lambda r: (int(r["budget"]), bool(r.get("ok"))))
        budgets = [int(r["budget"]) for r in ordered]
        for ax, key, panel, ylabel in ((sram_ax, "sram_static", "sram", "static on-chip SRAM (bytes)"),
                                       (work_ax, "instructions", "instructions", "instructions per inference")):
            ok = [(int(r["budget"]), r[key]) for r in ordered if r.get("ok") and r.get(key) is not None]
            failed = [(int(r["budget"]), r[key]) for r in ordered if not r.get("ok") and r.get(key) is not None]
            unmeasured = [int(r["budget"]) for r in ordered if not r.get("ok") and r.get(key) is None]
            pareto = [(int(r["budget"]), r[key]) for r in ordered if r.get("pareto") and r.get(key) is not None]
            if ok:
                (line,) = ax.plot([b for b, _ in ok], [v for _, v in ok], color=_FAST, marker="o", markersize=5,
                                  linewidth=1.0, label="built and ran")
                line.set_gid(f"fit-ok-{panel}")
            if failed:
                (line,) = ax.plot([b for b, _ in failed], [v for _, v in failed], color=_SLOW, marker="x",
                                  markersize=7, linestyle="none", label="failed")
                line.set_gid(f"fit-failed-{panel}")
            if unmeasured:
                (line,) = ax.plot(unmeasured, [0.0] * len(unmeasured), transform=ax.get_xaxis_transform(),
                                  clip_on=False, color=_SLOW, marker="x", markersize=7, linestyle="none",
                                  label="failed (no figure)")
                line.set_gid(f"fit-failed-unmeasured-{panel}")
            if pareto:
                (line,) = ax.plot([b for b, _ in pareto], [v for _, v in pareto], linestyle="none", marker="o",
                                  markersize=11, markerfacecolor="none", markeredgecolor="#2ca02c",
                                  markeredgewidth=1.6, label="Pareto")
                line.set_gid(f"pareto-{panel}")
            ax.set_xlabel("compile budget (bytes)")
            ax.set_ylabel(ylabel)
            if budgets and min(budgets) > 0:
                ax.set_xscale("log", base=2)
            from matplotlib.ticker import FuncFormatter

            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}"))
            ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _pos: ""))
            _bytes_axis(ax.yaxis)
            ax.grid(True, linewidth=0.4, alpha=0.5)
        # Parts span kilobytes to megabytes: the SRAM axis is logarithmic so that the points and
        # every part line stay readable; labels of neighbouring lines are staggered along x.
        totals = [int(p["sram_total"]) for p in parts]
        figures = [r["sram_static"] for r in rows if r.get("sram_static")] + totals
        for index, part in enumerate(sorted(parts, key=lambda p: (int(p["sram_total"]), str(p["name"])))):
            total, name = int(part["sram_total"]), str(part["name"])
            line = sram_ax.axhline(total, color="#7f7f7f", linewidth=1.0, linestyle="-.")
            line.set_gid(f"part-{_gid_part(name)}")
            label = sram_ax.annotate(f"{name} ({total:,} B)", xy=((index % 3) * 0.34, total),
                                     xycoords=("axes fraction", "data"), xytext=(3, 2), textcoords="offset points",
                                     fontsize=7, color="#555555", va="bottom", ha="left")
            label.set_gid(f"part-label-{_gid_part(name)}")
        if figures:
            from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

            sram_ax.set_yscale("log", base=2)
            sram_ax.set_ylim(min(figures) / 1.6, max(figures) * 1.6)
            sram_ax.yaxis.set_major_locator(LogLocator(base=2, numticks=12))
            sram_ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: _binary_size(v)))
            sram_ax.yaxis.set_minor_formatter(NullFormatter())
        work_ax.set_ylim(0, work_ax.get_ylim()[1] * 1.08)
        for ax in (sram_ax, work_ax):
            if ax.get_legend_handles_labels()[0]:
                ax.legend(loc="best", fontsize=8)
        _save(fig, path)
