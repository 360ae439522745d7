"""What a build of the C runtime links: the generated ``*_built_in.c`` units.

The runtime defines every op implementation with ``TGR_OP_IMPL(OP_X, tiling, check, run)`` (or
``TGR_OP_FALLIBLE`` for one whose run can fail on the data, ``TGR_OP_REFUSED``; or ``TGR_OP_METHODS`` and one ``TGR_OP_METHOD(OP_X, METHOD_Y, run)`` per method
for an op whose arithmetic the plan selects, like Softmax's integer and float methods), the row-band
rule of an op that runs in row bands with ``TGR_OP_BANDS(OP_X, rule)``, and every execution path with ``TGR_PATH_IMPL(TGR_PATH_X, run, fits)`` (or
``TGR_PATH_RUNNER`` for the normal path), which give them external names (``tgr_run_OP_X``,
``tgr_path_run_TGR_PATH_X``...). Nothing in the runtime calls those names; four small generated
units do, with switches of direct calls (docs/firmware.md#per-model-runtime):

* ``ops/ops_built_in.c``: the ops' tiling modes, checks, band rules (an op without one is refused
  for row bands) and runs (by method, for ops with methods: only the plan's methods, with the mask
  of them the registry's check refuses the others by), and a bitmap of every opcode the full
  runtime implements (so a firmware can say "not built into this firmware");
* ``exec/paths_built_in.c``: the mask of linked paths, their runners and fit tests;
* ``memory/weights_built_in.c``: compressed weights (``weights.c`` and the LZ4 decoder), or plain
  in-place weights (``weights_plain.c``), which refuse a plan with compressed blocks;
* ``load/extensions_built_in.c``: schema 10 control-flow graphs (with the control path) and state
  variables at load, each full (``extensions.c``) or plain (``extensions_plain.c``, which refuses
  a plan that has them); ``exec/paths_built_in.c`` also holds the state copies around a run
  (``exec/state_copies.c``, or empty for a plan without state).

Direct calls, not tables of function pointers, so the linker keeps exactly what is called and the
static stack analysis (stackuse.py) sees every edge of the call graph.

For ``scons host`` (and every test build of the runtime) the lists hold everything; for a firmware
they hold what its plan uses with its arenas (:class:`Needs`, measured by ``tgr_plan_needs``, the
runtime's own loader and path selection built for the host), and ``--gc-sections`` drops the rest.
The lists are read from the runtime's sources, so the definitions are the only list there is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import runtime_tree
from .errors import TigrisError

#: generated unit -> its layer folder (each lists objects of its own layer or a lower one)
UNITS: dict[str, str] = {"ops_built_in": "ops", "paths_built_in": "exec", "weights_built_in": "memory",
                         "extensions_built_in": "load"}

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_OP_IMPL = re.compile(r"^[ \t]*TGR_OP_(?:IMPL|FALLIBLE)\([ \t]*(OP_\w+)[ \t]*,[ \t]*([^,;\n]+?)[ \t]*,", re.M)
_OP_REFUSED = re.compile(r"^[ \t]*TGR_OP_(?:REFUSED|CONTROL)\([ \t]*(OP_\w+)[ \t]*,", re.M)
_OP_METHODS = re.compile(r"^[ \t]*TGR_OP_METHODS\([ \t]*(OP_\w+)[ \t]*,[ \t]*([^,;\n]+?)[ \t]*,", re.M)
_OP_METHOD = re.compile(r"^[ \t]*TGR_OP_METHOD\([ \t]*(OP_\w+)[ \t]*,[ \t]*(METHOD_\w+)[ \t]*,", re.M)
_OP_BANDS = re.compile(r"^[ \t]*TGR_OP_BANDS\([ \t]*(OP_\w+)[ \t]*,", re.M)
_PATH_IMPL = re.compile(r"^[ \t]*TGR_PATH_(IMPL|RUNNER)\([ \t]*(TGR_PATH_\w+)[ \t]*,", re.M)
_ENUM_VALUE = re.compile(r"\b((?:OP|TGR_PATH|METHOD)_[A-Z0-9_]+)\s*=\s*(\d+)\b")


class BuiltInError(TigrisError):
    """The runtime's sources and the generated lists disagree."""


