/*
 * Reduction int8 kernels: ReduceMean/ReduceSum/ReduceMax/ReduceMin over any set of stored axes,
 * and GlobalMaxPool.
 *
 * Measured on the reference runtime (random inputs, several quantization sets, every axis):
 * ReduceMean is TFLite MEAN (the same folded multiplier as GlobalAveragePool, not a rounded
 * average, also with equal in/out quantization); ReduceSum applies QM(s_in/s_out) to
 * sum - zp_in * count with the two-step TFLite rounding (a double or float formula differs on
 * 5-10 % of outputs); ReduceMax/Min only exist with equal quantization (the compiler refuses
 * others); GlobalMaxPool requantizes its maximum in double like a rescaling MaxPool.
 */
#include "kernels/fixedpoint.h"
#include "kernels/kernels_data.h"
#include "tgr.h"

/* Output element value from the reduced elements' statistics. */
static int8_t finish(const tgr_reduce_params *rp, int32_t sum, int32_t extreme, int32_t count)
{
    int32_t y;
    switch (rp->kind) {
    case TGR_REDUCE_MEAN:
        return tgr_mean_finish(&rp->mean, sum);
    case TGR_REDUCE_SUM:
        /* zero point added with int32 wrap-around, as in the conv kernels */
        y = (int32_t)((uint32_t)fp_mul_by_quantized_multiplier(sum - rp->in_zp * count, rp->multiplier, rp->shift) +
                      (uint32_t)rp->out_zp);
        break;
    default:
        y = extreme;
        break;
    }
    return (int8_t)clamp_i32(y, rp->act_min, rp->act_max);
}

void tgr_reduce_s8(uint32_t rank, const int32_t *in_dims, uint32_t axes_mask, const tgr_reduce_params *rp,
                   const int8_t *in, int8_t *out)
{
    uint32_t stride[TGR_MAX_RANK];
    int32_t kept_index[TGR_MAX_RANK];
    int32_t red_index[TGR_MAX_RANK];
    uint32_t k, total = 1u, count = 1u, kept_total = 1u, o, r;
    uint32_t base = 0u;
    for (k = rank; k-- > 0u;) {
        stride[k] = total;
        total *= (uint32_t)in_dims[k];
        if (axes_mask & (1u << k)) {
            count *= (uint32_t)in_dims[k];
        } else {
            kept_total *= (uint32_t)in_dims[k];
        }
        kept_index[k] = 0;
    }
    /* Output elements in order (odometer over the kept axes); for each, an inner odometer over
     * the reduced axes. Every input element is read once; no scratch memory is needed. */
    for (o = 0; o < kept_total; ++o) {
        int32_t sum = 0;
        int32_t extreme = rp->kind == TGR_REDUCE_MIN ? 127 : -128;
        uint32_t src = base;
        for (k = 0; k < rank; ++k) {
            red_index[k] = 0;
        }
        for (r = 0; r < count; ++r) {
            int32_t x = in[src];
            sum += x;
            if (rp->kind == TGR_REDUCE_MIN ? x < extreme : x > extreme) {
                extreme = x;
            }
            for (k = rank; k-- > 0u;) {
                if (!(axes_mask & (1u << k))) {
                    continue;
                }
                if (++red_index[k] < in_dims[k]) {
                    src += stride[k];
                    break;
                }
                red_index[k] = 0;
                src -= stride[k] * (uint32_t)(in_dims[k] - 1);
            }
        }
        out[o] = finish(rp, sum, extreme, (int32_t)count);
        for (k = rank; k-- > 0u;) {
            if (axes_mask & (1u << k)) {
                continue;
            }
            if (++kept_index[k] < in_dims[k]) {
                base += stride[k];
                break;
            }
            kept_index[k] = 0;
            base -= stride[k] * (uint32_t)(in_dims[k] - 1);
        }
    }
}

void tgr_global_max_pool_s8(int32_t batch, int32_t positions, int32_t channels, const int8_t *in,
                            const tgr_qparams *qin, const tgr_qparams *qout, int32_t act_min, int32_t act_max,
                            int8_t *out)
{
    int32_t n, i, c;
    for (n = 0; n < batch; ++n) {
        const int8_t *image = in + (int64_t)n * positions * channels;
        for (c = 0; c < channels; ++c) {
            int8_t best = -128;
            int8_t y;
            for (i = 0; i < positions; ++i) {
                if (image[(int64_t)i * channels + c] > best) {
                    best = image[(int64_t)i * channels + c];
                }
            }
            tgr_requant_double_s8(1u, &best, qin, qout, &y);
            out[(int64_t)n * channels + c] = (int8_t)clamp_i32(y, act_min, act_max);
        }
    }
}

void tgr_cumsum_s8(const tgr_cumsum_params *c, uint32_t outer, uint32_t length, uint32_t inner, const int8_t *in,
                   int8_t *out)
{
    uint32_t o, i, n;
    for (o = 0; o < outer; ++o) {
        for (i = 0; i < inner; ++i) {
            const size_t base = (size_t)o * length * inner + i;
            int32_t sum = -c->in_zp;
            for (n = 0; n < length; ++n) {
                const size_t at = base + (size_t)(c->reverse ? length - 1u - n : n) * inner;
                const int32_t term = (int32_t)in[at] - c->in_zp;
                int32_t y;
                if (!c->exclusive) {
                    sum += term;
                }
                y = fp_mul_by_quantized_multiplier((int32_t)((uint32_t)sum << c->lift), c->multiplier, c->shift);
                out[at] = (int8_t)clamp_i32(y + c->out_zp, -128, 127);
                if (c->exclusive) {
                    sum += term;
                }
            }
        }
    }
}

void tgr_arg_extreme_s8(int smallest, uint32_t outer, uint32_t length, uint32_t inner, const int8_t *in, uint8_t *out)
{
    uint32_t o, i, n;
    for (o = 0; o < outer; ++o) {
        for (i = 0; i < inner; ++i) {
            const int8_t *x = in + (size_t)o * length * inner + i;
            uint32_t best = 0u;
            uint8_t *y = out + 4u * ((size_t)o * inner + i);
            for (n = 1u; n < length; ++n) {
                int8_t v = x[(size_t)n * inner];
                if (smallest ? v < x[(size_t)best * inner] : v > x[(size_t)best * inner]) {
                    best = n;
                }
            }
            y[0] = (uint8_t)best;
            y[1] = (uint8_t)(best >> 8);
            y[2] = (uint8_t)(best >> 16);
            y[3] = (uint8_t)(best >> 24);
        }
    }
}
