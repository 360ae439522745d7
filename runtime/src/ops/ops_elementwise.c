/*
 * Elementwise binary family: Add, Sub, Mul, Max, Min, SquaredDifference and PRelu on two
 * operands, the comparisons Equal/Less/LessOrEqual/Greater/GreaterOrEqual (int8 operands, bool
 * result) and And/Or (bool operands and result), and Sum (ADD_N) on any number of same-shape
 * inputs.
 *
 * Operands. A binary op reads two *model operands* (positions 0 and 1). Each is a runtime
 * tensor or the op's constant (weight_idx), placed by OP_ATTR_CONSTANT_OPERAND
 * {u8 position, u8 0, u16 quant index, optional i32 stored shape}; runtime inputs fill the other
 * position in order. A constant is stored in the output's axis order at the output's rank; its
 * shape is explicit in the attribute, or implied by its size: one value (scalar), one value per
 * last stored axis, or the whole output.
 *
 * Broadcasting. Every operand has the output's rank and layout, and each extent equals the
 * output's or is 1 (the compiler inserts Reshape/Transpose to get there). Iteration walks the
 * output with per-operand strides, 0 on broadcast axes, merging axes that are contiguous for
 * every operand, so a same-shape op is one kernel call and a per-channel operand one call per
 * pixel. In spatial tiles and row bands (`region` != NULL) buffers hold bands of the row axis
 * (and of the columns of rank 4): runtime tensors are addressed relative to their band,
 * constants by absolute position.
 *
 * Refused at load (each where the reference refuses the plan or fails its runs, or where our
 * band paths cannot feed the op):
 *  - a runtime operand broadcasting along a banded axis in a stage that may tile: path_tiles
 *    derives every input's band from the output's 1:1 (the reference loads the one row whole);
 *    in banded matrix stages any broadcasting runtime operand (the reference refuses those);
 *  - a constant varying along axis 0 of a banded matrix stage (the reference fails the run);
 *  - above rank 4, broadcasting other than on leading axes (the reference fails the run);
 *  - Max/Min with mixed quantization; fused activations except on Add;
 *  - a constant Div divisor holding its zero point (every run of the reference fails on it; a
 *    runtime divisor at its zero point fails the run, TGR_OP_FALLIBLE).
 */
#include "kernels/fixedpoint.h"
#include "kernels/kernels_act.h"
#include "ops/ops.h"

/* Comparisons lift both centred codes by 2^8 before their pairs when the plan leaves the lift out
 * (docs/plan-format.md#op-attributes, OP_ATTR_COMPARISON_REQUANT). */
#define COMPARISON_LIFT 8

enum {
    OP_DIV = 19, OP_SQUARED_DIFF = 40, OP_MAXIMUM = 41, OP_MINIMUM = 42, OP_PRELU = 55, OP_SUM = 83
};

/* Axes a region bands, as tgr_row_axis defines them from the output's extents: axis 1 of rank 4
 * (plus the column axis 2), else the outermost axis longer than 1. */
static uint32_t row_axis_of(const int32_t *out_dim, uint32_t rank)
{
    uint32_t axis;
    if (rank == 4u) {
        return 1u;
    }
    for (axis = 0; axis < rank; ++axis) {
        if (out_dim[axis] > 1) {
            return axis;
        }
    }
    return 0u;
}

/* ---- operands ------------------------------------------------------------------------------ */

typedef struct operand {
    uint32_t tensor;             /* runtime tensor, or NONE16 for the constant */
    const int8_t *constant;      /* the constant's data (plan weights) */
    tgr_qparams q;
    int32_t dim[TGR_MAX_RANK];   /* at the output's rank, in its axis order */
} operand;

typedef struct binary_op {
    uint32_t rank;               /* the output's */
    uint32_t value_bytes;        /* 1 (int8 codes), or 4 (int32 values: every operand int32) */
    int32_t out_dim[TGR_MAX_RANK];
    operand in[2];               /* model operand positions 0 and 1 */
} binary_op;

/* The constant operand's position, quant index and (explicit) shape, from its attribute. */
typedef struct constant_attr {
    uint32_t position;
    uint32_t quant;
    uint32_t explicit_rank;      /* 0 when the shape is implied by the size */
    const uint8_t *shape;
} constant_attr;

static tgr_status read_constant_attr(const tgr_plan *p, uint32_t o, constant_attr *c, uint32_t value_bytes,
                                     tgr_error *err)
{
    uint32_t len = 0;
    const uint8_t *attr = tgr_attr_find(p, o, ATTR_CONSTANT_OPERAND, &len);
    uint32_t out_rank = tensor_ndim(p, op_output(p, o, 0));
    if (attr == NULL) {
        return tgr_fail(err, TGR_ERR_ATTRIBUTE, "op %u (%s): a constant operand without OP_ATTR_CONSTANT_OPERAND", o,
                        tgr_op_name(op_type(p, o)));
    }
    c->position = attr[0];
    c->quant = rd_u16(attr + 2);
    c->explicit_rank = (len - 4u) / 4u;
    c->shape = attr + 4;
    if (attr[1] != 0u || c->position > 1u) {
        return tgr_fail(err, TGR_ERR_ATTRIBUTE, "op %u (%s): constant operand position %u is invalid", o,
                        tgr_op_name(op_type(p, o)), c->position);
    }
    if (value_bytes == 4u ? c->quant != NONE16 : c->quant >= p->num_quant) {
        return tgr_fail(err, TGR_ERR_ATTRIBUTE, value_bytes == 4u ? "op %u (%s): the int32 constant operand names a "
                        "quantization entry" : "op %u (%s): the int8 constant operand has no quantization entry", o,
                        tgr_op_name(op_type(p, o)));
    }
    if (c->explicit_rank != 0u && c->explicit_rank != out_rank) {
        return tgr_fail(err, TGR_ERR_ATTRIBUTE, "op %u (%s): constant operand rank %u differs from the output's", o,
                        tgr_op_name(op_type(p, o)), c->explicit_rank);
    }
    return TGR_OK;
}

