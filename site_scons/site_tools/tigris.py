"""SCons tool ``tigris``: TiGrIS model -> Cortex-M55 firmware -> QEMU run -> budget checks.

Use it from any SConstruct::

    env = Environment(tools=["default", "tigris"], toolpath=["<tigris-scons>/site_scons/site_tools"])
    kws = env.TigrisModel("models/kws/model.toml")          # or "kws.onnx", budget="20K", sram="64K"
    Default(kws.default)                                     # firmware + size check; kws.run runs QEMU

Graph per model (every check is a file target, so ``-j``, ``-n``, ``-k`` and
``--debug=explain`` behave, and a budget edit re-runs only the checks)::

    [builder.py] -> <m>.onnx -> <m>.tgrs  (tigris compile -m <budget>; a ready .tgrs is used as is)
    main.c.j2 + plan -> main.c ; runtime/src/<layer>/*.c -> libtgr.a ; main.c + startup + libtgr.a -> <m>.elf (+ .map)
    <m>.elf -> <m>.size.json (+ .size.txt)          ELF size map by address range
    size.json + plan + Value(budgets) -> <m>.size.ok (+ .size-check.json)     static budget gate
    plan + Value(seed) -> <m>.ref.json              host reference (bundled tigris-ml runtime)
    elf + plan + size.ok -> <m>.run.log (+ .run.json)   QEMU: AlwaysBuild, NoCache, one at a time
    run.log + size.json + ref.json + Value(budgets) -> <m>.check.ok (+ .check.json)

Rules this tool keeps for living inside other people's trees: it only sets construction
variables prefixed ``TIGRISBUILD_`` (with ``SetDefault``, so values set before loading win), it
never calls ``Default``/``Decider``/``SetOption``/``DefaultEnvironment``, target code is built
in private environments (only ``ENV`` and ``TIGRISBUILD_*`` are inherited, never the user's
compiler flags), and ``firmware_templates/`` and ``runtime/`` are located
relative to this file (override with ``TIGRISBUILD_TEMPLATES_DIR`` / ``TIGRISBUILD_RUNTIME_DIR``).

Note: SCons registers tool modules in ``sys.modules`` under their plain name, so inside an
SCons process ``tigris`` is this module, not the tigris-ml package. Everything that needs
tigris-ml (compile, host reference) therefore runs in a child Python process.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import SCons.Action
import SCons.Errors
import SCons.Node
import SCons.Util

_HERE = Path(__file__).resolve().parent
_SITE = _HERE.parent
_ROOT = _SITE.parent
if str(_SITE) not in sys.path:
    sys.path.insert(0, str(_SITE))

from tigris_scons import declaration as decl_mod  # noqa: E402
from tigris_scons.boards import ALL_REGION_NAMES, BOARDS, DEFAULT_BOARD, Board, get_board  # noqa: E402
from tigris_scons import firmware as firmware_recipe  # noqa: E402
from tigris_scons.qemu import ICOUNT_FLAGS, icount_shift  # noqa: E402
from tigris_scons.errors import TigrisError  # noqa: E402
from tigris_scons import runtime_tree  # noqa: E402

PREFIX = "TIGRISBUILD_"
QEMU_INSTALL_HINT = ("install it with: apt-get install --no-install-recommends qemu-system-arm "
                     "(or pass qemu=/path/to/qemu-system-arm)")
TIGRIS_CLI = "import sys; from tigris.cli import main; sys.argv[0] = 'tigris'; sys.exit(main())"
DEFAULT_QEMU_TIMEOUT = 60.0
_printed_tables: set[str] = set()  # stamps whose budget table was already printed in this run


def _package_digest() -> str:
    """Hash of the pure-Python package: editing a check rule re-runs the checks.

    SCons signs a function action by its own bytecode only; the rules live in
    ``tigris_scons``, so its sources are folded into the targets' signatures explicitly.
    """
    import hashlib

    digest = hashlib.sha256()
    for path in sorted((_SITE / "tigris_scons").glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


_PACKAGE_DIGEST = _package_digest()


# --------------------------------------------------------------------------------------------
# helpers


def _fail(target, message: str):
    """Raise the error SCons prints as ``scons: *** [target] message`` (exit status 2)."""
    raise SCons.Errors.BuildError(node=target[0] if target else None, errstr=message)


def _action(fn):
    """Wrap a function action so a :class:`TigrisError` becomes a clean ``BuildError``."""

    def run(target, source, env):
        try:
            return fn(target, source, env)
        except TigrisError as exc:
            _fail(target, str(exc))
        except ImportError as exc:  # scons started from a Python without our requirements
            _fail(target, f"Python package {exc.name or exc} is not installed for {sys.executable}: "
                          "run ./setup.sh (or pip install -r requirements.txt) and use that environment's scons")

    run.__name__ = fn.__name__
    run.__doc__ = fn.__doc__
    return run


def _value(env, obj, code: bool = True) -> SCons.Node.Node:
    """A canonical Value node (sorted-key JSON) so equal settings give equal signatures.

    With ``code`` the Value also carries the package digest, so a change to the code that
    produces a target (rendering, size map, checks) counts as a change of that target's inputs.
    """
    return env.Value(json.dumps({"params": obj, "code": _PACKAGE_DIGEST if code else None}, sort_keys=True))


def _params(node) -> dict:
    return json.loads(node.read())["params"]


def _write(text: str) -> None:
    """Print ``text`` with one write so parallel jobs never interleave it."""
    sys.stdout.write(text)
    sys.stdout.flush()


def _quiet(env, label: str, what: str = "$TARGET") -> str:
    """Short progress line; with ``verbose`` every target and source is named."""
    return f"{label} $TARGETS <- $SOURCES" if env.get(PREFIX + "VERBOSE") else f"{label} {what}"


def _tail(text: str, lines: int = 3) -> str:
    rows = [r for r in text.strip().splitlines() if r.strip()]
    return " | ".join(rows[-lines:])


def _python_module_missing(python: str, module: str) -> bool:
    probe = subprocess.run([python, "-c", f"import importlib.util,sys; sys.exit(importlib.util.find_spec('{module}') is None)"],
                           capture_output=True, check=False)
    return probe.returncode != 0


# --------------------------------------------------------------------------------------------
# actions


@_action
def _build_model_source(target, source, env):
    """Run a model builder script: ``python build.py -o OUT.onnx``."""
    python = env.subst("$TIGRISBUILD_PYTHON")
    script = source[0].get_abspath()
    out = target[0].get_abspath()
    proc = subprocess.run([python, script, "-o", out], capture_output=True, text=True, check=False,
                          cwd=os.path.dirname(script))
    if proc.returncode != 0 or not os.path.isfile(out):
        detail = _tail(proc.stderr or proc.stdout) or f"exit status {proc.returncode}"
        raise TigrisError(f"model builder {script} failed: {detail}")


@_action
def _compile_plan(target, source, env):
    """``tigris compile SRC -m BUDGET -o PLAN`` in a child process; keep its report."""
    params = _params(source[1])
    python = env.subst("$TIGRISBUILD_PYTHON")
    plan, report = target[0].get_abspath(), target[1].get_abspath()
    src = source[0].get_abspath()
    if _python_module_missing(python, "tigris"):
        raise TigrisError(f"tigris-ml is not installed for {python}: pip install -r requirements.txt")
    if os.path.exists(plan):
        os.unlink(plan)
    cmd = [python, "-c", TIGRIS_CLI, "compile", src, *params["args"], "-o", plan]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    Path(report).write_text(proc.stdout + proc.stderr, encoding="utf-8")
    if proc.returncode != 0 or not os.path.isfile(plan):
        detail = _tail(proc.stderr or proc.stdout, 2) or f"exit status {proc.returncode}"
        raise TigrisError(f"tigris compile refused {src}: {detail}")


@_action
def _render_main(target, source, env):
    """Render main.c from the template, the plan and the firmware parameters."""
    from tigris_scons.firmware import FirmwareParams, render_main, template_context
    from tigris_scons.plan import read_plan
    from tigris_scons.report import write_json

    from tigris_scons.builtin import parse_needs
    from tigris_scons.inputs import fnv1a32

    params = FirmwareParams(**_params(source[2]))
    plan = read_plan(source[1].get_abspath())
    needs_text = Path(source[3].get_abspath()).read_text(encoding="utf-8")
    needs = parse_needs(needs_text)
    digest = None
    if params.validate == "digest":
        if needs is None:
            raise TigrisError(f"validate=digest: the runtime refuses this plan on the host, so no firmware may bind "
                              f"it unchecked: {needs_text.strip().removeprefix('error ')}")
        digest = fnv1a32(Path(source[1].get_abspath()).read_bytes())
    context = template_context(params, plan, needs.slow_peak if needs is not None else None, digest)
    if params.fast_arena is not None and params.fast_arena < context["fast_arena_required"]:
        raise TigrisError(
            f"fast arena {params.fast_arena} B is smaller than the plan needs "
            f"({context['fast_arena_required']} B = budget {plan.budget} B + weight reserve); "
            "raise fast_kb= / [arena] fast, or use auto"
        )
    text = render_main(os.path.dirname(source[0].get_abspath()), context)
    Path(target[0].get_abspath()).write_text(text, encoding="utf-8")
    write_json(target[1].get_abspath(), context)


@_action
def _size_report(target, source, env):
    """ELF -> size map JSON (pure measurement) and a readable text version."""
    from tigris_scons.elfsize import size_map
    from tigris_scons.report import render_size_text, write_json

    board = get_board(_params(source[1])["board"])
    data = size_map(source[0].get_abspath(), board.regions).to_dict()
    data["board"] = board.machine
    data["elf"] = source[0].get_path()
    write_json(target[0].get_abspath(), data)
    Path(target[1].get_abspath()).write_text(render_size_text(data), encoding="utf-8")


def _unlink_stale(env) -> None:
    """Remove stamps that must not survive a failed or interrupted upstream step."""
    for path in env.get(PREFIX + "STALE_STAMPS") or []:
        try:
            os.unlink(env.File(path).get_abspath())
        except FileNotFoundError:
            pass


def _finish_check(target, env, verdict, document: dict, title: str) -> None:
    """Shared tail of both checks: table in one write, JSON always, stamp only on success."""
    from tigris_scons.checks import apply_mode
    from tigris_scons.report import render_table, write_json

    apply_mode(verdict, env.subst("$TIGRISBUILD_BUDGET_MODE") or "error")
    table = render_table(verdict, title=title)
    document["verdict"] = verdict.to_dict()
    document["table"] = table
    write_json(target[1].get_abspath(), document)
    if not env.get(PREFIX + "QUIET"):
        _printed_tables.add(target[0].get_abspath())
        _write(table)
    if not verdict.ok:
        _unlink_stale(env)
        _fail(target, verdict.reason)
    Path(target[0].get_abspath()).write_text("ok\n", encoding="utf-8")


@_action
def _size_check(target, source, env):
    """Static gate: ELF regions, flash (plan + image) and static SRAM against the budgets."""
    from tigris_scons.checks import Verdict, check_stack, check_static
    from tigris_scons.elfsize import SizeMap

    size = SizeMap.from_dict(json.loads(Path(source[0].get_abspath()).read_text()))
    plan_bytes = os.path.getsize(source[1].get_abspath())
    params = _params(source[2])
    stack = json.loads(Path(source[3].get_abspath()).read_text())
    verdict = Verdict(params["model"])
    check_static(verdict, size, plan_bytes, params["budgets"], params.get("board"))
    check_stack(verdict, stack["worst_bytes"], stack["reserved_bytes"], stack["auto"])
    document = {"schema": 1, "kind": "size-check", "board": params.get("board"), "model": params["model"], "elf": size.elf, "stack": stack,
                "plan": source[1].get_path(), "plan_bytes": plan_bytes, "budgets": params["budgets"]}
    _finish_check(target, env, verdict, document,
                  f"tigris budget: {params['model']}  ({size.elf}, plan {source[1].get_path()}, static)")


#: The runtime's one recursion: a control stage's unit (If/While) runs the units of its graphs
#: through the same unit runner, one level deep (the loader refuses control flow inside them).
RECURSION_BOUNDS = {"tgr_run_unit": 2}


@_action
def _stack_analysis(target, source, env):
    """Probe ELF + the ``.su`` files of its objects -> static worst-case stack and the reservation
    (``-Wl,--defsym=__stack_size=N`` in a response file for the final link)."""
    from tigris_scons.report import write_json
    from tigris_scons.stackuse import analyse_stack, reserve_for

    params = _params(source[-1])
    if params["selftest"]:
        # The self-test hooks overflow the stack on purpose (fw_selftest_recurse): no bound exists,
        # so a self-test build keeps a fixed reservation and reports no static figure.
        reserved = params["stack"] or firmware_recipe.DEFAULT_STACK_BYTES
        document = {"worst_bytes": None, "reserved_bytes": reserved, "auto": False,
                    "skipped": "self-test build (recursion on purpose)", "elf": source[0].get_path()}
    else:
        su_files = list(dict.fromkeys(Path(n.get_abspath()).with_suffix(".su") for n in source[1:-1]))
        report = analyse_stack(source[0].get_abspath(), [p for p in su_files if p.is_file()],
                               objdump=env.subst("$TIGRISBUILD_OBJDUMP"), recursion_bounds=RECURSION_BOUNDS)
        reserved = params["stack"] if params["stack"] is not None else reserve_for(report.worst_bytes)
        document = report.to_dict() | {"reserved_bytes": reserved, "auto": params["stack"] is None,
                                       "elf": source[0].get_path()}
    write_json(target[0].get_abspath(), document)
    Path(target[1].get_abspath()).write_text(f"-Wl,--defsym=__stack_size={reserved}\n", encoding="utf-8")


@_action
def _reference(target, source, env):
    """Host reference outputs for the plan on the deterministic input."""
    from tigris_scons.reference import compute_reference
    from tigris_scons.report import write_json

    from tigris_scons.declaration import effective_runs
    from tigris_scons.plan import read_plan

    params = _params(source[1])
    fallback = source[2].get_abspath() if len(source) > 2 else None
    runs = effective_runs(params.get("runs"), read_plan(source[0].get_abspath()).state_bytes)
    document = compute_reference(source[0].get_abspath(), params["seed"], runs,
                                 fallback_library=fallback, python=env.subst("$TIGRISBUILD_PYTHON"))
    write_json(target[0].get_abspath(), document)


@_action
def _stage_reference(target, source, env):
    """The host reference's arena use per stage (from its trace), for ``stage_memory=1``."""
    from tigris_scons.reference import stage_memory_reference
    from tigris_scons.report import write_json

    from tigris_scons.declaration import effective_runs
    from tigris_scons.plan import read_plan

    params = _params(source[1])
    fallback = source[2].get_abspath() if len(source) > 2 else None
    runs = effective_runs(params.get("runs"), read_plan(source[0].get_abspath()).state_bytes)
    rows = stage_memory_reference(source[0].get_abspath(), params["seed"], runs, fallback_library=fallback,
                                  python=env.subst("$TIGRISBUILD_PYTHON"))
    write_json(target[0].get_abspath(), {"schema": 1, "stages": rows})


