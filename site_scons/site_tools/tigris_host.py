"""SCons tool ``tigris_host``: the C runtime built for the host.

``env.TigrisHost()`` declares (paths relative to ``$TIGRISBUILD_BUILD_DIR``):

* ``host/libtigris_host.so``: runtime + ``runtime/host/tigris_host.c``, the tigris-ml host ABI 2
  shim, so ``TIGRIS_HOST_LIBRARY=build/host/libtigris_host.so tigris run ...`` uses our runtime;
* ``host-needs-a<align>/tgr_plan_needs`` (``env.TigrisPlanNeeds(align)``): what a firmware links
  for a plan (``runtime/host/plan_needs.c``; tigris_scons/builtin.py), built with the firmware's
  tensor alignment so it selects the same paths.

Every host build links the full runtime: its generated ``*_built_in.c`` units list every op and
path (tigris_scons/builtin.py), written under ``gen/`` of the output folder and declared by the
shared ``tigris_tool.nodes`` (which the ``tigris`` tool's firmware builds use too). Each output
folder is declared once per build, in the build's state object (``tigris_tool.state``).

Flags: ``-std=c99 -Wall -Wextra -Werror -O2 -fPIC``, ``-lm``, ``TGR_TENSOR_ALIGN`` 32 by default
(the host reference runtime's alignment, so peaks compare exactly). With ``sanitize=True`` the
same outputs go to ``host-san/`` built with ``-fsanitize=address,undefined
-fno-sanitize-recover=all -g``. Other ``runtime/host/*.c`` files are linked into the library too.
The runtime's own tests depend on exactly these paths.
"""

from __future__ import annotations

import sys
from pathlib import Path

_SITE = Path(__file__).resolve().parents[1]
if str(_SITE) not in sys.path:  # loaded from another SConstruct's toolpath
    sys.path.insert(0, str(_SITE))

from tigris_scons import runtime_tree  # noqa: E402
from tigris_tool.nodes import full_built_in, missing, private_env, runtime_dir  # noqa: E402
from tigris_tool.state import BuildState, state_of  # noqa: E402

SANITIZE_FLAGS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g", "-fno-omit-frame-pointer"]
SHIM = "tigris_host.c"
NEEDS = "plan_needs.c"


def tigris_host(env, sanitize: bool = False, alias: str | None = None):
    """Declare the host library (and driver); returns the list of output nodes.

    Declaring twice for the same output directory returns the first declaration's nodes (the
    ``tigris`` tool asks for the library when it needs it as the host-reference fallback).
    """
    outdir = env.Dir("$TIGRISBUILD_BUILD_DIR/" + ("host-san" if sanitize else "host"))
    declared = state_of(env).host_outputs
    key = outdir.get_abspath()
    if key not in declared:
        declared[key] = _host_outputs(env, outdir, sanitize)
    name = alias if alias is not None else env.subst("$TIGRISBUILD_HOST_ALIAS")
    if name:
        env.Alias(name, declared[key])
    return declared[key]


def _host_outputs(env, outdir, sanitize: bool) -> list:
    """The host library built into ``outdir``."""
    runtime = runtime_dir(env)
    host = _host_env(env, int(env.subst("$TIGRISBUILD_HOST_TENSOR_ALIGN")))
    if sanitize:
        host.Append(CCFLAGS=SANITIZE_FLAGS, LINKFLAGS=SANITIZE_FLAGS, SHLINKFLAGS=SANITIZE_FLAGS)
    if not env.get("TIGRISBUILD_VERBOSE"):
        host["SHCCCOMSTR"] = host["CCCOMSTR"] = "CC (host) $TARGET"
        host["SHLINKCOMSTR"] = host["LINKCOMSTR"] = "LINK (host) $TARGET"

    def objects(files):
        paths = [Path(str(f)) for f in files]  # runtime sources and generated nodes alike
        return [host.SharedObject(outdir.File(f"obj/{p.parent.name}/{p.stem}.os"), f) for p, f in zip(paths, files)]

    core = runtime_tree.sources(runtime)
    host_dir = runtime / "host"
    common = sorted(p for p in host_dir.glob("*.c") if p.name not in (SHIM, NEEDS))
    shared_objs = objects(core + common)
    if core:
        shared_objs += objects(full_built_in(host, outdir.Dir("gen")))
    nodes = []
    if (host_dir / SHIM).is_file() and core:
        nodes += host.SharedLibrary(outdir.File("libtigris_host.so"), shared_objs + objects([host_dir / SHIM]),
                                    SHLIBPREFIX="", SHLIBSUFFIX=".so")
    else:
        nodes += missing(host, outdir.File("libtigris_host.so"), f"cannot build the host library yet: "
                         f"{host_dir / SHIM} or the runtime sources in {runtime_tree.source_root(runtime)} are missing")
    return nodes


