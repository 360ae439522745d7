/*
 * Control family: If (87) and While (88), each alone in its stage. The executor runs them
 * (exec/path_control.c): it copies operands into a graph's inputs, runs the graph's stages and
 * copies its outputs back. What the path relies on is checked here, at load:
 *
 * - OP_ATTR_SUBGRAPHS names two graphs other than the main one (If: then, else; While: cond,
 *   body), neither holding another If/While (one level of control flow);
 * - If: a one-byte bool condition, then operands whose sizes and dtypes are the inputs of both
 *   branches, and outputs that are both branches' outputs;
 * - While: OP_ATTR_CONSTANTS gives each loop variable a weight (its initial value) or 0xFFFF (the
 *   next op input); the op's outputs are the loop variables; the cond graph takes them and gives
 *   one bool byte, the body takes them and gives their next values.
 */
#include "ops/ops.h"

/* Tensors a and b hold the same bytes in the same dtype: a copy moves one into the other. */
static int same_storage(const tgr_plan *p, uint32_t a, uint32_t b)
{
    return tensor_bytes(p, a) == tensor_bytes(p, b) && tensor_dtype(p, a) == tensor_dtype(p, b);
}

/* A graph other than the main one, without control flow of its own. */
static int runnable_graph(const tgr_plan *p, uint32_t g)
{
    uint32_t s, i;
    if (g == 0u || g >= p->num_graphs) {
        return 0;
    }
    for (s = graph_first_stage(p, g); s < graph_end_stage(p, g); ++s) {
        for (i = 0; i < stage_ops_count(p, s); ++i) {
            uint32_t type = op_type(p, stage_op(p, s, i));
            if (type == OP_IF || type == OP_WHILE) {
                return 0;
            }
        }
    }
    return 1;
}

/* The two graphs of OP_ATTR_SUBGRAPHS, or a failure naming why not. */
static tgr_status graphs_of(const tgr_plan *p, uint32_t o, uint32_t *first, uint32_t *second, tgr_error *err)
{
    uint32_t len = 0;
    const uint8_t *attr = tgr_attr_find(p, o, ATTR_SUBGRAPHS, &len);
    if (attr == NULL || len != 4u) {
        return tgr_bad_op(err, p, o, "its subgraphs attribute is missing");
    }
    *first = rd_u16(attr);
    *second = rd_u16(attr + 2);
    if (!runnable_graph(p, *first) || !runnable_graph(p, *second)) {
        return tgr_unsupported_op(err, p, o, "a subgraph that is the main graph, missing, or itself holding "
                                             "control flow (nested control flow)");
    }
    return TGR_OK;
}

/* Tensor t is graph g's own input: no op writes it, no interface or state holds it, and no stage
 * or graph outside g lists it. The control path places and fills it before g runs; a tensor of
 * another graph in that list would be overwritten or read where it was never placed. */
static int graph_owns_input(const tgr_plan *p, uint32_t g, uint32_t t)
{
    uint32_t o, s, i, h;
    if (tensor_flags(p, t) & (TF_MODEL_INPUT | TF_MODEL_OUTPUT | TF_STATE)) {
        return 0;
    }
    for (o = 0; o < p->num_ops; ++o) {
        for (i = 0; i < op_num_outputs(p, o); ++i) {
            if (op_output(p, o, i) == t) {
                return 0;
            }
        }
    }
    for (s = 0; s < p->num_stages; ++s) {
        if (graph_of_stage(p, s) == g) {
            continue;
        }
        for (i = 0; i < stage_in_count(p, s); ++i) {
            if (stage_input(p, s, i) == t) {
                return 0;
            }
        }
    }
    for (h = 0; h < p->num_graphs; ++h) {
        if (h != g && graph_lists(p, h, 0, t)) {
            return 0;
        }
    }
    return 1;
}

/* Graph g takes `count` inputs of its own, stored like the op's inputs from `from` on. */
static int graph_takes(const tgr_plan *p, uint32_t g, uint32_t o, uint32_t from, uint32_t count)
{
    uint32_t i;
    if (graph_in_count(p, g) != count) {
        return 0;
    }
    for (i = 0; i < count; ++i) {
        if (!same_storage(p, graph_input(p, g, i), op_input(p, o, from + i)) ||
            !graph_owns_input(p, g, graph_input(p, g, i))) {
            return 0;
        }
    }
    return 1;
}

