/*
 * Recurrent family: ops whose state is a schema 10 state variable, carried from run to run by
 * the executor (docs/execution.md#state-variables). Svdf (85), also in row bands of its batch
 * rows, as the compiler bands it below its peak: inputs x [batch, inputs] int8 and
 * the previous state [batch, filters x memory] int16; outputs y [batch, units] int8 and the next
 * state. OP_ATTR_CONSTANTS names its feature weights [filters][inputs] int8, time weights
 * [filters][memory] int16 and bias [units] int32 (or 0xFFFF); OP_ATTR_SVDF gives rank, the state
 * zero point and the two pairs (inputs -> state, state -> output).
 *
 * Refused at load, where the reference's arithmetic was not measured: a non-zero state zero
 * point, a fused activation, weights inside LZ4-compressed blocks.
 *
 * Lstm (86), whole tensors: inputs x [batch, steps, inputs] (or [steps, batch, inputs] when time
 * major) int8, the previous hidden state [batch, units] int8 and cell state int16; outputs the
 * hidden state of every step (x's layout, units for inputs) and the next hidden and cell states.
 * OP_ATTR_CONSTANTS names the gates' input weights, recurrent weights and int32 biases (gates i,
 * f, c, o); OP_ATTR_LSTM's int8 form the zero points, the cell exponent and clip and 11 pairs.
 * Accepted where the reference accepts (its ranges measured): exponents -30..15, clips 0..32767,
 * any non-negative multiplier with a shift in -31..30. The cell is clipped only when the float
 * clip is non-zero, to the clip in cell units, as the reference clips.
 */
#include "kernels/kernels_recurrent.h"
#include "ops/ops.h"

/* The SVDF's geometry and pairs from the plan; NULL, or what is wrong. */
static const char *svdf_params(const tgr_plan *p, uint32_t o, tgr_svdf_params *q, const uint8_t **weights)
{
    uint32_t len = 0, k;
    const uint8_t *constants = tgr_attr_find(p, o, ATTR_CONSTANTS, &len);
    const uint8_t *attr;
    uint32_t x, state, y, w[3];
    if (op_num_inputs(p, o) != 2u || op_num_outputs(p, o) != 2u || constants == NULL || len != 6u) {
        return TGR_TEXT("its operands or constants are not an SVDF's");
    }
    for (k = 0; k < 3u; ++k) {
        w[k] = rd_u16(constants + 2u * k);
        if ((w[k] == NONE16 && k < 2u) || (w[k] != NONE16 && w[k] >= p->num_weights)) {
            return TGR_TEXT("its constants are not an SVDF's");
        }
        weights[k] = w[k] != NONE16 ? weight_data(p, w[k]) : NULL;
    }
    attr = tgr_attr_find(p, o, ATTR_SVDF, &len);
    if (attr == NULL || len != 24u) {
        return TGR_TEXT("its SVDF attribute is not the int8 form");
    }
    x = op_input(p, o, 0);
    state = op_input(p, o, 1);
    y = op_output(p, o, 0);
    q->rank = (uint32_t)rd_i32(attr);
    q->feature_multiplier = rd_i32(attr + 8);
    q->feature_shift = rd_i32(attr + 12);
    q->output_multiplier = rd_i32(attr + 16);
    q->output_shift = rd_i32(attr + 20);
    if (tensor_ndim(p, x) != 2u || tensor_ndim(p, y) != 2u || tensor_dtype(p, state) != TGR_DTYPE_INT16 ||
        tensor_dtype(p, op_output(p, o, 1)) != TGR_DTYPE_INT16 || tensor_bytes(p, op_output(p, o, 1)) != tensor_bytes(p, state)) {
        return TGR_TEXT("its tensors are not an SVDF's");
    }
    q->batch = (uint32_t)tensor_dim(p, x, 0);
    q->inputs = (uint32_t)tensor_dim(p, x, 1);
    q->filters = weight_size(p, w[0]) / q->inputs;
    if (q->rank == 0u || q->filters == 0u || weight_size(p, w[0]) != q->filters * q->inputs ||
        q->filters % q->rank != 0u || weight_size(p, w[1]) % (2u * q->filters) != 0u ||
        weight_size(p, w[1]) < 2u * q->filters) {
        return TGR_TEXT("its weights do not match its input and rank");
    }
    q->memory = weight_size(p, w[1]) / (2u * q->filters);
    if ((uint32_t)tensor_dim(p, y, 0) != q->batch || (uint32_t)tensor_dim(p, y, 1) != q->filters / q->rank ||
        (uint64_t)tensor_bytes(p, state) != 2ull * q->batch * q->filters * q->memory ||
        (w[2] != NONE16 && weight_size(p, w[2]) != 4u * (q->filters / q->rank))) {
        return TGR_TEXT("its state, output or bias does not match its weights");
    }
    q->input_zp = tgr_qparams_of(p, x).zero_point;
    q->output_zp = tgr_qparams_of(p, y).zero_point;
    return NULL;
}

