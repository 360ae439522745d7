"""Read what the build needs from a ``.tgrs`` plan: header counts, interface tensors, arena need.

The build sizes the firmware's arenas and I/O buffers, generates the deterministic input and
prints the "Ops/Stages/Tensors/Budget" expectations from the plan itself, so the plan stays the
only thing the firmware knows about the model: nothing model-specific but its name and a few
sizes is compiled in. This is a small, independent reader of the wire format (docs/plan-format.md:
header, section table, tensors, stages, index and shape pools, strings, weight blocks); it
validates only what it reads and leaves full validation to the runtime's loader.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from math import prod
from pathlib import Path

from .errors import TigrisError

MAGIC = b"TGRS"
HEADER = struct.Struct("<4sIIIHHHHIIIHBBHHI")  # 48 bytes
TENSOR = struct.Struct("<IIHBBBHB")  # 16 bytes
STAGE = struct.Struct("<I12H")  # 28 bytes
WEIGHT_BLOCK = struct.Struct("<HHHHIII")  # 20 bytes

SEC_TENSORS = 1
SEC_STAGES = 3
SEC_INDEX_POOL = 5
SEC_SHAPE_POOL = 6
SEC_STRINGS = 7
SEC_WEIGHT_BLOCKS = 10
SEC_STATE = 12

#: ONNX dtype code -> (name, element size in bytes) for interface tensors.
DTYPES: dict[int, tuple[str, int]] = {
    1: ("float32", 4),
    2: ("uint8", 1),
    3: ("int8", 1),
    5: ("int16", 2),
    6: ("int32", 4),
    7: ("int64", 8),
    9: ("bool", 1),
}

NO_CHAIN = 0xFFFF


@dataclass(frozen=True)
class IoTensor:
    """An interface tensor as the caller sees it (interface dtype, storage axis order)."""

    name: str
    index: int
    dtype: int
    shape: tuple[int, ...]
    size_bytes: int

    @property
    def dtype_name(self) -> str:
        return DTYPES[self.dtype][0]

    @property
    def elements(self) -> int:
        return prod(self.shape) if self.shape else 1


@dataclass(frozen=True)
class PlanInfo:
    """Header facts and interface of one plan."""

    version: int
    file_size: int
    num_tensors: int
    num_ops: int
    num_stages: int
    num_tile_plans: int
    budget: int
    peak: int
    model_name: str
    flags: int
    inputs: tuple[IoTensor, ...]
    outputs: tuple[IoTensor, ...]
    weight_block_sizes: tuple[tuple[int, int], ...] = field(default=())  # (stage, uncompressed)
    chains: tuple[tuple[int, ...], ...] = field(default=())  # stage indices of each chain
    state_bytes: int = 0  # the state buffer of a plan with state variables (schema 10), else 0

    def weight_reserve(self, align: int) -> int:
        """Fast bytes for decompressed LZ4 weight blocks (0 for uncompressed plans).

        Mirrors the format's rule (docs/plan-format.md, weight blocks): the largest block rounded
        up to the tensor alignment, or for a chain the sum over its member stages if that is larger.
        """
        if not self.weight_block_sizes:
            return 0
        per_stage: dict[int, int] = {}
        for stage, size in self.weight_block_sizes:
            per_stage[stage] = per_stage.get(stage, 0) + _align_up(size, align)
        reserve = max(per_stage.values())
        for chain in self.chains:
            reserve = max(reserve, sum(per_stage.get(s, 0) for s in chain))
        return reserve

    def fast_arena_required(self, align: int) -> int:
        """Fast arena the plan needs: the compile budget plus the weight reserve.

        Same figure as the runtime's ``tgr_fast_arena_required`` for a given ``TGR_TENSOR_ALIGN``.
        """
        return self.budget + self.weight_reserve(align)

    @property
    def io_buffer_bytes(self) -> int:
        """Bytes needed to hold every interface input and output at once."""
        return sum(t.size_bytes for t in self.inputs) + sum(t.size_bytes for t in self.outputs)


def _align_up(value: int, align: int) -> int:
    return (value + align - 1) // align * align


def read_plan(source: str | Path | bytes) -> PlanInfo:
    """Parse the header, section directory and interface tensors of a plan.

    Raises :class:`TigrisError` naming the file and the inconsistency for anything that is not
    a readable plan (wrong magic, truncated, sizes that disagree), so ``model=foo.tgrs`` pointing
    at the wrong file fails with a sentence rather than a ``struct.error``.
    """
    if isinstance(source, (bytes, bytearray)):
        data, label = bytes(source), "plan"
    else:
        label = str(source)
        try:
            data = Path(source).read_bytes()
        except OSError as exc:
            raise TigrisError(f"{label}: cannot read plan ({exc.strerror})") from None

    def fail(reason: str) -> TigrisError:
        return TigrisError(f"{label}: not a usable .tgrs plan: {reason}")

    if len(data) < HEADER.size:
        raise fail(f"{len(data)} bytes is shorter than the 48-byte header")
    (magic, version, file_size, dir_off, n_tensors, n_ops, n_stages, n_tiles, budget, peak,
     name_off, io_off, n_in, n_out, _n_weights, _n_quant, flags) = HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise fail(f"magic is {magic!r}, expected b'TGRS'")
    if file_size != len(data):
        raise fail(f"header says {file_size} bytes, file has {len(data)}")
    if not 2 <= version <= 10:
        raise fail(f"schema version {version} is outside 2..10")

    sections: dict[int, int] = {}
    pos = dir_off
    while True:
        if pos + 8 > len(data):
            raise fail("section directory runs past the end of the file")
        sec_type, sec_off = struct.unpack_from("<II", data, pos)
        pos += 8
        if sec_type == 0:
            break
        if sec_off > len(data):
            raise fail(f"section {sec_type} starts past the end of the file")
        sections[sec_type] = sec_off
    starts = sorted(set(sections.values()) | {len(data)})

    def extent(sec_type: int) -> tuple[int, int]:
        if sec_type not in sections:
            raise fail(f"required section {sec_type} is missing")
        start = sections[sec_type]
        end = min(s for s in starts if s > start) if start < len(data) else start
        return start, end

    t_start, t_end = extent(SEC_TENSORS)
    if t_start + n_tensors * TENSOR.size > t_end:
        raise fail(f"{n_tensors} tensor records do not fit their section")
    ip_start, ip_end = extent(SEC_INDEX_POOL)
    sp_start, sp_end = extent(SEC_SHAPE_POOL)
    s_start, s_end = extent(SEC_STRINGS)

    def string(offset: int) -> str:
        at = s_start + offset
        if not s_start <= at < s_end:
            raise fail(f"string offset {offset} is outside the string section")
        end = data.find(b"\0", at, s_end)
        if end < 0:
            raise fail("unterminated string")
        return data[at:end].decode("utf-8", errors="replace")

    def index(i: int) -> int:
        at = ip_start + 2 * i
        if at + 2 > ip_end:
            raise fail(f"index pool entry {i} is outside the pool")
        return struct.unpack_from("<H", data, at)[0]

    def io_tensor(tensor_index: int) -> IoTensor:
        if tensor_index >= n_tensors:
            raise fail(f"interface tensor {tensor_index} >= {n_tensors} tensors")
        name_str, _size, shape_off, ndim, dtype, _flags, _quant, iface = TENSOR.unpack_from(
            data, t_start + TENSOR.size * tensor_index)
        at = sp_start + 4 * shape_off
        if at + 4 * ndim > sp_end:
            raise fail(f"shape of tensor {tensor_index} is outside the shape pool")
        shape = struct.unpack_from(f"<{ndim}i", data, at)
        caller_dtype = iface or dtype
        if caller_dtype not in DTYPES:
            raise fail(f"interface tensor {tensor_index} has unsupported dtype {caller_dtype}")
        nbytes = (prod(shape) if shape else 1) * DTYPES[caller_dtype][1]
        return IoTensor(string(name_str), tensor_index, caller_dtype, tuple(shape), nbytes)

    inputs = tuple(io_tensor(index(io_off + i)) for i in range(n_in))
    outputs = tuple(io_tensor(index(io_off + n_in + i)) for i in range(n_out))

    chains: dict[int, list[int]] = {}
    if n_stages and SEC_STAGES in sections:
        st_start, st_end = extent(SEC_STAGES)
        if st_start + n_stages * STAGE.size > st_end:
            raise fail(f"{n_stages} stage records do not fit their section")
        for s in range(n_stages):
            fields = STAGE.unpack_from(data, st_start + STAGE.size * s)
            chain_id = fields[9]
            if chain_id != NO_CHAIN:
                chains.setdefault(chain_id, []).append(s)

    blocks: list[tuple[int, int]] = []
    if SEC_WEIGHT_BLOCKS in sections:
        wb_start, wb_end = extent(SEC_WEIGHT_BLOCKS)
        if wb_start + 4 > wb_end:
            raise fail("weight block section is truncated")
        n_blocks, _ctype = struct.unpack_from("<HH", data, wb_start)
        if wb_start + 4 + n_blocks * WEIGHT_BLOCK.size > wb_end:
            raise fail(f"{n_blocks} weight block records do not fit their section")
        for b in range(n_blocks):
            stage, _first, _count, _pad, _off, _csize, usize = WEIGHT_BLOCK.unpack_from(
                data, wb_start + 4 + WEIGHT_BLOCK.size * b)
            blocks.append((stage, usize))

    state_bytes = 0
    if SEC_STATE in sections:
        state_start, state_end = extent(SEC_STATE)
        if state_start + 8 > state_end:
            raise fail("state section is truncated")
        count = struct.unpack_from("<H", data, state_start)[0]
        if state_start + 8 + 16 * count > state_end:
            raise fail(f"{count} state variables do not fit their section")
        # what the variables take (the runtime's tgr_state_required), not the header's figure,
        # which may be larger
        state_bytes = sum((struct.unpack_from("<I", data, state_start + 8 + 16 * i + 8)[0] + 3) // 4 * 4
                          for i in range(count))

    return PlanInfo(
        version=version,
        file_size=file_size,
        num_tensors=n_tensors,
        num_ops=n_ops,
        num_stages=n_stages,
        num_tile_plans=n_tiles,
        budget=budget,
        peak=peak,
        model_name=string(name_off),
        flags=flags,
        inputs=inputs,
        outputs=outputs,
        weight_block_sizes=tuple(blocks),
        chains=tuple(tuple(c) for c in chains.values()),
        state_bytes=state_bytes,
    )
