"""Nodes shared between models and tools: private and cross environments, the runtime library,
the generated units that choose what a build links, ``tgr_plan_needs`` runs, and guards for
missing tools.

Shared nodes are declared once per build (the state object, :mod:`.state`); target and host code
is built in private environments that inherit only ``ENV`` and ``TIGRISBUILD_*`` from the user's.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import SCons.Action
import SCons.Environment
import SCons.Errors

import tigris_scons
from tigris_scons import builtin, runtime_tree
from tigris_scons import firmware as firmware_recipe
from tigris_scons.boards import Board, get_board
from tigris_scons.errors import TigrisError

from . import actions
from .common import PREFIX, quiet, value
from .state import state_of


def runtime_dir(env) -> Path:
    """The runtime sources' root, ``$TIGRISBUILD_RUNTIME_DIR``."""
    return Path(env.Dir("$TIGRISBUILD_RUNTIME_DIR").get_abspath())


def private_env(env):
    """A fresh environment for target/host code that inherits only ``ENV`` and ``TIGRISBUILD_*``.

    A clone of the user's environment would also inherit their CCFLAGS, CPPDEFINES, CFLAGS or
    LIBS (``-march=native``, ``-m64``, ...), which must never reach a Cortex-M55 compile. The
    build's state object is one of the ``TIGRISBUILD_*`` values, so it is shared.
    """
    settings = {k: v for k, v in env.Dictionary().items() if k.startswith(PREFIX)}
    return SCons.Environment.Environment(tools=[], ENV=dict(env["ENV"]), **settings)


def board_of(env) -> Board:
    """The board ``$TIGRISBUILD_BOARD`` names (a bad name is a one-line user error)."""
    try:
        return get_board(env.subst("$TIGRISBUILD_BOARD"))
    except TigrisError as exc:
        raise SCons.Errors.UserError(str(exc)) from None


def cross_env(env):
    """A private environment with the board's Cortex-M toolchain (``tigris_cm55``) and our flags."""
    board = board_of(env)
    cross = private_env(env)
    cross.Tool("tigris_cm55", toolpath=[tigris_scons.toolpath()])
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


def guard(env, nodes, message: str | None, name: str) -> None:
    """Make ``nodes`` depend on a target that fails with ``message`` (if a tool is missing).

    The error is raised only when something that needs the tool is built, so ``scons -h`` and
    builds of other targets keep working on a machine without it.
    """
    if not message:
        return
    guards = state_of(env).guards
    path = env.File(f"$TIGRISBUILD_BUILD_DIR/.missing-{name}").get_abspath()
    if path not in guards:
        node = missing(env, path, message)
        env.AlwaysBuild(node)
        guards[path] = node
    env.Depends(nodes, guards[path])


def missing(env, target, message: str) -> list:
    """A target whose build fails with ``message``: what stands in for an output whose tool or
    sources are not there."""
    return env.Command(target, [], SCons.Action.Action(actions.missing_tool, None),
                       TIGRISBUILD_MISSING_MESSAGE=message)


def _catalog_value(env, runtime: Path):
    """The runtime's op and path definitions, and the generator's own code, as a Value: the
    generated units depend on both."""
    generator = hashlib.sha256(Path(builtin.__file__).read_bytes()).hexdigest()
    return env.Value(repr(builtin.scan(runtime)) + generator)


def built_in_sources(env, out_dir, needs=None) -> list:
    """Declare the generated ``*_built_in.c`` units under ``out_dir``: the full runtime, or with
    ``needs`` (a ``tgr_plan_needs`` output node) only what that plan takes."""
    targets = [out_dir.File(f"{layer}/{unit}.c") for unit, layer in builtin.UNITS.items()]
    sources = [_catalog_value(env, runtime_dir(env))] + ([needs] if needs is not None else [])
    return env.Command(targets, sources, SCons.Action.Action(actions.write_built_in, "GEN $TARGET.dir"))


def full_built_in(builder_env, out_dir) -> list:
    """The full runtime's generated units under ``out_dir`` (declared once per folder, by the
    first environment that asks)."""
    units = state_of(builder_env).full_units
    key = out_dir.get_abspath()
    if key not in units:
        units[key] = built_in_sources(builder_env, out_dir)
    return list(units[key])


