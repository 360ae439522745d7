/*
 * Op dispatch: for every opcode this runtime executes, a validator (run once by the loader,
 * so kernels can trust the plan) and an executor that decodes the op record into kernel
 * arguments. Ops without an entry here are refused at load time by name.
 */
#include "dispatch.h"

#include <math.h>

#include "fixedpoint.h"
#include "kernels.h"
#include "loader.h"

/* ---- tensor helpers ------------------------------------------------------------------------ */

/* Model-order tensors state their own axis order (LINEAR, or rank <= 2 or >= 5); rank 3/4
 * tensors without LINEAR are stored channels-last. */
static int model_order(const tgr_plan *p, uint32_t t)
{
    uint32_t rank = tensor_ndim(p, t);
    return (tensor_flags(p, t) & TF_LINEAR) != 0u || rank <= 2u || rank >= 5u;
}

static int is_nhwc(const tgr_plan *p, uint32_t t)
{
    return tensor_ndim(p, t) == 4u && !model_order(p, t);
}

static tgr_qparams qparams_of(const tgr_plan *p, uint32_t t)
{
    tgr_qparams q;
    q.scale = quant_scale(p, tensor_quant(p, t));
    q.zero_point = quant_zero_point(p, tensor_quant(p, t));
    return q;
}

static int same_qparams(const tgr_plan *p, uint32_t a, uint32_t b)
{
    tgr_qparams qa = qparams_of(p, a);
    tgr_qparams qb = qparams_of(p, b);
    return qa.scale == qb.scale && qa.zero_point == qb.zero_point;
}

int tgr_is_pure_reinterpretation(const tgr_plan *p, uint32_t o)
{
    uint32_t in, out;
    uint32_t type = op_type(p, o);
    if (type != OP_RESHAPE && type != OP_FLATTEN) {
        return 0;
    }
    in = op_input(p, o, 0);
    out = op_output(p, o, 0);
    if (tensor_bytes(p, in) != tensor_bytes(p, out) || !same_qparams(p, in, out)) {
        return 0;
    }
    if (model_order(p, in) && model_order(p, out)) {
        return 1;
    }
    return !model_order(p, in) && !model_order(p, out) && tensor_dim(p, in, 0) == tensor_dim(p, out, 0) &&
           tensor_dim(p, in, tensor_ndim(p, in) - 1u) == tensor_dim(p, out, tensor_ndim(p, out) - 1u);
}

/* ---- validation ------------------------------------------------------------------------- */

static uint32_t eff(uint32_t dilation) { return dilation == 0u ? 1u : dilation; }

/* Output extent of a sliding window, or 0 when the window does not fit. */
static int64_t window_out(int64_t in, uint32_t kernel, uint32_t stride, uint32_t dilation, uint32_t pad_a,
                          uint32_t pad_b)
{
    int64_t span = (int64_t)(kernel - 1u) * eff(dilation) + 1;
    int64_t padded = in + pad_a + pad_b;
    if (stride == 0u || kernel == 0u || padded < span) {
        return 0;
    }
    return (padded - span) / stride + 1;
}

static tgr_status bad_op(tgr_error *err, const tgr_plan *p, uint32_t o, const char *what)
{
    return tgr_fail(err, TGR_ERR_OP, "op %u (%s): %s", o, tgr_op_name(op_type(p, o)), what);
}

static tgr_status check_requant_channels(const tgr_plan *p, uint32_t o, uint32_t out, uint32_t channels,
                                         tgr_error *err)
{
    uint32_t n = quant_channels(p, tensor_quant(p, out));
    if (n != 1u && n != channels) {
        return tgr_fail(err, TGR_ERR_QUANT, "op %u (%s): %u requantization pairs for %u output channels", o,
                        tgr_op_name(op_type(p, o)), n, channels);
    }
    return TGR_OK;
}

