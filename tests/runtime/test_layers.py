"""The runtime's layers point one way and form no cycle (runtime/src/README.md).

Read from the objects ``scons host`` builds (``nm``: what each unit defines and what it needs),
the generated ``*_built_in.c`` units included, and from every ``#include`` line. Fails with the
offending pair: a unit that uses a unit of a higher layer, or units that use each other in a
circle, except the one cycle named in :data:`RECURSION`. The probes compile deliberately wrong
units next to the real objects, to show the check reports exactly those.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.runtime import layers
from tests.support import REPO, require_tool
from tigris_scons import builtin, runtime_tree

RUNTIME = REPO / "runtime"
SHIM = RUNTIME / "host" / "tigris_host.c"

#: The one cycle allowed, as the single edge that closes it: a control-flow stage (If, While)
#: runs the stages of its graphs through the executor's own unit loop (path_control.c calls
#: tgr_run_unit and tgr_end_unit), while the executor reaches path_control through the generated
#: path dispatch (executor -> paths_built_in -> path_control). A graph's stages are stages like the
#: main graph's, with the same paths, limits and events; running them any other way would be a
#: second executor. Only these two calls are excused: any other use of the executor by
#: path_control, or a cycle through any other pair of units, fails the test.
RECURSION = layers.Edge("exec/path_control", "exec/executor", ("tgr_end_unit", "tgr_run_unit"))


def _object_of(obj_dir: Path, source: Path) -> Path:
    """Where ``site_scons/site_tools/tigris_host.py`` puts a source's shared object (the generated
    units' too: ``obj/<layer>/<unit>.os``)."""
    return obj_dir / source.parent.name / f"{source.stem}.os"


def _cycles(edges: list[layers.Edge]) -> list[list[str]]:
    """Every cycle of the unit graph but the control-flow recursion."""
    return layers.cycles(layers.allow(edges, RECURSION))


@pytest.fixture(scope="module")
def nm() -> str:
    return require_tool("nm")


@pytest.fixture(scope="module")
def unit_symbols(our_library: Path, nm: str) -> dict[str, tuple[set[str], set[str]]]:
    """(defined, undefined) symbols of every runtime unit, the generated ones and the host shim,
    from the build."""
    obj_dir = our_library.parent / "obj"
    units = {runtime_tree.unit_name(RUNTIME, s): _object_of(obj_dir, s) for s in [*runtime_tree.sources(RUNTIME), SHIM]}
    units.update({f"{layer}/{unit}": _object_of(obj_dir, Path(layer, f"{unit}.c")) for unit, layer in builtin.UNITS.items()})
    symbols = {}
    for unit, obj in units.items():
        assert obj.is_file(), f"{obj} missing: was {our_library} built by `scons host` from this tree?"
        symbols[unit] = layers.read_symbols(nm, obj)
    return symbols


