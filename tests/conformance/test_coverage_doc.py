"""docs/coverage.md is current, and what its generator reads from the sources is what the runtime does.

* the document equals a fresh ``coverage.generate()`` (fails with the regeneration command);
* the family tables parsed from ``runtime/src/ops/ops_*.c`` equal the built library's own registry
  (``tgr_built_in_op`` through ctypes: opcode, tiling bits, refusing entries without a run
  function), so a table row the parser misses cannot drop out of the document unnoticed;
* "refused like the reference" and "float only" hold on the reference: a single-op int8 plan
  patched to such an opcode is refused by the bundled runtime too;
* every fixture our loader refuses by op name names an op the document does not call supported.
"""

from __future__ import annotations

import ctypes
import difflib
import re
from pathlib import Path

import pytest

from tests.conformance import coverage
from tests.support import skip_or_fail

pytest.importorskip("tigris.runtime")


@pytest.fixture(scope="module")
def lib() -> Path:
    from tests.ops.models_data import our_library

    return our_library()


def _need_sdist() -> None:
    if coverage.sdist_ops() is None:
        skip_or_fail("tigris-ml 0.12.1 sdist unavailable (pip download failed?): cannot regenerate docs/coverage.md")


def test_coverage_doc_is_current(lib: Path) -> None:
    _need_sdist()
    fresh = coverage.generate(lib)
    current = coverage.DOC.read_text() if coverage.DOC.is_file() else ""
    if fresh != current:
        diff = "".join(list(difflib.unified_diff(current.splitlines(True), fresh.splitlines(True),
                                                 "docs/coverage.md", "regenerated", n=1))[:60])
        pytest.fail(f"docs/coverage.md is stale; regenerate it with `{coverage.REGENERATE}` and commit it.\n{diff}",
                    pytrace=False)


_BUILT_IN, _RUNS = 0x100, 0x200  # runtime/src/ops/ops_registry.h TGR_OP_BUILT_IN, TGR_OP_RUNS


def test_parsed_tables_match_the_library(lib: Path) -> None:
    so = ctypes.CDLL(str(lib))
    lookup = so.tgr_built_in_op
    lookup.restype = ctypes.c_uint32
    lookup.argtypes = [ctypes.c_uint32]
    registry = {}
    for code in range(256):
        bits = lookup(code)
        if bits & _BUILT_IN:
            registry[code] = (code, bits & 0xFF, not bits & _RUNS)
    # no run in the op dispatch: refused ops, and If/While (the executor's control path runs them)
    parsed = {code: (code, e.tiling, e.refuses or e.run == "control path")
              for code, e in coverage.family_tables().items()}
    assert parsed == registry, ("runtime/src/ops/ops_*.c definitions as parsed by coverage.py differ from the "
                                f"library's tgr_built_in_op (opcode: (opcode, tiling, without a dispatched run)):\n  "
                                f"parsed  {parsed}\n  library {registry}")


def _unary_compatible(code: int) -> bool:
    _, c = coverage.contract()[code]
    return (tuple(c.inputs) == (1, 1) and tuple(c.outputs) == (1, 1) and c.weight == "none" and c.bias == "none"
            and not c.required_attributes)


def test_reference_refuses_what_the_doc_says_it_refuses(tmp_path: Path) -> None:
    _need_sdist()
    from tests.runtime.plantools import PlanView

    relu = coverage.compile_fixture("relu")
    assert isinstance(relu, Path), relu
    view = PlanView(relu)
    assert view.info["ops"][0]["op_type"] == 3 and len(view.info["ops"]) == 1
    probed = []
    for code in coverage.contract():
        if coverage.status(code) not in (coverage.LIKE_REFERENCE, coverage.FLOAT_ONLY) or not _unary_compatible(code):
            continue
        plan = tmp_path / f"op{code}.tgrs"
        plan.write_bytes(view.set_op(0, "op_type", code))
        message = coverage.load_message(plan, None)
        assert message is not None and "not executable" in message, (
            f"the reference loads a Relu plan patched to {coverage.op_name(code)} ({code}), which docs/coverage.md "
            f"calls {coverage.status(code)!r}: {message!r}")
        probed.append(code)
    assert len(probed) >= 10, f"only {probed} could be probed"


def test_refusals_by_name_agree_with_the_doc(lib: Path, tmp_path: Path) -> None:
    """``op N (X) is not supported`` names an op without a table entry, ``op N (X): ... not
    reproduced`` one the document lists as not reproduced: for every refusal of the sdist
    survey, and for a refusal made on purpose (the Rsqrt fixture's op relabelled as Erf, which the
    document lists as not implemented; no sdist fixture uses one any more)."""
    _need_sdist()
    from tigris.runtime import RuntimeError as TigrisError

    from tests.ops.models_data import fixture_plan
    from tests.runtime.oracle import open_session
    from tests.runtime.plantools import PlanView

    by_name = {coverage.op_name(c): c for c in coverage.contract()}
    erf = by_name["Erf"]
    assert coverage.status(erf) == coverage.NOT_IMPLEMENTED
    relabelled = tmp_path / "rsqrt_as_erf.tgrs"
    relabelled.write_bytes(PlanView(fixture_plan("rsqrt", tmp_path).read_bytes()).set_op(0, "op_type", erf))
    with pytest.raises(TigrisError) as made:
        open_session(relabelled, lib).close()
    messages = [str(made.value)] + [record.ours or "" for record in coverage.survey(lib)]
    checked = 0
    for message in messages:
        missing = re.search(r"\(([A-Za-z0-9]+)\) is not supported by this runtime", message)
        inexact = re.search(r"\(([A-Za-z0-9]+)\): .*not reproduced", message)
        if missing:
            status = coverage.status(by_name[missing.group(1)])
            assert status not in (coverage.SUPPORTED, coverage.NOT_REPRODUCED), f"{message} ({status})"
        if inexact:
            status = coverage.status(by_name[inexact.group(1)])
            assert status == coverage.NOT_REPRODUCED, f"{message} ({status})"
        checked += bool(missing or inexact)
    assert checked > 0 and "(Erf) is not supported by this runtime" in messages[0], messages[0]
