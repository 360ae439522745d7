/*
 * Pooling family: MaxPool and AveragePool over sliding windows, and GlobalAveragePool (TFLite
 * MEAN, or AveragePool rounding when the compiler rewrote a whole-map AveragePool).
 */
#include "ops/ops.h"
#include "ops/ops_window.h"

static tgr_status check_pool(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    op_spatial sp;
    uint32_t span_h, span_w;
    tgr_status st;
    op_decode(p, o, &sp);
    if (sp.fused_act != ACT_NONE) {
        return tgr_bad_op(err, p, o, "pooling takes no fused activation (its bounds alone clamp)");
    }
    st = tgr_check_window_geometry(p, o, &sp, err);
    if (st != TGR_OK) {
        return st;
    }
    span_h = (sp.kernel_h - 1u) * (sp.dilation_h == 0u ? 1u : sp.dilation_h) + 1u;
    span_w = (sp.kernel_w - 1u) * (sp.dilation_w == 0u ? 1u : sp.dilation_w) + 1u;
    if (tensor_dim(p, op_input(p, o, 0), 3) != tensor_dim(p, op_output(p, o, 0), 3) || sp.group != 1u) {
        return tgr_bad_op(err, p, o, "pooling must keep the channel count");
    }
    if (sp.pad_top >= span_h || sp.pad_bottom >= span_h || sp.pad_left >= span_w || sp.pad_right >= span_w) {
        return tgr_bad_op(err, p, o, "a pooling window lies entirely in the padding");
    }
    if (op_type(p, o) == OP_AVG_POOL && span_h * span_w != sp.kernel_h * sp.kernel_w) {
        return tgr_bad_op(err, p, o, "dilated average pooling is not executed by this runtime");
    }
    return tgr_check_rescale(p, o, op_input(p, o, 0), op_output(p, o, 0), err);
}

/* The operands both pooling kernels take, decoded once per run. */
typedef struct pool_call {
    tgr_window w;
    tgr_qparams qin, qout;
    int32_t act_min, act_max;
    const int8_t *input;
    int8_t *output;
} pool_call;

static void pool_call_of(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region,
                         pool_call *c)
{
    op_spatial sp;
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    c->qin = tgr_qparams_of(p, in);
    c->qout = tgr_qparams_of(p, out);
    op_decode(p, o, &sp);
    tgr_window_of(p, o, &sp, region, &c->w);
    c->act_min = sp.act_min;
    c->act_max = sp.act_max;
    c->input = (const int8_t *)tensor_ptr[in];
    c->output = (int8_t *)tensor_ptr[out];
}

/* One run function per op with a direct kernel call: a firmware links only its own pool. */
static void run_max_pool(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    pool_call c;
    pool_call_of(p, o, tensor_ptr, region, &c);
    tgr_max_pool_s8(&c.w, c.input, &c.qin, &c.qout, c.act_min, c.act_max, c.output);
}

static void run_avg_pool(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    pool_call c;
    pool_call_of(p, o, tensor_ptr, region, &c);
    tgr_avg_pool_s8(&c.w, c.input, &c.qin, &c.qout, c.act_min, c.act_max, c.output);
}

static tgr_status check_global_avg(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    const uint8_t *rounding = tgr_attr_find(p, o, ATTR_POOL_ROUNDING, NULL);
    op_spatial sp;
    op_decode(p, o, &sp);
    if (sp.fused_act != ACT_NONE) {
        return tgr_bad_op(err, p, o, "a global average takes no fused activation");
    }
    if (!tgr_is_nhwc(p, in) || tensor_ndim(p, out) != 4u || tensor_dim(p, out, 1) != 1 || tensor_dim(p, out, 2) != 1 ||
        tensor_dim(p, in, 0) != tensor_dim(p, out, 0) || tensor_dim(p, in, 3) != tensor_dim(p, out, 3)) {
        return tgr_bad_op(err, p, o, "expects [N, H, W, C] -> [N, 1, 1, C]");
    }
    if (rounding != NULL && rounding[0] != 1u) {
        return tgr_fail(err, TGR_ERR_ATTRIBUTE, "op %u: unknown pool rounding mode %u", o, rounding[0]);
    }
    /* As ReduceMean: beyond 2^23 positions the int32 sums and zp * count could overflow. */
    if ((uint64_t)tensor_dim(p, in, 1) * (uint64_t)tensor_dim(p, in, 2) > 0x7FFFFFu) {
        return tgr_fail(err, TGR_ERR_UNSUPPORTED, "op %u (%s): a mean over more than 2^23 positions is not supported "
                        "by this runtime", o, tgr_op_name(op_type(p, o)));
    }
    return tgr_check_rescale(p, o, in, out, err);
}

void tgr_mean_of(const tgr_plan *p, uint32_t o, tgr_mean *m)
{
    uint32_t in = op_input(p, o, 0);
    tgr_qparams qin = tgr_qparams_of(p, in);
    tgr_qparams qout = tgr_qparams_of(p, op_output(p, o, 0));
    const int avg_pool_rounding = tgr_attr_find(p, o, ATTR_POOL_ROUNDING, NULL) != NULL;
    op_spatial sp;
    op_decode(p, o, &sp);
    /* A whole-map AveragePool (it carries POOL_ROUNDING) clamps to act_min/act_max as pooling does;
     * the reference ignores them on a plain global average (TFLite MEAN). */
    tgr_mean_prepare(tensor_dim(p, in, 1) * tensor_dim(p, in, 2), &qin, &qout, avg_pool_rounding ? sp.act_min : -128,
                     avg_pool_rounding ? sp.act_max : 127, avg_pool_rounding, m);
}

static void run_global_avg(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    tgr_mean m;
    uint32_t in = op_input(p, o, 0);
    (void)region;
    tgr_mean_of(p, o, &m);
    tgr_global_avg_pool_s8(tensor_dim(p, in, 0), tensor_dim(p, in, 3), (const int8_t *)tensor_ptr[in], &m,
                           (int8_t *)tensor_ptr[op_output(p, o, 0)]);
}

TGR_OP_IMPL(OP_MAX_POOL, TILING_WINDOW, check_pool, run_max_pool);
TGR_OP_IMPL(OP_AVG_POOL, TILING_WINDOW, check_pool, run_avg_pool);
TGR_OP_IMPL(OP_GLOBAL_AVG, TILING_NONE, check_global_avg, run_global_avg);
