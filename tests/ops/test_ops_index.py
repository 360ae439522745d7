"""Indexing ops of our runtime against the reference host runtime, byte for byte.

StridedSlice (ONNX Slice with steps), MirrorPad (ONNX Pad mode=reflect), ReverseV2, Gather and
GatherND with constant indices, DynamicUpdateSlice: single-op QDQ models and the compiler's own
TFLite fixtures, whole (256K) and at budgets where the compiler bands them: row bands along the
matrix rows, the leading or the last axis (of every tensor, when a gather changes the rank), and
1-D stripes along the height (partition_spatial's independent bands). Outputs identical, peaks not above the reference's, counters and trace
events equal (assert_same_as_reference).

Plans edited to leave the input (indices, slice ranges, pads, update windows) are refused at
load, naming the op; where the reference loads them, it fails every run instead.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Callable

import onnx
import pytest

from tests.ops.models_data import (
    assert_refused,
    assert_same_as_reference,
    const,
    fixture_plan,
    graph,
    node,
    opcodes,
    plan_for,
    read_plan,
    reference_paths,
)

pytest.importorskip("tigris.runtime")

QUANT = {"x": (0.02, 3), "y": (0.02, 3)}
MOVEMENT = 12  # OP_ATTR_MOVEMENT


def _slice(shape, starts, ends, axes, steps) -> onnx.ModelProto:
    return graph([node("Slice", ["x", "s", "e", "a", "st"], ["y"])], {"x": shape},
                 [const("s", starts), const("e", ends), const("a", axes), const("st", steps)])


def _gather(shape, indices, axis) -> onnx.ModelProto:
    return graph([node("Gather", ["x", "i"], ["y"], axis=axis)], {"x": shape}, [const("i", indices)])


def _reflect(shape, pads) -> onnx.ModelProto:
    return graph([node("Pad", ["x", "p"], ["y"], mode="reflect")], {"x": shape}, [const("p", pads)])


MODELS: dict[str, Callable[[], onnx.ModelProto]] = {
    "gather_axis1": lambda: _gather([1, 16, 12, 8], [4, 0, 4, 2, 15, 9], 1),
    "gather_axis3_matrix": lambda: _gather([1, 16, 12, 8], [[3, 0], [1, 7]], 3),
    "gather_negative": lambda: _gather([1, 6, 5, 4], [-1, 0, -5], 2),       # the compiler normalizes
    "gather_rows": lambda: _gather([40, 32], [9, 3, 3, 0, 39, 17], 0),
    "gather_cols": lambda: _gather([40, 32], [9, 3, 3, 0, 31, 17], 1),
    "slice_steps": lambda: _slice([1, 16, 12, 8], [1, 11], [16, 0], [1, 2], [2, -3]),
    "slice_reverse": lambda: _slice([1, 16, 12, 8], [-1], [-100], [3], [-1]),
    "slice_matrix": lambda: _slice([40, 32], [1], [32], [1], [3]),
    "gather_nd": lambda: graph([node("GatherND", ["x", "i"], ["y"])], {"x": [8, 10, 12]},
                               [const("i", [[1, 2], [3, 0], [7, 9]])]),
    "reflect_hw": lambda: _reflect([1, 8, 10, 12], [0, 0, 1, 2, 0, 0, 3, 1]),
    "reflect_channels": lambda: _reflect([1, 8, 10, 12], [0, 2, 0, 0, 0, 1, 0, 0]),
}

#: (model, budget, a path the reference must take, so that the case tests what it says)
CASES = [(name, "256K", "normal") for name in MODELS] + [
    ("gather_axis1", "1K", "rows"),        # leading axis of a linear tensor
    ("gather_rows", "1K", "rows"),         # matrix rows, gathered along the columns' other axis
    ("gather_cols", "1K", "rows"),
    ("slice_steps", "1K", "rows"),         # last axis: the others are sliced
    ("slice_reverse", "1K", "rows"),       # matrix rows of a reversed last axis (step -1)
    ("slice_matrix", "1K", "rows"),
    ("reflect_hw", "1K", "tiled"),         # 1-D stripes along the unpadded channels (stored axis 1)
    ("reflect_channels", "1K", "rows"),
    ("gather_nd", "1K", "normal"),
]


@pytest.mark.parametrize("name,budget,path", CASES, ids=[f"{n}-{b}" for n, b, _ in CASES])
def test_index_op(name: str, budget: str, path: str, work: Path, lib: Path) -> None:
    plan = plan_for(work, f"{name}_{budget}", MODELS[name](), QUANT, budget=budget)
    assert path in reference_paths(plan), f"{name} at {budget} no longer takes the {path} path"
    assert_same_as_reference(plan, lib)


def test_gather_nd_banded_along_each_tensors_last_axis(work: Path, lib: Path) -> None:
    """The compiler bands a lone GatherND (and a Gather) that changes the rank along the last
    axis of every tensor, whose index differs between input and output."""
    plan = plan_for(work, "gather_nd_512", MODELS["gather_nd"](), QUANT, budget="512")
    assert "rows" in reference_paths(plan)
    assert_same_as_reference(plan, lib)


# --------------------------------------------------------------------------- the compiler's fixtures

OPCODES = {"Gather": 66, "GatherND": 67, "StridedSlice": 68, "MirrorPad": 69, "ReverseV2": 70,
           "DynamicUpdateSlice": 72}
FIXTURES = {  # fixture -> the indexing op it holds
    "mirror_pad_reflect": "MirrorPad", "mirror_pad_symmetric": "MirrorPad", "reverse_channels": "ReverseV2",
    "reverse_spatial": "ReverseV2", "strided_slice_steps": "StridedSlice", "dynamic_update_slice": "DynamicUpdateSlice",
    "gather_indices": "Gather", "gather_batch": "Gather", "gather_batch_matrix": "Gather", "gather_matrix": "Gather",
    "embedding_lookup": "Gather", "gather_nd": "GatherND",
}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_tflite_fixture(name: str, work: Path, lib: Path) -> None:
    plan = fixture_plan(name, work)
    assert OPCODES[FIXTURES[name]] in opcodes(read_plan(plan)), f"{name} no longer holds a {FIXTURES[name]}"
    assert_same_as_reference(plan, lib)


# --------------------------------------------------------------------------- edited plans

def _movement_at(data: bytes) -> tuple[int, int]:
    """Byte offset and int32 count of the plan's (only) MOVEMENT payload."""
    from tests.runtime.plantools import PlanView

    view = PlanView(data)
    for a, rec in enumerate(view.info["op_attributes"]):
        if rec["type"] == MOVEMENT:
            offset = struct.unpack_from("<I", view.data, view.attr_entry_at(a) + 4)[0]
            return view.attr_data_at + offset, len(rec["data"]) // 4
    raise AssertionError("no MOVEMENT attribute")


