"""bench/kernel_work.py's pure parts: MACs from a plan, rows per op type, the MAC cross-check."""

from __future__ import annotations

import pytest

from bench import kernel_work as kw


def _tensor(*shape: int) -> dict:
    return {"shape": list(shape)}


def test_plan_macs_per_op_kind():
    plan = {"tensors": [_tensor(1, 49, 10, 1), _tensor(1, 25, 5, 64), _tensor(1, 25, 5, 64), _tensor(1, 64),
                        _tensor(1, 12), _tensor(1, 8, 8, 4), _tensor(1, 16, 16, 6)],
            "ops": [{"op_type": 1, "inputs": [0], "outputs": [1], "spatial": {"kernel_h": 10, "kernel_w": 4}},
                    {"op_type": 2, "inputs": [1], "outputs": [2], "spatial": {"kernel_h": 3, "kernel_w": 3}},
                    {"op_type": 9, "inputs": [3], "outputs": [4]},
                    {"op_type": 24, "inputs": [5], "outputs": [6], "spatial": {"kernel_h": 3, "kernel_w": 3}},
                    {"op_type": 10, "inputs": [4], "outputs": [4]}]}
    assert kw.plan_macs(plan) == [25 * 5 * 64 * 40, 25 * 5 * 64 * 9, 12 * 64, 8 * 8 * 4 * 9 * 6, 0]


def test_rows_per_op_type_and_the_mac_check():
    ops = [{"op": 0, "type": "Conv", "ticks": 100, "macs": 1000}, {"op": 1, "type": "Softmax", "ticks": 20, "macs": 0},
           {"op": 2, "type": "Conv", "ticks": 60, "macs": 500}]
    rows = kw.by_op_type(ops)
    assert [(r.op_type, r.count, r.macs) for r in rows] == [("Conv", 2, 1500), ("Softmax", 1, 0)]
    assert rows[0].instructions == 160 * kw.INSTRUCTIONS_PER_TICK
    assert rows[0].per_mac == pytest.approx(160 * 31.25 / 1500) and rows[1].per_mac is None
    assert rows[0].share == pytest.approx(160 / 180)
    assert kw.check_macs(ops, [1000, 0, 500]) == []
    assert kw.check_macs(ops, [1000, 0, 400]) == ["op 2 (Conv): firmware 500, plan 400"]
    assert kw.check_macs(ops, [1000]) == ["3 PROFILE op rows for 1 ops"]