static int graph_gives_outputs_of(const tgr_plan *p, uint32_t g, uint32_t o)
{
    uint32_t i;
    if (graph_out_count(p, g) != op_num_outputs(p, o)) {
        return 0;
    }
    for (i = 0; i < op_num_outputs(p, o); ++i) {
        if (!same_storage(p, graph_output(p, g, i), op_output(p, o, i))) {
            return 0;
        }
    }
    return 1;
}

static int alone_in_stage(const tgr_plan *p, uint32_t o)
{
    uint32_t s;
    for (s = 0; s < p->num_stages; ++s) {
        if (stage_op(p, s, 0) <= o && o < stage_op(p, s, 0) + stage_ops_count(p, s)) {
            return stage_ops_count(p, s) == 1u && graph_of_stage(p, s) == 0u;
        }
    }
    return 0;
}

static tgr_status check_if(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    uint32_t then_graph, else_graph;
    uint32_t cond = op_input(p, o, 0);
    tgr_status st = graphs_of(p, o, &then_graph, &else_graph, err);
    if (st != TGR_OK) {
        return st;
    }
    if (!alone_in_stage(p, o)) {
        return tgr_bad_op(err, p, o, "a control-flow op shares its stage or sits in a subgraph");
    }
    if (tensor_dtype(p, cond) != TGR_DTYPE_BOOL || tensor_bytes(p, cond) != 1u) {
        return tgr_bad_op(err, p, o, "its condition is not one bool");
    }
    if (!graph_takes(p, then_graph, o, 1u, op_num_inputs(p, o) - 1u) ||
        !graph_takes(p, else_graph, o, 1u, op_num_inputs(p, o) - 1u) || !graph_gives_outputs_of(p, then_graph, o) ||
        !graph_gives_outputs_of(p, else_graph, o)) {
        return tgr_bad_op(err, p, o, "its branches do not take its operands or give its outputs");
    }
    return TGR_OK;
}

static tgr_status check_while(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    uint32_t cond, body, len = 0, k, next_input = 0;
    const uint8_t *constants = tgr_attr_find(p, o, ATTR_CONSTANTS, &len);
    const uint32_t vars = op_num_outputs(p, o);
    tgr_status st = graphs_of(p, o, &cond, &body, err);
    if (st != TGR_OK) {
        return st;
    }
    if (!alone_in_stage(p, o)) {
        return tgr_bad_op(err, p, o, "a control-flow op shares its stage or sits in a subgraph");
    }
    if (constants == NULL || len != 2u * vars) {
        return tgr_bad_op(err, p, o, "its constants attribute does not give one entry per loop variable");
    }
    for (k = 0; k < vars; ++k) {
        uint32_t w = rd_u16(constants + 2u * k);
        uint32_t var = op_output(p, o, k);
        if (w == NONE16) {
            if (next_input >= op_num_inputs(p, o) || !same_storage(p, op_input(p, o, next_input), var)) {
                return tgr_bad_op(err, p, o, "a loop variable's initial operand does not match it");
            }
            ++next_input;
        } else if (w >= p->num_weights || weight_size(p, w) != tensor_bytes(p, var) || p->num_blocks > 0u) {
            return tgr_bad_op(err, p, o, "a loop variable's initial constant does not match it (or is compressed)");
        }
    }
    if (next_input != op_num_inputs(p, o)) {
        return tgr_bad_op(err, p, o, "it has operands no loop variable takes");
    }
    if (graph_in_count(p, cond) != vars || graph_out_count(p, cond) != 1u ||
        tensor_dtype(p, graph_output(p, cond, 0)) != TGR_DTYPE_BOOL || tensor_bytes(p, graph_output(p, cond, 0)) != 1u ||
        graph_in_count(p, body) != vars || !graph_gives_outputs_of(p, body, o)) {
        return tgr_bad_op(err, p, o, "its cond graph does not give one bool or its body does not give the loop "
                                     "variables");
    }
    for (k = 0; k < vars; ++k) {
        if (!same_storage(p, graph_input(p, cond, k), op_output(p, o, k)) ||
            !same_storage(p, graph_input(p, body, k), op_output(p, o, k)) ||
            !graph_owns_input(p, cond, graph_input(p, cond, k)) || !graph_owns_input(p, body, graph_input(p, body, k))) {
            return tgr_bad_op(err, p, o, "its graphs do not take the loop variables");
        }
    }
    return TGR_OK;
}

TGR_OP_CONTROL(OP_IF, check_if);
TGR_OP_CONTROL(OP_WHILE, check_while);