/* Shape of the constant at the output's rank: explicit, or implied by its element count. */
static tgr_status constant_shape(const tgr_plan *p, uint32_t o, const constant_attr *c, uint32_t size,
                                 const binary_op *b, int32_t *dim, tgr_error *err)
{
    uint32_t axis;
    uint64_t elements = 1;
    uint32_t last = b->rank - 1u;
    if (b->rank == 0u) { /* scalars (a loop counter) */
        return size == 1u ? TGR_OK
                          : tgr_fail(err, TGR_ERR_WEIGHT, "op %u (%s): constant operand of %u values for a scalar", o,
                                     tgr_op_name(op_type(p, o)), size);
    }
    for (axis = 0; axis < b->rank; ++axis) {
        dim[axis] = c->explicit_rank != 0u ? rd_i32(c->shape + 4u * axis) : 1;
        elements *= dim[axis] > 0 ? (uint32_t)dim[axis] : 0u;
    }
    if (c->explicit_rank == 0u && size != 1u) {
        if (size == (uint32_t)b->out_dim[last]) {
            dim[last] = b->out_dim[last];
        } else {
            memcpy(dim, b->out_dim, b->rank * sizeof dim[0]);
        }
        for (elements = 1, axis = 0; axis < b->rank; ++axis) {
            elements *= (uint32_t)dim[axis];
        }
    }
    if (elements != size) {
        return tgr_fail(err, TGR_ERR_WEIGHT, "op %u (%s): constant operand of %u bytes does not match its shape", o,
                        tgr_op_name(op_type(p, o)), size);
    }
    return TGR_OK;
}

/* Resolve both model operands of binary op o. Load time: checks; run time: trusted. */
static tgr_status binary_operands(const tgr_plan *p, uint32_t o, binary_op *b, tgr_error *err)
{
    op_spatial sp;
    uint32_t out = op_output(p, o, 0);
    uint32_t pos, next = 0, axis;
    constant_attr c = {2u, 0u, 0u, NULL}; /* position 2: no constant */
    tgr_status st;
    op_decode(p, o, &sp);
    b->rank = tensor_ndim(p, out);
    b->value_bytes = op_num_inputs(p, o) > 0u && tensor_dtype(p, op_input(p, o, 0)) == TGR_DTYPE_INT32 ? 4u : 1u;
    for (axis = 0; axis < b->rank; ++axis) {
        b->out_dim[axis] = tensor_dim(p, out, axis);
    }
    if (sp.weight_idx != NONE16) {
        st = read_constant_attr(p, o, &c, b->value_bytes, err);
        if (st != TGR_OK) {
            return st;
        }
    }
    if (op_num_inputs(p, o) + (sp.weight_idx != NONE16 ? 1u : 0u) != 2u) {
        return tgr_bad_op(err, p, o, "needs exactly two operands");
    }
    for (pos = 0; pos < 2u; ++pos) {
        operand *x = &b->in[pos];
        if (pos == c.position) {
            x->tensor = NONE16;
            x->constant = (const int8_t *)weight_data(p, sp.weight_idx);
            if (b->value_bytes == 4u) {
                x->q.scale = 1.0f;
                x->q.zero_point = 0;
            } else {
                x->q.scale = quant_scale(p, c.quant);
                x->q.zero_point = quant_zero_point(p, c.quant);
            }
            if (weight_size(p, sp.weight_idx) % b->value_bytes != 0u) {
                return tgr_bad_op(err, p, o, "its int32 constant is not a whole number of values");
            }
            st = constant_shape(p, o, &c, weight_size(p, sp.weight_idx) / b->value_bytes, b, x->dim, err);
            if (st != TGR_OK) {
                return st;
            }
            continue;
        }
        x->tensor = op_input(p, o, next++);
        x->constant = NULL;
        x->q = tgr_qparams_of(p, x->tensor);
        if (tensor_ndim(p, x->tensor) != b->rank || tgr_model_order(p, x->tensor) != tgr_model_order(p, out)) {
            return tgr_fail(err, TGR_ERR_UNSUPPORTED, "op %u (%s): operands of another rank or layout than the output",
                            o, tgr_op_name(op_type(p, o)));
        }
        for (axis = 0; axis < b->rank; ++axis) {
            x->dim[axis] = tensor_dim(p, x->tensor, axis);
        }
    }
    for (pos = 0; pos < 2u; ++pos) {
        for (axis = 0; axis < b->rank; ++axis) {
            int32_t d = b->in[pos].dim[axis];
            if (d != b->out_dim[axis] && d != 1) {
                return tgr_fail(err, TGR_ERR_OP, "op %u (%s): operand %u does not broadcast to the output", o,
                                tgr_op_name(op_type(p, o)), pos);
            }
        }
    }
    return TGR_OK;
}

