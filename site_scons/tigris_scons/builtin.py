"""What a build of the C runtime links: the generated ``*_built_in.c`` units.

The runtime defines every op implementation with ``TGR_OP_IMPL(OP_X, tiling, check, run)`` (or
``TGR_OP_REFUSED``) and every execution path with ``TGR_PATH_IMPL(TGR_PATH_X, run, fits)`` (or
``TGR_PATH_RUNNER`` for the normal path), which give them external names (``tgr_run_OP_X``,
``tgr_path_run_TGR_PATH_X``...). Nothing in the runtime calls those names; three small generated
units do, with switches of direct calls (docs/firmware.md#per-model-runtime):

* ``ops/ops_built_in.c``: the ops' tiling modes, checks and runs, and a bitmap of every opcode the
  full runtime implements (so a firmware can say "not built into this firmware");
* ``exec/paths_built_in.c``: the mask of linked paths, their runners and fit tests;
* ``memory/weights_built_in.c``: compressed weights (``weights.c`` and the LZ4 decoder), or plain
  in-place weights (``weights_plain.c``), which refuse a plan with compressed blocks.

Direct calls, not tables of function pointers, so the linker keeps exactly what is called and the
static stack analysis (stackuse.py) sees every edge of the call graph.

For ``scons host`` (and every test build of the runtime) the lists hold everything; for a firmware
they hold what its plan uses with its arenas (:class:`Needs`, measured by ``tgr_plan_needs``, the
runtime's own loader and path selection built for the host), and ``--gc-sections`` drops the rest.
The lists are read from the runtime's sources, so the definitions are the only list there is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from . import runtime_tree
from .errors import TigrisError

#: generated unit -> its layer folder (each lists objects of its own layer or a lower one)
UNITS: dict[str, str] = {"ops_built_in": "ops", "paths_built_in": "exec", "weights_built_in": "memory"}

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_OP_IMPL = re.compile(r"^[ \t]*TGR_OP_IMPL\([ \t]*(OP_\w+)[ \t]*,[ \t]*([^,;\n]+?)[ \t]*,", re.M)
_OP_REFUSED = re.compile(r"^[ \t]*TGR_OP_REFUSED\([ \t]*(OP_\w+)[ \t]*,", re.M)
_PATH_IMPL = re.compile(r"^[ \t]*TGR_PATH_(IMPL|RUNNER)\([ \t]*(TGR_PATH_\w+)[ \t]*,", re.M)
_ENUM_VALUE = re.compile(r"\b((?:OP|TGR_PATH)_[A-Z0-9_]+)\s*=\s*(\d+)\b")


class BuiltInError(TigrisError):
    """The runtime's sources and the generated lists disagree."""


@dataclass(frozen=True)
class OpImpl:
    """One ``TGR_OP_IMPL``/``TGR_OP_REFUSED`` definition."""

    name: str  # the enum name, OP_CONV
    tiling: str  # its TILING_* expression as written ("0" for a refused op)
    runs: bool  # False for TGR_OP_REFUSED


@dataclass(frozen=True)
class PathImpl:
    """One ``TGR_PATH_IMPL``/``TGR_PATH_RUNNER`` definition."""

    name: str  # TGR_PATH_ROWS
    fits: bool  # False for the normal path's TGR_PATH_RUNNER (never asked)


@dataclass(frozen=True)
class Catalog:
    """Everything the full runtime implements, by opcode and by path code."""

    ops: dict[int, OpImpl]
    paths: dict[int, PathImpl]


@dataclass(frozen=True)
class Needs:
    """What one plan takes with one firmware's arenas (``tgr_plan_needs`` output): code -> name."""

    ops: dict[int, str]
    paths: dict[int, str]
    lz4: bool
    slow_peak: int  # slow arena bytes the run used (exactly what `slow = "auto"` reserves)


def _code(path: Path) -> str:
    return _COMMENTS.sub(" ", path.read_text(encoding="utf-8"))


