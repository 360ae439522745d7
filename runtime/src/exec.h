/*
 * Execution paths (tgrs-executor.md §2): how one execution unit (a stage, or a whole chain)
 * runs. executor.c picks the path; path_normal.c, path_tiles.c and path_by_input.c run them.
 */
#ifndef TGR_EXEC_H
#define TGR_EXEC_H

#include "tgr_internal.h"

/* What the unit starting at `stage` does with a fast limit of `limit` bytes: a TGR_PATH_* code,
 * PATH_SKIP for a non-head chain member (the head runs it), or PATH_REFUSED when this runtime
 * cannot run it exactly (`why` then names the reason). */
#define PATH_SKIP 0xFEu
#define PATH_REFUSED 0xFFu
uint32_t tgr_select_path(const tgr_plan *p, uint32_t stage, uint32_t limit, const char **why);

/* Fast bytes the unit starting at `stage` may use, given a fast arena of `fast_size` bytes
 * (tgrs-executor.md §1.4: after the floor and the stage's decompressed weights). */
uint32_t tgr_unit_limit(const tgr_plan *p, uint32_t stage, uint32_t fast_size, uint32_t floor);

/* Load-time check that every unit can run: called by the loader. */
tgr_status tgr_check_paths(const tgr_plan *p, tgr_error *err);

/* Give tensor t its whole size in slow memory (compacting once if needed). */
tgr_status tgr_place_slow(tgr_session *s, uint32_t t, uint32_t stage, tgr_error *err);
/* Run op o's kernel on the session's buffers, unless the session is rehearsing (session init). */
void tgr_run_op(tgr_session *s, uint32_t o, const int32_t *region, const uint8_t *weights);

/* Each path gets `weights[k]`: where the weights of the unit's k-th stage are (exec.c). */
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

/* Path helpers shared with the loader checks (path_tiles.c, path_rows.c, path_by_input.c). */
int tgr_rows_capable(const tgr_plan *p, uint32_t stage, const char **why);
int tgr_transpose_shape(const tgr_plan *p, uint32_t stage, uint32_t *prefix, uint32_t *rows, uint32_t *cols,
                        uint32_t *block);
int tgr_reshape_band_shape(const tgr_plan *p, uint32_t stage);
int tgr_stripe_capable(const tgr_plan *p, uint32_t first_stage, uint32_t last_stage, const char **why);
int tgr_by_input_shape(const tgr_plan *p, uint32_t stage);
/* A v10 grouped-reduction record (channel group, spatial interval) that this stage can honour. */
int tgr_by_input_grouping_valid(const tgr_plan *p, uint32_t stage);

#endif /* TGR_EXEC_H */