static tgr_status check_window_op(const tgr_plan *p, uint32_t o, const op_spatial *sp, tgr_error *err)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    uint32_t type = op_type(p, o);
    int32_t in_c, out_c;
    if (!is_nhwc(p, in) || !is_nhwc(p, out)) {
        return bad_op(err, p, o, "input and output must be rank-4 channels-last tensors");
    }
    if (tensor_dim(p, in, 0) != tensor_dim(p, out, 0)) {
        return bad_op(err, p, o, "batch extents differ");
    }
    if (window_out(tensor_dim(p, in, 1), sp->kernel_h, sp->stride_h, sp->dilation_h, sp->pad_top,
                   sp->pad_bottom) != tensor_dim(p, out, 1) ||
        window_out(tensor_dim(p, in, 2), sp->kernel_w, sp->stride_w, sp->dilation_w, sp->pad_left,
                   sp->pad_right) != tensor_dim(p, out, 2)) {
        return bad_op(err, p, o, "kernel, stride and pads do not produce the output extent");
    }
    in_c = tensor_dim(p, in, 3);
    out_c = tensor_dim(p, out, 3);
    if (type == OP_CONV) {
        uint32_t expect = (uint32_t)out_c * sp->kernel_h * sp->kernel_w * (uint32_t)in_c;
        if (sp->group != 1u) {
            return bad_op(err, p, o, "grouped convolution is not executed by this runtime");
        }
        if (weight_size(p, sp->weight_idx) != expect) {
            return tgr_fail(err, TGR_ERR_WEIGHT, "op %u (Conv): filter has %u bytes, expected %u", o,
                            weight_size(p, sp->weight_idx), expect);
        }
    } else if (type == OP_DEPTHWISE) {
        uint32_t expect = sp->kernel_h * sp->kernel_w * (uint32_t)out_c;
        if (sp->group != (uint32_t)in_c || out_c % in_c != 0) {
            return bad_op(err, p, o, "group must equal the input channels and divide the output channels");
        }
        if (weight_size(p, sp->weight_idx) != expect) {
            return tgr_fail(err, TGR_ERR_WEIGHT, "op %u (DepthwiseConv): filter has %u bytes, expected %u", o,
                            weight_size(p, sp->weight_idx), expect);
        }
    } else {
        uint32_t span_h = (sp->kernel_h - 1u) * eff(sp->dilation_h) + 1u;
        uint32_t span_w = (sp->kernel_w - 1u) * eff(sp->dilation_w) + 1u;
        if (in_c != out_c || sp->group != 1u) {
            return bad_op(err, p, o, "pooling must keep the channel count");
        }
        if (sp->pad_top >= span_h || sp->pad_bottom >= span_h || sp->pad_left >= span_w ||
            sp->pad_right >= span_w) {
            return bad_op(err, p, o, "a pooling window lies entirely in the padding");
        }
        if (type == OP_AVG_POOL && eff(sp->dilation_h) * eff(sp->dilation_w) != 1u) {
            return bad_op(err, p, o, "dilated average pooling is not executed by this runtime");
        }
        return TGR_OK;
    }
    if (sp->bias_idx != NONE16 && weight_size(p, sp->bias_idx) != 4u * (uint32_t)out_c) {
        return tgr_fail(err, TGR_ERR_WEIGHT, "op %u (%s): bias has %u bytes, expected %u", o,
                        tgr_op_name(type), weight_size(p, sp->bias_idx), 4u * (uint32_t)out_c);
    }
    return check_requant_channels(p, o, out, (uint32_t)out_c, err);
}

static tgr_status check_gemm(const tgr_plan *p, uint32_t o, const op_spatial *sp, tgr_error *err)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    uint32_t in_features, out_features;
    if (tensor_ndim(p, in) != 2u || tensor_ndim(p, out) != 2u || tensor_dim(p, in, 0) != tensor_dim(p, out, 0)) {
        return bad_op(err, p, o, "input and output must be [rows, features] with equal rows");
    }
    in_features = (uint32_t)tensor_dim(p, in, 1);
    out_features = (uint32_t)tensor_dim(p, out, 1);
    if (weight_size(p, sp->weight_idx) != in_features * out_features) {
        return tgr_fail(err, TGR_ERR_WEIGHT, "op %u (Gemm): filter has %u bytes, expected %u", o,
                        weight_size(p, sp->weight_idx), in_features * out_features);
    }
    if (sp->bias_idx != NONE16 && weight_size(p, sp->bias_idx) != 4u * out_features) {
        return tgr_fail(err, TGR_ERR_WEIGHT, "op %u (Gemm): bias has %u bytes, expected %u", o,
                        weight_size(p, sp->bias_idx), 4u * out_features);
    }
    return check_requant_channels(p, o, out, out_features, err);
}

