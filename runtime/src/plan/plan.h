/*
 * Reading a plan: wire constants, record accessors (inline, over the packed little-endian
 * records) and the few lookups that need a loop (plan.c). Every accessor trusts the plan: it
 * is valid only after the loader accepted it, which is what lets every layer above read
 * records without bounds checks. Layout: docs/plan-format.md.
 */
#ifndef TGR_PLAN_PLAN_H
#define TGR_PLAN_PLAN_H

#include <stdint.h>
#include <string.h>

#include "base/bytes.h"
#include "base/error.h"
#include "tgr.h"

/* ---- wire constants ---------------------------------------------------------------------- */

enum {
    SEC_TENSORS = 1, SEC_OPS, SEC_STAGES, SEC_TILE_PLANS, SEC_INDEX_POOL, SEC_SHAPE_POOL,
    SEC_STRINGS, SEC_WEIGHTS, SEC_QUANT_PARAMS, SEC_WEIGHT_BLOCKS, SEC_OP_ATTRIBUTES, SEC_STATE,
    SEC_SUBGRAPHS, SEC_COUNT = SEC_SUBGRAPHS
};

#define HEADER_SIZE 48u
#define TENSOR_SIZE 16u
#define OP_SIZE 38u
#define STAGE_SIZE 28u
#define TILE_SIZE_V9 24u
#define TILE_SIZE_V10 32u
#define WEIGHT_ENTRY_SIZE 12u
#define QUANT_ENTRY_SIZE 16u
#define BLOCK_ENTRY_SIZE 20u
#define ATTR_ENTRY_SIZE 8u
#define NONE16 0xFFFFu

enum {
    TF_CONSTANT = 0x01, TF_MODEL_INPUT = 0x02, TF_MODEL_OUTPUT = 0x04, TF_LINEAR = 0x08,
    TF_STATE = 0x10
};

enum {
    ATTR_TRANSPOSE_PERM = 1, ATTR_EPSILON, ATTR_ALPHA, ATTR_CLIP_BOUNDS, ATTR_PADS, ATTR_AXES,
    ATTR_BINARY_REQUANT, ATTR_POOL_ROUNDING, ATTR_CONSTANT_OPERAND, ATTR_RESIZE_SCALES,
    ATTR_CUMSUM_OPTIONS, ATTR_MOVEMENT, ATTR_COMPARISON_REQUANT, ATTR_CONSTANTS, ATTR_SVDF,
    ATTR_LSTM, ATTR_SUBGRAPHS, ATTR_DETECTION, ATTR_GELU_APPROXIMATE, ATTR_TABLE_SHAPE,
    ATTR_KIND_MAX = ATTR_TABLE_SHAPE
};

enum {
    OP_CONV = 1, OP_DEPTHWISE = 2, OP_RELU = 3, OP_RELU6 = 4, OP_MAX_POOL = 5, OP_AVG_POOL = 6,
    OP_ADD = 7, OP_MUL = 8, OP_GEMM = 9, OP_SOFTMAX = 10, OP_GLOBAL_AVG = 15, OP_FLATTEN = 16,
    OP_CONCAT = 13, OP_PAD = 14, OP_RESHAPE = 17, OP_SUB = 18, OP_CONV_TRANSPOSE = 24, OP_MATMUL = 25, OP_REDUCE_MEAN = 26,
    OP_TRANSPOSE = 29, OP_RESIZE = 30, OP_GLOBAL_MAX = 31, OP_SPLIT = 35, OP_RESIZE_LINEAR = 36, OP_REDUCE_MAX = 60, OP_REDUCE_MIN = 61,
    OP_REDUCE_SUM = 62, OP_CUMSUM = 63, OP_ARG_MAX = 64, OP_ARG_MIN = 65, OP_GATHER = 66, OP_GATHER_ND = 67, OP_STRIDED_SLICE = 68, OP_MIRROR_PAD = 69, OP_REVERSE = 70,
    OP_UPDATE_SLICE = 72, OP_EQUAL = 73, OP_LESS = 74, OP_LESS_EQUAL = 75, OP_GREATER = 76, OP_GREATER_EQUAL = 77,
    OP_AND = 78, OP_OR = 79, OP_NOT = 80, OP_WHERE = 81, OP_CAST = 82, OP_REDUCE_ALL = 84, OP_SVDF = 85, OP_LSTM = 86,
    OP_IF = 87, OP_WHILE = 88, OP_DETECTION_POSTPROCESS = 89,
    OP_QUANTIZE = 90,
    OP_DEQUANTIZE = 91, OP_MAX_CODE = 92
};

