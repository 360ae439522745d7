"""Host-side half of the firmware contract (README.md in this folder).

Everything the build and the QEMU runner need to agree with the firmware in one place:

* the file list and the compiler/linker flags the firmware was validated with;
* :func:`make_context` / :func:`render_main_c`: the ``main.c.j2`` context, checked;
* :func:`read_plan_interface`: the few plan facts the context needs (num_tensors, the interface
  tensors and their byte sizes), read straight from the ``.tgrs`` header and tables;
* :func:`generate_inputs`: the firmware's deterministic input stream, bit for bit;
* :func:`summarize_outputs`: the ``OUTPUT`` line's n / checksum / min / max / nonmin;
* :func:`parse_log`: the firmware's log, with ``ok`` only when ``BENCH_END status=ok`` is there.

Pure Python (jinja2 only for rendering); importable as ``firmware_templates.contract`` with the
repository root on ``sys.path``.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TEMPLATE_DIR = Path(__file__).resolve().parent
MAIN_TEMPLATE = "main.c.j2"
LINKER_SCRIPT = TEMPLATE_DIR / "an547.ld"
# C sources of every firmware build (plus the rendered main.c and the runtime library).
SOURCES = (TEMPLATE_DIR / "startup.c", TEMPLATE_DIR / "semihosting.c")
# Test-only fault hooks: compile with -DFW_SELFTEST=<n> (README.md "Self-test builds").
SELFTEST_SOURCE = TEMPLATE_DIR / "selftest.c"

CPU_FLAGS = ("-mcpu=cortex-m55+nomve", "-mthumb", "-mfloat-abi=hard")
CFLAGS = CPU_FLAGS + (
    "-Os", "-g", "-std=c11", "-Wall", "-Wextra", "-Werror",
    "-ffunction-sections", "-fdata-sections",
)
CPPPATH = (TEMPLATE_DIR,)  # plus runtime/include for tgr.h
LINKFLAGS = CPU_FLAGS + (
    "--specs=nano.specs", "-nostartfiles", f"-T{LINKER_SCRIPT}", "-Wl,--gc-sections",
)
LIBS = ("m",)  # newlib-nano libc (memcpy, memset, ...) comes with the specs; libm for expf etc.

DEFAULT_INPUT_SEED = 0x9E3779B9
DEFAULT_PLAN_WINDOW_BYTES = 16 * 1024 * 1024
DEFAULT_STACK_BYTES = 16 * 1024
IO_ALIGN = 32  # each interface buffer in io_buffer starts on a 32-byte boundary
MAX_IO = 16  # interface inputs (and, separately, outputs) the firmware handles

EXIT_OK = 0
EXIT_BAD_PLAN = 2          # no plan / too large / load failure / arena, workspace or io too small
EXIT_HARDFAULT = 3
EXIT_UNEXPECTED_EXCEPTION = 4
EXIT_RUNTIME_ERROR = 7     # tgr_session_init or tgr_run failed
EXIT_CODES = {
    EXIT_OK: "ok",
    1: "QEMU error (bad command line, loader overlap) or plain SYS_EXIT failure",
    EXIT_BAD_PLAN: "bad plan or arena/workspace/io buffer too small",
    EXIT_HARDFAULT: "HardFault",
    EXIT_UNEXPECTED_EXCEPTION: "unexpected exception or interrupt",
    EXIT_RUNTIME_ERROR: "runtime error (tgr_session_init / tgr_run)",
    124: "timeout (coreutils timeout)",
    134: "QEMU abort (CPU lockup)",
}

DTYPE_FLOAT32 = 1
DTYPE_UINT8 = 2
DTYPE_INT8 = 3
DTYPE_INT32 = 6
DTYPE_BOOL = 9
DTYPE_SIZES = {DTYPE_FLOAT32: 4, DTYPE_UINT8: 1, DTYPE_INT8: 1, DTYPE_INT32: 4, DTYPE_BOOL: 1}
INPUT_DTYPES = (DTYPE_FLOAT32, DTYPE_UINT8, DTYPE_INT8)
OUTPUT_DTYPES = tuple(DTYPE_SIZES)
# Element sizes of every plan dtype (tgrs-format.md section 6.1), for iface_dtype conversion.
_PLAN_DTYPE_SIZES = {1: 4, 2: 1, 3: 1, 5: 2, 6: 4, 7: 8, 9: 1}

_MODEL_NAME_RE = re.compile(r"^[A-Za-z0-9_.+\-]{1,64}$")

REQUIRED_CONTEXT = (
    "model_name", "fast_arena_bytes", "slow_arena_bytes", "slow_in_ddr", "workspace_tensors",
    "plan_window_bytes", "io_buffer_bytes",
)
OPTIONAL_CONTEXT = {"input_seed": DEFAULT_INPUT_SEED}


def workspace_bytes(num_tensors: int) -> int:
    """``TGR_WORKSPACE_BYTES(n)`` for the 32-bit target (4-byte pointers)."""
    return num_tensors * (4 + 4 + 2) + 4


# --------------------------------------------------------------------------- plan interface


@dataclass(frozen=True)
class IoTensor:
    name: str
    dtype: int            # interface dtype (iface_dtype if set, else the tensor dtype)
    nbytes: int           # byte size in the interface dtype
    shape: tuple[int, ...]  # storage order (NHWC for rank-4 unless LINEAR)


@dataclass(frozen=True)
class PlanInterface:
    file_size: int
    version: int
    num_tensors: int
    num_ops: int
    num_stages: int
    budget: int
    inputs: tuple[IoTensor, ...]
    outputs: tuple[IoTensor, ...]


def read_plan_interface(data: bytes) -> PlanInterface:
    """Header counts and interface tensors of a ``.tgrs`` plan (tgrs-format.md sections 4-6, 9).

    Only what the firmware context needs; this is not a validator (the runtime is).
    """
    if len(data) < 48 or data[:4] != b"TGRS":
        raise ValueError("not a TiGrIS plan (bad magic or shorter than the 48-byte header)")
    (_, version, file_size, dir_off, num_tensors, num_ops, num_stages, _tiles, budget, _peak,
     _name, io_off, n_in, n_out, _nw, _nq, _flags) = struct.unpack_from(
        "<4sIIIHHHHIIIHBBHHI", data, 0)
    if file_size != len(data):
        raise ValueError(f"file_size field {file_size} != buffer length {len(data)}")
    sections: dict[int, int] = {}
    off = dir_off
    while True:
        kind, sec = struct.unpack_from("<II", data, off)
        if kind == 0:
            break
        sections[kind] = sec
        off += 8
    try:
        tensors, index_pool, shape_pool, strings = (sections[k] for k in (1, 5, 6, 7))
    except KeyError as exc:
        raise ValueError(f"plan lacks section {exc.args[0]}") from None

    def cstr(pos: int) -> str:
        start = strings + pos
        end = data.index(b"\0", start)
        return data[start:end].decode("utf-8", errors="replace")

    def io_tensor(k: int) -> IoTensor:
        t = struct.unpack_from("<H", data, index_pool + 2 * (io_off + k))[0]
        name_str, size_bytes, shape_off, ndim, dtype, _flags2, _q, iface = struct.unpack_from(
            "<IIHBBBHB", data, tensors + 16 * t)
        shape = struct.unpack_from(f"<{ndim}i", data, shape_pool + 4 * shape_off)
        idt = iface or dtype
        if dtype not in _PLAN_DTYPE_SIZES or idt not in _PLAN_DTYPE_SIZES:
            raise ValueError(f"tensor {t}: unknown dtype {dtype}/{iface}")
        nbytes = size_bytes // _PLAN_DTYPE_SIZES[dtype] * _PLAN_DTYPE_SIZES[idt]
        return IoTensor(cstr(name_str), idt, nbytes, tuple(shape))

    return PlanInterface(
        file_size=file_size, version=version, num_tensors=num_tensors, num_ops=num_ops,
        num_stages=num_stages, budget=budget,
        inputs=tuple(io_tensor(k) for k in range(n_in)),
        outputs=tuple(io_tensor(n_in + k) for k in range(n_out)),
    )


def io_buffer_bytes(iface: PlanInterface) -> int:
    """Smallest ``io_buffer_bytes`` for a plan: the plain sum of the interface byte sizes (the
    template adds the slack for aligning each buffer to 32 bytes itself)."""
    return sum(t.nbytes for t in (*iface.inputs, *iface.outputs))


# --------------------------------------------------------------------------- template


def make_context(
    model_name: str,
    plan: bytes | PlanInterface,
    fast_arena_bytes: int,
    slow_arena_bytes: int,
    slow_in_ddr: bool,
    plan_window_bytes: int = DEFAULT_PLAN_WINDOW_BYTES,
    input_seed: int = DEFAULT_INPUT_SEED,
) -> dict[str, Any]:
    """The full ``main.c.j2`` context for `plan` (raw bytes or an already read interface)."""
    iface = plan if isinstance(plan, PlanInterface) else read_plan_interface(plan)
    return check_context({
        "model_name": model_name,
        "fast_arena_bytes": fast_arena_bytes,
        "slow_arena_bytes": slow_arena_bytes,
        "slow_in_ddr": bool(slow_in_ddr),
        "workspace_tensors": iface.num_tensors,
        "plan_window_bytes": plan_window_bytes,
        "io_buffer_bytes": io_buffer_bytes(iface),
        "input_seed": input_seed,
    })


def check_context(context: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a template context and fill the optional defaults; raises ValueError."""
    missing = [k for k in REQUIRED_CONTEXT if k not in context]
    if missing:
        raise ValueError(f"main.c.j2 context lacks {', '.join(missing)}")
    unknown = sorted(set(context) - set(REQUIRED_CONTEXT) - set(OPTIONAL_CONTEXT))
    if unknown:
        raise ValueError(f"main.c.j2 context has unknown keys {', '.join(unknown)}")
    ctx = {**OPTIONAL_CONTEXT, **context}
    if not isinstance(ctx["model_name"], str) or not _MODEL_NAME_RE.match(ctx["model_name"]):
        raise ValueError(f"model_name must match {_MODEL_NAME_RE.pattern}: {ctx['model_name']!r}")
    limits = {
        "fast_arena_bytes": 2**32 - 1, "slow_arena_bytes": 2**32 - 1,
        "workspace_tensors": 65535, "io_buffer_bytes": 2**32 - 1,
        "plan_window_bytes": 2**31, "input_seed": 2**32 - 1,
    }
    for key, hi in limits.items():
        value = ctx[key]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= hi:
            raise ValueError(f"{key} must be an int in [0, {hi}], got {value!r}")
    if ctx["input_seed"] == 0:
        raise ValueError("input_seed must be non-zero (xorshift32 stays at 0 forever)")
    if ctx["plan_window_bytes"] < 48 or ctx["plan_window_bytes"] % 16:
        raise ValueError("plan_window_bytes must be a multiple of 16 and at least 48")
    if not isinstance(ctx["slow_in_ddr"], bool):
        raise ValueError("slow_in_ddr must be a bool")
    return ctx


