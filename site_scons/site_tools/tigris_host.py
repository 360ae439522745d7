"""SCons tool ``tigris_host``: the C runtime built for the host.

``env.TigrisHost()`` declares (paths relative to ``$TIGRISBUILD_BUILD_DIR``):

* ``host/libtigris_host.so``: runtime + ``runtime/host/tigris_host.c``, the tigris-ml host ABI 2
  shim, so ``TIGRIS_HOST_LIBRARY=build/host/libtigris_host.so tigris run ...`` uses our runtime;
* ``host/tgr_run``: the host CLI driver, only if ``runtime/host/tgr_run.c`` exists;
* ``host-needs-a<align>/tgr_plan_needs`` (``env.TigrisPlanNeeds(align)``): what a firmware links
  for a plan (``runtime/host/plan_needs.c``; tigris_scons/builtin.py), built with the firmware's
  tensor alignment so it selects the same paths.

Every host build links the full runtime: its generated ``*_built_in.c`` units list every op and
path (tigris_scons/builtin.py), written under ``gen/`` of the output folder.

Flags: ``-std=c99 -Wall -Wextra -Werror -O2 -fPIC``, ``-lm``, ``TGR_TENSOR_ALIGN`` 32 by default
(the host reference runtime's alignment, so peaks compare exactly). With ``sanitize=True`` the
same outputs go to ``host-san/`` built with ``-fsanitize=address,undefined
-fno-sanitize-recover=all -g``. Other ``runtime/host/*.c`` files are linked into both outputs.
The runtime's own tests depend on exactly these paths.
"""

from __future__ import annotations

import sys
from pathlib import Path

import SCons.Action
import SCons.Errors

_SITE = Path(__file__).resolve().parents[1]
if str(_SITE) not in sys.path:
    sys.path.insert(0, str(_SITE))

from tigris_scons import builtin, runtime_tree  # noqa: E402

SANITIZE_FLAGS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g", "-fno-omit-frame-pointer"]
SHIM = "tigris_host.c"
DRIVER = "tgr_run.c"
NEEDS = "plan_needs.c"


def _missing(target, source, env):
    raise SCons.Errors.BuildError(node=target[0], errstr=env.subst("$TIGRISBUILD_MISSING_MESSAGE"))


_declared: dict[str, list] = {}


def tigris_host(env, sanitize: bool = False, alias: str | None = None):
    """Declare the host library (and driver); returns the list of output nodes.

    Declaring twice for the same output directory returns the first declaration's nodes (the
    ``tigris`` tool asks for the library when it needs it as the host-reference fallback).
    """
    key = env.Dir("$TIGRISBUILD_BUILD_DIR/" + ("host-san" if sanitize else "host")).get_abspath()
    if key in _declared:
        name = alias if alias is not None else env.subst("$TIGRISBUILD_HOST_ALIAS")
        if name:
            env.Alias(name, _declared[key])
        return _declared[key]
    align = int(env.subst("$TIGRISBUILD_HOST_TENSOR_ALIGN"))
    runtime = Path(env.Dir("$TIGRISBUILD_RUNTIME_DIR").get_abspath())
    host = _host_env(env, runtime, align)
    if sanitize:
        host.Append(CCFLAGS=SANITIZE_FLAGS, LINKFLAGS=SANITIZE_FLAGS, SHLINKFLAGS=SANITIZE_FLAGS)
    if not env.get("TIGRISBUILD_VERBOSE"):
        host["SHCCCOMSTR"] = host["CCCOMSTR"] = "CC (host) $TARGET"
        host["SHLINKCOMSTR"] = host["LINKCOMSTR"] = "LINK (host) $TARGET"
    outdir = env.Dir("$TIGRISBUILD_BUILD_DIR/" + ("host-san" if sanitize else "host"))

    def objects(files):
        paths = [Path(str(f)) for f in files]  # runtime sources and generated nodes alike
        return [host.SharedObject(outdir.File(f"obj/{p.parent.name}/{p.stem}.os"), f) for p, f in zip(paths, files)]

    core = runtime_tree.sources(runtime)
    host_dir = runtime / "host"
    common = sorted(p for p in host_dir.glob("*.c") if p.name not in (SHIM, DRIVER, NEEDS))
    shared_objs = objects(core + common)
    if core:
        shared_objs += objects(full_built_in(env, host, outdir.Dir("gen"), runtime))
    nodes = []
    if (host_dir / SHIM).is_file() and core:
        nodes += host.SharedLibrary(outdir.File("libtigris_host.so"), shared_objs + objects([host_dir / SHIM]),
                                    SHLIBPREFIX="", SHLIBSUFFIX=".so")
    else:
        nodes += host.Command(outdir.File("libtigris_host.so"), [], SCons.Action.Action(_missing, None),
                              TIGRISBUILD_MISSING_MESSAGE=f"cannot build the host library yet: "
                              f"{host_dir / SHIM} or the runtime sources in {runtime_tree.source_root(runtime)} are missing")
    if (host_dir / DRIVER).is_file() and core:
        nodes += host.Program(outdir.File("tgr_run"), shared_objs + objects([host_dir / DRIVER]))
    name = alias if alias is not None else env.subst("$TIGRISBUILD_HOST_ALIAS")
    if name:
        env.Alias(name, nodes)
    _declared[key] = nodes
    return nodes


