"""bench/kernel_work.py's pure parts: MACs from a plan, layer kinds, rows per op type and layer
kind, the per-board clock, the MAC cross-check, and the table with its CMSIS-NN and target
columns. No QEMU: measurements are written out here."""

from __future__ import annotations

import pytest

from bench import kernel_work as kw


def _tensor(*shape: int) -> dict:
    return {"shape": list(shape)}


def _spatial(kh: int, kw_: int, stride: int = 1, **extra: int) -> dict:
    return {"kernel_h": kh, "kernel_w": kw_, "stride_h": stride, "stride_w": stride, "dilation_h": 1,
            "dilation_w": 1, "group": 1} | extra


def test_plan_macs_per_op_kind():
    plan = {"tensors": [_tensor(1, 49, 10, 1), _tensor(1, 25, 5, 64), _tensor(1, 25, 5, 64), _tensor(1, 64),
                        _tensor(1, 12), _tensor(1, 8, 8, 4), _tensor(1, 16, 16, 6)],
            "ops": [{"op_type": 1, "inputs": [0], "outputs": [1], "spatial": {"kernel_h": 10, "kernel_w": 4}},
                    {"op_type": 2, "inputs": [1], "outputs": [2], "spatial": {"kernel_h": 3, "kernel_w": 3}},
                    {"op_type": 9, "inputs": [3], "outputs": [4]},
                    {"op_type": 24, "inputs": [5], "outputs": [6], "spatial": {"kernel_h": 3, "kernel_w": 3}},
                    {"op_type": 10, "inputs": [4], "outputs": [4]}]}
    assert kw.plan_macs(plan) == [25 * 5 * 64 * 40, 25 * 5 * 64 * 9, 12 * 64, 8 * 8 * 4 * 9 * 6, 0]


def test_layer_kinds_split_convolutions_by_kernel_stride_dilation_and_groups():
    assert kw.layer_kind("Conv", {"op_type": 1, "spatial": _spatial(10, 4, 2)}) == "Conv 10x4 s2"
    assert kw.layer_kind("Conv", {"op_type": 1, "spatial": _spatial(1, 1)}) == "Conv 1x1"  # pointwise
    assert kw.layer_kind("Conv", {"op_type": 1, "spatial": _spatial(1, 1, 2)}) == "Conv 1x1 s2"
    assert kw.layer_kind("DepthwiseConv", {"op_type": 2, "spatial": _spatial(3, 3, group=64)}) == "DepthwiseConv 3x3"
    assert kw.layer_kind("Conv", {"op_type": 1, "spatial": _spatial(3, 3, stride_w=1, stride_h=2)}) == "Conv 3x3 s2x1"
    assert kw.layer_kind("Conv", {"op_type": 1, "spatial": _spatial(3, 3, dilation_h=2, dilation_w=2)}) == "Conv 3x3 d2"
    assert kw.layer_kind("Conv", {"op_type": 1, "spatial": _spatial(3, 3, group=4)}) == "Conv 3x3 g4"
    assert kw.layer_kind("ConvTranspose", {"op_type": 24, "spatial": _spatial(2, 2, 2)}) == "ConvTranspose 2x2 s2"
    assert kw.layer_kind("Gemm", {"op_type": 9, "spatial": _spatial(0, 0)}) is None
    assert kw.layer_kind("MaxPool", {"op_type": 13, "spatial": _spatial(2, 2, 2)}) is None