/* Above rank 4 the reference only broadcasts an operand that is 1 on leading axes and whole on
 * the rest (it fails the run otherwise, e.g. [1,2,1,4,1] against [1,2,3,4,5]). */
static int high_rank_broadcast_ok(const binary_op *b)
{
    uint32_t pos, axis;
    for (pos = 0; pos < 2u && b->rank > 4u; ++pos) {
        const operand *x = &b->in[pos];
        for (axis = 0; axis < b->rank && x->dim[axis] == 1; ++axis) {
        }
        for (; axis < b->rank; ++axis) {
            if (x->dim[axis] != b->out_dim[axis]) {
                return 0;
            }
        }
    }
    return 1;
}

static int broadcasts(const binary_op *b, const operand *x)
{
    uint32_t axis;
    for (axis = 0; axis < b->rank; ++axis) {
        if (x->dim[axis] != b->out_dim[axis]) {
            return 1;
        }
    }
    return 0;
}

/* A runtime operand of extent 1 where the output is longer, on an axis that tiles and row bands
 * split (rows; columns of rank 4). Band regions map such an operand 1:1 onto the output's band,
 * which only holds on the other axes. Matrices (rank <= 2) may not broadcast at all in a banded
 * stage: the reference refuses such plans at load time. */
static int broadcasts_on_banded_axis(const binary_op *b, const operand *x)
{
    if (x->tensor == NONE16) {
        return 0;
    }
    /* Tiles load a broadcasting operand's single row/column for every tile (path_tiles.c);
     * only row bands of a matrix cannot broadcast. */
    return b->rank <= 2u && broadcasts(b, x);
}

/* The constant operand holds different values for different rows of axis 0. */
static int varies_along_rows(const binary_op *b)
{
    uint32_t pos;
    for (pos = 0; pos < 2u; ++pos) {
        if (b->in[pos].tensor == NONE16 && b->in[pos].dim[0] > 1) {
            return 1;
        }
    }
    return 0;
}

/* A stage with a tile plan or in a chain may run on the tiled paths. */
static int op_may_tile(const tgr_plan *p, uint32_t o)
{
    uint32_t s, i;
    for (s = 0; s < p->num_stages; ++s) {
        for (i = 0; i < stage_ops_count(p, s); ++i) {
            if (stage_op(p, s, i) == o) {
                return stage_tile_plan(p, s) != NONE16 || stage_chain_id(p, s) != NONE16;
            }
        }
    }
    return 0;
}

/* ---- requantization parameters --------------------------------------------------------------- */

/* Add/Sub pairs: OP_ATTR_BINARY_REQUANT when present, else derived from the three scales in
 * double exactly as the compiler derives them (the reference does the same without it). */
static void add_pairs(const tgr_plan *p, uint32_t o, const binary_op *b, tgr_qparams qo, tgr_binary_params *q)
{
    const uint8_t *attr = tgr_attr_find(p, o, ATTR_BINARY_REQUANT, NULL);
    double sa = (double)b->in[0].q.scale;
    double sb = (double)b->in[1].q.scale;
    double twice_max = 2.0 * (sa > sb ? sa : sb);
    uint32_t i;
    if (attr != NULL) {
        for (i = 0; i < 3u; ++i) {
            q->multiplier[i] = rd_i32(attr + 8u * i);
            q->shift[i] = rd_i32(attr + 8u * i + 4u);
        }
        return;
    }
    fp_quantize_multiplier(sa / twice_max, &q->multiplier[0], &q->shift[0]);
    fp_quantize_multiplier(sb / twice_max, &q->multiplier[1], &q->shift[1]);
    fp_quantize_multiplier(twice_max / ((double)(1 << 20) * (double)qo.scale), &q->multiplier[2], &q->shift[2]);
}

/* SquaredDifference: inputs lifted by 2^7 to 2 max(s_a, s_b), the square back by 2^14 s_out. */
static void squared_diff_pairs(const binary_op *b, tgr_qparams qo, tgr_binary_params *q)
{
    double sa = (double)b->in[0].q.scale;
    double sb = (double)b->in[1].q.scale;
    double twice_max = 2.0 * (sa > sb ? sa : sb);
    fp_quantize_multiplier(sa / twice_max, &q->multiplier[0], &q->shift[0]);
    fp_quantize_multiplier(sb / twice_max, &q->multiplier[1], &q->shift[1]);
    fp_quantize_multiplier(twice_max * twice_max / ((double)(1 << 14) * (double)qo.scale), &q->multiplier[2],
                           &q->shift[2]);
}

