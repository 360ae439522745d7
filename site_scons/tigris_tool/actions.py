"""The function actions of a model's graph (and of the generated units).

Each is thin: read its sources, call the pure ``tigris_scons`` module that decides, write its
targets. Sources and targets are positional, in the order :mod:`.model` declares them. Imports of
the pure modules sit inside the actions so ``scons -h`` and host-only builds load none of them
(jinja2, pyelftools, matplotlib).
"""

from __future__ import annotations

import errno
import os
import subprocess
import time
from pathlib import Path

from tigris_scons.errors import TigrisError

from .common import PREFIX, action, fail, params, read_json, tail, write
from .state import state_of

QEMU_INSTALL_HINT = ("install it with: apt-get install --no-install-recommends qemu-system-arm "
                     "(or pass qemu=/path/to/qemu-system-arm)")
TIGRIS_CLI = "import sys; from tigris.cli import main; sys.argv[0] = 'tigris'; sys.exit(main())"


def _python_module_missing(python: str, module: str) -> bool:
    """Whether ``python`` lacks ``module``: asked of that interpreter, since inside SCons the name
    ``tigris`` is the tool, so this process cannot tell whether tigris-ml is installed."""
    probe = subprocess.run([python, "-c", f"import importlib.util,sys; sys.exit(importlib.util.find_spec('{module}') is None)"],
                           capture_output=True, check=False)
    return probe.returncode != 0


@action
def build_model_source(target, source, env):
    """Run a model builder script: ``python build.py -o OUT.onnx``."""
    python = env.subst("$TIGRISBUILD_PYTHON")
    script = source[0].get_abspath()
    out = target[0].get_abspath()
    proc = subprocess.run([python, script, "-o", out], capture_output=True, text=True, check=False,
                          cwd=os.path.dirname(script))
    if proc.returncode != 0 or not os.path.isfile(out):
        detail = tail(proc.stderr or proc.stdout) or f"exit status {proc.returncode}"
        raise TigrisError(f"model builder {script} failed: {detail}")


@action
def compile_plan(target, source, env):
    """``tigris compile SRC -m BUDGET -o PLAN`` in a child process; keep its report."""
    python = env.subst("$TIGRISBUILD_PYTHON")
    plan, report = target[0].get_abspath(), target[1].get_abspath()
    src = source[0].get_abspath()
    if _python_module_missing(python, "tigris"):
        raise TigrisError(f"tigris-ml is not installed for {python}: pip install -r requirements.txt")
    if os.path.exists(plan):
        os.unlink(plan)
    cmd = [python, "-c", TIGRIS_CLI, "compile", src, *params(source[1])["args"], "-o", plan]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    Path(report).write_text(proc.stdout + proc.stderr, encoding="utf-8")
    if proc.returncode != 0 or not os.path.isfile(plan):
        detail = tail(proc.stderr or proc.stdout, 2) or f"exit status {proc.returncode}"
        raise TigrisError(f"tigris compile refused {src}: {detail}")


def _run_just_built(cmd: list[str], attempts: int = 8) -> subprocess.CompletedProcess:
    """Run an executable this build has just linked or taken from the cache, retrying ``ETXTBSY``.

    Why: while SCons writes the file in one job, another job may fork a child that inherits the
    open write descriptor until it execs; for that moment exec of the new file fails with "Text
    file busy" (seen with ``cache_dir=`` and ``-j2``). The race lasts microseconds, so a few short
    waits end it; any other failure is raised at once.
    """
    for attempt in range(attempts - 1):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, check=False)
        except OSError as exc:
            if exc.errno != errno.ETXTBSY:
                raise
            time.sleep(0.01 * 2 ** attempt)
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


@action
def plan_needs(target, source, env):
    """``tgr_plan_needs PLAN FAST SLOW|auto``: what a firmware with these arenas links, and the
    slow arena the plan's run uses."""
    from tigris_scons.firmware import needs_arguments
    from tigris_scons.plan import read_plan

    arenas = params(source[2])
    plan = source[1].get_abspath()
    cmd = [source[0].get_abspath(), plan,
           *needs_arguments(arenas["fast"], arenas["slow"], read_plan(plan), arenas["align"])]
    proc = _run_just_built(cmd)
    if proc.returncode not in (0, 1):
        raise TigrisError(f"{' '.join(cmd)} failed ({proc.returncode}): {tail(proc.stderr or proc.stdout)}")
    Path(target[0].get_abspath()).write_text(proc.stdout, encoding="utf-8")


