"""Activation and elementwise ops of our runtime against the reference host runtime, byte for byte.

Unary ops (Relu, Relu6, Sigmoid, Tanh, HardSwish, LeakyRelu, Elu, Abs, Quantize, Gelu in both
forms): every int8 code, several quantizations each. Binary ops (Add, Sub, Mul, Max, Min, SquaredDifference): all
65 536 code pairs in one run. Constant operands (scalar, per channel, per row, full; first or
second position), broadcasting runtime operands, PRelu slopes, Sum and a fused Add+Relu: code
sweeps plus random inputs. Tiled stages (chains, 1-D stripes, 2-D tiles) and row bands holding these ops:
outputs, peaks, counters and trace events (models_data.assert_same_as_reference). Refusals: our
loader names the op (Div, LogSoftmax with another output encoding, HardSwish with an output scale the reference cannot run,
Max with mixed quantization, a broadcasting runtime operand in a tiled stage, a row-varying
constant in row bands).

tigris-ml's own per-op TFLite fixtures (sdist) run as well, where the sdist can be had.

Quantization sets and why they exist (scales are float32):
* ``HALF``: s_out = 2 s_in, zero points 0: every odd code is an exact .5 tie.
* ``RELU6_TIE``: 6 / s_out is exactly 2.5 in float32 but 2.4999999 in double, and s_in divides 6
  exactly: tells the relu6 cap (input domain, roundf) from an output-domain cap.
* ``NEAR_HALF``: s_out / s_in = 2.002: the one-step double requantization and TFLite's two-step
  MBQM differ on ~120 codes.
* ``PLAIN``: ordinary asymmetric pairs with different zero points.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.ops.models_activation import Const, chain_model, op_model, plan_of
from tests.ops.models_data import (
    assert_refused,
    assert_same_as_reference,
    const,
    fixture_plan,
    graph,
    node,
    reference_paths,
)

pytest.importorskip("tigris.runtime")

UNARY_SHAPE = [1, 4, 8, 8]      # 256 elements: every code once
PAIR_SHAPE = [1, 16, 64, 64]    # 65 536 elements: every code pair once

HALF = ((0.02, 0), (0.04, 0))
RELU6_TIE = ((0.05, -128), (2.4000000953674316, -128))
NEAR_HALF = ((0.07253982871770859, -126), (0.14522242546081543, -28))
PLAIN = ((0.0235, -1), (0.0117, 5))
WIDE = ((0.1, 20), (0.004, -60))


def _io(qset):
    (si, zi), (so, zo) = qset
    return {"x": (si, zi), "y": (so, zo)}


def _relu6(shape):
    return op_model("Clip", {"x": shape}, order=["x", "lo", "hi"],
                    floats=[const("lo", np.float32(0), np.float32), const("hi", np.float32(6), np.float32)])


def _gelu(approximate: str, shape=UNARY_SHAPE):
    """ONNX Gelu exists from opset 20 on."""
    return graph([node("Gelu", ["x"], ["y"], approximate=approximate)], {"x": shape}, opset=20)


# --------------------------------------------------------------------------- unary: every code

UNARY = {
    # name: (fp32 model, output opcode, quantization sets)
    "relu": (lambda: op_model("Relu", {"x": UNARY_SHAPE}), 3, [HALF, NEAR_HALF, PLAIN]),
    "relu6": (lambda: _relu6(UNARY_SHAPE), 4, [RELU6_TIE, ((0.05, -128), (1.7142857313156128, -100)), PLAIN]),
    "sigmoid": (lambda: op_model("Sigmoid", {"x": UNARY_SHAPE}), 12,
                [((0.05, 0), (1 / 3, 0)), ((0.0235, -1), (1 / 256, -128)), WIDE]),
    "tanh": (lambda: op_model("Tanh", {"x": UNARY_SHAPE}), 20, [((0.0235, -1), (1 / 128, 0)), WIDE]),
    "hard_swish": (lambda: op_model("HardSwish", {"x": UNARY_SHAPE}), 37,
                   [((0.05, -10), (0.1, 3)), ((0.0235, -1), (0.0132, -100)), ((0.5, 0), (0.02, 7))]),
    "leaky_relu": (lambda: op_model("LeakyRelu", {"x": UNARY_SHAPE}, alpha=0.2), 21, [HALF, PLAIN, WIDE]),
    "leaky_relu_negative": (lambda: op_model("LeakyRelu", {"x": UNARY_SHAPE}, alpha=-0.5), 21,
                            [((0.05, 20), (0.02, -3)), HALF]),
    "elu": (lambda: op_model("Elu", {"x": UNARY_SHAPE}), 56, [HALF, PLAIN, ((7.9e-05, 46), (1.367e-04, -95))]),
    "abs": (lambda: op_model("Abs", {"x": UNARY_SHAPE}), 38, [HALF, PLAIN]),
    "quantize": (lambda: op_model("Identity", {"x": UNARY_SHAPE}), 90, [HALF, NEAR_HALF, PLAIN]),
    "gelu": (lambda: _gelu("none"), 92, [PLAIN, WIDE, ((0.05, 60), (0.02, -120))]),
    "gelu_tanh": (lambda: _gelu("tanh"), 92, [PLAIN, WIDE, ((0.05, 60), (0.02, -120))]),
}
UNARY_CASES = [(name, i) for name, (_, _, qsets) in UNARY.items() for i in range(len(qsets))]


@pytest.mark.parametrize("name,qindex", UNARY_CASES, ids=[f"{n}-q{i}" for n, i in UNARY_CASES])
def test_unary_every_code(name: str, qindex: int, lib: Path, work: Path) -> None:
    make, opcode, qsets = UNARY[name]
    plan = plan_of(work, f"{name}_q{qindex}", make(), _io(qsets[qindex]))
    assert _opcodes(plan) == [opcode]
    assert_same_as_reference(plan, lib, n_inputs=2)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_random_quantizations(approximate: str, lib: Path, work: Path) -> None:
    """Gelu's table is float32 libm arithmetic (erff / tanhf); 16 random quantization pairs,
    every code, guard the formula against rounding-boundary cases."""
    rng = np.random.default_rng(20)
    for k in range(16):
        qin = (float(np.float32(10 ** rng.uniform(-2.5, -0.5))), int(rng.integers(-128, 128)))
        qout = (float(np.float32(10 ** rng.uniform(-2.5, -0.8))), int(rng.integers(-128, 128)))
        plan = plan_of(work, f"gelu_{approximate}_r{k}", _gelu(approximate), {"x": qin, "y": qout})
        assert_same_as_reference(plan, lib, n_inputs=1)


# --------------------------------------------------------------------------- binary: every code pair

def _pair_feeds(session) -> dict[str, np.ndarray]:
    a, b = (spec for spec in session.inputs)
    codes = np.arange(65536)
    return {a["name"]: ((codes >> 8) - 128).astype(np.int8).reshape(a["shape"]),
            b["name"]: ((codes & 255) - 128).astype(np.int8).reshape(b["shape"])}


def _assert_pairs_identical(plan: Path, lib: Path) -> None:
    from tests.runtime.oracle import open_session

    with open_session(plan, None) as ref, open_session(plan, lib) as ours:
        feeds = _pair_feeds(ref)
        expect = ref.run(feeds)
        got = ours.run(feeds)
    for name, value in expect.items():
        bad = np.flatnonzero(value.reshape(-1) != got[name].reshape(-1))
        assert bad.size == 0, (f"{plan.name}: {bad.size} of 65536 code pairs differ; first (a, b) = "
                               f"({(bad[0] >> 8) - 128}, {(bad[0] & 255) - 128}): reference "
                               f"{value.reshape(-1)[bad[0]]}, ours {got[name].reshape(-1)[bad[0]]}")


PAIR_QSETS = {
    "plain": {"a": (0.0235, -1), "b": (0.0235, 0), "y": (0.0462, -2)},
    "mixed": {"a": (0.05, 10), "b": (0.01, -20), "y": (0.03, 5)},
    "ties": {"a": (0.25, 0), "b": (0.25, 0), "y": (0.125, 0)},
}
SAME_Q = {"a": (0.05, 3), "b": (0.05, 3), "y": (0.05, 3)}
PAIR_CASES = [(op, q) for op in ("Add", "Sub", "Mul") for q in PAIR_QSETS] + [("Max", "same"), ("Min", "same")]


@pytest.mark.parametrize("op,qname", PAIR_CASES, ids=[f"{o}-{q}" for o, q in PAIR_CASES])
def test_binary_every_pair(op: str, qname: str, lib: Path, work: Path) -> None:
    quant = SAME_Q if qname == "same" else PAIR_QSETS[qname]
    plan = plan_of(work, f"pairs_{op}_{qname}", op_model(op, {"a": PAIR_SHAPE, "b": PAIR_SHAPE}), quant)
    _assert_pairs_identical(plan, lib)


@pytest.mark.parametrize("qname", ["plain", "mixed"])
def test_squared_difference_every_pair(qname: str, lib: Path, work: Path) -> None:
    # The compiler fuses Sub -> Mul(d, d) into SquaredDifference when d has no quantization.
    m = chain_model([node("Sub", ["a", "b"], ["d"]), node("Mul", ["d", "d"], ["y"])], {"a": PAIR_SHAPE, "b": PAIR_SHAPE})
    quant = dict(PAIR_QSETS[qname], y=(0.2 if qname == "plain" else 0.9, -128))
    plan = plan_of(work, f"pairs_sqd_{qname}", m, quant, unquantized=["d"])
    assert _opcodes(plan) == [40]
    _assert_pairs_identical(plan, lib)


# --------------------------------------------------------------------------- constants and broadcasting

S = [1, 4, 8, 8]
PER_CHANNEL = np.array([-128, -5, 60, 127]).reshape(4, 1, 1)
ROWS = (np.arange(8).reshape(1, 8, 1) * 37 % 256 - 128)
FULL = (np.arange(256).reshape(S) * 7 % 256 - 128)
QA = {"x": (0.05, 3), "y": (0.1, -4)}
QB = {"x": (0.0235, -1), "y": (0.0465, 0)}
QZ = {"z": (0.02, 1)}


def _const_case(op, codes, position=1, scale=0.01, zp=5, **attrs):
    k = Const("k", codes, scale, zp)
    order = ["x", "k"] if position == 1 else ["k", "x"]
    return lambda: op_model(op, {"x": S}, consts=[k], order=order, **attrs)


BROADCAST = {
    "add_const_channel": _const_case("Add", PER_CHANNEL),
    "add_const_scalar": _const_case("Add", np.array(100)),
    "add_const_rows": _const_case("Add", ROWS),
    "add_const_full": _const_case("Add", FULL),
    "sub_const_first": _const_case("Sub", np.array(-70), position=0),
    "sub_const_second_channel": _const_case("Sub", PER_CHANNEL),
    "mul_const_channel": _const_case("Mul", PER_CHANNEL),
    "mul_const_scalar": _const_case("Mul", np.array(-90), scale=0.003, zp=-20),
    "max_const_channel": _const_case("Max", PER_CHANNEL, scale=0.05, zp=3),
    "min_const_scalar": _const_case("Min", np.array(17), scale=0.05, zp=3),
    "prelu_channel": _const_case("PRelu", PER_CHANNEL, scale=0.004, zp=0),
    "prelu_scalar": _const_case("PRelu", np.array(50), scale=0.01, zp=-3),
    "add_runtime_channel": lambda: op_model("Add", {"x": S, "z": [1, 4, 1, 1]}),
    "add_runtime_width": lambda: op_model("Add", {"x": S, "z": [1, 1, 1, 8]}),
    "sub_runtime_first": lambda: op_model("Sub", {"z": [1, 4, 1, 1], "x": S}),
    "mul_runtime_both": lambda: op_model("Mul", {"x": [1, 4, 8, 1], "z": [1, 1, 1, 8]}),
    "mul_runtime_channel": lambda: op_model("Mul", {"x": S, "z": [1, 4, 1, 1]}),
    "squared_diff_const": lambda: chain_model([node("Sub", ["x", "k"], ["d"]), node("Mul", ["d", "d"], ["y"])],
                                              {"x": S}, [Const("k", PER_CHANNEL, 0.03, -7)]),
    "add_matrix_row_vector": lambda: op_model("Add", {"x": [16, 32], "z": [1, 32]}),
    "mul_rank3_mid": lambda: op_model("Mul", {"x": [2, 3, 4], "z": [2, 1, 4]}),
    "mul_rank5_leading": lambda: op_model("Mul", {"x": [1, 2, 3, 4, 5], "z": [1, 1, 3, 4, 5]}),
    "add_const_rank5_last": lambda: op_model("Add", {"x": [1, 2, 3, 4, 5]}, consts=[Const("k", np.arange(5) * 9 - 20, 0.01, 0)]),
    "sum2": lambda: op_model("Sum", {"x": S, "z": S}),
    "sum3": lambda: op_model("Sum", {"x": S, "z": S, "w": S}),
    "add_fused_relu": lambda: chain_model([node("Add", ["x", "z"], ["s"]), node("Relu", ["s"], ["y"])],
                                          {"x": S, "z": S}),
}
SAME_QUANT = {"max_const_channel", "min_const_scalar"}
BROADCAST_CASES = [(n, q) for n in BROADCAST for q in ("qa", "qb") if not (n in SAME_QUANT and q == "qb")]


def _broadcast_quant(name: str, qname: str) -> dict[str, tuple[float, int]]:
    if name in SAME_QUANT:
        return {"x": (0.05, 3), "y": (0.05, 3)}
    quant = dict(QA if qname == "qa" else QB)
    if name.startswith("sum"):
        quant.update(z=quant["x"], w=quant["x"])
    else:
        quant.update(QZ)
    if name == "squared_diff_const":
        quant["y"] = (0.09, -128)
    return quant


@pytest.mark.parametrize("name,qname", BROADCAST_CASES, ids=[f"{n}-{q}" for n, q in BROADCAST_CASES])
def test_constant_and_broadcast(name: str, qname: str, lib: Path, work: Path) -> None:
    unquantized = {"squared_diff_const": ["d"], "add_fused_relu": ["s"]}.get(name, [])
    plan = plan_of(work, f"{name}_{qname}", BROADCAST[name](), _broadcast_quant(name, qname), unquantized=unquantized)
    assert len(_opcodes(plan)) == 1, f"{name}: expected one plan op, got {_opcodes(plan)}"
    assert_same_as_reference(plan, lib, n_inputs=8)


# --------------------------------------------------------------------------- the compiler's TFLite fixtures

FIXTURES = ["relu", "relu6", "logistic", "tanh", "hard_swish", "hard_swish_offset", "hard_swish_wide", "leaky_relu",
            "elu", "abs", "prelu", "mul", "mul_broadcast", "mul_broadcast_both", "mul_constant_scalar",
            "mul_rank_vector", "div_constant", "add_broadcast", "add_broadcast_rows", "add_constant_channels",
            "add_constant_full", "add_constant_rows", "add_rank", "add_n", "sub", "sub_broadcast_first",
            "sub_constant_first", "sub_constant_second", "maximum", "maximum_rank", "minimum", "squared_difference",
            "squared_difference_constant", "requantize_shared", "softmax", "gelu", "gelu_approximate",
            "gelu_approximate_offset", "gelu_wide"]
FIXTURES += ["log_softmax", "log_softmax_channels", "l2_normalization", "rsqrt"]  # Div: test_ops_runtime_errors


@pytest.mark.parametrize("name", FIXTURES)
def test_tflite_fixture(name: str, lib: Path, work: Path) -> None:
    assert_same_as_reference(fixture_plan(name, work), lib, n_inputs=4)


# --------------------------------------------------------------------------- tiled stages

_RNG = np.random.default_rng(7)
_W = (_RNG.standard_normal((8, 4, 3, 3)) * 0.3).astype(np.float32)
_B = (_RNG.standard_normal(8) * 0.1).astype(np.float32)
_W2 = (_RNG.standard_normal((8, 8, 3, 3)) * 0.3).astype(np.float32)


def _conv_then(tail, consts=(), inputs=None, floats=(), opset=None):
    nodes = [node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1])] + tail
    return chain_model(nodes, {"x": [1, 4, 32, 32], **(inputs or {})}, consts,
                       floats=[const("w", _W, np.float32), const("b", _B, np.float32), *floats], opset=opset)


TILED = {
    "sigmoid_mul_const": (lambda: _conv_then([node("Sigmoid", ["c"], ["s"]), node("Mul", ["s", "k"], ["y"])],
                                             [Const("k", np.arange(8).reshape(8, 1, 1) * 30 - 100, 0.02, 3)]),
                          {"x": (0.05, 0), "c": (0.1, -3), "s": (1 / 256, -128), "y": (0.05, 2)}),
    "relu6_prelu": (lambda: _conv_then([node("Clip", ["c", "lo", "hi"], ["s"]), node("PRelu", ["s", "k"], ["y"])],
                                       [Const("k", np.arange(8).reshape(8, 1, 1) - 4, 0.1, 0)],
                                       floats=[const("lo", np.float32(0), np.float32),
                                               const("hi", np.float32(6), np.float32)]),
                    {"x": (0.05, 0), "c": (0.1, -3), "s": (0.03, -128), "y": (0.03, 5)}),
    "leaky_relu_sum": (lambda: _conv_then([node("LeakyRelu", ["c"], ["s"], alpha=0.2),
                                           node("Sum", ["s", "c", "s"], ["y"])]),
                       {"x": (0.05, 0), "c": (0.1, -3), "s": (0.1, -3), "y": (0.2, 2)}),
    # a per-pixel softmax over channels (segmentation heads): integer and float methods, and
    # feeding a second convolution, whose halo rows the softmax computes too
    "softmax_integer": (lambda: _conv_then([node("Softmax", ["c"], ["y"], axis=1)]),
                        {"x": (0.05, 0), "c": (0.1, -3), "y": (1 / 256, -128)}),
    "softmax_float": (lambda: _conv_then([node("Softmax", ["c"], ["y"], axis=1)]),
                      {"x": (0.05, 0), "c": (0.1, -3), "y": (1 / 255, -128)}),
    # LogSoftmax and L2Normalization over channels per pixel, in the same tiles
    "log_softmax_channels": (lambda: _conv_then([node("LogSoftmax", ["c"], ["y"], axis=1)]),
                             {"x": (0.05, 0), "c": (0.1, -3), "y": (1 / 16, 127)}),
    "l2_normalization_channels": (lambda: _conv_then([node("LpNormalization", ["c"], ["y"], axis=1, p=2)]),
                                  {"x": (0.05, 0), "c": (0.1, -3), "y": (1 / 128, 0)}),
    "softmax_conv": (lambda: _conv_then([node("Softmax", ["c"], ["s"], axis=1),
                                         node("Conv", ["s", "w2"], ["y"], pads=[1, 1, 1, 1])],
                                        floats=[const("w2", _W2, np.float32)]),
                     {"x": (0.05, 0), "c": (0.1, -3), "s": (1 / 256, -128), "y": (0.05, 3)}),
}
TILED_CASES = [(n, b) for n in TILED for b in ("8K", "1K")] + [("softmax_conv", "2K")]


@pytest.mark.parametrize("name,budget", TILED_CASES, ids=[f"{n}-{b}" for n, b in TILED_CASES])
def test_tiled_stages(name: str, budget: str, lib: Path, work: Path) -> None:
    make, quant = TILED[name]
    plan = plan_of(work, f"tiled_{name}_{budget}", make(), quant, budget=budget)
    paths = reference_paths(plan)
    assert paths - {"normal"}, f"{name} at {budget} runs untiled ({paths}); the case no longer tests tiling"
    assert_same_as_reference(plan, lib, n_inputs=3)


@pytest.mark.parametrize("budget", ["8K", "1K"])
def test_gelu_chain_is_refused_like_the_reference(budget: str, lib: Path, work: Path) -> None:
    """Conv -> Gelu compiles into a chain; the reference refuses chains holding Gelu ("operator
    contract is not executable": its modes are axis_unary, height and row only), so do we."""
    from tigris.runtime import RuntimeError as TigrisError

    from tests.runtime.oracle import open_session

    plan = plan_of(work, f"chain_gelu_{budget}", _conv_then([node("Gelu", ["c"], ["y"], approximate="tanh")], opset=20),
                   {"x": (0.05, 0), "c": (0.1, -3), "y": (0.05, -20)}, budget=budget)
    with pytest.raises(TigrisError, match="not executable"):
        open_session(plan, None).close()
    with pytest.raises(TigrisError, match="cannot be executed by this runtime: an op of this kind stripes only alone"):
        open_session(plan, lib).close()


def test_lz4_constants_in_tiled_stages(lib: Path, work: Path) -> None:
    # Constant operands read from a stage's decompressed weight block.
    from click.testing import CliRunner
    from tigris.cli import cli

    make, quant = TILED["relu6_prelu"]
    plain = plan_of(work, "lz4_relu6_prelu", make(), quant, budget="8K")
    plan = work / "lz4_relu6_prelu.lz4.tgrs"
    res = CliRunner().invoke(cli, ["compile", str(plain.with_suffix(".onnx")), "-m", "8K", "-c", "lz4", "-o", str(plan)])
    assert res.exit_code == 0 and plan.exists(), res.output
    assert_same_as_reference(plan, lib, n_inputs=3)


ROWS = {
    # matrices and token sequences banded along their row axis (path "rows")
    "matrix_sigmoid_mul_const": (lambda: chain_model([node("Sigmoid", ["x"], ["s"]), node("Mul", ["s", "k"], ["y"])],
                                                     {"x": [256, 64]}, [Const("k", np.arange(64) * 3 - 100, 0.02, 3)]),
                                 {"x": (0.05, 0), "s": (1 / 256, -128), "y": (0.01, 2)}),
    "tokens_softmax": (lambda: op_model("Softmax", {"x": [1, 256, 64]}, axis=-1), {"x": (0.05, 0), "y": (1 / 256, -128)}),
}


@pytest.mark.parametrize("name", list(ROWS))
def test_row_bands(name: str, lib: Path, work: Path) -> None:
    make, quant = ROWS[name]
    plan = plan_of(work, f"rows_{name}", make(), quant, budget="8K")
    assert "rows" in reference_paths(plan), f"{name}: the case no longer runs in row bands"
    assert_same_as_reference(plan, lib, n_inputs=3)


# --------------------------------------------------------------------------- refusals

#: Div quantizations (a, divisor, output): ties at .5 with both signs, large and small ratios,
#: zero points at the ends; every (dividend, divisor) code pair but the divisor's zero point
DIV_QUANTS = [((0.05, 3), (0.04, -2), (0.1, 0)), ((0.1, 0), (0.001, -100), (1.0, -128)),
              ((0.02, -128), (0.5, 10), (0.003, 5)), ((0.5, -128), (0.003, 127), (0.01, 0)),
              ((0.001, 0), (1.0, 0), (0.0001, 0))]


@pytest.mark.parametrize("qa, qb, qy", DIV_QUANTS, ids=[f"div{i}" for i in range(len(DIV_QUANTS))])
def test_div_every_code_pair(qa, qb, qy, lib: Path, work: Path) -> None:
    from tests.runtime.oracle import open_session

    plan = plan_of(work, f"div_pairs_{qa}_{qb}_{qy}".replace(" ", ""), op_model("Div", {"x": [256, 255], "z": [256, 255]}),
                   {"x": qa, "z": qb, "y": qy})
    dividend = np.repeat(np.arange(-128, 128, dtype=np.int8)[:, None], 255, axis=1)
    divisor = np.repeat(np.array([c for c in range(-128, 128) if c != qb[1]], dtype=np.int8)[None, :], 256, axis=0)
    with open_session(plan, None) as reference, open_session(plan, lib) as ours:
        names = [spec["name"] for spec in reference.inputs]
        feeds = {names[0]: dividend, names[1]: divisor}
        (expected,), (got,) = reference.run(feeds).values(), ours.run(feeds).values()
    assert np.asarray(got).tobytes() == np.asarray(expected).tobytes()


#: LogSoftmax input scales the reference was measured at (its fixed-point logarithm, diff_min and
#: the int32 cut all depend on the scale), with zero points at both ends
LOG_SOFTMAX_SCALES = [(0.001, 0), (0.0137, -128), (0.05, 3), (0.1, 127), (0.12375, -20), (1.0, 0)]


@pytest.mark.parametrize("width", [16, 1000])
@pytest.mark.parametrize("scale, zp", LOG_SOFTMAX_SCALES, ids=[f"s{s:g}_zp{z}" for s, z in LOG_SOFTMAX_SCALES])
def test_log_softmax(scale: float, zp: int, width: int, lib: Path, work: Path) -> None:
    plan = plan_of(work, f"log_softmax_{scale:g}_{zp}_{width}", op_model("LogSoftmax", {"x": [4, width]}, axis=-1),
                   {"x": (scale, zp), "y": (1 / 16, 127)})
    assert_same_as_reference(plan, lib, n_inputs=6)


def test_refuses_log_softmax_with_another_output_encoding(lib: Path, work: Path) -> None:
    """The compiler writes LogSoftmax with output (1/16, 127) only; our arithmetic assumes it, and
    the reference refuses any other encoding too."""
    from tests.runtime.plantools import PlanView

    plan = plan_of(work, "log_softmax_enc", op_model("LogSoftmax", {"x": [1, 10]}, axis=-1),
                   {"x": (0.05, 3), "y": (1 / 16, 127)})
    view = PlanView(plan.read_bytes())
    out = view.info["ops"][0]["outputs"][0]
    patched = work / "log_softmax_enc_zp0.tgrs"
    patched.write_bytes(view.set_quant(view.info["tensors"][out]["quant_param_idx"], "zero_point", 0))
    assert_refused(patched, lib, "LogSoftmax", reference_refuses=True)


L2_CASES = [(0.02, -128, 16), (0.001, 0, 64), (1.0, 127, 16), (0.05, -5, 1000)]


@pytest.mark.parametrize("scale, zp, width", L2_CASES, ids=[f"s{s:g}_zp{z}_w{w}" for s, z, w in L2_CASES])
def test_l2_normalization(scale: float, zp: int, width: int, lib: Path, work: Path) -> None:
    plan = plan_of(work, f"l2_{scale:g}_{zp}_{width}", op_model("LpNormalization", {"x": [3, width]}, axis=-1, p=2),
                   {"x": (scale, zp), "y": (1 / 128, 0)})
    assert_same_as_reference(plan, lib, n_inputs=6)


#: Rsqrt input/output scales patched into the sdist fixture (input zero point -128, so every code
#: is at or above it): small and large ratios, and the ends of the output shift range the
#: reference executes
RSQRT_SCALES = [(0.05, 0.02), (0.001, 1.0), (1.0, 0.001), (0.3, 0.0007)]


@pytest.mark.parametrize("s_in, s_out", RSQRT_SCALES, ids=[f"in{a:g}_out{b:g}" for a, b in RSQRT_SCALES])
def test_rsqrt_scales(s_in: float, s_out: float, lib: Path, work: Path) -> None:
    from tests.runtime.plantools import PlanView

    view = PlanView(fixture_plan("rsqrt", work).read_bytes())
    q_in, q_out = (view.info["tensors"][t]["quant_param_idx"] for t in (0, 1))
    data = PlanView(view.set_quant(q_in, "scale", s_in)).set_quant(q_out, "scale", s_out)
    plan = work / f"rsqrt_{s_in:g}_{s_out:g}.tgrs"
    plan.write_bytes(data)
    assert_same_as_reference(plan, lib, n_inputs=4)


def test_refuses_hard_swish_the_reference_cannot_run(lib: Path, work: Path) -> None:
    # s_out < s_in / 128: the reference loads the plan, then fails every run.
    from tigris.runtime import RuntimeError as TigrisError

    from tests.runtime.oracle import open_session

    plan = plan_of(work, "hard_swish_tiny_out", op_model("HardSwish", {"x": UNARY_SHAPE}),
                   {"x": (0.05, 0), "y": (0.05 / 200, 0)})
    assert_refused(plan, lib, "HardSwish", reference_refuses=False)
    with open_session(plan, None) as ref, pytest.raises(TigrisError):
        ref.run({s["name"]: np.zeros(s["shape"], np.int8) for s in ref.inputs})


def test_refuses_clip(lib: Path, work: Path) -> None:
    # 0.12.1 never writes Clip (Clip(0, 6) becomes Relu6, other bounds are refused at compile
    # time); a Relu patched to opcode 11 stands in for one.
    from tests.runtime.plantools import PlanView

    plan = plan_of(work, "relu_for_clip", op_model("Relu", {"x": S}), {"x": (0.05, 3), "y": (0.05, 3)})
    clip = work / "clip.tgrs"
    clip.write_bytes(PlanView(plan).set_op(0, "op_type", 11))
    assert_refused(clip, lib, "Clip", reference_refuses=True)


def test_refuses_max_with_mixed_quantization(lib: Path, work: Path) -> None:
    from tests.runtime.plantools import PlanView

    plan = plan_of(work, "max_same", op_model("Max", {"a": S, "b": S}), SAME_Q)
    view = PlanView(plan)
    quant_b = view.info["tensors"][view.info["ops"][0]["inputs"][1]]["quant_param_idx"]
    mixed = work / "max_mixed.tgrs"
    mixed.write_bytes(view.set_quant(quant_b, "zero_point", 4))
    assert_refused(mixed, lib, "Max", reference_refuses=True)


def test_broadcast_runtime_operand_in_tiled_stage(lib: Path, work: Path) -> None:
    # The reference loads the one-row operand whole for every band, and so does path_tiles: the
    # stage runs in stripes and must match the reference byte for byte.
    plan = plan_of(work, "tiled_add_broadcast", _conv_then([node("Tanh", ["c"], ["s"]), node("Add", ["s", "z"], ["y"])],
                                                           inputs={"z": [1, 8, 1, 1]}),
                   {"x": (0.05, 0), "z": (0.02, 1), "c": (0.1, -3), "s": (1 / 128, 0), "y": (0.02, 2)}, budget="8K")
    assert "tiled" in reference_paths(plan)
    assert_same_as_reference(plan, lib)


@pytest.mark.parametrize("shape", [[1, 2, 1, 4, 1], [1, 1, 3, 1, 5], [1, 2, 3, 4, 1]])
def test_refuses_inner_broadcast_above_rank_4(shape, lib: Path, work: Path) -> None:
    # The reference loads these and fails every run; it broadcasts leading axes only.
    from tigris.runtime import RuntimeError as TigrisError

    from tests.runtime.oracle import open_session

    name = "rank5_" + "_".join(map(str, shape))
    plan = plan_of(work, name, op_model("Mul", {"x": [1, 2, 3, 4, 5], "z": shape}),
                   {"x": (0.05, 3), "z": (0.02, 3), "y": (0.05, 3)})
    assert_refused(plan, lib, "Mul", reference_refuses=False)
    with open_session(plan, None) as ref, pytest.raises(TigrisError):
        ref.run({s["name"]: np.ones(s["shape"], np.int8) for s in ref.inputs})


def test_refuses_broadcast_in_banded_matrix_stage(lib: Path, work: Path) -> None:
    # A per-row scale [256, 1] on a [256, 64] matrix in a banded stage: the reference refuses too.
    m = chain_model([node("Tanh", ["x"], ["s"]), node("Mul", ["s", "z"], ["y"])], {"x": [256, 64], "z": [256, 1]})
    plan = plan_of(work, "rows_mul_broadcast", m, {"x": (0.05, 0), "s": (1 / 128, 0), "z": (0.02, 0), "y": (0.01, 0)},
                   budget="8K")
    assert_refused(plan, lib, "Mul", reference_refuses=True)


def test_refuses_row_varying_constant_in_row_bands(lib: Path, work: Path) -> None:
    # A per-row bias on a banded matrix: the reference loads the plan and fails every run.
    from tigris.runtime import RuntimeError as TigrisError

    from tests.runtime.oracle import open_session

    m = op_model("Add", {"x": [256, 64]}, consts=[Const("k", np.arange(256).reshape(256, 1) % 200 - 100, 0.02, 3)])
    plan = plan_of(work, "rows_add_row_bias", m, {"x": (0.05, 0), "y": (0.05, 2)}, budget="8K")
    assert_refused(plan, lib, "Add", reference_refuses=False)
    with open_session(plan, None) as ref, pytest.raises(TigrisError):
        ref.run({s["name"]: np.zeros(s["shape"], np.int8) for s in ref.inputs})


# --------------------------------------------------------------------------- helpers

def _opcodes(plan: Path) -> list[int]:
    from tests.ops.models_data import opcodes, read_plan

    return opcodes(read_plan(plan))