def scan(runtime: Path) -> Catalog:
    """Read the implementations and the enum values they are named after from the runtime."""
    runtime = Path(runtime)
    texts = [_code(p) for p in runtime_tree.sources(runtime)]
    headers = [_code(p) for p in sorted(runtime_tree.source_root(runtime).rglob("*.h"))]
    headers += [_code(p) for p in sorted((runtime / "include").glob("*.h"))]
    values: dict[str, int] = {}
    for text in texts + headers:
        for name, value in _ENUM_VALUE.findall(text):
            values.setdefault(name, int(value))

    ops: dict[int, OpImpl] = {}
    paths: dict[int, PathImpl] = {}
    for text in texts:
        for name, tiling in _OP_IMPL.findall(text):
            ops[_value_of(values, name, ops, "op")] = OpImpl(name, tiling, True)
        for name in _OP_REFUSED.findall(text):
            ops[_value_of(values, name, ops, "op")] = OpImpl(name, "0", False)
        for macro, name in _PATH_IMPL.findall(text):
            code = _value_of(values, name, paths, "path")
            paths[code] = PathImpl(name, macro == "IMPL")
    for kind, found in (("op", ops), ("path", paths)):
        if not found:
            raise BuiltInError(f"no {kind} implementations found under {runtime_tree.source_root(runtime)}")
    return Catalog(ops=ops, paths=paths)


def _value_of(values: dict[str, int], name: str, found: dict, kind: str) -> int:
    if name not in values:
        raise BuiltInError(f"{kind} implementation {name} has no enum value the build can read")
    if values[name] in found:
        raise BuiltInError(f"{kind} {values[name]} is implemented twice: {found[values[name]].name} and {name}")
    return values[name]


def parse_needs(text: str) -> Needs | None:
    """``tgr_plan_needs`` output (``op 1 Conv``, ``path 0 normal``, ``lz4 0`` lines) -> :class:`Needs`.

    ``None`` when the runtime refused the plan or the arenas (an ``error`` line): the firmware
    then links the full runtime and reports that refusal itself, exactly as it would have.
    """
    if text.startswith("error "):
        return None
    ops: dict[int, str] = {}
    paths: dict[int, str] = {}
    scalars: dict[str, int] = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) == 3 and words[0] in ("op", "path") and words[1].isdigit():
            (ops if words[0] == "op" else paths)[int(words[1])] = words[2]
        elif len(words) == 2 and words[0] in ("lz4", "slow_peak") and words[1].isdigit():
            scalars[words[0]] = int(words[1])
    if set(scalars) != {"lz4", "slow_peak"}:
        raise BuiltInError(f"tgr_plan_needs printed no lz4/slow_peak lines: {text.strip()[:200]!r}")
    return Needs(ops, paths, scalars["lz4"] == 1, scalars["slow_peak"])


def render(catalog: Catalog, needs: Needs | None = None) -> dict[str, str]:
    """The three generated units (``"ops/ops_built_in.c"`` -> C text); ``needs=None`` is the full set.

    Opcodes the full runtime does not implement are left out: the loader refuses them as it
    always does ("not supported by this runtime").
    """
    ops = sorted(catalog.ops) if needs is None else sorted(needs.ops.keys() & catalog.ops.keys())
    paths = sorted(catalog.paths) if needs is None else sorted(needs.paths.keys() & catalog.paths.keys())
    lz4 = True if needs is None else needs.lz4
    what = "the full runtime" if needs is None else "the ops and paths of one plan"
    head = f"/* Generated by site_scons/tigris_scons/builtin.py: {what}. Do not edit. */\n"
    return {"ops/ops_built_in.c": head + _ops_unit(catalog, ops),
            "exec/paths_built_in.c": head + _paths_unit(catalog, paths),
            "memory/weights_built_in.c": head + _weights_unit(lz4)}


def _switch(selector: str, cases: list[tuple[int, str, str]], fallback: str) -> str:
    rows = "".join(f"    case {code}u: /* {name} */\n        {body}\n" for code, name, body in cases)
    return f"    switch ({selector}) {{\n{rows}    default:\n        {fallback}\n    }}\n"


