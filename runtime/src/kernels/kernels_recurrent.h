/*
 * Recurrent int8 kernels whose state lives from run to run (schema 10 state variables): SVDF.
 * Plain functions over raw buffers; the op checks (ops/ops_recurrent.c) validated every shape and
 * pair. int16 and int32 values are little-endian and read with memcpy (plan weights are only
 * 4-byte aligned, state buffers 2-byte).
 */
#ifndef TGR_KERNELS_RECURRENT_H
#define TGR_KERNELS_RECURRENT_H

#include <stdint.h>

/* SVDF: per batch row, the state keeps `memory` int16 activations of each of `filters` filters
 * (oldest first). */
typedef struct tgr_svdf_params {
    uint32_t batch, inputs, filters, memory, rank;
    int32_t input_zp, output_zp;
    int32_t feature_multiplier, feature_shift;   /* input x feature weights -> state (int16) */
    int32_t output_multiplier, output_shift;     /* state x time weights (+ bias) -> output */
} tgr_svdf_params;

/* One step: the previous state (`state_in`) moves one place older into `state_out`, each
 * filter's newest activation is its input dot product requantized and saturated to int16, then
 * each of the filters/rank units sums its filters' dot products of state and time weights (int32,
 * wrapping), adds its bias (NULL: none) and is requantized into the int8 output. */
void tgr_svdf_s8(const tgr_svdf_params *q, const int8_t *x, const uint8_t *state_in, const int8_t *feature_weights,
                 const uint8_t *time_weights, const uint8_t *bias, uint8_t *state_out, int8_t *y);

#endif /* TGR_KERNELS_RECURRENT_H */