def render_main_c(context: Mapping[str, Any]) -> str:
    """Render ``main.c.j2`` with a checked context (StrictUndefined)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    return env.get_template(MAIN_TEMPLATE).render(**check_context(context))


# --------------------------------------------------------------------------- inputs


def input_stream(seed: int = DEFAULT_INPUT_SEED) -> Iterator[int]:
    """The firmware's xorshift32 stream: yields next() values (the seed itself is not yielded)."""
    s = seed & 0xFFFFFFFF
    while True:
        s ^= (s << 13) & 0xFFFFFFFF
        s ^= s >> 17
        s ^= (s << 5) & 0xFFFFFFFF
        yield s


def generate_inputs(
    inputs: Sequence[IoTensor], seed: int = DEFAULT_INPUT_SEED
) -> list[bytes]:
    """The exact bytes the firmware feeds each interface input (one stream over all inputs)."""
    stream = input_stream(seed)
    out: list[bytes] = []
    for t in inputs:
        if t.dtype in (DTYPE_INT8, DTYPE_UINT8):
            out.append(bytes(next(stream) >> 24 for _ in range(t.nbytes)))
        elif t.dtype == DTYPE_FLOAT32:
            vals = []
            for _ in range(t.nbytes // 4):
                b = next(stream) >> 24
                vals.append((b - 256 if b >= 128 else b) / 64.0)
            out.append(struct.pack(f"<{len(vals)}f", *vals))
        else:
            raise ValueError(f"input {t.name}: dtype {t.dtype} has no generator (firmware exits 2)")
    return out


# --------------------------------------------------------------------------- outputs


def fnv1a32(data: bytes, h: int = 0x811C9DC5) -> int:
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def _f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def _f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def summarize_outputs(outputs: Sequence[tuple[int, bytes]]) -> dict[str, Any]:
    """n / checksum / min / max / nonmin of ``(dtype, bytes)`` outputs, as the firmware prints
    them: ints as Python ints; in the float domain min/max as their IEEE-754 bit patterns."""
    float_domain = any(dt == DTYPE_FLOAT32 for dt, _ in outputs)
    values: list[float | int] = []
    h = 0x811C9DC5
    for dt, raw in outputs:
        h = fnv1a32(raw, h)
        if dt == DTYPE_FLOAT32:
            values += struct.unpack(f"<{len(raw) // 4}f", raw[: len(raw) // 4 * 4])
        elif dt == DTYPE_INT32:
            values += struct.unpack(f"<{len(raw) // 4}i", raw[: len(raw) // 4 * 4])
        elif dt == DTYPE_INT8:
            values += struct.unpack(f"<{len(raw)}b", raw)
        elif dt in (DTYPE_UINT8, DTYPE_BOOL):
            values += list(raw)
        else:
            raise ValueError(f"output dtype {dt} is not supported by the firmware")
    if float_domain:
        values = [_f32(float(v)) for v in values]
    lo = hi = None
    for v in values:
        if float_domain and math.isnan(v):
            continue
        if lo is None or v < lo:
            lo = v
        if hi is None or v > hi:
            hi = v
    if float_domain:
        if lo is None:
            lo_p = hi_p = 0x7FC00000 if values else _f32_bits(0.0)
            nonmin = len(values)
        else:
            lo_p, hi_p = _f32_bits(lo), _f32_bits(hi)
            nonmin = sum(1 for v in values if not v == lo)
        return {"n": len(values), "checksum": h, "min": lo_p, "max": hi_p, "nonmin": nonmin,
                "float_domain": True}
    lo = 0 if lo is None else lo
    hi = 0 if hi is None else hi
    return {"n": len(values), "checksum": h, "min": lo, "max": hi,
            "nonmin": sum(1 for v in values if v != lo), "float_domain": False}


# --------------------------------------------------------------------------- log


@dataclass
class BenchLog:
    model: str | None = None
    ops: int | None = None
    stages: int | None = None
    tensors: int | None = None
    budget: int | None = None
    output: dict[str, int] = field(default_factory=dict)
    arena: dict[str, int] = field(default_factory=dict)
    output_bytes: list[tuple[int, str, bytes]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)
    starts: int = 0
    ended: bool = False

    @property
    def ok(self) -> bool:
        """True only for one complete, self-consistent run (the exit status is checked apart)."""
        if not (self.ended and self.starts == 1 and not self.errors and not self.faults):
            return False
        if not self.output or not self.arena:
            return False
        joined = b"".join(raw for _, _, raw in self.output_bytes)
        return fnv1a32(joined) == self.output.get("checksum")


_KV_RE = re.compile(r"(\w+)=(-?(?:0x[0-9a-fA-F]+|\d+))")


def _kv(text: str) -> dict[str, int]:
    return {k: int(v, 0) for k, v in _KV_RE.findall(text)}


def parse_log(text: str) -> BenchLog:
    """Parse the firmware's semihosting output (README.md "Printed lines")."""
    log = BenchLog()
    for line in text.splitlines():
        line = line.rstrip("\r")
        if line.startswith("BENCH_START "):
            log.starts += 1
            log.model = line[len("BENCH_START "):].split(" @ ")[0]
        elif line.startswith("Ops: "):
            m = re.match(r"Ops: (\d+)  Stages: (\d+)  Tensors: (\d+)  Budget: (\d+) bytes", line)
            if m:
                log.ops, log.stages, log.tensors, log.budget = map(int, m.groups())
        elif line.startswith("OUTPUT "):
            log.output = _kv(line)
        elif line.startswith("ARENA "):
            log.arena = _kv(line)
        elif line.startswith("OUTPUT_BYTES "):
            parts = line.split(" ")
            hexdata = parts[3] if len(parts) > 3 else ""
            raw = bytes.fromhex(hexdata)
            log.output_bytes.append((int(parts[1]), parts[2], raw))
        elif line.startswith("ERROR"):
            log.errors.append(line)
        elif line.startswith(("HARDFAULT", "UNEXPECTED_EXCEPTION")):
            log.faults.append(line)
        elif line.startswith("BENCH_END"):
            log.ended = line.strip() == "BENCH_END status=ok" or line.startswith("BENCH_END status=ok ")
    return log