static tgr_status check_global_avg(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    uint32_t len = 0;
    const uint8_t *rounding = tgr_attr_find(p, o, ATTR_POOL_ROUNDING, &len);
    if (!is_nhwc(p, in) || tensor_ndim(p, out) != 4u || tensor_dim(p, out, 1) != 1 || tensor_dim(p, out, 2) != 1 ||
        tensor_dim(p, in, 0) != tensor_dim(p, out, 0) || tensor_dim(p, in, 3) != tensor_dim(p, out, 3)) {
        return bad_op(err, p, o, "expects [N, H, W, C] -> [N, 1, 1, C]");
    }
    if (rounding != NULL && rounding[0] != 1u) {
        return tgr_fail(err, TGR_ERR_ATTRIBUTE, "op %u: unknown pool rounding mode %u", o, rounding[0]);
    }
    return TGR_OK;
}

static tgr_status check_softmax(const tgr_plan *p, uint32_t o, const op_spatial *sp, tgr_error *err)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    uint32_t axis;
    tgr_qparams qin = qparams_of(p, in);
    tgr_qparams qout = qparams_of(p, out);
    if (sp->fused_act != ACT_NONE) {
        return bad_op(err, p, o, "a fused activation on Softmax is invalid");
    }
    if (tensor_ndim(p, in) != tensor_ndim(p, out) || tensor_ndim(p, in) == 0u) {
        return bad_op(err, p, o, "input and output shapes differ");
    }
    for (axis = 0; axis < tensor_ndim(p, in); ++axis) {
        if (tensor_dim(p, in, axis) != tensor_dim(p, out, axis)) {
            return bad_op(err, p, o, "input and output shapes differ");
        }
    }
    if (qout.scale == 1.0f / 256.0f && qout.zero_point == -128) {
        double real = (double)qin.scale * (double)(1 << 26);
        if (real < 1.0) {
            return tgr_fail(err, TGR_ERR_UNSUPPORTED, "op %u (Softmax): input scale below 2^-26 is not supported",
                            o);
        }
    }
    return TGR_OK;
}

/* Add/Sub pairs: from OP_ATTR_BINARY_REQUANT when present, else derived from the three scales
 * in double exactly as the compiler derives them. */
static void add_params_of(const tgr_plan *p, uint32_t o, tgr_add_params *q)
{
    op_spatial sp;
    const uint8_t *attr = tgr_attr_find(p, o, ATTR_BINARY_REQUANT, NULL);
    tgr_qparams qa = qparams_of(p, op_input(p, o, 0));
    tgr_qparams qb = qparams_of(p, op_input(p, o, 1));
    tgr_qparams qo = qparams_of(p, op_output(p, o, 0));
    op_decode(p, o, &sp);
    q->a_zp = qa.zero_point;
    q->b_zp = qb.zero_point;
    q->out_zp = qo.zero_point;
    q->act_min = sp.act_min;
    q->act_max = sp.act_max;
    if (attr != NULL) {
        q->a_multiplier = rd_i32(attr);
        q->a_shift = rd_i32(attr + 4);
        q->b_multiplier = rd_i32(attr + 8);
        q->b_shift = rd_i32(attr + 12);
        q->out_multiplier = rd_i32(attr + 16);
        q->out_shift = rd_i32(attr + 20);
    } else {
        double twice_max = 2.0 * ((double)qa.scale > (double)qb.scale ? (double)qa.scale : (double)qb.scale);
        fp_quantize_multiplier((double)qa.scale / twice_max, &q->a_multiplier, &q->a_shift);
        fp_quantize_multiplier((double)qb.scale / twice_max, &q->b_multiplier, &q->b_shift);
        fp_quantize_multiplier(twice_max / ((double)(1 << 20) * (double)qo.scale), &q->out_multiplier,
                               &q->out_shift);
    }
}

