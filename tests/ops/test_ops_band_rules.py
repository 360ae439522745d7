"""Row-band rules live with the op families, and an op that declares none is never banded.

Every op whose run takes row bands (``TILING_ROWS``) says along which axes with a
``TGR_OP_BANDS(OP_X, rule)`` next to its ``TGR_OP_IMPL``; the rows path asks the rule through the
generated registry (``tgr_built_in_band_problem``), whose default refuses. To show the default is
a refusal and not a pass, the host library is relinked with one family file and the generated
registry rebuilt from a copy of the runtime in which one op's ``TGR_OP_BANDS`` line is deleted:
a plan whose stage the reference and our runtime run in row bands is then refused by our loader,
naming the missing rule, while the unchanged library runs it byte for byte like the reference.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.ops.models_activation import Const, chain_model, plan_of
from tests.ops.models_data import assert_same_as_reference, node, reference_paths
from tests.support import require_tool
from tigris_scons import builtin, runtime_tree

REPO = Path(__file__).resolve().parents[2]
RUNTIME = REPO / "runtime"

#: Sigmoid then Mul by a per-column constant over [256, 64]: one stage the compiler bands along
#: the matrix rows at 8K (tests/ops/test_ops_activation.py ROWS, "matrix_sigmoid_mul_const").
QUANT = {"x": (0.05, 0), "s": (1 / 256, -128), "y": (0.01, 2)}


@pytest.fixture(scope="module")
def rows_plan(work: Path) -> Path:
    model = chain_model([node("Sigmoid", ["x"], ["s"]), node("Mul", ["s", "k"], ["y"])], {"x": [256, 64]},
                        [Const("k", np.arange(64) * 3 - 100, 0.02, 3)])
    plan = plan_of(work, "band_rules_sigmoid_mul", model, QUANT, budget="8K")
    assert "rows" in reference_paths(plan), "the case no longer runs in row bands: choose another"
    return plan


def test_every_op_running_in_row_bands_declares_its_rule() -> None:
    """No op the rows path accepted before band rules moved to the families is refused now."""
    rows_ops = [i for i in builtin.scan(RUNTIME).ops.values() if re.search(r"\bTILING_ROWS\b", i.tiling)]
    assert len(rows_ops) > 40, "the scan found too few TILING_ROWS ops: its pattern is broken"
    assert sorted(i.name for i in rows_ops if not i.bands) == []


def _without_band_rule(lib: Path, out: Path, op: str) -> Path:
    """``lib`` relinked from its own objects, but for the family file of ``op`` and the generated
    ops/ops_built_in.c, built from a copy of the runtime whose ``TGR_OP_BANDS(op, ...)`` is gone."""
    gcc = require_tool("gcc")
    copy = out / "runtime"
    shutil.copytree(RUNTIME, copy)
    family = next(p for p in runtime_tree.sources(copy) if f"TGR_OP_BANDS({op}," in p.read_text())
    text = family.read_text()
    family.write_text(re.sub(rf"\nTGR_OP_BANDS\({op},[^\n]*", "", text))
    assert family.read_text() != text
    generated = builtin.write(out / "gen", builtin.scan(copy))
    ops_unit = next(p for p in generated if p.name == "ops_built_in.c")
    assert f"tgr_band_problem_{op}(" not in ops_unit.read_text()

    objects = lib.parent / "obj"
    rebuilt = {family.stem, "ops_built_in"}
    kept = [objects / s.parent.name / f"{s.stem}.os" for s in runtime_tree.sources(RUNTIME) if s.stem not in rebuilt]
    kept += [objects / layer / f"{unit}.os" for unit, layer in builtin.UNITS.items() if unit not in rebuilt]
    kept.append(objects / "host" / "tigris_host.os")
    missing = [str(o) for o in kept if not o.is_file()]
    assert not missing, f"objects of {lib} missing (built by `scons host`?): {missing}"
    flags = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-O2", "-fPIC", "-DTGR_TENSOR_ALIGN=32",
             *(f"-I{d}" for d in runtime_tree.include_dirs(copy))]
    fresh = []
    for source in (family, ops_unit):
        obj = out / f"{source.stem}.os"
        subprocess.run([gcc, *flags, "-c", str(source), "-o", str(obj)], check=True, capture_output=True, text=True)
        fresh.append(obj)
    relinked = out / "libtigris_host.so"
    subprocess.run([gcc, "-shared", *map(str, kept + fresh), "-lm", "-o", str(relinked)],
                   check=True, capture_output=True, text=True)
    return relinked


def test_the_plan_runs_in_row_bands_with_every_rule(rows_plan: Path, lib: Path) -> None:
    assert_same_as_reference(rows_plan, lib, n_inputs=2)


@pytest.mark.parametrize("op", ["OP_MUL", "OP_SIGMOID"])
def test_an_op_without_a_band_rule_is_refused_for_row_bands(op: str, rows_plan: Path, lib: Path,
                                                              tmp_path: Path) -> None:
    from tigris.runtime import RuntimeError as TigrisError

    from tests.runtime.oracle import open_session

    relinked = _without_band_rule(lib, tmp_path, op)
    with pytest.raises(TigrisError, match=r"declares no band rule"):
        open_session(rows_plan, relinked).close()
