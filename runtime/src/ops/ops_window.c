/*
 * Sliding-window geometry shared by the convolution and pooling families, so pooling does not
 * depend on convolution.
 */
#include "ops/ops_window.h"

/* Output extent of a sliding window, or 0 when the window does not fit. */
static int64_t window_out(int64_t in, uint32_t kernel, uint32_t stride, uint32_t dilation, uint32_t pad_a,
                          uint32_t pad_b)
{
    int64_t span = (int64_t)(kernel - 1u) * tgr_effective_dilation(dilation) + 1;
    int64_t padded = in + pad_a + pad_b;
    if (stride == 0u || kernel == 0u || padded < span) {
        return 0;
    }
    return (padded - span) / stride + 1;
}

tgr_status tgr_check_window_geometry(const tgr_plan *p, uint32_t o, const op_spatial *sp, tgr_error *err)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    if (!tgr_is_nhwc(p, in) || !tgr_is_nhwc(p, out)) {
        return tgr_bad_op(err, p, o, "input and output must be rank-4 channels-last tensors");
    }
    if (tensor_dim(p, in, 0) != tensor_dim(p, out, 0)) {
        return tgr_bad_op(err, p, o, "batch extents differ");
    }
    if (window_out(tensor_dim(p, in, 1), sp->kernel_h, sp->stride_h, sp->dilation_h, sp->pad_top, sp->pad_bottom) !=
            tensor_dim(p, out, 1) ||
        window_out(tensor_dim(p, in, 2), sp->kernel_w, sp->stride_w, sp->dilation_w, sp->pad_left, sp->pad_right) !=
            tensor_dim(p, out, 2)) {
        return tgr_bad_op(err, p, o, "kernel, stride and pads do not produce the output extent");
    }
    return TGR_OK;
}

/* A buffer that starts below the window's first input row shows up as an effective padding
 * (negative when it holds extra rows above), so tiles reuse the whole-tensor kernels. */
void tgr_window_of(const tgr_plan *p, uint32_t o, const op_spatial *sp, const int32_t *region, tgr_window *w)
{
    uint32_t in = op_input(p, o, 0);
    uint32_t out = op_output(p, o, 0);
    int32_t x[4], y[4];
    tgr_extent_of(p, in, region, x);
    tgr_extent_of(p, out, region, y);
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
    w->dilation_h = (int32_t)tgr_effective_dilation(sp->dilation_h);
    w->dilation_w = (int32_t)tgr_effective_dilation(sp->dilation_w);
    if (op_type(p, o) == OP_CONV_TRANSPOSE) {
        /* Output row y[0] + oy reads input row (y[0] + oy + pad - tap) / stride; relative to the
         * buffer's first row x[0] the padding grows by y[0] and shrinks by x[0] strides. */
        w->pad_top = (int32_t)sp->pad_top + y[0] - x[0] * w->stride_h;
        w->pad_left = (int32_t)sp->pad_left + y[2] - x[2] * w->stride_w;
        return;
    }
    w->pad_top = (int32_t)sp->pad_top + x[0] - y[0] * w->stride_h;
    w->pad_left = (int32_t)sp->pad_left + x[2] - y[2] * w->stride_w;
}