def _ops_unit(catalog: Catalog, ops: list[int]) -> str:
    impls = [(c, catalog.ops[c]) for c in ops]
    running = [(c, i) for c, i in impls if i.runs]
    bitmap = [0] * 32
    for code in catalog.ops:
        bitmap[code // 8] |= 1 << (code % 8)
    decls = "".join(f"tgr_status tgr_check_{i.name}(const tgr_plan *p, uint32_t op, tgr_error *err);\n" for _, i in impls)
    decls += "".join(f"void tgr_run_{i.name}(const tgr_plan *p, uint32_t op, uint8_t *const *tensor_ptr, "
                     f"const int32_t *region);\n" for _, i in running)
    built = [(c, i.name, f"return TGR_OP_BUILT_IN{' | TGR_OP_RUNS' if i.runs else ''} | ({i.tiling});")
             for c, i in impls]
    checks = [(c, i.name, f"return tgr_check_{i.name}(p, op, err);") for c, i in impls]
    runs = [(c, i.name, f"tgr_run_{i.name}(p, op, tensor_ptr, region);\n        return;") for c, i in running]
    return ('#include "ops/ops_registry.h"\n\n' + decls
            + "\nuint32_t tgr_built_in_op(uint32_t opcode)\n{\n" + _switch("opcode", built, "return 0u;") + "}\n"
            + "\ntgr_status tgr_built_in_check(const tgr_plan *p, uint32_t op, tgr_error *err)\n{\n"
            + _switch("op_type(p, op)", checks, "return tgr_fail(err, TGR_ERR_UNSUPPORTED, \"op %u is not built in\", op);")
            + "}\n"
            + "\nvoid tgr_built_in_run(const tgr_plan *p, uint32_t op, uint8_t *const *tensor_ptr, const int32_t *region)\n{\n"
            + ("" if running else "    (void)tensor_ptr;\n    (void)region;\n")
            + _switch("op_type(p, op)", runs, "return; /* the loader refused every op this build does not run */")
            + "}\n"
            + "\nconst uint8_t tgr_full_runtime_ops[32] = {" + ", ".join(f"0x{b:02x}" for b in bitmap) + "};\n")


def _paths_unit(catalog: Catalog, paths: list[int]) -> str:
    impls = [(c, catalog.paths[c]) for c in paths]
    asked = [(c, i) for c, i in impls if i.fits]
    decls = "".join(f"tgr_status tgr_path_run_{i.name}(tgr_session *s, uint32_t stage, uint32_t limit, uint32_t path,\n"
                    f"                                 const uint8_t *const *weights, tgr_error *err);\n" for _, i in impls)
    decls += "".join(f"int tgr_path_fits_{i.name}(const tgr_plan *p, uint32_t first, uint32_t last, const char **why);\n"
                     for _, i in asked)
    mask = sum(1 << c for c in paths)
    runs = [(c, i.name, f"return tgr_path_run_{i.name}(s, stage, limit, path, weights, err);") for c, i in impls]
    fits = [(c, i.name, f"return tgr_path_fits_{i.name}(p, first, last, why);") for c, i in asked]
    unused_fit_args = "" if asked else "    (void)p;\n    (void)first;\n    (void)last;\n    (void)why;\n"
    return ('#include "exec/exec.h"\n\n' + decls
            + f"\nconst uint32_t tgr_built_in_paths = 0x{mask:x}u;\n"
            + "\ntgr_status tgr_path_run(uint32_t path, tgr_session *s, uint32_t stage, uint32_t limit,\n"
            + "                        const uint8_t *const *weights, tgr_error *err)\n{\n"
            + ("" if impls else "    (void)s;\n    (void)stage;\n    (void)limit;\n    (void)weights;\n")
            + _switch("path", runs, "return tgr_fail(err, TGR_ERR_EXEC, \"path %u is not built in\", path);") + "}\n"
            + "\nint tgr_path_fits(uint32_t path, const tgr_plan *p, uint32_t first, uint32_t last, const char **why)\n{\n"
            + unused_fit_args + _switch("path", fits, "return 0;") + "}\n")


def _weights_unit(lz4: bool) -> str:
    impl = "lz4" if lz4 else "plain"
    return ('#include "memory/weights.h"\n\n'
            "tgr_status tgr_bind_weight_blocks(tgr_plan *p, uint32_t start, uint32_t end, tgr_error *err)\n"
            f"{{\n    return tgr_{impl}_bind_weight_blocks(p, start, end, err);\n}}\n\n"
            "tgr_status tgr_check_weight_blocks(tgr_plan *p, tgr_error *err)\n"
            f"{{\n    return tgr_{impl}_check_weight_blocks(p, err);\n}}\n\n"
            "uint32_t tgr_stage_weight_bytes(const tgr_plan *p, uint32_t stage)\n"
            f"{{\n    return tgr_{impl}_stage_weight_bytes(p, stage);\n}}\n\n"
            "tgr_status tgr_unpack_stage_weights(tgr_session *s, uint32_t stage, const uint8_t **base, tgr_error *err)\n"
            f"{{\n    return tgr_{impl}_unpack_stage_weights(s, stage, base, err);\n}}\n")


def write(out_dir: Path, catalog: Catalog, needs: Needs | None = None) -> list[Path]:
    """Write the generated units under ``out_dir/<layer>/`` (only when their text changed)."""
    written = []
    for rel, text in render(catalog, needs).items():
        path = Path(out_dir) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