def _draw_stages(svg, log, plan, budget: int, fast_limit: int, reference_path: str, model: str) -> str:
    """``<m>.stages.svg`` for the check; returns the table's note."""
    from tigris_scons.plots import stage_memory_svg

    reference = json.loads(Path(reference_path).read_text(encoding="utf-8"))["stages"]
    slow_cap = log.arena.get("slow_cap")
    stage_memory_svg(svg.get_abspath(), log.stage_memory, reference, fast_limit, int(slow_cap) if slow_cap else None,
                     f"{model}: arena use per stage ({plan.num_stages} stages, budget {budget:,} B)")
    return f"picture: {svg.get_path()} (fast and slow arena use per stage, host reference dashed)"


def _echo(transcript: str, width: int = 160) -> str:
    """The QEMU transcript for the console: long OUTPUT_BYTES lines shortened (full in the log)."""
    rows = []
    for line in transcript.splitlines():
        if line.startswith("OUTPUT_BYTES") and len(line) > width:
            line = line[:width] + f"... ({len(line)} chars, see the run log)"
        rows.append(line)
    return "\n".join(rows)


@_action
def _qemu_run(target, source, env):
    """Boot the ELF on QEMU with the plan at 0x60000000; fail on timeout, bad exit, no marker."""
    from tigris_scons.qemu import icount_shift, qemu_command, run_qemu, which_qemu, work_figure
    from tigris_scons.report import write_json

    from tigris_scons.runlog import parse_run_log

    params = _params(source[3])
    qemu_name = env.subst("$TIGRISBUILD_QEMU")
    qemu = which_qemu(qemu_name)
    if qemu is None:
        raise TigrisError(f"{qemu_name} not found; {QEMU_INSTALL_HINT}")
    board = get_board(params.get("board"))
    cmd = qemu_command(qemu, source[0].get_abspath(), source[1].get_abspath(), machine=board.machine,
                       cpu=board.qemu_cpu, plan_address=board.plan_address, extra=params["qemu_flags"])
    started = time.time()
    try:
        result = run_qemu(cmd, target[0].get_abspath(), timeout=params["timeout"])
    except BaseException:  # Ctrl-C or a failure to start: no stamp may claim this run passed
        _unlink_stale(env)
        raise
    log = parse_run_log(result.transcript)
    document = result.to_dict() | {"schema": 1, "model": params["model"], "started": started,
                                   "finished": time.time(), "log": target[0].get_path(),
                                   "work": work_figure(log.work_ticks(), log.work.get("clock"),
                                                       icount_shift(params["qemu_flags"]))}
    logged = log.to_dict()
    for key in ("profile", "stage_memory"):  # profile=1: ticks and MACs per op and unit; stage_memory=1
        if key in logged:
            document[key] = logged[key]
    write_json(target[1].get_abspath(), document)
    if not env.get(PREFIX + "QUIET"):
        header = f"---- QEMU {params['model']}: {target[0].get_path()} ({result.seconds:.2f} s) ----\n"
        _write(header + _echo(result.transcript) + ("\n" if result.transcript else ""))
    if not result.ok:
        _unlink_stale(env)
        errors = [ln.strip() for ln in result.transcript.splitlines() if ln.startswith(("ERROR", "HARDFAULT", "UNEXPECTED_EXCEPTION"))]
        hint = f"; firmware said: {errors[-1]}" if errors else ""
        raise TigrisError(f"{params['model']}: {result.failure()}{hint} (log: {target[0].get_path()})")


