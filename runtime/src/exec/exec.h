/*
 * Execution paths (docs/execution.md#execution-paths): how one execution unit (a stage, or a
 * whole chain) runs. path_select.c picks the path, path_normal.c, path_tiles.c, path_rows.c and
 * path_by_input.c run them on what path_common.c shares, and executor.c drives the stages.
 */
#ifndef TGR_EXEC_H
#define TGR_EXEC_H

#include "plan/plan_tensors.h"

/* Longest chain the executor runs (a chain keeps every member's weights at once). */
#define MAX_CHAIN_STAGES 16u

/* ---- path selection (path_select.c) --------------------------------------------------------- */

/* What the unit starting at `stage` does with a fast limit of `limit` bytes: a TGR_PATH_* code,
 * PATH_SKIP for a non-head chain member (the head runs it), or PATH_REFUSED when this runtime
 * cannot run it exactly (`why` then names the reason). */
#define PATH_SKIP 0xFEu
#define PATH_REFUSED 0xFFu
uint32_t tgr_select_path(const tgr_plan *p, uint32_t stage, uint32_t limit, const char **why);

/* Fast bytes the unit starting at `stage` may use, given a fast arena of `fast_size` bytes:
 * what is left after the floor and the stage's decompressed weights, capped by the stage's own
 * limit (docs/execution.md#fast-limit-and-the-needs-tiling-test). */
uint32_t tgr_unit_limit(const tgr_plan *p, uint32_t stage, uint32_t fast_size, uint32_t floor);

/* Load-time check that every unit can run: called by the loader. */
tgr_status tgr_check_paths(const tgr_plan *p, tgr_error *err);

/* ---- shared by every path (path_common.c) ------------------------------------------------ */

/* Give tensor t its whole size in slow memory (compacting once if needed). */
tgr_status tgr_place_slow(tgr_session *s, uint32_t t, uint32_t stage, tgr_error *err);
/* Run op o's kernel on the session's buffers, unless the session is rehearsing (session init). */
void tgr_run_op(tgr_session *s, uint32_t o, const int32_t *region, const uint8_t *weights);

/* ---- the paths ------------------------------------------------------------------------------- */

/* Each path gets `weights[k]`: where the weights of the unit's k-th stage are (executor.c). */
tgr_status tgr_run_normal(tgr_session *s, uint32_t stage, uint32_t limit, const uint8_t *const *weights,
                          tgr_error *err);

/* Row stripes (TGR_PATH_TILED), 2-D tiles (TGR_PATH_TILED_2D) or a chain (TGR_PATH_CHAIN). */
tgr_status tgr_run_tiles(tgr_session *s, uint32_t stage, uint32_t limit, uint32_t path,
                         const uint8_t *const *weights, tgr_error *err);

tgr_status tgr_run_rows(tgr_session *s, uint32_t stage, uint32_t limit, const uint8_t *const *weights,
                        tgr_error *err);
tgr_status tgr_run_transpose(tgr_session *s, uint32_t stage, uint32_t limit, tgr_error *err);
tgr_status tgr_run_reshape(tgr_session *s, uint32_t stage, uint32_t limit, tgr_error *err);

tgr_status tgr_run_by_input(tgr_session *s, uint32_t stage, uint32_t limit, const uint8_t *const *weights,
                            tgr_error *err);

/* What each path can run, asked by path selection (path_tiles.c, path_rows.c, path_by_input.c). */
int tgr_rows_capable(const tgr_plan *p, uint32_t stage, const char **why);
int tgr_transpose_shape(const tgr_plan *p, uint32_t stage, uint32_t *prefix, uint32_t *rows, uint32_t *cols,
                        uint32_t *block);
int tgr_reshape_band_shape(const tgr_plan *p, uint32_t stage);
int tgr_stripe_capable(const tgr_plan *p, uint32_t first_stage, uint32_t last_stage, const char **why);
int tgr_by_input_shape(const tgr_plan *p, uint32_t stage);
/* A v10 grouped-reduction record (channel group, spatial interval) that this stage can honour. */
int tgr_by_input_grouping_valid(const tgr_plan *p, uint32_t stage);

#endif /* TGR_EXEC_H */
