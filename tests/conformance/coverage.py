"""Generate ``docs/coverage.md``: every plan opcode (1..92) and what our runtime does with it.

Run from the repository root::

    .venv/bin/python tests/conformance/coverage.py            # print the document
    .venv/bin/python tests/conformance/coverage.py --write    # rewrite docs/coverage.md

``tests/conformance/test_coverage_doc.py`` regenerates the document and fails when
``docs/coverage.md`` differs, so a change to the runtime's op tables, its paths or its verdict on
a tigris-ml fixture shows up as a stale document instead of drifting silently.

Where every column comes from (nothing here is typed in by hand):

* names, opcodes, reference backends and dtype signatures: ``tigris.operator_contract``
  (tigris-ml 0.12.1);
* supported or not, and the tiling mode: the ``TGR_OP_IMPL(opcode, TILING_..., check, run)`` and
  ``TGR_OP_REFUSED(opcode, check)`` definitions in ``runtime/src/ops/ops_*.c``. The parser refuses
  any definition it does not understand, and test_coverage_doc.py checks the result against the
  built library itself (``tgr_built_in_op`` through ctypes), so a parser that misses one fails
  instead of lying;
* execution paths: the executor's path selection (``select_path`` in ``exec/path_select.c``)
  gives the set of paths; an op can take ``tiled``/``tiled_2d``/``chain`` when its tiling mode
  is spatial (``stripes_fit`` refuses TILING_NONE; TILING_RESAMPLE, Resize, and
  TILING_ALONE ops only ``tiled``, TILING_2D_ONLY ops only ``tiled_2d``), ``rows`` when it has
  TILING_ROWS
  (``rows_fit``), and ``by_input``/``transpose``/``reshape`` when the opcode is the one
  those single-op paths test for (``by_input_shape``, ``transpose_shape``,
  ``reshape_fit``). test_tflite_fixtures.py checks every path our runtime reports
  in its traces against this column;
* refusal category of an op the runtime does not run: a ``TGR_OP_REFUSED`` entry is "arithmetic
  not reproduced exactly"; otherwise the contract decides: no backend at all ("refused like the
  reference": the reference refuses such plans too, "operator contract is not executable"), no
  int8 backend ("float only"), state or control-flow operands, operands that are not int8
  (int32/bool/float), else "not implemented". The legend under the table explains only the
  categories that have rows;
* fixtures: every ``tests/fixtures/tflite/ops/*.tflite`` of the tigris-ml 0.12.1 sdist compiled
  at 256K (``models_data.compile_model``) and loaded by our library (``models_data.our_library``);
* our tests: ``tests/opmodels`` cases (their expected plan opcodes), and the test modules of
  ``tests/ops``, ``tests/runtime``, ``tests/paths`` and ``tests/conformance`` that name the
  operator as a quoted string or in the title line of their docstring (as the contract spells it
  or in capitals: ``test_ops_state.py`` is "...: SVDF carried from run to run",
  ``test_ops_control.py`` "Control flow (If, While) ..."). A static scan, so "names it" rather
  than "proves it".
"""

from __future__ import annotations

import argparse
import ast
import functools
import re
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
REPO = TESTS.parent
SRC = REPO / "runtime" / "src"
OPS = SRC / "ops"
EXEC = SRC / "exec"
DOC = REPO / "docs" / "coverage.md"

REGENERATE = ".venv/bin/python tests/conformance/coverage.py --write"

#: every execution path name, in the order the host ABI numbers them (tgr.h TGR_PATH_*)
PATH_ORDER = ("normal", "tiled", "tiled_2d", "by_input", "transpose", "rows", "reshape", "chain", "control")

TILING_POINTWISE, TILING_WINDOW, TILING_RESAMPLE, TILING_SPATIAL, TILING_ROWS = 1, 2, 3, 3, 4
TILING_ALONE, TILING_2D_ONLY = 8, 16
TILING_BITS = {"TILING_NONE": 0, "TILING_POINTWISE": 1, "TILING_WINDOW": 2, "TILING_RESAMPLE": 3,
               "TILING_SPATIAL": 3, "TILING_ROWS": 4, "TILING_ALONE": 8, "TILING_2D_ONLY": 16}
SPATIAL_MODES = {TILING_POINTWISE: "POINTWISE", TILING_WINDOW: "WINDOW", TILING_RESAMPLE: "RESAMPLE"}