static tgr_status check_svdf(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    tgr_svdf_params q;
    const uint8_t *weights[3];
    const uint8_t *attr = tgr_attr_find(p, o, ATTR_SVDF, NULL);
    const char *why = svdf_params(p, o, &q, weights);
    op_spatial sp;
    op_decode(p, o, &sp);
    if (why != NULL) {
        return tgr_bad_op(err, p, o, why);
    }
    if (rd_i32(attr + 4) != 0 || sp.fused_act != ACT_NONE || p->num_blocks > 0u) {
        return tgr_unsupported_op(err, p, o, "a non-zero state zero point, a fused activation or compressed weights");
    }
    if (!tgr_valid_pair(q.feature_multiplier, q.feature_shift) || !tgr_valid_pair(q.output_multiplier, q.output_shift)) {
        return tgr_bad_op(err, p, o, "its requantization pairs are out of range");
    }
    return TGR_OK;
}

static void run_svdf(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    tgr_svdf_params q;
    const uint8_t *weights[3];
    int32_t dims[TGR_MAX_RANK];
    svdf_params(p, o, &q, weights);
    tgr_band_dims(p, op_input(p, o, 0), region, dims);
    q.batch = (uint32_t)dims[0]; /* row bands cut the batch */
    tgr_svdf_s8(&q, (const int8_t *)tensor_ptr[op_input(p, o, 0)], tensor_ptr[op_input(p, o, 1)],
                (const int8_t *)weights[0], weights[1], weights[2], tensor_ptr[op_output(p, o, 1)],
                (int8_t *)tensor_ptr[op_output(p, o, 0)]);
}

/* Bands of the batch rows (axis 0) only: each row runs its own filters over its own state. */
static const char *svdf_band_problem(const tgr_plan *p, uint32_t o, uint32_t axis)
{
    (void)p;
    (void)o;
    return axis == 0u ? NULL : TGR_TEXT("an SVDF bands only its batch rows");
}

TGR_OP_IMPL(OP_SVDF, TILING_ROWS, check_svdf, run_svdf);
TGR_OP_BANDS(OP_SVDF, svdf_band_problem);

enum { LSTM_ATTR_BYTES = 112, LSTM_CONSTANTS = 12 };

/* A pair the reference accepts for LSTM: any non-negative multiplier, a shift in -31..30. */
static int lstm_pair_accepted(int32_t multiplier, int32_t shift) { return multiplier >= 0 && shift >= -31 && shift <= 30; }

/* The LSTM's geometry, pairs and weights from the plan (its operand dtypes are checked by the
 * registry); NULL, or what is wrong. */