#define ACT_NONE 0u
#define ACT_RELU 1u
#define ACT_RELU6 2u

/* ---- record accessors (valid only after the loader accepted the plan) --------------------- */

static inline const uint8_t *tensor_rec(const tgr_plan *p, uint32_t t) { return p->tensors + t * TENSOR_SIZE; }
static inline uint32_t tensor_bytes(const tgr_plan *p, uint32_t t) { return rd_u32(tensor_rec(p, t) + 4); }
static inline uint32_t tensor_ndim(const tgr_plan *p, uint32_t t) { return tensor_rec(p, t)[10]; }
static inline uint32_t tensor_dtype(const tgr_plan *p, uint32_t t) { return tensor_rec(p, t)[11]; }
static inline uint32_t tensor_flags(const tgr_plan *p, uint32_t t) { return tensor_rec(p, t)[12]; }
static inline uint32_t tensor_quant(const tgr_plan *p, uint32_t t) { return rd_u16(tensor_rec(p, t) + 13); }
static inline uint32_t tensor_iface(const tgr_plan *p, uint32_t t)
{
    return p->version >= 6 ? tensor_rec(p, t)[15] : 0u;
}
static inline int32_t tensor_dim(const tgr_plan *p, uint32_t t, uint32_t axis)
{
    return rd_i32(p->shape_pool + 4u * ((uint32_t)rd_u16(tensor_rec(p, t) + 8) + axis));
}

static inline const uint8_t *op_rec(const tgr_plan *p, uint32_t o) { return p->ops + o * OP_SIZE; }
static inline uint32_t op_type(const tgr_plan *p, uint32_t o) { return op_rec(p, o)[4]; }
static inline uint32_t op_num_inputs(const tgr_plan *p, uint32_t o) { return op_rec(p, o)[5]; }
static inline uint32_t op_num_outputs(const tgr_plan *p, uint32_t o) { return op_rec(p, o)[6]; }
/* Byte 12 (op_decode's kernel_h, the window height) under its other two names: the axis a Concat
 * joins or a Split cuts, and the sampling convention of a Resize or ResizeLinear. */
static inline uint32_t op_concat_axis(const tgr_plan *p, uint32_t o) { return op_rec(p, o)[12]; }
static inline uint32_t op_resize_sampling(const tgr_plan *p, uint32_t o) { return op_rec(p, o)[12]; }
static inline uint32_t pool_index(const tgr_plan *p, uint32_t element)
{
    return rd_u16(p->index_pool + 2u * element);
}
static inline uint32_t op_input(const tgr_plan *p, uint32_t o, uint32_t i)
{
    return pool_index(p, (uint32_t)rd_u16(op_rec(p, o) + 8) + i);
}
static inline uint32_t op_output(const tgr_plan *p, uint32_t o, uint32_t i)
{
    return pool_index(p, (uint32_t)rd_u16(op_rec(p, o) + 10) + i);
}

/* Spatial fields of an op record, decoded. */
typedef struct op_spatial {
    uint32_t kernel_h, kernel_w, stride_h, stride_w;
    uint32_t pad_top, pad_bottom, pad_left, pad_right;
    uint32_t dilation_h, dilation_w, group;
    uint32_t weight_idx, bias_idx, fused_act;
    int32_t act_min, act_max;
} op_spatial;

static inline void op_decode(const tgr_plan *p, uint32_t o, op_spatial *s)
{
    const uint8_t *r = op_rec(p, o);
    s->kernel_h = r[12];
    s->kernel_w = r[13];
    s->stride_h = r[14];
    s->stride_w = r[15];
    s->pad_top = rd_u16(r + 16);
    s->pad_bottom = rd_u16(r + 18);
    s->pad_left = rd_u16(r + 20);
    s->pad_right = rd_u16(r + 22);
    s->dilation_h = rd_u16(r + 24);
    s->dilation_w = rd_u16(r + 26);
    s->group = rd_u16(r + 28);
    s->weight_idx = rd_u16(r + 30);
    s->bias_idx = rd_u16(r + 32);
    s->fused_act = r[34];
    s->act_min = (int8_t)r[35];
    s->act_max = (int8_t)r[36];
}

