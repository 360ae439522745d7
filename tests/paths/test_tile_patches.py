"""Hand-patched tile fields (docs/execution.md#tile-sizing, docs/execution.md#acceptance-ladder,
docs/plan-format.md#tile-plan-records).

The reference re-derives tile extents at run time and uses only some plan fields. Our runtime
must derive them where the reference does, so:

* v9 1-D stripe records: ``tile_height``, ``num_tiles``, ``halo`` are ignored. Patched (every
  1-D record of the plan at once) to 0, 1 and a large value, both runtimes keep the unpatched
  bands (``tile_begin`` row ranges) and outputs.
* ``tiled_peak_bytes`` of a 1-D stripe stage is its fast limit ``L``: 960 → 640 on the AvgPool
  stage of executor_cnn@1K changes the reference's input bands from [0,6)+[6,8) to [0,4)+[4,8).
  Swept downwards on every 1-D stage until the reference refuses: ours gives the same outputs
  and bands, stays within the patched limit and the reference's peaks, and refuses where the
  reference refuses.
* chain heads' ``chain_tile_h`` is an upper bound on the chain tile height (3 → 2 uses 2, 3 → 50
  still 3); 0 is refused by both.
* tiled_2d records: ``tile_height`` × ``tile_width`` are used as given (smaller tiles are
  followed, larger ones that do not fit are refused), ``num_tiles``/``halo`` and
  ``tiled_peak_bytes`` are ignored by the reference.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from tests.opmodels import random_inputs, read_plan
from tests.runtime.oracle import assert_outputs_identical, assert_peaks_not_above, compare, run_plan
from tests.runtime.plantools import SEC_TILE_PLANS, PlanView, patch

tigris_runtime = pytest.importorskip("tigris.runtime")

PATCH_INPUTS = 5
SWEEP_INPUTS = 2
SWEEP_STEP = 64

#: v≤9 24-byte tile-plan record: field -> (offset, struct format), docs/plan-format.md#tile-plan-records
TILE_FIELDS_V9 = {"tileable": (0, "<B"), "axis": (1, "<B"), "tile_height": (2, "<H"), "num_tiles": (4, "<H"),
                  "halo": (6, "<H"), "receptive_field": (8, "<H"), "original_height": (10, "<H"),
                  "tiled_peak_bytes": (12, "<I"), "overhead_bytes": (16, "<I"), "tile_width": (20, "<H"),
                  "flags": (22, "<H")}
AXIS_H, AXIS_HW = 1, 3

#: (case, budget) plans with v9 1-D stripe records
STRIPE_PLANS = [("executor_cnn", "1K"), ("asym_cnn", "1536")]


# --------------------------------------------------------------------------- helpers


def patch_tile(data: bytes, record: int, field: str, value: int) -> bytes:
    view = PlanView(data)
    assert view.header["version"] <= 9, "24-byte tile records are schema <= 9"
    off, fmt = TILE_FIELDS_V9[field]
    return patch(data, view.sections[SEC_TILE_PLANS] + 24 * record + off, fmt, value)


def tile_stages(plan: dict, axis: int) -> list[int]:
    return [i for i, s in enumerate(plan["stages"])
            if s["tile_plan_idx"] != 0xFFFF and plan["tile_plans"][s["tile_plan_idx"]]["axis"] == axis]


def bands(events: list[dict], stage: int | None = None) -> list[tuple]:
    """Tile geometry of a run: each tile_begin's stage and input row/column range (halo included).

    Spill ranges are left out on purpose: they follow from the tiles, and where they differ
    today (a chain output that is also read inside the chain, residual_cnn@8K) that is a traffic
    difference reported by test_paths.py's counters, not a different tiling."""
    return [(e["stage"], e["row0"], e["row1"], e["col0"], e["col1"]) for e in events
            if e["kind"] == "tile_begin" and (stage is None or e["stage"] == stage)]


def unit_peak(plan: dict, events: list[dict], stage: int) -> int:
    from tigris.cli.trace import units

    (unit,) = [u for u in units(plan, events) if u["stage"] == stage]
    return unit["fast_peak"]


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def seed(*parts: object) -> int:
    return zlib.crc32("/".join(map(str, parts)).encode())


def check_against_reference(label: str, plan_path: Path, library: Path, n: int, rng_seed: int):
    """compare() with a readable failure if our runtime raises; outputs identical, peaks <=,
    our bands == the reference's on every input. Returns the Comparison."""
    try:
        cmp = compare(plan_path, library, n_inputs=n, seed=rng_seed)
    except tigris_runtime.RuntimeError as exc:
        pytest.fail(f"{label}: our runtime raised {exc!r}; the reference runs this plan", pytrace=False)
    assert_outputs_identical(cmp)
    assert_peaks_not_above(cmp)
    for c in cmp.inputs:
        assert bands(c.ours.events) == bands(c.reference.events), f"{label}: input {c.index}: bands differ"
    return cmp


# --------------------------------------------------------------------------- 1-D stripes


