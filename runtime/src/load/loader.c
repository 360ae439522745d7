/*
 * Plan loader and validator (docs/plan-format.md#validation-order-and-refusals). Every
 * structural and semantic rule is checked here, once, so that the executor and the kernels can
 * index the plan without bounds checks. Anything this runtime cannot execute exactly is refused with a message that names
 * the record and the reason; nothing is copied and no memory is allocated.
 */
#include <math.h>

#include "exec/exec.h"
#include "load/extensions.h"
#include "memory/weights.h"
#include "ops/ops_registry.h"
#include "plan/optable.h"

typedef struct sections {
    uint32_t start[SEC_COUNT + 1];
    uint32_t end[SEC_COUNT + 1];
    uint8_t present[SEC_COUNT + 1];
} sections;

/* ---- header and section directory ------------------------------------------------------ */

static int host_is_little_endian(void)
{
    const uint16_t probe = 1u;
    uint8_t first;
    memcpy(&first, &probe, 1);
    return first == 1u;
}

static tgr_status read_header(tgr_plan *p, const uint8_t *d, uint32_t size, tgr_error *err)
{
    if (!host_is_little_endian()) {
        return tgr_fail(err, TGR_ERR_PLATFORM, "platform is not little-endian");
    }
    if (size < HEADER_SIZE) {
        return tgr_fail(err, TGR_ERR_TRUNCATED, "buffer too small for header (%u bytes, need %u)",
                        size, HEADER_SIZE);
    }
    if (memcmp(d, "TGRS", 4) != 0) {
        return tgr_fail(err, TGR_ERR_MAGIC, "bad magic: not a TiGrIS plan");
    }
    p->version = rd_u32(d + 4);
    if (p->version < 2u || p->version > 10u) {
        return tgr_fail(err, TGR_ERR_VERSION, "unsupported plan version %u (this runtime reads 2..10)",
                        p->version);
    }
    if (rd_u32(d + 8) != size) {
        return tgr_fail(err, rd_u32(d + 8) > size ? TGR_ERR_TRUNCATED : TGR_ERR_SECTION,
                        "file_size field %u does not match the %u bytes given", rd_u32(d + 8), size);
    }
    p->data = d;
    p->size = size;
    p->num_tensors = rd_u16(d + 16);
    p->num_ops = rd_u16(d + 18);
    p->num_stages = rd_u16(d + 20);
    p->num_tile_plans = rd_u16(d + 22);
    p->budget = rd_u32(d + 24);
    p->model_io_off = rd_u16(d + 36);
    p->num_inputs = d[38];
    p->num_outputs = d[39];
    p->num_weights = rd_u16(d + 40);
    p->num_quant = rd_u16(d + 42);
    p->flags = rd_u32(d + 44);
    if (p->flags & ~1u) {
        return tgr_fail(err, TGR_ERR_UNSUPPORTED, "unknown header flag bits 0x%x", p->flags & ~1u);
    }
    if (p->budget == 0u) {
        return tgr_fail(err, TGR_ERR_SECTION, "plan budget is 0");
    }
    if (p->num_tensors > TGR_MAX_TENSORS) {
        return tgr_fail(err, TGR_ERR_LIMIT, "plan exceeds executor limits: %u tensors (max %u)",
                        p->num_tensors, TGR_MAX_TENSORS);
    }
    if (p->num_stages == 0u || p->num_ops == 0u) {
        return tgr_fail(err, TGR_ERR_STAGE, "plan has %u ops and %u stages; both must be >= 1",
                        p->num_ops, p->num_stages);
    }
    return TGR_OK;
}

static tgr_status read_directory(const tgr_plan *p, sections *s, tgr_error *err)
{
    const uint8_t *d = p->data;
    uint32_t off = rd_u32(d + 12);
    uint32_t prev_type = 0;
    uint32_t prev_off = 0;
    int terminated = 0;
    uint32_t k, j;
    memset(s, 0, sizeof *s);
    if (off < HEADER_SIZE || off % 4u != 0u || off > p->size) {
        return tgr_fail(err, TGR_ERR_SECTION, "section directory offset %u is invalid", off);
    }
    while ((uint64_t)off + 8u <= p->size) {
        uint32_t type = rd_u32(d + off);
        uint32_t start = rd_u32(d + off + 4);
        off += 8u;
        if (type == 0u) {
            if (start != 0u) {
                return tgr_fail(err, TGR_ERR_SECTION, "section directory terminator is not (0, 0)");
            }
            terminated = 1;
            break;
        }
        if (type > SEC_COUNT) {
            return tgr_fail(err, TGR_ERR_SECTION, "unknown section type %u", type);
        }
        if ((type == SEC_STATE || type == SEC_SUBGRAPHS) && p->version < 10u) {
            return tgr_fail(err, TGR_ERR_SECTION, "section type %u requires schema 10", type);
        }
        if (s->present[type]) {
            return tgr_fail(err, TGR_ERR_SECTION, "duplicate section type %u", type);
        }
        if (type <= prev_type || start < prev_off) {
            return tgr_fail(err, TGR_ERR_SECTION, "section directory is not in ascending order at type %u",
                            type);
        }
        if (start > p->size || start % 4u != 0u) {
            return tgr_fail(err, TGR_ERR_SECTION, "section %u offset %u out of bounds or misaligned",
                            type, start);
        }
        s->present[type] = 1;
        s->start[type] = start;
        prev_type = type;
        prev_off = start;
    }
    if (!terminated) {
        return tgr_fail(err, TGR_ERR_SECTION, "section directory has no terminator");
    }
    for (k = 1; k <= SEC_COUNT; ++k) {
        if (!s->present[k]) {
            continue;
        }
        if (s->start[k] < off) {
            return tgr_fail(err, TGR_ERR_SECTION, "section %u overlaps the header or directory", k);
        }
        s->end[k] = p->size;
        for (j = 1; j <= SEC_COUNT; ++j) {
            if (s->present[j] && s->start[j] > s->start[k] && s->start[j] < s->end[k]) {
                s->end[k] = s->start[j];
            }
        }
    }
    return TGR_OK;
}

static tgr_status require_section(const sections *s, uint32_t type, const char *name, tgr_error *err)
{
    if (!s->present[type]) {
        return tgr_fail(err, TGR_ERR_SECTION, "required section %u (%s) is missing", type, name);
    }
    return TGR_OK;
}

static tgr_status fit_records(const sections *s, uint32_t type, uint32_t count, uint32_t record,
                              tgr_error *err)
{
    if ((uint64_t)count * record > s->end[type] - s->start[type]) {
        return tgr_fail(err, TGR_ERR_SECTION,
                        "section offset out of bounds: section %u holds %u bytes, %u records of %u need more",
                        type, s->end[type] - s->start[type], count, record);
    }
    return TGR_OK;
}

/* ---- sections with local headers ------------------------------------------------------- */

static int string_ok(const tgr_plan *p, uint32_t off)
{
    return off < p->strings_len && memchr(p->strings + off, 0, p->strings_len - off) != NULL;
}

