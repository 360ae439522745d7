"""Plan header reader and the deterministic input generator (against real plans and C)."""

from __future__ import annotations

import struct
import subprocess

import pytest

from tests.build.build_helpers import tigris_compile
from tests.support import require_tool
from tigris_scons.errors import TigrisError
from tigris_scons.inputs import DEFAULT_SEED, fnv1a32, generate_inputs, xorshift32
from tigris_scons.plan import IoTensor, read_plan


def test_ds_cnn_plan_header(ds_cnn_plan):
    info = read_plan(ds_cnn_plan)
    assert (info.version, info.num_ops, info.num_stages, info.num_tensors) == (9, 13, 1, 14)
    assert info.budget == 20480 and info.file_size == ds_cnn_plan.stat().st_size
    assert [(t.dtype, t.shape, t.size_bytes) for t in info.inputs] == [(3, (1, 49, 10, 1), 490)]
    assert [(t.dtype, t.shape, t.size_bytes) for t in info.outputs] == [(3, (1, 12), 12)]
    assert info.weight_reserve(16) == 0 and info.fast_arena_required(16) == 20480


def test_float_interface_plan(tiny_plan):
    info = read_plan(tiny_plan)
    assert info.model_name == "tiny"
    assert [(t.name, t.dtype_name, t.shape, t.size_bytes) for t in info.inputs] == [("x", "float32", (1, 8, 8, 1), 256)]
    assert [(t.name, t.dtype_name, t.size_bytes) for t in info.outputs] == [("y", "float32", 12)]


def test_lz4_plan_reserve(tmp_path, ds_cnn_plan):
    out = tigris_compile(ds_cnn_plan.with_suffix(".onnx"), tmp_path / "lz4.tgrs", "40K", "-c", "lz4")
    info = read_plan(out)
    assert info.weight_block_sizes, "an LZ4 plan has weight blocks"
    reserve = info.weight_reserve(32)
    assert reserve >= max(size for _, size in info.weight_block_sizes)
    assert reserve % 32 == 0
    assert info.fast_arena_required(32) == info.budget + reserve


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda b: b[:20], "shorter than the 48-byte header"),
        (lambda b: b"XGRS" + b[4:], "magic"),
        (lambda b: b + b"\0", "header says"),
        (lambda b: b[:4] + struct.pack("<I", 77) + b[8:], "schema version 77"),
    ],
)
def test_bad_plans_are_refused_with_a_reason(ds_cnn_plan, mutate, fragment):
    with pytest.raises(TigrisError) as err:
        read_plan(mutate(ds_cnn_plan.read_bytes()))
    assert "not a usable .tgrs plan" in str(err.value) and fragment in str(err.value)


def test_missing_plan_file(tmp_path):
    with pytest.raises(TigrisError, match="cannot read plan"):
        read_plan(tmp_path / "none.tgrs")


def test_xorshift32_reference_values():
    stream = xorshift32(1)
    assert [next(stream) for _ in range(3)] == [270369, 67634689, 2647435461]
    with pytest.raises(TigrisError):
        next(xorshift32(0))


def test_generator_is_one_stream_across_inputs():
    a = IoTensor("a", 0, 3, (4,), 4)
    b = IoTensor("b", 1, 2, (3,), 3)
    both = generate_inputs([a, b])
    single = generate_inputs([IoTensor("ab", 0, 3, (7,), 7)])
    assert both[0] + both[1] == single[0]


def test_fnv1a32_known_vectors():
    assert fnv1a32(b"") == 0x811C9DC5
    assert fnv1a32(b"a") == 0xE40C292C
    assert fnv1a32(b"foobar") == 0xBF9CF968
    assert fnv1a32(b"bar", fnv1a32(b"foo")) == fnv1a32(b"foobar")


C_GENERATOR = r"""
#include <stdint.h>
#include <stdio.h>
#include <string.h>
static uint32_t s;
static uint32_t next(void) { s ^= s << 13; s ^= s >> 17; s ^= s << 5; return s; }
int main(void) {
    s = 0x9E3779B9u;
    for (int i = 0; i < 40; ++i) printf("%02x", (uint8_t)(next() >> 24));      /* int8 input of 40 */
    for (int i = 0; i < 24; ++i) {                                              /* then float32 x24 */
        float v = (float)(int8_t)(next() >> 24) / 64.0f; uint8_t b[4]; memcpy(b, &v, 4);
        printf("%02x%02x%02x%02x", b[0], b[1], b[2], b[3]);
    }
    for (int i = 0; i < 3; ++i) {                                               /* int32 indices x3 */
        uint32_t v = next() >> 30; printf("%02x000000", (unsigned)v);
    }
    for (int i = 0; i < 2; ++i) {                                               /* int64 indices x2 */
        uint32_t v = next() >> 30; printf("%02x00000000000000", (unsigned)v);
    }
    printf("\n");
    return 0;
}
"""


def test_generator_matches_the_documented_c(tmp_path):
    gcc = require_tool("gcc")
    (tmp_path / "gen.c").write_text(C_GENERATOR)
    subprocess.run([gcc, "-std=c99", "-O2", str(tmp_path / "gen.c"), "-o", str(tmp_path / "gen")], check=True)
    expected = subprocess.run([str(tmp_path / "gen")], capture_output=True, text=True, check=True).stdout.strip()
    got = generate_inputs([IoTensor("i8", 0, 3, (40,), 40), IoTensor("f32", 1, 1, (2, 12), 96),
                           IoTensor("i32", 2, 6, (3,), 12), IoTensor("i64", 3, 7, (2,), 16)], DEFAULT_SEED)
    assert b"".join(got).hex() == expected
    assert {b for b in got[2] + got[3]} <= {0, 1, 2, 3}