static inline const uint8_t *stage_rec(const tgr_plan *p, uint32_t s) { return p->stages + s * STAGE_SIZE; }
static inline uint32_t stage_peak(const tgr_plan *p, uint32_t s) { return rd_u32(stage_rec(p, s)); }
static inline uint32_t stage_ops_off(const tgr_plan *p, uint32_t s) { return rd_u16(stage_rec(p, s) + 4); }
static inline uint32_t stage_ops_count(const tgr_plan *p, uint32_t s) { return rd_u16(stage_rec(p, s) + 6); }
static inline uint32_t stage_in_count(const tgr_plan *p, uint32_t s) { return rd_u16(stage_rec(p, s) + 10); }
static inline uint32_t stage_out_count(const tgr_plan *p, uint32_t s) { return rd_u16(stage_rec(p, s) + 14); }
static inline uint32_t stage_input(const tgr_plan *p, uint32_t s, uint32_t i)
{
    return pool_index(p, (uint32_t)rd_u16(stage_rec(p, s) + 8) + i);
}
static inline uint32_t stage_output(const tgr_plan *p, uint32_t s, uint32_t i)
{
    return pool_index(p, (uint32_t)rd_u16(stage_rec(p, s) + 12) + i);
}
static inline uint32_t stage_op(const tgr_plan *p, uint32_t s, uint32_t i)
{
    return pool_index(p, stage_ops_off(p, s) + i);
}
static inline uint32_t stage_tile_plan(const tgr_plan *p, uint32_t s) { return rd_u16(stage_rec(p, s) + 16); }
static inline uint32_t stage_chain_id(const tgr_plan *p, uint32_t s) { return rd_u16(stage_rec(p, s) + 20); }
static inline uint32_t stage_chain_len(const tgr_plan *p, uint32_t s) { return rd_u16(stage_rec(p, s) + 22); }

static inline uint32_t model_io_tensor(const tgr_plan *p, uint32_t element)
{
    return pool_index(p, (uint32_t)p->model_io_off + element);
}

/* Graphs (SEC_SUBGRAPHS, 12-byte entries): graph 0 is the main graph; the graphs If/While run
 * follow, each a contiguous stage range with its input and output tensors as index-pool runs.
 * A plan without control flow is one graph of every stage. */
#define GRAPH_ENTRY_SIZE 12u
static inline uint32_t graph_field(const tgr_plan *p, uint32_t g, uint32_t field)
{
    return rd_u16(p->graphs + g * GRAPH_ENTRY_SIZE + 2u * field);
}
static inline uint32_t graph_first_stage(const tgr_plan *p, uint32_t g) { return p->num_graphs ? graph_field(p, g, 0) : 0u; }
static inline uint32_t graph_end_stage(const tgr_plan *p, uint32_t g)
{
    return p->num_graphs ? graph_field(p, g, 0) + graph_field(p, g, 1) : p->num_stages;
}
static inline uint32_t graph_in_count(const tgr_plan *p, uint32_t g) { return p->num_graphs ? graph_field(p, g, 3) : 0u; }
static inline uint32_t graph_out_count(const tgr_plan *p, uint32_t g) { return p->num_graphs ? graph_field(p, g, 5) : 0u; }
static inline uint32_t graph_input(const tgr_plan *p, uint32_t g, uint32_t i) { return pool_index(p, graph_field(p, g, 2) + i); }
static inline uint32_t graph_output(const tgr_plan *p, uint32_t g, uint32_t i) { return pool_index(p, graph_field(p, g, 4) + i); }
/* State variables (SEC_STATE): u16 count, u16 0, u32 state_bytes, then 16-byte entries
 * { u16 input, u16 output (0xFFFF none), u32 offset, u32 bytes, u32 initial (from the section
 * start) }. */
#define STATE_ENTRY_SIZE 16u
static inline const uint8_t *state_entry(const tgr_plan *p, uint32_t i) { return p->state + 8u + STATE_ENTRY_SIZE * i; }
static inline uint32_t state_input(const tgr_plan *p, uint32_t i) { return rd_u16(state_entry(p, i)); }
static inline uint32_t state_output(const tgr_plan *p, uint32_t i) { return rd_u16(state_entry(p, i) + 2); }
static inline uint32_t state_offset(const tgr_plan *p, uint32_t i) { return rd_u32(state_entry(p, i) + 4); }
static inline uint32_t state_size(const tgr_plan *p, uint32_t i) { return rd_u32(state_entry(p, i) + 8); }
static inline const uint8_t *state_initial(const tgr_plan *p, uint32_t i) { return p->state + rd_u32(state_entry(p, i) + 12); }
/* Whether t holds a variable's next value (kept to the end of the run, then saved). */
static inline int is_state_output(const tgr_plan *p, uint32_t t)
{
    uint32_t i;
    for (i = 0; i < p->num_state; ++i) {
        if (state_output(p, i) == t) {
            return 1;
        }
    }
    return 0;
}