static tgr_status bind_quant(tgr_plan *p, const sections *s, tgr_error *err)
{
    uint32_t start, count_field, pages, data_bytes, q;
    const uint8_t *d = p->data;
    if (!s->present[SEC_QUANT_PARAMS]) {
        return TGR_OK;
    }
    start = s->start[SEC_QUANT_PARAMS];
    if (s->end[SEC_QUANT_PARAMS] - start < 4u) {
        return tgr_fail(err, TGR_ERR_SECTION, "quant section too small for its header");
    }
    count_field = rd_u16(d + start);
    pages = rd_u16(d + start + 2);
    if (count_field != p->num_quant) {
        return tgr_fail(err, TGR_ERR_QUANT, "quant section holds %u entries, header says %u",
                        count_field, p->num_quant);
    }
    if ((uint64_t)4u + (uint64_t)QUANT_ENTRY_SIZE * p->num_quant > s->end[SEC_QUANT_PARAMS] - start) {
        return tgr_fail(err, TGR_ERR_SECTION, "section offset out of bounds: quant entries");
    }
    p->quant_entries = d + start + 4u;
    p->quant_data = p->quant_entries + QUANT_ENTRY_SIZE * p->num_quant;
    data_bytes = s->end[SEC_QUANT_PARAMS] - (start + 4u + QUANT_ENTRY_SIZE * p->num_quant);
    if (p->version >= 3u) {
        if (data_bytes % 4u != 0u) {
            return tgr_fail(err, TGR_ERR_QUANT, "quant data is not a whole number of int32");
        }
        p->quant_data_count = data_bytes / 4u;
        if (p->num_quant > 0u &&
            (pages == 0u || (uint64_t)(pages - 1u) * 65536u >= p->quant_data_count ||
             (uint64_t)pages * 65536u + 3u < p->quant_data_count)) {
            return tgr_fail(err, TGR_ERR_QUANT, "quant data pages %u inconsistent with %u elements",
                            pages, p->quant_data_count);
        }
    } else {
        if ((uint64_t)pages * 4u > data_bytes) {
            return tgr_fail(err, TGR_ERR_QUANT, "quant data length %u exceeds the section", pages);
        }
        p->quant_data_count = pages;
    }
    for (q = 0; q < p->num_quant; ++q) {
        const uint8_t *r = quant_rec(p, q);
        float scale = rd_f32(r);
        int32_t zp = rd_i32(r + 4);
        uint32_t channels = rd_u16(r + 8);
        uint32_t base = quant_page_base(p, q);
        uint32_t mult_off = base + rd_u16(r + 10);
        uint32_t shift_off = base + rd_u16(r + 12);
        uint32_t c;
        if (!(scale > 0.0f) || !isfinite(scale)) {
            return tgr_fail(err, TGR_ERR_QUANT, "quant entry %u scale is not finite and positive", q);
        }
        if (zp < -128 || zp > 127) {
            return tgr_fail(err, TGR_ERR_QUANT, "quant entry %u zero point %d outside [-128, 127]", q, zp);
        }
        if (channels == 0u || channels > 32768u) {
            return tgr_fail(err, TGR_ERR_QUANT, "quant entry %u has %u channels", q, channels);
        }
        if (p->version >= 3u && rd_u16(r + 14) >= pages) {
            return tgr_fail(err, TGR_ERR_QUANT, "quant entry %u page %u beyond %u pages", q,
                            rd_u16(r + 14), pages);
        }
        if ((uint64_t)mult_off + channels > p->quant_data_count ||
            (uint64_t)shift_off + channels > p->quant_data_count) {
            return tgr_fail(err, TGR_ERR_RANGE, "quant entry %u multipliers/shifts outside the data", q);
        }
        for (c = 0; c < channels; ++c) {
            int32_t m = rd_i32(p->quant_data + 4u * (mult_off + c));
            int32_t sh = rd_i32(p->quant_data + 4u * (shift_off + c));
            if ((m != 0 && m < (int32_t)0x40000000) || m < 0 || sh < -31 || sh > 31) {
                return tgr_fail(err, TGR_ERR_QUANT,
                                "quant entry %u channel %u pair (%d, %d) is not a Q0.31 multiplier/shift",
                                q, c, m, sh);
            }
        }
    }
    return TGR_OK;
}

static tgr_status bind_weights(tgr_plan *p, const sections *s, tgr_error *err)
{
    uint32_t start, blob_start, w;
    tgr_status st;
    if (p->num_weights == 0u) {
        return s->present[SEC_WEIGHT_BLOCKS]
                   ? tgr_fail(err, TGR_ERR_WEIGHT, "weight blocks without weight entries")
                   : TGR_OK;
    }
    st = require_section(s, SEC_WEIGHTS, "weights", err);
    if (st != TGR_OK) {
        return st;
    }
    st = fit_records(s, SEC_WEIGHTS, p->num_weights, WEIGHT_ENTRY_SIZE, err);
    if (st != TGR_OK) {
        return st;
    }
    start = s->start[SEC_WEIGHTS];
    p->weight_entries = p->data + start;
    for (w = 0; w < p->num_weights; ++w) {
        if (!string_ok(p, rd_u32(p->weight_entries + w * WEIGHT_ENTRY_SIZE))) {
            return tgr_fail(err, TGR_ERR_RANGE, "weight %u name is not a valid string", w);
        }
    }
    if (s->present[SEC_WEIGHT_BLOCKS]) {
        /* Entries only; offsets are checked against each stage's block once stages are known. */
        return tgr_bind_weight_blocks(p, s->start[SEC_WEIGHT_BLOCKS], s->end[SEC_WEIGHT_BLOCKS], err);
    }
    blob_start = start + WEIGHT_ENTRY_SIZE * p->num_weights;
    if (blob_start % 16u != 0u) {
        return tgr_fail(err, TGR_ERR_WEIGHT, "weight blob at offset %u is not 16-byte aligned", blob_start);
    }
    p->weight_blob = p->data + blob_start;
    p->weight_blob_len = s->end[SEC_WEIGHTS] - blob_start;
    for (w = 0; w < p->num_weights; ++w) {
        uint32_t off = weight_offset(p, w);
        uint32_t size = weight_size(p, w);
        if (off % 4u != 0u || (uint64_t)off + size > p->weight_blob_len) {
            return tgr_fail(err, TGR_ERR_WEIGHT, "weight %u range [%u, +%u) outside the %u-byte blob",
                            w, off, size, p->weight_blob_len);
        }
    }
    return TGR_OK;
}

/* Attribute payload length rules per kind: [min, max] with a step, plus up to two exact lengths. */
typedef struct attr_rule {
    uint8_t min, max, step, exact0, exact1, int32_payload;
} attr_rule;

