/*
 * Convolution family: Conv (OHWI filter), DepthwiseConv (HWC filter, channel multiplier),
 * ConvTranspose (OHWI filter; whole, or in 2-D tiles) and Gemm / fully connected ([OC][IC] filter),
 * with the output's per-channel requantization. Conv, DepthwiseConv and Gemm run by method: one
 * per kernel variant, chosen at load from the layer's shape (the dispatchers below).
 */
#include "ops/ops.h"
#include "ops/ops_window.h"

static tgr_status check_requant_channels(const tgr_plan *p, uint32_t o, uint32_t channels, tgr_error *err)
{
    uint32_t n = quant_channels(p, tensor_quant(p, op_output(p, o, 0)));
    if (n != 1u && n != channels) {
        return tgr_fail(err, TGR_ERR_QUANT, "op %u (%s): %u requantization pairs for %u output channels", o,
                        tgr_op_name(op_type(p, o)), n, channels);
    }
    return TGR_OK;
}

/* `expect` in 64 bits: extents from the plan can make the product wrap in 32 (a 65536 x 65536
 * Gemm would expect 0 bytes, and the kernel would read 4 GiB past its filter). */
static tgr_status check_filter(const tgr_plan *p, uint32_t o, const op_spatial *sp, uint64_t expect,
                               uint32_t channels, tgr_error *err)
{
    if (expect > 0xFFFFFFFFu || 4u * (uint64_t)channels > 0xFFFFFFFFu) {
        return tgr_fail(err, TGR_ERR_WEIGHT, "op %u (%s): filter or bias would exceed 4 GiB", o,
                        tgr_op_name(op_type(p, o)));
    }
    if (weight_size(p, sp->weight_idx) != expect) {
        return tgr_fail(err, TGR_ERR_WEIGHT, "op %u (%s): filter has %u bytes, expected %u", o,
                        tgr_op_name(op_type(p, o)), weight_size(p, sp->weight_idx), (uint32_t)expect);
    }
    if (sp->bias_idx != NONE16 && weight_size(p, sp->bias_idx) != 4u * channels) {
        return tgr_fail(err, TGR_ERR_WEIGHT, "op %u (%s): bias has %u bytes, expected %u", o,
                        tgr_op_name(op_type(p, o)), weight_size(p, sp->bias_idx), 4u * channels);
    }
    return check_requant_channels(p, o, channels, err);
}

/* Conv (OHWI filter, group 1) and DepthwiseConv (HWC filter, group = input channels, output
 * channels a multiple of them). */
static tgr_status check_conv(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    op_spatial sp;
    tgr_status st;
    uint32_t in_c, out_c, taps;
    op_decode(p, o, &sp);
    st = tgr_check_window_geometry(p, o, &sp, err);
    if (st != TGR_OK) {
        return st;
    }
    in_c = (uint32_t)tensor_dim(p, op_input(p, o, 0), 3);
    out_c = (uint32_t)tensor_dim(p, op_output(p, o, 0), 3);
    taps = sp.kernel_h * sp.kernel_w;
    if (op_type(p, o) == OP_DEPTHWISE) {
        if (sp.group != in_c || out_c % in_c != 0u) {
            return tgr_bad_op(err, p, o, "group must equal the input channels and divide the output channels");
        }
        return check_filter(p, o, &sp, (uint64_t)taps * out_c, out_c, err);
    }
    if (sp.group != 1u) {
        return tgr_bad_op(err, p, o, "grouped convolution is not executed by this runtime");
    }
    return check_filter(p, o, &sp, (uint64_t)out_c * taps * in_c, out_c, err);
}

/* ConvTranspose: OHWI filter, group 1, no dilation; each output extent is the transposed
 * window's, (in - 1) * stride + kernel - pads, or up to stride - 1 more (ONNX output_padding). */