@pytest.mark.parametrize(("name", "budget"), STRIPE_PLANS)
@pytest.mark.parametrize(("field", "value"), [("tile_height", 0), ("tile_height", 1), ("tile_height", 100),
                                              ("num_tiles", 0), ("num_tiles", 1), ("num_tiles", 99),
                                              ("halo", 0), ("halo", 9)])
def test_stripe_fields_are_ignored(name: str, budget: str, field: str, value: int, plan_cache,
                                   our_library: Path, tmp_path: Path) -> None:
    src = plan_cache.case_plan(name, budget)
    plan = read_plan(src)
    stripes = tile_stages(plan, AXIS_H)
    assert stripes, f"{name}@{budget} has no 1-D tile record"
    data = src.read_bytes()
    for s in stripes:
        data = patch_tile(data, plan["stages"][s]["tile_plan_idx"], field, value)
    patched = read_plan(data)
    assert all(patched["tile_plans"][plan["stages"][s]["tile_plan_idx"]][field] == value for s in stripes)
    label = f"{name}@{budget} with {field}={value} on stages {stripes}"

    rng_seed = seed(name, budget, "stripe-fields")
    base = compare(src, our_library, n_inputs=PATCH_INPUTS, seed=rng_seed)  # unpatched, same inputs
    cmp = check_against_reference(label, write(tmp_path, "patched.tgrs", data), our_library, PATCH_INPUTS, rng_seed)
    for b, c in zip(base.inputs, cmp.inputs):
        for out in b.reference.outputs:
            assert c.reference.outputs[out].tobytes() == b.reference.outputs[out].tobytes(), (
                f"{label}: the reference's output changed")
        assert bands(c.reference.events) == bands(b.reference.events), f"{label}: the reference's bands changed"
        assert bands(c.ours.events) == bands(b.ours.events), f"{label}: our bands changed"


def test_tiled_peak_960_to_640_changes_avgpool_bands(plan_cache, our_library: Path, tmp_path: Path) -> None:
    """The doc's example: executor_cnn@1K stage 6 (AvgPool 2x2/2 on 8x8x16), L 960 -> 640."""
    src = plan_cache.case_plan("executor_cnn", "1K")
    plan = read_plan(src)
    stage = 6
    record = plan["stages"][stage]["tile_plan_idx"]
    assert plan["ops"][plan["stages"][stage]["ops"][0]]["op_type"] == 6  # AveragePool
    assert plan["tile_plans"][record]["tiled_peak_bytes"] == 960
    path = write(tmp_path, "l640.tgrs", patch_tile(src.read_bytes(), record, "tiled_peak_bytes", 640))

    feeds = random_inputs(src, np.random.default_rng(0))
    before = run_plan(src, feeds)
    tiles = [(e["row0"], e["row1"]) for e in before.events if e["kind"] == "tile_begin" and e["stage"] == stage]
    assert tiles == [(0, 6), (6, 8)], tiles
    cmp = check_against_reference("executor_cnn@1K, stage 6 tiled_peak 960->640", path, our_library,
                                  PATCH_INPUTS, seed("l640"))
    for c in cmp.inputs:
        got = [(e["row0"], e["row1"]) for e in c.reference.events if e["kind"] == "tile_begin" and e["stage"] == stage]
        assert got == [(0, 4), (4, 8)], f"the reference's bands at L=640: {got}"
        unpatched = run_plan(src, c.feeds).outputs
        assert all(c.reference.outputs[k].tobytes() == v.tobytes() for k, v in unpatched.items()), (
            "the reference's output changed with L=640")
        assert unit_peak(plan, c.ours.events, stage) <= 640
        assert unit_peak(plan, c.ours.events, stage) <= unit_peak(plan, c.reference.events, stage)


def _sweep_params() -> list:
    return [pytest.param(name, budget, id=f"{name}-{budget}") for name, budget in STRIPE_PLANS]


@pytest.mark.parametrize(("name", "budget"), _sweep_params())
def test_tiled_peak_sweep(name: str, budget: str, plan_cache, our_library: Path, tmp_path: Path) -> None:
    """Every 1-D stage: tiled_peak_bytes lowered in SWEEP_STEP steps until the reference refuses."""
    src = plan_cache.case_plan(name, budget)
    plan = read_plan(src)
    tried = []
    for stage in tile_stages(plan, AXIS_H):
        record = plan["stages"][stage]["tile_plan_idx"]
        original = plan["tile_plans"][record]["tiled_peak_bytes"]
        for limit in range(original - SWEEP_STEP, 0, -SWEEP_STEP):
            path = write(tmp_path, f"s{stage}_{limit}.tgrs", patch_tile(src.read_bytes(), record, "tiled_peak_bytes", limit))
            label = f"{name}@{budget} stage {stage} tiled_peak {original}->{limit}"
            feeds = random_inputs(src, np.random.default_rng(0))
            try:
                run_plan(path, feeds)
            except tigris_runtime.RuntimeError as exc:
                # fail closed like the reference: never run a stage past its limit
                with pytest.raises(tigris_runtime.RuntimeError):
                    run_plan(path, feeds, our_library)
                tried.append((stage, limit, f"refused: {exc}"))
                break
            cmp = check_against_reference(label, path, our_library, SWEEP_INPUTS, seed(name, budget, stage, limit))
            for c in cmp.inputs:
                ours = unit_peak(plan, c.ours.events, stage)
                assert ours <= limit, f"{label}: our unit peak {ours} > the patched limit"
                assert ours <= unit_peak(plan, c.reference.events, stage), f"{label}: unit peak above the reference's"
            tried.append((stage, limit, len(bands(cmp.inputs[0].reference.events, stage))))
    print(f"{name}@{budget}: (stage, tiled_peak, tiles or refusal): {tried}")
    assert any(isinstance(t[2], int) for t in tried), "no lowered limit was accepted: nothing was tested"