/* OP_ATTR_COMPARISON_REQUANT (lift, then QM(s_a), QM(s_b)), or the same pairs from the scales. */
static void comparison_pairs(const tgr_plan *p, uint32_t o, double sa, double sb, tgr_binary_params *q)
{
    uint32_t len = 0;
    const uint8_t *attr = tgr_attr_find(p, o, ATTR_COMPARISON_REQUANT, &len);
    if (attr != NULL && len == 20u) {
        q->lift = rd_i32(attr);
        q->multiplier[0] = rd_i32(attr + 4);
        q->shift[0] = rd_i32(attr + 8);
        q->multiplier[1] = rd_i32(attr + 12);
        q->shift[1] = rd_i32(attr + 16);
        return;
    }
    q->lift = COMPARISON_LIFT;
    fp_quantize_multiplier(sa, &q->multiplier[0], &q->shift[0]);
    fp_quantize_multiplier(sb, &q->multiplier[1], &q->shift[1]);
}

static void binary_params(const tgr_plan *p, uint32_t o, const binary_op *b, tgr_binary_params *q)
{
    static const tgr_binary_kind kinds[] = {TGR_BIN_ADD, TGR_BIN_SUB, TGR_BIN_MUL, TGR_BIN_MAX,
                                            TGR_BIN_MIN, TGR_BIN_SQUARED_DIFF, TGR_BIN_PRELU,
                                            TGR_BIN_EQUAL, TGR_BIN_LESS, TGR_BIN_LESS_EQUAL, TGR_BIN_GREATER,
                                            TGR_BIN_GREATER_EQUAL, TGR_BIN_AND, TGR_BIN_OR, TGR_BIN_DIV};
    static const uint8_t opcodes[] = {OP_ADD, OP_SUB, OP_MUL, OP_MAXIMUM, OP_MINIMUM, OP_SQUARED_DIFF, OP_PRELU,
                                      OP_EQUAL, OP_LESS, OP_LESS_EQUAL, OP_GREATER, OP_GREATER_EQUAL, OP_AND, OP_OR,
                                      OP_DIV};
    op_spatial sp;
    tgr_qparams qo = tgr_qparams_of(p, op_output(p, o, 0));
    double sa = (double)b->in[0].q.scale;
    double sb = (double)b->in[1].q.scale;
    uint32_t i;
    op_decode(p, o, &sp);
    memset(q, 0, sizeof *q);
    for (i = 0; i < sizeof opcodes; ++i) {
        q->kind = opcodes[i] == op_type(p, o) ? kinds[i] : q->kind;
    }
    q->a_zp = b->in[0].q.zero_point;
    q->b_zp = b->in[1].q.zero_point;
    q->out_zp = qo.zero_point;
    /* The reference honours act_min/act_max only with a fused activation (Add alone has one). */
    q->act_min = sp.fused_act != ACT_NONE ? sp.act_min : -128;
    q->act_max = sp.fused_act != ACT_NONE ? sp.act_max : 127;
    switch (q->kind) {
    case TGR_BIN_ADD:
    case TGR_BIN_SUB: add_pairs(p, o, b, qo, q); break;
    case TGR_BIN_MUL: fp_quantize_multiplier(sa * sb / (double)qo.scale, &q->multiplier[0], &q->shift[0]); break;
    case TGR_BIN_SQUARED_DIFF: squared_diff_pairs(b, qo, q); break;
    case TGR_BIN_DIV: {
        /* float32 as the reference forms it: s_b * s_out, then s_a over that */
        const float real = b->in[0].q.scale / (b->in[1].q.scale * qo.scale);
        fp_quantize_multiplier((double)real, &q->multiplier[0], &q->shift[0]);
        break;
    }
    case TGR_BIN_PRELU:
        fp_quantize_multiplier(sa / (double)qo.scale, &q->multiplier[0], &q->shift[0]);
        fp_quantize_multiplier(sa * sb / (double)qo.scale, &q->multiplier[1], &q->shift[1]);
        break;
    case TGR_BIN_EQUAL:
    case TGR_BIN_LESS:
    case TGR_BIN_LESS_EQUAL:
    case TGR_BIN_GREATER:
    case TGR_BIN_GREATER_EQUAL:
        comparison_pairs(p, o, sa, sb, q);
        break;
    default: break; /* Max/Min compare raw codes; And/Or read bool bytes */
    }
}

/* ---- load-time check ------------------------------------------------------------------------- */