static const attr_rule attr_rules[ATTR_KIND_MAX + 1] = {
    [ATTR_TRANSPOSE_PERM] = {0, 255, 1, 0, 0, 0},
    [ATTR_EPSILON] = {4, 4, 1, 4, 0, 0},
    [ATTR_ALPHA] = {4, 4, 1, 4, 0, 0},
    [ATTR_CLIP_BOUNDS] = {8, 8, 1, 8, 0, 0},
    [ATTR_PADS] = {8, 248, 8, 0, 0, 1},
    [ATTR_AXES] = {1, 255, 1, 0, 0, 0},
    [ATTR_BINARY_REQUANT] = {24, 24, 1, 24, 0, 1},
    [ATTR_POOL_ROUNDING] = {1, 1, 1, 1, 0, 0},
    [ATTR_CONSTANT_OPERAND] = {4, 252, 4, 0, 0, 1},
    [ATTR_RESIZE_SCALES] = {8, 8, 1, 8, 0, 0},
    [ATTR_CUMSUM_OPTIONS] = {2, 2, 1, 2, 0, 0},
    [ATTR_MOVEMENT] = {0, 255, 1, 0, 0, 1},
    [ATTR_COMPARISON_REQUANT] = {20, 20, 1, 20, 0, 1},
    [ATTR_CONSTANTS] = {2, 254, 2, 0, 0, 0},
    [ATTR_SVDF] = {4, 24, 1, 4, 24, 1},
    [ATTR_LSTM] = {8, 112, 1, 8, 112, 1},
    [ATTR_SUBGRAPHS] = {4, 4, 1, 4, 0, 0},
    [ATTR_DETECTION] = {32, 32, 1, 32, 0, 0},
    [ATTR_GELU_APPROXIMATE] = {1, 1, 1, 1, 0, 0},
    [ATTR_TABLE_SHAPE] = {4, 252, 4, 0, 0, 1},
};

static int attr_length_ok(uint32_t kind, uint32_t len)
{
    const attr_rule *r = &attr_rules[kind];
    if (len < r->min || len > r->max || (len - r->min) % r->step != 0u) {
        return 0;
    }
    return r->exact0 == 0u || len == r->exact0 || (r->exact1 != 0u && len == r->exact1);
}

/* The schema an attribute kind needs, as the reference enforces it (measured by relabelling the
 * version of plans carrying each kind): only TRANSPOSE_PERM below schema 8, BINARY_REQUANT (int8
 * Add/Sub requantization) from 9, every other kind from 8. */
static uint32_t attr_schema(uint32_t kind)
{
    return kind == ATTR_TRANSPOSE_PERM ? 4u : kind == ATTR_BINARY_REQUANT ? 9u : 8u;
}

static tgr_status bind_attributes(tgr_plan *p, const sections *s, tgr_error *err)
{
    uint32_t start, a, prev_key = 0;
    if (!s->present[SEC_OP_ATTRIBUTES]) {
        return TGR_OK;
    }
    if (p->version < 4u) {
        return tgr_fail(err, TGR_ERR_SECTION, "op attribute section requires schema 4");
    }
    start = s->start[SEC_OP_ATTRIBUTES];
    if (s->end[SEC_OP_ATTRIBUTES] - start < 4u) {
        return tgr_fail(err, TGR_ERR_SECTION, "attribute section too small for its header");
    }
    p->num_attrs = rd_u16(p->data + start);
    if (rd_u16(p->data + start + 2) != 0u) {
        return tgr_fail(err, TGR_ERR_ATTRIBUTE, "attribute section reserved field is not 0");
    }
    if ((uint64_t)4u + (uint64_t)ATTR_ENTRY_SIZE * p->num_attrs > s->end[SEC_OP_ATTRIBUTES] - start) {
        return tgr_fail(err, TGR_ERR_SECTION, "section offset out of bounds: attribute entries");
    }
    p->attr_entries = p->data + start + 4u;
    p->attr_data = p->attr_entries + ATTR_ENTRY_SIZE * p->num_attrs;
    p->attr_data_len = s->end[SEC_OP_ATTRIBUTES] - (start + 4u + ATTR_ENTRY_SIZE * p->num_attrs);
    for (a = 0; a < p->num_attrs; ++a) {
        const uint8_t *e = p->attr_entries + a * ATTR_ENTRY_SIZE;
        uint32_t op = rd_u16(e);
        uint32_t kind = e[2];
        uint32_t len = e[3];
        uint32_t off = rd_u32(e + 4);
        uint32_t key = op * 256u + kind;
        if (op >= p->num_ops) {
            return tgr_fail(err, TGR_ERR_ATTRIBUTE, "attribute %u names op %u of %u", a, op, p->num_ops);
        }
        if (kind == 0u || kind > ATTR_KIND_MAX) {
            return tgr_fail(err, TGR_ERR_ATTRIBUTE, "attribute %u has unknown kind %u", a, kind);
        }
        if (p->version < attr_schema(kind)) {
            return tgr_fail(err, TGR_ERR_SECTION, "attribute %u: kind %u needs schema %u, the plan says %u", a, kind,
                            attr_schema(kind), p->version);
        }
        if (a > 0u && key <= prev_key) {
            return tgr_fail(err, TGR_ERR_ATTRIBUTE, "attributes are not sorted and unique at entry %u", a);
        }
        if (!attr_length_ok(kind, len)) {
            return tgr_fail(err, TGR_ERR_ATTRIBUTE, "attribute %u (kind %u) has invalid length %u", a,
                            kind, len);
        }
        if ((uint64_t)off + len > p->attr_data_len) {
            return tgr_fail(err, TGR_ERR_RANGE, "attribute %u payload outside the data area", a);
        }
        if (attr_rules[kind].int32_payload && (start + 4u + ATTR_ENTRY_SIZE * p->num_attrs + off) % 4u) {
            return tgr_fail(err, TGR_ERR_ATTRIBUTE, "attribute %u int32 payload is misaligned", a);
        }
        if (!(tgr_op_contracts[op_type(p, op) <= OP_MAX_CODE ? op_type(p, op) : 0].attrs_allowed &
              (1u << kind))) {
            return tgr_fail(err, TGR_ERR_ATTRIBUTE, "attribute kind %u is not allowed on op %u (%s)",
                            kind, op, tgr_op_name(op_type(p, op)));
        }
        prev_key = key;
    }
    return TGR_OK;
}

/* ---- tensors and the model interface ---------------------------------------------------- */