def _host_env(env, runtime: Path, align: int):
    """A fresh host-compiler environment: the user's CCFLAGS/CFLAGS/LIBS must not leak in."""
    import SCons.Environment

    settings = {k: v for k, v in env.Dictionary().items() if k.startswith("TIGRISBUILD_")}
    host = SCons.Environment.Environment(tools=[], ENV=dict(env["ENV"]), **settings)
    for tool in ("cc", "gcc", "gnulink", "ar"):
        host.Tool(tool)
    host.SetDefault(TIGRISBUILD_HOST_CC="gcc")
    host["CC"] = "$TIGRISBUILD_HOST_CC"
    host["SHCC"] = "$TIGRISBUILD_HOST_CC"
    host["LINK"] = "$TIGRISBUILD_HOST_CC"
    host["SHLINK"] = "$TIGRISBUILD_HOST_CC"
    host.Replace(CCFLAGS=["-std=c99", "-Wall", "-Wextra", "-Werror", "-O2", "-fPIC"],
                 CPPDEFINES=[("TGR_TENSOR_ALIGN", align)],
                 CPPPATH=[str(d) for d in runtime_tree.include_dirs(runtime)],
                 LINKFLAGS=[], SHLINKFLAGS=["-shared"], LIBS=["m"])
    return host


def _write_built_in(target, source, env):
    """Write the generated units listing what this build links (tigris_scons/builtin.py)."""
    catalog = builtin.scan(Path(env.Dir("$TIGRISBUILD_RUNTIME_DIR").get_abspath()))
    needs = None
    if len(source) > 1:
        needs = builtin.parse_needs(Path(source[1].get_abspath()).read_text(encoding="utf-8"))
    builtin.write(Path(target[0].get_abspath()).parents[1], catalog, needs)


def catalog_value(env, runtime: Path):
    """The runtime's op and path definitions, and the generator's own code, as a Value: the
    generated units depend on both."""
    import hashlib

    generator = hashlib.sha256(Path(builtin.__file__).read_bytes()).hexdigest()
    return env.Value(repr(builtin.scan(runtime)) + generator)


def built_in_sources(env, out_dir, runtime: Path, needs=None) -> list:
    """Declare the generated ``*_built_in.c`` units under ``out_dir``: the full runtime, or with
    ``needs`` (a ``tgr_plan_needs`` output node) only what that plan takes."""
    targets = [out_dir.File(f"{layer}/{unit}.c") for unit, layer in builtin.UNITS.items()]
    sources = [catalog_value(env, runtime)] + ([needs] if needs is not None else [])
    return env.Command(targets, sources, SCons.Action.Action(_write_built_in, "GEN $TARGET.dir"))


_full_units: dict[str, list] = {}


def full_built_in(env, builder_env, out_dir, runtime: Path) -> list:
    """The full runtime's generated units under ``out_dir`` (declared once per folder)."""
    key = out_dir.get_abspath()
    if key not in _full_units:
        _full_units[key] = built_in_sources(builder_env, out_dir, runtime)
    return list(_full_units[key])


_needs_tools: dict[int, object] = {}


def tigris_plan_needs(env, align: int):
    """``tgr_plan_needs`` built for the host with tensor alignment ``align`` (declared once)."""
    if align in _needs_tools:
        return _needs_tools[align]
    runtime = Path(env.Dir("$TIGRISBUILD_RUNTIME_DIR").get_abspath())
    host = _host_env(env, runtime, align)
    host.Replace(CCFLAGS=["-std=c99", "-Wall", "-Wextra", "-Werror", "-O1"])
    if not env.get("TIGRISBUILD_VERBOSE"):
        host["CCCOMSTR"] = "CC (host) $TARGET"
        host["LINKCOMSTR"] = "LINK (host) $TARGET"
    outdir = env.Dir(f"$TIGRISBUILD_BUILD_DIR/host-needs-a{align}")
    units = full_built_in(env, host, outdir.Dir("gen"), runtime)
    sources = [*map(str, runtime_tree.sources(runtime)), *units, str(runtime / "host" / NEEDS)]
    objs = [host.Object(outdir.File(f"obj/{Path(str(s)).parent.name}/{Path(str(s)).stem}.o"), s) for s in sources]
    tool = host.Program(outdir.File("tgr_plan_needs"), objs)[0]
    _needs_tools[align] = tool
    return tool


def generate(env, **_kw) -> None:
    env.SetDefault(TIGRISBUILD_BUILD_DIR="#build", TIGRISBUILD_HOST_TENSOR_ALIGN=32, TIGRISBUILD_HOST_ALIAS="host")
    if "TIGRISBUILD_RUNTIME_DIR" not in env:
        env["TIGRISBUILD_RUNTIME_DIR"] = str(Path(__file__).resolve().parents[2] / "runtime")
    env.AddMethod(tigris_host, "TigrisHost")
    env.AddMethod(tigris_plan_needs, "TigrisPlanNeeds")


def exists(env) -> bool:
    return bool(env.WhereIs(env.get("TIGRISBUILD_HOST_CC", "gcc")))