def _runtime_variant_dir(env):
    """The folder of the runtime library compiled with this environment's core and options."""
    return env.Dir("$TIGRISBUILD_BUILD_DIR/" + firmware_recipe.runtime_variant(
        board_of(env).cpu_id, int(env.subst("$TIGRISBUILD_TENSOR_ALIGN")),
        messages=bool(env.get(PREFIX + "MESSAGES", True)), mve=bool(env.get(PREFIX + "MVE")),
        profile=bool(env.get(PREFIX + "PROFILE")), stage_memory=bool(env.get(PREFIX + "STAGE_MEMORY"))))


def runtime_library(env, cross) -> tuple[list, list]:
    """The C runtime as a static library for the target, shared by every model, and its objects
    (whose ``.su`` files the stack analysis reads)."""
    libdir = _runtime_variant_dir(env)
    libraries = state_of(env).runtime_libraries
    key = libdir.get_abspath() + "|" + cross.subst("$TIGRISBUILD_CROSS")
    if key in libraries:
        return libraries[key]
    runtime = runtime_dir(env)
    sources = runtime_tree.sources(runtime)
    objs = []
    if not sources:
        lib = missing(env, libdir.File("libtgr.a"), f"no C sources in {runtime_tree.source_root(runtime)} "
                      "(the runtime is not there yet)")
    else:
        include = [str(d) for d in runtime_tree.include_dirs(runtime)]
        fast = cross["CCFLAGS"] + list(firmware_recipe.FAST_FLAGS)
        objs = [cross.Object(libdir.File(f"{src.parent.name}/{src.stem}.o"), str(src), CPPPATH=include,
                             **({"CCFLAGS": fast} if src.parent.name in firmware_recipe.FAST_LAYERS else {}))
                for src in sources]
        guard(env, objs, cross.get(PREFIX + "CROSS_MISSING"), "cross-gcc")
        lib = cross.StaticLibrary(libdir.File("libtgr.a"), objs)
    libraries[key] = (lib, objs)
    return lib, objs


def plan_needs_node(env, target, plan, arenas: dict):
    """Declare one ``tgr_plan_needs`` run (the host tool, built with the firmware's alignment)."""
    tool = env.TigrisPlanNeeds(arenas["align"])
    guard(env, [tool], None if env.WhereIs(env.subst("$TIGRISBUILD_HOST_CC") or "gcc") else
          "host gcc not found (the build runs the runtime on the host to see what a plan needs); "
          "install it with: apt-get install --no-install-recommends gcc libc6-dev", "host-gcc")
    return env.Command(target, [tool, plan, value(env, arenas)],
                       SCons.Action.Action(actions.plan_needs, quiet(env, "NEEDS")))[0]


def runtime_units(env, cross, bdir, out, needs, arenas: dict) -> list:
    """Objects of the generated units that choose what the firmware links (tigris_scons/builtin.py).

    ``runtime=plan`` (the default): the ops and paths this model's plan takes with this
    firmware's arenas (``needs``, asked of the runtime itself by ``tgr_plan_needs``);
    ``runtime=full``: all of them; ``runtime=<file.tgrs>``: what that other plan takes with
    these arenas, for a firmware meant to run it.
    """
    choice = env.subst("$TIGRISBUILD_RUNTIME_SET") or "plan"
    if choice == "full":
        libdir = _runtime_variant_dir(env)
        units, objdir = full_built_in(cross, libdir.Dir("gen")), libdir
    else:
        if choice != "plan":
            needs = plan_needs_node(env, out(".runtime-needs.txt"), env.File(choice), arenas | {"slow": None})
        units, objdir = built_in_sources(env, bdir.Dir("gen"), needs), bdir
    include = [str(d) for d in runtime_tree.include_dirs(runtime_dir(env))]
    return [cross.Object(objdir.File(f"obj/{Path(str(u)).parent.name}/{Path(str(u)).stem}.o"), u, CPPPATH=include)
            for u in units]
