/*
 * Recurrent int8 kernels whose state lives from run to run (schema 10 state variables): SVDF and
 * LSTM.
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

/* LSTM (TFLite's unidirectional sequence LSTM, int8 activations and weights, int16 cell state):
 * gates i, f, c, o in that order everywhere. Each gate's pre-activation is int16 in units of
 * 2^-12: its input and recurrent dot products (with the gate's bias on the input side) are
 * requantized and saturated separately, then added with saturation. */
typedef struct tgr_lstm_params {
    uint32_t batch, steps, inputs, units;
    int time_major;                /* x [steps, batch, inputs] rather than [batch, steps, inputs] */
    int32_t input_zp, hidden_zp;
    int32_t cell_power;            /* the cell state's scale is 2^cell_power */
    int32_t cell_clip;             /* |cell| bound in cell units; < 0: no clip */
    int32_t pairs[11][2];          /* (multiplier, shift), in the plan's order (TGR_LSTM_PAIR_*) */
} tgr_lstm_params;

/* Pair 2g is gate g's input product into 2^-12, pair 2g + 1 its recurrent one; then the three
 * products of the cell and hidden updates. */
enum {
    TGR_LSTM_PAIR_FORGET = 8, /* forget gate x cell -> cell */
    TGR_LSTM_PAIR_INPUT = 9,  /* input gate x cell gate -> cell */
    TGR_LSTM_PAIR_OUTPUT = 10 /* output gate x tanh(cell) -> hidden (int8, hidden_zp) */
};

/* Operands of one LSTM run; weights[0..3] are the gates' input weights [units][inputs],
 * weights[4..7] their recurrent weights [units][units], weights[8..11] their int32 biases. */
typedef struct tgr_lstm_operands {
    const int8_t *x, *hidden_in;
    const uint8_t *cell_in;
    const uint8_t *weights[12];
    int8_t *y, *hidden_out;
    uint8_t *cell_out;
} tgr_lstm_operands;

/* Every step of the sequence: the hidden state of step t is row t of the output, so the
 * recurrent products of step t + 1 read it there and no scratch buffer is needed; the cell state
 * is updated in `cell_out` in place; `hidden_out` receives the last step's row. */
void tgr_lstm_s8(const tgr_lstm_params *q, const tgr_lstm_operands *io);

#endif /* TGR_KERNELS_RECURRENT_H */
