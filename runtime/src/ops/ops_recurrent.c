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
    if (tensor_ndim(p, x) != 2u || tensor_ndim(p, y) != 2u || tensor_dtype(p, state) != DT_INT16 ||
        tensor_dtype(p, op_output(p, o, 1)) != DT_INT16 || tensor_bytes(p, op_output(p, o, 1)) != tensor_bytes(p, state)) {
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

TGR_OP_IMPL(OP_SVDF, TILING_ROWS, check_svdf, run_svdf);
