"""Zero, tiny and too-small arenas: refused with their own error, never a wrong result (issue 6 item 2).

Through the public C API of our library (ctypes on ``tgr_plan_load``, ``tgr_session_init``,
``tgr_run``; tgr.h structs are opaque, over-allocated buffers) and through the host shim
(``tigris.runtime.Session(..., slow_capacity=N)`` on our library):

* a fast arena below ``tgr_fast_arena_required`` (0, 1, 31 bytes, one byte short, the budget
  without the LZ4 weight reserve, enough bytes but a misaligned start) and a workspace below
  ``tgr_workspace_required`` are refused by ``tgr_session_init`` with TGR_ERR_ARENA and a
  message naming the requirement, so no kernel can run;
* NULL arenas and overlapping fast/slow arenas are TGR_ERR_ARGUMENT;
* every slow arena too small for the inference is refused by ``tgr_session_init`` itself, with
  TGR_ERR_ARENA ("slow arena too small: tensor ..."): session init rehearses one inference's
  allocations without running kernels (docs/execution.md#session-init-and-the-rehearsal), so no
  kernel ever runs on an arena that cannot finish. A slow arena of 0 or a few bytes fails on the
  first model input;
* a slow arena of any size from 0 to the host default is either refused at ``tgr_session_init``
  or accepted, and an accepted one runs to the outputs of a large slow arena: ``tgr_run`` never
  fails halfway. How much slow memory a plan needs depends on the arena sizes (compaction is
  lazy) but not on the input values, so the rehearsal meets the same shortfall a run would,
  including one that only a later stage hits. The inverted residual at 17K is the case the
  fuzzer found (tests/fuzz/regressions): a compaction used to overwrite a stage input's slow
  copy and the run "succeeded" with wrong outputs; 2048..4095 slow bytes are now refused at
  init;
* through the host shim, a tiny ``slow_capacity`` makes every ``run`` fail with "slow arena too
  small" (the shim keeps the init refusal, as the reference reports it), a sufficient one runs.
"""

from __future__ import annotations

import ctypes as ct
from pathlib import Path

import numpy as np
import pytest

from .plantools import _TgrError

tigris_runtime = pytest.importorskip("tigris.runtime")

TGR_OK, TGR_ERR_ARGUMENT, TGR_ERR_ARENA = 0, 1, 16
OPAQUE = 8192          # >= sizeof(tgr_plan), sizeof(tgr_session)
ALIGN = 32             # TGR_TENSOR_ALIGN of the host build

PLANS = {
    "ds_cnn_20K": lambda c: c.ds_cnn_plan("20K"),                      # one untiled stage
    "ds_cnn_4K": lambda c: c.ds_cnn_plan("4K"),                        # chains + by-input
    "ds_cnn_1K": lambda c: c.ds_cnn_plan("1K"),                        # stripes, 2-D tiles
    "ds_cnn_64K_lz4": lambda c: c.ds_cnn_plan("64K", ["-c", "lz4"]),   # fast = budget + reserve
    "inverted_residual_17K": lambda c: c.case_plan("inverted_residual", "17K"),
}


class _IoInfo(ct.Structure):
    _fields_ = [("name", ct.c_char_p), ("bytes", ct.c_uint32), ("dtype", ct.c_uint8), ("rank", ct.c_uint8),
                ("dims", ct.c_int32 * 8), ("tensor", ct.c_uint16)]