@_action
def _final_check(target, source, env):
    """Run log + size map + host reference + budgets -> verdict, table, JSON, stamp."""
    from tigris_scons.checks import (Verdict, check_log_consistency, check_outputs, check_runtime,
                                     check_stack, check_static)
    from tigris_scons.elfsize import SizeMap
    from tigris_scons.plan import read_plan
    from tigris_scons.qemu import describe_work, work_figure
    from tigris_scons.runlog import parse_run_log

    log_path, size_path, ref_path, plan_path = (n.get_abspath() for n in source[:4])
    params = _params(source[4])
    model = params["model"]
    log = parse_run_log(Path(log_path).read_text(encoding="utf-8", errors="replace"))
    size = SizeMap.from_dict(json.loads(Path(size_path).read_text()))
    reference = json.loads(Path(ref_path).read_text())
    plan = read_plan(plan_path)
    verdict = Verdict(model)
    for problem in log.problems:
        verdict.errors.append(f"run log: {problem}")
    check_static(verdict, size, plan.file_size, params["budgets"], params.get("board"))
    budget = params["budgets"].get("compile_budget") or plan.budget
    fast_limit = budget + plan.weight_reserve(params["tensor_align"])
    stack = json.loads(Path(source[5].get_abspath()).read_text())
    check_stack(verdict, stack["worst_bytes"], stack["reserved_bytes"], stack["auto"])
    check_runtime(verdict, log, params["budgets"], fast_limit, stack["reserved_bytes"], stack["worst_bytes"])
    check_outputs(verdict, log, reference)
    log_sum = log.output_checksum()
    if log_sum is not None and f"0x{log_sum:08x}" != reference["checksum"]:
        verdict.errors.append(f"firmware checksum 0x{log_sum:08x} differs from the reference {reference['checksum']}")
    check_log_consistency(verdict, log, plan.budget, plan.num_tensors)
    work = work_figure(log.work_ticks(), log.work.get("clock"), params["icount_shift"])
    if work["deterministic"]:
        verdict.notes.append(describe_work(work))
    if len(target) > 2:  # stage_memory=1
        if not log.stage_memory:
            verdict.errors.append("stage_memory=1 but the firmware printed no STAGE_MEM line")
        else:
            verdict.notes.append(_draw_stages(target[2], log, plan, budget, fast_limit,
                                              source[6].get_abspath(), model))
    document = {"schema": 1, "kind": "check", "model": model, "board": params.get("board"), "elf": size.elf, "work": work,
                "plan": source[3].get_path(), "plan_bytes": plan.file_size, "budgets": params["budgets"],
                "run": log.to_dict(), "reference": {k: reference[k] for k in ("runtime", "checksum", "inputs", "seed")},
                "log": source[0].get_path()}
    _finish_check(target, env, verdict, document,
                  f"tigris budget: {model}  ({size.elf}, run {source[0].get_path()})")


def _print_size(target, source, env):
    """``scons size``: the detailed size map, and the budget table if it was not just printed."""
    text = Path(source[0].get_abspath()).read_text(encoding="utf-8")
    check = json.loads(Path(source[1].get_abspath()).read_text())
    stamp = source[1].get_abspath().replace(".size-check.json", ".size.ok")
    if stamp not in _printed_tables:
        text += "\n" + check.get("table", "")
    _write(text)


def _print_check(target, source, env):
    """``scons run``: the final table again when the check itself was up to date."""
    report = next(n for n in source if str(n).endswith(".check.json"))
    stamp = report.get_abspath().replace(".check.json", ".check.ok")
    if stamp not in _printed_tables and os.path.isfile(report.get_abspath()):
        table = json.loads(Path(report.get_abspath()).read_text()).get("table", "")
        _write(table.replace("\nresult: ok", "\nresult: ok, unchanged since the last check", 1)
               if table else "")


def _missing_tool(target, source, env):
    _fail(target, env.subst("$TIGRISBUILD_MISSING_MESSAGE"))


# --------------------------------------------------------------------------------------------
# pseudo-builders


@dataclass
class ModelTargets:
    """Nodes of one model, for SConstructs that want to wire them further."""

    name: str
    decl: decl_mod.ModelDecl
    plan: object
    elf: object
    size_json: object
    size_ok: object
    reference: object
    run_log: object
    check_ok: object
    default: list = field(default_factory=list)  # firmware + static size check
    run: list = field(default_factory=list)  # firmware + QEMU run + full check


_runtime_libs: dict[str, object] = {}


def private_env(env):
    """A fresh environment for target/host code that inherits only ``ENV`` and ``TIGRISBUILD_*``.

    A clone of the user's environment would also inherit their CCFLAGS, CPPDEFINES, CFLAGS or
    LIBS (``-march=native``, ``-m64``, ...), which must never reach a Cortex-M55 compile.
    """
    import SCons.Environment

    settings = {k: v for k, v in env.Dictionary().items() if k.startswith(PREFIX)}
    return SCons.Environment.Environment(tools=[], ENV=dict(env["ENV"]), **settings)