static int valid_pair(int32_t multiplier, int32_t shift)
{
    return (multiplier == 0 || multiplier >= 0x40000000) && shift >= -31 && shift <= 31;
}

static tgr_status check_add(const tgr_plan *p, uint32_t o, const op_spatial *sp, tgr_error *err)
{
    uint32_t out = op_output(p, o, 0);
    uint32_t k, axis;
    tgr_add_params q;
    if (op_num_inputs(p, o) != 2u || sp->weight_idx != NONE16) {
        return tgr_fail(err, TGR_ERR_UNSUPPORTED,
                        "op %u (%s): a constant operand is not supported by this runtime", o,
                        tgr_op_name(op_type(p, o)));
    }
    for (k = 0; k < 2u; ++k) {
        uint32_t in = op_input(p, o, k);
        int same = tensor_ndim(p, in) == tensor_ndim(p, out) && model_order(p, in) == model_order(p, out);
        for (axis = 0; same && axis < tensor_ndim(p, in); ++axis) {
            same = tensor_dim(p, in, axis) == tensor_dim(p, out, axis);
        }
        if (!same) {
            return tgr_fail(err, TGR_ERR_UNSUPPORTED,
                            "op %u (%s): broadcasting operands are not supported by this runtime", o,
                            tgr_op_name(op_type(p, o)));
        }
    }
    add_params_of(p, o, &q);
    if (!valid_pair(q.a_multiplier, q.a_shift) || !valid_pair(q.b_multiplier, q.b_shift) ||
        !valid_pair(q.out_multiplier, q.out_shift)) {
        return tgr_fail(err, TGR_ERR_ATTRIBUTE, "op %u (%s): binary requantization pairs out of range", o,
                        tgr_op_name(op_type(p, o)));
    }
    return TGR_OK;
}

static tgr_status check_reshape(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    if (tensor_bytes(p, in) != tensor_bytes(p, out)) {
        return bad_op(err, p, o, "input and output sizes differ");
    }
    if (!same_qparams(p, in, out)) {
        return tgr_fail(err, TGR_ERR_UNSUPPORTED,
                        "op %u (%s): reshape with requantization is not supported by this runtime", o,
                        tgr_op_name(op_type(p, o)));
    }
    if (!model_order(p, out)) {
        if (model_order(p, in) || !tgr_is_pure_reinterpretation(p, o)) {
            return tgr_fail(err, TGR_ERR_UNSUPPORTED,
                            "op %u (%s): reshape into a channels-last layout is not supported by this runtime",
                            o, tgr_op_name(op_type(p, o)));
        }
    }
    return TGR_OK;
}

tgr_status tgr_check_kernels(const tgr_plan *p, tgr_error *err)
{
    uint32_t o;
    for (o = 0; o < p->num_ops; ++o) {
        op_spatial sp;
        tgr_status st;
        op_decode(p, o, &sp);
        switch (op_type(p, o)) {
        case OP_CONV:
        case OP_DEPTHWISE:
        case OP_MAX_POOL:
        case OP_AVG_POOL:
            st = check_window_op(p, o, &sp, err);
            break;
        case OP_GEMM:
            st = check_gemm(p, o, &sp, err);
            break;
        case OP_GLOBAL_AVG:
            st = check_global_avg(p, o, err);
            break;
        case OP_SOFTMAX:
            st = check_softmax(p, o, &sp, err);
            break;
        case OP_ADD:
        case OP_SUB:
            st = check_add(p, o, &sp, err);
            break;
        case OP_RESHAPE:
        case OP_FLATTEN:
            st = check_reshape(p, o, err);
            break;
        default:
            st = tgr_fail(err, TGR_ERR_UNSUPPORTED, "op %u (%s) is not supported by this runtime", o,
                          tgr_op_name(op_type(p, o)));
            break;
        }
        if (st != TGR_OK) {
            return st;
        }
    }
    return TGR_OK;
}