class Api:
    """The C API of one loaded plan, with caller-owned arenas."""

    def __init__(self, library: Path, data: bytes) -> None:
        lib = ct.CDLL(str(library))
        self.lib = lib
        for name, res, args in (
            ("tgr_plan_load", ct.c_int, [ct.c_void_p, ct.c_void_p, ct.c_uint32, ct.c_void_p]),
            ("tgr_fast_arena_required", ct.c_uint32, [ct.c_void_p]),
            ("tgr_workspace_required", ct.c_uint32, [ct.c_void_p]),
            ("tgr_plan_io_count", ct.c_uint32, [ct.c_void_p, ct.c_int]),
            ("tgr_plan_io_info", ct.c_int, [ct.c_void_p, ct.c_int, ct.c_uint32, ct.c_void_p]),
            ("tgr_session_init", ct.c_int, [ct.c_void_p, ct.c_void_p, ct.c_void_p, ct.c_uint32, ct.c_void_p,
                                            ct.c_uint32, ct.c_void_p, ct.c_uint32, ct.c_void_p]),
            ("tgr_run", ct.c_int, [ct.c_void_p, ct.c_void_p, ct.c_void_p, ct.c_uint32, ct.c_void_p, ct.c_void_p,
                                   ct.c_uint32, ct.c_void_p]),
        ):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        self.data = (ct.c_uint8 * len(data)).from_buffer_copy(data)
        self.plan = ct.create_string_buffer(OPAQUE)
        err = _TgrError()
        assert lib.tgr_plan_load(self.plan, self.data, len(data), ct.byref(err)) == TGR_OK, err.message
        self.need_fast = lib.tgr_fast_arena_required(self.plan)
        self.need_work = lib.tgr_workspace_required(self.plan)
        self.io = [[self._info(k, i) for i in range(lib.tgr_plan_io_count(self.plan, k))] for k in (0, 1)]
        rng = np.random.default_rng(5)
        self.inputs = [(ct.c_uint8 * info.bytes).from_buffer_copy(rng.integers(0, 256, info.bytes, np.uint8).tobytes())
                       for info in self.io[0]]
        self.outputs = [(ct.c_uint8 * info.bytes)() for info in self.io[1]]

    def _info(self, is_output: int, index: int) -> _IoInfo:
        info = _IoInfo()
        assert self.lib.tgr_plan_io_info(self.plan, is_output, index, ct.byref(info)) == TGR_OK
        return info

    def session(self, fast: int, slow: int, work: int | None = None, fast_skew: int = 0,
                buffers=None) -> tuple[int, str, object]:
        """tgr_session_init over fresh arenas; the fast one starts `fast_skew` bytes after a
        32-byte boundary. Returns (status, message, session buffer + arenas)."""
        work = self.need_work if work is None else work
        if buffers is None:
            raw = ct.create_string_buffer(fast + fast_skew + ALIGN)
            base = (ct.addressof(raw) + ALIGN - 1) // ALIGN * ALIGN + fast_skew
            slow_buf = ct.create_string_buffer(max(slow, 1))
            work_buf = ct.create_string_buffer(max(work, 1))
            buffers = (raw, base, slow_buf, work_buf)
        raw, base, slow_buf, work_buf = buffers
        session = ct.create_string_buffer(OPAQUE)
        err = _TgrError()
        st = self.lib.tgr_session_init(session, self.plan, base, fast, slow_buf, slow, work_buf, work, ct.byref(err))
        return st, err.message.decode(), (session, buffers)

    def run(self, keep) -> tuple[int, str]:
        session = keep[0]
        ins = (ct.c_void_p * len(self.inputs))(*[ct.addressof(b) for b in self.inputs])
        in_sizes = (ct.c_uint32 * len(self.inputs))(*[len(b) for b in self.inputs])
        outs = (ct.c_void_p * len(self.outputs))(*[ct.addressof(b) for b in self.outputs])
        out_sizes = (ct.c_uint32 * len(self.outputs))(*[len(b) for b in self.outputs])
        err = _TgrError()
        st = self.lib.tgr_run(session, ins, in_sizes, len(ins), outs, out_sizes, len(outs), ct.byref(err))
        return st, err.message.decode()

    def poison_outputs(self, value: int) -> None:
        for b in self.outputs:
            ct.memset(b, value, len(b))

    def output_bytes(self) -> list[bytes]:
        return [bytes(b) for b in self.outputs]

    def default_slow(self) -> int:
        """The host shim's default: 2 x sum(size_bytes + 32) over all tensors."""
        from tests.opmodels import read_plan

        plan = read_plan(bytes(self.data))
        return 2 * sum(t["size_bytes"] + 32 for t in plan["tensors"])


@pytest.fixture(scope="module")
def api(plan_cache, our_library: Path):
    cache: dict[str, Api] = {}

    def get(name: str) -> Api:
        if name not in cache:
            cache[name] = Api(our_library, PLANS[name](plan_cache).read_bytes())
        return cache[name]

    return get


# ----------------------------------------------------------------------------- fast arena, workspace

@pytest.mark.parametrize("name", ["ds_cnn_20K", "ds_cnn_64K_lz4"])
def test_fast_arena_below_requirement_refused_at_session_init(name: str, api) -> None:
    a = api(name)
    sizes = [0, 1, ALIGN - 1, a.need_fast - 1]
    if name.endswith("lz4"):
        from tests.opmodels import read_plan

        budget = read_plan(bytes(a.data))["budget"]
        assert a.need_fast > budget, "the LZ4 plan should need its weight reserve on top of the budget"
        sizes.append(budget)
    for fast in sizes:
        st, msg, _ = a.session(fast, slow=a.default_slow())
        assert st == TGR_ERR_ARENA, (fast, st, msg)
        assert msg.startswith(f"fast arena too small: plan needs {a.need_fast} bytes"), msg


def test_fast_arena_misaligned_start(api) -> None:
    """Usable memory starts at the first 32-byte boundary: the requirement from a misaligned
    start is refused, the requirement plus 31 bytes runs."""
    a = api("ds_cnn_20K")
    st, msg, _ = a.session(a.need_fast, slow=a.default_slow(), fast_skew=1)
    assert st == TGR_ERR_ARENA and f"{a.need_fast - 31} usable of {a.need_fast} given" in msg, msg
    st, msg, keep = a.session(a.need_fast + ALIGN - 1, slow=a.default_slow(), fast_skew=1)
    assert st == TGR_OK, msg
    assert a.run(keep) == (TGR_OK, "")


