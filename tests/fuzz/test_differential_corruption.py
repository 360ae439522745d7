"""Ours refuses every corrupted plan the reference refuses, and runs the rest to the same bytes.

Every field of every record kind the loader reads (tests/fuzz/plan_fields.py: header, directory,
tensors, ops, stages, v9 and v10 tile plans, index and shape pools, weights, quantization entries
and data, attributes and their payloads, state, subgraphs, LZ4 block entries and blob bytes; here
of the first two, middle and last two records of each table, ``differential.py edits`` edits every
record) of each base plan in ``differential.BASES`` is set, one at a time, to boundary values (0, 1, max,
max-1, its neighbours, the record counts, shifted offsets). Each edited plan runs on the bundled
reference runtime and on ours (tests/fuzz/diff_plan.c, each in a forked child). A pair is a
finding (``differential.is_finding``) when ours runs a plan the reference refuses or fails, fails
a run of a plan the reference refuses, crashes, or runs to other output bytes.

``KNOWN_OPEN`` lists, per base, the findings not fixed yet, each with what is known of the
reference's rule; an entry that stops matching fails the test too, so the list only shrinks. The counts per base are
printed (``-s``) and recorded in the issue note.
"""

from __future__ import annotations

import re
import pytest

from tests.fuzz import differential
from tests.support import host_library

pytestmark = pytest.mark.slow  # ~3,000-6,000 edits per base, two runtimes each

#: what the reference refuses (or fails) and ours does not yet, as (edit label pattern, what is
#: known of the reference's rule), per base plan
_STAGE_PEAK_1 = (r"stage\[\d+\]\.peak_bytes=0x1",
                 "the reference sizes an allocation from a stage's peak_bytes: 0 and peak-1 run, 1 fails the run")
_EMPTY_ATTRIBUTES = (r"attributes\.count=0x0", "an attribute section of 0 entries with payload bytes left over")
_BUDGET_1 = (r"header\.budget=0x1", "budget 1, below every stage's peak: the reference fails allocation, ours runs")
_FOREIGN_TILE_PLAN = (r"stage\[\d+\]\.tile_plan_idx=0x[0-9a-f]+",
                      "a stage pointed at a tile plan whose mode its ops do not admit, though it fits untiled")
_SOFTMAX_AS_13 = (r"op\[12\]\.op_type=0xd", "Softmax relabelled as opcode 13, which the reference's contract refuses")
_FUSED_ACT = (r"op\[\d+\]\.fused_act=0x1", "a fused activation on a Reshape or If, whose contract takes none")
_SCALAR_RESHAPED = (r"tensor\[\d+\]\.(ndim|shape_off)=0x[0-9a-f]+",
                    "an int32/bool/state tensor given another rank or extents of the same size")
KNOWN_OPEN: dict[str, list[tuple[str, str]]] = {
    "ds_cnn_20K": [_EMPTY_ATTRIBUTES, _BUDGET_1, _SOFTMAX_AS_13, _STAGE_PEAK_1],
    "ds_cnn_28K-lz4": [_EMPTY_ATTRIBUTES, _SOFTMAX_AS_13, _STAGE_PEAK_1, _FOREIGN_TILE_PLAN],
    "case_clamp_cnn_128": [
        _EMPTY_ATTRIBUTES, _STAGE_PEAK_1, _FOREIGN_TILE_PLAN,
        (r"tile_plan\[3\]\.(input_channel_group|input_spatial_interval|tiled_peak_bytes)=0x[0-9a-f]+",
         "a grouped reduction whose interval does not fit its tiled peak: refused at load there, a failed run here")],
    "case_executor_cnn_1536": [_EMPTY_ATTRIBUTES, _STAGE_PEAK_1, _FOREIGN_TILE_PLAN],
    "conformance_resize_nearest_128": [],
    "control_if_conv": [
        _STAGE_PEAK_1,
        (r"attribute\[3\]\.data\[(0|8|16)\]=0x[0-9a-f]+",
         "comparison requantization (kind 13) shifts: the reference accepts a narrower range"),
        (r"op\[12\]\.weight_idx=0x1", "a Mul constant swapped for a weight of the same size: the run fails there")],
    "conformance_while_conv_256K": [_STAGE_PEAK_1, _FUSED_ACT],
    "state_svdf_batch": [
        _SCALAR_RESHAPED,
        (r"attribute\[\d+\]\.data\[\d+\]=0x[0-9a-f]+", "SVDF attribute payload ranges (rank, activation)"),
        (r"op\[0\]\.(weight_idx|bias_idx)=0x[0-9a-f]+", "SVDF weights swapped for others of the same size")],
    "int32_gather_runtime": [_BUDGET_1, _STAGE_PEAK_1],
    "int32_tight_gather_runtime_2": [
        _FOREIGN_TILE_PLAN,
        (r"tile_plan\[\d\]\.original_height=0x5", "a row band's original height is checked against the stage's rows"),
        (r"tile_plan\[\d\]\.flags=0x1", "BAND_ON_COLUMNS on a gather's row bands, which the reference refuses")],
}


def _open_reason(base: str, label: str) -> str | None:
    return next((pattern for pattern, _ in KNOWN_OPEN[base] if re.fullmatch(pattern, label)), None)


@pytest.mark.parametrize("base", differential.BASES)
def test_every_boundary_edit(base: str) -> None:
    """No finding outside KNOWN_OPEN, and every KNOWN_OPEN entry still found (a fixed one leaves)."""
    rows = differential.edit_pairs(differential.CORPUS / f"{base}.tgrs", host_library(), every_record=False)
    counts = differential.counts(rows)
    print(base, len(rows), counts)
    assert counts.get("both ran, identical", 0) > 0 and counts.get("both refused", 0) > 0, counts
    findings = [(label, a, b) for label, a, b in rows if differential.is_finding(a, b)]
    new = [f"{label}: reference {a} | ours {b}" for label, a, b in findings if _open_reason(base, label) is None]
    assert not new, f"{len(new)} edits of {base} run on ours but not on the reference (or differ):\n" + "\n".join(new[:40])
    still = {_open_reason(base, label) for label, _, _ in findings}
    fixed = [pattern for pattern, _ in KNOWN_OPEN[base] if pattern not in still]
    assert not fixed, f"fixed, remove from KNOWN_OPEN[{base!r}]: {fixed}"


def test_known_open_covers_every_base() -> None:
    assert set(KNOWN_OPEN) == set(differential.BASES)


def test_rule_judges_both_ways() -> None:
    """The rule itself: each kind of disagreement is a finding, each allowed one is not."""
    v = differential.Verdict.parse
    assert differential.is_finding(v("refuse x"), v("ok 1"))
    assert differential.is_finding(v("fail x"), v("ok 1"))
    assert differential.is_finding(v("ok 1"), v("ok 2"))
    assert differential.is_finding(v("refuse x"), v("fail y"))
    assert differential.is_finding(v("ok 1"), v("crash 11"))
    assert differential.is_finding(v("ok 1"), v("hang"))
    assert not differential.is_finding(v("ok 1"), v("ok 1"))
    assert not differential.is_finding(v("ok 1"), v("refuse y"))
    assert not differential.is_finding(v("fail x"), v("refuse y"))
    assert not differential.is_finding(v("hang"), v("hang"))
    assert not differential.is_finding(v("crash 11"), v("refuse y"))
