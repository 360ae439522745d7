/*
 * Recurrent kernels (kernels_recurrent.h). SVDF's integer arithmetic, measured against the
 * reference on the compiler's svdf and svdf_batch fixtures over 20 consecutive runs each (the
 * state carried between them): TFLite's integer SVDF with the plan's two requantization pairs.
 * LSTM's, measured on the lstm fixtures and on hundreds of variants of them with random weights,
 * biases, zero points, pairs, cell exponents and clips (docs/execution.md#lstm): int16 gates,
 * a sigmoid and a tanh interpolated in one 256-entry table, the three product pairs.
 */
#include <string.h>

#include "kernels/fixedpoint.h"
#include "kernels/kernels_recurrent.h"

static int16_t load_s16(const uint8_t *at)
{
    int16_t v;
    memcpy(&v, at, sizeof v);
    return v;
}

static int32_t load_s32(const uint8_t *at)
{
    int32_t v;
    memcpy(&v, at, sizeof v);
    return v;
}

static int32_t clamp(int32_t v, int32_t low, int32_t high) { return v < low ? low : v > high ? high : v; }

void tgr_svdf_s8(const tgr_svdf_params *q, const int8_t *x, const uint8_t *state_in, const int8_t *feature_weights,
                 const uint8_t *time_weights, const uint8_t *bias, uint8_t *state_out, int8_t *y)
{
    const uint32_t row = q->filters * q->memory; /* int16 values of one batch row's state */
    const uint32_t units = q->filters / q->rank;
    uint32_t b, f, i, u;
    for (b = 0; b < q->batch; ++b) {
        const int8_t *xb = x + b * q->inputs;
        uint8_t *sb = state_out + 2u * b * row;
        /* one place older: drop each filter's oldest value */
        for (f = 0; f < q->filters; ++f) {
            memmove(sb + 2u * f * q->memory, state_in + 2u * (b * row + f * q->memory + 1u), 2u * (q->memory - 1u));
        }
        for (f = 0; f < q->filters; ++f) {
            uint32_t acc = 0;
            int16_t newest;
            for (i = 0; i < q->inputs; ++i) {
                acc += (uint32_t)(((int32_t)xb[i] - q->input_zp) * feature_weights[f * q->inputs + i]);
            }
            newest = (int16_t)clamp(fp_mul_by_quantized_multiplier((int32_t)acc, q->feature_multiplier, q->feature_shift),
                                    -32768, 32767);
            memcpy(sb + 2u * (f * q->memory + q->memory - 1u), &newest, sizeof newest);
        }
        for (u = 0; u < units; ++u) {
            uint32_t sum = bias != NULL ? (uint32_t)load_s32(bias + 4u * u) : 0u;
            uint32_t r;
            for (r = 0; r < q->rank; ++r) {
                f = u * q->rank + r;
                for (i = 0; i < q->memory; ++i) {
                    sum += (uint32_t)((int32_t)load_s16(sb + 2u * (f * q->memory + i)) *
                                      load_s16(time_weights + 2u * (f * q->memory + i)));
                }
            }
            y[b * units + u] = (int8_t)clamp(
                fp_mul_by_quantized_multiplier((int32_t)sum, q->output_multiplier, q->output_shift) + q->output_zp, -128,
                127);
        }
    }
}

/* 65536 * sigmoid(k / 24) for k = 0..255 as the reference's int16 sigmoid and tanh use it
 * (65535 for the last). Measured, not computed: 44 entries are one above the rounded value of
 * the formula, so tests/ops/test_ops_lstm.py reads every entry back out of the reference (a
 * tanh gate at each pre-activation, seen through the cell state) and compares. */
static const uint16_t sigmoid_table[256] = {
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149,
    40794, 41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369,
    47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169,
    53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370,
    60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302,
    62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536,
    63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786,
    64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079,
    65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234, 65246, 65258,
    65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433,
    65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474,
    65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498,
    65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522,
    65523, 65523, 65524, 65524, 65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528,
    65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530, 65530, 65530, 65531, 65531,
    65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65534, 65534, 65534, 65535

};

/* A Q3.12 pre-activation -> sigmoid in Q0.15: |3x| in steps of 2^9 indexes the table (one step
 * is 1/24), the 9 bits below interpolate; a negative input takes 1 - sigmoid(|x|). */
static int32_t sigmoid_q15(int32_t x)
{
    const int32_t v = 3 * x;
    const uint32_t a = (uint32_t)(v < 0 ? -v : v);
    const uint32_t k = a >> 9;
    uint32_t r;
    if (k >= 255u) {
        r = 0x7FFFu << 10;
    } else {
        r = ((uint32_t)sigmoid_table[k] << 9) + (a & 0x1FFu) * (uint32_t)(sigmoid_table[k + 1u] - sigmoid_table[k]);
    }
    r = v >= 0 ? r + (1u << 9) : (1u << 25) - r + (1u << 9) - 1u;
    return (int32_t)(r >> 10);
}

