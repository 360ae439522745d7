"""The kernels' fast paths (convolution, fully connected, Add/Sub) against the reference host
runtime, byte for byte.

The convolution family's kernel variants (runtime/src/kernels/README.md: one a file, chosen per
layer by ops_conv.c's dispatchers) take packed 16-bit pairs (simd32.h: SMLAD on the DSP extension,
the same arithmetic in portable C on the host) over two or four output channels, whole in-bounds
kernel rows as one run (conv_general.c), a 1x1 variant (two pixels by two output channels a pass,
the zero point folded into the bias: conv_pointwise.c), four depthwise channels per pass (a
straight-line 3x3 when the window is inside: depthwise.c; 3x3 layers: depthwise_3x3.c,
depthwise_3x3_mve.c, windows cut by padding on every side included), and the plain loops for what they do
not cover (conv_plain.c). Each geometry here is chosen to land on one of
those paths or on an edge of it: channel counts that are not multiples of 2, 4 or 16, odd
output-channel counts (the pair path computes the last channel twice), padding on every side
and on one side, strides 1 and 2, dilation, a first layer with one input channel, input zero
points at both extremes of int8, and budgets where the compiler gives the op stripes, chains or
2-D tiles (the kernels then see windows with offsets into larger buffers).

Add and Sub take four elements per step in the Helium build (contiguous first operand; second
operand contiguous or one broadcast value), element counts not a multiple of 4 leave a tail.

The host library runs the portable forms of the same code; tests/build/test_build_fast_kernels.py
runs these models on QEMU in the DSP (default) and Helium (mve=1) builds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from tests.ops.models_data import assert_same_as_reference, const, graph, node, plan_for, reference_paths

pytest.importorskip("tigris.runtime")

RNG = np.random.default_rng(2026)


def _weights(name: str, shape: tuple[int, ...]) -> list[onnx.TensorProto]:
    return [const(f"{name}_w", (RNG.standard_normal(shape) * 0.3).astype(np.float32), np.float32),
            const(f"{name}_b", (RNG.standard_normal(shape[0]) * 0.2).astype(np.float32), np.float32)]


def conv_model(cin: int, cout: int, hw: tuple[int, int], kernel: tuple[int, int], *, group: int = 1,
               **attrs) -> onnx.ModelProto:
    """One Conv (group = cin for a depthwise one) on an input of cin x hw."""
    shape = (cout, cin // group, *kernel)
    return graph([node("Conv", ["x", "c_w", "c_b"], ["y"], group=group, kernel_shape=list(kernel), **attrs)],
                 {"x": [1, cin, *hw]}, _weights("c", shape))


def binary_model(op: str, shape: tuple[int, ...], second: tuple[int, ...] | None) -> onnx.ModelProto:
    """Conv -> Add/Sub with a second convolution of the input (None) or a constant of shape `second`."""
    consts = _weights("c", (shape[1], shape[1], 1, 1))
    if second is None:
        return graph([node("Conv", ["x", "c_w", "c_b"], ["c"], kernel_shape=[1, 1]),
                      node("Conv", ["x", "d_w", "d_b"], ["d"], kernel_shape=[1, 1]), node(op, ["c", "d"], ["y"])],
                     {"x": list(shape)}, consts + _weights("d", (shape[1], shape[1], 1, 1)))
    consts.append(const("k", (RNG.standard_normal(second) * 0.5).astype(np.float32), np.float32))
    return graph([node("Conv", ["x", "c_w", "c_b"], ["c"], kernel_shape=[1, 1]), node(op, ["c", "k"], ["y"])],
                 {"x": list(shape)}, consts)


def gemm_model(rows: int, fin: int, fout: int) -> onnx.ModelProto:
    return graph([node("Gemm", ["x", "g_w", "g_b"], ["y"], transB=1)], {"x": [rows, fin]}, _weights("g", (fout, fin)))


#: name -> (model, what it covers)
CASES = {
    # pointwise (conv_pointwise.c, conv_pointwise_mve.c): few input channels (expansion layers;
    # Helium: up to 16 inputs one predicated vector a pixel), and beside them
    "pw_narrow_8_to_24": (lambda: conv_model(8, 24, (9, 7), (1, 1)), "8 inputs: one 8-input step, 63 pixels"),
    "pw_narrow_4_to_5": (lambda: conv_model(4, 5, (6, 6), (1, 1)), "4 inputs: one 4-input step, odd channels"),
    "pw_narrow_12_to_3": (lambda: conv_model(12, 3, (5, 9), (1, 1)), "12 = 8 + 4 inputs, 3 channels"),
    "pw_narrow_16_to_17": (lambda: conv_model(16, 17, (4, 4), (1, 1)), "16 inputs: a whole Helium vector"),
    "pw_wide_20_to_7": (lambda: conv_model(20, 7, (5, 5), (1, 1)), "20 = 16 + 4 inputs; 7 = three pairs and the odd last channel"),
    "pw_wide_66_to_9": (lambda: conv_model(66, 9, (3, 3), (1, 1)), "66 > 64: filters widened step by step; a tail of 2"),
    "pw_6_to_4": (lambda: conv_model(6, 4, (5, 5), (1, 1)), "6 inputs: a step and a tail of 2"),
    "pw_stride2": (lambda: conv_model(8, 8, (7, 7), (1, 1), strides=[2, 2]), "1x1 with stride 2: the general variant"),
    # pointwise: more inputs
    "pw_64_to_64_ds_cnn": (lambda: conv_model(64, 64, (25, 5), (1, 1)),
                           "DS-CNN's 1x1: whole blocks, 125 pixels (an odd last one), 64 = 8 x 8 inputs"),
    "pw_28_to_1": (lambda: conv_model(28, 1, (3, 5), (1, 1)), "one output channel: the odd-channel pass; 28 = 24 + 4"),
    "pw_3_to_6": (lambda: conv_model(3, 6, (5, 3), (1, 1)), "3 inputs: no whole word, the byte tail only"),
    "pw_40_to_18": (lambda: conv_model(40, 18, (4, 4), (1, 1)), "16 pixels, 18 = 4 x 4 + 2 channels, 40 = 32 + 8"),
    # general convolution
    "k3_same": (lambda: conv_model(5, 6, (8, 8), (3, 3), pads=[1, 1, 1, 1]), "padding on every side"),
    "k3_one_sided_s2": (lambda: conv_model(3, 16, (9, 9), (3, 3), pads=[0, 0, 1, 1], strides=[2, 2]),
                        "MobileNet's first layer: 3 channels, stride 2, pad bottom/right"),
    "k10x4_first_layer": (lambda: conv_model(1, 8, (13, 10), (10, 4), pads=[4, 1, 5, 1], strides=[2, 2]),
                          "DS-CNN's first layer: one input channel, rows partly inside"),
    "k3_dilated": (lambda: conv_model(4, 5, (9, 9), (3, 3), pads=[2, 2, 2, 2], dilations=[2, 2]),
                   "dilation 2: tap by tap"),
    "k5x2_asym": (lambda: conv_model(7, 3, (8, 6), (5, 2), pads=[2, 0, 2, 1]), "non-square kernel, odd channels"),
    # the gather variants (conv_gather.c, conv_gather_mve.c): padded windows of at most 128 inputs
    "k10x4_ds_cnn": (lambda: conv_model(1, 64, (49, 10), (10, 4), pads=[4, 1, 5, 1], strides=[2, 2]),
                     "DS-CNN's first layer whole: 125 pixels (an odd last one), 64 channels"),
    "k3_s2_all_pads_c3": (lambda: conv_model(3, 5, (9, 9), (3, 3), pads=[1, 1, 1, 1], strides=[2, 2]),
                          "27 inputs (a tail of 3), pads on every side, 25 pixels, 5 channels (odd)"),
    "k3_gather_c14_s1": (lambda: conv_model(14, 7, (5, 7), (3, 3), pads=[1, 2, 1, 0]),
                         "126 inputs (a tail of 2), the largest gathered window here, uneven pads"),
    "k2x3_gather_one_channel": (lambda: conv_model(6, 1, (4, 5), (2, 3), pads=[0, 1, 1, 1], strides=[1, 2]),
                                "one output channel (computed twice), 36 inputs, mixed strides"),
    "k3_c15_past_gather": (lambda: conv_model(15, 6, (6, 6), (3, 3), pads=[1, 1, 1, 1]),
                           "135 inputs: one past the gather buffers, the patch/general variants"),
    "k3_same_c32": (lambda: conv_model(32, 6, (6, 5), (3, 3), pads=[1, 1, 1, 1]),
                    "a padded window of 288 B, past the Helium patch: the general variant (conv_padded_wide)"),
    # depthwise
    "dw3_s1_c16": (lambda: conv_model(16, 16, (7, 7), (3, 3), group=16, pads=[1, 1, 1, 1]),
                   "3x3 inside (straight line) and on every border"),
    "dw3_s2_c13": (lambda: conv_model(13, 13, (9, 9), (3, 3), group=13, pads=[1, 1, 1, 1], strides=[2, 2]),
                   "stride 2, 13 = 3 groups of 4 and one channel"),
    "dw3_s2_c6_one_sided": (lambda: conv_model(6, 6, (8, 8), (3, 3), group=6, pads=[0, 0, 1, 1], strides=[2, 2]),
                            "stride 2 padded bottom/right"),
    "dw3_ds_cnn_c64": (lambda: conv_model(64, 64, (25, 5), (3, 3), group=64, pads=[1, 1, 1, 1]),
                       "DS-CNN's depthwise layer: 64 channels, 25x5, 56 of 125 windows cut"),
    "dw3_s1_c7_odd": (lambda: conv_model(7, 7, (5, 3), (3, 3), group=7, pads=[1, 1, 1, 1]),
                      "7 = one group of 4 and three channels, odd extents"),
    "dw3_pads_top_left": (lambda: conv_model(12, 12, (6, 5), (3, 3), group=12, pads=[2, 1, 0, 0]),
                          "padding top (two rows) and left only"),
    "dw3_pads_bottom_right": (lambda: conv_model(8, 8, (5, 6), (3, 3), group=8, pads=[0, 0, 2, 1]),
                              "padding bottom (two rows) and right only"),
    "dw3_narrow_2x1": (lambda: conv_model(20, 20, (2, 1), (3, 3), group=20, pads=[1, 1, 1, 1]),
                       "every window cut on both sides: one input column, two rows"),
    "dw3_s2_c24_even": (lambda: conv_model(24, 24, (8, 7), (3, 3), group=24, pads=[1, 1, 1, 1], strides=[2, 2]),
                        "stride 2 on an even height, odd width"),
    "dw3_unpadded_c4": (lambda: conv_model(4, 4, (4, 6), (3, 3), group=4), "no padding: every window inside"),
    "dw5_dilated_c8": (lambda: conv_model(8, 8, (10, 10), (5, 5), group=8, pads=[4, 4, 4, 4], dilations=[2, 2]),
                       "5x5 dilated: the tap loops"),
    "dw3_multiplier2": (lambda: conv_model(4, 8, (6, 6), (3, 3), group=4, pads=[1, 1, 1, 1]),
                        "channel multiplier 2: the plain loops"),
    # fully connected
    "gemm_33_to_5": (lambda: gemm_model(1, 33, 5), "pair path, odd outputs, a tail of 1"),
    "gemm_rows_16_to_12": (lambda: gemm_model(3, 16, 12), "several rows"),
    # Add / Sub
    "add_same_shape_105": (lambda: binary_model("Add", (1, 3, 5, 7), None), "contiguous operands, a tail of 1"),
    "sub_scalar": (lambda: binary_model("Sub", (1, 4, 3, 5), (1,)), "broadcast second operand"),
}

#: input zero points at the ends of int8 (scale chosen so the data still spans the range)
ZERO_POINTS = {"zp_low": (0.02, -128), "zp_high": (0.02, 127)}


@pytest.mark.parametrize("name", list(CASES))
def test_fast_path_whole(name: str, work: Path, lib: Path) -> None:
    make, _ = CASES[name]
    plan = plan_for(work, f"fast_{name}", make(), budget="256K")
    assert_same_as_reference(plan, lib)


@pytest.mark.parametrize("zp", list(ZERO_POINTS))
@pytest.mark.parametrize("name", ["pw_narrow_8_to_24", "pw_wide_66_to_9", "pw_64_to_64_ds_cnn", "pw_3_to_6", "k3_same",
                                  "dw3_s2_c13", "dw3_s1_c7_odd", "dw3_pads_top_left", "gemm_33_to_5",
                                  "k10x4_first_layer", "k3_s2_all_pads_c3", "k3_gather_c14_s1"])
def test_fast_path_extreme_zero_points(name: str, zp: str, work: Path, lib: Path) -> None:
    make, _ = CASES[name]
    plan = plan_for(work, f"fast_{name}_{zp}", make(), {"x": ZERO_POINTS[zp]}, budget="256K")
    assert_same_as_reference(plan, lib)


def narrow_clamp_plan(work: Path, name: str) -> Path:
    """Case ``name`` compiled, then its first op's clamp narrowed to [-20, 30] in the plan (the
    compiler fuses only clamps that are the int8 range, Relu and Relu6 into their own output
    quantization; a plan may hold any clamp inside int8, and both runtimes apply it)."""
    from tests.runtime.plantools import PlanView

    plan = plan_for(work, f"fast_{name}", CASES[name][0](), budget="256K")
    view = PlanView(plan)
    narrow = PlanView(view.set_op(0, "act_min", -20)).set_op(0, "act_max", 30)
    out = plan.with_name(f"fast_{name}_clamp.tgrs")
    out.write_bytes(narrow)
    return out


@pytest.mark.parametrize("name", ["dw3_s2_c13", "dw3_s1_c7_odd"])
def test_fast_path_clamp_narrower_than_int8(name: str, work: Path, lib: Path) -> None:
    assert_same_as_reference(narrow_clamp_plan(work, name), lib)


def _chain(stride: int) -> onnx.ModelProto:
    """An inverted residual block: expansion 1x1 (8 inputs), depthwise 3x3, projection 1x1."""
    return graph([node("Conv", ["x", "e_w", "e_b"], ["e"], kernel_shape=[1, 1]),
                  node("Relu", ["e"], ["er"]),
                  node("Conv", ["er", "d_w", "d_b"], ["d"], kernel_shape=[3, 3], group=24, pads=[1, 1, 1, 1],
                       strides=[stride, stride]),
                  node("Relu", ["d"], ["dr"]),
                  node("Conv", ["dr", "p_w", "p_b"], ["y"], kernel_shape=[1, 1])],
                 {"x": [1, 8, 24, 24]},
                 [*_weights("e", (24, 8, 1, 1)), *_weights("d", (24, 1, 3, 3)), *_weights("p", (12, 24, 1, 1))])


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("budget", ["6K", "2K"])
def test_fast_paths_in_tiles(stride: int, budget: str, work: Path, lib: Path) -> None:
    """The block at budgets where the compiler stripes and chains it: the kernels get windows
    whose input buffers hold more rows than they read (negative padding)."""
    plan = plan_for(work, f"fast_block_s{stride}_{budget}", _chain(stride), budget=budget)
    assert reference_paths(plan) - {"normal"}, f"stride {stride} at {budget} runs untiled; the case tests nothing"
    assert_same_as_reference(plan, lib)


@pytest.mark.parametrize("budget", ["4K", "2K"])
def test_pointwise_in_2d_tiles(budget: str, work: Path, lib: Path) -> None:
    """A 1x1 layer whose rows do not fit the budget: 2-D tiles of odd widths (97 columns), each a call
    of the pointwise variant with its own extents."""
    plan = plan_for(work, f"fast_pw_2d_{budget}", pointwise_2d_model(), budget=budget)
    assert "tiled_2d" in reference_paths(plan)
    assert_same_as_reference(plan, lib)


def pointwise_2d_model() -> onnx.ModelProto:
    return conv_model(32, 33, (3, 97), (1, 1))


def _first_layer(cin: int, hw: tuple[int, int], kernel: tuple[int, int], pads: list[int]) -> onnx.ModelProto:
    """A first layer (stride 2, padded: the gather variants) and a ReLU."""
    return graph([node("Conv", ["x", "c_w", "c_b"], ["c"], kernel_shape=list(kernel), pads=pads, strides=[2, 2]),
                  node("Relu", ["c"], ["y"])],
                 {"x": [1, cin, *hw]}, _weights("c", (16, cin, *kernel)))


@pytest.mark.parametrize("case", ["k10x4", "k3_c3"])
@pytest.mark.parametrize("budget", ["3K", "1500"])
def test_gather_in_tiles(case: str, budget: str, work: Path, lib: Path) -> None:
    """The gather variants on tiles and bands: windows with offsets into larger buffers, pads on
    some calls' edges only."""
    model = (_first_layer(1, (49, 10), (10, 4), [4, 1, 5, 1]) if case == "k10x4"
             else _first_layer(3, (40, 40), (3, 3), [0, 0, 1, 1]))
    plan = plan_for(work, f"gather_{case}_{budget}", model, budget=budget)
    assert reference_paths(plan) - {"normal"}, f"{case} at {budget} runs untiled; the case tests nothing"
    assert_same_as_reference(plan, lib)
