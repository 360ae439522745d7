"""The op-model cases: small int8 QDQ ONNX models, one plan operator each (or two where needed).

Each :class:`OpCase` knows how to build its fp32 graph, how to quantize it (``"ort"``: the
recipe of docs/models.md#the-recipe through :func:`models.qdq.quantize_qdq`; ``"manual"``: the
hand-built QDQ of :mod:`.qdq_manual`, for ops ORT will not quantize standalone or for
quantization the recipe never produces), and which plan opcodes / op fields the compiled plan
must show.
See README.md in this directory for the table of observed plan contents.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from models.qdq import quantize_qdq, save_model, strip_boundary_qdq

from . import networks
from .qdq_manual import quantize_manual, set_qparams

OP = {  # plan opcodes (docs/plan-format.md#operator-codes-and-contracts) used below
    "Conv": 1, "DepthwiseConv": 2, "Relu": 3, "Relu6": 4, "MaxPool": 5, "AveragePool": 6,
    "Add": 7, "Gemm": 9, "Softmax": 10, "GlobalAveragePool": 15, "Flatten": 16, "Reshape": 17, "Transpose": 29,
}
OP_ATTR_POOL_ROUNDING = 8
NUM_CALIB_BATCHES = 4

PlanCheck = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class OpCase:
    """One single-op test model. ``build(out_dir)`` writes ``<out_dir>/<name>.onnx``."""

    name: str
    description: str
    make_fp32: Callable[[], onnx.ModelProto]
    expect_ops: tuple[int, ...]  # plan opcodes, in plan op order
    quantizer: Literal["ort", "manual"] = "ort"
    unquantized: tuple[str, ...] = ()
    overrides: Mapping[str, tuple[float, int]] = field(default_factory=dict)
    symmetric: bool = False
    float_interface: bool = False
    check: PlanCheck | None = None  # extra assertions on the read_binary_plan dict
    budget: str = "256K"
    #: a budget at which the case compiles to several stages that are all untiled (or None)
    multistage_budget: str | None = None
    #: budget -> the reference runtime's execution-path signature at that budget
    #: (``opmodels.path_signature``, e.g. ``"0:chain2-lb 2:normal 3:tiled 4:normal"``); set for
    #: the network cases, whose small budgets take the tiled paths (README, tests/paths)
    paths: Mapping[str, str] = field(default_factory=dict)

    def calibration(self, model: onnx.ModelProto) -> list[dict[str, np.ndarray]]:
        """Fixed-seed (crc32 of the case name) standard-normal batches for every graph input."""
        rng = np.random.default_rng(zlib.crc32(self.name.encode()))
        batches = []
        for _ in range(NUM_CALIB_BATCHES):
            batch = {}
            for vi in model.graph.input:
                dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
                batch[vi.name] = rng.standard_normal(dims).astype(np.float32)
            batches.append(batch)
        return batches

    def quantized(self) -> onnx.ModelProto:
        """The final QDQ model: quantized, overrides applied, boundary stripped unless float."""
        fp32 = self.make_fp32()
        calib = self.calibration(fp32)
        if self.quantizer == "ort":
            model = quantize_qdq(fp32, calib, activation_symmetric=self.symmetric)
            for tensor, (scale, zp) in self.overrides.items():
                set_qparams(model, tensor, scale, zp)
        else:
            model = quantize_manual(fp32, calib, unquantized=self.unquantized,
                                    overrides=self.overrides, symmetric=self.symmetric)
        if not self.float_interface:
            model, _, _ = strip_boundary_qdq(model)
        return model

    def build(self, out_dir: str | Path) -> Path:
        return save_model(self.quantized(), Path(out_dir) / f"{self.name}.onnx")


# --------------------------------------------------------------------------- fp32 graph helpers


def _model(nodes: list[onnx.NodeProto], in_shape: Sequence[int],
           inits: Sequence[onnx.TensorProto] = ()) -> onnx.ModelProto:
    """Single-input/single-output opset-13 IR-8 model; output shape from ONNX shape inference."""
    last = nodes[-1].output[0]
    g = helper.make_graph(nodes, "op", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(in_shape))],
                          [helper.make_tensor_value_info(last, TensorProto.FLOAT, None)], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="tigris-scons/tests/opmodels")
    m.ir_version = 8
    inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    vi = {v.name: v for v in inferred.graph.value_info}
    vi.update({o.name: o for o in inferred.graph.output})
    dims = [d.dim_value for d in vi[last].type.tensor_type.shape.dim]
    del m.graph.output[:]
    m.graph.output.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, dims))
    for n in m.graph.node:
        for i, o in enumerate(n.output):
            if o == last:
                n.output[i] = "y"
    onnx.checker.check_model(m, full_check=True)
    return m


def _rng(tag: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(("weights/" + tag).encode()))


def conv(tag: str, in_shape: Sequence[int], out_ch: int, kernel: tuple[int, int], *,
         strides: tuple[int, int] = (1, 1), pads: tuple[int, int, int, int] = (0, 0, 0, 0),
         dilations: tuple[int, int] = (1, 1), group: int = 1, bias: bool = True,
         act: str | None = None) -> Callable[[], onnx.ModelProto]:
    """Conv (optionally followed by Relu or Clip(0,6)); He-scaled seeded weights, bias ~ N(0, .1)."""

    def make() -> onnx.ModelProto:
        rng = _rng(tag)
        cin = in_shape[1] // group
        w = (rng.standard_normal((out_ch, cin, *kernel)) * np.sqrt(2.0 / (cin * kernel[0] * kernel[1])))
        inits = [numpy_helper.from_array(w.astype(np.float32), "w")]
        inputs = ["x", "w"]
        if bias:
            inits.append(numpy_helper.from_array(rng.normal(0, 0.1, out_ch).astype(np.float32), "b"))
            inputs.append("b")
        nodes = [helper.make_node("Conv", inputs, ["c"], kernel_shape=list(kernel), strides=list(strides),
                                  pads=list(pads), dilations=list(dilations), group=group)]
        if act == "relu":
            nodes.append(helper.make_node("Relu", ["c"], ["r"]))
        elif act == "relu6":
            inits += [numpy_helper.from_array(np.array(0, np.float32), "lo"),
                      numpy_helper.from_array(np.array(6, np.float32), "hi")]
            nodes.append(helper.make_node("Clip", ["c", "lo", "hi"], ["r"]))
        return _model(nodes, in_shape, inits)

    return make


def gemm(tag: str, in_features: int, out_features: int, *, bias: bool = True,
         spatial: tuple[int, int, int] | None = None) -> Callable[[], onnx.ModelProto]:
    """Gemm (transB=1) on a rank-2 input, or Flatten(C,H,W) -> Gemm when ``spatial`` is given."""

    def make() -> onnx.ModelProto:
        rng = _rng(tag)
        w = rng.standard_normal((out_features, in_features)) / np.sqrt(in_features)
        inits = [numpy_helper.from_array(w.astype(np.float32), "w")]
        inputs = ["f" if spatial else "x", "w"]
        if bias:
            inits.append(numpy_helper.from_array(rng.normal(0, 0.1, out_features).astype(np.float32), "b"))
            inputs.append("b")
        nodes = [helper.make_node("Gemm", inputs, ["g"], transB=1)]
        if spatial:
            nodes.insert(0, helper.make_node("Flatten", ["x"], ["f"], axis=1))
            return _model(nodes, [1, *spatial], inits)
        return _model(nodes, [1, in_features], inits)

    return make


def unary(op_type: str, in_shape: Sequence[int], **attrs: Any) -> Callable[[], onnx.ModelProto]:
    """A single attribute-only op (pools, Relu, Softmax, Flatten)."""

    def make() -> onnx.ModelProto:
        return _model([helper.make_node(op_type, ["x"], ["o"], **attrs)], in_shape)

    return make


def clip06(in_shape: Sequence[int]) -> Callable[[], onnx.ModelProto]:
    def make() -> onnx.ModelProto:
        inits = [numpy_helper.from_array(np.array(0, np.float32), "lo"),
                 numpy_helper.from_array(np.array(6, np.float32), "hi")]
        return _model([helper.make_node("Clip", ["x", "lo", "hi"], ["o"])], in_shape, inits)

    return make


def reshape(in_shape: Sequence[int], out_shape: Sequence[int]) -> Callable[[], onnx.ModelProto]:
    def make() -> onnx.ModelProto:
        inits = [numpy_helper.from_array(np.array(out_shape, np.int64), "shape")]
        return _model([helper.make_node("Reshape", ["x", "shape"], ["o"])], in_shape, inits)

    return make


def inverted_residual(tag: str, c: int, hw: int, expand: int,
                      blocks: int = 1) -> Callable[[], onnx.ModelProto]:
    """MobileNetV2 block: Conv1x1 c->c*expand + ReLU6, DW3x3 + ReLU6, Conv1x1 -> c, Add(x).

    The skip tensor x stays live across the two wide tensors, so the single-stage live set
    (x + expanded + depthwise output) is larger than any one op's input + output: at a budget in
    between, the compiler splits the block into several stages that are each untiled.
    """

    def make() -> onnx.ModelProto:
        rng = _rng(tag)
        ce = c * expand
        inits = [numpy_helper.from_array(np.array(0, np.float32), "lo"),
                 numpy_helper.from_array(np.array(6, np.float32), "hi")]
        nodes = []
        skip = prev = "x"
        for blk in range(blocks):
            for j, (cin, cout, k, group, act) in enumerate(
                    [(c, ce, 1, 1, True), (ce, ce, 3, ce, True), (ce, c, 1, 1, False)]):
                i = f"{blk}_{j}" if blocks > 1 else f"{j}"
                fan = (cin // group) * k * k
                w = rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(2.0 / fan)
                inits += [numpy_helper.from_array(w.astype(np.float32), f"w{i}"),
                          numpy_helper.from_array(rng.normal(0, 0.1, cout).astype(np.float32), f"b{i}")]
                p = k // 2
                nodes.append(helper.make_node("Conv", [prev, f"w{i}", f"b{i}"], [f"c{i}"],
                                              kernel_shape=[k, k], pads=[p, p, p, p], group=group))
                prev = f"c{i}"
                if act:
                    nodes.append(helper.make_node("Clip", [prev, "lo", "hi"], [f"r{i}"]))
                    prev = f"r{i}"
            out = "o" if blk == blocks - 1 else f"add{blk}"
            nodes.append(helper.make_node("Add", [skip, prev], [out]))
            skip = prev = out
        return _model(nodes, [1, c, hw, hw], inits)

    return make


# --------------------------------------------------------------------------- plan checks


def _op(plan: dict[str, Any], opcode: int) -> dict[str, Any]:
    return next(o for o in plan["ops"] if o["op_type"] == opcode)


def _qp(plan: dict[str, Any], tensor: int) -> dict[str, Any]:
    return plan["quant_params"][plan["tensors"][tensor]["quant_param_idx"]]


def spatial(opcode: int, **expected: int) -> PlanCheck:
    """Assert op spatial fields (kernel_h, stride_w, pad_top, dilation_h, group, …)."""

    def check(plan: dict[str, Any]) -> None:
        sp = _op(plan, opcode)["spatial"]
        got = {k: sp[k] for k in expected}
        assert got == expected, f"spatial fields {got} != {expected}"

    return check


def fields(opcode: int, **expected: Any) -> PlanCheck:
    """Assert top-level op fields (fused_act, act_min, act_max, bias_idx, …); 'bias' = has bias."""

    def check(plan: dict[str, Any]) -> None:
        op = _op(plan, opcode)
        got = {}
        for k in expected:
            got[k] = (op["bias_idx"] != 0xFFFF) if k == "bias" else op[k]
        assert got == expected, f"op fields {got} != {expected}"

    return check


def output_quant(scale: float, zero_point: int) -> PlanCheck:
    """Assert the (float32) scale and zero point of the model output tensor's quant entry."""

    def check(plan: dict[str, Any]) -> None:
        q = _qp(plan, plan["model_outputs"][0])
        assert (np.float32(q["scale"]), q["zero_point"]) == (np.float32(scale), zero_point), q

    return check