static tgr_status check_binary(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    op_spatial sp;
    binary_op b;
    tgr_binary_params q;
    uint32_t i, type = op_type(p, o);
    tgr_status st = binary_operands(p, o, &b, err);
    if (st != TGR_OK) {
        return st;
    }
    op_decode(p, o, &sp);
    if (sp.fused_act != ACT_NONE && (type != OP_ADD || b.value_bytes == 4u)) {
        return tgr_bad_op(err, p, o, "a fused activation is only valid on Conv, Gemm and Add");
    }
    if (type == OP_PRELU && b.in[0].tensor == NONE16) {
        return tgr_bad_op(err, p, o, "the PRelu input itself is a constant");
    }
    if (op_may_tile(p, o) && (broadcasts_on_banded_axis(&b, &b.in[0]) || broadcasts_on_banded_axis(&b, &b.in[1]))) {
        return tgr_fail(err, TGR_ERR_UNSUPPORTED,
                        "op %u (%s): a broadcasting runtime operand in a tiled stage is not supported", o,
                        tgr_op_name(type));
    }
    if (!high_rank_broadcast_ok(&b)) {
        return tgr_fail(err, TGR_ERR_UNSUPPORTED,
                        "op %u (%s): above rank 4 only leading axes may broadcast (the reference fails others)", o,
                        tgr_op_name(type));
    }
    if (b.value_bytes == 4u) {
        return TGR_OK; /* int32 values: no quantization, and fused activations are refused above */
    }
    if (op_may_tile(p, o) && b.rank <= 2u && varies_along_rows(&b)) {
        /* Row bands of a matrix: the reference fails such a stage at run time. */
        return tgr_fail(err, TGR_ERR_UNSUPPORTED,
                        "op %u (%s): a constant that varies along the banded row axis is not executable", o,
                        tgr_op_name(type));
    }
    if (type == OP_MAXIMUM || type == OP_MINIMUM) {
        tgr_qparams qo = tgr_qparams_of(p, op_output(p, o, 0));
        for (i = 0; i < 2u; ++i) {
            if (b.in[i].q.scale != qo.scale || b.in[i].q.zero_point != qo.zero_point) {
                /* The reference refuses these too: it compares raw codes. */
                return tgr_bad_op(err, p, o, "operands and output must share one quantization");
            }
        }
    }
    binary_params(p, o, &b, &q);
    if (q.lift < 0 || q.lift > 16) {
        /* The lifted centred code (|x - zp| <= 255) must stay inside int32. */
        return tgr_fail(err, TGR_ERR_ATTRIBUTE, "op %u (%s): comparison left shift %d out of range", o,
                        tgr_op_name(type), q.lift);
    }
    for (i = 0; i < 3u; ++i) {
        if (!tgr_valid_pair(q.multiplier[i], q.shift[i])) {
            return tgr_fail(err, TGR_ERR_ATTRIBUTE, "op %u (%s): requantization pairs out of range", o,
                            tgr_op_name(type));
        }
    }
    return TGR_OK;
}

/* ---- run ------------------------------------------------------------------------------------ */

/* Where one operand (or the output) is read/written: an offset per iterated index plus
 * strides; `origin` is the first index its buffer holds on each axis. */
typedef struct view {
    int32_t stride[TGR_MAX_RANK];
    int32_t origin[TGR_MAX_RANK];
} view;

/* Strides of a buffer holding `dim` (whole, or the band `band` of a region), 0 on axes where
 * the operand broadcasts against the output. */
static void buffer_view(const int32_t *dim, uint32_t rank, const int32_t *band, const int32_t *out_dim, view *v)
{
    int32_t extent[TGR_MAX_RANK];
    int32_t stride = 1;
    uint32_t axis;
    for (axis = 0; axis < rank; ++axis) {
        extent[axis] = dim[axis];
        v->origin[axis] = 0;
    }
    if (band != NULL) {
        uint32_t row = row_axis_of(out_dim, rank);
        extent[row] = band[1] - band[0];
        v->origin[row] = band[0];
        if (rank == 4u) {
            extent[2] = band[3] - band[2];
            v->origin[2] = band[2];
        }
    }
    for (axis = rank; axis-- > 0;) {
        v->stride[axis] = dim[axis] == 1 && out_dim[axis] != 1 ? 0 : stride;
        stride *= extent[axis];
    }
}

typedef struct nest {
    uint32_t depth;
    int32_t count[TGR_MAX_RANK];
    int32_t step[3][TGR_MAX_RANK];   /* a, b, output */
    int32_t start[3];
} nest;

/* Loop nest over the output range [lo, lo + count) per axis, axes merged where every view is
 * contiguous across them (stride[k-1] == stride[k] * count[k]). */
static void make_nest(uint32_t rank, const int32_t *lo, const int32_t *count, const view *views, nest *n)
{
    uint32_t axis, v, k;
    n->depth = 0;
    for (v = 0; v < 3u; ++v) {
        n->start[v] = 0;
        for (axis = 0; axis < rank; ++axis) {
            n->start[v] += (lo[axis] - views[v].origin[axis]) * views[v].stride[axis];
        }
    }
    for (axis = 0; axis < rank; ++axis) {
        int merge = n->depth > 0;
        k = n->depth - 1u;
        for (v = 0; v < 3u && merge; ++v) {
            merge = n->step[v][k] == views[v].stride[axis] * count[axis];
        }
        if (merge) {
            n->count[k] *= count[axis];
            for (v = 0; v < 3u; ++v) {
                n->step[v][k] = views[v].stride[axis];
            }
            continue;
        }
        n->count[n->depth] = count[axis];
        for (v = 0; v < 3u; ++v) {
            n->step[v][n->depth] = views[v].stride[axis];
        }
        ++n->depth;
    }
    if (n->depth == 0u) { /* scalars: one element */
        n->count[0] = 1;
        for (v = 0; v < 3u; ++v) {
            n->step[v][0] = 0;
        }
        n->depth = 1u;
    }
}