static tgr_status check_tensors(tgr_plan *p, tgr_error *err)
{
    uint32_t t;
    uint32_t allowed_flags = TF_MODEL_INPUT | TF_MODEL_OUTPUT | (p->version >= 7u ? TF_LINEAR : 0u) |
                             (p->version >= 10u ? TF_STATE : 0u);
    for (t = 0; t < p->num_tensors; ++t) {
        const uint8_t *r = tensor_rec(p, t);
        uint32_t ndim = r[10];
        uint32_t dtype = r[11];
        uint32_t flags = r[12];
        uint32_t quant = rd_u16(r + 13);
        uint32_t iface = tensor_iface(p, t);
        uint64_t elements = 1u, bytes;
        uint32_t axis;
        int wide;
        if (!string_ok(p, rd_u32(r))) {
            return tgr_fail(err, TGR_ERR_RANGE, "tensor %u name is not a valid string", t);
        }
        if (ndim > TGR_MAX_RANK) {
            return tgr_fail(err, TGR_ERR_LIMIT, "plan exceeds executor limits: tensor %u has rank %u (max %u)",
                            t, ndim, TGR_MAX_RANK);
        }
        if ((uint64_t)rd_u16(r + 8) + ndim > p->shape_pool_count) {
            return tgr_fail(err, TGR_ERR_RANGE, "tensor %u shape outside the shape pool", t);
        }
        for (axis = 0; axis < ndim; ++axis) {
            int32_t extent = tensor_dim(p, t, axis);
            if (extent <= 0) {
                return tgr_fail(err, TGR_ERR_TENSOR, "tensor %u axis %u has extent %d", t, axis, extent);
            }
            elements *= (uint64_t)extent;
            if (elements > 0xFFFFFFFFu) {
                return tgr_fail(err, TGR_ERR_TENSOR, "tensor %u is larger than 4 GiB", t);
            }
        }
        if (dtype == TGR_DTYPE_FLOAT32 && p->num_quant == 0u) {
            return tgr_fail(err, TGR_ERR_UNSUPPORTED,
                            "float32 plans are not supported by this runtime (tensor %u); compile an int8 model",
                            t);
        }
        /* Besides int8: int32 (indices and their arithmetic; tgr_check_kernels decides which ops
         * touch them), handed over as stored or, at an ONNX interface, as int64; bool bytes
         * (comparison results, logic); and float32 inside the plan (the float sections around
         * If/While, between Dequantize and Quantize) or as a model output (DetectionPostProcess
         * results, handed over as stored). None carries quantization. */
        wide = (dtype == TGR_DTYPE_INT32 && (iface == 0u || (iface == TGR_DTYPE_INT64 && (flags & (TF_MODEL_INPUT | TF_MODEL_OUTPUT))))) ||
               (dtype == TGR_DTYPE_FLOAT32 && iface == 0u && !(flags & TF_MODEL_INPUT));
        if ((flags & TF_STATE) && (iface != 0u || (flags & (TF_MODEL_INPUT | TF_MODEL_OUTPUT)) ||
                                   (dtype != TGR_DTYPE_INT8 && dtype != TGR_DTYPE_INT16))) {
            return tgr_fail(err, TGR_ERR_TENSOR, "state tensor %u is an interface tensor or holds dtype %u", t, dtype);
        }
        if (dtype == TGR_DTYPE_FLOAT32 && !wide) {
            return tgr_fail(err, TGR_ERR_UNSUPPORTED, "tensor %u: float32 model inputs of an int8 plan are not "
                            "supported by this runtime", t);
        }
        if (dtype != TGR_DTYPE_INT8 && !wide && !(dtype == TGR_DTYPE_BOOL && iface == 0u) && !(flags & TF_STATE)) {
            return tgr_fail(err, TGR_ERR_UNSUPPORTED, "tensor %u has dtype %u; this runtime executes int8, int32 "
                            "index, bool and (inside the plan) float32 tensors only", t, dtype);
        }
        bytes = elements * (wide ? 4u : dtype == TGR_DTYPE_INT16 ? 2u : 1u);
        if (bytes != rd_u32(r + 4)) {
            return tgr_fail(err, TGR_ERR_TENSOR, "tensor %u size_bytes %u does not match its shape (%u)",
                            t, rd_u32(r + 4), (uint32_t)bytes);
        }
        /* Arena allocations round sizes up in 32 bits and kernels take extents and their
         * products as int32: both hold below 2^31 bytes. */
        if (bytes > 0x7FFFFFFFu) {
            return tgr_fail(err, TGR_ERR_LIMIT, "plan exceeds executor limits: tensor %u has %u bytes (max 2^31 - 1)",
                            t, (uint32_t)bytes);
        }
        if (flags & ~allowed_flags) {
            return tgr_fail(err, TGR_ERR_TENSOR, "tensor %u has unsupported flag bits 0x%x", t,
                            flags & ~allowed_flags);
        }
        if (dtype != TGR_DTYPE_INT8) {
            /* Quantization belongs to int8 tensors only; the reference refuses it elsewhere. */
            if (quant != NONE16) {
                return tgr_fail(err, TGR_ERR_QUANT, "tensor %u of dtype %u names quantization entry %u", t, dtype,
                                quant);
            }
            continue;
        }
        if (quant >= p->num_quant) {
            return tgr_fail(err, TGR_ERR_QUANT, "int8 tensor %u has no valid quantization entry", t);
        }
        if (iface != 0u) {
            if (!(flags & (TF_MODEL_INPUT | TF_MODEL_OUTPUT))) {
                return tgr_fail(err, TGR_ERR_TENSOR, "internal tensor %u declares interface dtype %u", t, iface);
            }
            if (iface != TGR_DTYPE_FLOAT32 && iface != TGR_DTYPE_UINT8) {
                return tgr_fail(err, TGR_ERR_TENSOR, "tensor %u interface dtype %u cannot be converted to int8",
                                t, iface);
            }
            if (iface == TGR_DTYPE_FLOAT32 && elements > 0x3FFFFFFFu) {
                return tgr_fail(err, TGR_ERR_LIMIT, "plan exceeds executor limits: tensor %u float32 interface of %u "
                                "elements exceeds 4 GiB", t, (uint32_t)elements);
            }
        }
    }
    return TGR_OK;
}

static int io_list_contains(const tgr_plan *p, uint32_t first, uint32_t count, uint32_t tensor)
{
    uint32_t i;
    for (i = 0; i < count; ++i) {
        if (model_io_tensor(p, first + i) == tensor) {
            return 1;
        }
    }
    return 0;
}

