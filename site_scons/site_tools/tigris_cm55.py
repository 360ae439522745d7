"""SCons tool: arm-none-eabi GCC for bare-metal Cortex-M (named for its default core, the M55).

Load it into an environment dedicated to target code::

    cross = Environment(tools=[])
    cross.Tool('tigris_cm55', toolpath=[...])          # or prefix='/opt/gcc/bin/arm-none-eabi-'

It sets ``CC``/``AS``/``AR``/``LINK``... to ``$TIGRISBUILD_CROSS``-prefixed programs (default
``arm-none-eabi-``; a prefix the user already set is kept), adds ``$TIGRISBUILD_CPU_FLAGS``
(default ``-mcpu=cortex-m55+nomve -mthumb -mfloat-abi=hard``; the ``tigris`` tool sets the
board's, ``tigris_scons.boards``), per-function/data sections with
``--gc-sections``, ``.elf`` programs, and a linker map ``<program>.map`` that is declared as a
target (so size reports can depend on it and ``scons -c`` removes it). Built with
``-fstack-usage`` in ``CCFLAGS``, an object's ``<object>.su`` is declared as a target too:
``env.Object()`` then returns ``[obj, obj.su]`` and ``Program``/``StaticLibrary`` drop the ``.su``
from their sources. Every file a later step reads is thus a target, and ``CacheDir`` restores it
with the object. Paths under the SConstruct folder are recorded relative to it
(``-ffile-prefix-map``, ``$TIGRISBUILD_PATH_MAP_FLAGS``; set it to ``[]`` to keep absolute ones),
so checkouts at different places build identical objects (docs/cache.md).

A missing compiler does not fail here (``scons -h`` and host-only builds must keep working):
``TIGRISBUILD_CROSS_MISSING`` is set and the ``tigris`` tool turns it into a build error that
says what to install, raised only when target code is actually built.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import SCons.Builder
import SCons.Tool
import SCons.Util

_SITE = str(Path(__file__).resolve().parent.parent)
if _SITE not in sys.path:
    sys.path.insert(0, _SITE)

from tigris_scons.firmware import CPU_FLAGS, GC_LINK_FLAGS, SECTION_FLAGS  # noqa: E402

DEFAULT_PREFIX = "arm-none-eabi-"
INSTALL_HINT = (
    "install it with: apt-get install --no-install-recommends gcc-arm-none-eabi "
    "libnewlib-arm-none-eabi (or pass cross=/path/to/bin/arm-none-eabi-)"
)


STACK_USAGE_FLAG = "-fstack-usage"
SIDE_SUFFIXES = (".su",)  # objects' side files: never link or archive inputs


def _map_emitter(target, source, env):
    """Declare the linker map written by ``-Wl,-Map=${TARGET.base}.map`` as a side target."""
    base = SCons.Util.splitext(target[0].get_abspath())[0]
    target.append(env.File(base + ".map"))
    return target, source


def _su_emitter(target, source, env):
    """With ``-fstack-usage`` gcc writes ``<object base>.su`` next to each object: declare it as a
    second target, so CacheDir stores and restores it with the object and ``scons -c`` removes it
    (the stack analysis reads it next to the object)."""
    flags = env.subst("$CCFLAGS $CFLAGS").split()
    if STACK_USAGE_FLAG in flags:
        target = list(target) + [env.File(SCons.Util.splitext(t.get_abspath())[0] + ".su")
                                 for t in target if str(t).endswith(env.subst("$OBJSUFFIX"))]
    return target, source


def _drop_side_sources(target, source, env):
    """``env.Object()`` returns ``[obj, obj.su]``: only the object is linked or archived."""
    return target, [s for s in source if not str(s).endswith(SIDE_SUFFIXES)]


def _add_emitter(env, var: str, emitter) -> None:
    """Append ``emitter`` to the emitter list in ``$var`` (once)."""
    emitters = env.get(var) or []
    if not SCons.Util.is_List(emitters):
        emitters = [emitters]
    if emitter not in emitters:
        env[var] = list(emitters) + [emitter]


def _add_object_emitter(env) -> None:
    """Chain :func:`_su_emitter` after the C object emitter of every C suffix.

    The object builder is the environment's own unless it was cloned from another one after
    that one loaded the C tools; :func:`_su_emitter` then also serves that other environment,
    where it declares ``.su`` files only for objects compiled with ``-fstack-usage`` too."""
    static_obj, _shared = SCons.Tool.createObjBuilders(env)
    for suffix in SCons.Tool.CSuffixes:
        current = static_obj.emitter.get(suffix)
        if current is None or current is _su_emitter or \
                (isinstance(current, SCons.Builder.ListEmitter) and _su_emitter in current):
            continue
        static_obj.add_emitter(suffix, SCons.Builder.ListEmitter([current, _su_emitter]))


def _path_map_flags(env) -> list[str]:
    """``-ffile-prefix-map=<top>=.``: objects record paths under the SConstruct folder (DWARF
    compilation folder, include folders, ``__FILE__``) relative to it, so two checkouts at
    different places compile byte-identical objects. Between ``$(``/``$)``: the flag names the
    checkout, so it stays out of the build signature (the CacheDir key)."""
    top = env.Dir("#").get_abspath()
    tops = dict.fromkeys([top, os.path.realpath(top)])
    return ["$(", *(f"-ffile-prefix-map={path}=." for path in tops), "$)"]


def generate(env, prefix: str | None = None, **_kw) -> None:
    for tool in ("gcc", "gnulink", "ar", "gas"):
        SCons.Tool.Tool(tool)(env)
    if prefix is not None:
        env["TIGRISBUILD_CROSS"] = prefix
    else:
        env.SetDefault(TIGRISBUILD_CROSS=DEFAULT_PREFIX)
    env["CC"] = "${TIGRISBUILD_CROSS}gcc"
    env["AS"] = "${TIGRISBUILD_CROSS}as"
    env["AR"] = "${TIGRISBUILD_CROSS}ar"
    env["RANLIB"] = "${TIGRISBUILD_CROSS}ranlib"
    env["LINK"] = "${TIGRISBUILD_CROSS}gcc"
    env["OBJCOPY"] = "${TIGRISBUILD_CROSS}objcopy"
    env["SIZE"] = "${TIGRISBUILD_CROSS}size"
    env["PROGSUFFIX"] = ".elf"
    env["OBJSUFFIX"] = ".o"
    env["LIBPREFIX"] = "lib"
    env["LIBSUFFIX"] = ".a"
    env["TIGRISBUILD_CPU_FLAGS"] = list(CPU_FLAGS)
    env.SetDefault(TIGRISBUILD_PATH_MAP_FLAGS=_path_map_flags(env))
    env.AppendUnique(
        CCFLAGS=["$TIGRISBUILD_CPU_FLAGS", *SECTION_FLAGS, "$TIGRISBUILD_PATH_MAP_FLAGS"],
        ASFLAGS=["$TIGRISBUILD_CPU_FLAGS"],
        LINKFLAGS=["$TIGRISBUILD_CPU_FLAGS", *GC_LINK_FLAGS, "-Wl,-Map=${TARGET.base}.map"],
    )
    _add_emitter(env, "PROGEMITTER", _drop_side_sources)
    _add_emitter(env, "PROGEMITTER", _map_emitter)
    _add_emitter(env, "LIBEMITTER", _drop_side_sources)
    _add_object_emitter(env)
    cc = env.subst("${TIGRISBUILD_CROSS}gcc")
    found = _find(env, cc)
    if found and os.sep not in cc and not env.WhereIs(cc):
        env.PrependENVPath("PATH", os.path.dirname(found))  # on the user's PATH, not SCons's
    env["TIGRISBUILD_CROSS_MISSING"] = None if found else f"{cc} not found; {INSTALL_HINT}"


def _find(env, program: str) -> str | None:
    """Absolute path of ``program`` (a name looked up on PATH, or a path), or None."""
    if os.sep in program:
        return program if os.access(program, os.X_OK) else None
    return env.WhereIs(program) or shutil.which(program)


def exists(env) -> bool:
    prefix = env.subst("${TIGRISBUILD_CROSS}") if "TIGRISBUILD_CROSS" in env else DEFAULT_PREFIX
    return _find(env, prefix + "gcc") is not None