static const char *lstm_params(const tgr_plan *p, uint32_t o, tgr_lstm_params *q, const uint8_t **weights)
{
    uint32_t len = 0, k, x, hidden, y, batch_axis, step_axis;
    const uint8_t *constants = tgr_attr_find(p, o, ATTR_CONSTANTS, &len);
    const uint8_t *attr;
    int in_range;
    float clip;
    int32_t clip_units;
    if (op_num_inputs(p, o) != 3u || op_num_outputs(p, o) != 3u || constants == NULL || len != 2u * LSTM_CONSTANTS) {
        return TGR_TEXT("its operands or constants are not an LSTM's");
    }
    attr = tgr_attr_find(p, o, ATTR_LSTM, &len);
    if (attr == NULL || len != LSTM_ATTR_BYTES) {
        return TGR_TEXT("its LSTM attribute is not the int8 form");
    }
    q->time_major = rd_i32(attr);
    clip = rd_f32(attr + 4);
    q->input_zp = rd_i32(attr + 8);
    q->hidden_zp = rd_i32(attr + 12);
    q->cell_power = rd_i32(attr + 16);
    clip_units = rd_i32(attr + 20);
    q->cell_clip = clip != 0.0f ? clip_units : -1;
    in_range = q->input_zp >= -128 && q->input_zp <= 127 && q->hidden_zp >= -128 && q->hidden_zp <= 127 &&
               q->cell_power >= -30 && q->cell_power <= 15 && clip_units >= 0 && clip_units <= 32767;
    for (k = 0; k < 11u; ++k) {
        q->pairs[k][0] = rd_i32(attr + 24u + 8u * k);
        q->pairs[k][1] = rd_i32(attr + 28u + 8u * k);
        in_range = in_range && lstm_pair_accepted(q->pairs[k][0], q->pairs[k][1]);
    }
    if ((q->time_major != 0 && q->time_major != 1) || !(clip >= 0.0f && clip <= 3.4028235e38f)) {
        return TGR_TEXT("its time-major flag or cell clip is out of range");
    }
    if (!in_range) {
        return TGR_TEXT("its zero points, cell exponent, cell clip or pairs are out of range");
    }
    x = op_input(p, o, 0);
    hidden = op_input(p, o, 1);
    y = op_output(p, o, 0);
    batch_axis = q->time_major ? 1u : 0u;
    step_axis = 1u - batch_axis;
    if (tensor_ndim(p, x) != 3u || tensor_ndim(p, hidden) != 2u || tensor_ndim(p, y) != 3u) {
        return TGR_TEXT("its input, hidden state or output has the wrong rank");
    }
    q->batch = (uint32_t)tensor_dim(p, x, batch_axis);
    q->steps = (uint32_t)tensor_dim(p, x, step_axis);
    q->inputs = (uint32_t)tensor_dim(p, x, 2);
    q->units = (uint32_t)tensor_dim(p, hidden, 1);
    if ((uint32_t)tensor_dim(p, hidden, 0) != q->batch || tensor_bytes(p, op_output(p, o, 1)) != tensor_bytes(p, hidden) ||
        (uint64_t)tensor_bytes(p, op_input(p, o, 2)) != 2ull * q->batch * q->units ||
        tensor_bytes(p, op_output(p, o, 2)) != tensor_bytes(p, op_input(p, o, 2)) ||
        (uint32_t)tensor_dim(p, y, batch_axis) != q->batch || (uint32_t)tensor_dim(p, y, step_axis) != q->steps ||
        (uint32_t)tensor_dim(p, y, 2) != q->units) {
        return TGR_TEXT("its states or output do not match its input");
    }
    for (k = 0; k < LSTM_CONSTANTS; ++k) {
        const uint32_t w = rd_u16(constants + 2u * k);
        const uint64_t expected = k < 4u ? (uint64_t)q->units * q->inputs
                                  : k < 8u ? (uint64_t)q->units * q->units : 4ull * q->units;
        if (w >= p->num_weights || weight_size(p, w) != expected) {
            return TGR_TEXT("its weights and biases do not match its input and units");
        }
        weights[k] = weight_data(p, w);
    }
    return NULL;
}

static tgr_status check_lstm(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    tgr_lstm_params q;
    const uint8_t *weights[LSTM_CONSTANTS];
    const char *why = lstm_params(p, o, &q, weights);
    op_spatial sp;
    op_decode(p, o, &sp);
    if (why != NULL) {
        return tgr_bad_op(err, p, o, why);
    }
    if (sp.fused_act != ACT_NONE || p->num_blocks > 0u) {
        return tgr_unsupported_op(err, p, o, "a fused activation or compressed weights");
    }
    return TGR_OK;
}

static void run_lstm(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    tgr_lstm_params q;
    tgr_lstm_operands io;
    (void)region; /* whole tensors only */
    lstm_params(p, o, &q, io.weights);
    io.x = (const int8_t *)tensor_ptr[op_input(p, o, 0)];
    io.hidden_in = (const int8_t *)tensor_ptr[op_input(p, o, 1)];
    io.cell_in = tensor_ptr[op_input(p, o, 2)];
    io.y = (int8_t *)tensor_ptr[op_output(p, o, 0)];
    io.hidden_out = (int8_t *)tensor_ptr[op_output(p, o, 1)];
    io.cell_out = tensor_ptr[op_output(p, o, 2)];
    tgr_lstm_s8(&q, &io);
}

TGR_OP_IMPL(OP_LSTM, TILING_NONE, check_lstm, run_lstm);