/* Whether t is in graph g's input (0) or output (1) list. */
static inline int graph_lists(const tgr_plan *p, uint32_t g, int outputs, uint32_t t)
{
    uint32_t i, n = outputs ? graph_out_count(p, g) : graph_in_count(p, g);
    for (i = 0; i < n; ++i) {
        if ((outputs ? graph_output(p, g, i) : graph_input(p, g, i)) == t) {
            return 1;
        }
    }
    return 0;
}
/* The graph stage s belongs to. */
static inline uint32_t graph_of_stage(const tgr_plan *p, uint32_t s)
{
    uint32_t g;
    for (g = p->num_graphs; g > 1u; --g) {
        if (s >= graph_first_stage(p, g - 1u)) {
            return g - 1u;
        }
    }
    return 0u;
}

/* Quantization entry fields. */
static inline const uint8_t *quant_rec(const tgr_plan *p, uint32_t q) { return p->quant_entries + q * QUANT_ENTRY_SIZE; }
static inline float quant_scale(const tgr_plan *p, uint32_t q) { return rd_f32(quant_rec(p, q)); }
static inline int32_t quant_zero_point(const tgr_plan *p, uint32_t q) { return rd_i32(quant_rec(p, q) + 4); }
static inline uint32_t quant_channels(const tgr_plan *p, uint32_t q) { return rd_u16(quant_rec(p, q) + 8); }
/* Element index of the first multiplier / shift of an entry in the quant data pool. */
static inline uint32_t quant_page_base(const tgr_plan *p, uint32_t q)
{
    return p->version >= 3 ? 65536u * rd_u16(quant_rec(p, q) + 14) : 0u;
}
static inline const uint8_t *quant_multipliers(const tgr_plan *p, uint32_t q)
{
    return p->quant_data + 4u * (quant_page_base(p, q) + rd_u16(quant_rec(p, q) + 10));
}
static inline const uint8_t *quant_shifts(const tgr_plan *p, uint32_t q)
{
    return p->quant_data + 4u * (quant_page_base(p, q) + rd_u16(quant_rec(p, q) + 12));
}

static inline uint32_t weight_offset(const tgr_plan *p, uint32_t w) { return rd_u32(p->weight_entries + w * WEIGHT_ENTRY_SIZE + 4); }
static inline uint32_t weight_size(const tgr_plan *p, uint32_t w) { return rd_u32(p->weight_entries + w * WEIGHT_ENTRY_SIZE + 8); }
static inline const uint8_t *weight_data(const tgr_plan *p, uint32_t w) { return p->weight_blob + weight_offset(p, w); }

/* Attribute lookup: payload of kind `kind` for op `op`, or NULL. */
const uint8_t *tgr_attr_find(const tgr_plan *p, uint32_t op, uint32_t kind, uint32_t *len);

/* ---- op table ---------------------------------------------------------------------------- */

/* Canonical operator name of an opcode ("Conv", ...), or "unknown". */
const char *tgr_op_name(uint32_t opcode);

/* ---- stages ------------------------------------------------------------------------------ */

/* Tile-plan records grew from 24 to 32 bytes in schema 10. */
static inline uint32_t tile_rec_size(const tgr_plan *p) { return p->version >= 10u ? TILE_SIZE_V10 : TILE_SIZE_V9; }
static inline const uint8_t *tile_rec(const tgr_plan *p, uint32_t tile) { return p->tile_plans + tile * tile_rec_size(p); }

/* The tile-plan record a stage names, or NULL without one. */
static inline const uint8_t *stage_tile_rec(const tgr_plan *p, uint32_t s)
{
    uint32_t tile = stage_tile_plan(p, s);
    return tile == NONE16 ? NULL : tile_rec(p, tile);
}

/* Fast bytes a stage may use when `available` are free: its tile plan's limit, else its
 * scheduled peak, never above `available` (docs/execution.md#fast-limit-and-the-needs-tiling-test). */
uint32_t tgr_stage_fast_limit(const tgr_plan *p, uint32_t stage, uint32_t available);
/* True when the stage's boundary tensors together exceed `limit`: it cannot run untiled. */
int tgr_stage_needs_tiling(const tgr_plan *p, uint32_t stage, uint32_t limit);

#endif /* TGR_PLAN_PLAN_H */