static tgr_status check_interface(const tgr_plan *p, tgr_error *err)
{
    uint32_t total = (uint32_t)p->num_inputs + p->num_outputs;
    uint32_t i, t;
    if (p->num_inputs == 0u || p->num_outputs == 0u) {
        return tgr_fail(err, TGR_ERR_TENSOR, "plan declares %u inputs and %u outputs", p->num_inputs,
                        p->num_outputs);
    }
    if ((uint64_t)p->model_io_off + total > p->index_pool_count) {
        return tgr_fail(err, TGR_ERR_RANGE, "model interface list outside the index pool");
    }
    for (i = 0; i < total; ++i) {
        uint32_t tensor = model_io_tensor(p, i);
        uint32_t first = i < p->num_inputs ? 0u : p->num_inputs;
        if (tensor >= p->num_tensors) {
            return tgr_fail(err, TGR_ERR_RANGE, "model interface entry %u names tensor %u of %u", i,
                            tensor, p->num_tensors);
        }
        if (io_list_contains(p, first, i - first, tensor)) {
            return tgr_fail(err, TGR_ERR_TENSOR, "tensor %u is listed twice in the model interface", tensor);
        }
    }
    for (t = 0; t < p->num_tensors; ++t) {
        uint32_t flags = tensor_flags(p, t);
        if (!!(flags & TF_MODEL_INPUT) != io_list_contains(p, 0u, p->num_inputs, t) ||
            !!(flags & TF_MODEL_OUTPUT) != io_list_contains(p, p->num_inputs, p->num_outputs, t)) {
            return tgr_fail(err, TGR_ERR_TENSOR, "tensor %u interface flags disagree with the header list", t);
        }
    }
    /* Graph 0 is the main graph: its lists repeat the model interface, entry for entry (the
     * reference refuses any other list as "section offset out of bounds"). */
    if (p->num_graphs > 0u) {
        if (graph_in_count(p, 0) != p->num_inputs || graph_out_count(p, 0) != p->num_outputs) {
            return tgr_fail(err, TGR_ERR_STAGE, "graph 0 lists %u inputs and %u outputs, the model %u and %u",
                            graph_in_count(p, 0), graph_out_count(p, 0), p->num_inputs, p->num_outputs);
        }
        for (i = 0; i < total; ++i) {
            t = i < p->num_inputs ? graph_input(p, 0, i) : graph_output(p, 0, i - p->num_inputs);
            if (t != model_io_tensor(p, i)) {
                return tgr_fail(err, TGR_ERR_STAGE, "graph 0 interface entry %u is tensor %u, the model's %u", i, t,
                                model_io_tensor(p, i));
            }
        }
    }
    return TGR_OK;
}

/* ---- ops ---------------------------------------------------------------------------------- */

/* Index of the op producing tensor t, or -1 for none. */
static int32_t producer_of(const tgr_plan *p, uint32_t t)
{
    uint32_t o, k;
    for (o = 0; o < p->num_ops; ++o) {
        for (k = 0; k < op_num_outputs(p, o); ++k) {
            if (op_output(p, o, k) == t) {
                return (int32_t)o;
            }
        }
    }
    return -1;
}

/* An input of a graph If/While runs: filled by the control path's copies, not by an op. */
static int is_subgraph_input(const tgr_plan *p, uint32_t t)
{
    uint32_t g;
    for (g = 1u; g < p->num_graphs; ++g) {
        if (graph_lists(p, g, 0, t)) {
            return 1;
        }
    }
    return 0;
}

static tgr_status check_op_records(const tgr_plan *p, tgr_error *err)
{
    uint32_t o, k;
    for (o = 0; o < p->num_ops; ++o) {
        const uint8_t *r = op_rec(p, o);
        uint32_t code = r[4];
        const tgr_op_contract *c;
        op_spatial sp;
        if (!string_ok(p, rd_u32(r))) {
            return tgr_fail(err, TGR_ERR_RANGE, "op %u name is not a valid string", o);
        }
        if (code == 0u || code > OP_MAX_CODE) {
            return tgr_fail(err, TGR_ERR_OP, "op %u has unknown opcode %u", o, code);
        }
        c = &tgr_op_contracts[code];
        if (r[5] < c->inputs_min || r[5] > c->inputs_max || r[6] < c->outputs_min || r[6] > c->outputs_max) {
            return tgr_fail(err, TGR_ERR_OP, "op %u (%s) has %u inputs and %u outputs", o, tgr_op_name(code), r[5], r[6]);
        }
        if ((uint64_t)rd_u16(r + 8) + r[5] > p->index_pool_count ||
            (uint64_t)rd_u16(r + 10) + r[6] > p->index_pool_count) {
            return tgr_fail(err, TGR_ERR_RANGE, "op %u tensor lists outside the index pool", o);
        }
        for (k = 0; k < r[5]; ++k) {
            if (op_input(p, o, k) >= p->num_tensors) {
                return tgr_fail(err, TGR_ERR_RANGE, "op %u input %u names tensor %u of %u", o, k,
                                op_input(p, o, k), p->num_tensors);
            }
        }
        for (k = 0; k < r[6]; ++k) {
            if (op_output(p, o, k) >= p->num_tensors) {
                return tgr_fail(err, TGR_ERR_RANGE, "op %u output %u names tensor %u of %u", o, k,
                                op_output(p, o, k), p->num_tensors);
            }
        }
        op_decode(p, o, &sp);
        if (r[37] != 0u) {
            return tgr_fail(err, TGR_ERR_OP, "op %u reserved byte is not 0", o);
        }
        if (sp.fused_act > ACT_RELU6 || sp.act_min > sp.act_max) {
            return tgr_fail(err, TGR_ERR_OP, "op %u activation (%u, [%d, %d]) is invalid", o, sp.fused_act,
                            sp.act_min, sp.act_max);
        }
        if (sp.weight_idx != NONE16 && sp.weight_idx >= p->num_weights) {
            return tgr_fail(err, TGR_ERR_RANGE, "op %u weight index %u of %u", o, sp.weight_idx, p->num_weights);
        }
        if (sp.bias_idx != NONE16 && sp.bias_idx >= p->num_weights) {
            return tgr_fail(err, TGR_ERR_RANGE, "op %u bias index %u of %u", o, sp.bias_idx, p->num_weights);
        }
        if ((c->weight == OPERAND_REQUIRED && sp.weight_idx == NONE16) ||
            (c->weight == OPERAND_NONE && sp.weight_idx != NONE16) ||
            (c->bias == OPERAND_NONE && sp.bias_idx != NONE16)) {
            return tgr_fail(err, TGR_ERR_WEIGHT, "op %u (%s) weight/bias operands (%u, %u) break its contract",
                            o, tgr_op_name(code), sp.weight_idx, sp.bias_idx);
        }
        for (k = 0; k <= ATTR_KIND_MAX; ++k) {
            if ((c->attrs_required & (1u << k)) && tgr_attr_find(p, o, k, NULL) == NULL) {
                return tgr_fail(err, TGR_ERR_ATTRIBUTE, "op %u (%s) lacks required attribute kind %u", o,
                                tgr_op_name(code), k);
            }
        }
    }
    return TGR_OK;
}

/* Every tensor has at most one producer, model inputs have none, and every op input exists
 * before the op runs (a model input or the output of an earlier op). */
static tgr_status check_dataflow(const tgr_plan *p, tgr_error *err)
{
    uint32_t o, k, i;
    for (o = 0; o < p->num_ops; ++o) {
        for (k = 0; k < op_num_outputs(p, o); ++k) {
            uint32_t t = op_output(p, o, k);
            int32_t first = producer_of(p, t);
            if (first != (int32_t)o) {
                return tgr_fail(err, TGR_ERR_OP, "tensor %u is produced by ops %d and %u", t, first, o);
            }
            for (i = 0; i < k; ++i) {
                if (op_output(p, o, i) == t) {
                    return tgr_fail(err, TGR_ERR_OP, "op %u lists output tensor %u twice", o, t);
                }
            }
            if (tensor_flags(p, t) & TF_MODEL_INPUT) {
                return tgr_fail(err, TGR_ERR_OP, "model input tensor %u is overwritten by op %u", t, o);
            }
        }
        for (k = 0; k < op_num_inputs(p, o); ++k) {
            uint32_t t = op_input(p, o, k);
            int32_t producer = producer_of(p, t);
            if (!(tensor_flags(p, t) & (TF_MODEL_INPUT | TF_STATE)) && !is_subgraph_input(p, t) &&
                (producer < 0 || producer >= (int32_t)o)) {
                return tgr_fail(err, TGR_ERR_OP, "op %u reads tensor %u before it is produced", o, t);
            }
        }
    }
    for (i = 0; i < p->num_outputs; ++i) {
        uint32_t t = model_io_tensor(p, p->num_inputs + i);
        if (producer_of(p, t) < 0) {
            return tgr_fail(err, TGR_ERR_TENSOR, "model output tensor %u is never produced", t);
        }
    }
    return TGR_OK;
}