def board_of(env) -> Board:
    """The board ``$TIGRISBUILD_BOARD`` names (a bad name is a one-line user error)."""
    try:
        return get_board(env.subst("$TIGRISBUILD_BOARD"))
    except TigrisError as exc:
        raise SCons.Errors.UserError(str(exc)) from None


def _cross_env(env):
    """A private environment with the board's Cortex-M toolchain flags and ours."""
    board = board_of(env)
    cross = private_env(env)
    cross.Tool("tigris_cm55", toolpath=[str(_HERE)])
    cross["TIGRISBUILD_CPU_FLAGS"] = list(board.cpu_flags)
    align = int(env.subst("$TIGRISBUILD_TENSOR_ALIGN"))
    cross.Append(CCFLAGS=list(firmware_recipe.C_FLAGS) + list(firmware_recipe.STACK_FLAGS),
                 CPPDEFINES=[("TGR_TENSOR_ALIGN", align)],
                 CPPPATH=[env.Dir("$TIGRISBUILD_RUNTIME_DIR/include")])
    if not env.get(PREFIX + "MESSAGES", True):
        cross.Append(CPPDEFINES=[("TGR_MESSAGES", 0)])
    if env.get(PREFIX + "MVE"):
        if board.mve_cpu_flags is None:
            raise SCons.Errors.UserError(f"mve=1: {board.core} on {board.machine} has no Helium (M-profile vector "
                                         "extension); only the Cortex-M55 of mps3-an547 has")
        cross["TIGRISBUILD_CPU_FLAGS"] = list(board.mve_cpu_flags)
    if env.get(PREFIX + "STAGE_MEMORY"):
        cross.Append(CPPDEFINES=[("TGR_STAGE_MEMORY", 1)])
    if env.get(PREFIX + "PROFILE"):
        cross.Append(CPPDEFINES=[("TGR_PROFILE", 1)])
    if not env.get(PREFIX + "VERBOSE"):
        cross["CCCOMSTR"] = f"CC ({board.cpu_id}) $TARGET"
        cross["ARCOMSTR"] = f"AR ({board.cpu_id}) $TARGET"
        cross["RANLIBCOMSTR"] = f"RANLIB ({board.cpu_id}) $TARGET"
        cross["LINKCOMSTR"] = f"LINK ({board.cpu_id}) $TARGET"
    return cross


_guards: dict[str, object] = {}


def _guard(env, nodes, message: str | None, name: str) -> None:
    """Make ``nodes`` depend on a target that fails with ``message`` (if a tool is missing).

    The error is raised only when something that needs the tool is built, so ``scons -h`` and
    builds of other targets keep working on a machine without it.
    """
    if not message:
        return
    path = env.File(f"$TIGRISBUILD_BUILD_DIR/.missing-{name}").get_abspath()
    if path not in _guards:
        guard = env.Command(path, [], SCons.Action.Action(_missing_tool, None),
                            TIGRISBUILD_MISSING_MESSAGE=message)
        env.AlwaysBuild(guard)
        _guards[path] = guard
    env.Depends(nodes, _guards[path])


def _runtime_variant(env) -> str:
    """Folder of one compiled form of the runtime, per core: ``cm55/runtime-a16``, ``cm4/runtime-a16``,
    ``...-m0`` (messages=0), ``...-mve`` (mve=1), ``...-prof`` (profile=1), ``...-smem`` (stage_memory=1),
    and their combinations."""
    align = env.subst("$TIGRISBUILD_TENSOR_ALIGN")
    return (f"{board_of(env).cpu_id}/runtime-a{align}" + ("" if env.get(PREFIX + "MESSAGES", True) else "-m0")
            + ("-mve" if env.get(PREFIX + "MVE") else "") + ("-prof" if env.get(PREFIX + "PROFILE") else "")
            + ("-smem" if env.get(PREFIX + "STAGE_MEMORY") else ""))


def _runtime_library(env, cross):
    """The C runtime as a static library for the target, shared by every model, and its objects
    (whose ``.su`` files the stack analysis reads)."""
    libdir = env.Dir(f"$TIGRISBUILD_BUILD_DIR/{_runtime_variant(env)}")
    key = libdir.get_abspath() + "|" + cross.subst("$TIGRISBUILD_CROSS")
    if key in _runtime_libs:
        return _runtime_libs[key]
    runtime = Path(env.Dir("$TIGRISBUILD_RUNTIME_DIR").get_abspath())
    sources = runtime_tree.sources(runtime)
    objs = []
    if not sources:
        lib = env.Command(libdir.File("libtgr.a"), [], SCons.Action.Action(_missing_tool, None),
                          TIGRISBUILD_MISSING_MESSAGE=f"no C sources in {runtime_tree.source_root(runtime)} "
                          "(the runtime is not there yet)")
    else:
        include = [str(d) for d in runtime_tree.include_dirs(runtime)]
        fast = cross["CCFLAGS"] + list(firmware_recipe.FAST_FLAGS)
        objs = [cross.Object(libdir.File(f"{src.parent.name}/{src.stem}.o"), str(src), CPPPATH=include,
                             **({"CCFLAGS": fast} if src.parent.name in firmware_recipe.FAST_LAYERS else {}))
                for src in sources]
        _guard(env, objs, cross.get(PREFIX + "CROSS_MISSING"), "cross-gcc")
        lib = cross.StaticLibrary(libdir.File("libtgr.a"), objs)
    _runtime_libs[key] = (lib, objs)
    return lib, objs


@_action
def _plan_needs(target, source, env):
    """``tgr_plan_needs PLAN FAST SLOW|auto``: what a firmware with these arenas links, and the
    slow arena the plan's run uses (fast ``auto`` = what the plan needs, as the firmware sizes it)."""
    from tigris_scons.plan import read_plan

    params = _params(source[2])
    fast = params["fast"] if params["fast"] is not None else \
        read_plan(source[1].get_abspath()).fast_arena_required(params["align"])
    slow = "auto" if params["slow"] is None else str(params["slow"])
    cmd = [source[0].get_abspath(), source[1].get_abspath(), str(fast), slow]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1):
        raise TigrisError(f"{' '.join(cmd)} failed ({proc.returncode}): {_tail(proc.stderr or proc.stdout)}")
    Path(target[0].get_abspath()).write_text(proc.stdout, encoding="utf-8")


def _plan_needs_node(env, target, plan, arenas: dict):
    """Declare one ``tgr_plan_needs`` run (the host tool, built with the firmware's alignment)."""
    tool = env.TigrisPlanNeeds(arenas["align"])
    _guard(env, [tool], None if env.WhereIs(env.subst("$TIGRISBUILD_HOST_CC") or "gcc") else
           "host gcc not found (the build runs the runtime on the host to see what a plan needs); "
           "install it with: apt-get install --no-install-recommends gcc libc6-dev", "host-gcc")
    return env.Command(target, [tool, plan, _value(env, arenas)],
                       SCons.Action.Action(_plan_needs, _quiet(env, "NEEDS")))[0]


def _runtime_units(env, cross, bdir, out, needs, arenas: dict) -> list:
    """Objects of the generated units that choose what the firmware links (tigris_scons/builtin.py).

    ``runtime=plan`` (the default): the ops and paths this model's plan takes with this
    firmware's arenas (``needs``, asked of the runtime itself by ``tgr_plan_needs``);
    ``runtime=full``: all of them; ``runtime=<file.tgrs>``: what that other plan takes with
    these arenas, for a firmware meant to run it.
    """
    from tigris_host import built_in_sources, full_built_in

    runtime = Path(env.Dir("$TIGRISBUILD_RUNTIME_DIR").get_abspath())
    choice = env.subst("$TIGRISBUILD_RUNTIME_SET") or "plan"
    if choice == "full":
        libdir = env.Dir(f"$TIGRISBUILD_BUILD_DIR/{_runtime_variant(env)}")
        units, objdir = full_built_in(env, cross, libdir.Dir("gen"), runtime), libdir
    else:
        if choice != "plan":
            needs = _plan_needs_node(env, out(".runtime-needs.txt"), env.File(choice), arenas | {"slow": None})
        units, objdir = built_in_sources(env, bdir.Dir("gen"), runtime, needs), bdir
    include = [str(d) for d in runtime_tree.include_dirs(runtime)]
    return [cross.Object(objdir.File(f"obj/{Path(str(u)).parent.name}/{Path(str(u)).stem}.o"), u, CPPPATH=include)
            for u in units]


