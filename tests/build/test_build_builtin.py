"""tigris_scons.builtin: the generated units that choose what a build of the runtime links.

The catalog read from the sources must be what the compiled runtime implements (checked on a
host library built here from the same sources), a plan's needs must select exactly its ops and
paths, and the parser must refuse what it cannot read rather than leave something out.
"""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support import REPO, require_tool
from tigris_scons import builtin, runtime_tree
from tigris_scons.builtin import BuiltInError, Needs

RUNTIME = REPO / "runtime"
BUILT_IN, RUNS = 0x100, 0x200  # runtime/src/ops/ops_registry.h TGR_OP_BUILT_IN, TGR_OP_RUNS


def _definitions(pattern: str) -> list[str]:
    """Every macro use in the runtime's C sources, found by a plain text search."""
    found = []
    for path in runtime_tree.sources(RUNTIME):
        found += re.findall(pattern, path.read_text())
    return found


def test_catalog_has_every_definition_once() -> None:
    catalog = builtin.scan(RUNTIME)
    ops = _definitions(r"\nTGR_OP_(?:IMPL|FALLIBLE)\((OP_\w+),")
    refused = _definitions(r"\nTGR_OP_(?:REFUSED|CONTROL)\((OP_\w+),")  # no run in the op dispatch
    by_method = _definitions(r"\nTGR_OP_METHODS\((OP_\w+),")
    assert sorted(i.name for i in catalog.ops.values()) == sorted(ops + refused + by_method)
    assert sorted(i.name for i in catalog.ops.values() if not i.runs) == sorted(refused)
    assert sorted(i.name for i in catalog.ops.values() if i.methods) == sorted(by_method)
    methods = _definitions(r"\nTGR_OP_METHOD\((OP_\w+), (METHOD_\w+),")
    assert sorted((catalog.ops[m.op].name, m.name) for m in catalog.methods.values()) == sorted(methods)
    bands = _definitions(r"\nTGR_OP_BANDS\((OP_\w+),")
    assert sorted(i.name for i in catalog.ops.values() if i.bands) == sorted(bands)
    paths = _definitions(r"\nTGR_PATH_(?:IMPL|RUNNER)\((TGR_PATH_\w+),")
    assert sorted(i.name for i in catalog.paths.values()) == sorted(paths)
    assert [i.name for i in catalog.paths.values() if not i.fits] == ["TGR_PATH_NORMAL"]