/* ---- execution ---------------------------------------------------------------------------- */

/* Rows [0],[1) and cols [2],[3) of tensor t held by its buffer: its region in a tile, else all. */
static void extent_of(const tgr_plan *p, uint32_t t, const int32_t *region, int32_t out[4])
{
    if (region != NULL) {
        memcpy(out, region + 4u * t, 4u * sizeof out[0]);
    } else {
        out[0] = 0;
        out[1] = tensor_dim(p, t, 1);
        out[2] = 0;
        out[3] = tensor_dim(p, t, 2);
    }
}

/* Kernel geometry of a window op on the buffers it is given. A buffer that starts below the
 * window's first input row shows up as an effective padding (negative when it holds extra rows
 * above), so tiles reuse the whole-tensor kernels unchanged. */
static void window_of(const tgr_plan *p, uint32_t o, const op_spatial *sp, const int32_t *region, tgr_window *w)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    int32_t x[4], y[4];
    extent_of(p, in, region, x);
    extent_of(p, out, region, y);
    w->batch = region != NULL ? 1 : tensor_dim(p, in, 0);
    w->in_h = x[1] - x[0];
    w->in_w = x[3] - x[2];
    w->in_c = tensor_dim(p, in, 3);
    w->out_h = y[1] - y[0];
    w->out_w = y[3] - y[2];
    w->out_c = tensor_dim(p, out, 3);
    w->kernel_h = (int32_t)sp->kernel_h;
    w->kernel_w = (int32_t)sp->kernel_w;
    w->stride_h = (int32_t)sp->stride_h;
    w->stride_w = (int32_t)sp->stride_w;
    w->dilation_h = (int32_t)eff(sp->dilation_h);
    w->dilation_w = (int32_t)eff(sp->dilation_w);
    w->pad_top = (int32_t)sp->pad_top + x[0] - y[0] * w->stride_h;
    w->pad_left = (int32_t)sp->pad_left + x[2] - y[2] * w->stride_w;
}

/* Elementwise Add/Sub over the output's extent; inputs may hold larger extents. */
static void add_region(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    uint32_t a = op_input(p, o, 0);
    uint32_t b = op_input(p, o, 1);
    uint32_t out = op_output(p, o, 0);
    int32_t ea[4], eb[4], ey[4];
    int32_t channels, r;
    tgr_add_params q;
    add_params_of(p, o, &q);
    if (region == NULL) {
        tgr_add_s8((int32_t)tensor_bytes(p, out), (const int8_t *)tensor_ptr[a], (const int8_t *)tensor_ptr[b], &q,
                   op_type(p, o) == OP_SUB, (int8_t *)tensor_ptr[out]);
        return;
    }
    extent_of(p, a, region, ea);
    extent_of(p, b, region, eb);
    extent_of(p, out, region, ey);
    channels = tensor_dim(p, out, 3);
    for (r = ey[0]; r < ey[1]; ++r) {
        const int8_t *pa = (const int8_t *)tensor_ptr[a] +
                           ((int64_t)(r - ea[0]) * (ea[3] - ea[2]) + (ey[2] - ea[2])) * channels;
        const int8_t *pb = (const int8_t *)tensor_ptr[b] +
                           ((int64_t)(r - eb[0]) * (eb[3] - eb[2]) + (ey[2] - eb[2])) * channels;
        int8_t *py = (int8_t *)tensor_ptr[out] + (int64_t)(r - ey[0]) * (ey[3] - ey[2]) * channels;
        tgr_add_s8((ey[3] - ey[2]) * channels, pa, pb, &q, op_type(p, o) == OP_SUB, py);
    }
}

