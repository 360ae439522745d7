"""``env.TigrisModel()`` / ``env.TigrisModels()``: every target of one model.

Graph per model (every check is a file target, so ``-j``, ``-n``, ``-k`` and ``--debug=explain``
behave, and a budget edit re-runs only the checks)::

    [builder.py] -> <m>.onnx -> <m>.tgrs  (tigris compile -m <budget>; a ready .tgrs is used as is)
    plan -> <m>.needs.txt (tgr_plan_needs) -> gen/*_built_in.c ; main.c.j2 + plan -> main.c
    runtime/src/<layer>/*.c -> libtgr.a ; main.c + startup + units + libtgr.a -> <m>.stack-probe.elf
    probe + .su files -> <m>.stack.json (+ .stack.rsp) -> <m>.elf (+ .map)
    <m>.elf -> <m>.size.json (+ .size.txt)          ELF size map by address range
    size.json + plan + Value(budgets) + stack -> <m>.size.ok (+ .size-check.json)   static budget gate
    plan + Value(seed) -> <m>.ref.json              host reference (bundled tigris-ml runtime)
    elf + plan + size.ok -> <m>.run.log (+ .run.json)   QEMU: AlwaysBuild, NoCache, one at a time
    run.log + size.json + ref.json + Value(budgets) + stack -> <m>.check.ok (+ .check.json)
"""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import SCons.Action
import SCons.Errors
import SCons.Util

from tigris_scons import declaration as decl_mod
from tigris_scons import firmware as firmware_recipe
from tigris_scons.boards import DEFAULT_BOARD, Board
from tigris_scons.errors import TigrisError
from tigris_scons.qemu import icount_shift, with_icount
from tigris_scons.reference import bundled_runtime_available

from . import actions
from .common import PREFIX, quiet, value
from .nodes import board_of, cross_env, guard, plan_needs_node, runtime_library, runtime_units

DEFAULT_QEMU_TIMEOUT = 60.0
#: What a model builder script's output depends on besides its own files.
BUILDER_PACKAGES = ("onnx", "onnxruntime", "numpy")


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


def model_source_deps(builder: Path) -> list[str]:
    """Python files a builder script may import: its folder and, for packages, the parent's."""
    deps = sorted(str(p) for p in builder.parent.glob("*.py") if p != builder)
    if (builder.parent.parent / "__init__.py").is_file():
        deps += sorted(str(p) for p in builder.parent.parent.glob("*.py"))
    return deps


def _dist_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "missing"


def tigris_version() -> str:
    """tigris-ml's installed version: plans, references and ladders are keyed on it."""
    return _dist_version("tigris-ml")


def _python_identity(python: str) -> dict:
    """The Python that runs a model builder, for the builder's signature: its version and the
    packages the builders use, not where it is installed (a CacheDir shared between checkouts
    and machines must not key on the path of a venv). Another interpreter than the one running
    SCons is known by its path only."""
    if python != sys.executable:
        return {"python": python}
    return {"python": platform.python_version(), "packages": {d: _dist_version(d) for d in BUILDER_PACKAGES}}


def model_file_node(env, target, decl: decl_mod.ModelDecl):
    """The model a plan is compiled from: a builder script's output (``target``), or the file."""
    if decl.source_kind != "builder":
        return env.File(str(decl.source))
    python = env.subst("$TIGRISBUILD_PYTHON")
    return env.Command(target, [str(decl.builder), *model_source_deps(decl.builder),
                                value(env, _python_identity(python), code=False)],
                       SCons.Action.Action(actions.build_model_source, quiet(env, "MODEL")))[0]


def declaration(env, spec, overrides: dict) -> decl_mod.ModelDecl:
    """``spec`` resolved (a name, folder, declaration or model file; or a ModelDecl as is) with the
    command-line ``overrides`` applied; parts named by ``part=`` or ``[part] name`` come from
    ``$TIGRISBUILD_PARTS_DIR``."""
    parts_dir = Path(env.subst("$TIGRISBUILD_PARTS_DIR"))
    decl = spec if isinstance(spec, decl_mod.ModelDecl) else decl_mod.resolve_model(
        str(spec), models_dir=Path(env.Dir("$TIGRISBUILD_MODELS_DIR").get_abspath()),
        base_dir=Path(env.Dir(".").srcnode().get_abspath()), parts_dir=parts_dir)
    return decl_mod.apply_overrides(decl, {k: str(v) for k, v in overrides.items() if v is not None},
                                    parts_dir=parts_dir)