def _model_source_deps(builder: Path) -> list[str]:
    """Python files a builder script may import: its folder and, for packages, the parent's."""
    deps = sorted(str(p) for p in builder.parent.glob("*.py") if p != builder)
    if (builder.parent.parent / "__init__.py").is_file():
        deps += sorted(str(p) for p in builder.parent.parent.glob("*.py"))
    return deps


def _dist_version(name: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "missing"


def _tigris_version() -> str:
    return _dist_version("tigris-ml")


#: What a model builder script's output depends on besides its own files.
BUILDER_PACKAGES = ("onnx", "onnxruntime", "numpy")


def _python_identity(python: str) -> dict:
    """The Python that runs a model builder, for the builder's signature: its version and the
    packages the builders use, not where it is installed (a CacheDir shared between checkouts
    and machines must not key on the path of a venv). Another interpreter than the one running
    SCons is known by its path only."""
    import platform

    if python != sys.executable:
        return {"python": python}
    return {"python": platform.python_version(), "packages": {d: _dist_version(d) for d in BUILDER_PACKAGES}}


def _declaration(env, spec, overrides: dict) -> decl_mod.ModelDecl:
    """``spec`` resolved (a name, folder, declaration or model file; or a ModelDecl as is) with the
    command-line ``overrides`` applied; parts named by ``part=`` or ``[part] name`` come from
    ``$TIGRISBUILD_PARTS_DIR``."""
    parts_dir = Path(env.subst("$TIGRISBUILD_PARTS_DIR"))
    decl = spec if isinstance(spec, decl_mod.ModelDecl) else decl_mod.resolve_model(
        str(spec), models_dir=Path(env.Dir("$TIGRISBUILD_MODELS_DIR").get_abspath()),
        base_dir=Path(env.Dir(".").srcnode().get_abspath()), parts_dir=parts_dir)
    return decl_mod.apply_overrides(decl, {k: str(v) for k, v in overrides.items() if v is not None},
                                    parts_dir=parts_dir)


def tigris_model(env, spec=None, *, _point: dict | None = None, **overrides) -> ModelTargets:
    """Declare every target of one model; see the module docstring for the graph.

    ``spec`` is a model name under ``$TIGRISBUILD_MODELS_DIR``, a folder or ``model.toml``, a
    ``.onnx``/``.tflite``/``.tgrs`` file, or a :class:`ModelDecl`. ``overrides`` use the
    command-line names (``budget="20K"``, ``fast_kb=24``, ``sram="64K"``, ``region_dtcm="96K"``).
    ``_point`` is for ``fit`` (fit.py): one point of a sweep, with its own folder (``bdir``), the
    sweep's shared model file (``model_file``), no aliases, and checks that record budget breaches
    instead of failing.
    """
    try:
        decl = _declaration(env, spec, overrides)
        if decl.source_kind in ("onnx", "tflite", "builder"):
            compile_args = decl.compile_args()
    except TigrisError as exc:
        raise SCons.Errors.UserError(str(exc)) from None

    name = decl.name
    board = board_of(env)
    point = _point or {}
    if point.get("bdir"):
        bdir = point["bdir"]
    elif board.machine == DEFAULT_BOARD:
        bdir = env.Dir(f"$TIGRISBUILD_BUILD_DIR/{name}")
    else:
        bdir = env.Dir(f"$TIGRISBUILD_BUILD_DIR/{board.machine}/{name}")
    out = lambda suffix: bdir.File(name + suffix)  # noqa: E731
    templates = env.Dir("$TIGRISBUILD_TEMPLATES_DIR")
    python = env.subst("$TIGRISBUILD_PYTHON")
    align = int(env.subst("$TIGRISBUILD_TENSOR_ALIGN"))

    # 1. plan
    if decl.source_kind == "tgrs":
        plan = env.File(str(decl.source))
    else:
        if point.get("model_file") is not None:
            model_file = point["model_file"]
        elif decl.source_kind == "builder":
            model_file = env.Command(out(".onnx"), [str(decl.builder), *_model_source_deps(decl.builder),
                                                    _value(env, _python_identity(python), code=False)],
                                     SCons.Action.Action(_build_model_source, _quiet(env, "MODEL")))[0]
        else:
            model_file = env.File(str(decl.source))
        plan_nodes = env.Command([out(".tgrs"), out(".compile.txt")],
                                 [model_file, _value(env, {"args": compile_args, "tigris": _tigris_version()}, code=False)],
                                 SCons.Action.Action(_compile_plan, _quiet(env, "PLAN", "${TARGETS[0]}")))
        plan = plan_nodes[0]

    # 2. firmware
    fw_params = {
        "model_name": name, "fast_arena": decl.fast_arena, "slow_arena": decl.slow_arena,
        "slow_in_ddr": decl.slow_in_ddr, "seed": decl.seed, "tensor_align": align,
        "plan_window": int(env.subst("$TIGRISBUILD_PLAN_WINDOW") or board.plan_window),
        "board": board.machine,
        "stage_memory": bool(env.get(PREFIX + "STAGE_MEMORY")),
        "validate": env.subst("$TIGRISBUILD_VALIDATE") or "full",
        "profile": bool(env.get(PREFIX + "PROFILE")),
        "runs": decl.runs,
    }
    arenas = {"fast": decl.fast_arena, "slow": decl.slow_arena, "align": align}
    needs = _plan_needs_node(env, out(".needs.txt"), plan, arenas)
    main_c = env.Command([bdir.File("main.c"), bdir.File("firmware.json")],
                         [templates.File("main.c.j2"), plan, _value(env, fw_params), needs],
                         SCons.Action.Action(_render_main, _quiet(env, "RENDER", "${TARGETS[0]}")))[0]
    cross_base = _cross_env(env)
    lib, lib_objs = _runtime_library(env, cross_base)
    cross = cross_base.Clone()
    cross.Append(CPPPATH=[templates])
    selftest = env.get(PREFIX + "FW_SELFTEST")
    fw_sources = [main_c] + [templates.File(name) for name in firmware_recipe.SOURCES]
    if selftest:
        cross.Append(CPPDEFINES=[("FW_SELFTEST", int(selftest))])
        fw_sources.append(templates.File(firmware_recipe.SELFTEST_SOURCE))
    objs = [cross.Object(bdir.File("obj/" + Path(str(s)).stem + ".o"), s) for s in fw_sources]
    objs += _runtime_units(env, cross_base, bdir, out, needs, arenas)
    _guard(env, objs, cross.get(PREFIX + "CROSS_MISSING"), "cross-gcc")
    linker_script = templates.File(board.linker_script)
    link_flags = cross["LINKFLAGS"] + ["-L", templates, "-T", linker_script, f"-Wl,--defsym=__plan_window_size={fw_params['plan_window']}",
                                       *firmware_recipe.LINK_FLAGS, *firmware_recipe.STACK_LINK_FLAGS]
    libs = [lib, *firmware_recipe.LIBS]
    # The stack is reserved from a static analysis of the linked code: a first link (the size of
    # the reservation moves no code) is analysed, the firmware is linked with what it needs.
    probe = cross.Program(out(".stack-probe.elf"), objs, LIBS=libs, LINKFLAGS=link_flags)[0]
    stack = env.Command([out(".stack.json"), out(".stack.rsp")],
                        [probe, *objs, *lib_objs, _value(env, {"stack": decl.stack_size, "selftest": bool(selftest)})],
                        SCons.Action.Action(_stack_analysis, _quiet(env, "STACK", "${TARGETS[0]}")),
                        TIGRISBUILD_OBJDUMP=cross.subst("${TIGRISBUILD_CROSS}objdump"))
    elf = cross.Program(out(".elf"), objs, LIBS=libs, LINKFLAGS=link_flags + ["$(", "@" + stack[1].get_abspath(), "$)"])[0]
    env.Depends([probe, elf], [linker_script, templates.File(firmware_recipe.SECTIONS_SCRIPT)])
    env.Depends(elf, stack[1])

    # 3. size report and static budget gate
    stamp_check = out(".check.ok")
    size_nodes = env.Command([out(".size.json"), out(".size.txt")], [elf, _value(env, {"board": board.machine})],
                             SCons.Action.Action(_size_report, _quiet(env, "SIZE", "${TARGETS[0]}")))
    budgets = decl.budgets()
    # A sweep point records a budget breach in its row instead of failing, and prints one line.
    record = {PREFIX + "BUDGET_MODE": "warn", PREFIX + "QUIET": True} if point else {}
    size_check = env.Command([out(".size.ok"), out(".size-check.json")],
                             [size_nodes[0], plan, _value(env, {"model": name, "budgets": budgets,
                                                                "board": board.machine}), stack[0]],
                             SCons.Action.Action(_size_check, _quiet(env, "CHECK", "${TARGETS[0]}")),
                             TIGRISBUILD_STALE_STAMPS=[stamp_check], **record)

    # 4. host reference
    ref_sources = [plan, _value(env, {"seed": decl.seed, "runs": decl.runs, "tigris": _tigris_version()})]
    from tigris_scons.reference import bundled_runtime_available

    if not bundled_runtime_available():  # fall back to our own host library (and say so)
        host_nodes = env.TigrisHost(alias="")
        ref_sources.append(next(n for n in host_nodes if str(n).endswith(".so")))
    reference = env.Command(out(".ref.json"), ref_sources,
                            SCons.Action.Action(_reference, _quiet(env, "REFERENCE")))[0]

    # 5. QEMU run: never cached, one at a time across the whole build; always re-run, except for a
    #    sweep point (icount=1 makes it repeatable: it re-runs when its firmware, plan or flags change)
    timeout = env.get(PREFIX + "QEMU_TIMEOUT") or decl.timeout or DEFAULT_QEMU_TIMEOUT
    qemu_flags = list(SCons.Util.CLVar(env.subst("$TIGRISBUILD_QEMU_FLAGS")))
    if (env.get(PREFIX + "ICOUNT") or point) and icount_shift(qemu_flags) is None:
        qemu_flags += ICOUNT_FLAGS
    run_nodes = env.Command([out(".run.log"), out(".run.json")],
                            [elf, plan, size_check[0],
                             _value(env, {"model": name, "timeout": float(timeout), "qemu_flags": qemu_flags,
                                          "board": board.machine, "qemu": env.subst("$TIGRISBUILD_QEMU")})],
                            SCons.Action.Action(_qemu_run, _quiet(env, "QEMU", "${SOURCES[0]}")),
                            TIGRISBUILD_STALE_STAMPS=[stamp_check], **record)
    if not point:
        env.AlwaysBuild(run_nodes)
    env.NoCache(run_nodes, size_check)  # runs and checks always execute, never come from a CacheDir
    env.SideEffect(env.File("$TIGRISBUILD_BUILD_DIR/.tigris-qemu.lock"), run_nodes)

    # 6. full check (stage_memory=1: it also draws the firmware's per-stage arena use beside the
    #    host reference's, <m>.stages.svg; plotting is loaded only then)
    check_params = {"model": name, "budgets": budgets, "tensor_align": align,
                    "icount_shift": icount_shift(qemu_flags), "board": board.machine}
    check_targets = [stamp_check, out(".check.json")]
    check_sources = [run_nodes[0], size_nodes[0], reference, plan, _value(env, check_params), stack[0]]
    if fw_params["stage_memory"]:
        check_targets.append(out(".stages.svg"))
        check_sources.append(env.Command(out(".stages-ref.json"), ref_sources,
                                         SCons.Action.Action(_stage_reference, _quiet(env, "REFERENCE")))[0])
    check = env.Command(check_targets, check_sources,
                        SCons.Action.Action(_final_check, _quiet(env, "CHECK", "${TARGETS[0]}")), **record)
    env.NoCache(check)

    targets = ModelTargets(name, decl, plan, elf, size_nodes[0], size_check[0], reference, run_nodes[0],
                           check[0], default=[elf, size_check[0]], run=[elf, check[0]])
    if point:
        return targets

    # 7. aliases (umbrella names configurable; set one to "" to skip it). The per-model `run-`
    #    and `size-` aliases always end with the table, also when nothing had to be rebuilt.
    env.Alias(name, targets.default)
    run_alias = env.Alias(f"run-{name}", targets.run + [check[1]], SCons.Action.Action(_print_check, None))
    size_alias = env.Alias(f"size-{name}", [size_nodes[1], size_check[1]],
                           SCons.Action.Action(_print_size, None))
    env.AlwaysBuild(run_alias, size_alias)
    for var, nodes in (("RUN_ALIAS", run_alias), ("SIZE_ALIAS", size_alias)):
        alias = env.subst(f"${PREFIX}{var}")
        if alias:
            env.Alias(alias, nodes)
    return targets


def tigris_models(env, specs, **overrides) -> list[ModelTargets]:
    """Several models from a comma-separated ``model=`` value; refuses duplicate names."""
    if SCons.Util.is_String(specs):
        specs = [s for s in specs.split(",") if s.strip()]
    result, seen = [], {}
    for spec in specs:
        targets = tigris_model(env, spec, **overrides)
        if targets.name in seen:
            raise SCons.Errors.UserError(f"model={spec} and model={seen[targets.name]} both build '{targets.name}'")
        seen[targets.name] = spec
        result.append(targets)
    return result


# --------------------------------------------------------------------------------------------
# fit: the model at a ladder of budgets (tigris_scons/ladder.py, tigris_scons/fit.py)

LADDER_CLI = "import sys; sys.path.insert(0, sys.argv.pop(1)); from tigris_scons.ladder import main; sys.exit(main())"


@dataclass
class FitTargets:
    """Nodes of one sweep: the summary (``<m>.fit.json``, ``.fit.txt``, ``.fit.svg``) and its points."""

    name: str
    summary: list
    points: list[ModelTargets]
    rows: list


#: Sweeps declared in this process, for the report written at exit when points failed.
_fit_sweeps: list[dict] = []
_fit_written: set[str] = set()


def _ladder_key(env, decl, extra: list[str]) -> str:
    """What the ladder depends on: the model (or its builder's sources), the compile arguments
    other than the budget, the tigris-ml version and the search itself."""
    import hashlib

    digest = hashlib.sha256()
    files = [decl.builder, *_model_source_deps(decl.builder)] if decl.source_kind == "builder" else [decl.source]
    for path in [*files, _SITE / "tigris_scons" / "ladder.py", _SITE / "tigris_scons" / "plan.py"]:
        digest.update(Path(path).read_bytes())
    digest.update(json.dumps([extra, decl.compile_slow, _tigris_version()]).encode())
    return digest.hexdigest()


def _fit_ladder(env, decl, folder) -> list[tuple[int, int]]:
    """The sweep's rungs, searched when the SConscripts are read (the points are targets, so the
    ladder must be known before the build starts) and kept in ``fit/ladder.json`` until the
    model or its compile arguments change."""
    import tempfile

    if decl.source_kind not in ("builder", "onnx", "tflite"):
        raise SCons.Errors.UserError(f"fit compiles {decl.name} at many budgets: model= must be a model "
                                     "(model.toml with a builder, .onnx or .tflite), not a plan")
    extra = decl.compile_args()[2:]  # without -m
    key = _ladder_key(env, decl, extra)
    path = Path(folder.get_abspath()) / "ladder.json"
    if path.is_file():
        cached = json.loads(path.read_text(encoding="utf-8"))
        if cached.get("key") == key:
            return [(r["budget"], r["stages"]) for r in cached["rungs"]]
    python = env.subst("$TIGRISBUILD_PYTHON")
    _write(f"FIT {decl.name}: searching the budget ladder (tigris compile at many budgets) ...\n")
    with tempfile.TemporaryDirectory(prefix="tigris-fit-") as tmp:
        model = str(decl.source) if decl.source_kind != "builder" else str(Path(tmp) / f"{decl.name}.onnx")
        steps = [] if decl.source_kind != "builder" else [
            ([python, str(decl.builder), "-o", model], str(decl.builder.parent))]
        steps.append(([python, "-c", LADDER_CLI, str(_SITE), model, str(Path(tmp) / "ladder.json"),
                       str(decl.compile_slow) if decl.compile_slow is not None else "-", "--", *extra], None))
        for cmd, cwd in steps:
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=cwd)
            if proc.returncode != 0:
                raise SCons.Errors.UserError(f"fit {decl.name}: {' '.join(cmd[:3])} failed: "
                                             f"{_tail(proc.stderr or proc.stdout)}")
        ladder = json.loads((Path(tmp) / "ladder.json").read_text(encoding="utf-8"))
    ladder["key"] = key
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(ladder, indent=1) + "\n", encoding="utf-8")
    return [(r["budget"], r["stages"]) for r in ladder["rungs"]]