static void requant_of(const tgr_plan *p, uint32_t o, const op_spatial *sp, tgr_requant *rq)
{
    uint32_t out_q = tensor_quant(p, op_output(p, o, 0));
    rq->multipliers = quant_multipliers(p, out_q);
    rq->shifts = quant_shifts(p, out_q);
    rq->per_channel = quant_channels(p, out_q) > 1u;
    rq->in_zp = quant_zero_point(p, tensor_quant(p, op_input(p, o, 0)));
    rq->out_zp = quant_zero_point(p, out_q);
    rq->act_min = sp->act_min;
    rq->act_max = sp->act_max;
}

void tgr_mean_of(const tgr_plan *p, uint32_t o, tgr_mean *m)
{
    op_spatial sp;
    uint32_t in = op_input(p, o, 0);
    tgr_qparams qin = qparams_of(p, in);
    tgr_qparams qout = qparams_of(p, op_output(p, o, 0));
    op_decode(p, o, &sp);
    tgr_mean_prepare(tensor_dim(p, in, 1) * tensor_dim(p, in, 2), &qin, &qout, sp.act_min, sp.act_max,
                     tgr_attr_find(p, o, ATTR_POOL_ROUNDING, NULL) != NULL, m);
}

void tgr_dispatch(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    op_spatial sp;
    tgr_window w;
    tgr_requant rq;
    tgr_qparams qin, qout;
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    const int8_t *x = (const int8_t *)tensor_ptr[in];
    int8_t *y = (int8_t *)tensor_ptr[out];
    const uint8_t *bias;
    op_decode(p, o, &sp);
    bias = sp.bias_idx != NONE16 ? weight_data(p, sp.bias_idx) : NULL;
    switch (op_type(p, o)) {
    case OP_CONV:
        window_of(p, o, &sp, region, &w);
        requant_of(p, o, &sp, &rq);
        tgr_conv_s8(&w, x, (const int8_t *)weight_data(p, sp.weight_idx), bias, &rq, y);
        break;
    case OP_DEPTHWISE:
        window_of(p, o, &sp, region, &w);
        requant_of(p, o, &sp, &rq);
        tgr_depthwise_s8(&w, x, (const int8_t *)weight_data(p, sp.weight_idx), bias, &rq, y);
        break;
    case OP_GEMM:
        requant_of(p, o, &sp, &rq);
        tgr_fully_connected_s8(tensor_dim(p, in, 0), tensor_dim(p, in, 1), tensor_dim(p, out, 1), x,
                               (const int8_t *)weight_data(p, sp.weight_idx), bias, &rq, y);
        break;
    case OP_MAX_POOL:
        window_of(p, o, &sp, region, &w);
        qin = qparams_of(p, in);
        qout = qparams_of(p, out);
        tgr_max_pool_s8(&w, x, &qin, &qout, sp.act_min, sp.act_max, y);
        break;
    case OP_AVG_POOL:
        window_of(p, o, &sp, region, &w);
        qin = qparams_of(p, in);
        qout = qparams_of(p, out);
        tgr_avg_pool_s8(&w, x, &qin, &qout, sp.act_min, sp.act_max, y);
        break;
    case OP_GLOBAL_AVG: {
        tgr_mean m;
        tgr_mean_of(p, o, &m);
        tgr_global_avg_pool_s8(tensor_dim(p, in, 0), tensor_dim(p, in, 3), x, &m, y);
        break;
    }
    case OP_SOFTMAX: {
        uint32_t depth = (uint32_t)tensor_dim(p, in, tensor_ndim(p, in) - 1u);
        qin = qparams_of(p, in);
        qout = qparams_of(p, out);
        tgr_softmax_s8((int32_t)(tensor_bytes(p, in) / depth), (int32_t)depth, x, &qin, &qout, y);
        break;
    }
    case OP_ADD:
    case OP_SUB:
        add_region(p, o, tensor_ptr, region);
        break;
    case OP_RESHAPE:
    case OP_FLATTEN:
        if (y != x) {
            memmove(y, x, tensor_bytes(p, in));
        }
        break;
    default:
        break; /* unreachable: the loader refused every other opcode */
    }
}
