/*
 * The control path (docs/execution.md#control-flow): an If or While alone in its stage. Its
 * operands are copied (in slow memory, `copy` events) into the inputs of the graph it runs, the
 * graph's stages run as units of their own (stage_begin/stage_end, the fast arena shared), and
 * the graph's outputs are copied back; then everything of the graph is freed. If runs its then
 * or else graph by its bool condition. While keeps its loop variables in its own outputs: their
 * initial values (a constant or an operand) are copied in, then the cond graph runs on them and,
 * while it gives true, the body runs on them and its outputs become their next values.
 *
 * Session init rehearses a run without data: there an If rehearses both branches and a While
 * one round of cond and body, every round taking the same memory, so the arenas session init
 * accepts hold any run. The reference bounds no loop (measured: 200,000 rounds run); ours fails
 * the run (TGR_ERR_EXEC naming the op) after TGR_MAX_WHILE_ROUNDS rounds, 2^32 - 1 unless the
 * build sets fewer (the fuzzer does, so a plan that never stops cannot hang it).
 */
#include "exec/exec.h"
#include "memory/pools.h"

#ifndef TGR_MAX_WHILE_ROUNDS
#define TGR_MAX_WHILE_ROUNDS 0xFFFFFFFFu
#endif

/* Tensor t belongs to graph g: one of its inputs, or written by an op of its stages. */
static int in_graph(const tgr_plan *p, uint32_t g, uint32_t t)
{
    uint32_t i, s, k;
    if (graph_lists(p, g, 0, t)) {
        return 1;
    }
    for (s = graph_first_stage(p, g); s < graph_end_stage(p, g); ++s) {
        for (i = 0; i < stage_ops_count(p, s); ++i) {
            uint32_t o = stage_op(p, s, i);
            for (k = 0; k < op_num_outputs(p, o); ++k) {
                if (op_output(p, o, k) == t) {
                    return 1;
                }
            }
        }
    }
    return 0;
}

/* Whether a stage of g in [first, end) lists t as an input. */
static int read_in_graph(const tgr_plan *p, uint32_t first, uint32_t end, uint32_t t)
{
    uint32_t s, i;
    for (s = first; s < end; ++s) {
        for (i = 0; i < stage_in_count(p, s); ++i) {
            if (stage_input(p, s, i) == t) {
                return 1;
            }
        }
    }
    return 0;
}

/* After stage `stage` of graph g: t was read up to there and no later stage of g reads it. Like
 * the reference, a graph input no stage reads stays until the graph is done. */
static int dead_after(const tgr_plan *p, uint32_t g, uint32_t stage, uint32_t t)
{
    return !graph_lists(p, g, 1, t) && read_in_graph(p, graph_first_stage(p, g), stage + 1u, t) &&
           !read_in_graph(p, stage + 1u, graph_end_stage(p, g), t);
}

/* Free graph g's tensors in slow memory: after its stage `stage` the dead ones (dead_after), or
 * with `all` every one; then compact once if anything went. */
static void free_graph_tensors(tgr_session *s, uint32_t g, uint32_t stage, int all, uint32_t event_stage)
{
    const tgr_plan *p = s->plan;
    uint32_t t;
    int freed = 0;
    for (t = 0; t < p->num_tensors; ++t) {
        if (tgr_pool_of(s, s->tensor_ptr[t]) == TGR_POOL_SLOW && in_graph(p, g, t) &&
            (all || dead_after(p, g, stage, t))) {
            s->tensor_ptr[t] = NULL;
            freed = 1;
        }
    }
    if (freed) {
        tgr_compact(s, TGR_POOL_SLOW, event_stage);
    }
}

/* Copy tensor `from` (or, when it is NONE16, the constant at `constant`) into tensor t's slow
 * slot, placing t there first when `place`. The source is looked up after the placement, which
 * may have compacted slow memory. */
static tgr_status copy_in(tgr_session *s, uint32_t stage, uint32_t t, uint32_t from, const uint8_t *constant,
                          int place, tgr_error *err)
{
    const uint32_t n = tensor_bytes(s->plan, t);
    const uint8_t *src;
    if (place) {
        tgr_status st = tgr_place_slow(s, t, stage, err);
        if (st != TGR_OK) {
            return st;
        }
    }
    src = from != NONE16 ? s->tensor_ptr[from] : constant;
    memmove(s->tensor_ptr[t], src, n);
    s->counters.copy_bytes += n;
    tgr_emit(s, TGR_EV_COPY, TGR_POOL_SLOW, stage, t, NONE16, (uint32_t)(s->tensor_ptr[t] - s->slow.base),
             from != NONE16 ? (uint32_t)(src - s->slow.base) : 0u, n);
    return TGR_OK;
}

/* Copy op o's inputs from 1 on (If), or its outputs (While's loop variables), into graph g's
 * inputs, then run g's stages. */
