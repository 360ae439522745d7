/*
 * The op registry: the load-time check of every op, the run-time dispatch, and the tiling modes
 * the execution paths ask about, all through the build's generated dispatch (ops_registry.h), so
 * a family never depends on another through it.
 */
#include "base/profile.h"
#include "ops/ops_registry.h"

int tgr_op_in_full_runtime(uint32_t opcode)
{
    return opcode < 8u * sizeof tgr_full_runtime_ops && (tgr_full_runtime_ops[opcode / 8u] >> (opcode % 8u)) & 1u;
}

/* The dtypes each op reads and writes. Everything is int8 but indices, conditions and logic:
 * ArgMax/ArgMin write int32; Gather/GatherND read an int32 index tensor (after the int8 data, or
 * alone with a constant table) and DynamicUpdateSlice int32 starts (its third input); Add, Sub
 * and Mul compute on int32 (every operand int32, the index arithmetic of a graph) and the
 * comparisons compare int32 or int8 into bool; And/Or/Not/ReduceAll read and write bool, Cast
 * reads bool, Where reads a bool condition; Reshape/Flatten/Transpose move bool or int32 values
 * like int8 codes; Dequantize writes float32 and Quantize may read it; If/While take whatever
 * their graphs do. Inputs before `tail_from` take `lead`, the others `tail`. */
static int dtypes_as_expected(const tgr_plan *p, uint32_t o)
{
    const uint32_t n = op_num_inputs(p, o);
    const uint32_t first = n > 0u ? tensor_dtype(p, op_input(p, o, 0)) : TGR_DTYPE_INT8;
    const uint32_t numeric = first == TGR_DTYPE_INT32 ? TGR_DTYPE_INT32 : TGR_DTYPE_INT8;
    uint32_t lead = TGR_DTYPE_INT8, tail = TGR_DTYPE_INT8, out = TGR_DTYPE_INT8, tail_from = 1u, k;
    switch (op_type(p, o)) {
    case OP_ARG_MAX:
    case OP_ARG_MIN:
        out = TGR_DTYPE_INT32;
        break;
    case OP_GATHER:
    case OP_GATHER_ND:
        lead = n == 1u ? numeric : TGR_DTYPE_INT8;
        tail = TGR_DTYPE_INT32;
        break;
    case OP_UPDATE_SLICE:
        tail = TGR_DTYPE_INT32;
        tail_from = 2u;
        break;
    case OP_ADD:
    case OP_SUB:
    case OP_MUL:
        lead = tail = out = numeric;
        break;
    case OP_EQUAL:
    case OP_LESS:
    case OP_LESS_EQUAL:
    case OP_GREATER:
    case OP_GREATER_EQUAL:
        lead = tail = numeric;
        out = TGR_DTYPE_BOOL;
        break;
    case OP_AND:
    case OP_OR:
    case OP_NOT:
    case OP_REDUCE_ALL:
        lead = tail = out = TGR_DTYPE_BOOL;
        break;
    case OP_CAST:
        lead = tail = TGR_DTYPE_BOOL;
        break;
    case OP_WHERE:
        if (n != 3u || op_num_outputs(p, o) != 1u) {
            return 0;
        }
        lead = TGR_DTYPE_BOOL;
        break;
    case OP_DEQUANTIZE:
        out = TGR_DTYPE_FLOAT32;
        break;
    case OP_QUANTIZE:
        lead = first == TGR_DTYPE_FLOAT32 ? TGR_DTYPE_FLOAT32 : TGR_DTYPE_INT8;
        break;
    case OP_IF:
    case OP_WHILE:
        return 1; /* their checks match operands to the graphs' tensors */
    case OP_SVDF:
        /* x, then the previous state; y, then the next state */
        return n == 2u && op_num_outputs(p, o) == 2u && first == TGR_DTYPE_INT8 &&
               tensor_dtype(p, op_input(p, o, 1)) == TGR_DTYPE_INT16 && tensor_dtype(p, op_output(p, o, 0)) == TGR_DTYPE_INT8 &&
               tensor_dtype(p, op_output(p, o, 1)) == TGR_DTYPE_INT16;
    case OP_LSTM:
        /* x, hidden, cell; the hidden states of every step, then the next hidden and cell */
        return n == 3u && op_num_outputs(p, o) == 3u && first == TGR_DTYPE_INT8 &&
               tensor_dtype(p, op_input(p, o, 1)) == TGR_DTYPE_INT8 && tensor_dtype(p, op_input(p, o, 2)) == TGR_DTYPE_INT16 &&
               tensor_dtype(p, op_output(p, o, 0)) == TGR_DTYPE_INT8 && tensor_dtype(p, op_output(p, o, 1)) == TGR_DTYPE_INT8 &&
               tensor_dtype(p, op_output(p, o, 2)) == TGR_DTYPE_INT16;
    case OP_DETECTION_POSTPROCESS:
        /* int8 encodings and scores in; float32 detections and working memory out */
        out = TGR_DTYPE_FLOAT32;
        break;
    case OP_RESHAPE:
    case OP_FLATTEN:
    case OP_TRANSPOSE:
        if (first == TGR_DTYPE_BOOL || first == TGR_DTYPE_INT32) {
            lead = tail = out = first;
        }
        break;
    default:
        break;
    }
    for (k = 0; k < n; ++k) {
        if (tensor_dtype(p, op_input(p, o, k)) != (k < tail_from ? lead : tail)) {
            return 0;
        }
    }
    for (k = 0; k < op_num_outputs(p, o); ++k) {
        if (tensor_dtype(p, op_output(p, o, k)) != out) {
            return 0;
        }
    }
    return 1;
}

