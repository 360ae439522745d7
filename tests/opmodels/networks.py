"""Small multi-layer fp32 CNNs whose plans, at small budgets, take each tiled execution path.

Unlike the single-op cases, these are whole (tiny) networks: compiled at ``-m 256K`` they are one
untiled stage like every other case, but at small budgets the compiler splits them into stages
that the runtime streams as 1-D stripes (``tiled``), 2-D tiles (``tiled_2d``), chains (line
buffered or not), or a global pool walked over its input (``by_input``). Which budget gives which
path sequence is recorded in README.md and asserted by ``tests/paths``.

Graph construction only; quantization is the recipe's (``models.qdq.quantize_qdq``) like the
other ``"ort"`` cases. Weights are seeded from the network tag, so rebuilds are byte-identical.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Net:
    """Tiny fp32 graph builder: every method appends nodes and returns the output tensor name."""

    def __init__(self, tag: str) -> None:
        self.rng = np.random.default_rng(zlib.crc32(("net/" + tag).encode()))
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.shapes: dict[str, tuple[int, ...]] = {}  # NCHW (or [N, F]) of every tensor made here
        self._n = 0

    def _name(self, kind: str) -> str:
        self._n += 1
        return f"{kind}{self._n}"

    def _const(self, arr: np.ndarray, name: str) -> str:
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def input(self, name: str, shape: Sequence[int]) -> str:
        self.shapes[name] = tuple(shape)
        return name

    def conv(self, x: str, cout: int, k: int | tuple[int, int] = 3, *, stride: int | tuple[int, int] = 1,
             pads: int | tuple[int, int, int, int] | None = None, group: int = 1, dilation: int = 1,
             act: str | None = None, bias: bool = True, gain: float = 2.0) -> str:
        """Conv (He-scaled seeded weights, bias ~ N(0, 0.1)), then optional Relu or Clip(0, 6).

        ``pads``: int for all sides, a (top, left, bottom, right) tuple in ONNX order, or None
        for "same" (k // 2 · dilation). ``group == cin`` (and ``cout == cin``) is a depthwise.
        """
        n, cin, h, w = self.shapes[x]
        kh, kw = (k, k) if isinstance(k, int) else k
        sh, sw = (stride, stride) if isinstance(stride, int) else stride
        if pads is None:
            pads = (kh // 2 * dilation, kw // 2 * dilation) * 2
        elif isinstance(pads, int):
            pads = (pads,) * 4
        fan = (cin // group) * kh * kw
        name = self._name("conv")
        wt = self.rng.standard_normal((cout, cin // group, kh, kw)) * np.sqrt(gain / fan)
        inputs = [x, self._const(wt.astype(np.float32), f"{name}.w")]
        if bias:
            inputs.append(self._const(self.rng.normal(0, 0.1, cout).astype(np.float32), f"{name}.b"))
        self.nodes.append(helper.make_node("Conv", inputs, [name], kernel_shape=[kh, kw],
                                           strides=[sh, sw], pads=list(pads), group=group,
                                           dilations=[dilation, dilation]))
        eh, ew = (kh - 1) * dilation + 1, (kw - 1) * dilation + 1
        self.shapes[name] = (n, cout, (h + pads[0] + pads[2] - eh) // sh + 1,
                             (w + pads[1] + pads[3] - ew) // sw + 1)
        return self.act(name, act)

    def dw(self, x: str, k: int = 3, **kw) -> str:
        c = self.shapes[x][1]
        return self.conv(x, c, k, group=c, **kw)

    def act(self, x: str, act: str | None) -> str:
        if act is None:
            return x
        name = self._name(act)
        if act == "relu":
            self.nodes.append(helper.make_node("Relu", [x], [name]))
        elif act == "relu6":
            lo = "relu6.lo" if any(i.name == "relu6.lo" for i in self.inits) else self._const(
                np.array(0, np.float32), "relu6.lo")
            hi = "relu6.hi" if any(i.name == "relu6.hi" for i in self.inits) else self._const(
                np.array(6, np.float32), "relu6.hi")
            self.nodes.append(helper.make_node("Clip", [x, lo, hi], [name]))
        else:
            raise ValueError(act)
        self.shapes[name] = self.shapes[x]
        return name

    def add(self, a: str, b: str, act: str | None = None) -> str:
        assert self.shapes[a] == self.shapes[b], (self.shapes[a], self.shapes[b])
        name = self._name("add")
        self.nodes.append(helper.make_node("Add", [a, b], [name]))
        self.shapes[name] = self.shapes[a]
        return self.act(name, act)

    def pool(self, x: str, kind: str, k: int, stride: int, pads: int | tuple[int, int, int, int] = 0) -> str:
        """MaxPool / AveragePool (count_include_pad 0)."""
        n, c, h, w = self.shapes[x]
        pads = (pads,) * 4 if isinstance(pads, int) else pads
        name = self._name(kind.lower())
        self.nodes.append(helper.make_node(kind, [x], [name], kernel_shape=[k, k], strides=[stride, stride],
                                           pads=list(pads)))
        self.shapes[name] = (n, c, (h + pads[0] + pads[2] - k) // stride + 1,
                             (w + pads[1] + pads[3] - k) // stride + 1)
        return name

    def gap(self, x: str) -> str:
        n, c, _, _ = self.shapes[x]
        name = self._name("gap")
        self.nodes.append(helper.make_node("GlobalAveragePool", [x], [name]))
        self.shapes[name] = (n, c, 1, 1)
        return name

    def flatten(self, x: str) -> str:
        name = self._name("flatten")
        self.nodes.append(helper.make_node("Flatten", [x], [name], axis=1))
        self.shapes[name] = (self.shapes[x][0], int(np.prod(self.shapes[x][1:])))
        return name

    def gemm(self, x: str, out_features: int) -> str:
        n, f = self.shapes[x]
        name = self._name("gemm")
        w = self.rng.standard_normal((out_features, f)) / np.sqrt(f)
        b = self.rng.normal(0, 0.1, out_features)
        self.nodes.append(helper.make_node("Gemm", [x, self._const(w.astype(np.float32), f"{name}.w"),
                                                    self._const(b.astype(np.float32), f"{name}.b")],
                                           [name], transB=1))
        self.shapes[name] = (n, out_features)
        return name

    def softmax(self, x: str) -> str:
        name = self._name("softmax")
        self.nodes.append(helper.make_node("Softmax", [x], [name], axis=-1))
        self.shapes[name] = self.shapes[x]
        return name

    def model(self, inputs: Sequence[str], output: str) -> onnx.ModelProto:
        """Opset-13 IR-8 model; the output tensor is renamed ``y`` (as the single-op cases)."""
        for node in self.nodes:
            for i, o in enumerate(node.output):
                if o == output:
                    node.output[i] = "y"
            for i, t in enumerate(node.input):
                if t == output:
                    node.input[i] = "y"
        g = helper.make_graph(
            self.nodes, "net",
            [helper.make_tensor_value_info(i, TensorProto.FLOAT, list(self.shapes[i])) for i in inputs],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(self.shapes[output]))],
            self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="tigris-scons/tests/opmodels")
        m.ir_version = 8
        onnx.checker.check_model(m, full_check=True)
        return m


Maker = Callable[[], onnx.ModelProto]


def executor_cnn() -> onnx.ModelProto:
    """The small test CNN the tests use as their reference network, input 1×3×32×32.

    Conv3×3(3→8)+Relu → Conv3×3/2(8→16)+Relu → DW3×3 → Clip(0,6) → PW1×1 → Add(residual) →
    Relu → MaxPool2/2 → AvgPool2/2 → GlobalAveragePool → Flatten → Gemm(16→10) → Softmax.
    """
    n = Net("executor_cnn")
    x = n.input("x", (1, 3, 32, 32))
    r1 = n.conv(x, 8, 3, act="relu")
    r2 = n.conv(r1, 16, 3, stride=2, act="relu")
    d = n.dw(r2, 3, act="relu6")
    p = n.conv(d, 16, 1, gain=1.0)
    a = n.add(p, r2, act="relu")
    m = n.pool(a, "MaxPool", 2, 2)
    v = n.pool(m, "AveragePool", 2, 2)
    return n.model([x], n.softmax(n.gemm(n.flatten(n.gap(v)), 10)))


def asym_cnn() -> onnx.ModelProto:
    """Odd, non-square 4×33×27 input through asymmetric geometry, so no tile edge is regular.

    Conv3×3/2 with Keras "same" pads (t0, l0, b1, r1) + Relu → DW3×3 dilation 2 → Clip(0,6) →
    Conv5×3 stride (2,1) pads (t2, l1, b1, r0) → MaxPool3×3/2 pad 1 → AvgPool3×3/2 pad 1
    (count_include_pad 0: edge windows average fewer samples) → GlobalAveragePool → Flatten →
    Gemm(16→6).
    """
    n = Net("asym_cnn")
    x = n.input("x", (1, 4, 33, 27))
    a = n.conv(x, 8, 3, stride=2, pads=(0, 0, 1, 1), act="relu")
    b = n.dw(a, 3, dilation=2, act="relu6")
    c = n.conv(b, 16, (5, 3), stride=(2, 1), pads=(2, 1, 1, 0))
    m = n.pool(c, "MaxPool", 3, 2, pads=1)
    v = n.pool(m, "AveragePool", 3, 2, pads=1)
    return n.model([x], n.gemm(n.flatten(n.gap(v)), 6))


def residual_cnn() -> onnx.ModelProto:
    """Two MobileNetV2-style residual blocks and a multiplier-2 depthwise, 1×8×24×24 input.

    Block 1 (24×24): Conv1×1 8→24 + Relu6 → DW3×3 + Relu6 → Conv1×1 24→8 → Add(x).
    Down: Conv3×3/2 8→16 + Relu (12×12). Block 2: DW3×3 channel multiplier 2 (16→32) + Relu6 →
    Conv1×1 32→16 → Add(down) → MaxPool3×3/1 pad 1 → GlobalAveragePool → Flatten → Gemm(16→10).
    At small budgets the Adds become chain members / chain heads with two inputs.
    """
    n = Net("residual_cnn")
    x = n.input("x", (1, 8, 24, 24))
    e = n.conv(x, 24, 1, act="relu6")
    d = n.dw(e, 3, act="relu6")
    p = n.conv(d, 8, 1, gain=1.0)
    a1 = n.add(p, x)
    s = n.conv(a1, 16, 3, stride=2, act="relu")
    d2 = n.conv(s, 32, 3, group=16, act="relu6")
    p2 = n.conv(d2, 16, 1, gain=1.0)
    a2 = n.add(p2, s)
    m = n.pool(a2, "MaxPool", 3, 1, pads=1)
    return n.model([x], n.gemm(n.flatten(n.gap(m)), 10))


def skip_cnn() -> onnx.ModelProto:
    """ResNet-style identity blocks on 1×4×20×20: a stage may hold a Conv and the Add that reads
    the Conv's own stage input (a residual inside one stage, so inside a chain member).

    Conv3×3(4→16) + Relu → 2 × [Conv3×3(16→16) + Relu → Add(block input)] → Conv1×1(16→8) →
    AvgPool2×2/2 → GlobalAveragePool → Flatten → Gemm(8→5).
    """
    n = Net("skip_cnn")
    x = n.input("x", (1, 4, 20, 20))
    s = n.conv(x, 16, 3, act="relu")
    for _ in range(2):
        s = n.add(n.conv(s, 16, 3, act="relu", gain=1.0), s)
    p = n.conv(s, 8, 1)
    v = n.pool(p, "AveragePool", 2, 2)
    return n.model([x], n.gemm(n.flatten(n.gap(v)), 5))


def clamp_cnn() -> onnx.ModelProto:
    """Fused activations with non-trivial clamps inside tiles, and a whole-map AveragePool.

    Meant for the hand-built QDQ (``quantize_manual``) with the Conv outputs ``conv1``/``conv3``
    left unquantized, so tigris fuses the activations into the convs, and output overrides that
    make the clamps bite: Conv3×3(3→8) + Clip(0,6) → act [−20, 100] at (0.05, −20);
    DW3×3/2 pad (t1, l1, b0, r0) + Relu → act [−10, 127] at (0.03, −10); Conv1×1(8→16) →
    AveragePool over the whole 12×10 map (→ GlobalAveragePool with POOL_ROUNDING) → Flatten →
    Gemm(16→4). Input 1×3×24×20.
    """
    n = Net("clamp_cnn")
    x = n.input("x", (1, 3, 24, 20))
    a = n.conv(x, 8, 3, act="relu6")                                  # conv1 -> relu62
    b = n.dw(a, 3, stride=2, pads=(1, 1, 0, 0), act="relu")           # conv3 -> relu4
    c = n.conv(b, 16, 1)                                              # conv5
    h, w = n.shapes[c][2:]
    v = n.pool(c, "AveragePool", h, 1) if h == w else _whole_map_avgpool(n, c)
    return n.model([x], n.gemm(n.flatten(v), 4))


def _whole_map_avgpool(n: Net, x: str) -> str:
    nn, c, h, w = n.shapes[x]
    name = n._name("averagepool")
    n.nodes.append(helper.make_node("AveragePool", [x], [name], kernel_shape=[h, w]))
    n.shapes[name] = (nn, c, 1, 1)
    return name
