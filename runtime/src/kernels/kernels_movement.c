/*
 * Data-movement int8 kernels: requantizing copies, Transpose, Pad, Concat and Split.
 *
 * Two different requantization formulas exist in the reference runtime and both are kept:
 * Reshape/Flatten (and the rescaling max pools) round in double, Concat rounds in float32. They
 * differ on near-tie inputs, e.g. s_in = 0.1f - 1 ulp, s_out = 0.04f, where the float32 ratio
 * is exactly 2.5 and the double ratio is just below it (measured over all 256 codes).
 */
#include <math.h>
#include <string.h>

#include "kernels/fixedpoint.h"
#include "kernels/kernels_data.h"
#include "tgr.h"

static int same_quantization(const tgr_qparams *a, const tgr_qparams *b)
{
    return a->scale == b->scale && a->zero_point == b->zero_point;
}

void tgr_requant_double_s8(uint32_t count, const int8_t *in, const tgr_qparams *qin, const tgr_qparams *qout,
                           int8_t *out)
{
    uint32_t i;
    if (same_quantization(qin, qout)) {
        if (out != in) {
            memmove(out, in, count);
        }
        return;
    }
    for (i = 0; i < count; ++i) {
        /* Multiply, then divide: the order the reference rounds in (ties away from zero). */
        double v = (double)((int32_t)in[i] - qin->zero_point) * (double)qin->scale / (double)qout->scale;
        out[i] = (int8_t)clamp_i32((int32_t)round(v) + qout->zero_point, -128, 127);
    }
}

void tgr_requant_float_s8(uint32_t count, const int8_t *in, const tgr_qparams *qin, const tgr_qparams *qout,
                          int8_t *out)
{
    uint32_t i;
    float ratio;
    if (same_quantization(qin, qout)) {
        if (out != in) {
            memmove(out, in, count);
        }
        return;
    }
    ratio = qin->scale / qout->scale;
    for (i = 0; i < count; ++i) {
        float v = ratio * (float)((int32_t)in[i] - qin->zero_point);
        out[i] = (int8_t)clamp_i32((int32_t)roundf(v) + qout->zero_point, -128, 127);
    }
}

void tgr_transpose_s8(uint32_t rank, const int32_t *in_dims, const uint8_t *perm, const int8_t *in, int8_t *out)
{
    uint32_t in_stride[TGR_MAX_RANK];
    uint32_t step[TGR_MAX_RANK];   /* input stride of each output axis */
    int32_t out_dims[TGR_MAX_RANK];
    int32_t index[TGR_MAX_RANK];
    uint32_t total = 1u;
    uint32_t k, i, src = 0u;
    for (k = rank; k-- > 0u;) {
        in_stride[k] = total;
        total *= (uint32_t)in_dims[k];
    }
    for (k = 0; k < rank; ++k) {
        out_dims[k] = in_dims[perm[k]];
        step[k] = in_stride[perm[k]];
        index[k] = 0;
    }
    /* Walk the output in order with an odometer over its axes, moving the input offset by the
     * stride of the input axis each output axis comes from. */
    for (i = 0; i < total; ++i) {
        out[i] = in[src];
        for (k = rank; k-- > 0u;) {
            if (++index[k] < out_dims[k]) {
                src += step[k];
                break;
            }
            index[k] = 0;
            src -= step[k] * (uint32_t)(out_dims[k] - 1);
        }
    }
}

/* Pads axis `axis` and everything inside it, recursively; `in`/`out` point at the start of the
 * current sub-block and `out_inner[k]` is the byte size of one index step on output axis k. */
static void pad_axis(uint32_t rank, uint32_t axis, const int32_t *in_dims, const int32_t *pads, int8_t fill,
                     const uint32_t *in_inner, const uint32_t *out_inner, const int8_t *in, int8_t *out)
{
    int32_t i;
    uint32_t before = (uint32_t)pads[2u * axis] * out_inner[axis];
    uint32_t after = (uint32_t)pads[2u * axis + 1u] * out_inner[axis];
    memset(out, fill, before);
    out += before;
    if (axis + 1u == rank) {
        memcpy(out, in, (size_t)in_dims[axis]);
        out += in_dims[axis];
    } else {
        for (i = 0; i < in_dims[axis]; ++i) {
            pad_axis(rank, axis + 1u, in_dims, pads, fill, in_inner, out_inner, in, out);
            in += in_inner[axis];
            out += out_inner[axis];
        }
    }
    memset(out, fill, after);
}

void tgr_pad_s8(uint32_t rank, const int32_t *in_dims, const int32_t *pads, int8_t fill, const int8_t *in,
                int8_t *out)
{
    uint32_t in_inner[TGR_MAX_RANK];
    uint32_t out_inner[TGR_MAX_RANK];
    uint32_t k, in_size = 1u, out_size = 1u;
    for (k = rank; k-- > 0u;) {
        in_inner[k] = in_size;
        out_inner[k] = out_size;
        in_size *= (uint32_t)in_dims[k];
        out_size *= (uint32_t)(in_dims[k] + pads[2u * k] + pads[2u * k + 1u]);
    }
    if (rank == 0u) {
        out[0] = in[0];
        return;
    }
    pad_axis(rank, 0u, in_dims, pads, fill, in_inner, out_inner, in, out);
}

void tgr_concat_s8(uint32_t count, const int8_t *const *inputs, const uint32_t *chunk, const tgr_qparams *qin,
                   uint32_t outer, const tgr_qparams *qout, int8_t *out)
{
    uint32_t o, k;
    for (o = 0; o < outer; ++o) {
        for (k = 0; k < count; ++k) {
            tgr_requant_float_s8(chunk[k], inputs[k] + (size_t)o * chunk[k], &qin[k], qout, out);
            out += chunk[k];
        }
    }
}

