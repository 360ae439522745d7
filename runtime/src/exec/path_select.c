/*
 * Which execution path a unit (a stage, or a whole chain) takes, decided from the plan and the
 * fast limit alone: the loader runs the same decision for every stage when it accepts a plan,
 * and the executor runs it again per inference, so a plan that loads never meets a path that
 * cannot run it.
 */
#include "exec/exec.h"
#include "memory/weights.h"
#include "ops/ops_registry.h"

/* Ops of the stage whose spatial mode is `mode` or `other`. */
static uint32_t count_spatial_ops(const tgr_plan *p, uint32_t stage, uint32_t mode, uint32_t other)
{
    uint32_t i, n = 0;
    for (i = 0; i < stage_ops_count(p, stage); ++i) {
        uint32_t own = tgr_op_tiling(op_type(p, stage_op(p, stage, i)));
        n += own == mode || own == other ? 1u : 0u;
    }
    return n;
}

/* The stage's spatial ops: sliding windows and Resize; a stripe carries at most one. */
static uint32_t count_window_ops(const tgr_plan *p, uint32_t stage)
{
    return count_spatial_ops(p, stage, TILING_WINDOW, TILING_RESAMPLE);
}

/* Ops of stages first..last that tile in 2-D only (TILING_2D_ONLY). */
static uint32_t count_two_d_only(const tgr_plan *p, uint32_t first, uint32_t last)
{
    uint32_t s, i, n = 0;
    for (s = first; s <= last; ++s) {
        for (i = 0; i < stage_ops_count(p, s); ++i) {
            n += tgr_op_two_d_only(op_type(p, stage_op(p, s, i))) ? 1u : 0u;
        }
    }
    return n;
}

/* Whether a stage input or output is held channels-last (NHWC or NLC, not the model's own axis
 * order), where spatial stripes apply. */
static int touches_channels_last(const tgr_plan *p, uint32_t stage)
{
    uint32_t i;
    for (i = 0; i < stage_in_count(p, stage); ++i) {
        if (!tgr_model_order(p, stage_input(p, stage, i))) {
            return 1;
        }
    }
    for (i = 0; i < stage_out_count(p, stage); ++i) {
        if (!tgr_model_order(p, stage_output(p, stage, i))) {
            return 1;
        }
    }
    return 0;
}

/* The tile record's axis: 0 without a usable (tileable) record. */
static uint32_t tile_axis(const tgr_plan *p, uint32_t stage)
{
    const uint8_t *record = stage_tile_rec(p, stage);
    return record == NULL || record[0] == 0u ? 0u : (p->version >= 5u ? record[1] : 1u);
}

/* What selection learns while it asks the paths: every path it consulted goes into `seen`; a
 * question to a path this build leaves out sets `unknown`, and the unit is refused (the answer
 * could have been yes). */
typedef struct path_query {
    uint32_t seen;
    int unknown;
} path_query;

static int fits(path_query *q, uint32_t path, const tgr_plan *p, uint32_t first, uint32_t last, const char **why)
{
    q->seen |= 1u << path;
    if (!(tgr_built_in_paths & (1u << path))) {
        q->unknown = 1;
        return 0;
    }
    return tgr_path_fits(path, p, first, last, why);
}

tgr_status tgr_check_built_in_path(uint32_t stage, uint32_t path, tgr_error *err)
{
    if (path != PATH_SKIP && !(tgr_built_in_paths & (1u << path))) {
        return tgr_fail(err, TGR_ERR_UNSUPPORTED, "stage %u takes the %s path, which is not built into this firmware",
                        stage, tgr_path_name(path));
    }
    return TGR_OK;
}

const char *tgr_path_name(uint32_t path)
{
    static const char *const names[] = {"normal", "tiled", "tiled_2d", "by_input", "transpose",
                                        "rows", "reshape", "chain", "control"};
    return path < sizeof names / sizeof names[0] ? names[path] : "?";
}