def test_rows_per_op_type_and_layer_kind():
    plan_ops = [{"op_type": 1, "spatial": _spatial(10, 4, 2)}, {"op_type": 2, "spatial": _spatial(3, 3, group=8)},
                {"op_type": 1, "spatial": _spatial(1, 1)}, {"op_type": 10}, {"op_type": 1, "spatial": _spatial(1, 1)}]
    ops = [{"op": 0, "type": "Conv", "ticks": 100, "macs": 1000}, {"op": 1, "type": "DepthwiseConv", "ticks": 90, "macs": 300},
           {"op": 2, "type": "Conv", "ticks": 60, "macs": 500}, {"op": 3, "type": "Softmax", "ticks": 20, "macs": 0},
           {"op": 4, "type": "Conv", "ticks": 30, "macs": 500}]
    rows = kw.by_layer(ops, plan_ops, 40.0)  # mps2-an386: 25 MHz, 40 instructions a tick
    assert [(r.layer, r.parent, r.count, r.macs) for r in rows] == [
        ("Conv", None, 3, 2000), ("Conv 10x4 s2", "Conv", 1, 1000), ("Conv 1x1", "Conv", 2, 1000),  # equal MACs: more work first
        ("DepthwiseConv", None, 1, 300), ("DepthwiseConv 3x3", "DepthwiseConv", 1, 300), ("Softmax", None, 1, 0)]
    conv, first, pointwise = rows[:3]
    assert conv.instructions == 190 * 40.0 and conv.per_mac == pytest.approx(190 * 40 / 2000)
    assert pointwise.per_mac == pytest.approx(90 * 40 / 1000) and first.per_mac == pytest.approx(100 * 40 / 1000)
    assert rows[-1].per_mac is None
    # shares are of the op types' work: a layer kind is not counted twice
    assert conv.share == pytest.approx(190 / 300) and pointwise.share == pytest.approx(90 / 300)
    assert sum(r.share for r in rows if r.parent is None) == pytest.approx(1.0)


def test_the_mac_check():
    ops = [{"op": 0, "type": "Conv", "ticks": 100, "macs": 1000}, {"op": 1, "type": "Softmax", "ticks": 20, "macs": 0},
           {"op": 2, "type": "Conv", "ticks": 60, "macs": 500}]
    assert kw.check_macs(ops, [1000, 0, 500]) == []
    assert kw.check_macs(ops, [1000, 0, 400]) == ["op 2 (Conv): firmware 500, plan 400"]
    assert kw.check_macs(ops, [1000]) == ["3 PROFILE op rows for 1 ops"]


def test_instructions_per_tick_follow_each_boards_clock():
    assert kw.instructions_per_tick("32MHz-virtual") == 31.25
    assert kw.instructions_per_tick("25MHz-virtual") == 40.0
    assert kw.instructions_per_tick("20MHz-virtual") == 50.0
    assert kw.instructions_per_tick("25MHz-virtual", 1) == 20.0  # -icount shift=1: 2 ns an instruction
    per_build = {b: kw.instructions_per_tick(kw.BOARDS[build.board].work_clock) for b, build in kw.BUILDS.items()}
    assert per_build == {"dsp": 31.25, "mve": 31.25, "m4": 40.0, "m7": 40.0, "m33": 50.0}


def test_the_clock_comes_from_the_work_line_and_must_be_the_boards():
    run = {"work": {"systick_ticks": 1000, "clock": "25MHz-virtual", "icount_shift": 0}}
    assert kw.work_clock(run, "mps2-an386") == ("25MHz-virtual", [])
    # no clock named (a firmware older than boards): the board's, never one constant for all
    assert kw.work_clock({"work": {"icount_shift": 0}}, "mps2-an505") == ("20MHz-virtual", [])
    clock, problems = kw.work_clock(run, "mps3-an547")
    assert clock == "25MHz-virtual" and problems == [
        "the firmware's WORK line names clock 25MHz-virtual, mps3-an547 runs SysTick at 32MHz-virtual"]
    assert kw.work_clock({"work": {"clock": "32MHz-virtual", "icount_shift": None}}, "mps3-an547")[1] == [
        "run without -icount: its work figure follows host time"]


def test_builds_select_boards_and_options():
    assert {b: (x.board, x.options) for b, x in kw.BUILDS.items()} == {
        "dsp": ("mps3-an547", ()), "mve": ("mps3-an547", ("mve=1",)), "m4": ("mps2-an386", ("board=mps2-an386",)),
        "m7": ("mps2-an500", ("board=mps2-an500",)), "m33": ("mps2-an505", ("board=mps2-an505",))}


