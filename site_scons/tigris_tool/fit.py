"""``env.TigrisFit()``: the model at a ladder of budgets (tigris_scons/ladder.py, tigris_scons/fit.py).

The ladder is searched while the SConscripts are read (the points are targets, so their budgets
must be known before the build starts) and kept in ``fit/ladder.json``. Every point is the ordinary
model graph (:mod:`.model`) in its own folder; its row is read from the files that build wrote, and
the summary (table, JSON, picture) depends on every row. A failed point fails its own targets:
with ``-k`` SCons builds every other point, never the summary, so the report is written at exit
from the rows that exist and the failures SCons recorded.
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import SCons.Action
import SCons.Errors
import SCons.Node

from tigris_scons import fit as fit_rules
from tigris_scons import ladder
from tigris_scons.errors import TigrisError
from tigris_scons.parts import load_catalog

from .common import SITE, action, params, quiet, read_json, tail, value, write
from .model import ModelTargets, declaration, model_dir, model_file_node, model_source_deps, tigris_model, tigris_version
from .nodes import board_of
from .state import BuildState, Sweep, state_of

LADDER_CLI = "import sys; sys.path.insert(0, sys.argv.pop(1)); from tigris_scons.ladder import main; sys.exit(main())"


@dataclass
class FitTargets:
    """Nodes of one sweep: the summary (``<m>.fit.json``, ``.fit.txt``, ``.fit.svg``) and its points."""

    name: str
    summary: list
    points: list[ModelTargets]
    rows: list


def _fit_ladder(env, decl, folder) -> list[tuple[int, int]]:
    """The sweep's rungs: from ``fit/ladder.json`` while the model and its compile arguments are
    unchanged, else searched by tigris-ml in a child Python (after running the model's builder)."""
    if decl.source_kind not in ("builder", "onnx", "tflite"):
        raise SCons.Errors.UserError(f"fit compiles {decl.name} at many budgets: model= must be a model "
                                     "(model.toml with a builder, .onnx or .tflite), not a plan")
    extra = decl.compile_args()[2:]  # without -m
    files = [decl.builder, *model_source_deps(decl.builder)] if decl.source_kind == "builder" else [decl.source]
    key = ladder.ladder_key(files, extra, decl.compile_slow, tigris_version())
    path = Path(folder.get_abspath()) / "ladder.json"
    cached = ladder.cached_rungs(path, key)
    if cached is not None:
        return cached
    python = env.subst("$TIGRISBUILD_PYTHON")
    write(f"FIT {decl.name}: searching the budget ladder (tigris compile at many budgets) ...\n")
    with tempfile.TemporaryDirectory(prefix="tigris-fit-") as tmp:
        model = str(decl.source) if decl.source_kind != "builder" else str(Path(tmp) / f"{decl.name}.onnx")
        steps = [] if decl.source_kind != "builder" else [
            ([python, str(decl.builder), "-o", model], str(decl.builder.parent))]
        steps.append(([python, "-c", LADDER_CLI, str(SITE), model, str(Path(tmp) / "ladder.json"),
                       str(decl.compile_slow) if decl.compile_slow is not None else "-", "--", *extra], None))
        for cmd, cwd in steps:
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=cwd)
            if proc.returncode != 0:
                raise SCons.Errors.UserError(f"fit {decl.name}: {' '.join(cmd[:3])} failed: "
                                             f"{tail(proc.stderr or proc.stdout)}")
        found = json.loads((Path(tmp) / "ladder.json").read_text(encoding="utf-8"))
    ladder.keep(path, found, key)
    return ladder.rungs_of(found)


@action
def _fit_row(target, source, env):
    """One point's row from the files its build wrote; prints the progress line."""
    from tigris_scons.report import write_json

    settings = params(source[-1])
    row = fit_rules.read_point(Path(target[0].get_abspath()).parent, settings["model"], settings["budget"],
                               settings["stages"])
    write_json(target[0].get_abspath(), row)
    write(fit_rules.progress_line(settings["label"], settings["index"], settings["count"], row))