static uint32_t select_path(const tgr_plan *p, uint32_t stage, uint32_t limit, const char **why, path_query *q)
{
    uint32_t axis = tile_axis(p, stage);
    const char *stripe_why = "";
    int stripes;
    *why = "";
    if (op_type(p, stage_op(p, stage, 0)) == OP_IF || op_type(p, stage_op(p, stage, 0)) == OP_WHILE) {
        /* alone in its stage (the op's check) */
        return fits(q, TGR_PATH_CONTROL, p, stage, stage, why) ? TGR_PATH_CONTROL : PATH_REFUSED;
    }
    if (stage_chain_id(p, stage) != NONE16) {
        if (stage_chain_id(p, stage) != stage) {
            return PATH_SKIP;
        }
        if (count_two_d_only(p, stage, stage + stage_chain_len(p, stage) - 1u) != 0u) {
            *why = TGR_TEXT("an op of this kind runs only in 2-D tiles");
            return PATH_REFUSED;
        }
        return fits(q, TGR_PATH_CHAIN, p, stage, stage + stage_chain_len(p, stage) - 1u, why) ? TGR_PATH_CHAIN
                                                                                               : PATH_REFUSED;
    }
    if (!tgr_stage_needs_tiling(p, stage, limit)) {
        /* Like the reference, a stage with a row-band plan runs in row bands even when its
         * boundary tensors would fit together (measured on 15 conformance plans). */
        return axis == 1u && count_window_ops(p, stage) == 0u && fits(q, TGR_PATH_ROWS, p, stage, stage, &stripe_why) &&
                       !(touches_channels_last(p, stage) && fits(q, TGR_PATH_TILED, p, stage, stage, &stripe_why))
                   ? TGR_PATH_ROWS
                   : TGR_PATH_NORMAL;
    }
    if (fits(q, TGR_PATH_BY_INPUT, p, stage, stage, why)) {
        return TGR_PATH_BY_INPUT;
    }
    if (fits(q, TGR_PATH_TRANSPOSE, p, stage, stage, why)) {
        return TGR_PATH_TRANSPOSE;
    }
    if (fits(q, TGR_PATH_RESHAPE, p, stage, stage, why)) {
        return TGR_PATH_RESHAPE;
    }
    if (axis == 3u) {
        if (count_spatial_ops(p, stage, TILING_RESAMPLE, TILING_RESAMPLE) != 0u) {
            *why = TGR_TEXT("a Resize runs only in row stripes");
            return PATH_REFUSED;
        }
        if (tgr_op_alone(op_type(p, stage_op(p, stage, 0)))) {
            *why = TGR_TEXT("an op of this kind runs only in row stripes or row bands");
            return PATH_REFUSED;
        }
        return fits(q, TGR_PATH_TILED_2D, p, stage, stage, why) ? TGR_PATH_TILED_2D : PATH_REFUSED;
    }
    stripes = count_window_ops(p, stage) <= 1u && count_two_d_only(p, stage, stage) == 0u &&
              fits(q, TGR_PATH_TILED, p, stage, stage, &stripe_why);
    /* Row bands belong to tensors in the model's own axis order; a channels-last stage that
     * stripes runs as stripes even when it could also be banded. A refusal names why the stage
     * cannot run in row bands when it has no window op, else why it cannot stripe. */
    if (count_window_ops(p, stage) == 0u && fits(q, TGR_PATH_ROWS, p, stage, stage, why)) {
        if (!(stripes && touches_channels_last(p, stage))) {
            return TGR_PATH_ROWS;
        }
    } else if (count_window_ops(p, stage) != 0u) {
        *why = stripe_why;
    }
    if (stripes) {
        *why = "";
        return TGR_PATH_TILED;
    }
    if (axis != 0u) {
        if (**why == '\0') {
            *why = TGR_TEXT("its tile plan needs more than one spatial op per stripe");
        }
        return PATH_REFUSED;
    }
    /* No usable tiling: like the reference, run it whole under the limit with slow overflow. */
    return TGR_PATH_NORMAL;
}

uint32_t tgr_select_path(const tgr_plan *p, uint32_t stage, uint32_t limit, const char **why, uint32_t *seen)
{
    path_query q = {0u, 0};
    uint32_t path = select_path(p, stage, limit, why, &q);
    *seen |= q.seen | (path < 32u ? 1u << path : 0u);
    if (q.unknown) {
        *why = TGR_TEXT("its path depends on an execution path that is not built into this firmware");
        return PATH_REFUSED;
    }
    return path;
}