static tgr_status check_conv_transpose(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    op_spatial sp;
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    uint32_t axis;
    op_decode(p, o, &sp);
    if (!tgr_is_nhwc(p, in) || !tgr_is_nhwc(p, out) || tensor_dim(p, in, 0) != tensor_dim(p, out, 0)) {
        return tgr_bad_op(err, p, o, "input and output must be rank-4 channels-last tensors of one batch");
    }
    if (sp.group != 1u || tgr_effective_dilation(sp.dilation_h) != 1u ||
        tgr_effective_dilation(sp.dilation_w) != 1u) {
        return tgr_unsupported_op(err, p, o, "a grouped or dilated transposed convolution");
    }
    for (axis = 1u; axis <= 2u; ++axis) {
        uint32_t kernel = axis == 1u ? sp.kernel_h : sp.kernel_w;
        uint32_t stride = axis == 1u ? sp.stride_h : sp.stride_w;
        int64_t pads = axis == 1u ? (int64_t)sp.pad_top + sp.pad_bottom : (int64_t)sp.pad_left + sp.pad_right;
        int64_t base = ((int64_t)tensor_dim(p, in, axis) - 1) * stride + kernel - pads;
        int64_t extent = tensor_dim(p, out, axis);
        if (kernel == 0u || stride == 0u || base < 1 || extent < base || extent >= base + stride) {
            return tgr_bad_op(err, p, o, "kernel, stride and pads do not produce the output extent");
        }
    }
    return check_filter(p, o, &sp,
                        (uint64_t)tensor_dim(p, out, 3) * sp.kernel_h * sp.kernel_w * (uint64_t)tensor_dim(p, in, 3),
                        (uint32_t)tensor_dim(p, out, 3), err);
}