# ----------------------------------------------------------------------------- the runtime's tables


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


@functools.cache
def op_constants() -> dict[str, int]:
    """``OP_NAME = N`` enumerators and ``#define OP_NAME Nu`` of the runtime sources."""
    consts: dict[str, int] = {}
    for path in sorted(SRC.rglob("*.[ch]")):
        text = _strip_comments(path.read_text())
        found = re.findall(r"\b(OP_[A-Z0-9_]+)\s*=\s*(\d+)", text)
        found += re.findall(r"#define\s+(OP_[A-Z0-9_]+)\s+(\d+)u?\b", text)
        for name, value in found:
            if consts.setdefault(name, int(value)) != int(value):
                raise ValueError(f"{path.name}: {name} = {value} contradicts {consts[name]}")
    return consts


def _opcode(token: str) -> int:
    return int(token) if token.isdigit() else op_constants()[token]


@dataclass(frozen=True)
class TableEntry:
    opcode: int
    family: str      # the family file, e.g. ops_conv.c
    tiling: int      # TILING_* bits
    check: str
    run: str

    @property
    def refuses(self) -> bool:
        """A name-only entry: the check refuses every plan and there is no run function (NULL)."""
        return self.run in {"NULL", "0", "run_nothing"}


_IMPL = re.compile(r"^[ \t]*TGR_OP_(?:IMPL|FALLIBLE|METHODS)\([ \t]*(OP_[A-Z0-9_]+)[ \t]*,[ \t]*(TILING_[A-Z0-9_]+(?:[ \t]*\|[ \t]*TILING_[A-Z0-9_]+)*)"
                   r"[ \t]*,[ \t]*(\w+)[ \t]*,[ \t]*(\w+)[ \t]*\)[ \t]*;", re.M)
_REFUSED = re.compile(r"^[ \t]*TGR_OP_REFUSED\([ \t]*(OP_[A-Z0-9_]+)[ \t]*,[ \t]*(\w+)[ \t]*\)[ \t]*;", re.M)
#: If/While: a load-time check here, run by the executor's control path
_CONTROL_OP = re.compile(r"^[ \t]*TGR_OP_CONTROL\([ \t]*(OP_[A-Z0-9_]+)[ \t]*,[ \t]*(\w+)[ \t]*\)[ \t]*;", re.M)


@functools.cache
def family_tables() -> dict[int, TableEntry]:
    """opcode -> its ``TGR_OP_IMPL`` (or ``TGR_OP_METHODS``, ``TGR_OP_REFUSED``) definition in ``ops/ops_*.c``."""
    entries: dict[int, TableEntry] = {}

    def add(path: Path, entry: TableEntry) -> None:
        if entry.opcode in entries:
            raise ValueError(f"{path.name}: opcode {entry.opcode} is also implemented in {entries[entry.opcode].family}")
        entries[entry.opcode] = entry

    for path in sorted(OPS.glob("ops_*.c")):
        text = _strip_comments(path.read_text())
        for row in _IMPL.finditer(text):
            tiling = 0
            for flag in re.split(r"\s*\|\s*", row.group(2)):
                tiling |= TILING_BITS[flag]
            add(path, TableEntry(_opcode(row.group(1)), path.name, tiling, row.group(3), row.group(4)))
        for row in _REFUSED.finditer(text):
            add(path, TableEntry(_opcode(row.group(1)), path.name, 0, row.group(2), "NULL"))
        for row in _CONTROL_OP.finditer(text):
            add(path, TableEntry(_opcode(row.group(1)), path.name, 0, row.group(2), "control path"))
        uses = len(re.findall(r"\bTGR_OP_(?:IMPL|FALLIBLE|METHODS|REFUSED|CONTROL)\(", text))
        if uses != len(_IMPL.findall(text)) + len(_REFUSED.findall(text)) + len(_CONTROL_OP.findall(text)):
            raise ValueError(f"{path.name}: a TGR_OP_IMPL/TGR_OP_REFUSED this parser cannot read")
    if not entries:
        raise ValueError(f"no TGR_OP_IMPL definitions under {OPS}")
    return entries


def _function_body(path: Path, name: str) -> str:
    text = _strip_comments(path.read_text())
    m = re.search(rf"\n[a-z][\w ]*\b{name}\s*\([^)]*\)\s*\{{(.*?)\n\}}", text, re.S)
    if m is None:
        raise ValueError(f"{path.name}: {name} not found")
    return m.group(1)


