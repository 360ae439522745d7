"""Control flow (If, While) against the reference host runtime, byte for byte.

The sdist fixtures ``if_conv`` (an If on the sign of the input's sum: a Conv branch or a Mul
branch, float32 between Dequantize and Quantize) and ``while_conv`` (a While whose int32 counter
runs a Conv body until it reaches a constant) run at 256K, at half their peak and at a quarter
(the branches' stages then run in stripes and bands): outputs identical, peaks not above the
reference's, counters and the event trace equal (assert_same_as_reference), on inputs that take
each branch. The While's bound is edited to run 0, 1, 2 and 40 rounds; each round copies the loop
variables in and out (``copy`` events counted). Plans whose subgraph references or table the
reference refuses are refused by ours too.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from tests.ops.models_data import assert_same_as_reference, compile_model, fixture_plan, refused_by_both, sdist_ops_dir

pytest.importorskip("tigris.runtime")


SEC_SUBGRAPHS = 13
OP_ATTR_SUBGRAPHS = 17


def _plan(name: str, work: Path, fraction: int) -> Path:
    """The fixture at 256K (fraction 1), or compiled at 1/fraction of its 256K peak."""
    from tests.conformance import coverage

    plan = fixture_plan(name, work)
    if fraction == 1:
        return plan
    peak = coverage.plan_info(plan)["peak"]
    return compile_model(sdist_ops_dir() / f"{name}.tflite", work / f"{name}_{fraction}.tgrs",
                         str(peak // fraction))


def _stages_run(plan: Path, lib: Path | None, feeds: dict[str, np.ndarray]) -> list[int]:
    from tests.runtime.oracle import _traced_run, open_session

    with open_session(plan, lib) as session:
        return [e["stage"] for e in _traced_run(session, feeds).events if e["kind"] == "stage_begin"]


@pytest.mark.parametrize("fraction", [1, 2, 4])
@pytest.mark.parametrize("name", ["if_conv", "while_conv"])
def test_control_flow_matches_the_reference(name: str, fraction: int, work: Path, lib: Path) -> None:
    plan = _plan(name, work, fraction)
    assert_same_as_reference(plan, lib, n_inputs=6)


def test_if_takes_each_branch_like_the_reference(work: Path, lib: Path) -> None:
    """An input of large codes and one of small codes take different branches on both runtimes,
    each stage sequence the reference's, the outputs identical."""
    from tests.runtime.oracle import open_session

    plan = _plan("if_conv", work, 1)
    sequences = set()
    with open_session(plan, None) as reference, open_session(plan, lib) as ours:
        (spec,) = reference.inputs
        for code in (100, -100):
            feeds = {spec["name"]: np.full(spec["shape"], code, np.int8)}
            assert ours.run(feeds)["Identity"].tobytes() == reference.run(feeds)["Identity"].tobytes()
            stages = _stages_run(plan, lib, feeds)
            assert stages == _stages_run(plan, None, feeds)
            sequences.add(tuple(stages))
    assert len(sequences) == 2, f"both inputs took the same branch: {sequences}"


def _while_bound(plan: Path, rounds: int, out: Path) -> Path:
    """while_conv with the cond's constant (counter < bound) set to `rounds`."""
    from tests.runtime.plantools import PlanView

    view = PlanView(plan)
    less = next(o for o in view.info["ops"] if o["op_type"] == 74)
    w = view.info["weights"][less["weight_idx"]]
    data = bytearray(view.data)
    struct.pack_into("<i", data, view.weight_blob_at + w["offset"], rounds)
    out.write_bytes(bytes(data))
    return out


@pytest.mark.parametrize("rounds", [0, 1, 2, 40])
def test_while_runs_as_many_rounds_as_the_reference(rounds: int, work: Path, lib: Path) -> None:
    """Each round runs the cond graph's stage and the body's (two stage_begin events), a last cond
    ends it; events, counters and outputs equal the reference's."""
    plan = _while_bound(_plan("while_conv", work, 1), rounds, work / f"while_{rounds}.tgrs")
    x = {"x": np.arange(144, dtype=np.int64).reshape(1, 6, 6, 4).astype(np.int8)}
    stages = _stages_run(plan, lib, x)
    assert stages == _stages_run(plan, None, x)
    assert stages.count(4) == rounds and stages.count(3) == rounds + 1
    assert_same_as_reference(plan, lib, n_inputs=3)


def test_inconsistent_subgraphs_are_refused_like_the_reference(work: Path, lib: Path) -> None:
    """An If naming the main graph as a branch; a subgraph table of one graph; a graph whose
    stage range overlaps the one before: the reference refuses each, and so does ours."""
    from tests.runtime.plantools import PlanView

    plan = _plan("if_conv", work, 1)
    view = PlanView(plan)
    section = view.sections[11]  # SEC_OP_ATTRIBUTES: u16 count, u16 0, 8-byte entries, payloads
    count = struct.unpack_from("<H", view.data, section)[0]
    entries = [struct.unpack_from("<HBBI", view.data, section + 4 + 8 * i) for i in range(count)]
    (payload,) = [off for _, kind, _, off in entries if kind == OP_ATTR_SUBGRAPHS]
    data = bytearray(view.data)
    struct.pack_into("<H", data, section + 4 + 8 * count + payload, 0)
    message = refused_by_both(lib, bytes(data), work / "if_main_branch.tgrs")
    assert "(If)" in message and "main graph" in message

    table = view.sections[SEC_SUBGRAPHS]
    data = bytearray(view.data)
    struct.pack_into("<H", data, table, 1)
    assert "subgraph table" in refused_by_both(lib, bytes(data), work / "if_one_graph.tgrs")

    data = bytearray(view.data)
    first_of_graph_2 = table + 4 + 12 * 2
    struct.pack_into("<H", data, first_of_graph_2, struct.unpack_from("<H", data, first_of_graph_2)[0] - 1)
    assert "stage range" in refused_by_both(lib, bytes(data), work / "if_overlap.tgrs")