def _with_movement(plan: Path, edit: Callable[[list[int]], list[int]], out: Path) -> Path:
    data = bytearray(plan.read_bytes())
    at, count = _movement_at(bytes(data))
    values = edit(list(struct.unpack_from(f"<{count}i", data, at)))
    struct.pack_into(f"<{count}i", data, at, *values)
    out.write_bytes(bytes(data))
    return out


def _with_indices(plan: Path, values: list[int], out: Path) -> Path:
    from tests.runtime.plantools import PlanView

    view = PlanView(plan)
    data = bytearray(view.data)
    struct.pack_into(f"<{len(values)}i", data, view.weight_blob_at, *values)
    out.write_bytes(bytes(data))
    return out


def _set(index: int, value: int) -> Callable[[list[int]], list[int]]:
    def edit(values: list[int]) -> list[int]:
        values[index] = value
        return values
    return edit


@pytest.mark.parametrize("index", [-1, 6, 100])
def test_gather_index_outside_the_input_is_refused(index: int, work: Path, lib: Path) -> None:
    # gather_indices gathers 4 indices along an axis of extent 6; the reference loads the edited
    # plan and fails every run ("kernel callback error"), we refuse it at load.
    plan = _with_indices(fixture_plan("gather_indices", work), [index, 0, 1, 2], work / f"gather_bad_{index}.tgrs")
    message = assert_refused(plan, lib, "Gather", reference_refuses=False)
    assert "an index is outside the input" in message


def test_gather_nd_index_outside_the_input_is_refused(work: Path, lib: Path) -> None:
    plan = _with_indices(fixture_plan("gather_nd", work), [0, 6, 0, 0, 0, 0], work / "gather_nd_bad.tgrs")
    assert "an index is outside the input" in assert_refused(plan, lib, "GatherND", reference_refuses=False)


EDITS = {
    # fixture, edit of the MOVEMENT ints, op named: the reference refuses these at load too
    "update_window_past_the_end": ("dynamic_update_slice", _set(2, 5), "DynamicUpdateSlice"),
    "update_window_negative": ("dynamic_update_slice", _set(2, -1), "DynamicUpdateSlice"),
    "mirror_longer_than_the_input": ("mirror_pad_reflect", _set(5, 6), "MirrorPad"),
    "slice_start_past_the_end": ("strided_slice_steps", _set(6, 6), "StridedSlice"),
    "slice_stop_below_minus_one": ("strided_slice_steps", _set(7, -2), "StridedSlice"),
}


@pytest.mark.parametrize("case", sorted(EDITS))
def test_edited_plan_is_refused_like_the_reference(case: str, work: Path, lib: Path) -> None:
    fixture, edit, op = EDITS[case]
    plan = _with_movement(fixture_plan(fixture, work), edit, work / f"{case}.tgrs")
    assert_refused(plan, lib, op, reference_refuses=True)


def test_slice_stop_of_minus_one_runs(work: Path, lib: Path) -> None:
    # strided_slice_steps takes (5, 0, -2) along one axis: indices 5, 3, 1. A stop of -1 selects
    # the same indices and both runtimes accept it.
    plan = _with_movement(fixture_plan("strided_slice_steps", work), _set(7, -1), work / "slice_stop_minus_one.tgrs")
    assert_same_as_reference(plan, lib)


def test_gather_with_lz4_weights_is_refused(work: Path, lib: Path) -> None:
    """Indices inside a compressed block cannot be checked before their stage runs."""
    from click.testing import CliRunner
    from tigris.cli import cli

    plain = plan_for(work, "gather_lz4", MODELS["gather_axis1"](), QUANT)
    plan = work / "gather_lz4.lz4.tgrs"
    res = CliRunner().invoke(cli, ["compile", str(plain.with_suffix(".onnx")), "-m", "256K", "-c", "lz4", "-o", str(plan)])
    assert res.exit_code == 0 and plan.exists(), res.output
    message = assert_refused(plan, lib, "Gather", reference_refuses=False)
    assert "LZ4" in message

