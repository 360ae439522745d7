"""SCons tool: arm-none-eabi GCC for bare-metal Cortex-M55 (hard float, no MVE).

Load it into an environment dedicated to target code::

    cross = Environment(tools=[])
    cross.Tool('tigris_cm55', toolpath=[...])          # or prefix='/opt/gcc/bin/arm-none-eabi-'

It sets ``CC``/``AS``/``AR``/``LINK``... to ``$TIGRISBUILD_CROSS``-prefixed programs (default
``arm-none-eabi-``; a prefix the user already set is kept), adds
``-mcpu=cortex-m55+nomve -mthumb -mfloat-abi=hard``, per-function/data sections with
``--gc-sections``, ``.elf`` programs, and a linker map ``<program>.map`` that is declared as a
target (so size reports can depend on it and ``scons -c`` removes it).

A missing compiler does not fail here (``scons -h`` and host-only builds must keep working):
``TIGRISBUILD_CROSS_MISSING`` is set and the ``tigris`` tool turns it into a build error that
says what to install, raised only when target code is actually built.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

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


def _map_emitter(target, source, env):
    """Declare the linker map written by ``-Wl,-Map=${TARGET.base}.map`` as a side target."""
    base = SCons.Util.splitext(target[0].get_abspath())[0]
    target.append(env.File(base + ".map"))
    return target, source


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
    env.AppendUnique(
        CCFLAGS=["$TIGRISBUILD_CPU_FLAGS", *SECTION_FLAGS],
        ASFLAGS=["$TIGRISBUILD_CPU_FLAGS"],
        LINKFLAGS=["$TIGRISBUILD_CPU_FLAGS", *GC_LINK_FLAGS, "-Wl,-Map=${TARGET.base}.map"],
    )
    emitters = env.get("PROGEMITTER") or []
    if not SCons.Util.is_List(emitters):
        emitters = [emitters]
    if _map_emitter not in emitters:
        env["PROGEMITTER"] = emitters + [_map_emitter]
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