@dataclass(frozen=True)
class OpImpl:
    """One ``TGR_OP_IMPL``/``TGR_OP_REFUSED`` definition."""

    name: str  # the enum name, OP_CONV
    tiling: str  # its TILING_* expression as written ("0" for a refused op)
    runs: bool  # False for TGR_OP_REFUSED
    methods: bool = False  # TGR_OP_METHODS: runs by method (:class:`MethodImpl`)
    bands: bool = False  # declares a row-band rule (TGR_OP_BANDS)


@dataclass(frozen=True)
class MethodImpl:
    """One ``TGR_OP_METHOD`` definition."""

    name: str  # METHOD_SOFTMAX_FLOAT
    op: int  # the opcode whose method it is

    @property
    def label(self) -> str:
        """The name ``tgr_plan_needs`` and refusals use: METHOD_SOFTMAX_FLOAT -> softmax_float."""
        return self.name.removeprefix("METHOD_").lower()


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
    methods: dict[int, MethodImpl]


@dataclass(frozen=True)
class Needs:
    """What one plan takes with one firmware's arenas (``tgr_plan_needs`` output): code -> name."""

    ops: dict[int, str]
    paths: dict[int, str]
    lz4: bool
    slow_peak: int  # slow arena bytes the run used (exactly what `slow = "auto"` reserves)
    methods: dict[int, str] = field(default_factory=dict)  # of the ops with methods
    state: bool = False  # state variables (schema 10 SEC_STATE)


#: The path a plan with control-flow graphs takes (exactly such a plan takes it).
CONTROL_PATH = "TGR_PATH_CONTROL"


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
    methods: dict[int, MethodImpl] = {}
    for text in texts:
        for name, tiling in _OP_IMPL.findall(text):
            ops[_value_of(values, name, ops, "op")] = OpImpl(name, tiling, True)
        for name, tiling in _OP_METHODS.findall(text):
            ops[_value_of(values, name, ops, "op")] = OpImpl(name, tiling, True, methods=True)
        for op_name, name in _OP_METHOD.findall(text):
            code = _value_of(values, name, methods, "method")
            if not 0 < code < 32:
                raise BuiltInError(f"method {name} = {code}: method codes are 1..31 (one bit each in a mask)")
            methods[code] = MethodImpl(name, values.get(op_name, -1))
        for name in _OP_REFUSED.findall(text):
            ops[_value_of(values, name, ops, "op")] = OpImpl(name, "0", False)
        for macro, name in _PATH_IMPL.findall(text):
            code = _value_of(values, name, paths, "path")
            paths[code] = PathImpl(name, macro == "IMPL")
    banded: list[str] = [name for text in texts for name in _OP_BANDS.findall(text)]
    for kind, found in (("op", ops), ("path", paths)):
        if not found:
            raise BuiltInError(f"no {kind} implementations found under {runtime_tree.source_root(runtime)}")
    for code, method in methods.items():
        if method.op not in ops or not ops[method.op].methods:
            raise BuiltInError(f"method {method.name} belongs to no TGR_OP_METHODS op")
    for code, op in ops.items():
        if op.methods and not any(m.op == code for m in methods.values()):
            raise BuiltInError(f"op {op.name} runs by method but has no TGR_OP_METHOD")
    for name in banded:
        code = values.get(name, -1)
        if code not in ops or not ops[code].runs or "TILING_ROWS" not in re.split(r"[\s|()]+", ops[code].tiling):
            raise BuiltInError(f"band rule for {name}, which is not an op running in row bands (TILING_ROWS): "
                               "the rows path would never ask it")
        if ops[code].bands:
            raise BuiltInError(f"{name} declares two band rules")
        ops[code] = replace(ops[code], bands=True)
    return Catalog(ops=ops, paths=paths, methods=methods)


def _value_of(values: dict[str, int], name: str, found: dict, kind: str) -> int:
    if name not in values:
        raise BuiltInError(f"{kind} implementation {name} has no enum value the build can read")
    if values[name] in found:
        raise BuiltInError(f"{kind} {values[name]} is implemented twice: {found[values[name]].name} and {name}")
    return values[name]