def _host_env(env, align: int):
    """A private host-compiler environment: the user's CCFLAGS/CFLAGS/LIBS must not leak in."""
    host = private_env(env)
    for tool in ("cc", "gcc", "gnulink", "ar"):
        host.Tool(tool)
    host.SetDefault(TIGRISBUILD_HOST_CC="gcc")
    host["CC"] = "$TIGRISBUILD_HOST_CC"
    host["SHCC"] = "$TIGRISBUILD_HOST_CC"
    host["LINK"] = "$TIGRISBUILD_HOST_CC"
    host["SHLINK"] = "$TIGRISBUILD_HOST_CC"
    host.Replace(CCFLAGS=["-std=c99", "-Wall", "-Wextra", "-Werror", "-O2", "-fPIC"],
                 CPPDEFINES=[("TGR_TENSOR_ALIGN", align)],
                 CPPPATH=[str(d) for d in runtime_tree.include_dirs(runtime_dir(env))],
                 LINKFLAGS=[], SHLINKFLAGS=["-shared"], LIBS=["m"])
    return host


def tigris_plan_needs(env, align: int):
    """``tgr_plan_needs`` built for the host with tensor alignment ``align`` (declared once)."""
    tools = state_of(env).needs_tools
    if align in tools:
        return tools[align]
    runtime = runtime_dir(env)
    host = _host_env(env, align)
    host.Replace(CCFLAGS=["-std=c99", "-Wall", "-Wextra", "-Werror", "-O1"])
    if not env.get("TIGRISBUILD_VERBOSE"):
        host["CCCOMSTR"] = "CC (host) $TARGET"
        host["LINKCOMSTR"] = "LINK (host) $TARGET"
    outdir = env.Dir(f"$TIGRISBUILD_BUILD_DIR/host-needs-a{align}")
    units = full_built_in(host, outdir.Dir("gen"))
    sources = [*map(str, runtime_tree.sources(runtime)), *units, str(runtime / "host" / NEEDS)]
    objs = [host.Object(outdir.File(f"obj/{Path(str(s)).parent.name}/{Path(str(s)).stem}.o"), s) for s in sources]
    tools[align] = host.Program(outdir.File("tgr_plan_needs"), objs)[0]
    return tools[align]


def generate(env, **_kw) -> None:
    """Defaults the host tool needs on its own too (it is also loaded without ``tigris``), the
    build's state unless a tigris tool set it already, and the methods."""
    env.SetDefault(TIGRISBUILD_BUILD_DIR="#build", TIGRISBUILD_HOST_TENSOR_ALIGN=32, TIGRISBUILD_HOST_ALIAS="host",
                   TIGRISBUILD_STATE=BuildState())
    if "TIGRISBUILD_RUNTIME_DIR" not in env:
        env["TIGRISBUILD_RUNTIME_DIR"] = str(Path(__file__).resolve().parents[2] / "runtime")
    env.AddMethod(tigris_host, "TigrisHost")
    env.AddMethod(tigris_plan_needs, "TigrisPlanNeeds")


def exists(env) -> bool:
    """The host compiler is there."""
    return bool(env.WhereIs(env.get("TIGRISBUILD_HOST_CC", "gcc")))
