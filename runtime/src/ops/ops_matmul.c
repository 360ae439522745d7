/*
 * Matmul family: MatMul (25) of two int8 activations, [..., M, K] x [..., K, N] -> [..., M, N]
 * on model-order (LINEAR or rank-2) tensors with equal leading (batch) extents. The reference
 * refuses a broadcast second operand ("operator contract is not executable"), so do we.
 * Requantization uses the output entry's stored pair (s_a * s_b / s_out,
 * docs/plan-format.md#quantization).
 * Constant-weight products are Gemm (ops_conv.c); the compiler lowers rank > 2 ones to
 * Transpose/Reshape around a rank-2 Gemm.
 */
#include "kernels/kernels_data.h"
#include "ops/ops.h"

static tgr_status check_matmul(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    uint32_t a = op_input(p, o, 0);
    uint32_t b = op_input(p, o, 1);
    uint32_t y = op_output(p, o, 0);
    uint32_t rank = tensor_ndim(p, y);
    uint32_t q = tensor_quant(p, y);
    uint32_t k;
    op_spatial sp;
    op_decode(p, o, &sp);
    if (rank < 2u || tensor_ndim(p, a) != rank || tensor_ndim(p, b) != rank || !tgr_model_order(p, a) ||
        !tgr_model_order(p, b) || !tgr_model_order(p, y)) {
        return tgr_unsupported_op(err, p, o, "operands of different ranks or in channels-last order");
    }
    for (k = 0; k + 2u < rank; ++k) {
        if (tensor_dim(p, a, k) != tensor_dim(p, y, k) || tensor_dim(p, b, k) != tensor_dim(p, y, k)) {
            return tgr_unsupported_op(err, p, o, "a broadcast batch axis");
        }
    }
    if (tensor_dim(p, a, rank - 2u) != tensor_dim(p, y, rank - 2u) || tensor_dim(p, b, rank - 1u) != tensor_dim(p, y, rank - 1u) ||
        tensor_dim(p, a, rank - 1u) != tensor_dim(p, b, rank - 2u)) {
        return tgr_bad_op(err, p, o, "operand extents do not form a matrix product");
    }
    /* |a - zp| and |b - zp| are at most 255: beyond 33025 terms the int32 sum could wrap. */
    if (tensor_dim(p, a, rank - 1u) > 33025) {
        return tgr_unsupported_op(err, p, o, "an inner dimension above 33025");
    }
    if (quant_channels(p, q) != 1u || !tgr_valid_pair(rd_i32(quant_multipliers(p, q)), rd_i32(quant_shifts(p, q)))) {
        return tgr_bad_op(err, p, o, "output requantization is not one valid multiplier/shift pair");
    }
    if (sp.weight_idx != NONE16 || sp.bias_idx != NONE16) {
        return tgr_bad_op(err, p, o, "carries a constant operand");
    }
    if (sp.fused_act != ACT_NONE || sp.act_min != -128 || sp.act_max != 127) {
        return tgr_unsupported_op(err, p, o, "a fused activation");
    }
    return TGR_OK;
}

static void run_matmul(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    uint32_t a = op_input(p, o, 0);
    uint32_t b = op_input(p, o, 1);
    uint32_t y = op_output(p, o, 0);
    uint32_t rank = tensor_ndim(p, y);
    uint32_t q = tensor_quant(p, y);
    uint32_t k, batch = 1u;
    uint32_t rows = (uint32_t)tensor_dim(p, a, rank - 2u);
    tgr_matmul_params mp;
    for (k = 0; k + 2u < rank; ++k) {
        batch *= (uint32_t)tensor_dim(p, y, k);
    }
    if (region != NULL) {
        /* A row band of [1, M, K] or [M, K]: the rows are a band of M; the second operand is
         * read whole, in place (path_rows.c keeps it in slow memory). */
        rows = (uint32_t)tgr_row_count(p, a, region);
    }
    mp.a_zp = quant_zero_point(p, tensor_quant(p, a));
    mp.b_zp = quant_zero_point(p, tensor_quant(p, b));
    mp.out_zp = quant_zero_point(p, q);
    mp.multiplier = rd_i32(quant_multipliers(p, q));
    mp.shift = rd_i32(quant_shifts(p, q));
    mp.act_min = -128;
    mp.act_max = 127;
    tgr_matmul_s8(batch, rows, (uint32_t)tensor_dim(p, a, rank - 1u),
                  (uint32_t)tensor_dim(p, b, rank - 1u), (const int8_t *)tensor_ptr[a], (const int8_t *)tensor_ptr[b],
                  &mp, (int8_t *)tensor_ptr[y]);
}

/* Bands of the matrix rows (axis rank - 2) of a product of rank 2 or 3: the second operand is read
 * whole (path_rows.c), so each band is its rows' product. */
static const char *matmul_band_problem(const tgr_plan *p, uint32_t o, uint32_t axis)
{
    const uint32_t rank = tensor_ndim(p, op_output(p, o, 0));
    return rank <= 3u && axis == rank - 2u ? NULL : TGR_TEXT("a batched matrix product cannot run in row bands");
}

TGR_OP_IMPL(OP_MATMUL, TILING_ROWS, check_matmul, run_matmul);
TGR_OP_BANDS(OP_MATMUL, matmul_band_problem);