@functools.cache
def single_op_paths() -> dict[str, frozenset[int]]:
    """The paths reserved to one opcode family, from the shape tests that select them."""
    tests = {"by_input": ("path_by_input.c", "by_input_shape"),
             "transpose": ("path_rows.c", "transpose_shape"),
             "reshape": ("path_rows.c", "reshape_fit")}
    out = {}
    for path_name, (file, func) in tests.items():
        codes = {_opcode(t) for t in re.findall(r"op_type\s*\([^)]*\)\s*[!=]=\s*(OP_[A-Z0-9_]+|\d+)",
                                                _function_body(EXEC / file, func))}
        if not codes:
            raise ValueError(f"{file}: {func} tests no opcode")
        out[path_name] = frozenset(codes)
    return out


@functools.cache
def executor_paths() -> tuple[str, ...]:
    """The paths ``tgr_select_path`` can return (its decision is ``select_path``), in PATH_ORDER."""
    body = _function_body(EXEC / "path_select.c", "select_path")
    names = {m.lower() for m in re.findall(r"\bTGR_PATH_([A-Z0-9_]+)", body)}
    unknown = names - set(PATH_ORDER)
    if unknown or not names:
        raise ValueError(f"path_select.c: tgr_select_path returns unknown paths {sorted(unknown)}")
    return tuple(p for p in PATH_ORDER if p in names)


def op_paths(opcode: int) -> tuple[str, ...]:
    """Every path a stage holding this op can take on our runtime (empty when refused)."""
    entry = family_tables().get(opcode)
    if entry is None or entry.refuses:
        return ()
    if entry.run == "control path":
        return ("control",)
    paths = {"normal"}
    one_d_only = entry.tiling & TILING_SPATIAL and entry.tiling & TILING_ALONE
    if entry.tiling & TILING_SPATIAL == TILING_RESAMPLE or one_d_only:
        paths.add("tiled")  # Resize and TILING_ALONE ops: 1-D stripes of a single stage only
    elif entry.tiling & TILING_SPATIAL and entry.tiling & TILING_2D_ONLY:
        paths.add("tiled_2d")  # ConvTranspose
    elif entry.tiling & TILING_SPATIAL:
        paths |= {"tiled", "tiled_2d", "chain"}
    if entry.tiling & TILING_ROWS:
        paths.add("rows")
    for name, codes in single_op_paths().items():
        if opcode in codes:
            paths.add(name)
    return tuple(p for p in executor_paths() if p in paths)


def tiling_text(entry: TableEntry) -> str:
    names = [SPATIAL_MODES[entry.tiling & TILING_SPATIAL]] if entry.tiling & TILING_SPATIAL else []
    names += ["ROWS"] if entry.tiling & TILING_ROWS else []
    names += ["ALONE"] if entry.tiling & TILING_ALONE else []
    names += ["2D_ONLY"] if entry.tiling & TILING_2D_ONLY else []
    return "+".join(names) if names else "NONE"


# ----------------------------------------------------------------------------- the operator contract

#: dtype codes of tigris.operator_contract signatures that an int8 tensor satisfies
_INT8_CAPABLE = {0, 250, 253, 255}  # DATA, FLOAT_OR_DATA, DATA_OR_INT32, DATA_OR_BOOL
_STATE, _CONTROL = 254, 251


@functools.cache
def contract() -> dict[int, object]:
    from tigris.operator_contract import OPERATOR_CONTRACT

    by_code = {c.opcode: (name, c) for name, c in OPERATOR_CONTRACT.items()}
    return dict(sorted(by_code.items()))


def op_name(opcode: int) -> str:
    return contract()[opcode][0]


SUPPORTED = "supported"
NOT_REPRODUCED = "refused: arithmetic not reproduced exactly"
LIKE_REFERENCE = "refused like the reference"
FLOAT_ONLY = "refused: float only"
STATEFUL = "refused: state variables"
NOT_INT8 = "refused: operands not int8"
NOT_IMPLEMENTED = "refused: not implemented"