tgr_status tgr_check_kernels(const tgr_plan *p, tgr_error *err)
{
    uint32_t o;
    for (o = 0; o < p->num_ops; ++o) {
        tgr_status st;
        uint32_t method;
        if (!(tgr_built_in_op(op_type(p, o)) & TGR_OP_BUILT_IN)) {
            return tgr_fail(err, TGR_ERR_UNSUPPORTED,
                            tgr_op_in_full_runtime(op_type(p, o)) ? "op %u (%s) is not built into this firmware"
                                                                  : "op %u (%s) is not supported by this runtime",
                            o, tgr_op_name(op_type(p, o)));
        }
        if (!dtypes_as_expected(p, o)) {
            return tgr_fail(err, TGR_ERR_UNSUPPORTED,
                            "op %u (%s): operand dtypes this runtime does not execute (int32 only as indices: "
                            "ArgMax/ArgMin results, gather indices, update starts and their Add/Sub/Mul and "
                            "comparisons; bool only around comparisons and logic)", o, tgr_op_name(op_type(p, o)));
        }
        st = tgr_built_in_check(p, o, err);
        if (st != TGR_OK) {
            return st;
        }
        /* An op with methods (ops.h TGR_OP_METHODS) runs only if its plan's method is built in. */
        method = tgr_built_in_method(p, o);
        if (method != 0u && (method >= 32u || !((tgr_built_in_methods >> method) & 1u))) {
            return tgr_fail(err, TGR_ERR_UNSUPPORTED, "op %u (%s) takes the %s method, which is not built into this firmware",
                            o, tgr_op_name(op_type(p, o)), tgr_method_name(method));
        }
    }
    return TGR_OK;
}

/* The op's run, between the profile hooks of a TGR_PROFILE build. */
static uint32_t run_op(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    uint32_t fault;
    tgr_profile_op(o, 0);
    fault = tgr_built_in_run(p, o, tensor_ptr, region);
    tgr_profile_op(o, 1);
    return fault;
}

uint32_t tgr_dispatch(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region,
                      const uint8_t *weights)
{
    /* The loader refused every op this build does not run. */
    if (weights != p->weight_blob) {
        /* Decompressed weights: the op sees a view of the plan whose blob is its stage's block,
         * which is exactly what the block-relative weight offsets address. */
        tgr_plan view = *p;
        view.weight_blob = weights;
        return run_op(&view, o, tensor_ptr, region);
    }
    return run_op(p, o, tensor_ptr, region);
}

const char *tgr_fault_text(uint32_t fault)
{
    switch (fault) {
    case TGR_FAULT_BELOW_ZERO_POINT:
        return TGR_TEXT("an input element is below the input zero point (the root of a negative value)");
    case TGR_FAULT_SUM_OVERFLOW:
        return TGR_TEXT("a row's sum exceeds the int32 range");
    case TGR_FAULT_ZERO_DIVISOR:
        return TGR_TEXT("a divisor equals its zero point (division by zero)");
    case TGR_FAULT_INDEX_RANGE:
        return TGR_TEXT("an index is outside the input");
    default:
        return TGR_TEXT("the op failed");
    }
}

const char *tgr_plan_op_name(const tgr_plan *p, uint32_t o)
{
    return tgr_op_name(op_type(p, o));
}

uint32_t tgr_op_tiling(uint32_t opcode)
{
    return tgr_built_in_op(opcode) & TILING_SPATIAL;
}

int tgr_op_rows(uint32_t opcode)
{
    return (tgr_built_in_op(opcode) & TILING_ROWS) != 0u;
}

int tgr_op_alone(uint32_t opcode)
{
    return (tgr_built_in_op(opcode) & TILING_ALONE) != 0u;
}

int tgr_op_two_d_only(uint32_t opcode)
{
    return (tgr_built_in_op(opcode) & TILING_2D_ONLY) != 0u;
}