def _fit_report(state: BuildState, sweep: Sweep, rows: list[dict], core_rows: list[list[dict]]) -> str:
    """Mark the front, match the catalog parts (each on its own core's rows), write
    ``.fit.json``/``.fit.txt``/``.fit.svg``."""
    from tigris_scons.boards import get_board
    from tigris_scons.parts import fit_summary
    from tigris_scons.plots import fit_svg
    from tigris_scons.report import write_json

    json_path, text_path, svg_path = sweep.outputs
    rows = fit_rules.mark_front(rows)
    cores = {core: {"board": machine, "rows": other} for (core, machine, _), other in zip(sweep.other_cores, core_rows)}
    by_core = {get_board(sweep.board).core: (sweep.board, rows), **{c: (m["board"], m["rows"]) for c, m in cores.items()}}
    parts = (fit_summary(load_catalog(Path(sweep.parts_dir)).values(), by_core, (sweep.board, rows))
             if sweep.parts_dir else [])
    fit_svg(svg_path, rows, parts, f"{sweep.model} on {sweep.board}")
    document = fit_rules.report(sweep.model, sweep.board, rows, parts, sweep.picture, cores)
    write_json(json_path, document)
    Path(text_path).write_text(document["table"], encoding="utf-8")
    state.fit_reports_written.add(json_path)
    return document["table"]


@action
def _fit_summary(target, source, env):
    """All rows -> the sweep's table, JSON and picture."""
    state = state_of(env)
    sweep = next(s for s in state.sweeps if s.outputs[0] == target[0].get_abspath())
    rows = [read_json(n) for n in source[:-1]]
    main, rest = rows[:len(sweep.points)], rows[len(sweep.points):]
    per_core = []
    for _, _, points in sweep.other_cores:
        per_core.append(rest[:len(points)])
        rest = rest[len(points):]
    write(_fit_report(state, sweep, main, per_core))


def _print_fit(target, source, env):
    """``scons fit`` with nothing to redo: the table again."""
    report = source[0].get_abspath()
    if report not in state_of(env).fit_reports_written and os.path.isfile(report):
        write(read_json(source[0])["table"])


def _report_failed_sweeps(state: BuildState) -> None:
    """A sweep whose points failed: its report is still written, the failed points as rows.

    With ``-k`` SCons builds every point it can, but not the summary, which depends on all of
    them; this writes it from the rows that exist and the failures SCons recorded.
    """
    from SCons.Script import GetBuildFailures

    failures = [((str(getattr(f, "filename", "") or f.node), getattr(f.node, "get_abspath", lambda: "")()),
                 str(f.errstr)) for f in GetBuildFailures()]
    def rows_of(points):
        built = [read_json(node) if node.get_state() in (SCons.Node.executed, SCons.Node.up_to_date)
                 and os.path.isfile(node.get_abspath()) else None for *_, node in points]
        return fit_rules.rows_after_failures([point[:3] for point in points], built, failures)

    for sweep in state.sweeps:
        if sweep.outputs[0] in state.fit_reports_written or not failures:
            continue
        try:
            write(_fit_report(state, sweep, rows_of(sweep.points), [rows_of(p) for _, _, p in sweep.other_cores]))
        except Exception as exc:  # noqa: BLE001 - at exit nothing else can report it
            sys.stderr.write(f"scons: *** fit {sweep.model}: report not written: {exc}\n")