def status(opcode: int) -> str:
    entry = family_tables().get(opcode)
    if entry is not None:
        return NOT_REPRODUCED if entry.refuses else SUPPORTED
    _, c = contract()[opcode]
    sig = tuple(c.signature.inputs) + tuple(c.signature.outputs)
    if not c.backends:
        return LIKE_REFERENCE
    if "s8_ref" not in c.backends:
        return FLOAT_ONLY
    if _STATE in sig or _CONTROL in sig:
        return STATEFUL
    if c.signature.inputs[0] not in _INT8_CAPABLE or any(d not in _INT8_CAPABLE for d in c.signature.outputs):
        return NOT_INT8
    return NOT_IMPLEMENTED


STATUS_NOTES = {
    SUPPORTED: "a `TGR_OP_IMPL` (or `TGR_OP_FALLIBLE`, `TGR_OP_METHODS`, `TGR_OP_CONTROL`) of "
               "`runtime/src/ops/ops_*.c`; runs byte-identical to the reference where tests reach it",
    NOT_REPRODUCED: "a `TGR_OP_REFUSED` names it only to refuse it at load: the reference's int8 arithmetic is not "
                    "reproduced bit for bit (the header of its `ops_*.c` says why)",
    LIKE_REFERENCE: "no backend of the reference executes it (`operator contract is not executable`); the compiler "
                    "folds it into other ops",
    FLOAT_ONLY: "the reference has no int8 kernel, so it only occurs in float plans, which this runtime refuses by "
                "design",
    STATEFUL: "its contract has state or control-flow operands and no family here implements it; refused by "
              "name at load",
    NOT_INT8: "reads or writes runtime tensors this runtime does not hold (it holds int8, bool, int32 indices, "
              "int16 state and float32 inside the plan: see above)",
    NOT_IMPLEMENTED: "an int8 op of the reference with no implementation here; refused by name at load",
}

# ----------------------------------------------------------------------------- fixtures


@functools.cache
def _plan_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="tgr_conformance_"))


@functools.cache
def sdist_ops() -> Path | None:
    from tests.ops.models_data import sdist_ops_dir

    return sdist_ops_dir()


@functools.cache
def compile_fixture(name: str, budget: str = "256K") -> Path | str:
    """The fixture compiled at ``budget`` (in-process), or the compiler's complaint as a string."""
    from tests.ops.models_data import compile_model

    ops = sdist_ops()
    assert ops is not None, "tigris-ml sdist fixtures unavailable"
    try:
        return compile_model(ops / f"{name}.tflite", _plan_dir() / budget / f"{name}.tgrs", budget)
    except RuntimeError as exc:
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        return " / ".join(lines[-2:])


@functools.cache
def plan_info(plan: Path) -> dict:
    from tests.ops.models_data import read_plan

    return read_plan(plan)


def is_float_plan(plan: Path) -> bool:
    return plan_info(plan)["num_quant_params"] == 0


def fixture_names() -> list[str]:
    ops = sdist_ops()
    return sorted(p.stem for p in ops.glob("*.tflite")) if ops is not None else []


def load_message(plan: Path, library: Path | None) -> str | None:
    """None when the runtime (``library`` None = the reference) loads ``plan``, else its message."""
    from tigris.runtime import RuntimeError as TigrisError

    from tests.runtime.oracle import open_session

    try:
        open_session(plan, library).close()
    except TigrisError as exc:
        return str(exc)
    return None


@dataclass(frozen=True)
class FixtureRecord:
    name: str
    kind: str                # "compile-refused", "float" or "int8"
    opcodes: tuple[int, ...]
    reference: str | None    # the reference's load refusal (None: loads)
    ours: str | None         # our load refusal (None: loads)
    note: str = ""           # the compiler's complaint for compile-refused


def survey(library: Path) -> list[FixtureRecord]:
    records = []
    for name in fixture_names():
        plan = compile_fixture(name)
        if isinstance(plan, str):
            records.append(FixtureRecord(name, "compile-refused", (), None, None, plan))
            continue
        info = plan_info(plan)
        codes = tuple(sorted({o["op_type"] for o in info["ops"]}))
        kind = "float" if is_float_plan(plan) else "int8"
        records.append(FixtureRecord(name, kind, codes, load_message(plan, None), load_message(plan, library)))
    return records


def message_class(message: str) -> str:
    """A refusal message without its op/tensor/stage indices."""
    return re.sub(r"\b(op|tensor|stage) \d+\b", r"\1 N", message)


# ----------------------------------------------------------------------------- our own tests

_SCANNED = ("ops", "runtime", "paths", "conformance")