def _probe(tmp_path: Path, nm: str, layer: str, name: str, code: str) -> tuple[str, tuple[set[str], set[str]]]:
    """Compile a unit that does not exist in the tree, as if it were ``<layer>/<name>.c``."""
    source = tmp_path / f"{name}.c"
    source.write_text(code)
    obj = tmp_path / f"{name}.o"
    cmd = [require_tool("gcc"), "-std=c99", "-c", *(f"-I{d}" for d in runtime_tree.include_dirs(RUNTIME)),
           str(source), "-o", str(obj)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return f"{layer}/{name}", layers.read_symbols(nm, obj)


def _report(edges: list[layers.Edge]) -> str:
    return "\n  ".join(str(e) for e in edges)


def test_every_unit_is_in_a_layer_folder() -> None:
    units = [runtime_tree.unit_name(RUNTIME, p) for p in runtime_tree.sources(RUNTIME)]
    assert {u.split("/")[0] for u in units} == set(runtime_tree.LAYERS), (
        "a layer folder is empty or unknown: update runtime_tree.LAYERS and runtime/src/README.md")


def test_no_symbol_goes_up_a_layer(unit_symbols) -> None:
    bad = layers.upward(layers.symbol_edges(unit_symbols))
    assert not bad, ("a lower layer uses a higher one (layers, lowest first: "
                     f"{' < '.join(runtime_tree.LAYERS)} < host):\n  {_report(bad)}")


def test_units_form_no_cycle(unit_symbols) -> None:
    found = _cycles(layers.symbol_edges(unit_symbols))
    assert not found, "units that use each other:\n  " + "\n  ".join(" -> ".join(c) for c in found)


def test_the_allowed_cycle_is_still_there(unit_symbols) -> None:
    """The exception names a real edge closing a real cycle; once the recursion goes, so must it."""
    edges = layers.symbol_edges(unit_symbols)
    assert RECURSION in edges, (f"{RECURSION} is no longer an edge (now: "
                                f"{[str(e) for e in edges if e.source == RECURSION.source]}): update RECURSION")
    assert layers.cycles(edges) == [["exec/executor", "exec/paths_built_in", "exec/path_control", "exec/executor"]]


def test_generated_units_are_checked(unit_symbols) -> None:
    """The registry and the path selection use the generated dispatch, which uses the families."""
    pairs = {(e.source, e.target) for e in layers.symbol_edges(unit_symbols)}
    assert {("ops/ops_registry", "ops/ops_built_in"), ("ops/ops_built_in", "ops/ops_conv"),
            ("exec/path_select", "exec/paths_built_in"), ("load/loader", "load/extensions_built_in")} <= pairs


def test_no_include_goes_up_a_layer_or_in_a_circle() -> None:
    files = sorted(runtime_tree.source_root(RUNTIME).rglob("*.[ch]")) + [SHIM]
    edges = layers.include_edges(RUNTIME, files)
    assert edges, "no #include edges found: the parser is broken"
    bad = layers.upward(edges)
    assert not bad, f"a lower layer includes a higher layer's header:\n  {_report(bad)}"
    found = layers.cycles(edges)
    assert not found, "headers that include each other:\n  " + "\n  ".join(" -> ".join(c) for c in found)


def test_kernels_know_nothing_of_plans() -> None:
    """Kernels see raw buffers and their own parameter structs, never a plan record."""
    for path in sorted((runtime_tree.source_root(RUNTIME) / "kernels").glob("*.[ch]")):
        text = path.read_text()
        assert "tgr_plan" not in text, f"{path.relative_to(REPO)} names tgr_plan"


# ---- the check catches what it should -----------------------------------------------------------


def test_probe_upward_call_is_reported(unit_symbols, nm: str, tmp_path: Path) -> None:
    """A kernel that reads an op attribute (plan layer): the pair and the symbol are named."""
    unit, syms = _probe(tmp_path, nm, "kernels", "kernels_probe",
                        '#include "plan/plan.h"\n'
                        "int kernels_probe(const tgr_plan *p) { return tgr_attr_find(p, 0, 1, 0) != 0; }\n")
    bad = layers.upward(layers.symbol_edges({**unit_symbols, unit: syms}))
    assert [str(e) for e in bad if e.source == unit] == ["kernels/kernels_probe -> plan/plan (tgr_attr_find)"]


def test_probe_cycle_is_reported(unit_symbols, nm: str, tmp_path: Path) -> None:
    """Two op units calling each other are a cycle even inside one layer."""
    a = _probe(tmp_path, nm, "ops", "ops_probe_a",
               "int ops_probe_b(int);\nint ops_probe_a(int n) { return n > 0 ? ops_probe_b(n - 1) : 0; }\n")
    b = _probe(tmp_path, nm, "ops", "ops_probe_b",
               "int ops_probe_a(int);\nint ops_probe_b(int n) { return n > 0 ? ops_probe_a(n - 1) : 1; }\n")
    edges = layers.symbol_edges({**unit_symbols, a[0]: a[1], b[0]: b[1]})
    probed = [c for c in _cycles(edges) if a[0] in c]
    assert probed == [["ops/ops_probe_a", "ops/ops_probe_b", "ops/ops_probe_a"]]


def test_probe_recursion_through_another_unit_is_reported(unit_symbols, nm: str, tmp_path: Path) -> None:
    """The executor's calls back in are excused from path_control only: a path dispatch that
    called tgr_run_unit itself closes a cycle the test reports."""
    unit, syms = _probe(tmp_path, nm, "exec", "paths_built_in",
                        '#include "exec/exec.h"\n'
                        "tgr_status tgr_path_run(uint32_t path, tgr_session *s, uint32_t stage, uint32_t limit,\n"
                        "                        const uint8_t *const *weights, tgr_error *err)\n"
                        "{ uint32_t last; (void)path; (void)limit; (void)weights; return tgr_run_unit(s, stage, &last, err); }\n")
    found = _cycles(layers.symbol_edges({**unit_symbols, unit: syms}))
    assert ["exec/executor", "exec/paths_built_in", "exec/executor"] in found


def test_probe_wider_recursion_is_reported(unit_symbols) -> None:
    """path_control using any executor symbol besides the two named ones is not excused."""
    defined, undefined = unit_symbols[RECURSION.source]
    edges = layers.symbol_edges({**unit_symbols, RECURSION.source: (defined, undefined | {"tgr_run"})})
    assert _cycles(edges) == [["exec/executor", "exec/paths_built_in", "exec/path_control", "exec/executor"]]


def test_probe_upward_include_is_reported(tmp_path: Path) -> None:
    """A kernel that includes the executor's header is caught without any symbol reference."""
    kernels = tmp_path / "runtime" / "src" / "kernels"
    kernels.mkdir(parents=True)
    (tmp_path / "runtime" / "src" / "exec").mkdir()
    (tmp_path / "runtime" / "src" / "exec" / "exec.h").write_text("#define X 1\n")
    probe = kernels / "kernels_probe.c"
    probe.write_text('#include "exec/exec.h"\n#include "tgr.h"\n')
    (tmp_path / "runtime" / "include").mkdir()
    (tmp_path / "runtime" / "include" / "tgr.h").write_text("")
    edges = layers.include_edges(tmp_path / "runtime", [probe])
    assert [str(e) for e in layers.upward(edges)] == ["kernels/kernels_probe -> exec/exec (exec/exec.h)"]


def test_unknown_include_is_an_error(tmp_path: Path) -> None:
    probe = tmp_path / "runtime" / "src" / "ops" / "ops_probe.c"
    probe.parent.mkdir(parents=True)
    probe.write_text('#include "ops/gone.h"\n')
    with pytest.raises(ValueError, match="gone.h"):
        layers.include_edges(tmp_path / "runtime", [probe])


def test_source_outside_a_layer_is_refused(tmp_path: Path) -> None:
    (tmp_path / "src" / "ops").mkdir(parents=True)
    (tmp_path / "src" / "ops" / "ops_a.c").write_text("")
    (tmp_path / "src" / "stray.c").write_text("")
    with pytest.raises(runtime_tree.RuntimeTreeError, match="stray.c"):
        runtime_tree.sources(tmp_path)


def test_duplicate_basename_is_refused(tmp_path: Path) -> None:
    for layer in ("ops", "kernels"):
        (tmp_path / "src" / layer).mkdir(parents=True)
        (tmp_path / "src" / layer / "conv.c").write_text("")
    with pytest.raises(runtime_tree.RuntimeTreeError, match="'conv' is used twice"):
        runtime_tree.sources(tmp_path)