def write_built_in(target, source, env):
    """Write the generated units listing what this build links (tigris_scons/builtin.py): all of
    it, or with a ``tgr_plan_needs`` output as second source what that plan takes."""
    from tigris_scons import builtin

    catalog = builtin.scan(Path(env.Dir("$TIGRISBUILD_RUNTIME_DIR").get_abspath()))
    needs = None
    if len(source) > 1:
        needs = builtin.parse_needs(Path(source[1].get_abspath()).read_text(encoding="utf-8"))
    builtin.write(Path(target[0].get_abspath()).parents[1], catalog, needs)


@action
def render_main(target, source, env):
    """Render main.c (and its context, firmware.json) from the template, the plan, the firmware
    parameters and ``tgr_plan_needs``' answer."""
    from tigris_scons.firmware import FirmwareParams, main_context, render_main as render
    from tigris_scons.plan import read_plan
    from tigris_scons.report import write_json

    plan_path = Path(source[1].get_abspath())
    context = main_context(FirmwareParams(**params(source[2])), read_plan(plan_path), plan_path.read_bytes(),
                           Path(source[3].get_abspath()).read_text(encoding="utf-8"))
    Path(target[0].get_abspath()).write_text(render(os.path.dirname(source[0].get_abspath()), context),
                                             encoding="utf-8")
    write_json(target[1].get_abspath(), context)


@action
def stack_analysis(target, source, env):
    """Probe ELF + the ``.su`` files of its objects -> static worst-case stack and the reservation
    (``-Wl,--defsym=__stack_size=N`` in a response file for the final link)."""
    from tigris_scons import stackreserve
    from tigris_scons.report import write_json
    from tigris_scons.stackuse import analyse_stack

    settings = params(source[-1])
    elf = source[0].get_path()
    if settings["selftest"]:
        document = stackreserve.selftest(settings["stack"], elf)
    else:
        su_files = list(dict.fromkeys(Path(n.get_abspath()).with_suffix(".su") for n in source[1:-1]))
        report = analyse_stack(source[0].get_abspath(), [p for p in su_files if p.is_file()],
                               objdump=env.subst("$TIGRISBUILD_OBJDUMP"),
                               recursion_bounds=stackreserve.RECURSION_BOUNDS)
        document = stackreserve.analysed(report.to_dict(), settings["stack"], elf)
    write_json(target[0].get_abspath(), document)
    Path(target[1].get_abspath()).write_text(stackreserve.link_response(document), encoding="utf-8")


@action
def size_report(target, source, env):
    """ELF -> size map JSON (pure measurement) and a readable text version."""
    from tigris_scons.boards import get_board
    from tigris_scons.elfsize import size_map
    from tigris_scons.report import render_size_text, write_json

    board = get_board(params(source[1])["board"])
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


def _finish_check(target, env, check) -> None:
    """Shared tail of both checks: table in one write, JSON always, stamp only on success."""
    from tigris_scons.report import write_json

    table = check.conclude(env.subst("$TIGRISBUILD_BUDGET_MODE") or "error")
    write_json(target[1].get_abspath(), check.document)
    if not env.get(PREFIX + "QUIET"):
        state_of(env).printed_tables.add(target[0].get_abspath())
        write(table)
    if not check.verdict.ok:
        _unlink_stale(env)
        fail(target, check.verdict.reason)
    Path(target[0].get_abspath()).write_text("ok\n", encoding="utf-8")


@action
def size_check(target, source, env):
    """Static gate: ELF regions, flash (plan + image) and static SRAM against the budgets."""
    from tigris_scons.elfsize import SizeMap
    from tigris_scons.gates import static_gate

    settings = params(source[2])
    _finish_check(target, env, static_gate(settings["model"], settings.get("board"), SizeMap.from_dict(read_json(source[0])),
                                           source[1].get_path(), os.path.getsize(source[1].get_abspath()),
                                           settings["budgets"], read_json(source[3])))


@action
def reference(target, source, env):
    """The host reference for the plan on the deterministic input: its outputs (``<m>.ref.json``)
    or its arena use per stage (``<m>.stages-ref.json``, for ``stage_memory=1``)."""
    from tigris_scons.reference import reference_file
    from tigris_scons.report import write_json

    settings = params(source[1])
    fallback = source[2].get_abspath() if len(source) > 2 else None
    write_json(target[0].get_abspath(),
               reference_file(settings["kind"], source[0].get_abspath(), settings["seed"], settings["runs"],
                              fallback_library=fallback, python=env.subst("$TIGRISBUILD_PYTHON")))