void tgr_split_s8(uint32_t count, const int8_t *in, uint32_t outer, const uint32_t *chunk, int8_t *const *outputs)
{
    uint32_t o, k;
    for (o = 0; o < outer; ++o) {
        for (k = 0; k < count; ++k) {
            memcpy(outputs[k] + (size_t)o * chunk[k], in, chunk[k]);
            in += chunk[k];
        }
    }
}

int32_t tgr_resize_nearest_index(int32_t convention, float scale, int32_t in, int32_t out, int32_t i)
{
    int32_t src;
    if (convention == 2) {
        /* align_corners: round the exact-corner mapping; roundf, not floorf(x + 0.5f), which
         * can round the sum up across an integer in float32. */
        float corner = out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f;
        src = (int32_t)roundf(corner * (float)i);
    } else if (convention == 3) {
        src = (int32_t)floorf(((float)i + 0.5f) * scale);
    } else {
        src = (int32_t)floorf((float)i * scale);
    }
    return src < in ? (src < 0 ? 0 : src) : in - 1;
}

void tgr_resize_nearest_s8(int32_t batch, int32_t in_h, int32_t in_w, int32_t channels, int32_t out_h, int32_t out_w,
                           int32_t convention, float scale_h, float scale_w, const tgr_qparams *qin,
                           const tgr_qparams *qout, const tgr_resize_rows *rows, const int8_t *in, int8_t *out)
{
    int32_t n, y, x;
    for (n = 0; n < batch; ++n) {
        const int8_t *image = in + (size_t)n * in_h * in_w * channels;
        for (y = rows->y0; y < rows->y1; ++y) {
            const int32_t sy = tgr_resize_nearest_index(convention, scale_h, in_h, out_h, y) - rows->in_row0;
            for (x = 0; x < out_w; ++x) {
                const int32_t sx = tgr_resize_nearest_index(convention, scale_w, in_w, out_w, x);
                const int8_t *pixel = image + ((size_t)sy * in_w + sx) * channels;
                tgr_requant_double_s8((uint32_t)channels, pixel, qin, qout, out);
                out += channels;
            }
        }
    }
}

/* Q10 source step of one axis. */
static int32_t bilinear_step(int32_t convention, int32_t in, int32_t out)
{
    float scale;
    if (convention == 2) {
        scale = out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f;
    } else {
        scale = (float)in / (float)out;
    }
    return (int32_t)roundf(scale * 1024.0f);
}

/* Neighbours i0 <= i1 and the Q10 distance of the sample from i0 along one axis. */
static void bilinear_source(int32_t convention, int32_t step, int32_t in, int32_t i, int32_t *i0, int32_t *i1,
                            int32_t *frac)
{
    int32_t v = convention == 0 ? (((2 * i + 1) * step) >> 1) - 512 : i * step;
    if (v < 0) {
        v = 0; /* half-pixel samples before the first centre take the edge */
    }
    *i0 = v >> 10;
    *i1 = (v + 1023) >> 10;
    *frac = v - (*i0 << 10);
    if (*i0 > in - 1) {
        *i0 = in - 1;
    }
    if (*i1 > in - 1) {
        *i1 = in - 1;
    }
}

void tgr_resize_bilinear_source(int32_t convention, int32_t in, int32_t out, int32_t i, int32_t *i0, int32_t *i1)
{
    int32_t frac;
    bilinear_source(convention, bilinear_step(convention, in, out), in, i, i0, i1, &frac);
}

void tgr_resize_bilinear_s8(int32_t batch, int32_t in_h, int32_t in_w, int32_t channels, int32_t out_h, int32_t out_w,
                            int32_t convention, const tgr_resize_rows *rows, const int8_t *in, int8_t *out)
{
    const int32_t step_h = bilinear_step(convention, in_h, out_h);
    const int32_t step_w = bilinear_step(convention, in_w, out_w);
    int32_t n, y, x, c;
    for (n = 0; n < batch; ++n) {
        const int8_t *image = in + (size_t)n * in_h * in_w * channels;
        for (y = rows->y0; y < rows->y1; ++y) {
            int32_t y0, y1, dy;
            bilinear_source(convention, step_h, in_h, y, &y0, &y1, &dy);
            y0 -= rows->in_row0;
            y1 -= rows->in_row0;
            for (x = 0; x < out_w; ++x) {
                int32_t x0, x1, dx;
                const int8_t *p00, *p01, *p10, *p11;
                bilinear_source(convention, step_w, in_w, x, &x0, &x1, &dx);
                p00 = image + ((size_t)y0 * in_w + x0) * channels;
                p01 = image + ((size_t)y0 * in_w + x1) * channels;
                p10 = image + ((size_t)y1 * in_w + x0) * channels;
                p11 = image + ((size_t)y1 * in_w + x1) * channels;
                for (c = 0; c < channels; ++c) {
                    /* |sum| <= 128 * 2^20: fits int32. */
                    int32_t sum = p00[c] * (1024 - dy) * (1024 - dx) + p01[c] * (1024 - dy) * dx +
                                  p10[c] * dy * (1024 - dx) + p11[c] * dy * dx;
                    int32_t v = sum >= 0 ? (sum + (1 << 19)) >> 20 : -((-sum + (1 << 19)) >> 20);
                    *out++ = (int8_t)clamp_i32(v, -128, 127);
                }
            }
        }
    }
}