def model_dir(env, board: Board, name: str):
    """``$TIGRISBUILD_BUILD_DIR/<name>`` on the default board, ``.../<board>/<name>`` on the others."""
    return env.Dir(f"$TIGRISBUILD_BUILD_DIR/{name}" if board.machine == DEFAULT_BOARD
                   else f"$TIGRISBUILD_BUILD_DIR/{board.machine}/{name}")


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
        decl = declaration(env, spec, overrides)
        if decl.source_kind in ("onnx", "tflite", "builder"):
            compile_args = decl.compile_args()
    except TigrisError as exc:
        raise SCons.Errors.UserError(str(exc)) from None

    name = decl.name
    board = board_of(env)
    point = _point or {}
    bdir = point["bdir"] if point else model_dir(env, board, name)
    out = lambda suffix: bdir.File(name + suffix)  # noqa: E731
    templates = env.Dir("$TIGRISBUILD_TEMPLATES_DIR")
    align = int(env.subst("$TIGRISBUILD_TENSOR_ALIGN"))

    # 1. plan
    if decl.source_kind == "tgrs":
        plan = env.File(str(decl.source))
    else:
        model_file = point["model_file"] if point else model_file_node(env, out(".onnx"), decl)
        plan = env.Command([out(".tgrs"), out(".compile.txt")],
                           [model_file, value(env, {"args": compile_args, "tigris": tigris_version()}, code=False)],
                           SCons.Action.Action(actions.compile_plan, quiet(env, "PLAN", "${TARGETS[0]}")))[0]

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
    needs = plan_needs_node(env, out(".needs.txt"), plan, arenas)
    main_c = env.Command([bdir.File("main.c"), bdir.File("firmware.json")],
                         [templates.File("main.c.j2"), plan, value(env, fw_params), needs],
                         SCons.Action.Action(actions.render_main, quiet(env, "RENDER", "${TARGETS[0]}")))[0]
    cross_base = cross_env(env)
    lib, lib_objs = runtime_library(env, cross_base)
    cross = cross_base.Clone()
    cross.Append(CPPPATH=[templates])
    selftest = env.get(PREFIX + "FW_SELFTEST")
    fw_sources = [main_c] + [templates.File(name) for name in firmware_recipe.SOURCES]
    if selftest:
        cross.Append(CPPDEFINES=[("FW_SELFTEST", int(selftest))])
        fw_sources.append(templates.File(firmware_recipe.SELFTEST_SOURCE))
    objs = [cross.Object(bdir.File("obj/" + Path(str(s)).stem + ".o"), s) for s in fw_sources]
    objs += runtime_units(env, cross_base, bdir, out, needs, arenas)
    guard(env, objs, cross.get(PREFIX + "CROSS_MISSING"), "cross-gcc")
    linker_script = templates.File(board.linker_script)
    link_flags = cross["LINKFLAGS"] + ["-L", templates, "-T", linker_script, f"-Wl,--defsym=__plan_window_size={fw_params['plan_window']}",
                                       *firmware_recipe.LINK_FLAGS, *firmware_recipe.STACK_LINK_FLAGS]
    libs = [lib, *firmware_recipe.LIBS]
    # The stack is reserved from a static analysis of the linked code: a first link (the size of
    # the reservation moves no code) is analysed, the firmware is linked with what it needs.
    probe = cross.Program(out(".stack-probe.elf"), objs, LIBS=libs, LINKFLAGS=link_flags)[0]
    stack = env.Command([out(".stack.json"), out(".stack.rsp")],
                        [probe, *objs, *lib_objs, value(env, {"stack": decl.stack_size, "selftest": bool(selftest)})],
                        SCons.Action.Action(actions.stack_analysis, quiet(env, "STACK", "${TARGETS[0]}")),
                        TIGRISBUILD_OBJDUMP=cross.subst("${TIGRISBUILD_CROSS}objdump"))
    elf = cross.Program(out(".elf"), objs, LIBS=libs, LINKFLAGS=link_flags + ["$(", "@" + stack[1].get_abspath(), "$)"])[0]
    env.Depends([probe, elf], [linker_script, templates.File(firmware_recipe.SECTIONS_SCRIPT)])
    env.Depends(elf, stack[1])

    # 3. size report and static budget gate
    stamp_check = out(".check.ok")
    size_nodes = env.Command([out(".size.json"), out(".size.txt")], [elf, value(env, {"board": board.machine})],
                             SCons.Action.Action(actions.size_report, quiet(env, "SIZE", "${TARGETS[0]}")))
    budgets = decl.budgets()
    # A sweep point records a budget breach in its row instead of failing, and prints one line.
    record = {PREFIX + "BUDGET_MODE": "warn", PREFIX + "QUIET": True} if point else {}
    size_check = env.Command([out(".size.ok"), out(".size-check.json")],
                             [size_nodes[0], plan, value(env, {"model": name, "budgets": budgets,
                                                               "board": board.machine}), stack[0]],
                             SCons.Action.Action(actions.size_check, quiet(env, "CHECK", "${TARGETS[0]}")),
                             TIGRISBUILD_STALE_STAMPS=[stamp_check], **record)

    # 4. host reference (stage_memory=1: also its arena use per stage, for the check's picture)
    reference_params = {"seed": decl.seed, "runs": decl.runs, "tigris": tigris_version()}
    host_library = []
    if not bundled_runtime_available():  # fall back to our own host library (and say so)
        host_library = [next(n for n in env.TigrisHost(alias="") if str(n).endswith(".so"))]

    def reference_node(suffix: str, kind: str):
        return env.Command(out(suffix), [plan, value(env, reference_params | {"kind": kind}), *host_library],
                           SCons.Action.Action(actions.reference, quiet(env, "REFERENCE")))[0]

    reference = reference_node(".ref.json", "outputs")

    # 5. QEMU run: never cached, one at a time across the whole build; always re-run, except for a
    #    sweep point (icount=1 makes it repeatable: it re-runs when its firmware, plan or flags change)
    timeout = env.get(PREFIX + "QEMU_TIMEOUT") or decl.timeout or DEFAULT_QEMU_TIMEOUT
    qemu_flags = with_icount(list(SCons.Util.CLVar(env.subst("$TIGRISBUILD_QEMU_FLAGS"))),
                             bool(env.get(PREFIX + "ICOUNT") or point))
    run_nodes = env.Command([out(".run.log"), out(".run.json")],
                            [elf, plan, size_check[0],
                             value(env, {"model": name, "timeout": float(timeout), "qemu_flags": qemu_flags,
                                         "board": board.machine, "qemu": env.subst("$TIGRISBUILD_QEMU")})],
                            SCons.Action.Action(actions.qemu_run, quiet(env, "QEMU", "${SOURCES[0]}")),
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
    check_sources = [run_nodes[0], size_nodes[0], reference, plan, value(env, check_params), stack[0]]
    if fw_params["stage_memory"]:
        check_targets.append(out(".stages.svg"))
        check_sources.append(reference_node(".stages-ref.json", "stages"))
    check = env.Command(check_targets, check_sources,
                        SCons.Action.Action(actions.final_check, quiet(env, "CHECK", "${TARGETS[0]}")), **record)
    env.NoCache(check)

    targets = ModelTargets(name, decl, plan, elf, size_nodes[0], size_check[0], reference, run_nodes[0],
                           check[0], default=[elf, size_check[0]], run=[elf, check[0]])
    if not point:
        _aliases(env, targets, size_nodes[1], size_check[1], check[1])
    return targets


def _aliases(env, targets: ModelTargets, size_text, size_report, check_report) -> None:
    """``<name>``, ``run-<name>``, ``size-<name>`` and the umbrellas (names configurable; ``""``
    skips one). The per-model ``run-`` and ``size-`` aliases always end with the table, also when
    nothing had to be rebuilt."""
    name = targets.name
    env.Alias(name, targets.default)
    run_alias = env.Alias(f"run-{name}", targets.run + [check_report], SCons.Action.Action(actions.print_check, None))
    size_alias = env.Alias(f"size-{name}", [size_text, size_report], SCons.Action.Action(actions.print_size, None))
    env.AlwaysBuild(run_alias, size_alias)
    for var, nodes in (("RUN_ALIAS", run_alias), ("SIZE_ALIAS", size_alias)):
        alias = env.subst(f"${PREFIX}{var}")
        if alias:
            env.Alias(alias, nodes)


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