def _title(text: str) -> str:
    """The first line of a module's docstring: what the module says it tests."""
    doc = ast.get_docstring(ast.parse(text)) or ""
    return doc.splitlines()[0] if doc else ""


@functools.cache
def naming_tests() -> dict[int, tuple[str, ...]]:
    """opcode -> test modules that name the operator as a quoted string, or in their title line (as
    the contract spells it or in capitals: SVDF, LSTM)."""
    names = {op_name(code): code for code in contract()}
    out: dict[int, set[str]] = defaultdict(set)
    for folder in _SCANNED:
        for path in sorted((TESTS / folder).glob("test_*.py")):
            text = path.read_text()
            title = set(re.findall(r"\b[A-Za-z][A-Za-z0-9]*\b", _title(text)))
            quoted = set(re.findall(r"[\"']([A-Z][A-Za-z0-9]+)[\"']", text))
            for name, code in names.items():
                if name in quoted or name in title or name.upper() in title:
                    out[code].add(f"{folder}/{path.stem}")
    return {k: tuple(sorted(v)) for k, v in out.items()}


@functools.cache
def opmodels_cases() -> dict[int, tuple[str, ...]]:
    from tests.opmodels import CASES

    out: dict[int, set[str]] = defaultdict(set)
    for case in CASES.values():
        for code in case.expect_ops:
            out[code].add(case.name)
    return {k: tuple(sorted(v)) for k, v in out.items()}


# ----------------------------------------------------------------------------- probes


def probe_versions(plan: Path, library: Path, versions: Iterable[int] = range(0, 17)) -> list[int]:
    """Plan schema versions our loader does not refuse as unsupported (header field patched)."""
    from tests.runtime.plantools import PlanView

    view = PlanView(plan)
    accepted = []
    for version in versions:
        patched = _plan_dir() / "versions" / f"v{version}.tgrs"
        patched.parent.mkdir(parents=True, exist_ok=True)
        patched.write_bytes(view.set_header("version", version))
        message = load_message(patched, library)
        if message is None or "unsupported plan version" not in message:
            accepted.append(version)
    return accepted


def probe_lz4(name: str, library: Path) -> str | None:
    """Our load verdict on fixture ``name`` compiled with ``-c lz4`` (None: loads)."""
    from tests.opmodels import compile_plan

    ops = sdist_ops()
    plan = compile_plan(ops / f"{name}.tflite", "256K", _plan_dir() / "lz4" / f"{name}.tgrs", ("-c", "lz4"))
    if not plan_info(plan).get("weight_blocks"):
        raise AssertionError(f"{name} compiled with -c lz4 has no weight blocks")
    return load_message(plan, library)


# ----------------------------------------------------------------------------- the document


def _ranges(values: list[int]) -> str:
    out, start = [], None
    for i, v in enumerate(values):
        if start is None:
            start = v
        if i + 1 == len(values) or values[i + 1] != v + 1:
            out.append(f"{start}" if start == v else f"{start}..{v}")
            start = None
    return ", ".join(out)


def _names(items: Iterable[str], limit: int = 4) -> str:
    items = list(items)
    shown = ", ".join(f"`{i}`" for i in items[:limit])
    return shown + (f" +{len(items) - limit}" if len(items) > limit else "")