static tgr_status run_graph(tgr_session *s, uint32_t stage, uint32_t o, int loop_vars, uint32_t g, tgr_error *err)
{
    const tgr_plan *p = s->plan;
    uint32_t i, unit;
    tgr_status st = TGR_OK;
    for (i = 0; i < graph_in_count(p, g) && st == TGR_OK; ++i) {
        uint32_t from = loop_vars ? op_output(p, o, i) : op_input(p, o, i + 1u);
        st = copy_in(s, stage, graph_input(p, g, i), from, NULL, 1, err);
    }
    for (unit = graph_first_stage(p, g); unit < graph_end_stage(p, g) && st == TGR_OK; ++unit) {
        uint32_t last;
        st = tgr_run_unit(s, unit, &last, err);
        if (st == TGR_OK && last != PATH_SKIP) {
            free_graph_tensors(s, g, last, 0, last);
            tgr_end_unit(s, unit, last);
        }
    }
    return st;
}

/* The outputs of graph g into op o's outputs (placed first when `place`), then g freed. */
static tgr_status take_outputs(tgr_session *s, uint32_t stage, uint32_t o, uint32_t g, int place, tgr_error *err)
{
    const tgr_plan *p = s->plan;
    uint32_t k;
    for (k = 0; k < op_num_outputs(p, o); ++k) {
        tgr_status st = copy_in(s, stage, op_output(p, o, k), graph_output(p, g, k), NULL, place, err);
        if (st != TGR_OK) {
            return st;
        }
    }
    free_graph_tensors(s, g, stage, 1, stage);
    return TGR_OK;
}

static tgr_status run_if(tgr_session *s, uint32_t stage, uint32_t o, uint32_t then_graph, uint32_t else_graph,
                         tgr_error *err)
{
    /* a real run takes one branch; a rehearsal takes both, one after the other */
    const uint32_t branches = s->rehearsing ? 2u : 1u;
    uint32_t branch, g = else_graph;
    tgr_status st = TGR_OK;
    for (branch = 0; branch < branches && st == TGR_OK; ++branch) {
        if (s->rehearsing) {
            g = branch == 0u ? then_graph : else_graph;
        } else {
            g = s->tensor_ptr[op_input(s->plan, o, 0)][0] != 0u ? then_graph : else_graph;
        }
        st = run_graph(s, stage, o, 0, g, err);
        if (st == TGR_OK && branch + 1u < branches) {
            free_graph_tensors(s, g, stage, 1, stage);
        }
    }
    return st == TGR_OK ? take_outputs(s, stage, o, g, 1, err) : st;
}

static tgr_status run_while(tgr_session *s, uint32_t stage, uint32_t o, uint32_t cond, uint32_t body,
                            tgr_error *err)
{
    const tgr_plan *p = s->plan;
    const uint8_t *constants = tgr_attr_find(p, o, ATTR_CONSTANTS, NULL);
    uint32_t k, next_input = 0, round;
    tgr_status st = TGR_OK;
    for (k = 0; k < op_num_outputs(p, o) && st == TGR_OK; ++k) {
        uint32_t w = rd_u16(constants + 2u * k);
        st = w == NONE16 ? copy_in(s, stage, op_output(p, o, k), op_input(p, o, next_input++), NULL, 1, err)
                         : copy_in(s, stage, op_output(p, o, k), NONE16, weight_data(p, w), 1, err);
    }
    for (round = 0; st == TGR_OK; ++round) {
        int again;
        if (round == TGR_MAX_WHILE_ROUNDS) {
            return tgr_fail(err, TGR_ERR_EXEC, "op %u (While): still looping after %u rounds", o, TGR_MAX_WHILE_ROUNDS);
        }
        st = run_graph(s, stage, o, 1, cond, err);
        if (st != TGR_OK) {
            break;
        }
        again = s->rehearsing ? round == 0u : s->tensor_ptr[graph_output(p, cond, 0)][0] != 0u;
        free_graph_tensors(s, cond, stage, 1, stage);
        if (!again) {
            break;
        }
        st = run_graph(s, stage, o, 1, body, err);
        if (st == TGR_OK) {
            st = take_outputs(s, stage, o, body, 0, err);
        }
    }
    return st;
}

static tgr_status run_control(tgr_session *s, uint32_t stage, uint32_t limit, uint32_t path,
                              const uint8_t *const *weights, tgr_error *err)
{
    const tgr_plan *p = s->plan;
    const uint32_t o = stage_op(p, stage, 0);
    const uint8_t *graphs = tgr_attr_find(p, o, ATTR_SUBGRAPHS, NULL);
    (void)limit;
    (void)path;
    (void)weights;
    return op_type(p, o) == OP_IF ? run_if(s, stage, o, rd_u16(graphs), rd_u16(graphs + 2), err)
                                  : run_while(s, stage, o, rd_u16(graphs), rd_u16(graphs + 2), err);
}

/* The op checks (ops_control.c) already decided the stage can run. */
static int control_fits(const tgr_plan *p, uint32_t first, uint32_t last, const char **why)
{
    (void)p;
    (void)first;
    (void)last;
    (void)why;
    return 1;
}

TGR_PATH_IMPL(TGR_PATH_CONTROL, run_control, control_fits);