def test_workspace_below_requirement_refused_at_session_init(api) -> None:
    a = api("ds_cnn_20K")
    for work in (0, 1, a.need_work - 8 - 1):  # the requirement includes 8 bytes of alignment slack
        st, msg, _ = a.session(a.need_fast, slow=a.default_slow(), work=work)
        assert st == TGR_ERR_ARENA and msg.startswith(f"workspace too small: plan needs {a.need_work} bytes"), msg


def test_null_and_overlapping_arenas_are_argument_errors(api) -> None:
    a = api("ds_cnn_20K")
    err = _TgrError()
    session = ct.create_string_buffer(OPAQUE)
    buf = ct.create_string_buffer(a.need_fast * 3)
    slow = ct.create_string_buffer(64)
    st = a.lib.tgr_session_init(session, a.plan, None, a.need_fast, slow, 64, buf, a.need_work, ct.byref(err))
    assert st == TGR_ERR_ARGUMENT, err.message
    # slow arena inside the fast one
    st = a.lib.tgr_session_init(session, a.plan, buf, a.need_fast * 2, ct.addressof(buf) + a.need_fast, a.need_fast,
                                slow, a.need_work, ct.byref(err))
    assert st == TGR_ERR_ARGUMENT and b"overlap" in err.message, err.message


# ----------------------------------------------------------------------------- slow arena

@pytest.mark.parametrize("slow", [0, 1, 32, 64])
def test_empty_or_tiny_slow_arena_refused_at_session_init(slow: int, api) -> None:
    """Session init rehearses the run's allocations, so no kernel ever runs on an arena that
    cannot finish the inference."""
    a = api("ds_cnn_20K")
    st, msg, _ = a.session(a.need_fast, slow=slow)
    assert st == TGR_ERR_ARENA and msg.startswith("slow arena too small: tensor "), msg


@pytest.mark.parametrize("name", sorted(PLANS))
def test_slow_arena_sweep_gives_the_result_or_an_init_refusal(name: str, api) -> None:
    """Every slow size from 0 to the host default: session init refuses it (TGR_ERR_ARENA), or the
    run succeeds with the large arena's outputs. A run never fails halfway."""
    a = api(name)
    big = a.default_slow()
    st, msg, keep = a.session(a.need_fast, slow=big)
    assert st == TGR_OK, msg
    assert a.run(keep) == (TGR_OK, "")
    expected = a.output_bytes()
    step = max(ALIGN, big // 160 // ALIGN * ALIGN)
    ok = refused = 0
    for slow in list(range(0, big, step)) + [big]:
        st, msg, keep = a.session(a.need_fast, slow=slow)
        if st != TGR_OK:
            assert st == TGR_ERR_ARENA and msg.startswith("slow arena too small"), (slow, st, msg)
            refused += 1
            continue
        a.poison_outputs(0x5A)
        assert a.run(keep) == (TGR_OK, ""), f"slow arena of {slow} bytes: accepted at init, failed in the run"
        assert a.output_bytes() == expected, f"slow arena of {slow} bytes: run succeeded with other outputs"
        ok += 1
    assert ok and refused, (ok, refused)


def test_inverted_residual_slow_arena_between_one_and_two_tensors(api) -> None:
    """The fuzzer's finding: stage 0 spills its output (2048 bytes) while stage input 0 (2048
    bytes, read again by the Add of stage 1) is in slow memory. 2048..4095 bytes cannot hold
    both: refused with TGR_ERR_ARENA, where the run used to succeed with the input overwritten."""
    a = api("inverted_residual_17K")
    for slow in (2048, 3000, 4064):
        st, msg, _ = a.session(a.need_fast, slow=slow)
        assert st == TGR_ERR_ARENA and msg.startswith("slow arena too small"), (slow, msg)


# ----------------------------------------------------------------------------- host shim

def test_host_shim_slow_capacity(plan_cache, our_library: Path) -> None:
    """tigris_host_create sizes the fast arena from the plan and takes the caller's slow
    capacity: a tiny one is reported by tigris_host_run (and again on the next run), a
    sufficient one runs."""
    from tests.opmodels import random_inputs

    from .oracle import host_library

    plan = PLANS["ds_cnn_20K"](plan_cache)
    with host_library(our_library):
        session = tigris_runtime.Session(str(plan), slow_capacity=16)
    with session:
        assert session.memory["slow_capacity_bytes"] == 16
        assert session.memory["fast_capacity_bytes"] == 20480
        feeds = random_inputs(session, np.random.default_rng(1))
        for _ in range(2):
            with pytest.raises(tigris_runtime.RuntimeError, match="slow arena too small"):
                session.run(feeds)
    with host_library(our_library):
        session = tigris_runtime.Session(str(plan), slow_capacity=4096)
    with session:
        assert session.run(feeds)
