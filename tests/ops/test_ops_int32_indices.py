"""int32 tensors at run time, against the reference host runtime: indices and their arithmetic.

The sdist fixtures that compute indices (``gather_runtime``, ``gather_nd_runtime``,
``embedding_lookup_runtime``, ``embedding_table``, ``gather_nd_table``,
``gather_index_arithmetic``, ``arg_max_gather``, ``dynamic_update_slice_runtime``,
``select_int32_condition``) run in tests/conformance on their own and generated inputs. Here each
rule of docs/execution.md#int32-values-indices-and-their-arithmetic is driven at its boundary with
inputs chosen for it, and every outcome is the reference's: identical bytes where it runs, a
failed run (naming the op, the session usable afterwards) where it fails.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.ops.models_data import compile_model, fixture_plan

pytest.importorskip("tigris.runtime")

import tigris.runtime as tr


def _outcome(session, feeds: dict[str, np.ndarray]) -> dict[str, bytes] | str:
    try:
        return {k: np.asarray(v).tobytes() for k, v in session.run(feeds).items()}
    except tr.RuntimeError as exc:
        return f"fails: {exc}"


def _assert_same_outcomes(plan: Path, lib: Path, feeds_list: list[dict[str, np.ndarray]],
                          op: str) -> tuple[int, int]:
    """Each feed: both run identically, or both fail (ours naming ``op``); runs and failures are
    interleaved on one session of each, so a failed run must leave nothing behind. Returns
    (runs, failures)."""
    from tests.runtime.oracle import open_session

    runs = failures = 0
    with open_session(plan, None) as reference, open_session(plan, lib) as ours:
        for index, feeds in enumerate(feeds_list):
            expected, got = _outcome(reference, feeds), _outcome(ours, feeds)
            if isinstance(expected, str):
                assert isinstance(got, str), f"input {index}: the reference fails ({expected}) but ours runs"
                assert f"({op})" in got or "int64 value outside" in got, f"input {index}: {got}"
                failures += 1
                continue
            assert got == expected, f"input {index}: {'ours ' + got if isinstance(got, str) else 'outputs differ'}"
            runs += 1
    return runs, failures


def _feeds(plan: Path, index_values: list[np.ndarray], seed: int = 0) -> list[dict[str, np.ndarray]]:
    """One feed per index array: random int8 data, the index input set to the array."""
    from tests.runtime.oracle import open_session

    rng = np.random.default_rng(seed)
    with open_session(plan, None) as reference:
        specs = reference.inputs
    feeds = []
    for values in index_values:
        f = {}
        for s in specs:
            dtype = np.dtype(s["dtype"])
            if dtype == np.int8:
                f[s["name"]] = rng.integers(-128, 128, size=s["shape"]).astype(np.int8)
            else:
                f[s["name"]] = np.asarray(values, dtype=dtype).reshape(s["shape"])
        feeds.append(f)
    return feeds


def test_run_time_gather_indices_outside_the_axis_fail_the_run(work: Path, lib: Path) -> None:
    """gather_runtime gathers axis 2 (extent 6) of [1,6,6,4] with a [3] index input: -1 and 6
    fail, 0 and 5 run, in any position of the index list."""
    plan = fixture_plan("gather_runtime", work)
    values = [[0, 5, 3], [-1, 0, 0], [0, 0, 6], [5, 5, 5], [2, -6, 1], [1, 2, 2**31 - 1], [3, 4, 0]]
    runs, failures = _assert_same_outcomes(plan, lib, _feeds(plan, values), "Gather")
    assert (runs, failures) == (3, 4)


def test_gather_nd_run_time_tuples(work: Path, lib: Path) -> None:
    """gather_nd_runtime: [3,2] tuples into [6,6,4]; a coordinate outside either axis fails."""
    plan = fixture_plan("gather_nd_runtime", work)
    values = [[[0, 0], [5, 5], [2, 3]], [[0, 6], [0, 0], [0, 0]], [[0, 0], [-1, 0], [0, 0]], [[5, 0], [0, 5], [4, 4]]]
    runs, failures = _assert_same_outcomes(plan, lib, _feeds(plan, values), "GatherND")
    assert (runs, failures) == (2, 2)


@pytest.mark.parametrize("fixture, extents", [("embedding_table", (32,)), ("gather_nd_table", (6, 6))])
def test_constant_table_counts_negative_indices_from_the_end(fixture: str, extents: tuple[int, ...], work: Path,
                                                            lib: Path) -> None:
    """A lookup into a constant table: -k is extent - k down to -extent; -extent - 1 and extent
    fail. Every lookup of the 31 positions takes the boundary values in turn."""
    plan = fixture_plan(fixture, work)
    from tests.runtime.oracle import open_session

    with open_session(plan, None) as reference:
        (spec,) = reference.inputs
    n = int(np.prod(spec["shape"]))
    values = []
    for extent in extents:
        for v in (-extent, -1, 0, extent - 1):
            values.append(np.resize(np.array([v, 0, -1, 1], np.int32), n))
    for bad in (-extents[0] - 1, extents[0]):
        arr = np.zeros(n, np.int32)
        arr[n // 2] = bad
        values.append(arr)
    runs, failures = _assert_same_outcomes(plan, lib, _feeds(plan, values), "Gather" if len(extents) == 1 else "GatherND")
    assert (runs, failures) == (len(values) - 2, 2)


def test_index_arithmetic_wraps_like_the_reference(work: Path, lib: Path) -> None:
    """gather_index_arithmetic gathers rows 2*i - 1 of a [6,4] input: i = -2147483647 wraps to
    row 1, -2147483646 to row 3, 1073741825 to a negative row (fails)."""
    plan = fixture_plan("gather_index_arithmetic", work)
    values = [[1, 2, 3], [-2147483647, 1, 1], [-2147483646, 2, 3], [1073741825, 1, 1], [0, 1, 1], [3, 3, 4]]
    runs, failures = _assert_same_outcomes(plan, lib, _feeds(plan, values), "Gather")
    assert (runs, failures) == (3, 3)


def test_dynamic_update_slice_clamps_run_time_starts(work: Path, lib: Path) -> None:
    """A [1,2,3,4] update into [1,6,6,4] at starts past either end lands at the nearest
    position inside."""
    plan = fixture_plan("dynamic_update_slice_runtime", work)
    values = [[0, 0, 0, 0], [0, 1, 1, 0], [0, 5, 5, 0], [0, -1, -3, 0], [1, 0, 0, 1], [0, 4, 3, 0],
              [0, 100, -100, 7], [-2**31, 2**31 - 1, 0, 0]]
    runs, failures = _assert_same_outcomes(plan, lib, _feeds(plan, values), "DynamicUpdateSlice")
    assert (runs, failures) == (len(values), 0)


def test_int32_condition_selects_like_the_reference(work: Path, lib: Path) -> None:
    """select_int32_condition: Greater(k, 2) on an int32 input picks x or its reverse."""
    plan = fixture_plan("select_int32_condition", work)
    values = [[-2**31], [-5], [2], [3], [2**31 - 1]]
    runs, failures = _assert_same_outcomes(plan, lib, _feeds(plan, values), "Where")
    assert (runs, failures) == (len(values), 0)


def _onnx_gather_int64(path: Path) -> Path:
    """An ONNX Gather whose indices are an int64 graph input (stored int32, iface int64)."""
    s = numpy_helper.from_array(np.array(0.02, np.float32), "s")
    z = numpy_helper.from_array(np.array(0, np.int8), "z")
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"]),
             helper.make_node("Gather", ["xd", "i"], ["g"], axis=0),
             helper.make_node("QuantizeLinear", ["g", "s", "z"], ["gq"]),
             helper.make_node("DequantizeLinear", ["gq", "s", "z"], ["y"])]
    g = helper.make_graph(nodes, "gather_int64",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 4]),
                           helper.make_tensor_value_info("i", TensorProto.INT64, [3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])], [s, z])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)
    return path


def test_int64_indices_are_narrowed_or_fail_the_run(work: Path, lib: Path) -> None:
    """An int64 interface input holds int32 indices: values outside int32 fail the run on both
    (ours: TGR_ERR_ARGUMENT naming the input), then in-range ones run."""
    plan = compile_model(_onnx_gather_int64(work / "gather_int64.onnx"), work / "gather_int64.tgrs")
    from tests.runtime.oracle import open_session

    with open_session(plan, lib) as ours:
        assert [np.dtype(s["dtype"]) for s in ours.inputs] == [np.float32, np.int64]
    rng = np.random.default_rng(3)
    feeds = []
    for values in ([0, 1, 5], [2**32 + 1, 0, 0], [0, 0, 2**31], [0, -2**31 - 1, 0], [3, 3, 2], [-1, 0, 0]):
        feeds.append({"x": rng.standard_normal((6, 4)).astype(np.float32),
                      "i": np.array(values, np.int64)})
    runs, failures = _assert_same_outcomes(plan, lib, feeds, "Gather")
    assert (runs, failures) == (2, 4)


@pytest.mark.parametrize("fixture, budget, low, high", [
    ("gather_runtime", "176", -1, 7), ("gather_nd_runtime", "176", -1, 7),
    ("dynamic_update_slice_runtime", "192", -9, 9), ("embedding_table", "256", -33, 33),
    ("gather_nd_table", "512", -7, 7)])
def test_banded_index_stages_match_the_reference(fixture: str, budget: str, low: int, high: int, work: Path,
                                                 lib: Path) -> None:
    """Below the 256K peak tigris-ml bands these stages: the data and output in row bands with
    run-time indices read whole from slow memory, or a table's lookups banded with their
    output. Both runtimes take the rows path; outcomes agree on indices inside and outside."""
    from tests.ops.models_data import reference_paths, sdist_ops_dir
    from tests.runtime.oracle import open_session

    fixture_plan(fixture, work)  # skips, or fails under CI, without the sdist
    plan = compile_model(sdist_ops_dir() / f"{fixture}.tflite", work / f"{fixture}_{budget}.tgrs", budget)
    assert "rows" in reference_paths(plan)
    with open_session(plan, None) as reference:
        (index_spec,) = [s for s in reference.inputs if np.dtype(s["dtype"]) == np.int32]
    rng = np.random.default_rng(7)
    values = [np.zeros(index_spec["shape"], np.int32)]
    values += [rng.integers(low, high, size=index_spec["shape"]).astype(np.int32) for _ in range(10)]
    runs, failures = _assert_same_outcomes(plan, lib, _feeds(plan, values), "Gather" if "nd" not in fixture
                                           else "GatherND")
    assert runs >= 1
    from tests.runtime.oracle import _traced_run

    with open_session(plan, lib) as ours:
        paths = {e["path"] for e in _traced_run(ours, _feeds(plan, values[:1])[0]).events
                 if e["kind"] == "stage_begin"}
    assert "rows" in paths