@_action
def _fit_row(target, source, env):
    """One point's row from the files its build wrote; prints the progress line."""
    from tigris_scons.fit import progress_line, read_point
    from tigris_scons.report import write_json

    params = _params(source[-1])
    row = read_point(Path(target[0].get_abspath()).parent, params["model"], params["budget"], params["stages"])
    write_json(target[0].get_abspath(), row)
    _write(progress_line(params["model"], params["index"], params["count"], row))


def _fit_report(sweep: dict, rows: list[dict]) -> str:
    """Mark the front, match the catalog parts, write ``.fit.json``/``.fit.txt``/``.fit.svg``."""
    from tigris_scons.fit import mark_front, render_table
    from tigris_scons.parts import load_catalog, fit_summary
    from tigris_scons.plots import fit_svg
    from tigris_scons.report import write_json

    json_path, text_path, svg_path = sweep["outputs"]
    rows = mark_front(rows)
    parts = fit_summary(load_catalog(Path(sweep["parts_dir"])).values(), rows) if sweep["parts_dir"] else []
    fit_svg(svg_path, rows, parts, f"{sweep['model']} on {sweep['board']}")
    table = render_table(sweep["model"], sweep["board"], rows, parts, sweep["picture"])
    write_json(json_path, {"schema": 1, "kind": "fit", "model": sweep["model"], "board": sweep["board"],
                           "rows": rows, "parts": parts, "table": table, "picture": sweep["picture"]})
    Path(text_path).write_text(table, encoding="utf-8")
    _fit_written.add(json_path)
    return table