/* 0 as soon as a kernel call returns 0 (a run the reference fails), else 1. */
static int run_nest(const nest *n, tgr_binary_kernel kernel, const tgr_binary_params *q, const int8_t *a,
                    const int8_t *b, int8_t *y)
{
    int32_t index[TGR_MAX_RANK] = {0};
    int32_t offset[3];
    uint32_t inner = n->depth - 1u, v, k;
    memcpy(offset, n->start, sizeof offset);
    for (;;) {
        if (!kernel(q, n->count[inner], a + offset[0], n->step[0][inner], b + offset[1], n->step[1][inner],
                    y + offset[2])) {
            return 0;
        }
        for (k = inner; k-- > 0;) {
            for (v = 0; v < 3u; ++v) {
                offset[v] += n->step[v][k];
            }
            if (++index[k] < n->count[k]) {
                break;
            }
            for (v = 0; v < 3u; ++v) {
                offset[v] -= n->step[v][k] * n->count[k];
            }
            index[k] = 0;
        }
        if (k == (uint32_t)-1 || inner == 0u) {
            return 1;
        }
    }
}

static int run_binary(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region,
                      tgr_binary_kernel kernel, tgr_binary_kernel int32_kernel)
{
    uint32_t out = op_output(p, o, 0);
    binary_op b;
    tgr_binary_params q;
    view views[3];
    const int8_t *data[2];
    int32_t lo[TGR_MAX_RANK], count[TGR_MAX_RANK];
    nest n;
    uint32_t i, axis;
    binary_operands(p, o, &b, NULL);
    binary_params(p, o, &b, &q);
    for (i = 0; i < 2u; ++i) {
        const operand *x = &b.in[i];
        int tensor = x->tensor != NONE16;
        data[i] = tensor ? (const int8_t *)tensor_ptr[x->tensor] : x->constant;
        buffer_view(x->dim, b.rank, tensor && region != NULL ? region + 4u * x->tensor : NULL, b.out_dim, &views[i]);
    }
    buffer_view(b.out_dim, b.rank, region != NULL ? region + 4u * out : NULL, b.out_dim, &views[2]);
    for (axis = 0; axis < b.rank; ++axis) {
        lo[axis] = views[2].origin[axis];
        count[axis] = b.out_dim[axis];
    }
    if (region != NULL) {
        uint32_t row = row_axis_of(b.out_dim, b.rank);
        count[row] = region[4u * out + 1u] - region[4u * out];
        if (b.rank == 4u) {
            count[2] = region[4u * out + 3u] - region[4u * out + 2u];
        }
    }
    make_nest(b.rank, lo, count, views, &n);
    if (b.value_bytes == 4u) {
        /* The nest counts elements; the int32 kernels step through operands in bytes, and
         * write 4 bytes per element unless they compare (bool). */
        uint32_t scaled = tensor_dtype(p, out) == TGR_DTYPE_INT32 ? 3u : 2u;
        for (i = 0; i < scaled; ++i) {
            n.start[i] *= 4;
            for (axis = 0; axis < n.depth; ++axis) {
                n.step[i][axis] *= 4;
            }
        }
        kernel = int32_kernel;
    }
    return run_nest(&n, kernel, &q, data[0], data[1], (int8_t *)tensor_ptr[out]);
}

/* One run function per op, naming its kernels (int8, and int32 where the op computes on
 * indices): a firmware links the kernels of its own ops only. A run fails only for Div
 * (TGR_OP_FALLIBLE); the others ignore the always-1 result. */
