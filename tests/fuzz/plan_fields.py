"""Every field the loader reads, located in one plan's bytes, and the boundary edits to try on it.

Why: the differential corruption test (test_differential_corruption.py) and the triage of fuzz
findings (differential.py ``explain``) both need "which field is byte N of this plan" and "what
are the interesting wrong values for that field". The layouts are docs/plan-format.md's; the
record walkers are tests/runtime/plantools.PlanView's, extended to the sections it does not map
(tile plans, attributes' payloads, state, subgraphs, LZ4 blocks).

Pure: bytes in, field lists and patched bytes out; no runtime is loaded here.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from tests.runtime.plantools import (
    ATTR_FIELDS,
    BLOCK_FIELDS,
    HEADER_FIELDS,
    OP_FIELDS,
    QUANT_FIELDS,
    SEC_INDEX_POOL,
    SEC_OP_ATTRIBUTES,
    SEC_QUANT_PARAMS,
    SEC_SHAPE_POOL,
    SEC_STAGES,
    SEC_TILE_PLANS,
    SEC_WEIGHT_BLOCKS,
    SEC_WEIGHTS,
    STAGE_FIELDS,
    TENSOR_FIELDS,
    WEIGHT_FIELDS,
    PlanView,
)

SEC_STATE, SEC_SUBGRAPHS = 12, 13

#: tile-plan record fields, v2-v9 (24 bytes) and v10 (32 bytes): docs/plan-format.md
TILE_FIELDS_V9 = {"tileable": (0, "<B"), "axis": (1, "<B"), "tile_height": (2, "<H"), "num_tiles": (4, "<H"),
                  "halo": (6, "<H"), "receptive_field": (8, "<H"), "original_height": (10, "<H"),
                  "tiled_peak_bytes": (12, "<I"), "overhead_bytes": (16, "<I"), "tile_width": (20, "<H"),
                  "flags": (22, "<H")}
TILE_FIELDS_V10 = {"tileable": (0, "<B"), "axis": (1, "<B"), "flags": (2, "<H"), "input_band_extent": (4, "<I"),
                   "output_band_extent": (8, "<I"), "output_width_extent": (12, "<I"),
                   "input_channel_group": (16, "<I"), "input_spatial_interval": (20, "<I"),
                   "output_linear_segment": (24, "<I"), "tiled_peak_bytes": (28, "<I")}
STATE_FIELDS = {"input_tensor": (0, "<H"), "output_tensor": (2, "<H"), "offset": (4, "<I"), "bytes": (8, "<I"),
                "initial": (12, "<I")}
SUBGRAPH_FIELDS = {"first_stage": (0, "<H"), "num_stages": (2, "<H"), "inputs_off": (4, "<H"),
                   "inputs_count": (6, "<H"), "outputs_off": (8, "<H"), "outputs_count": (10, "<H")}

#: how many bytes of an LZ4 blob or an attribute payload get their own edits (the rest is data)
BLOB_SAMPLE = 8


@dataclass(frozen=True)
class Field:
    """One field of one record: ``section/record.name``, where it is, how it is packed."""

    name: str
    offset: int
    fmt: str

    @property
    def width(self) -> int:
        return struct.calcsize(self.fmt)


@dataclass(frozen=True)
class Edit:
    """One field set to one value: the unit the differential test counts."""

    field: Field
    value: int

    @property
    def label(self) -> str:
        return f"{self.field.name}={self.value:#x}"

    def apply(self, data: bytes) -> bytes:
        out = bytearray(data)
        struct.pack_into(self.field.fmt.replace("b", "B").replace("i", "I").replace("f", "I"), out,
                         self.field.offset, self.value)
        return bytes(out)


def _record(prefix: str, base: int, fields: dict[str, tuple[int, str]]) -> Iterator[Field]:
    for name, (off, fmt) in fields.items():
        if not name.startswith("_") or name == "_pad":
            yield Field(f"{prefix}.{name}", base + off, fmt)


def _u16(data: bytes, at: int) -> int:
    return struct.unpack_from("<H", data, at)[0]


def _pick(n: int, every: bool) -> list[int]:
    """Record indices to edit: all of them, or the first, middle and last (what the test affords)."""
    return list(range(n)) if every else sorted({i for i in (0, 1, n // 2, n - 2, n - 1) if 0 <= i < n})


def fields(view: PlanView, every_record: bool = True) -> list[Field]:
    """Every field of every record the loader reads (or of a few records per table), in file
    order of sections."""
    d, h = view.data, view.header
    pick = lambda n: _pick(n, every_record)  # noqa: E731
    out: list[Field] = [Field(f"header.{n}", o, f) for n, (o, f) in HEADER_FIELDS.items() if n != "magic"]
    for i, (_, _, pos) in enumerate(view.directory):
        out += [Field(f"directory[{i}].type", pos, "<I"), Field(f"directory[{i}].offset", pos + 4, "<I")]
    for t in pick(h["num_tensors"]):
        out += _record(f"tensor[{t}]", view.tensor_at(t), TENSOR_FIELDS)
    for o in pick(h["num_ops"]):
        out += _record(f"op[{o}]", view.op_at(o), OP_FIELDS)
    for s in pick(h["num_stages"]):
        out += _record(f"stage[{s}]", view.stage_at(s), STAGE_FIELDS)
    if SEC_TILE_PLANS in view.sections:
        layout, size = (TILE_FIELDS_V10, 32) if h["version"] >= 10 else (TILE_FIELDS_V9, 24)
        for i in pick(h["num_tile_plans"]):
            out += _record(f"tile_plan[{i}]", view.sections[SEC_TILE_PLANS] + size * i, layout)
    for i in pick(view.section_bytes(SEC_INDEX_POOL) // 2):
        out.append(Field(f"index_pool[{i}]", view.index_pool_at(i), "<H"))
    for i in pick(view.section_bytes(SEC_SHAPE_POOL) // 4):
        out.append(Field(f"shape_pool[{i}]", view.shape_pool_at(i), "<i"))
    if SEC_WEIGHTS in view.sections:
        for w in pick(h["num_weights"]):
            out += _record(f"weight[{w}]", view.weight_entry_at(w), WEIGHT_FIELDS)
    if SEC_QUANT_PARAMS in view.sections:
        start = view.sections[SEC_QUANT_PARAMS]
        out += [Field("quant.count", start, "<H"), Field("quant.reserved", start + 2, "<H")]
        for q in pick(h["num_quant_params"]):
            out += [f for f in _record(f"quant[{q}]", view.quant_entry_at(q), QUANT_FIELDS) if not f.fmt.endswith("f")]
        n = max(0, (view.section_end(SEC_QUANT_PARAMS) - view.quant_data_at(0)) // 4)
        for i in sorted(set(range(min(n, BLOB_SAMPLE))) | set(range(max(0, n - BLOB_SAMPLE), n))):
            out.append(Field(f"quant_data[{i}]", view.quant_data_at(i), "<i"))
    if SEC_WEIGHT_BLOCKS in view.sections:
        start = view.sections[SEC_WEIGHT_BLOCKS]
        out += [Field("blocks.count", start, "<H"), Field("blocks.compression", start + 2, "<H")]
        for b in pick(_u16(d, start)):
            out += _record(f"block[{b}]", view.block_entry_at(b), BLOCK_FIELDS)
        out += [Field(f"blocks.blob[{i}]", view.block_blobs_at + i, "<B")
                for i in range(min(BLOB_SAMPLE, view.section_end(SEC_WEIGHT_BLOCKS) - view.block_blobs_at))]
    if SEC_OP_ATTRIBUTES in view.sections:
        start = view.sections[SEC_OP_ATTRIBUTES]
        out += [Field("attributes.count", start, "<H"), Field("attributes.reserved", start + 2, "<H")]
        for a in pick(_u16(d, start)):
            at = view.attr_entry_at(a)
            out += _record(f"attribute[{a}]", at, ATTR_FIELDS)
            payload, length = struct.unpack_from("<I", d, at + 4)[0], d[at + 3]
            for i in range(0, min(length, 4 * BLOB_SAMPLE), 4):
                if view.attr_data_at + payload + i + 4 <= view.section_end(SEC_OP_ATTRIBUTES):
                    out.append(Field(f"attribute[{a}].data[{i}]", view.attr_data_at + payload + i, "<I"))
    if SEC_STATE in view.sections:
        start = view.sections[SEC_STATE]
        out += [Field("state.count", start, "<H"), Field("state.reserved", start + 2, "<H"),
                Field("state.state_bytes", start + 4, "<I")]
        for e in pick(_u16(d, start)):
            out += _record(f"state[{e}]", start + 8 + 16 * e, STATE_FIELDS)
    if SEC_SUBGRAPHS in view.sections:
        start = view.sections[SEC_SUBGRAPHS]
        out += [Field("subgraphs.count", start, "<H"), Field("subgraphs.reserved", start + 2, "<H")]
        for g in pick(_u16(d, start)):
            out += _record(f"subgraph[{g}]", start + 4 + 12 * g, SUBGRAPH_FIELDS)
    return [f for f in out if f.offset + f.width <= len(d)]


def _current(data: bytes, f: Field) -> int:
    fmt = f.fmt.replace("b", "B").replace("i", "I").replace("f", "I")
    return struct.unpack_from(fmt, data, f.offset)[0]


def boundary_values(view: PlanView, f: Field) -> list[int]:
    """0, 1, max, max-1, the neighbours of the current value and, for fields that name a
    record or an offset, the values just past the end and another record's position."""
    top = (1 << (8 * f.width)) - 1
    old = _current(view.data, f)
    values = [0, 1, top, top - 1, (old + 1) & top, (old - 1) & top]
    h = view.header
    leaf = f.name.rsplit(".", 1)[-1]
    counts = {"tensor": h["num_tensors"], "op": h["num_ops"], "stage": h["num_stages"],
              "tile_plan": h["num_tile_plans"], "weight": h["num_weights"], "quant": h["num_quant_params"]}
    for kind, n in counts.items():
        if kind in leaf or leaf.startswith("first_stage") or f.name.startswith("index_pool"):
            values += [n, n - 1]
    if leaf.endswith(("off", "offset", "data_off", "initial")) or "offset" in leaf:
        values += [v & top for v in (old + 2, old + 4, old // 2)]
    if leaf.endswith("count") or leaf.startswith("num_"):
        values += [(old * 2) & top]
    return sorted({v & top for v in values} - {old})


def edits(view: PlanView, every_record: bool = True) -> list[Edit]:
    """Every boundary edit of every field (of every record, or of a few per table)."""
    return [Edit(f, v) for f in fields(view, every_record) for v in boundary_values(view, f)]


def field_at(view: PlanView, offset: int) -> str:
    """The field that byte ``offset`` belongs to (for triaging a fuzz finding)."""
    for f in fields(view):
        if f.offset <= offset < f.offset + f.width:
            return f.name
    return "data"