static tgr_status check_gemm(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    op_spatial sp;
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    op_decode(p, o, &sp);
    if (tensor_ndim(p, in) != 2u || tensor_ndim(p, out) != 2u || tensor_dim(p, in, 0) != tensor_dim(p, out, 0)) {
        return tgr_bad_op(err, p, o, "input and output must be [rows, features] with equal rows");
    }
    return check_filter(p, o, &sp, (uint64_t)tensor_dim(p, in, 1) * (uint64_t)tensor_dim(p, out, 1),
                        (uint32_t)tensor_dim(p, out, 1), err);
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

/* The operands every convolution kernel takes, decoded once per run. */
typedef struct conv_call {
    tgr_window w;
    tgr_requant rq;
    const int8_t *input, *filter;
    const uint8_t *bias;
    int8_t *output;
} conv_call;

static void conv_call_of(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region,
                         conv_call *c)
{
    op_spatial sp;
    op_decode(p, o, &sp);
    tgr_window_of(p, o, &sp, region, &c->w);
    requant_of(p, o, &sp, &c->rq);
    c->input = (const int8_t *)tensor_ptr[op_input(p, o, 0)];
    c->filter = (const int8_t *)weight_data(p, sp.weight_idx);
    c->bias = sp.bias_idx != NONE16 ? weight_data(p, sp.bias_idx) : NULL;
    c->output = (int8_t *)tensor_ptr[op_output(p, o, 0)];
}

/* ---- the dispatchers: a layer's method (kernel variant) from what the plan fixes -------------
 *
 * Each op's method is chosen by the predicates of kernels.h over the layer's tgr_conv_shape, never
 * over a call's extents or pads, so it is the same for every call and tgr_plan_needs can name it
 * before the firmware is built: a firmware links the runs of its plan's methods, and through them
 * the variants below, and nothing else. The loader refuses a plan whose method is not built in. */

static void conv_shape_of(const tgr_plan *p, uint32_t o, tgr_conv_shape *s)
{
    op_spatial sp;
    const uint32_t in = op_input(p, o, 0);
    op_decode(p, o, &sp);
    s->in_c = tensor_dim(p, in, 3);
    s->out_c = tensor_dim(p, op_output(p, o, 0), 3);
    s->kernel_h = (int32_t)sp.kernel_h;
    s->kernel_w = (int32_t)sp.kernel_w;
    s->stride_h = (int32_t)sp.stride_h;
    s->stride_w = (int32_t)sp.stride_w;
    s->dilation_h = (int32_t)tgr_effective_dilation(sp.dilation_h);
    s->dilation_w = (int32_t)tgr_effective_dilation(sp.dilation_w);
    s->pad_top = (int32_t)sp.pad_top;
    s->pad_left = (int32_t)sp.pad_left;
    s->pad_bottom = (int32_t)sp.pad_bottom;
    s->pad_right = (int32_t)sp.pad_right;
    s->in_zp = quant_zero_point(p, tensor_quant(p, in));
}

static uint32_t conv_method(const tgr_plan *p, uint32_t o)
{
    tgr_conv_shape s;
    conv_shape_of(p, o, &s);
    if (!tgr_zp_packs_16_bits(s.in_zp)) {
        return METHOD_CONV_PLAIN;
    }
    if (tgr_conv_is_pointwise(&s)) {
        return METHOD_CONV_POINTWISE;
    }
    if (tgr_conv_is_unpadded(&s)) {
        return METHOD_CONV_UNPADDED;
    }
    if (tgr_conv_window_fits_gather(&s)) {
        return METHOD_CONV_GATHER;
    }
    return tgr_conv_window_fits_patch(&s) ? METHOD_CONV_PADDED : METHOD_CONV_PADDED_WIDE;
}

static uint32_t depthwise_method(const tgr_plan *p, uint32_t o)
{
    tgr_conv_shape s;
    conv_shape_of(p, o, &s);
    if (!tgr_zp_packs_16_bits(s.in_zp) || !tgr_depthwise_is_multiplier_1(&s)) {
        return METHOD_DEPTHWISE_PLAIN;
    }
    return tgr_depthwise_is_3x3(&s) ? METHOD_DEPTHWISE_3X3 : METHOD_DEPTHWISE;
}

static uint32_t gemm_method(const tgr_plan *p, uint32_t o)
{
    return tgr_zp_packs_16_bits(quant_zero_point(p, tensor_quant(p, op_input(p, o, 0)))) ? METHOD_FULLY_CONNECTED
                                                                                         : METHOD_FULLY_CONNECTED_PLAIN;
}

/* ---- the method runs: the variant each method takes in this build ------------------------------
 *
 * | method                 | DSP and portable builds        | Helium build (mve=1)                        |
 * |------------------------|--------------------------------|---------------------------------------------|
 * | CONV_POINTWISE         | tgr_conv_pointwise_s8          | tgr_conv_pointwise_mve_s8                   |
 * | CONV_UNPADDED          | tgr_conv_general_s8            | tgr_conv_inside_mve_s8                      |
 * | CONV_GATHER            | tgr_conv_gather_s8             | tgr_conv_gather_mve_s8                      |
 * | CONV_PADDED            | tgr_conv_general_s8            | per call: tgr_conv_inside_mve_s8 when its   |
 * |                        |                                | windows are inside, else tgr_conv_patch_mve_s8 |
 * | CONV_PADDED_WIDE       | tgr_conv_general_s8            | per call: tgr_conv_inside_mve_s8, else      |
 * |                        |                                | tgr_conv_general_s8                         |
 * | CONV_PLAIN             | tgr_conv_plain_s8              | tgr_conv_plain_s8                           |
 * | DEPTHWISE              | tgr_depthwise_s8               | tgr_depthwise_mve_s8                        |
 * | DEPTHWISE_3X3          | tgr_depthwise_3x3_s8; per call | tgr_depthwise_3x3_mve_s8                    |
 * |                        | tgr_depthwise_s8 when it is    |                                             |
 * |                        | small (few outputs)            |                                             |
 * | DEPTHWISE_PLAIN        | tgr_depthwise_plain_s8         | tgr_depthwise_plain_s8                      |
 * | FULLY_CONNECTED        | tgr_fully_connected_s8         | tgr_fully_connected_s8                      |
 * | FULLY_CONNECTED_PLAIN  | tgr_fully_connected_plain_s8   | tgr_fully_connected_plain_s8                |
 *
 * One run function per method, each calling its variants directly: a firmware links only the
 * variants of its own methods, and its call graph has no pointer calls for the stack analysis to
 * widen. */

/* The variant a method takes in this build (TGR_SIMD_MVE: kernels/isa.h). */
#if TGR_SIMD_MVE
#define BY_BUILD(helium, dsp) helium
#else
#define BY_BUILD(helium, dsp) dsp
#endif
#define CONV_ARGS(c) &(c).w, (c).input, (c).filter, (c).bias, &(c).rq, (c).output

static void run_conv_pointwise(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    conv_call c;
    conv_call_of(p, o, tensor_ptr, region, &c);
    BY_BUILD(tgr_conv_pointwise_mve_s8, tgr_conv_pointwise_s8)(CONV_ARGS(c));
}

static void run_conv_unpadded(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    conv_call c;
    conv_call_of(p, o, tensor_ptr, region, &c);
    BY_BUILD(tgr_conv_inside_mve_s8, tgr_conv_general_s8)(CONV_ARGS(c));
}

static void run_conv_padded(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    conv_call c;
    conv_call_of(p, o, tensor_ptr, region, &c);
#if TGR_SIMD_MVE
    if (tgr_conv_windows_inside(&c.w)) {
        tgr_conv_inside_mve_s8(CONV_ARGS(c));
        return;
    }
#endif
    BY_BUILD(tgr_conv_patch_mve_s8, tgr_conv_general_s8)(CONV_ARGS(c));
}

static void run_conv_gather(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    conv_call c;
    conv_call_of(p, o, tensor_ptr, region, &c);
    BY_BUILD(tgr_conv_gather_mve_s8, tgr_conv_gather_s8)(CONV_ARGS(c));
}

static void run_conv_padded_wide(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    conv_call c;
    conv_call_of(p, o, tensor_ptr, region, &c);
#if TGR_SIMD_MVE
    if (tgr_conv_windows_inside(&c.w)) {
        tgr_conv_inside_mve_s8(CONV_ARGS(c));
        return;
    }
#endif
    tgr_conv_general_s8(CONV_ARGS(c));
}

static void run_conv_plain(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    conv_call c;
    conv_call_of(p, o, tensor_ptr, region, &c);
    tgr_conv_plain_s8(CONV_ARGS(c));
}

static void run_depthwise(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    conv_call c;
    conv_call_of(p, o, tensor_ptr, region, &c);
    BY_BUILD(tgr_depthwise_mve_s8, tgr_depthwise_s8)(CONV_ARGS(c));
}

static void run_depthwise_3x3(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    conv_call c;
    conv_call_of(p, o, tensor_ptr, region, &c);
#if !TGR_SIMD_MVE
    if (tgr_depthwise_call_is_small(&c.w)) {
        tgr_depthwise_s8(CONV_ARGS(c));
        return;
    }
#endif
    BY_BUILD(tgr_depthwise_3x3_mve_s8, tgr_depthwise_3x3_s8)(CONV_ARGS(c));
}

static void run_depthwise_plain(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    conv_call c;
    conv_call_of(p, o, tensor_ptr, region, &c);
    tgr_depthwise_plain_s8(CONV_ARGS(c));
}

static void run_conv_transpose(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    conv_call c;
    conv_call_of(p, o, tensor_ptr, region, &c);
    tgr_conv_transpose_s8(CONV_ARGS(c));
}

/* The operands of a Gemm call: rows are axis 0 (a row band bands only those), even when there is
 * just one. */
typedef struct gemm_call {
    int32_t rows, in_features, out_features;
    tgr_requant rq;
    const int8_t *input, *filter;
    const uint8_t *bias;
    int8_t *output;
} gemm_call;

static void gemm_call_of(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region,
                         gemm_call *g)
{
    op_spatial sp;
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    op_decode(p, o, &sp);
    requant_of(p, o, &sp, &g->rq);
    g->rows = region != NULL ? tgr_row_count(p, in, region) : tensor_dim(p, in, 0);
    g->in_features = tensor_dim(p, in, 1);
    g->out_features = tensor_dim(p, out, 1);
    g->input = (const int8_t *)tensor_ptr[in];
    g->filter = (const int8_t *)weight_data(p, sp.weight_idx);
    g->bias = sp.bias_idx != NONE16 ? weight_data(p, sp.bias_idx) : NULL;
    g->output = (int8_t *)tensor_ptr[out];
}

#define GEMM_ARGS(g) (g).rows, (g).in_features, (g).out_features, (g).input, (g).filter, (g).bias, &(g).rq, (g).output

static void run_gemm(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    gemm_call g;
    gemm_call_of(p, o, tensor_ptr, region, &g);
    tgr_fully_connected_s8(GEMM_ARGS(g));
}

static void run_gemm_plain(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    gemm_call g;
    gemm_call_of(p, o, tensor_ptr, region, &g);
    tgr_fully_connected_plain_s8(GEMM_ARGS(g));
}

/* A fully connected layer's output rows are independent: bands of its rows (axis 0) only, since
 * every output column reads the whole input row. */
static const char *gemm_band_problem(const tgr_plan *p, uint32_t o, uint32_t axis)
{
    (void)p;
    (void)o;
    return axis == 0u ? NULL : TGR_TEXT("a fully connected layer bands only its rows");
}

TGR_OP_METHODS(OP_CONV, TILING_WINDOW, check_conv, conv_method);
TGR_OP_METHOD(OP_CONV, METHOD_CONV_POINTWISE, run_conv_pointwise);
TGR_OP_METHOD(OP_CONV, METHOD_CONV_UNPADDED, run_conv_unpadded);
TGR_OP_METHOD(OP_CONV, METHOD_CONV_PADDED, run_conv_padded);
TGR_OP_METHOD(OP_CONV, METHOD_CONV_GATHER, run_conv_gather);
TGR_OP_METHOD(OP_CONV, METHOD_CONV_PADDED_WIDE, run_conv_padded_wide);
TGR_OP_METHOD(OP_CONV, METHOD_CONV_PLAIN, run_conv_plain);
TGR_OP_METHODS(OP_DEPTHWISE, TILING_WINDOW, check_conv, depthwise_method);
TGR_OP_METHOD(OP_DEPTHWISE, METHOD_DEPTHWISE, run_depthwise);
TGR_OP_METHOD(OP_DEPTHWISE, METHOD_DEPTHWISE_3X3, run_depthwise_3x3);
TGR_OP_METHOD(OP_DEPTHWISE, METHOD_DEPTHWISE_PLAIN, run_depthwise_plain);
TGR_OP_METHODS(OP_GEMM, TILING_ROWS, check_gemm, gemm_method);
TGR_OP_METHOD(OP_GEMM, METHOD_FULLY_CONNECTED, run_gemm);
TGR_OP_METHOD(OP_GEMM, METHOD_FULLY_CONNECTED_PLAIN, run_gemm_plain);
TGR_OP_BANDS(OP_GEMM, gemm_band_problem);
TGR_OP_IMPL(OP_CONV_TRANSPOSE, TILING_WINDOW | TILING_2D_ONLY, check_conv_transpose, run_conv_transpose);

uint32_t tgr_plan_op_macs(const tgr_plan *p, uint32_t o)
{
    const uint32_t opcode = op_type(p, o);
    uint64_t macs = 0u;
    if (opcode == OP_CONV || opcode == OP_DEPTHWISE || opcode == OP_CONV_TRANSPOSE) {
        op_spatial sp;
        tgr_window w;
        uint64_t taps;
        op_decode(p, o, &sp);
        tgr_window_of(p, o, &sp, NULL, &w);
        taps = (uint64_t)w.kernel_h * (uint64_t)w.kernel_w;
        if (opcode == OP_CONV_TRANSPOSE) { /* each input value meets every tap of every output channel */
            macs = (uint64_t)w.batch * (uint64_t)w.in_h * (uint64_t)w.in_w * (uint64_t)w.in_c * taps * (uint64_t)w.out_c;
        } else {
            macs = (uint64_t)w.batch * (uint64_t)w.out_h * (uint64_t)w.out_w * (uint64_t)w.out_c * taps *
                   (opcode == OP_CONV ? (uint64_t)w.in_c : 1u);
        }
    } else if (opcode == OP_GEMM) {
        const uint32_t in = op_input(p, o, 0);
        macs = (uint64_t)tensor_dim(p, in, 0) * (uint64_t)tensor_dim(p, in, 1) *
               (uint64_t)tensor_dim(p, op_output(p, o, 0), 1);
    } else if (opcode == OP_MATMUL) {
        const uint32_t a = op_input(p, o, 0);
        macs = (uint64_t)tensor_bytes(p, op_output(p, o, 0)) * (uint64_t)tensor_dim(p, a, tensor_ndim(p, a) - 1u);
    }
    return macs > UINT32_MAX ? UINT32_MAX : (uint32_t)macs;
}