def same_io_quant(opcode: int, same: bool) -> PlanCheck:
    def check(plan: dict[str, Any]) -> None:
        op = _op(plan, opcode)
        qi, qo = _qp(plan, op["inputs"][0]), _qp(plan, op["outputs"][0])
        eq = (qi["scale"], qi["zero_point"]) == (qo["scale"], qo["zero_point"])
        assert eq == same, f"in {qi['scale']},{qi['zero_point']} out {qo['scale']},{qo['zero_point']}"

    return check


def has_attr(opcode: int, attr_type: int, present: bool = True) -> PlanCheck:
    def check(plan: dict[str, Any]) -> None:
        idx = plan["ops"].index(_op(plan, opcode))
        found = any(a["op_index"] == idx and a["type"] == attr_type for a in plan["op_attributes"])
        assert found == present, f"attribute {attr_type} on op {idx}: {found}"

    return check


def iface(dtype_float: bool) -> PlanCheck:
    """Model input/output interface dtype: float32 (iface_dtype 1) or the stored int8 (0)."""

    def check(plan: dict[str, Any]) -> None:
        for t in plan["model_inputs"] + plan["model_outputs"]:
            assert (plan["tensors"][t]["iface_dtype"] == 1) == dtype_float, plan["tensors"][t]

    return check


