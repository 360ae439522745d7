"""Byte-level access to ``.tgrs`` plans for mutation tests, and a direct line to our loader.

``PlanView`` locates every record of a plan (header, section directory, tensors, ops, stages,
index/shape pools, weight entries, quant entries and data, attribute entries) using the layouts
of docs/plan-format.md#record-layouts-at-a-glance, with ``read_binary_plan`` (the compiler's own
reader) as the decoded cross-reference. ``patch`` returns a copy of the plan with one field
rewritten, so a mutation test reads as "this field, this value" and every other byte stays as the
compiler wrote it.

``LoaderProbe`` calls our library's ``tgr_plan_load`` (and ``tgr_plan_bind``) through ctypes to see the ``tgr_status``
that the host ABI hides (``tigris_host_create`` only returns the message). It exists because a
message substring alone cannot tell "refused for the right reason" from "refused by an earlier,
unrelated check that happens to print similar words".
"""

from __future__ import annotations

import ctypes as ct
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import Any

HEADER_SIZE = 48
TENSOR_SIZE = 16
OP_SIZE = 38
STAGE_SIZE = 28
WEIGHT_ENTRY_SIZE = 12
QUANT_ENTRY_SIZE = 16
ATTR_ENTRY_SIZE = 8

SEC_TENSORS, SEC_OPS, SEC_STAGES, SEC_TILE_PLANS, SEC_INDEX_POOL, SEC_SHAPE_POOL = 1, 2, 3, 4, 5, 6
SEC_STRINGS, SEC_WEIGHTS, SEC_QUANT_PARAMS, SEC_WEIGHT_BLOCKS, SEC_OP_ATTRIBUTES = 7, 8, 9, 10, 11

#: header field -> (byte offset, struct format), docs/plan-format.md#header
HEADER_FIELDS = {
    "magic": (0, "4s"), "version": (4, "<I"), "file_size": (8, "<I"), "section_dir_off": (12, "<I"),
    "num_tensors": (16, "<H"), "num_ops": (18, "<H"), "num_stages": (20, "<H"), "num_tile_plans": (22, "<H"),
    "budget": (24, "<I"), "peak": (28, "<I"), "model_name_str": (32, "<I"), "model_io_off": (36, "<H"),
    "num_model_inputs": (38, "<B"), "num_model_outputs": (39, "<B"), "num_weights": (40, "<H"),
    "num_quant_params": (42, "<H"), "flags": (44, "<I"),
}
#: record field -> (offset inside the record, struct format), docs/plan-format.md#record-layouts-at-a-glance
TENSOR_FIELDS = {"name_str": (0, "<I"), "size_bytes": (4, "<I"), "shape_off": (8, "<H"), "ndim": (10, "<B"),
                 "dtype": (11, "<B"), "flags": (12, "<B"), "quant_param_idx": (13, "<H"),
                 "iface_dtype": (15, "<B")}
OP_FIELDS = {"name_str": (0, "<I"), "op_type": (4, "<B"), "num_inputs": (5, "<B"), "num_outputs": (6, "<B"),
             "stage_hint": (7, "<B"), "inputs_off": (8, "<H"), "outputs_off": (10, "<H"),
             "kernel_h": (12, "<B"), "kernel_w": (13, "<B"), "stride_h": (14, "<B"), "stride_w": (15, "<B"),
             "pad_top": (16, "<H"), "pad_bottom": (18, "<H"), "pad_left": (20, "<H"), "pad_right": (22, "<H"),
             "dilation_h": (24, "<H"), "dilation_w": (26, "<H"), "group": (28, "<H"),
             "weight_idx": (30, "<H"), "bias_idx": (32, "<H"), "fused_act": (34, "<B"), "act_min": (35, "<b"),
             "act_max": (36, "<b"), "_pad": (37, "<B")}