def render(records: list[FixtureRecord], versions: list[int], lz4: tuple[str, str | None]) -> str:
    int8 = [r for r in records if r.kind == "int8"]
    ops_fixtures: dict[int, list[FixtureRecord]] = defaultdict(list)
    for r in int8:
        for code in r.opcodes:
            ops_fixtures[code].append(r)

    lines = [
        "# Operator coverage of our runtime",
        "",
        "<!-- Generated by tests/conformance/coverage.py; do not edit. -->",
        f"Generated by `tests/conformance/coverage.py`; regenerate with `{REGENERATE}`.",
        "`tests/conformance/test_coverage_doc.py` fails while this file is stale. How each column is",
        "derived is explained in the generator's docstring; in short: status and tiling come from the",
        "`TGR_OP_IMPL` definitions in `runtime/src/ops/ops_*.c` (checked against the built library), paths from the",
        "executor's path selection, fixtures from compiling and loading every tigris-ml 0.12.1 sdist",
        "fixture (`tests/fixtures/tflite/ops/`).",
        "",
        "## Plan format and runtime features",
        "",
        f"* Plan schema versions read: {_ranges(versions)} (a plan whose header names another version is refused "
        "as `unsupported plan version`; probed by patching the version field of a fixture plan).",
        f"* Execution paths the executor selects: {', '.join(f'`{p}`' for p in executor_paths())}"
        + (" (`control`: `If`/`While` running their subgraphs, one level deep; docs/execution.md#control-flow). "
           "State variables (schema 10 SEC_STATE: LSTM, SVDF) carry from run to run "
           "(docs/execution.md#state-variables)."
           if "control" in executor_paths() else ". `control` (`If`/`While` subgraphs) is never taken: such plans "
           "are refused at load."),
        "* LZ4-compressed weight blocks (`tigris compile -c lz4`): "
        + (f"supported (fixture `{lz4[0]}` compiled with `-c lz4` loads; runs are compared in "
           "`tests/runtime/test_differential.py` and `tests/ops/test_ops_activation.py`)." if lz4[1] is None
           else f"refused: {lz4[1]}"),
        "* Float plans (no quantization parameters): refused by design, `float32 plans are not supported by this "
        "runtime`.",
        "* Besides int8, the runtime holds bool tensors (comparisons, And/Or/Not, Where, Cast, ReduceAll) and int32 "
        "index tensors: ArgMax/ArgMin results, Gather/GatherND indices computed at run time or looked up in a "
        "constant table, DynamicUpdateSlice starts, and the Add/Sub/Mul (wrapping) and comparisons that compute "
        "them, handed over as int32 or, at an ONNX interface, int64 (narrowed; a value outside int32 fails the "
        "run). An index outside its axis fails that run, naming the op. Stages reading int32 values run on the "
        "normal and rows paths (run-time indices read whole, a table's lookups banded); a plan that stripes "
        "them is refused at load. Float32 tensors inside an int8 plan: the sections around If/While and "
        "DetectionPostProcess's detections, model outputs handed over as stored.",
        "",
        "Paths per operator: `tiled` (row stripes), `tiled_2d` and `chain` need a spatial tiling mode "
        "(TILING_POINTWISE/TILING_WINDOW; RESAMPLE, Resize, and TILING_ALONE ops, alone in their stage, take "
        "`tiled` only, TILING_2D_ONLY ones `tiled_2d` only), `rows` (row bands) needs "
        "TILING_ROWS, `by_input`, `transpose` and "
        "`reshape` are single-op paths of one operator each; `normal` is every supported op's.",
        "",
        "## Operators",
        "",
        "| opcode | operator | status | tiling | execution paths | sdist fixtures (int8 plans at 256K) | our tests "
        "(opmodels cases; modules quoting the name or naming it in their title) |",
        "|---:|---|---|---|---|---|---|",
    ]
    for code in contract():
        st = status(code)
        entry = family_tables().get(code)
        fx = ops_fixtures.get(code, [])
        ran = [r.name for r in fx if r.ours is None]
        refused = [r.name for r in fx if r.ours is not None]
        fixtures = []
        if ran:
            fixtures.append(f"{len(ran)} loaded: {_names(ran)}")
        if refused:
            fixtures.append(f"{len(refused)} refused: {_names(refused)}")
        tests = []
        cases = opmodels_cases().get(code, ())
        if cases:
            tests.append(f"opmodels ({len(cases)} case{'s' if len(cases) > 1 else ''})")
        tests += [f"`{m}`" for m in naming_tests().get(code, ())]
        lines.append(
            f"| {code} | {op_name(code)} | {st} | {tiling_text(entry) if entry and not entry.refuses else '-'} | "
            f"{', '.join(op_paths(code)) or '-'} | {'; '.join(fixtures) or '-'} | {', '.join(tests) or '-'} |")

    counts = defaultdict(int)
    for code in contract():
        counts[status(code)] += 1
    lines += ["", "Status counts: " + ", ".join(f"{k} {counts[k]}" for k in STATUS_NOTES if counts[k]) + ".", ""]
    lines += [f"* **{k}**: {v}." for k, v in STATUS_NOTES.items() if counts[k]]

    compiled = [r for r in records if r.kind != "compile-refused"]
    floats = [r for r in records if r.kind == "float"]
    ours_ok = [r for r in int8 if r.ours is None]
    ref_refused = [r for r in int8 if r.reference is not None]
    lines += [
        "",
        "## tigris-ml 0.12.1 sdist fixtures",
        "",
        "Compiled at 256K; `tests/conformance/test_tflite_fixtures.py` runs each int8 plan our runtime loads on",
        "the fixture's own inputs plus generated ones, byte-identical to the reference with peaks not above",
        "it, and again compiled tight (half the plan's peak, else 3/4: the tiled paths).",
        "",
        f"* fixtures: {len(records)}; compiled by tigris-ml: {len(compiled)}; refused by tigris-ml: "
        f"{len(records) - len(compiled)}",
        f"* float plans: {len(floats)}; our loader refuses {sum(r.ours is not None for r in floats)} (by design)",
        f"* int8 plans: {len(int8)}; the reference loads {len(int8) - len(ref_refused)}; ours loads "
        f"{len(ours_ok)} and refuses {len(int8) - len(ours_ok)}",
    ]
    for r in records:
        if r.kind == "compile-refused":
            lines.append(f"* tigris-ml refuses `{r.name}`: {r.note}")
    from tests.conformance.test_tflite_fixtures import EXPECTED_TIGHT_REFUSALS, KNOWN_EVENT_DIFFERENCES, KNOWN_FAILURES

    lines += ["", "\"Loaded\" above means our loader accepts the plan; the test then requires identical outputs, "
              "peaks not above the reference's and an identical event trace (paths, allocations, loads, spills, "
              "moves). Known exceptions (strict xfail in `KNOWN_FAILURES`; `tight` = compiled at half the 256K "
              "plan's peak, or 3/4 where tigris-ml writes no plan at half):", ""]
    lines += [f"* `{n}` ({v}): {why}" for (n, v), why in sorted(KNOWN_FAILURES.items())] or ["* none"]
    lines += ["", "Event traces that differ while outputs and peaks agree (`KNOWN_EVENT_DIFFERENCES`):", ""]
    lines += [f"* `{n}` ({v}): {why}" for (n, v), why in sorted(KNOWN_EVENT_DIFFERENCES.items())] or ["* none"]
    tight: dict[str, list[str]] = defaultdict(list)
    for name, why in EXPECTED_TIGHT_REFUSALS.items():
        tight[why].append(name)
    lines += ["", "Plans our loader accepts at 256K but refuses when compiled tight (the reference runs them; "
              "`EXPECTED_TIGHT_REFUSALS`):", ""]
    lines += [f"* `{why}` ({len(names)}): {', '.join(f'`{n}`' for n in sorted(names))}"
              for why, names in sorted(tight.items(), key=lambda kv: (-len(kv[1]), kv[0]))] or ["* none"]
    by_reason: dict[str, list[str]] = defaultdict(list)
    for r in int8:
        if r.ours is not None:
            by_reason[message_class(r.ours)].append(r.name)
    if by_reason:
        lines += ["", "int8 fixture plans our loader refuses, by message:", ""]
        for reason in sorted(by_reason, key=lambda k: (-len(by_reason[k]), k)):
            names = by_reason[reason]
            lines.append(f"* `{reason}` ({len(names)}): {', '.join(f'`{n}`' for n in names)}")
    float_reasons: dict[str, int] = defaultdict(int)
    for r in floats:
        float_reasons[message_class(r.ours) if r.ours else "LOADED"] += 1
    lines += ["", "Float plans, by our loader's message:", ""]
    lines += [f"* `{k}` ({v})" for k, v in sorted(float_reasons.items(), key=lambda kv: (-kv[1], kv[0]))]
    return "\n".join(lines) + "\n"


def generate(library: Path | None = None) -> str:
    from tests.ops.models_data import our_library

    if sdist_ops() is None:
        raise RuntimeError("tigris-ml 0.12.1 sdist fixtures unavailable (pip download failed?)")
    library = library or our_library()
    records = survey(library)
    version_plan = compile_fixture("abs")
    assert isinstance(version_plan, Path), version_plan
    versions = probe_versions(version_plan, library)
    lz4_fixture = "conv_bias"
    return render(records, versions, (lz4_fixture, probe_lz4(lz4_fixture, library)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help=f"write {DOC.relative_to(REPO)} instead of printing")
    args = parser.parse_args(argv)
    text = generate()
    if args.write:
        DOC.parent.mkdir(parents=True, exist_ok=True)
        DOC.write_text(text)
        print(f"wrote {DOC.relative_to(REPO)}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    # run as the package module, so that the test module imported by render() shares its caches
    from tests.conformance import coverage as _module

    sys.exit(_module.main())