def parse_needs(text: str) -> Needs | None:
    """``tgr_plan_needs`` output (``op 1 Conv``, ``method 1 softmax_integer``, ``path 0 normal``,
    ``lz4 0``, ``state 0`` lines) -> :class:`Needs`.

    ``None`` when the runtime refused the plan or the arenas (an ``error`` line): the firmware
    then links the full runtime and reports that refusal itself, exactly as it would have.
    """
    if text.startswith("error "):
        return None
    named: dict[str, dict[int, str]] = {"op": {}, "path": {}, "method": {}}
    scalars: dict[str, int] = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) == 3 and words[0] in named and words[1].isdigit():
            named[words[0]][int(words[1])] = words[2]
        elif len(words) == 2 and words[0] in ("lz4", "slow_peak", "state") and words[1].isdigit():
            scalars[words[0]] = int(words[1])
    if not {"lz4", "slow_peak"} <= set(scalars):
        raise BuiltInError(f"tgr_plan_needs printed no lz4/slow_peak lines: {text.strip()[:200]!r}")
    return Needs(named["op"], named["path"], scalars["lz4"] == 1, scalars["slow_peak"], named["method"],
                 scalars.get("state", 0) == 1)


def render(catalog: Catalog, needs: Needs | None = None) -> dict[str, str]:
    """The four generated units (``"ops/ops_built_in.c"`` -> C text); ``needs=None`` is the full set.

    Opcodes the full runtime does not implement are left out: the loader refuses them as it
    always does ("not supported by this runtime").
    """
    ops = sorted(catalog.ops) if needs is None else sorted(needs.ops.keys() & catalog.ops.keys())
    methods = sorted(catalog.methods) if needs is None else sorted(needs.methods.keys() & catalog.methods.keys())
    paths = sorted(catalog.paths) if needs is None else sorted(needs.paths.keys() & catalog.paths.keys())
    lz4 = True if needs is None else needs.lz4
    state = True if needs is None else needs.state
    graphs = any(catalog.paths[c].name == CONTROL_PATH for c in paths)
    what = "the full runtime" if needs is None else "the ops, methods and paths of one plan"
    head = f"/* Generated by site_scons/tigris_scons/builtin.py: {what}. Do not edit. */\n"
    return {"ops/ops_built_in.c": head + _ops_unit(catalog, ops, methods),
            "exec/paths_built_in.c": head + _paths_unit(catalog, paths) + _state_copies(state),
            "memory/weights_built_in.c": head + _weights_unit(lz4),
            "load/extensions_built_in.c": head + _extensions_unit(graphs, state)}


def _switch(selector: str, cases: list[tuple[int, str, str]], fallback: str) -> str:
    rows = "".join(f"    case {code}u: /* {name} */\n        {body}\n" for code, name, body in cases)
    return f"    switch ({selector}) {{\n{rows}    default:\n        {fallback}\n    }}\n"