def _fit_points(env, decl, folder, rungs, model_file, label: str):
    """The ordinary build at each rung in ``folder/<budget>/`` on ``env``'s board, and a row node
    each: (model targets, row nodes, the sweep's (budget, stages, folder, row) entries)."""
    name = decl.name
    points, rows, entries = [], [], []
    for index, (budget, stages) in enumerate(rungs, 1):
        point_dir = folder.Dir(str(budget))
        targets = tigris_model(env, dataclasses.replace(decl, compile_budget=budget),
                               _point={"bdir": point_dir, "model_file": model_file})
        reads = [point_dir.File(name + suffix) for suffix in (".tgrs", ".check.json", ".size.json", ".stack.json")]
        row = env.Command(point_dir.File("row.json"),
                          [targets.check_ok, *reads, point_dir.File("firmware.json"),
                           value(env, {"model": name, "label": label, "budget": budget, "stages": stages,
                                       "index": index, "count": len(rungs)})],
                          SCons.Action.Action(_fit_row, None))[0]
        points.append(targets)
        rows.append(row)
        entries.append((budget, stages, point_dir.get_abspath() + os.sep, row))
    return points, rows, entries


def tigris_fit(env, spec=None, **overrides) -> FitTargets:
    """Declare a sweep of ``spec`` (as for :func:`tigris_model`) over the ladder of budgets.

    Every point is the ordinary build at one budget (its own folder ``fit/<budget>/``), run on
    QEMU with ``icount=1``; a budget breach is recorded in the row, not fatal. Build the returned
    ``summary`` (or the ``fit`` / ``fit-<name>`` alias) with ``-k`` so one failed point does not
    stop the others. Needs tigris-ml in ``$TIGRISBUILD_PYTHON`` when the SConscripts are read and
    the ladder is not cached yet.
    """
    try:
        decl = declaration(env, spec, overrides)
        if decl.source_kind != "tgrs" and decl.compile_budget is None:
            decl.compile_budget = 1  # the sweep chooses the budgets; compile_args() only needs one
        board = board_of(env)
        base = model_dir(env, board, decl.name)
        folder = base.Dir("fit")
        rungs = _fit_ladder(env, decl, folder)
    except TigrisError as exc:
        raise SCons.Errors.UserError(str(exc)) from None
    name = decl.name
    model_file = model_file_node(env, folder.File(name + ".onnx"), decl)
    parts_dir = env.subst("$TIGRISBUILD_PARTS_DIR")
    points, rows, sweep_points = _fit_points(env, decl, folder, rungs, model_file, name)
    # Every catalog part is answered with work measured on its own core: the same budgets again
    # on the board of each other core among the parts.
    other_cores = []
    try:
        cores = [part.core for part in load_catalog(Path(parts_dir)).values()] if parts_dir else []
    except TigrisError as exc:
        raise SCons.Errors.UserError(str(exc)) from None
    for other in fit_rules.extra_boards(cores, board, env.subst("$TIGRISBUILD_FIT_CORES") or "all"):
        other_env = env.Clone(TIGRISBUILD_BOARD=other.machine, TIGRISBUILD_MVE=False)
        other_folder = model_dir(other_env, other, decl.name).Dir("fit")
        more, more_rows, more_points = _fit_points(other_env, decl, other_folder, rungs, model_file,
                                                   f"{name} on {other.machine}")
        points += more
        rows += more_rows
        other_cores.append((other.core, other.machine, more_points))
    outputs = [base.File(f"{name}.fit{suffix}") for suffix in (".json", ".txt", ".svg")]
    catalog = {p.name: p.read_text(encoding="utf-8") for p in sorted(Path(parts_dir).glob("*.toml"))}
    summary = env.Command(outputs, [*rows, value(env, {"model": name, "board": board.machine, "catalog": catalog})],
                          SCons.Action.Action(_fit_summary, quiet(env, "FIT", "${TARGETS[0]}")))
    state = state_of(env)
    if not state.sweeps:
        atexit.register(_report_failed_sweeps, state)
    state.sweeps.append(Sweep(name, board.machine, parts_dir, [o.get_abspath() for o in outputs],
                              outputs[2].get_path(), sweep_points, other_cores))
    fit_alias = env.Alias(f"fit-{name}", summary, SCons.Action.Action(_print_fit, None))
    env.AlwaysBuild(fit_alias)
    alias = env.subst("$TIGRISBUILD_FIT_ALIAS")
    if alias:
        env.Alias(alias, fit_alias)
    return FitTargets(name, list(summary), points, rows)