#define RUN_BINARY_KERNELS(name, int32_kernel)                                                    \
    static uint32_t run_##name(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region) \
    {                                                                                            \
        return run_binary(p, o, tensor_ptr, region, tgr_binary_##name##_s8, int32_kernel) ? TGR_FAULT_NONE \
                                                                                          : TGR_FAULT_ZERO_DIVISOR; \
    }
#define RUN_BINARY_INT32(name) RUN_BINARY_KERNELS(name, tgr_binary_##name##_s32)
#define RUN_BINARY(name) RUN_BINARY_KERNELS(name, NULL)
TGR_BINARY_INT32_KINDS(RUN_BINARY_INT32)
RUN_BINARY(max)
RUN_BINARY(min)
RUN_BINARY(squared_diff)
RUN_BINARY(prelu)
RUN_BINARY(and)
RUN_BINARY(or)
RUN_BINARY(div)

/* ---- Sum (ADD_N) ------------------------------------------------------------------------------ */

#define SUM_CHUNK 64

static tgr_status check_sum(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    op_spatial sp;
    uint32_t out = op_output(p, o, 0);
    uint32_t k;
    op_decode(p, o, &sp);
    if (sp.fused_act != ACT_NONE) {
        return tgr_bad_op(err, p, o, "a fused activation is only valid on Conv, Gemm and Add");
    }
    for (k = 0; k < op_num_inputs(p, o); ++k) {
        uint32_t t = op_input(p, o, k);
        if (!tgr_same_shape(p, t, out)) {
            return tgr_fail(err, TGR_ERR_UNSUPPORTED, "op %u (Sum): inputs of another shape than the output", o);
        }
        if (!tgr_same_qparams(p, t, op_input(p, o, 0))) {
            /* The reference refuses these too. */
            return tgr_bad_op(err, p, o, "inputs must share one quantization");
        }
    }
    return TGR_OK;
}

/* Whole tensors: one "row" of all bytes. Spatial tiles (rank 4): each output row over the
 * output's columns, inputs addressed within their own (possibly larger) bands. Row bands of
 * another rank: one contiguous run of the output's rows. */
typedef struct sum_rows {
    int32_t first, end;          /* output rows to produce (one pass for whole tensors) */
    int32_t length;              /* output bytes per pass */
} sum_rows;

static void sum_rows_of(const tgr_plan *p, uint32_t out, const int32_t *region, sum_rows *s)
{
    int32_t ey[4];
    s->first = 0;
    s->end = 1;
    s->length = (int32_t)tensor_bytes(p, out);
    if (region == NULL) {
        return;
    }
    if (tensor_ndim(p, out) != 4u) {
        s->length = tgr_row_count(p, out, region) * (int32_t)(tensor_bytes(p, out) /
                                                                 (uint32_t)tensor_dim(p, out, tgr_row_axis(p, out)));
        return;
    }
    tgr_extent_of(p, out, region, ey);
    s->first = ey[0];
    s->end = ey[1];
    s->length = (ey[3] - ey[2]) * tensor_dim(p, out, 3);
}

/* Byte offset in input t's buffer of the first element of output pass r. */
static int64_t sum_input_offset(const tgr_plan *p, uint32_t t, uint32_t out, const int32_t *region, int32_t r)
{
    int32_t e[4], ey[4];
    if (region == NULL) {
        return 0;
    }
    if (tensor_ndim(p, out) != 4u) {
        return (int64_t)(region[4u * out] - region[4u * t]) *
               (int64_t)(tensor_bytes(p, t) / (uint32_t)tensor_dim(p, t, tgr_row_axis(p, t)));
    }
    tgr_extent_of(p, t, region, e);
    tgr_extent_of(p, out, region, ey);
    return ((int64_t)(r - e[0]) * (e[3] - e[2]) + (ey[2] - e[2])) * tensor_dim(p, t, 3);
}

static void run_sum(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    uint32_t out = op_output(p, o, 0);
    tgr_qparams qin = tgr_qparams_of(p, op_input(p, o, 0));
    tgr_qparams qout = tgr_qparams_of(p, out);
    int32_t sums[SUM_CHUNK];
    sum_rows rows;
    int32_t r, e0, j;
    uint32_t k;
    sum_rows_of(p, out, region, &rows);
    for (r = rows.first; r < rows.end; ++r) {
        int8_t *py = (int8_t *)tensor_ptr[out] + (int64_t)(r - rows.first) * rows.length;
        for (e0 = 0; e0 < rows.length; e0 += SUM_CHUNK) {
            int32_t n = rows.length - e0 < SUM_CHUNK ? rows.length - e0 : SUM_CHUNK;
            memset(sums, 0, sizeof sums);
            for (k = 0; k < op_num_inputs(p, o); ++k) {
                uint32_t t = op_input(p, o, k);
                const int8_t *px = (const int8_t *)tensor_ptr[t] + sum_input_offset(p, t, out, region, r) + e0;
                for (j = 0; j < n; ++j) {
                    sums[j] += (int32_t)px[j] - qin.zero_point;
                }
            }
            for (j = 0; j < n; ++j) {
                py[e0 + j] = tgr_sum_finish(&qin, &qout, sums[j]);
            }
        }
    }
}

/* ---- Div ---------------------------------------------------------------------------------- */

/* A binary op whose runs fail where a divisor code equals its zero point; a constant divisor
 * holding it fails every run of the reference, so that plan is refused here, at load. */
static tgr_status check_div(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    binary_op b;
    uint32_t i;
    tgr_status st = check_binary(p, o, err);
    if (st != TGR_OK) {
        return st;
    }
    (void)binary_operands(p, o, &b, NULL);
    if (b.in[1].tensor == NONE16) {
        uint32_t elements = 1u, axis;
        for (axis = 0; axis < b.rank; ++axis) {
            elements *= (uint32_t)b.in[1].dim[axis];
        }
        for (i = 0; i < elements; ++i) {
            if ((int32_t)b.in[1].constant[i] == b.in[1].q.zero_point) {
                return tgr_unsupported_op(err, p, o, "a constant divisor holding its zero point (every run would divide by 0)");
            }
        }
    }
    return TGR_OK;
}

TGR_OP_FALLIBLE(OP_ADD, TILING_POINTWISE | TILING_ROWS, check_binary, run_add);
TGR_OP_BANDS(OP_ADD, tgr_band_any_axis);
TGR_OP_FALLIBLE(OP_SUB, TILING_POINTWISE | TILING_ROWS, check_binary, run_sub);
TGR_OP_BANDS(OP_SUB, tgr_band_any_axis);
TGR_OP_FALLIBLE(OP_MUL, TILING_POINTWISE | TILING_ROWS, check_binary, run_mul);
TGR_OP_BANDS(OP_MUL, tgr_band_any_axis);
TGR_OP_FALLIBLE(OP_MAXIMUM, TILING_POINTWISE | TILING_ROWS, check_binary, run_max);
TGR_OP_BANDS(OP_MAXIMUM, tgr_band_any_axis);
TGR_OP_FALLIBLE(OP_MINIMUM, TILING_POINTWISE | TILING_ROWS, check_binary, run_min);
TGR_OP_BANDS(OP_MINIMUM, tgr_band_any_axis);
TGR_OP_FALLIBLE(OP_SQUARED_DIFF, TILING_POINTWISE | TILING_ROWS, check_binary, run_squared_diff);
TGR_OP_BANDS(OP_SQUARED_DIFF, tgr_band_any_axis);
TGR_OP_FALLIBLE(OP_PRELU, TILING_POINTWISE | TILING_ROWS, check_binary, run_prelu);
TGR_OP_BANDS(OP_PRELU, tgr_band_any_axis);
TGR_OP_FALLIBLE(OP_DIV, TILING_POINTWISE | TILING_ROWS, check_div, run_div);
TGR_OP_BANDS(OP_DIV, tgr_band_any_axis);
TGR_OP_IMPL(OP_SUM, TILING_POINTWISE | TILING_ROWS, check_sum, run_sum);
TGR_OP_BANDS(OP_SUM, tgr_band_any_axis);
TGR_OP_FALLIBLE(OP_EQUAL, TILING_POINTWISE | TILING_ROWS, check_binary, run_equal);
TGR_OP_BANDS(OP_EQUAL, tgr_band_any_axis);
TGR_OP_FALLIBLE(OP_LESS, TILING_POINTWISE | TILING_ROWS, check_binary, run_less);
TGR_OP_BANDS(OP_LESS, tgr_band_any_axis);
TGR_OP_FALLIBLE(OP_LESS_EQUAL, TILING_POINTWISE | TILING_ROWS, check_binary, run_less_equal);
TGR_OP_BANDS(OP_LESS_EQUAL, tgr_band_any_axis);
TGR_OP_FALLIBLE(OP_GREATER, TILING_POINTWISE | TILING_ROWS, check_binary, run_greater);
TGR_OP_BANDS(OP_GREATER, tgr_band_any_axis);
TGR_OP_FALLIBLE(OP_GREATER_EQUAL, TILING_POINTWISE | TILING_ROWS, check_binary, run_greater_equal);
TGR_OP_BANDS(OP_GREATER_EQUAL, tgr_band_any_axis);
TGR_OP_FALLIBLE(OP_AND, TILING_POINTWISE | TILING_ROWS, check_binary, run_and);
TGR_OP_BANDS(OP_AND, tgr_band_any_axis);
TGR_OP_FALLIBLE(OP_OR, TILING_POINTWISE | TILING_ROWS, check_binary, run_or);
TGR_OP_BANDS(OP_OR, tgr_band_any_axis);

/* Whether x is 1 on leading axes and whole on the rest, so its bytes repeat with the period of
 * the output's trailing axes. */
static int periodic(const binary_op *b, const operand *x)
{
    uint32_t axis;
    for (axis = 0; axis < b->rank && x->dim[axis] == 1; ++axis) {
    }
    for (; axis < b->rank; ++axis) {
        if (x->dim[axis] != b->out_dim[axis]) {
            return 0;
        }
    }
    return 1;
}

int tgr_binary_elementwise(uint32_t opcode)
{
    /* By opcode, not by comparing run functions: a firmware without these ops must not link
     * run_binary just to ask. */
    switch (opcode) {
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_MAXIMUM: case OP_MINIMUM: case OP_SQUARED_DIFF: case OP_PRELU:
    case OP_EQUAL: case OP_LESS: case OP_LESS_EQUAL: case OP_GREATER: case OP_GREATER_EQUAL: case OP_AND: case OP_OR:
    case OP_DIV:
        return 1;
    default:
        return 0;
    }
}

int tgr_stripe_operands(const tgr_plan *p, uint32_t o)
{
    binary_op b;
    uint32_t pos, axis;
    if (op_type(p, o) == OP_WHERE) {
        /* The compiler bands a Where with a broadcasting operand in rows, never in stripes. */
        for (pos = 0; pos < op_num_inputs(p, o); ++pos) {
            if (!tgr_same_shape(p, op_input(p, o, pos), op_output(p, o, 0))) {
                return 0;
            }
        }
        return 1;
    }
    if (!tgr_binary_elementwise(op_type(p, o))) {
        return 1;
    }
    if (binary_operands(p, o, &b, NULL) != TGR_OK) {
        return 0;
    }
    for (pos = 0; pos < 2u; ++pos) {
        const operand *x = &b.in[pos];
        int leading_ones = 1;
        for (axis = 0; axis + 1u < b.rank; ++axis) {
            leading_ones &= x->dim[axis] == 1;
        }
        if (x->constant != NULL ? (broadcasts(&b, x) ? !periodic(&b, x) : tgr_band_bytes(p, op_output(p, o, 0), NULL) > 1u)
                                : broadcasts(&b, x) && !(pos == 1u && leading_ones && periodic(&b, x))) {
            return 0;
        }
    }
    return 1;
}