STAGE_FIELDS = {"peak_bytes": (0, "<I"), "ops_off": (4, "<H"), "ops_count": (6, "<H"), "inputs_off": (8, "<H"),
                "inputs_count": (10, "<H"), "outputs_off": (12, "<H"), "outputs_count": (14, "<H"),
                "tile_plan_idx": (16, "<H"), "_pad": (18, "<H"), "chain_id": (20, "<H"), "chain_len": (22, "<H"),
                "chain_tile_h": (24, "<H"), "flags": (26, "<H")}
WEIGHT_FIELDS = {"name_str": (0, "<I"), "offset": (4, "<I"), "size_bytes": (8, "<I")}
QUANT_FIELDS = {"scale": (0, "<f"), "zero_point": (4, "<i"), "num_channels": (8, "<H"),
                "multiplier_off": (10, "<H"), "shift_off": (12, "<H"), "page": (14, "<H")}
BLOCK_FIELDS = {"stage_idx": (0, "<H"), "first_weight_idx": (2, "<H"), "num_weights": (4, "<H"), "_pad": (6, "<H"),
                "blob_offset": (8, "<I"), "compressed_size": (12, "<I"), "uncompressed_size": (16, "<I")}
BLOCK_ENTRY_SIZE = 20
ATTR_FIELDS = {"op_index": (0, "<H"), "type": (2, "<B"), "length": (3, "<B"), "data_off": (4, "<I")}


def patch(data: bytes, offset: int, fmt: str, value: Any) -> bytes:
    """Copy of ``data`` with ``struct.pack(fmt, value)`` written at ``offset``."""
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