@_action
def _fit_summary(target, source, env):
    """All rows -> the sweep's table, JSON and picture."""
    sweep = next(s for s in _fit_sweeps if s["outputs"][0] == target[0].get_abspath())
    rows = [json.loads(Path(n.get_abspath()).read_text(encoding="utf-8")) for n in source[:-1]]
    _write(_fit_report(sweep, rows))


def _print_fit(target, source, env):
    """``scons fit`` with nothing to redo: the table again."""
    report = source[0].get_abspath()
    if report not in _fit_written and os.path.isfile(report):
        _write(json.loads(Path(report).read_text(encoding="utf-8"))["table"])


def _fit_at_exit() -> None:
    """A sweep whose points failed: its report is still written, the failed points as rows.

    With ``-k`` (our SConstruct sets it for ``fit``) SCons builds every point it can, but not the
    summary, which depends on all of them; this writes it from the rows that exist and the
    failures SCons recorded.
    """
    from SCons.Script import GetBuildFailures

    from tigris_scons.fit import failed_row

    failures = GetBuildFailures()
    for sweep in _fit_sweeps:
        if sweep["outputs"][0] in _fit_written or not failures:
            continue
        rows = []
        for budget, stages, folder, node in sweep["points"]:
            reason = next((str(f.errstr) for f in failures
                           if str(getattr(f, "filename", "") or f.node).startswith(folder)
                           or getattr(f.node, "get_abspath", lambda: "")().startswith(folder)), None)
            if reason is None and node.get_state() in (SCons.Node.executed, SCons.Node.up_to_date) \
                    and os.path.isfile(node.get_abspath()):
                rows.append(json.loads(Path(node.get_abspath()).read_text(encoding="utf-8")))
            else:
                rows.append(failed_row(budget, stages, reason or "not built: the build stopped at another "
                                                                   "failure (fit needs -k)"))
        try:
            _write(_fit_report(sweep, rows))
        except Exception as exc:  # noqa: BLE001 - at exit nothing else can report it
            sys.stderr.write(f"scons: *** fit {sweep['model']}: report not written: {exc}\n")


def tigris_fit(env, spec=None, **overrides) -> FitTargets:
    """Declare a sweep of ``spec`` (as for :func:`tigris_model`) over the ladder of budgets.

    Every point is the ordinary build at one budget (its own folder ``fit/<budget>/``), run on
    QEMU with ``icount=1``; a budget breach is recorded in the row, not fatal. Build the returned
    ``summary`` (or the ``fit`` / ``fit-<name>`` alias) with ``-k`` so one failed point does not
    stop the others. Needs tigris-ml in ``$TIGRISBUILD_PYTHON`` when the SConscripts are read and
    the ladder is not cached yet.
    """
    import atexit

    try:
        decl = _declaration(env, spec, overrides)
        if decl.source_kind != "tgrs" and decl.compile_budget is None:
            decl.compile_budget = 1  # the sweep chooses the budgets; compile_args() only needs one
        board = board_of(env)
        base = env.Dir(f"$TIGRISBUILD_BUILD_DIR/{decl.name}" if board.machine == DEFAULT_BOARD
                       else f"$TIGRISBUILD_BUILD_DIR/{board.machine}/{decl.name}")
        folder = base.Dir("fit")
        rungs = _fit_ladder(env, decl, folder)
    except TigrisError as exc:
        raise SCons.Errors.UserError(str(exc)) from None
    name = decl.name
    python = env.subst("$TIGRISBUILD_PYTHON")
    if decl.source_kind == "builder":
        model_file = env.Command(folder.File(name + ".onnx"), [str(decl.builder), *_model_source_deps(decl.builder),
                                                               _value(env, _python_identity(python), code=False)],
                                 SCons.Action.Action(_build_model_source, _quiet(env, "MODEL")))[0]
    else:
        model_file = env.File(str(decl.source))
    parts_dir = env.subst("$TIGRISBUILD_PARTS_DIR")
    points, rows, sweep_points = [], [], []
    for index, (budget, stages) in enumerate(rungs, 1):
        point_dir = folder.Dir(str(budget))
        targets = tigris_model(env, dataclasses.replace(decl, compile_budget=budget),
                               _point={"bdir": point_dir, "model_file": model_file})
        reads = [point_dir.File(name + suffix) for suffix in (".tgrs", ".check.json", ".size.json", ".stack.json")]
        row = env.Command(point_dir.File("row.json"),
                          [targets.check_ok, *reads, point_dir.File("firmware.json"),
                           _value(env, {"model": name, "budget": budget, "stages": stages,
                                        "index": index, "count": len(rungs)})],
                          SCons.Action.Action(_fit_row, None))[0]
        points.append(targets)
        rows.append(row)
        sweep_points.append((budget, stages, point_dir.get_abspath() + os.sep, row))
    outputs = [base.File(f"{name}.fit{suffix}") for suffix in (".json", ".txt", ".svg")]
    catalog = {p.name: p.read_text(encoding="utf-8") for p in sorted(Path(parts_dir).glob("*.toml"))}
    summary = env.Command(outputs, [*rows, _value(env, {"model": name, "board": board.machine, "catalog": catalog})],
                          SCons.Action.Action(_fit_summary, _quiet(env, "FIT", "${TARGETS[0]}")))
    if not _fit_sweeps:
        atexit.register(_fit_at_exit)
    _fit_sweeps.append({"model": name, "board": board.machine, "parts_dir": parts_dir,
                        "outputs": [o.get_abspath() for o in outputs], "picture": outputs[2].get_path(),
                        "points": sweep_points})
    fit_alias = env.Alias(f"fit-{name}", summary, SCons.Action.Action(_print_fit, None))
    env.AlwaysBuild(fit_alias)
    alias = env.subst("$TIGRISBUILD_FIT_ALIAS")
    if alias:
        env.Alias(alias, fit_alias)
    return FitTargets(name, list(summary), points, rows)