@pytest.fixture(scope="module")
def full_library(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    """The full runtime with the generated units, as a host shared library."""
    gcc = require_tool("gcc")
    out = tmp_path_factory.mktemp("full")
    units = builtin.write(out / "gen", builtin.scan(RUNTIME))
    lib = out / "libfull.so"
    subprocess.run([gcc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-O1", "-shared", "-fPIC",
                    *(f"-I{d}" for d in runtime_tree.include_dirs(RUNTIME)),
                    *map(str, runtime_tree.sources(RUNTIME) + units), "-lm", "-o", str(lib)],
                   check=True, capture_output=True)
    return ctypes.CDLL(str(lib))


def test_catalog_matches_the_compiled_runtime(full_library: ctypes.CDLL) -> None:
    """Opcodes, tiling modes, refusals and paths as the compiled dispatch reports them."""
    catalog = builtin.scan(RUNTIME)
    lookup = full_library.tgr_built_in_op
    lookup.restype, lookup.argtypes = ctypes.c_uint32, [ctypes.c_uint32]
    compiled = {code: lookup(code) for code in range(256) if lookup(code) & BUILT_IN}
    assert set(compiled) == set(catalog.ops)
    assert {c for c, bits in compiled.items() if not bits & RUNS} == {c for c, i in catalog.ops.items() if not i.runs}
    assert all(bits & 0xFF == 0 for c, bits in compiled.items() if not catalog.ops[c].runs)
    name = full_library.tgr_method_name
    name.restype, name.argtypes = ctypes.c_char_p, [ctypes.c_uint32]
    assert {m: name(m).decode() for m in range(32) if name(m) != b"?"} == {
        m: i.label for m, i in catalog.methods.items()}
    assert ctypes.c_uint32.in_dll(full_library, "tgr_built_in_methods").value == sum(1 << m for m in catalog.methods)
    paths = ctypes.c_uint32.in_dll(full_library, "tgr_built_in_paths").value
    assert paths == sum(1 << c for c in catalog.paths)
    bitmap = (ctypes.c_uint8 * 32).in_dll(full_library, "tgr_full_runtime_ops")
    assert {c for c in range(256) if bitmap[c // 8] >> (c % 8) & 1} == set(catalog.ops)


def test_a_plans_units_list_exactly_its_ops_and_paths() -> None:
    catalog = builtin.scan(RUNTIME)
    conv, softmax, transpose, unknown = 1, 10, 24, 250
    method = {m.name: c for c, m in catalog.methods.items()}
    softmax_float, conv_padded = method["METHOD_SOFTMAX_FLOAT"], method["METHOD_CONV_PADDED"]
    units = builtin.render(catalog, Needs({conv: "Conv", softmax: "Softmax", transpose: "ConvTranspose", unknown: "?"},
                                          {0: "normal", 5: "rows"}, lz4=False, slow_peak=0,
                                          methods={softmax_float: "softmax_float", conv_padded: "conv_padded"}))
    ops = units["ops/ops_built_in.c"]
    assert set(re.findall(r"tgr_run_(OP_\w+)\(p", ops)) == {catalog.ops[transpose].name}
    assert set(re.findall(r"tgr_run_(METHOD_\w+)\(p", ops)) == {"METHOD_SOFTMAX_FLOAT", "METHOD_CONV_PADDED"}
    assert f"tgr_built_in_methods = 0x{1 << softmax_float | 1 << conv_padded:x}u;" in ops
    assert set(re.findall(r"tgr_check_(OP_\w+)\(p", ops)) == {catalog.ops[c].name for c in (conv, softmax, transpose)}
    assert set(re.findall(r"return tgr_band_problem_(OP_\w+)\(p", ops)) == {"OP_SOFTMAX"}  # nor Conv nor ConvTranspose
    paths = units["exec/paths_built_in.c"]
    assert f"tgr_built_in_paths = 0x{1 | 1 << 5:x}u" in paths
    assert set(re.findall(r"return tgr_path_run_(TGR_PATH_\w+)\(", paths)) == {"TGR_PATH_NORMAL", "TGR_PATH_ROWS"}
    assert set(re.findall(r"return tgr_path_fits_(TGR_PATH_\w+)\(", paths)) == {"TGR_PATH_ROWS"}
    assert "tgr_plain_" in units["memory/weights_built_in.c"] and "tgr_lz4_" not in units["memory/weights_built_in.c"]
    assert "tgr_plain_bind_graphs(" in units["load/extensions_built_in.c"]
    control = next(c for c, i in catalog.paths.items() if i.name == "TGR_PATH_CONTROL")  # tgr.h's enum value
    graphs = builtin.render(catalog, Needs({}, {control: "control"}, lz4=False, slow_peak=0))
    assert "tgr_full_bind_graphs(" in graphs["load/extensions_built_in.c"]
    full = builtin.render(catalog)
    assert len(re.findall(r"tgr_run_OP_\w+\(p", full["ops/ops_built_in.c"])) == sum(
        i.runs and not i.methods for i in catalog.ops.values())
    assert len(re.findall(r"tgr_run_METHOD_\w+\(p", full["ops/ops_built_in.c"])) == len(catalog.methods)
    assert "tgr_lz4_bind_weight_blocks(" in full["memory/weights_built_in.c"]


def test_the_smallest_units_compile(tmp_path: Path) -> None:
    """No op and no path at all (every list empty) is still valid, warning-free C99."""
    gcc = require_tool("gcc")
    units = builtin.write(tmp_path, builtin.scan(RUNTIME), Needs({}, {}, lz4=False, slow_peak=0))
    for unit in units:
        subprocess.run([gcc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-c",
                        *(f"-I{d}" for d in runtime_tree.include_dirs(RUNTIME)), str(unit), "-o",
                        str(unit.with_suffix(".o"))], check=True, capture_output=True)


def test_parse_needs() -> None:
    needs = builtin.parse_needs("op 1 Conv\nop 10 Softmax\nmethod 2 softmax_float\npath 0 normal\nlz4 1\n"
                                "slow_peak 512\n")
    assert needs == Needs({1: "Conv", 10: "Softmax"}, {0: "normal"}, True, 512, {2: "softmax_float"})
    assert builtin.parse_needs("error TGR_ERR_ARENA slow arena too small\n") is None
    with pytest.raises(BuiltInError, match="no lz4/slow_peak"):
        builtin.parse_needs("op 1 Conv\npath 0 normal\n")


def _runtime_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "runtime"
    shutil.copytree(RUNTIME, copy)
    return copy


@pytest.mark.parametrize("line, refusal", [
    ("TGR_OP_IMPL(OP_CONV, TILING_WINDOW, check_conv, run_conv);", "implemented twice"),
    ("TGR_OP_IMPL(OP_NO_SUCH_OP, TILING_NONE, check_conv, run_conv);", "OP_NO_SUCH_OP has no enum value"),
    ("TGR_OP_METHOD(OP_CONV, METHOD_SOFTMAX_FLOAT, run_conv);", "implemented twice"),
    ("enum { METHOD_CONV_SPARE = 31 };\nTGR_OP_METHOD(OP_CONV_TRANSPOSE, METHOD_CONV_SPARE, run_conv);",
     "METHOD_CONV_SPARE belongs to no TGR_OP_METHODS op"),
    ("TGR_OP_BANDS(OP_CONV, tgr_band_any_axis);", "band rule for OP_CONV, which is not an op running in row bands"),
    ("TGR_OP_BANDS(OP_GEMM, tgr_band_any_axis);", "OP_GEMM declares two band rules"),
])
def test_scan_refuses_what_it_cannot_list_once(tmp_path: Path, line: str, refusal: str) -> None:
    runtime = _runtime_copy(tmp_path)
    conv = runtime / "src/ops/ops_conv.c"
    conv.write_text(conv.read_text() + line + "\n")
    with pytest.raises(BuiltInError, match=refusal):
        builtin.scan(runtime)


def test_scan_ignores_a_definition_in_a_comment(tmp_path: Path) -> None:
    runtime = _runtime_copy(tmp_path)
    conv = runtime / "src/ops/ops_conv.c"
    conv.write_text(conv.read_text() + "/*\nTGR_OP_IMPL(OP_SOFTMAX, TILING_NONE, check_conv, run_conv);\n*/\n")
    assert builtin.scan(runtime) == builtin.scan(RUNTIME)


def test_scan_refuses_an_op_by_method_without_methods(tmp_path: Path) -> None:
    runtime = _runtime_copy(tmp_path)
    family = runtime / "src/ops/ops_activation.c"
    family.write_text(re.sub(r"\nTGR_OP_METHOD\(OP_SOFTMAX,[^\n]*", "", family.read_text()))
    with pytest.raises(BuiltInError, match="OP_SOFTMAX runs by method but has no TGR_OP_METHOD"):
        builtin.scan(runtime)