/* ---- stages ------------------------------------------------------------------------------ */

static int stage_produces(const tgr_plan *p, uint32_t s, uint32_t t)
{
    int32_t producer = producer_of(p, t);
    uint32_t first = stage_op(p, s, 0);
    return producer >= (int32_t)first && producer < (int32_t)(first + stage_ops_count(p, s));
}

static int stage_reads(const tgr_plan *p, uint32_t s, uint32_t t)
{
    uint32_t i, k;
    for (i = 0; i < stage_ops_count(p, s); ++i) {
        uint32_t o = stage_op(p, s, i);
        for (k = 0; k < op_num_inputs(p, o); ++k) {
            if (op_input(p, o, k) == t) {
                return 1;
            }
        }
    }
    return 0;
}

static int stage_lists_output(const tgr_plan *p, uint32_t s, uint32_t t)
{
    uint32_t i;
    for (i = 0; i < stage_out_count(p, s); ++i) {
        if (stage_output(p, s, i) == t) {
            return 1;
        }
    }
    return 0;
}

/* A tensor leaves stage s when a later stage reads it, when it is a model output, or when it
 * is the source of a buffer-sharing Reshape/Flatten in s whose result leaves: the compiler lists
 * such alias groups whole, and the reference spills every member. */
/* A model output, an output of the stage's graph (a subgraph hands it to its If/While), or read
 * by a later stage of the same graph. */
static int needed_directly(const tgr_plan *p, uint32_t s, uint32_t t)
{
    const uint32_t g = graph_of_stage(p, s);
    uint32_t later;
    if ((tensor_flags(p, t) & TF_MODEL_OUTPUT) || (g > 0u && graph_lists(p, g, 1, t)) || is_state_output(p, t)) {
        return 1;
    }
    for (later = s + 1u; later < graph_end_stage(p, g); ++later) {
        if (stage_reads(p, later, t)) {
            return 1;
        }
    }
    return 0;
}

/* The tensor a pure reinterpretation (a buffer-sharing Reshape/Flatten) in stage s made `t` from,
 * or NONE16. A tensor has one producer (check_dataflow), so there is at most one. */
static uint32_t reinterpreted_from(const tgr_plan *p, uint32_t s, uint32_t t)
{
    uint32_t i;
    for (i = 0; i < stage_ops_count(p, s); ++i) {
        uint32_t o = stage_op(p, s, i);
        if (op_num_inputs(p, o) == 1u && op_num_outputs(p, o) == 1u && op_output(p, o, 0) == t &&
            op_input(p, o, 0) != t && tgr_is_pure_reinterpretation(p, o)) {
            return op_input(p, o, 0);
        }
    }
    return NONE16;
}

/* Needed directly, or through a chain of pure reinterpretations inside stage s one of whose
 * results is. Each chain is walked back from its result, one producer at a time and at most the
 * stage's op count long, instead of recursing forward: the loader's stack depth is the same for
 * every plan, which is what lets the build bound it statically. */
static int needed_after(const tgr_plan *p, uint32_t s, uint32_t t)
{
    uint32_t i, steps;
    if (needed_directly(p, s, t)) {
        return 1;
    }
    for (i = 0; i < stage_ops_count(p, s); ++i) {
        uint32_t o = stage_op(p, s, i);
        uint32_t u = op_num_outputs(p, o) == 1u ? op_output(p, o, 0) : NONE16;
        if (u == NONE16 || !tgr_is_pure_reinterpretation(p, o) || !needed_directly(p, s, u)) {
            continue;
        }
        for (steps = 0; u != NONE16 && u != t && steps <= stage_ops_count(p, s); ++steps) {
            u = reinterpreted_from(p, s, u);
        }
        if (u == t) {
            return 1;
        }
    }
    return 0;
}

/* Stage input/output lists must be exactly the tensors crossing the stage boundary. */
static tgr_status check_stage_io(const tgr_plan *p, uint32_t s, tgr_error *err)
{
    uint32_t i, j, o, k, real = 0;
    for (i = 0; i < stage_in_count(p, s); ++i) {
        uint32_t t = stage_input(p, s, i);
        const uint32_t g = graph_of_stage(p, s);
        /* available: a model input, an input of the stage's graph, or an earlier stage's output
         * in the same graph */
        int available = g == 0u ? (tensor_flags(p, t) & TF_MODEL_INPUT) != 0 || ((tensor_flags(p, t) & TF_STATE) &&
                                                                                 !is_state_output(p, t))
                                : graph_lists(p, g, 0, t);
        for (j = 0; j < i; ++j) {
            if (stage_input(p, s, j) == t) {
                return tgr_fail(err, TGR_ERR_STAGE, "stage %u lists input tensor %u twice", s, t);
            }
        }
        for (j = graph_first_stage(p, g); j < s && !available; ++j) {
            available = stage_lists_output(p, j, t);
        }
        if (!available || !stage_reads(p, s, t) || stage_produces(p, s, t)) {
            return tgr_fail(err, TGR_ERR_STAGE, "stage %u input tensor %u is not a boundary tensor available there",
                            s, t);
        }
    }
    for (i = 0; i < stage_ops_count(p, s); ++i) {
        o = stage_op(p, s, i);
        for (k = 0; k < op_num_inputs(p, o); ++k) {
            uint32_t t = op_input(p, o, k);
            int seen = stage_produces(p, s, t);
            uint32_t i2, k2;
            for (i2 = 0; i2 <= i && !seen; ++i2) {
                uint32_t o2 = stage_op(p, s, i2);
                for (k2 = 0; k2 < (i2 == i ? k : op_num_inputs(p, o2)) && !seen; ++k2) {
                    seen = op_input(p, o2, k2) == t;
                }
            }
            real += seen ? 0u : 1u;
        }
    }
    if (real != stage_in_count(p, s)) {
        return tgr_fail(err, TGR_ERR_STAGE, "stage %u lists %u inputs but reads %u boundary tensors", s,
                        stage_in_count(p, s), real);
    }
    real = 0;
    for (i = 0; i < stage_out_count(p, s); ++i) {
        uint32_t t = stage_output(p, s, i);
        for (j = 0; j < i; ++j) {
            if (stage_output(p, s, j) == t) {
                return tgr_fail(err, TGR_ERR_STAGE, "stage %u lists output tensor %u twice", s, t);
            }
        }
        if (!stage_produces(p, s, t) || !needed_after(p, s, t)) {
            return tgr_fail(err, TGR_ERR_STAGE, "stage %u output tensor %u is not produced there or not needed later",
                            s, t);
        }
    }
    /* The compiler lists the start of an alias chain and what is read later, not the aliases in
     * between (a Reshape of a Reshape of an output). */
    for (i = 0; i < stage_ops_count(p, s); ++i) {
        o = stage_op(p, s, i);
        for (k = 0; k < op_num_outputs(p, o); ++k) {
            uint32_t t = op_output(p, o, k);
            real += (tgr_is_pure_reinterpretation(p, o) ? needed_directly(p, s, t) : needed_after(p, s, t)) ? 1u : 0u;
        }
    }
    if (real != stage_out_count(p, s)) {
        return tgr_fail(err, TGR_ERR_STAGE, "stage %u lists %u outputs but %u tensors leave it", s,
                        stage_out_count(p, s), real);
    }
    return TGR_OK;
}