def _ops_unit(catalog: Catalog, ops: list[int], methods: list[int]) -> str:
    impls = [(c, catalog.ops[c]) for c in ops]
    running = [(c, i) for c, i in impls if i.runs]
    bitmap = [0] * 32
    for code in catalog.ops:
        bitmap[code // 8] |= 1 << (code % 8)
    methods_of = {c: [m for m in methods if catalog.methods[m].op == c] for c, i in impls if i.methods}
    run_args = "const tgr_plan *p, uint32_t op, uint8_t *const *tensor_ptr, const int32_t *region"
    decls = "".join(f"tgr_status tgr_check_{i.name}(const tgr_plan *p, uint32_t op, tgr_error *err);\n" for _, i in impls)
    decls += "".join(f"uint32_t tgr_method_of_{i.name}(const tgr_plan *p, uint32_t op);\n" for _, i in impls if i.methods)
    decls += "".join(f"uint32_t tgr_run_{i.name}({run_args});\n" for _, i in running if not i.methods)
    decls += "".join(f"uint32_t tgr_run_{catalog.methods[m].name}({run_args});\n" for m in methods)
    decls += "".join(f"const char *tgr_band_problem_{i.name}(const tgr_plan *p, uint32_t op, uint32_t axis);\n"
                     for _, i in impls if i.bands)
    built = [(c, i.name, f"return TGR_OP_BUILT_IN{' | TGR_OP_RUNS' if i.runs else ''} | ({i.tiling});")
             for c, i in impls]
    checks = [(c, i.name, f"return tgr_check_{i.name}(p, op, err);") for c, i in impls]
    bands = [(c, i.name, f"return tgr_band_problem_{i.name}(p, op, axis);") for c, i in impls if i.bands]
    runs = [(c, i.name, f"return tgr_run_{i.name}(p, op, tensor_ptr, region);") for c, i in running if not i.methods]
    runs += [(c, i.name, _method_switch(catalog, i.name, methods_of[c])) for c, i in running if i.methods]
    method_of = [(c, i.name, f"return tgr_method_of_{i.name}(p, op);") for c, i in impls if i.methods]
    names = [(m, catalog.methods[m].name, f'return "{catalog.methods[m].label}";') for m in sorted(catalog.methods)]
    return ('#include "ops/ops_registry.h"\n\n' + decls
            + "\nuint32_t tgr_built_in_op(uint32_t opcode)\n{\n" + _switch("opcode", sorted(built), "return 0u;") + "}\n"
            + "\ntgr_status tgr_built_in_check(const tgr_plan *p, uint32_t op, tgr_error *err)\n{\n"
            + _switch("op_type(p, op)", sorted(checks),
                      "return tgr_fail(err, TGR_ERR_UNSUPPORTED, \"op %u is not built in\", op);")
            + "}\n"
            + f"\nuint32_t tgr_built_in_run({run_args})\n{{\n"
            + ("" if running else "    (void)tensor_ptr;\n    (void)region;\n")
            + _switch("op_type(p, op)", sorted(runs),
                      "return TGR_FAULT_NONE; /* the loader refused every op this build does not run */")
            + "}\n"
            + "\nuint32_t tgr_built_in_method(const tgr_plan *p, uint32_t op)\n{\n"
            + _switch("op_type(p, op)", sorted(method_of), "return 0u;") + "}\n"
            + "\nconst char *tgr_method_name(uint32_t method)\n{\n" + _switch("method", names, 'return "?";') + "}\n"
            + f"\nconst uint32_t tgr_built_in_methods = 0x{sum(1 << m for m in methods):x}u;\n"
            + "\nconst char *tgr_built_in_band_problem(const tgr_plan *p, uint32_t op, uint32_t axis)\n{\n"
            + ("" if bands else "    (void)axis;\n")
            + _switch("op_type(p, op)", sorted(bands),
                      'return TGR_TEXT("an op of this kind declares no band rule (TGR_OP_BANDS)");') + "}\n"
            + "\nconst uint8_t tgr_full_runtime_ops[32] = {" + ", ".join(f"0x{b:02x}" for b in bitmap) + "};\n")


def _method_switch(catalog: Catalog, op_name: str, methods: list[int]) -> str:
    """The run of an op with methods: a switch over the methods this build has."""
    rows = "".join(f"        case {m}u: /* {catalog.methods[m].name} */\n"
                   f"            return tgr_run_{catalog.methods[m].name}(p, op, tensor_ptr, region);\n"
                   for m in methods)
    return (f"switch (tgr_method_of_{op_name}(p, op)) {{\n{rows}        default:\n"
            f"            return TGR_FAULT_NONE; /* the loader refused every method this build does not run */\n"
            f"        }}")


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


def _extensions_unit(graphs: bool, state: bool) -> str:
    g = "full" if graphs else "plain"
    v = "full" if state else "plain"
    return ('#include "load/extensions.h"\n\n'
            "tgr_status tgr_bind_graphs(tgr_plan *p, uint32_t start, uint32_t end, tgr_error *err)\n"
            f"{{\n    return tgr_{g}_bind_graphs(p, start, end, err);\n}}\n\n"
            "tgr_status tgr_bind_state(tgr_plan *p, uint32_t start, uint32_t end, tgr_error *err)\n"
            f"{{\n    return tgr_{v}_bind_state(p, start, end, err);\n}}\n\n"
            "tgr_status tgr_check_state(const tgr_plan *p, uint32_t section_len, tgr_error *err)\n"
            f"{{\n    return tgr_{v}_check_state(p, section_len, err);\n}}\n")


def _state_copies(state: bool) -> str:
    """The state copies around a run (exec layer): the full ones, or none for a plan without state."""
    if state:
        return ("\ntgr_status tgr_state_in(tgr_session *s, tgr_error *err)\n{\n    return tgr_full_state_in(s, err);\n}\n"
                "\nvoid tgr_state_out(tgr_session *s)\n{\n    tgr_full_state_out(s);\n}\n")
    return ("\ntgr_status tgr_state_in(tgr_session *s, tgr_error *err)\n{\n    (void)s;\n    (void)err;\n"
            "    return TGR_OK;\n}\n\nvoid tgr_state_out(tgr_session *s)\n{\n    (void)s;\n}\n")


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