# --------------------------------------------------------------------------------------------
# command-line variables


def add_variables(env, opts) -> None:
    """Add the tool's command-line variables to a ``Variables`` object (for ``scons -h``).

    Deliberately not the tool-protocol ``options()`` hook: SCons would then read these names
    from ``ARGUMENTS`` into every environment that loads the tool, and a host tree may already
    use ``model=`` or ``verbose=`` for something else. Call ``env.TigrisAddVariables(vars)``
    explicitly instead.
    """
    from SCons.Variables import BoolVariable, EnumVariable

    opts.Add("model", "model(s) to build: a name under models/, a model.toml, or a .onnx/.tflite/.tgrs file; "
             "comma-separated for several", "ds_cnn")
    for key, text in decl_mod.OVERRIDE_KEYS.items():
        opts.Add(key, text, None)
    for region in ALL_REGION_NAMES:
        opts.Add(f"{decl_mod.REGION_OVERRIDE_PREFIX}{region.lower()}", f"budget for ELF region {region}, e.g. 64K", None)
    opts.Add("qemu_timeout", f"seconds before a QEMU run is killed (default: model's [run] timeout, else {DEFAULT_QEMU_TIMEOUT:g})", None)
    opts.Add(EnumVariable("board", "QEMU board (machine): mps3-an547 (Cortex-M55), mps2-an386 (Cortex-M4), "
                          "mps2-an500 (Cortex-M7), mps2-an505 (Cortex-M33)", DEFAULT_BOARD, allowed_values=tuple(BOARDS)))
    opts.Add(BoolVariable("stage_memory", "1: the firmware prints fast and slow arena use per stage (STAGE_MEM lines) "
                          "and the check draws <model>.stages.svg next to the host reference", False))
    opts.Add("qemu", "QEMU binary", "qemu-system-arm")
    opts.Add("qemu_flags", "extra QEMU arguments, e.g. '-d guest_errors'", "")
    opts.Add(BoolVariable("icount", "run QEMU with -icount shift=0: the firmware's WORK line (SysTick ticks of one "
                          "inference, x31.25 = instructions) repeats exactly and goes to <model>.run.json; "
                          "a count of work, not latency", False))
    opts.Add("cross", "cross toolchain prefix", "arm-none-eabi-")
    opts.Add(BoolVariable("messages", "0: the firmware keeps status codes but drops every message text "
                          "(smallest image); 1 (default): messages say why a plan was refused", True))
    opts.Add(EnumVariable("validate", "full: the firmware validates the plan with the runtime's loader (plans can "
                          "change after the build); digest: the build validates it, the firmware checks its "
                          "FNV-1a digest and links no loader (the plan is fixed with the firmware)", "full",
                          allowed_values=("full", "digest")))
    opts.Add(BoolVariable("mve", "1: build for the Cortex-M55 with Helium (-mcpu=cortex-m55; kernels in MVE); "
                          "0 (default): cortex-m55+nomve, kernels on the DSP extension", False))
    opts.Add(BoolVariable("profile", "1: the firmware prints SysTick ticks and multiply-accumulates per op and "
                          "ticks per execution unit (PROFILE lines; with icount=1, x31.25 = instructions)", False))
    opts.Add("runtime", "what the firmware's runtime links: plan (the ops and paths the model's plan takes), "
             "full (everything), or a .tgrs file (what that plan takes)", "plan")
    opts.Add(EnumVariable("tensor_align", "TGR_TENSOR_ALIGN for the runtime (target default 16, host default 32)", "",
                          allowed_values=("", "16", "32")))
    opts.Add(EnumVariable("budget_mode", "error: over-budget fails the build; warn: report only", "error",
                          allowed_values=("error", "warn")))
    opts.Add(BoolVariable("sanitize", "host build with ASan+UBSan under build/host-san/", False))
    opts.Add(BoolVariable("verbose", "print full command lines", False))
    opts.Add("build_dir", "output directory", "build")
    opts.Add("fw_selftest", "firmware self-test hook N (tests only, see firmware_templates/selftest.c)", None)


# --------------------------------------------------------------------------------------------
# tool protocol


def generate(env, **kw) -> None:
    env.SetDefault(
        TIGRISBUILD_ROOT=str(_ROOT),
        TIGRISBUILD_RUNTIME_DIR=str(_ROOT / "runtime"),
        TIGRISBUILD_TEMPLATES_DIR=str(_ROOT / "firmware_templates"),
        TIGRISBUILD_MODELS_DIR=str(_ROOT / "models"),
        TIGRISBUILD_BUILD_DIR="#build",
        TIGRISBUILD_PYTHON=sys.executable,
        TIGRISBUILD_QEMU="qemu-system-arm",
        TIGRISBUILD_QEMU_FLAGS="",
        TIGRISBUILD_ICOUNT=False,
        TIGRISBUILD_QEMU_TIMEOUT=None,
        TIGRISBUILD_BUDGET_MODE="error",
        TIGRISBUILD_TENSOR_ALIGN=firmware_recipe.DEFAULT_TENSOR_ALIGN,
        TIGRISBUILD_HOST_TENSOR_ALIGN=32,
        TIGRISBUILD_PLAN_WINDOW=None,  # None: the board's (boards.Board.plan_window)
        TIGRISBUILD_BOARD=DEFAULT_BOARD,
        TIGRISBUILD_STAGE_MEMORY=False,
        TIGRISBUILD_QUIET=False,
        TIGRISBUILD_RUN_ALIAS="run",
        TIGRISBUILD_SIZE_ALIAS="size",
        TIGRISBUILD_FIT_ALIAS="fit",
        TIGRISBUILD_PARTS_DIR=str(_ROOT / "parts"),
        TIGRISBUILD_HOST_ALIAS="host",
        TIGRISBUILD_VERBOSE=False,
        TIGRISBUILD_FW_SELFTEST=None,
        TIGRISBUILD_RUNTIME_SET="plan",
        TIGRISBUILD_MESSAGES=True,
        TIGRISBUILD_VALIDATE="full",
        TIGRISBUILD_MVE=False,
        TIGRISBUILD_PROFILE=False,
        TIGRISBUILD_HOST_CC="gcc",
    )
    for key, value in kw.items():
        env[PREFIX + key.upper()] = value
    env.AddMethod(tigris_model, "TigrisModel")
    env.AddMethod(tigris_models, "TigrisModels")
    env.AddMethod(tigris_fit, "TigrisFit")
    env.AddMethod(add_variables, "TigrisAddVariables")
    env.Tool("tigris_host", toolpath=[str(_HERE)])


def exists(env) -> bool:
    return True