# --------------------------------------------------------------------------- chains


@pytest.mark.parametrize(("name", "budget"), [("executor_cnn", "4K"), ("residual_cnn", "8K")])
def test_chain_tile_h_is_an_upper_bound(name: str, budget: str, plan_cache, our_library: Path, tmp_path: Path) -> None:
    src = plan_cache.case_plan(name, budget)
    view = PlanView(src)
    plan = view.info
    heads = [i for i, s in enumerate(plan["stages"]) if s["chain_len"] and s["chain_id"] == i]
    assert heads
    feeds = random_inputs(src, np.random.default_rng(0))
    base = run_plan(src, feeds)
    for head in heads:
        h = plan["stages"][head]["chain_tile_h"]
        refused = write(tmp_path, f"h{head}_0.tgrs", view.set_stage(head, "chain_tile_h", 0))
        with pytest.raises(tigris_runtime.RuntimeError):
            run_plan(refused, feeds)
        with pytest.raises(tigris_runtime.RuntimeError):
            run_plan(refused, feeds, our_library)
        for value in sorted({1, 2, h + 1, 50}):
            label = f"{name}@{budget} chain head {head} chain_tile_h {h}->{value}"
            path = write(tmp_path, f"h{head}_{value}.tgrs", view.set_stage(head, "chain_tile_h", value))
            cmp = check_against_reference(label, path, our_library, SWEEP_INPUTS, seed(name, budget, head, value))
            ref_bands = bands(cmp.inputs[0].reference.events, head)
            if value >= h:
                assert ref_bands == bands(base.events, head), f"{label}: a larger bound changed the reference"


# --------------------------------------------------------------------------- 2-D tiles


def _hw_params() -> list:
    return [pytest.param(field, how, id=f"{field}-{how}") for field, how in
            [("tile_height", "one"), ("tile_width", "one"), ("num_tiles", "one"), ("halo", "zero"),
             ("tiled_peak_bytes", "half")]]


@pytest.mark.parametrize(("field", "how"), _hw_params())
def test_tiled_2d_fields(field: str, how: str, plan_cache, our_library: Path, tmp_path: Path) -> None:
    """executor_cnn@1K stages 0-2 (Conv3x3, Conv3x3/2, DW): the reference takes the output tile
    from tile_height x tile_width and ignores num_tiles, halo and tiled_peak_bytes."""
    src = plan_cache.case_plan("executor_cnn", "1K")
    plan = read_plan(src)
    feeds = random_inputs(src, np.random.default_rng(0))
    base = run_plan(src, feeds)
    for stage in tile_stages(plan, AXIS_HW):
        record = plan["stages"][stage]["tile_plan_idx"]
        old = plan["tile_plans"][record][field]
        value = {"one": 1, "zero": 0, "half": old // 2}[how]
        path = write(tmp_path, f"s{stage}.tgrs", patch_tile(src.read_bytes(), record, field, value))
        label = f"executor_cnn@1K stage {stage} (tiled_2d) {field} {old}->{value}"
        ref = run_plan(path, feeds)
        changed = bands(ref.events, stage) != bands(base.events, stage)
        assert changed == (field in ("tile_height", "tile_width")), f"{label}: reference bands changed: {changed}"
        check_against_reference(label, path, our_library, SWEEP_INPUTS, seed("hw", stage, field))


def test_tile_record_layout_matches_reader(plan_cache) -> None:
    """TILE_FIELDS_V9 offsets agree with the compiler's reader on a real plan."""
    src = plan_cache.case_plan("executor_cnn", "1K")
    data = src.read_bytes()
    view = PlanView(data)
    for idx, rec in enumerate(view.info["tile_plans"]):
        base = view.sections[SEC_TILE_PLANS] + 24 * idx
        for field, (off, fmt) in TILE_FIELDS_V9.items():
            raw = struct.unpack_from(fmt, data, base + off)[0]
            expected = rec["band_on_columns"] if field == "flags" else rec[field]
            assert raw == expected, (idx, field, raw, expected)