/* A v10 tile record uses the extents of one mode and leaves the others 0, as the compiler writes
 * it and the reference requires: 2-D tiles (axis 3) an output band and width; a grouped reduction
 * a channel group and a spatial interval; a row band (axis 1) an input band or, for Resize, an
 * output band; a transpose none, and only it may set BAND_ON_COLUMNS. */
static int v10_extents_fit_mode(const uint8_t *r)
{
    const uint32_t in_band = rd_u32(r + 4), out_band = rd_u32(r + 8), out_width = rd_u32(r + 12);
    const int grouped = rd_u32(r + 16) != 0u || rd_u32(r + 20) != 0u;
    const int on_columns = (rd_u16(r + 2) & 1u) != 0u;
    if (r[1] == 3u) {
        return in_band == 0u && !grouped && !on_columns;
    }
    if (grouped) {
        return in_band == 0u && out_band == 0u && out_width == 0u && !on_columns;
    }
    return out_width == 0u && !(in_band != 0u && out_band != 0u) && !(on_columns && (in_band | out_band) != 0u);
}

static tgr_status check_tile_plans(const tgr_plan *p, tgr_error *err)
{
    uint32_t i;
    for (i = 0; i < p->num_tile_plans; ++i) {
        const uint8_t *r = tile_rec(p, i);
        uint32_t tileable = r[0];
        uint32_t axis = p->version >= 5u ? r[1] : (tileable ? 1u : 0u);
        if (tileable > 1u || (axis != 0u && axis != 1u && axis != 3u) || (tileable != 0u) == (axis == 0u)) {
            return tgr_fail(err, TGR_ERR_STAGE, "tile plan %u (tileable %u, axis %u) is invalid", i, tileable,
                            axis);
        }
        if (axis == 3u) {
            /* The 2-D path walks the output in tiles of exactly this size (path_tiles.c). */
            uint32_t tile_h = p->version >= 10u ? rd_u32(r + 8) : rd_u16(r + 2);
            uint32_t tile_w = p->version >= 10u ? rd_u32(r + 12) : rd_u16(r + 20);
            if (tile_h == 0u || tile_w == 0u || tile_h > 0x7FFFFFFFu || tile_w > 0x7FFFFFFFu) {
                return tgr_fail(err, TGR_ERR_STAGE, "tile plan %u has a 2-D tile of %u x %u", i, tile_h, tile_w);
            }
        }
        /* v9 gave bytes 22-23 one flag, BAND_ON_COLUMNS; before they were 0 */
        if (p->version < 10u && (rd_u16(r + 22) & (p->version == 9u ? ~1u : 0xFFFFu)) != 0u) {
            return tgr_fail(err, TGR_ERR_STAGE, "tile plan %u has reserved bits set", i);
        }
        if (p->version >= 10u) {
            if ((rd_u16(r + 2) & ~1u) != 0u || rd_u32(r + 24) != 0u) {
                return tgr_fail(err, TGR_ERR_STAGE, "tile plan %u has reserved bits set", i);
            }
            if (tileable && (rd_u32(r + 28) == 0u || rd_u32(r + 28) > p->budget)) {
                return tgr_fail(err, TGR_ERR_STAGE, "tile plan %u tiled peak %u outside (0, budget]", i,
                                rd_u32(r + 28));
            }
            if (!v10_extents_fit_mode(r)) {
                return tgr_fail(err, TGR_ERR_STAGE, "tile plan %u (axis %u) sets extents its mode does not use", i,
                                axis);
            }
        }
    }
    return TGR_OK;
}

static tgr_status check_stages(const tgr_plan *p, tgr_error *err)
{
    uint32_t s, i, next_op = 0;
    tgr_status st;
    for (s = 0; s < p->num_stages; ++s) {
        const uint8_t *r = stage_rec(p, s);
        uint32_t count = stage_ops_count(p, s);
        uint32_t tile = stage_tile_plan(p, s);
        if (count == 0u) {
            return tgr_fail(err, TGR_ERR_STAGE, "stage %u has no ops", s);
        }
        if ((uint64_t)stage_ops_off(p, s) + count > p->index_pool_count ||
            (uint64_t)rd_u16(r + 8) + stage_in_count(p, s) > p->index_pool_count ||
            (uint64_t)rd_u16(r + 12) + stage_out_count(p, s) > p->index_pool_count) {
            return tgr_fail(err, TGR_ERR_RANGE, "stage %u lists outside the index pool", s);
        }
        if (stage_in_count(p, s) > TGR_MAX_STAGE_IO || stage_out_count(p, s) > TGR_MAX_STAGE_IO) {
            return tgr_fail(err, TGR_ERR_LIMIT, "plan exceeds executor limits: stage %u has %u inputs, %u outputs",
                            s, stage_in_count(p, s), stage_out_count(p, s));
        }
        for (i = 0; i < count; ++i) {
            uint32_t o = stage_op(p, s, i);
            /* `o < num_ops` before the op record is read: a list that runs on past the last op
             * would otherwise read hint bytes beyond the op table. */
            if (o != next_op || o >= p->num_ops) {
                return tgr_fail(err, TGR_ERR_STAGE, "stage op lists do not partition the ops in order (stage %u)", s);
            }
            if (op_rec(p, o)[7] != (s & 0xFFu)) {
                return tgr_fail(err, TGR_ERR_STAGE, "op %u stage hint %u disagrees with stage %u", o,
                                op_rec(p, o)[7], s);
            }
            ++next_op;
        }
        for (i = 0; i < stage_in_count(p, s); ++i) {
            if (stage_input(p, s, i) >= p->num_tensors) {
                return tgr_fail(err, TGR_ERR_RANGE, "stage %u input names tensor %u", s, stage_input(p, s, i));
            }
        }
        for (i = 0; i < stage_out_count(p, s); ++i) {
            if (stage_output(p, s, i) >= p->num_tensors) {
                return tgr_fail(err, TGR_ERR_RANGE, "stage %u output names tensor %u", s, stage_output(p, s, i));
            }
        }
        if (tile != NONE16 && tile >= p->num_tile_plans) {
            return tgr_fail(err, TGR_ERR_RANGE, "stage %u tile plan %u of %u", s, tile, p->num_tile_plans);
        }
        if (rd_u16(r + 18) != 0u || (rd_u16(r + 26) & ~1u) != 0u) {
            return tgr_fail(err, TGR_ERR_STAGE, "stage %u has reserved bits set", s);
        }
    }
    if (next_op != p->num_ops) {
        return tgr_fail(err, TGR_ERR_STAGE, "ops %u..%u belong to no stage", next_op, p->num_ops - 1u);
    }
    for (s = 0; s < p->num_stages; ++s) {
        st = check_stage_io(p, s, err);
        if (st != TGR_OK) {
            return st;
        }
    }
    for (i = 0; i < p->num_outputs; ++i) {
        uint32_t t = model_io_tensor(p, p->num_inputs + i);
        int listed = 0;
        for (s = 0; s < p->num_stages && !listed; ++s) {
            listed = stage_lists_output(p, s, t);
        }
        if (!listed) {
            return tgr_fail(err, TGR_ERR_STAGE, "model output tensor %u leaves no stage", t);
        }
    }
    return TGR_OK;
}

