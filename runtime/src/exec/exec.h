/*
 * Execution paths (docs/execution.md#execution-paths): how one execution unit (a stage, or a
 * whole chain) runs. path_select.c picks the path, path_normal.c, path_tiles.c, path_rows.c,
 * path_by_input.c and path_control.c (If/While stages) run them on what path_common.c shares,
 * state_copies.c moves state variables in and out, and executor.c drives the stages.
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
/* Every path selection asked about or returned is added to `*seen` (bit 1 << TGR_PATH_*): what
 * a firmware must link to make the same decision (runtime/host/plan_needs.c). A question to a
 * path this build leaves out refuses the unit, since its answer could have changed the path. */
uint32_t tgr_select_path(const tgr_plan *p, uint32_t stage, uint32_t limit, const char **why, uint32_t *seen);

/* Fast bytes the unit starting at `stage` may use, given a fast arena of `fast_size` bytes:
 * what is left after the floor and the stage's decompressed weights, capped by the stage's own
 * limit (docs/execution.md#fast-limit-and-the-needs-tiling-test). */
uint32_t tgr_unit_limit(const tgr_plan *p, uint32_t stage, uint32_t fast_size, uint32_t floor);

/* Load-time check that every unit can run with the smallest fast arena the plan accepts: called
 * by the loader. Adds the paths its selections consulted to `*seen` (tgr_select_path). */
tgr_status tgr_check_paths(const tgr_plan *p, uint32_t *seen, tgr_error *err);

/* ---- shared by every path (path_common.c) ------------------------------------------------ */

/* Give tensor t its whole size in slow memory (compacting once if needed). */
tgr_status tgr_place_slow(tgr_session *s, uint32_t t, uint32_t stage, tgr_error *err);
/* Run op o's kernel on the session's buffers, unless the session is rehearsing (session init);
 * an op that fails on the data (TGR_OP_FALLIBLE) stops the run with TGR_ERR_EXEC naming it. */
tgr_status tgr_run_op(tgr_session *s, uint32_t o, const int32_t *region, const uint8_t *weights, tgr_error *err);

/* ---- units (executor.c) ---------------------------------------------------------------------- */

/* Run the unit starting at `stage` (selecting its path, with its stage_begin event); `*last` is
 * its last stage, or PATH_SKIP for a chain member its head ran. The caller then frees what is
 * dead in slow memory and ends the unit (tgr_end_unit: fast release, stage_end event). The
 * control path runs its graphs' units this way (one level deep: graphs hold no If/While). */
tgr_status tgr_run_unit(tgr_session *s, uint32_t stage, uint32_t *last, tgr_error *err);
void tgr_end_unit(tgr_session *s, uint32_t stage, uint32_t last);

/* ---- state variables (state_copies.c) ---------------------------------------------------------- */

/* One run: the variables' previous values into slow memory after the inputs, and their next
 * values back into the state buffer after a successful run. The generated exec/paths_built_in.c
 * forwards them to the full forms for a plan with state variables, and makes them empty for one
 * without (a firmware then links no copies). */
tgr_status tgr_state_in(tgr_session *s, tgr_error *err);
void tgr_state_out(tgr_session *s);
tgr_status tgr_full_state_in(tgr_session *s, tgr_error *err);
void tgr_full_state_out(tgr_session *s);

/* ---- the paths ------------------------------------------------------------------------------- */

/* A path's runner runs the unit starting at `stage` (`path` says which, for the runner of
 * stripes, 2-D tiles and chains, path_tiles.c) and gets `weights[k]`: where the weights of the
 * unit's k-th stage are (executor.c). Its fit test tells path selection whether the path can run
 * the unit of stages first..last (`why` may be set to the reason it cannot).
 *
 * The macros give them the external names tgr_path_run_TGR_PATH_ROWS and
 * tgr_path_fits_TGR_PATH_ROWS, which only the build's generated dispatch (paths_built_in.c,
 * written by site_scons/tigris_scons/builtin.py) calls: a firmware links the paths its plan takes
 * or asks about, and every call is direct. The last line of each only re-declares, so each use
 * ends with a semicolon. */
#define TGR_PATH_RUNNER(code, run)                                                              \
    tgr_status tgr_path_run_##code(tgr_session *s, uint32_t stage, uint32_t limit, uint32_t path, \
                                   const uint8_t *const *weights, tgr_error *err);              \
    tgr_status tgr_path_run_##code(tgr_session *s, uint32_t stage, uint32_t limit, uint32_t path, \
                                   const uint8_t *const *weights, tgr_error *err)               \
    {                                                                                           \
        return run(s, stage, limit, path, weights, err);                                        \
    }                                                                                           \
    tgr_status tgr_path_run_##code(tgr_session *s, uint32_t stage, uint32_t limit, uint32_t path, \
                                   const uint8_t *const *weights, tgr_error *err)
/* A path selection asks about (every path but normal, which runs anything). */
#define TGR_PATH_IMPL(code, run, fits)                                                          \
    int tgr_path_fits_##code(const tgr_plan *p, uint32_t first, uint32_t last, const char **why); \
    int tgr_path_fits_##code(const tgr_plan *p, uint32_t first, uint32_t last, const char **why) \
    {                                                                                           \
        return fits(p, first, last, why);                                                       \
    }                                                                                           \
    TGR_PATH_RUNNER(code, run)

/* The generated dispatch: bit 1 << TGR_PATH_* of every path this build links (all of them for
 * the host library, the ones the plan takes or asks about with the firmware's arenas for a
 * firmware), the runners, and the fit tests (only for linked paths other than normal). */
extern const uint32_t tgr_built_in_paths;
tgr_status tgr_path_run(uint32_t path, tgr_session *s, uint32_t stage, uint32_t limit,
                        const uint8_t *const *weights, tgr_error *err);
int tgr_path_fits(uint32_t path, const tgr_plan *p, uint32_t first, uint32_t last, const char **why);

/* TGR_ERR_UNSUPPORTED naming the path when the unit at `stage` takes one this build leaves out:
 * checked where a path is selected (load, session init), so run_unit never meets a NULL runner. */
tgr_status tgr_check_built_in_path(uint32_t stage, uint32_t path, tgr_error *err);
/* "normal", "tiled", ...: the names the host ABI's trace uses, for messages. */
const char *tgr_path_name(uint32_t path);

/* A v10 grouped-reduction record (channel group, spatial interval) that this stage can honour. */
int tgr_by_input_grouping_valid(const tgr_plan *p, uint32_t stage);

#endif /* TGR_EXEC_H */
