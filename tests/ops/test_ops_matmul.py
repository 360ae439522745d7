"""MatMul of two int8 activations, and constant-weight products on rank > 2 inputs, against the
reference host runtime, byte for byte.

MatMul (25): acc = sum (a - zp_a)(b - zp_b), requantized with the output entry's stored pair
(s_a * s_b / s_out) by the two-step TFLite rounding. The compiler brings rank-3/4 operands into
model order with Transposes; the reference refuses a broadcast second operand, and so do we.
A MatMul with a constant weight becomes Gemm (9, ops_conv.c); on rank 3/4 inputs the compiler
wraps a rank-2 Gemm in Transpose/Reshape, so "batched Gemm" is exercised through those ops.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
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
)

pytest.importorskip("tigris.runtime")

MATMUL, GEMM = 25, 9

QUANT = {  # a, b, y
    "plain": ((0.02, 3), (0.03, -2), (0.05, -4)),
    "symmetric": ((0.05, 0), (0.04, 0), (0.3, 0)),
    "offsets": ((0.1, -7), (0.02, 5), (0.06, 10)),
    "saturating": ((0.05, 20), (0.05, -30), (0.01, 0)),
}

SHAPES = {
    "rank2": ([4, 16], [16, 6]),
    "rank2_deep": ([3, 200], [200, 5]),
    "rank3": ([2, 4, 8], [2, 8, 6]),
    "rank3_b1": ([1, 5, 8], [1, 8, 3]),
    "rank4": ([1, 2, 4, 8], [1, 2, 8, 6]),
    "rank4_batch": ([2, 3, 3, 4], [2, 3, 4, 2]),
}


@pytest.mark.parametrize("qset", sorted(QUANT))
@pytest.mark.parametrize("case", sorted(SHAPES))
def test_matmul(case: str, qset: str, work: Path, lib: Path) -> None:
    sa, sb = SHAPES[case]
    qa, qb, qy = QUANT[qset]
    plan = plan_for(work, f"matmul_{case}_{qset}", graph([node("MatMul", ["a", "b"], ["y"])], {"a": sa, "b": sb}),
                    {"a": qa, "b": qb, "y": qy})
    assert MATMUL in opcodes(read_plan(plan))
    assert_same_as_reference(plan, lib, n_inputs=5)


def test_matmul_broadcast_is_refused(work: Path, lib: Path) -> None:
    qa, qb, qy = QUANT["plain"]
    plan = plan_for(work, "matmul_broadcast", graph([node("MatMul", ["a", "b"], ["y"])], {"a": [2, 4, 8], "b": [8, 6]}),
                    {"a": qa, "b": qb, "y": qy})
    assert_refused(plan, lib, "MatMul", reference_refuses=True)


@pytest.mark.parametrize("shape", [[2, 5, 16], [1, 2, 5, 16], [1, 5, 16], [5, 16]], ids=str)
def test_constant_weight_product(shape, work: Path, lib: Path) -> None:
    """MatMul with a constant weight (ORT recipe quantization): Gemm, wrapped in Transpose and
    Reshape on rank > 2."""
    rng = np.random.default_rng(1)
    w = (rng.standard_normal((16, 6)) * 0.2).astype(np.float32)
    model = graph([node("MatMul", ["x", "w"], ["y"])], {"x": shape}, [const("w", w, np.float32)])
    plan = plan_for(work, f"fc_{'x'.join(map(str, shape))}", model, recipe=True)
    assert GEMM in opcodes(read_plan(plan))
    assert_same_as_reference(plan, lib)


FIXTURES = ["batch_matmul", "fully_connected_bias", "fully_connected_rank3"]


@pytest.mark.parametrize("name", FIXTURES)
def test_tflite_fixture(name: str, work: Path, lib: Path) -> None:
    assert_same_as_reference(fixture_plan(name, work), lib)