/* tanh(x) = 2 sigmoid(2x) - 1 on the same table, in steps of 2^8, for an input scaled by
 * (x * multiplier + rounding) >> shift; the product wraps in 32 bits as the reference's does
 * (measured with cell exponents up to 15). Result in Q0.15. */
static int32_t tanh_q15(int32_t x, int32_t multiplier, int32_t shift)
{
    const uint32_t rounding = shift > 0 ? 1u << (shift - 1) : 0u;
    const int32_t v = (int32_t)((uint32_t)x * (uint32_t)multiplier + rounding) >> shift;
    const uint32_t a = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
    const uint32_t k = a >> 8;
    int32_t r;
    if (k >= 255u) {
        r = 0xFFFF << 8;
    } else {
        r = (int32_t)(((uint32_t)sigmoid_table[k] << 8) +
                      (a & 0xFFu) * (uint32_t)(sigmoid_table[k + 1u] - sigmoid_table[k]));
    }
    r = v >= 0 ? r - (1 << 23) + (1 << 7) : (1 << 23) - r + (1 << 7) - 1;
    return r >> 8;
}

static int32_t saturate_s16(int32_t v) { return clamp(v, -32768, 32767); }

/* A gate's input or recurrent dot product of unit row `row` (wrapping int32 sums, as the
 * reference's), requantized into the gate's 2^-12 and saturated to int16. */
static int32_t gate_part(const int8_t *values, int32_t zero_point, const int8_t *row, uint32_t n, uint32_t bias,
                         const int32_t pair[2])
{
    uint32_t acc = bias, i;
    for (i = 0; i < n; ++i) {
        acc += (uint32_t)(((int32_t)values[i] - zero_point) * row[i]);
    }
    return saturate_s16(fp_mul_by_quantized_multiplier((int32_t)acc, pair[0], pair[1]));
}

/* One step of one batch row: x and the previous hidden state in, the new hidden state to `h`,
 * the cell state updated in place. */
static void lstm_step(const tgr_lstm_params *q, const tgr_lstm_operands *io, const int8_t *x, const int8_t *h_prev,
                      uint8_t *cell, int8_t *h)
{
    const int32_t tanh_shift = 12 + q->cell_power; /* cell units -> Q3.12, folded into the tanh */
    const int32_t tanh_multiplier = tanh_shift < 0 ? 3 : 3 << tanh_shift;
    const int32_t tanh_right = tanh_shift < 0 ? -tanh_shift : 0;
    uint32_t u, k;
    for (u = 0; u < q->units; ++u) {
        int32_t gate[4], c, product;
        int16_t stored;
        for (k = 0; k < 4u; ++k) {
            const int8_t *wx = (const int8_t *)io->weights[k] + u * q->inputs;
            const int8_t *wh = (const int8_t *)io->weights[4u + k] + u * q->units;
            const int32_t pre = saturate_s16(
                gate_part(x, q->input_zp, wx, q->inputs, (uint32_t)load_s32(io->weights[8u + k] + 4u * u),
                          q->pairs[2u * k]) +
                gate_part(h_prev, q->hidden_zp, wh, q->units, 0u, q->pairs[2u * k + 1u]));
            gate[k] = k == 2u ? tanh_q15(pre, 3, 0) : sigmoid_q15(pre);
        }
        c = saturate_s16(fp_mul_by_quantized_multiplier(gate[1] * load_s16(cell + 2u * u), q->pairs[TGR_LSTM_PAIR_FORGET][0],
                                                        q->pairs[TGR_LSTM_PAIR_FORGET][1]));
        c = saturate_s16(c + saturate_s16(fp_mul_by_quantized_multiplier(gate[0] * gate[2], q->pairs[TGR_LSTM_PAIR_INPUT][0],
                                                                         q->pairs[TGR_LSTM_PAIR_INPUT][1])));
        if (q->cell_clip >= 0) {
            c = clamp(c, -q->cell_clip, q->cell_clip);
        }
        stored = (int16_t)c;
        memcpy(cell + 2u * u, &stored, sizeof stored);
        product = tanh_q15(c, tanh_multiplier, tanh_right) * gate[3];
        h[u] = (int8_t)clamp(fp_mul_by_quantized_multiplier(product, q->pairs[TGR_LSTM_PAIR_OUTPUT][0], q->pairs[TGR_LSTM_PAIR_OUTPUT][1]) +
                                 q->hidden_zp,
                             -128, 127);
    }
}

void tgr_lstm_s8(const tgr_lstm_params *q, const tgr_lstm_operands *io)
{
    uint32_t b, t;
    memmove(io->cell_out, io->cell_in, 2u * q->batch * q->units);
    for (b = 0; b < q->batch; ++b) {
        const int8_t *h_prev = io->hidden_in + b * q->units;
        uint8_t *cell = io->cell_out + 2u * b * q->units;
        for (t = 0; t < q->steps; ++t) {
            const uint32_t row = q->time_major ? t * q->batch + b : b * q->steps + t;
            int8_t *h = io->y + row * q->units;
            lstm_step(q, io, io->x + row * q->inputs, h_prev, cell, h);
            h_prev = h;
        }
        memmove(io->hidden_out + b * q->units, h_prev, q->units);
    }
}