@action
def qemu_run(target, source, env):
    """Boot the ELF on QEMU with the plan at 0x60000000; fail on timeout, bad exit, no marker."""
    from tigris_scons.boards import get_board
    from tigris_scons.qemu import (console_transcript, icount_shift, qemu_command, run_document, run_failure,
                                   run_qemu, which_qemu)
    from tigris_scons.report import write_json
    from tigris_scons.runlog import parse_run_log

    settings = params(source[3])
    qemu_name = env.subst("$TIGRISBUILD_QEMU")
    qemu = which_qemu(qemu_name)
    if qemu is None:
        raise TigrisError(f"{qemu_name} not found; {QEMU_INSTALL_HINT}")
    board = get_board(settings.get("board"))
    cmd = qemu_command(qemu, source[0].get_abspath(), source[1].get_abspath(), machine=board.machine,
                       cpu=board.qemu_cpu, plan_address=board.plan_address, extra=settings["qemu_flags"])
    started = time.time()
    try:
        result = run_qemu(cmd, target[0].get_abspath(), timeout=settings["timeout"])
    except BaseException:  # Ctrl-C or a failure to start: no stamp may claim this run passed
        _unlink_stale(env)
        raise
    write_json(target[1].get_abspath(),
               run_document(result, parse_run_log(result.transcript), model=settings["model"], started=started,
                            finished=time.time(), log_path=target[0].get_path(),
                            shift=icount_shift(settings["qemu_flags"])))
    if not env.get(PREFIX + "QUIET"):
        header = f"---- QEMU {settings['model']}: {target[0].get_path()} ({result.seconds:.2f} s) ----\n"
        write(header + console_transcript(result.transcript) + ("\n" if result.transcript else ""))
    if not result.ok:
        _unlink_stale(env)
        raise TigrisError(run_failure(settings["model"], result, target[0].get_path()))


@action
def final_check(target, source, env):
    """Run log + size map + host reference + budgets -> verdict, table, JSON, stamp (and with
    ``stage_memory=1`` the picture of arena use per stage)."""
    from tigris_scons.elfsize import SizeMap
    from tigris_scons.gates import fast_limit, final_check as check_run
    from tigris_scons.plan import read_plan
    from tigris_scons.runlog import parse_run_log

    settings = params(source[4])
    log = parse_run_log(Path(source[0].get_abspath()).read_text(encoding="utf-8", errors="replace"))
    plan = read_plan(source[3].get_abspath())
    budget, limit = fast_limit(settings["budgets"].get("compile_budget"), plan.budget,
                               plan.weight_reserve(settings["tensor_align"]))
    stage_memory = len(target) > 2
    check = check_run(settings["model"], settings.get("board"), log, SizeMap.from_dict(read_json(source[1])),
                      read_json(source[2]), read_json(source[5]), settings["budgets"], limit=limit,
                      plan_path=source[3].get_path(), plan_bytes=plan.file_size, plan_budget=plan.budget,
                      plan_tensors=plan.num_tensors, log_path=source[0].get_path(),
                      icount_shift=settings["icount_shift"], stage_memory=stage_memory)
    if stage_memory and log.stage_memory:
        check.verdict.notes.append(_draw_stages(target[2], log, plan, budget, limit, source[6], settings["model"]))
    _finish_check(target, env, check)


def _draw_stages(svg, log, plan, budget: int, limit: int, reference, model: str) -> str:
    """``<m>.stages.svg`` for the check; returns the table's note."""
    from tigris_scons.plots import stage_memory_svg

    slow_cap = log.arena.get("slow_cap")
    stage_memory_svg(svg.get_abspath(), log.stage_memory, read_json(reference)["stages"], limit,
                     int(slow_cap) if slow_cap else None,
                     f"{model}: arena use per stage ({plan.num_stages} stages, budget {budget:,} B)")
    return f"picture: {svg.get_path()} (fast and slow arena use per stage, host reference dashed)"


def print_size(target, source, env):
    """``scons size``: the detailed size map, and the budget table if it was not just printed."""
    text = Path(source[0].get_abspath()).read_text(encoding="utf-8")
    stamp = source[1].get_abspath().replace(".size-check.json", ".size.ok")
    if stamp not in state_of(env).printed_tables:
        text += "\n" + read_json(source[1]).get("table", "")
    write(text)


def print_check(target, source, env):
    """``scons run``: the final table again when the check itself was up to date."""
    from tigris_scons.report import unchanged_table

    report = next(n for n in source if str(n).endswith(".check.json"))
    stamp = report.get_abspath().replace(".check.json", ".check.ok")
    if stamp not in state_of(env).printed_tables and os.path.isfile(report.get_abspath()):
        table = read_json(report).get("table", "")
        write(unchanged_table(table) if table else "")


def missing_tool(target, source, env):
    """The action of a target that stands for a missing tool or missing sources: it fails with
    ``$TIGRISBUILD_MISSING_MESSAGE``."""
    fail(target, env.subst("$TIGRISBUILD_MISSING_MESSAGE"))
