"""Where the C runtime's sources live, and the order of its layers.

The runtime under ``runtime/src`` is split into layer folders; a unit (one ``.c`` file) may use
units of its own folder or of a lower layer, never a higher one (``tests/runtime/test_layers.py``
enforces it on the built objects). Every consumer of the source list (the SCons tools, the
warning and layer tests, the fuzz target, the size benchmark) takes it from here, so a new
file or folder is picked up everywhere or rejected everywhere.

Basenames are unique across folders on purpose: static archives name members by basename and
the linker map names them ``libtgr.a(ops_conv.o)``, so a second ``conv.c`` would make both
ambiguous.
"""

from __future__ import annotations

from pathlib import Path

#: Layer folders under ``runtime/src``, lowest first. ``host`` (``runtime/host``, the tigris-ml
#: host ABI shim) sits above all of them; it is not part of the firmware.
LAYERS: tuple[str, ...] = ("base", "kernels", "plan", "memory", "ops", "exec", "load")
HOST_LAYER = "host"


class RuntimeTreeError(ValueError):
    """The runtime folder does not have the layout the build expects."""


def source_root(runtime: Path) -> Path:
    """``runtime/src``: the include root every runtime file names its headers from."""
    return Path(runtime) / "src"


def include_dirs(runtime: Path) -> list[Path]:
    """Include paths for runtime code: the public API and the layer root (``"plan/plan.h"``)."""
    return [Path(runtime) / "include", source_root(runtime)]


def sources(runtime: Path) -> list[Path]:
    """Every runtime ``.c`` file (host shim excluded), layer by layer, lowest first.

    Raises :class:`RuntimeTreeError` for a ``.c`` file outside a layer folder (it would escape
    the layer check) or a basename used twice.
    """
    root = source_root(runtime)
    found = sorted(root.rglob("*.c"))
    stray = [p for p in found if p.relative_to(root).parts[0] not in LAYERS or len(p.relative_to(root).parts) != 2]
    if stray:
        names = ", ".join(str(p.relative_to(root)) for p in stray)
        raise RuntimeTreeError(f"runtime sources outside the layer folders {', '.join(LAYERS)}: {names}")
    ordered = sorted(found, key=lambda p: (LAYERS.index(p.parent.name), p.name))
    seen: dict[str, Path] = {}
    for path in ordered:
        if path.stem in seen:
            raise RuntimeTreeError(f"runtime source basename {path.stem!r} is used twice: "
                                   f"{seen[path.stem].relative_to(root)} and {path.relative_to(root)}")
        seen[path.stem] = path
    return ordered


def unit_name(runtime: Path, path: Path) -> str:
    """``ops/ops_conv`` for ``runtime/src/ops/ops_conv.c``; ``host/tigris_host`` for the shim."""
    path = Path(path)
    if path.parent == Path(runtime) / "host":
        return f"{HOST_LAYER}/{path.stem}"
    rel = path.relative_to(source_root(runtime))
    return f"{rel.parent.as_posix()}/{rel.stem}"


def layer_rank(unit: str) -> int:
    """Position of a unit's layer (``ops/ops_conv`` -> 4); the host shim ranks above every layer."""
    layer = unit.split("/", 1)[0]
    if layer == HOST_LAYER:
        return len(LAYERS)
    if layer not in LAYERS:
        raise RuntimeTreeError(f"{unit}: {layer!r} is not a runtime layer ({', '.join(LAYERS)})")
    return LAYERS.index(layer)