def test_references_and_targets_from_issue_23():
    assert kw.reference("ds_cnn", "Conv 1x1", "dsp") == 2.07
    assert kw.reference("ds_cnn", "Conv 10x4 s2", "mve") == 0.90
    assert kw.reference("ds_cnn", "DepthwiseConv 3x3", "m4") == 7.79
    assert kw.reference("mobilenetv2_035", kw.WHOLE, "mve") == 1.10
    assert kw.reference("ds_cnn", "Conv 1x1", "m7") is None  # the issue measured no M7, M33
    assert kw.reference("mobilenetv2_035", "Conv 1x1", "dsp") is None
    assert kw.target("ds_cnn", kw.WHOLE, "mve") == 0.6 and kw.target("mobilenetv2_035", kw.WHOLE, "m4") == 3.7
    assert kw.target("ds_cnn", "DepthwiseConv 3x3", "dsp") == 7.41  # no DS-CNN layer above CMSIS-NN
    assert kw.target("mobilenetv2_035", "Conv 1x1", "dsp") is None
    assert kw.target("ds_cnn", kw.WHOLE, "m33") is None


def _measurement(instructions: float, macs: int, layers: list[kw.LayerWork] | None) -> dict:
    return {"instructions": instructions, "macs": macs, "ops": 3,
            "layers": None if layers is None else [vars(r) | {"per_mac": r.per_mac} for r in layers]}


def test_model_rows_put_ours_before_after_cmsis_and_target_side_by_side():
    layers = [kw.LayerWork("Conv", None, 2, 1000, 2800.0, 0.8), kw.LayerWork("Conv 1x1", "Conv", 2, 1000, 2800.0, 0.8),
              kw.LayerWork("Softmax", None, 1, 0, 700.0, 0.2)]
    after = {"dsp": _measurement(2400.0, 1000, layers), "m33": _measurement(5000.0, 1000, layers)}
    before = {"dsp": _measurement(16000.0, 1000, None), "m33": _measurement(17000.0, 1000, None)}
    rows = kw.model_rows("ds_cnn", after, before, ["dsp", "m33"])
    assert rows[0] == ["layer", "ops", "MACs", "build", "share %", "before", "after", "CMSIS-NN", "ours/CMSIS", "target", "met"]
    assert rows[1] == [kw.WHOLE, "3", "1,000", "dsp", "100.0", "16.00", "2.40", "2.83", "0.85x", "<= 2.50", "yes"]
    assert rows[2] == ["", "", "", "m33", "100.0", "17.00", "5.00", "-", "-", "", ""]
    assert rows[3] == ["Conv", "2", "1,000", "dsp", "80.0", "-", "2.80", "-", "-", "", ""]
    assert rows[5] == ["  Conv 1x1", "2", "1,000", "dsp", "80.0", "-", "2.80", "2.07", "1.35x", "<= 2.07", "no"]
    assert rows[7] == ["Softmax", "1", "-", "dsp", "20.0", "-", "-", "-", "-", "", ""]
    assert len(rows) == 1 + 4 * 2
    alone = kw.model_rows("ds_cnn", after, None, ["dsp"])
    assert alone[0][5] == "ours" and alone[1][5:] == ["2.40", "2.83", "0.85x", "<= 2.50", "yes"]
    text = kw.format_rows(alone)
    assert text.splitlines()[2].startswith("Conv ") and "  Conv 1x1" in text


def test_unknown_build_is_refused_before_anything_runs(capsys):
    with pytest.raises(SystemExit) as exc:
        kw.main(["--builds", "dsp,m9", "--models", "ds_cnn"])
    assert exc.value.code == 2 and "unknown m9" in capsys.readouterr().err


def test_the_machine_a_run_ran_tells_a_checkout_that_ignored_board():
    assert kw.run_machine({"command": ["qemu-system-arm", "-M", "mps2-an505", "-cpu", "cortex-m33"]}) == "mps2-an505"
    assert kw.run_machine({"command": ["qemu-system-arm", "-M"]}) is None
    assert kw.run_machine({}) is None