class PlanView:
    """Offsets of every record in a plan, plus the decoded ``read_binary_plan`` dict (``info``).

    All ``*_at`` methods return absolute byte offsets into ``data``; ``set_*`` methods return a
    patched copy (the view itself never changes).
    """

    def __init__(self, data: bytes | Path) -> None:
        from tigris.emitters.binary.reader import read_binary_plan

        self.data = Path(data).read_bytes() if isinstance(data, Path) else bytes(data)
        self.info = read_binary_plan(self.data)
        self.header = {k: struct.unpack_from(f, self.data, o)[0] for k, (o, f) in HEADER_FIELDS.items()}
        self.directory: list[tuple[int, int, int]] = []  # (type, offset, byte position of the entry)
        pos = self.header["section_dir_off"]
        while True:
            sec_type, sec_off = struct.unpack_from("<II", self.data, pos)
            self.directory.append((sec_type, sec_off, pos))
            if sec_type == 0:
                break
            pos += 8
        self.sections = {t: o for t, o, _ in self.directory if t}

    # ---- extents
    def section_end(self, sec_type: int) -> int:
        start = self.sections[sec_type]
        later = [o for o in self.sections.values() if o > start]
        return min(later) if later else len(self.data)

    def section_bytes(self, sec_type: int) -> int:
        return self.section_end(sec_type) - self.sections[sec_type]

    def dir_entry_at(self, index: int) -> int:
        return self.directory[index][2]

    # ---- records
    def tensor_at(self, t: int) -> int:
        return self.sections[SEC_TENSORS] + TENSOR_SIZE * t

    def op_at(self, o: int) -> int:
        return self.sections[SEC_OPS] + OP_SIZE * o

    def stage_at(self, s: int) -> int:
        return self.sections[SEC_STAGES] + STAGE_SIZE * s

    def index_pool_at(self, element: int) -> int:
        return self.sections[SEC_INDEX_POOL] + 2 * element

    def shape_pool_at(self, element: int) -> int:
        return self.sections[SEC_SHAPE_POOL] + 4 * element

    def weight_entry_at(self, w: int) -> int:
        return self.sections[SEC_WEIGHTS] + WEIGHT_ENTRY_SIZE * w

    @property
    def weight_blob_at(self) -> int:
        return self.sections[SEC_WEIGHTS] + WEIGHT_ENTRY_SIZE * self.header["num_weights"]

    @property
    def weight_blob_bytes(self) -> int:
        return self.section_end(SEC_WEIGHTS) - self.weight_blob_at

    def quant_entry_at(self, q: int) -> int:
        return self.sections[SEC_QUANT_PARAMS] + 4 + QUANT_ENTRY_SIZE * q

    def quant_data_at(self, element: int) -> int:
        return self.sections[SEC_QUANT_PARAMS] + 4 + QUANT_ENTRY_SIZE * self.header["num_quant_params"] + 4 * element

    def block_entry_at(self, b: int) -> int:
        """Weight-block entry ``b`` of SEC_WEIGHT_BLOCKS (LZ4 plans), after its 4-byte header."""
        return self.sections[SEC_WEIGHT_BLOCKS] + 4 + BLOCK_ENTRY_SIZE * b

    @property
    def block_blobs_at(self) -> int:
        n = struct.unpack_from("<H", self.data, self.sections[SEC_WEIGHT_BLOCKS])[0]
        return self.sections[SEC_WEIGHT_BLOCKS] + 4 + BLOCK_ENTRY_SIZE * n

    def attr_entry_at(self, a: int) -> int:
        return self.sections[SEC_OP_ATTRIBUTES] + 4 + ATTR_ENTRY_SIZE * a

    @property
    def attr_data_at(self) -> int:
        n = struct.unpack_from("<H", self.data, self.sections[SEC_OP_ATTRIBUTES])[0]
        return self.sections[SEC_OP_ATTRIBUTES] + 4 + ATTR_ENTRY_SIZE * n

    # ---- one-field edits
    def set_header(self, name: str, value: Any) -> bytes:
        off, fmt = HEADER_FIELDS[name]
        return patch(self.data, off, fmt, value)

    def set_tensor(self, t: int, name: str, value: Any) -> bytes:
        off, fmt = TENSOR_FIELDS[name]
        return patch(self.data, self.tensor_at(t) + off, fmt, value)

    def set_op(self, o: int, name: str, value: Any) -> bytes:
        off, fmt = OP_FIELDS[name]
        return patch(self.data, self.op_at(o) + off, fmt, value)

    def set_stage(self, s: int, name: str, value: Any) -> bytes:
        off, fmt = STAGE_FIELDS[name]
        return patch(self.data, self.stage_at(s) + off, fmt, value)

    def set_weight(self, w: int, name: str, value: Any) -> bytes:
        off, fmt = WEIGHT_FIELDS[name]
        return patch(self.data, self.weight_entry_at(w) + off, fmt, value)

    def set_quant(self, q: int, name: str, value: Any) -> bytes:
        off, fmt = QUANT_FIELDS[name]
        return patch(self.data, self.quant_entry_at(q) + off, fmt, value)

    def set_block(self, b: int, name: str, value: Any) -> bytes:
        off, fmt = BLOCK_FIELDS[name]
        return patch(self.data, self.block_entry_at(b) + off, fmt, value)

    def set_attr(self, a: int, name: str, value: Any) -> bytes:
        off, fmt = ATTR_FIELDS[name]
        return patch(self.data, self.attr_entry_at(a) + off, fmt, value)

    def set_dir_entry(self, index: int, sec_type: int, sec_off: int) -> bytes:
        return bytes(_pack_pairs(self.data, self.dir_entry_at(index), [(sec_type, sec_off)]))

    def set_directory(self, entries: Iterable[tuple[int, int]]) -> bytes:
        """Rewrite the directory from its first entry (the writer's padding after it must fit)."""
        return bytes(_pack_pairs(self.data, self.dir_entry_at(0), list(entries)))

    def tensor_index_of_op_input(self, o: int, k: int = 0) -> int:
        """Byte offset of op ``o``'s ``k``-th input index in the index pool."""
        inputs_off = struct.unpack_from("<H", self.data, self.op_at(o) + OP_FIELDS["inputs_off"][0])[0]
        return self.index_pool_at(inputs_off + k)

    def model_io_at(self, i: int) -> int:
        return self.index_pool_at(self.header["model_io_off"] + i)

    def truncated(self, length: int, fix_file_size: bool = False) -> bytes:
        """The first ``length`` bytes; with ``fix_file_size`` the header claims exactly that."""
        data = self.data[:length]
        if fix_file_size and length >= HEADER_SIZE:
            data = patch(data, 8, "<I", length)
        return data