/* ---- entry point ------------------------------------------------------------------------- */

/* The reference refuses a plan whose fast-arena need (budget + decompressed-weight reserve)
 * reaches 2^32 - 1 ("Unrepresentable host memory requirements"; measured: one byte less loads):
 * so do we, though the sum itself still fits 32 bits. */
static tgr_status check_memory_representable(const tgr_plan *p, tgr_error *err)
{
    if ((uint64_t)p->budget + p->weight_reserve >= 0xFFFFFFFFu) {
        return tgr_fail(err, TGR_ERR_LIMIT, "unrepresentable host memory requirements: budget %u + weight reserve %u "
                        "reaches 2^32 - 1", p->budget, p->weight_reserve);
    }
    return TGR_OK;
}

tgr_status tgr_plan_load(tgr_plan *plan, const void *data, uint32_t size, tgr_error *err)
{
    sections s;
    tgr_status st;
    tgr_plan p;
    uint32_t paths_seen = 0u;
    if (plan == NULL || data == NULL) {
        return tgr_fail(err, TGR_ERR_ARGUMENT, "plan and data must not be NULL");
    }
    memset(plan, 0, sizeof *plan);
    memset(&p, 0, sizeof p);
    st = read_header(&p, (const uint8_t *)data, size, err);
    if (st == TGR_OK) st = read_directory(&p, &s, err);
    if (st == TGR_OK) st = require_section(&s, SEC_TENSORS, "tensors", err);
    if (st == TGR_OK) st = require_section(&s, SEC_OPS, "ops", err);
    if (st == TGR_OK) st = require_section(&s, SEC_STAGES, "stages", err);
    if (st == TGR_OK) st = require_section(&s, SEC_INDEX_POOL, "index pool", err);
    if (st == TGR_OK) st = require_section(&s, SEC_SHAPE_POOL, "shape pool", err);
    if (st == TGR_OK) st = require_section(&s, SEC_STRINGS, "strings", err);
    if (st == TGR_OK && p.num_tile_plans > 0u) st = require_section(&s, SEC_TILE_PLANS, "tile plans", err);
    if (st == TGR_OK && p.num_quant > 0u) st = require_section(&s, SEC_QUANT_PARAMS, "quant params", err);
    if (st == TGR_OK) st = fit_records(&s, SEC_TENSORS, p.num_tensors, TENSOR_SIZE, err);
    if (st == TGR_OK) st = fit_records(&s, SEC_OPS, p.num_ops, OP_SIZE, err);
    if (st == TGR_OK) st = fit_records(&s, SEC_STAGES, p.num_stages, STAGE_SIZE, err);
    if (st == TGR_OK && p.num_tile_plans > 0u) {
        st = fit_records(&s, SEC_TILE_PLANS, p.num_tile_plans, tile_rec_size(&p), err);
    }
    if (st != TGR_OK) {
        return st;
    }
    p.tensors = p.data + s.start[SEC_TENSORS];
    p.ops = p.data + s.start[SEC_OPS];
    p.stages = p.data + s.start[SEC_STAGES];
    p.tile_plans = s.present[SEC_TILE_PLANS] ? p.data + s.start[SEC_TILE_PLANS] : NULL;
    p.index_pool = p.data + s.start[SEC_INDEX_POOL];
    p.index_pool_count = (s.end[SEC_INDEX_POOL] - s.start[SEC_INDEX_POOL]) / 2u;
    p.shape_pool = p.data + s.start[SEC_SHAPE_POOL];
    p.shape_pool_count = (s.end[SEC_SHAPE_POOL] - s.start[SEC_SHAPE_POOL]) / 4u;
    p.strings = (const char *)(p.data + s.start[SEC_STRINGS]);
    p.strings_len = s.end[SEC_STRINGS] - s.start[SEC_STRINGS];
    if (!string_ok(&p, rd_u32(p.data + 32))) {
        return tgr_fail(err, TGR_ERR_RANGE, "model name is not a valid string");
    }
    if (p.num_quant == 0u) {
        return tgr_fail(err, TGR_ERR_UNSUPPORTED,
                        "float32 plans are not supported by this runtime; compile an int8 model");
    }
    p.is_int8 = 1u;
    st = bind_quant(&p, &s, err);
    if (st == TGR_OK && s.present[SEC_SUBGRAPHS]) st = tgr_bind_graphs(&p, s.start[SEC_SUBGRAPHS], s.end[SEC_SUBGRAPHS], err);
    if (st == TGR_OK && s.present[SEC_STATE]) st = tgr_bind_state(&p, s.start[SEC_STATE], s.end[SEC_STATE], err);
    if (st == TGR_OK) st = bind_weights(&p, &s, err);
    if (st == TGR_OK) st = bind_attributes(&p, &s, err);
    if (st == TGR_OK) st = check_tensors(&p, err);
    if (st == TGR_OK) st = tgr_check_state(&p, s.end[SEC_STATE] - s.start[SEC_STATE], err);
    if (st == TGR_OK) st = check_interface(&p, err);
    if (st == TGR_OK) st = check_op_records(&p, err);
    if (st == TGR_OK) st = check_dataflow(&p, err);
    if (st == TGR_OK) st = check_stages(&p, err);
    if (st == TGR_OK) st = check_tile_plans(&p, err);
    if (st == TGR_OK) st = tgr_check_weight_blocks(&p, err);
    if (st == TGR_OK) st = check_memory_representable(&p, err);
    if (st == TGR_OK) st = tgr_check_kernels(&p, err);
    if (st == TGR_OK) st = tgr_check_paths(&p, &paths_seen, err); /* the set matters to plan_needs only */
    if (st != TGR_OK) {
        return st;
    }
    *plan = p;
    if (err != NULL) {
        err->status = TGR_OK;
        err->message[0] = '\0';
    }
    return TGR_OK;
}