def all_of(*checks: PlanCheck) -> PlanCheck:
    def check(plan: dict[str, Any]) -> None:
        for c in checks:
            c(plan)

    return check


# --------------------------------------------------------------------------- the cases

#: exactly 0x3B800000 in float32: selects the integer softmax (docs/execution.md#softmax)
S256 = 1.0 / 256.0


def _cases() -> list[OpCase]:
    c, d = OP["Conv"], OP["DepthwiseConv"]
    return [
        # ---- Conv (ORT recipe: per-channel symmetric weights, asymmetric activations)
        OpCase("conv1x1_c8", "Conv 1x1 8->16 on 7x7, stride 1, no pad, bias",
               conv("conv1x1_c8", [1, 8, 7, 7], 16, (1, 1)), (c,),
               check=all_of(spatial(c, kernel_h=1, kernel_w=1, stride_h=1, pad_top=0),
                            fields(c, bias=True, fused_act=0, act_min=-128, act_max=127))),
        OpCase("conv3x3_c3_p1", "Conv 3x3 3->8 on 9x11, stride 1, symmetric pad 1, bias",
               conv("conv3x3_c3_p1", [1, 3, 9, 11], 8, (3, 3), pads=(1, 1, 1, 1)), (c,),
               check=spatial(c, kernel_h=3, kernel_w=3, pad_top=1, pad_bottom=1, pad_left=1, pad_right=1)),
        OpCase("conv3x3_s2_nobias", "Conv 3x3 8->8 on 15x15, stride 2, pad 1, no bias",
               conv("conv3x3_s2_nobias", [1, 8, 15, 15], 8, (3, 3), strides=(2, 2), pads=(1, 1, 1, 1),
                    bias=False), (c,),
               check=all_of(spatial(c, stride_h=2, stride_w=2), fields(c, bias=False))),
        OpCase("conv5x3_s21_asym", "Conv 5x3 1->8 on 13x9, stride (2,1), asymmetric pads (t2,l1,b1,r0)",
               conv("conv5x3_s21_asym", [1, 1, 13, 9], 8, (5, 3), strides=(2, 1), pads=(2, 1, 1, 0)), (c,),
               check=spatial(c, kernel_h=5, kernel_w=3, stride_h=2, stride_w=1,
                             pad_top=2, pad_left=1, pad_bottom=1, pad_right=0)),
        OpCase("conv10x4_s2_kws", "Conv 10x4 1->16 on 49x10, stride 2, pads (t4,l1,b5,r1) (DS-CNN stem)",
               conv("conv10x4_s2_kws", [1, 1, 49, 10], 16, (10, 4), strides=(2, 2), pads=(4, 1, 5, 1)), (c,),
               check=spatial(c, kernel_h=10, kernel_w=4, pad_top=4, pad_bottom=5, pad_left=1, pad_right=1)),
        OpCase("conv3x3_dil2", "Conv 3x3 3->8 on 11x11, dilation 2, pad 2",
               conv("conv3x3_dil2", [1, 3, 11, 11], 8, (3, 3), pads=(2, 2, 2, 2), dilations=(2, 2)), (c,),
               check=spatial(c, dilation_h=2, dilation_w=2, pad_top=2)),
        OpCase("conv3x3_valid_odd", "Conv 3x3 8->5 on 7x9, stride 1, no pad (valid), odd sizes",
               conv("conv3x3_valid_odd", [1, 8, 7, 9], 5, (3, 3)), (c,),
               check=spatial(c, pad_top=0, pad_left=0)),
        # ---- fused activations: Conv output left unquantized so tigris fuses the Relu/Clip
        OpCase("conv_relu_fused", "Conv 3x3 4->8 + Relu fused; Relu output symmetric (zp 0) -> act_min 0",
               conv("conv_relu_fused", [1, 4, 8, 8], 8, (3, 3), pads=(1, 1, 1, 1), act="relu"), (c,),
               quantizer="manual", unquantized=("c",), symmetric=True,
               check=fields(c, fused_act=1, act_min=0, act_max=127)),
        OpCase("conv_relu6_fused", "Conv 3x3 4->8 + Clip(0,6) fused; output scale 0.05 zp -20 -> [-20,100]",
               conv("conv_relu6_fused", [1, 4, 8, 8], 8, (3, 3), pads=(1, 1, 1, 1), act="relu6"), (c,),
               quantizer="manual", unquantized=("c",), overrides={"y": (0.05, -20)},
               check=fields(c, fused_act=2, act_min=-20, act_max=100)),
        OpCase("conv_relu_recipe", "Conv 3x3 + Relu through the ORT recipe: Relu dropped, zp -128 clamps",
               conv("conv_relu_recipe", [1, 4, 8, 8], 8, (3, 3), pads=(1, 1, 1, 1), act="relu"), (c,),
               check=all_of(fields(c, fused_act=0, act_min=-128, act_max=127), output_quant_zp(-128))),
        # ---- standalone Relu / Relu6
        OpCase("relu_rescale", "Relu alone; input and output quantized separately (asymmetric)",
               unary("Relu", [1, 8, 6, 6]), (OP["Relu"],), quantizer="manual",
               check=same_io_quant(OP["Relu"], False)),
        OpCase("relu_symmetric", "Relu alone, symmetric activations: in and out both (s, 0)",
               unary("Relu", [1, 8, 6, 6]), (OP["Relu"],), quantizer="manual", symmetric=True),
        OpCase("relu6_rescale", "Clip(0,6) alone -> Relu6; input and output quantized separately",
               clip06([1, 8, 6, 6]), (OP["Relu6"],), quantizer="manual"),
        # ---- DepthwiseConv
        OpCase("dw3x3_s1_p1", "Depthwise 3x3 C=8 on 10x10, stride 1, pad 1, bias",
               conv("dw3x3_s1_p1", [1, 8, 10, 10], 8, (3, 3), pads=(1, 1, 1, 1), group=8), (d,),
               check=spatial(d, group=8, stride_h=1, pad_top=1)),
        OpCase("dw3x3_s2_p1", "Depthwise 3x3 C=16 on 15x15, stride 2, pad 1",
               conv("dw3x3_s2_p1", [1, 16, 15, 15], 16, (3, 3), strides=(2, 2), pads=(1, 1, 1, 1),
                    group=16), (d,), check=spatial(d, group=16, stride_h=2, stride_w=2)),
        OpCase("dw3x3_s2_asym", "Depthwise 3x3 C=8 on 12x12, stride 2, Keras 'same' pads (t0,l0,b1,r1), no bias",
               conv("dw3x3_s2_asym", [1, 8, 12, 12], 8, (3, 3), strides=(2, 2), pads=(0, 0, 1, 1),
                    group=8, bias=False), (d,),
               check=all_of(spatial(d, pad_top=0, pad_left=0, pad_bottom=1, pad_right=1), fields(d, bias=False))),
        OpCase("dw3x3_mult2", "Depthwise 3x3 C=4, channel multiplier 2 (8 outputs), pad 1",
               conv("dw3x3_mult2", [1, 4, 9, 9], 8, (3, 3), pads=(1, 1, 1, 1), group=4), (d,),
               check=spatial(d, group=4)),
        # ---- Gemm
        OpCase("gemm_bias", "Gemm [1,64] x 64->12 with bias", gemm("gemm_bias", 64, 12), (OP["Gemm"],),
               check=fields(OP["Gemm"], bias=True)),
        OpCase("gemm_nobias", "Gemm [1,32] x 32->10 without bias", gemm("gemm_nobias", 32, 10, bias=False),
               (OP["Gemm"],), check=fields(OP["Gemm"], bias=False)),
        OpCase("flatten_gemm_spatial", "Flatten [1,4,3,5] -> Gemm 60->10 (NCHW flatten order vs NHWC)",
               gemm("flatten_gemm_spatial", 60, 10, spatial=(4, 3, 5)), (OP["Flatten"], OP["Gemm"]),
               quantizer="manual"),
        # ---- pools
        OpCase("avgpool3x3_s2_p1", "AveragePool 3x3 s2 pad 1 count_include_pad=0 C=8 11x11, in/out quant differ",
               unary("AveragePool", [1, 8, 11, 11], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
               (OP["AveragePool"],), quantizer="manual",
               check=all_of(spatial(OP["AveragePool"], kernel_h=3, stride_h=2, pad_top=1),
                            same_io_quant(OP["AveragePool"], False))),
        OpCase("avgpool3x3_s2_p1_samequant", "As avgpool3x3_s2_p1 but output quant = input quant (integer path)",
               unary("AveragePool", [1, 8, 11, 11], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
               (OP["AveragePool"],), quantizer="manual", overrides={"y": (0.0125, -3), "x": (0.0125, -3)},
               check=same_io_quant(OP["AveragePool"], True)),
        OpCase("avgpool2x2_s2", "AveragePool 2x2 s2, no pad, C=8 on 10x10",
               unary("AveragePool", [1, 8, 10, 10], kernel_shape=[2, 2], strides=[2, 2]),
               (OP["AveragePool"],), quantizer="manual"),
        OpCase("gap", "GlobalAveragePool C=16 on 5x7 (mean requantization, no POOL_ROUNDING)",
               unary("GlobalAveragePool", [1, 16, 5, 7]), (OP["GlobalAveragePool"],), quantizer="manual",
               check=has_attr(OP["GlobalAveragePool"], OP_ATTR_POOL_ROUNDING, False)),
        OpCase("avgpool_whole_map", "AveragePool 5x7 over a 5x7 map -> GlobalAveragePool + POOL_ROUNDING",
               unary("AveragePool", [1, 16, 5, 7], kernel_shape=[5, 7]), (OP["GlobalAveragePool"],),
               quantizer="manual", check=has_attr(OP["GlobalAveragePool"], OP_ATTR_POOL_ROUNDING, True)),
        OpCase("maxpool2x2_s2", "MaxPool 2x2 s2 C=8 on 10x10",
               unary("MaxPool", [1, 8, 10, 10], kernel_shape=[2, 2], strides=[2, 2]), (OP["MaxPool"],),
               quantizer="manual", check=spatial(OP["MaxPool"], kernel_h=2, stride_h=2)),
        OpCase("maxpool3x3_s2_p1", "MaxPool 3x3 s2 pad 1 C=8 on 11x11",
               unary("MaxPool", [1, 8, 11, 11], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
               (OP["MaxPool"],), quantizer="manual",
               check=spatial(OP["MaxPool"], kernel_h=3, stride_h=2, pad_top=1, pad_right=1)),
        # ---- Softmax
        OpCase("softmax_int", "Softmax [1,10], output forced to 1/256, zp -128 (integer method)",
               unary("Softmax", [1, 10], axis=-1), (OP["Softmax"],),
               overrides={"y": (S256, -128)}, check=output_quant(S256, -128)),
        OpCase("softmax_float", "Softmax [1,10] as ORT calibrates it: 1/255, zp -128 (float method)",
               unary("Softmax", [1, 10], axis=-1), (OP["Softmax"],),
               check=output_quant(1.0 / 255.0, -128)),
        # ---- Reshape / Flatten
        OpCase("reshape_pure", "Reshape [1,16,1,1] -> [1,16] (NHWC [1,1,1,16]: pure reinterpretation)",
               reshape([1, 16, 1, 1], [1, 16]), (OP["Reshape"],), quantizer="manual",
               overrides={"x": (0.02, 3), "y": (0.02, 3)}),
        OpCase("flatten_pure", "Flatten [1,16,1,1] -> [1,16] (pure reinterpretation)",
               unary("Flatten", [1, 16, 1, 1], axis=1), (OP["Flatten"],), quantizer="manual",
               overrides={"x": (0.02, 3), "y": (0.02, 3)}),
        OpCase("flatten_spatial", "Flatten [1,4,3,5] -> [1,60]: NHWC -> linear, real data movement",
               unary("Flatten", [1, 4, 3, 5], axis=1), (OP["Transpose"], OP["Flatten"]), quantizer="manual",
               overrides={"x": (0.02, 3), "y": (0.02, 3)}),
        OpCase("reshape_spatial", "Reshape [1,4,3,5] -> [1,60]",
               reshape([1, 4, 3, 5], [1, 60]), (OP["Transpose"], OP["Reshape"]), quantizer="manual",
               overrides={"x": (0.02, 3), "y": (0.02, 3)}),
        # ---- float interface (boundary Q/DQ kept: plan quantizes input, dequantizes output)
        OpCase("conv3x3_float_iface", "Conv 3x3 3->8 on 9x11 pad 1, float32 interface",
               conv("conv3x3_float_iface", [1, 3, 9, 11], 8, (3, 3), pads=(1, 1, 1, 1)), (c,),
               float_interface=True, check=iface(True)),
        OpCase("softmax_float_iface", "Softmax [1,10], float32 interface (output 1/255, zp -128)",
               unary("Softmax", [1, 10], axis=-1), (OP["Softmax"],), float_interface=True,
               check=all_of(iface(True), output_quant(1.0 / 255.0, -128))),
        # ---- several untiled stages (see multistage_budget in README)
        OpCase("inverted_residual", "MBv2 block C=8 16x16: 1x1 expand x4 + ReLU6, DW 3x3 + ReLU6, 1x1, Add",
               inverted_residual("inverted_residual", 8, 16, 4), (c, d, c, OP["Add"]),
               multistage_budget="17K"),
        OpCase("inverted_residual_x2", "Two stacked inverted_residual blocks (C=8, x4, 16x16)",
               inverted_residual("inverted_residual_x2", 8, 16, 4, blocks=2),
               (c, d, c, OP["Add"], c, d, c, OP["Add"])),  # at 16K/17K: 4 stages, one runs tiled
        # ---- small networks whose small budgets take every tiled path (networks.py, tests/paths)
        *_network_cases(),
    ]


def _network_cases() -> list[OpCase]:
    c, d, add, mp, ap = OP["Conv"], OP["DepthwiseConv"], OP["Add"], OP["MaxPool"], OP["AveragePool"]
    gap, fl, gemm, sm = OP["GlobalAveragePool"], OP["Flatten"], OP["Gemm"], OP["Softmax"]
    return [
        OpCase("executor_cnn", "The small test CNN of docs/execution.md#test-models (3x32x32, 11 plan ops)",
               networks.executor_cnn, (c, c, d, c, add, mp, ap, gap, fl, gemm, sm),
               check=all_of(spatial(c, stride_h=1, pad_top=1), has_attr(add, 7, True)),
               paths=PATHS["executor_cnn"]),
        OpCase("asym_cnn", "Odd 4x33x27 input: Keras-same s2 conv, dilated DW, 5x3 s(2,1) conv, padded pools",
               networks.asym_cnn, (c, d, c, mp, ap, gap, fl, gemm),
               check=all_of(spatial(c, stride_h=2, stride_w=2, pad_top=0, pad_left=0, pad_bottom=1, pad_right=1),
                            spatial(d, dilation_h=2, dilation_w=2, pad_top=2),
                            spatial(mp, kernel_h=3, stride_h=2, pad_top=1),
                            spatial(ap, kernel_h=3, stride_h=2, pad_top=1)),
               paths=PATHS["asym_cnn"]),
        OpCase("residual_cnn", "Two MBv2-style residual blocks, DW multiplier 2, MaxPool 3x3/1 (8x24x24)",
               networks.residual_cnn, (c, d, c, add, c, d, c, add, mp, gap, fl, gemm),
               paths=PATHS["residual_cnn"]),
        OpCase("skip_cnn", "ResNet-style identity blocks (Conv3x3 + Add) on 4x20x20, AvgPool 2x2",
               networks.skip_cnn, (c, c, add, c, add, c, ap, gap, fl, gemm),
               paths=PATHS["skip_cnn"]),
        OpCase("clamp_cnn", "Fused Relu6/Relu with biting clamps in tiles, whole-map AveragePool (3x24x20)",
               networks.clamp_cnn, (c, d, c, gap, fl, gemm), quantizer="manual",
               unquantized=("conv1", "conv3"), overrides={"relu62": (0.05, -20), "relu4": (0.03, -10)},
               check=all_of(fields(c, fused_act=2, act_min=-20, act_max=100),
                            fields(d, fused_act=1, act_min=-10, act_max=127),
                            spatial(d, stride_h=2, pad_top=1, pad_left=1, pad_bottom=0, pad_right=0),
                            has_attr(gap, OP_ATTR_POOL_ROUNDING, True)),
               paths=PATHS["clamp_cnn"]),
    ]


#: Reference (bundled host runtime) path signatures per network case and budget; README.md has
#: the same table with what each budget exercises. Regenerate with tests/paths/README.md's recipe.
PATHS: dict[str, dict[str, str]] = {
    "executor_cnn": {
        "64K": "0:normal",
        "16K": "0:normal",
        "8K": "0:chain2-lb 2:normal 3:tiled 4:normal",
        "6K": "0:chain2-lb 2:chain2-lb 4:tiled 5:normal",
        "4K": "0:chain2-lb 2:chain2-lb 4:chain2-tb 6:normal",
        "2K": "0:chain2-lb 2:chain2-lb 4:chain2-tb 6:normal",
        "1536": "0:chain2-lb 2:chain2-lb 4:tiled 5:tiled 6:normal",
        "1K": "0:tiled_2d 1:tiled_2d 2:tiled_2d 3:tiled 4:tiled 5:tiled 6:tiled 7:normal",
        "768": "0:tiled_2d 1:tiled_2d 2:tiled_2d 3:tiled 4:tiled 5:tiled 6:tiled 7:normal",
        "512": "0:tiled_2d 1:tiled_2d 2:tiled_2d 3:tiled 4:tiled_2d 5:tiled_2d 6:tiled 7:normal",
        "384": "0:tiled_2d 1:tiled_2d 2:tiled_2d 3:tiled_2d 4:tiled_2d 5:tiled_2d 6:tiled 7:normal",
        "256": ("0:tiled_2d 1:tiled_2d 2:tiled_2d 3:tiled_2d 4:tiled_2d 5:tiled_2d 6:tiled_2d 7:by_input "
                "8:normal"),
        "192": ("0:tiled_2d 1:tiled_2d 2:tiled_2d 3:tiled_2d 4:tiled_2d 5:tiled_2d 6:tiled_2d 7:by_input "
                "8:normal"),
    },
    "asym_cnn": {
        "6K": "0:normal",
        "4K": "0:tiled 1:normal",
        "3K": "0:chain2-lb 2:tiled 3:normal",
        "2K": "0:chain2-lb 2:tiled 3:normal",
        "1536": "0:tiled 1:tiled 2:tiled 3:tiled 4:normal",
        "1K": "0:tiled 1:tiled_2d 2:tiled 3:tiled 4:normal",
        "768": "0:tiled 1:tiled_2d 2:tiled_2d 3:tiled 4:normal",
        "512": "0:tiled 1:tiled_2d 2:tiled_2d 3:tiled_2d 4:normal",
        "384": "0:tiled_2d 1:tiled_2d 2:tiled_2d 3:tiled_2d 4:tiled 5:normal",
        "256": "0:tiled_2d 1:tiled_2d 2:tiled_2d 3:tiled_2d 4:tiled_2d 5:normal",
    },
    "residual_cnn": {
        "32K": "0:normal",
        "24K": "0:chain2-lb 2:normal",
        "16K": "0:chain3-lb 3:normal",
        "12K": "0:chain3-lb 3:tiled 4:normal",
        "8K": "0:chain3-lb 3:chain2-lb 5:normal 6:normal",
        "6K": "0:chain3-lb 3:chain2-lb 5:chain2-lb 7:tiled 8:normal",
        "4K": "0:chain3-lb 3:chain2-lb 5:chain2-lb 7:chain2-lb 9:normal",
        "2K": "0:tiled 1:tiled_2d 2:tiled 3:chain2-lb 5:chain2-lb 7:chain2-lb 9:by_input 10:normal",
        "1536": "0:tiled 1:tiled_2d 2:tiled 3:tiled 4:tiled 5:chain2-lb 7:tiled 8:tiled 9:by_input 10:normal",
        "1K": ("0:tiled 1:tiled_2d 2:tiled 3:tiled 4:tiled 5:tiled_2d 6:tiled 7:tiled 8:tiled_2d 9:by_input "
               "10:normal"),
        "768": ("0:tiled 1:tiled_2d 2:tiled 3:tiled 4:tiled_2d 5:tiled_2d 6:tiled 7:tiled 8:tiled_2d "
                "9:by_input 10:normal"),
        "512": ("0:tiled_2d 1:tiled_2d 2:tiled_2d 3:tiled_2d 4:tiled_2d 5:tiled_2d 6:tiled_2d 7:tiled_2d "
                "8:tiled_2d 9:by_input 10:normal"),
        "256": ("0:tiled_2d 1:tiled_2d 2:tiled_2d 3:tiled_2d 4:tiled_2d 5:tiled_2d 6:tiled_2d 7:tiled_2d "
                "8:tiled_2d 9:by_input-grouped 10:normal"),
    },
    "skip_cnn": {
        "32K": "0:normal",
        "16K": "0:normal 1:tiled 2:normal 3:tiled 4:normal",
        "12K": "0:normal 1:tiled 2:tiled 3:tiled 4:tiled 5:normal",
        "8K": "0:normal 1:tiled 2:tiled 3:tiled 4:chain2-tb 6:normal",
        "4K": "0:tiled 1:tiled 2:tiled 3:tiled 4:chain2-tb 6:normal",
        "3K": "0:tiled 1:tiled 2:tiled 3:tiled 4:chain3-tb 7:normal",
        "2K": "0:tiled 1:tiled 2:tiled 3:tiled 4:chain2-tb 6:tiled 7:normal",
        "1536": "0:tiled 1:tiled_2d 2:tiled 3:tiled_2d 4:chain2-tb 6:tiled 7:normal",
        "1K": "0:tiled_2d 1:tiled_2d 2:tiled 3:tiled_2d 4:tiled 5:tiled 6:tiled 7:normal",
        "768": "0:tiled_2d 1:tiled_2d 2:tiled_2d 3:tiled_2d 4:tiled_2d 5:tiled 6:tiled 7:by_input 8:normal",
        "384": ("0:tiled_2d 1:tiled_2d 2:tiled_2d 3:tiled_2d 4:tiled_2d 5:tiled_2d 6:tiled_2d 7:by_input "
                "8:normal"),
    },
    "clamp_cnn": {
        "6K": "0:normal",
        "4K": "0:chain2-lb 2:normal",
        "2K": "0:chain3-lb 3:normal",
        "1536": "0:chain3-lb 3:by_input 4:normal",
        "1K": "0:chain2-lb 2:tiled 3:by_input 4:normal",
        "768": "0:tiled 1:chain2-lb 3:by_input 4:normal",
        "512": "0:tiled_2d 1:tiled_2d 2:tiled 3:by_input 4:normal",
        "256": "0:tiled_2d 1:tiled_2d 2:tiled 3:by_input 4:normal",
        "192": "0:tiled_2d 1:tiled_2d 2:tiled_2d 3:by_input-grouped 4:normal",
        "128": "0:tiled_2d 1:tiled_2d 2:tiled_2d 3:by_input-grouped 4:normal",
    },
}


def output_quant_zp(zero_point: int) -> PlanCheck:
    def check(plan: dict[str, Any]) -> None:
        q = _qp(plan, plan["model_outputs"][0])
        assert q["zero_point"] == zero_point, q

    return check


CASES: dict[str, OpCase] = {case.name: case for case in _cases()}