static tgr_status check_chain(const tgr_plan *p, uint32_t s, tgr_error *err)
{
    uint32_t head = stage_chain_id(p, s);
    uint32_t len = stage_chain_len(p, s);
    uint32_t tile_h = rd_u16(stage_rec(p, s) + 24);
    if (head == NONE16 && len == 0u) {
        return tile_h == 0u ? TGR_OK : tgr_fail(err, TGR_ERR_STAGE, "stage %u has a chain tile height but no chain", s);
    }
    if (head == NONE16 || len < 2u || head > s || head + len <= s || stage_chain_len(p, head) != len ||
        stage_chain_id(p, head) != head || head + len > p->num_stages) {
        return tgr_fail(err, TGR_ERR_STAGE, "stage %u chain fields (head %u, length %u) are inconsistent", s, head, len);
    }
    if (len > MAX_CHAIN_STAGES) {
        return tgr_fail(err, TGR_ERR_LIMIT, "plan exceeds executor limits: chain of %u stages (max %u)", len,
                        MAX_CHAIN_STAGES);
    }
    if ((head == s) != (tile_h != 0u) || stage_tile_plan(p, s) != NONE16) {
        return tgr_fail(err, TGR_ERR_STAGE, "stage %u chain tile height or tile plan is inconsistent", s);
    }
    return TGR_OK;
}

/* The v2-v9 record of a stage that runs in row bands of the model's own layout (the rows path)
 * agrees with itself as the compiler writes it and the reference checks it there (for stripes of
 * channels-last stages it re-derives the bands and ignores these fields): the halo is the
 * receptive field less one, only 2-D tiles have a width, and the count covers the original height
 * in bands of its height. */
static int row_band_fields_agree(const tgr_plan *p, uint32_t stage)
{
    const uint8_t *r = stage_tile_rec(p, stage);
    uint32_t height, count, halo, field, original;
    if (p->version >= 10u || r == NULL || r[0] == 0u) {
        return 1;
    }
    height = rd_u16(r + 2);
    count = rd_u16(r + 4);
    halo = rd_u16(r + 6);
    field = rd_u16(r + 8);
    original = rd_u16(r + 10);
    if (field == 0u || halo != field - 1u || (tile_axis(p, stage) != 3u && rd_u16(r + 20) != 0u)) {
        return 0;
    }
    return tile_axis(p, stage) != 1u || (height != 0u && count == (original + height - 1u) / height);
}

tgr_status tgr_check_paths(const tgr_plan *p, uint32_t *seen, tgr_error *err)
{
    uint32_t s;
    for (s = 0; s < p->num_stages; ++s) {
        const char *why;
        tgr_status st = check_chain(p, s, err);
        if (st != TGR_OK) {
            return st;
        }
        if (!tgr_by_input_grouping_valid(p, s)) {
            return tgr_fail(err, TGR_ERR_STAGE, "stage %u grouped reduction fields are invalid for its ops", s);
        }
        /* Every accepted session has at least the plan budget of fast memory. */
        const uint32_t path = tgr_select_path(p, s, tgr_unit_limit(p, s, tgr_fast_arena_required(p), 0u), &why, seen);
        if (path == PATH_REFUSED) {
            return tgr_fail(err, TGR_ERR_UNSUPPORTED, "stage %u cannot be executed by this runtime: %s", s, why);
        }
        if (path == TGR_PATH_ROWS && !row_band_fields_agree(p, s)) {
            return tgr_fail(err, TGR_ERR_STAGE, "stage %u row-band tile plan: height, count, halo, receptive field "
                            "and width disagree", s);
        }
        st = tgr_check_built_in_path(s, path, err);
        if (st != TGR_OK) {
            return st;
        }
    }
    return TGR_OK;
}

uint32_t tgr_unit_limit(const tgr_plan *p, uint32_t stage, uint32_t fast_size, uint32_t floor)
{
    uint32_t taken = floor + (stage_chain_id(p, stage) == NONE16 ? tgr_stage_weight_bytes(p, stage) : 0u);
    return tgr_stage_fast_limit(p, stage, fast_size > taken ? fast_size - taken : 0u);
}