def _pack_pairs(data: bytes, at: int, pairs: list[tuple[int, int]]) -> bytearray:
    out = bytearray(data)
    for i, (a, b) in enumerate(pairs):
        struct.pack_into("<II", out, at + 8 * i, a, b)
    return out


class _TgrError(ct.Structure):
    # tgr.h: typedef struct tgr_error { tgr_status status; char message[160]; } tgr_error;
    # over-allocated so a longer message buffer in a later tgr.h cannot overrun ours
    _fields_ = [("status", ct.c_int), ("message", ct.c_char * 1020)]


class LoaderProbe:
    """``tgr_plan_load`` of our host library, called directly: (status name, message).

    The shared library exports the runtime's external symbols (``tgr_plan_load``,
    ``tgr_status_name``); if a later build hides them, ``available`` is False and callers fall
    back to the message-only check of the host ABI.
    """

    PLAN_BYTES = 4096  # >= sizeof(tgr_plan) (about 300 B today)

    def __init__(self, library: str | Path) -> None:
        self.lib = ct.CDLL(str(library))
        try:
            self._load = self.lib.tgr_plan_load
            self._name = self.lib.tgr_status_name
        except AttributeError:
            self.available = False
            return
        self.available = True
        self._load.restype = ct.c_int
        self._load.argtypes = [ct.c_void_p, ct.c_void_p, ct.c_uint32, ct.c_void_p]
        self._bind = getattr(self.lib, "tgr_plan_bind", None)
        if self._bind is not None:
            self._bind.restype = ct.c_int
            self._bind.argtypes = [ct.c_void_p, ct.c_void_p, ct.c_uint32, ct.c_void_p]
        self._name.restype = ct.c_char_p
        self._name.argtypes = [ct.c_int]

    def bind_matches_load(self, data: bytes) -> None:
        """``tgr_plan_bind`` (the trusted binder of ``validate=digest`` firmware) fills the plan
        struct byte for byte as ``tgr_plan_load`` does, for a plan the loader accepts."""
        assert self._bind is not None, "the library exports no tgr_plan_bind"
        buf = (ct.c_uint8 * max(len(data), 1)).from_buffer_copy(data or b"\0")
        loaded, bound = ct.create_string_buffer(self.PLAN_BYTES), ct.create_string_buffer(self.PLAN_BYTES)
        err = _TgrError()
        status = self._load(loaded, buf, len(data), ct.byref(err))
        assert status == 0, f"the loader refuses the plan: {err.message.decode('utf-8', 'replace')}"
        assert self._bind(bound, buf, len(data), ct.byref(err)) == 0, err.message.decode("utf-8", "replace")
        if loaded.raw != bound.raw:
            first = next(i for i, (a, b) in enumerate(zip(loaded.raw, bound.raw)) if a != b)
            raise AssertionError(f"tgr_plan_bind and tgr_plan_load differ at struct byte {first}")

    def load(self, data: bytes) -> tuple[str, str]:
        plan = ct.create_string_buffer(self.PLAN_BYTES)
        # an exact-size copy (the loader is zero copy and must never read past `size`)
        buf = (ct.c_uint8 * max(len(data), 1)).from_buffer_copy(data or b"\0")
        err = _TgrError()
        status = self._load(plan, buf, len(data), ct.byref(err))
        return self._name(status).decode(), err.message.decode("utf-8", "replace")
