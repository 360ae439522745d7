/*
 * tgr_plan_needs PLAN FAST_BYTES SLOW_BYTES|auto: what a firmware must link to run PLAN with
 * arenas of these sizes, and the slow arena it needs. Built for the host from the full runtime,
 * with the firmware's TGR_TENSOR_ALIGN, so the answer comes from the same loader, path selection
 * and allocator the firmware runs:
 *
 *   op <opcode> <name>      one line per distinct opcode of the plan
 *   method <code> <name>    one line per distinct method its ops take (ops.h TGR_OP_METHODS)
 *   path <code> <name>      one line per execution path the loader's check or a run (session init,
 *                           then one inference) takes or asks about (tgr_select_path)
 *   lz4 <0|1>               whether the plan carries LZ4-compressed weight blocks
 *   state <0|1>             whether the plan keeps state variables (schema 10)
 *   slow_peak <bytes>       slow arena bytes the run used: with `auto` (an arena that holds every
 *                           tensor at once, so nothing ever compacts) exactly the arena that
 *                           repeats this run's allocations, for `slow = "auto"`
 *
 * Exit status 0; 1 with "error <status> <message>" when this runtime refuses the plan or the
 * arenas (the firmware then links everything and reports the same refusal itself); 2 on usage
 * or I/O errors. A host tool: it may allocate, the runtime it drives does not.
 */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "ops/ops_registry.h"
#include "tgr.h"

static void *aligned_block(uint32_t bytes)
{
    /* The firmware's arenas are TGR_TENSOR_ALIGN-aligned arrays: usable size = declared size. */
    void *block = NULL;
    return posix_memalign(&block, TGR_TENSOR_ALIGN, bytes > 0u ? bytes : 1u) == 0 ? block : NULL;
}

static uint8_t *read_file(const char *path, uint32_t *size)
{
    FILE *f = fopen(path, "rb");
    uint8_t *data = NULL;
    long n;
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || n > 0x7FFFFFFFL || fseek(f, 0, SEEK_SET) != 0 ||
        (data = malloc((size_t)n + 1u)) == NULL || fread(data, 1, (size_t)n, f) != (size_t)n) {
        free(data);
        data = NULL;
    }
    if (f != NULL) {
        fclose(f);
    }
    *size = data != NULL ? (uint32_t)n : 0u;
    return data;
}

/* An arena no run can outgrow: every tensor of the plan at once, each rounded to the alignment. */
static uint32_t all_tensors_bytes(const tgr_plan *plan)
{
    uint64_t total = 0u;
    uint32_t t;
    for (t = 0; t < plan->num_tensors; ++t) {
        total += ((uint64_t)tensor_bytes(plan, t) + TGR_TENSOR_ALIGN - 1u) / TGR_TENSOR_ALIGN * TGR_TENSOR_ALIGN;
    }
    return total > 0xFFFFFFF0u ? 0xFFFFFFF0u : (uint32_t)total;
}

static int refused(tgr_status st, const tgr_error *err)
{
    printf("error %s %s\n", tgr_status_name(st), err->message);
    return 1;
}

/* One inference on zero inputs: its counters name the paths the firmware's inference takes. */
static tgr_status run_once(tgr_session *session, const tgr_plan *plan, tgr_error *err)
{
    /* Interface counts are u8 in the header: room for every count a plan can state. */
    void *buffers[2][256] = {{NULL}};
    uint32_t sizes[2][256];
    uint32_t count[2], side, i;
    tgr_status st = TGR_OK;
    for (side = 0; side < 2u; ++side) {
        count[side] = tgr_plan_io_count(plan, (int)side);
        for (i = 0; i < count[side] && st == TGR_OK; ++i) {
            tgr_io_info info;
            st = tgr_plan_io_info(plan, (int)side, i, &info);
            sizes[side][i] = info.bytes;
            buffers[side][i] = calloc(info.bytes > 0u ? info.bytes : 1u, 1);
        }
    }
    if (st == TGR_OK) {
        st = tgr_run(session, (const void *const *)buffers[0], sizes[0], count[0], buffers[1], sizes[1], count[1], err);
    }
    for (side = 0; side < 2u; ++side) {
        for (i = 0; i < 256u; ++i) {
            free(buffers[side][i]);
        }
    }
    return st;
}

int main(int argc, char **argv)
{
    tgr_plan plan;
    tgr_session session;
    tgr_error err;
    tgr_status st;
    uint32_t size, fast_bytes, slow_bytes, paths = 0u, o, code;
    uint8_t seen[256] = {0};
    uint32_t methods = 0u;
    uint8_t *data;
    void *fast, *slow, *workspace, *state;
    if (argc != 4) {
        fprintf(stderr, "usage: %s PLAN FAST_BYTES SLOW_BYTES|auto\n", argv[0]);
        return 2;
    }
    fast_bytes = (uint32_t)strtoul(argv[2], NULL, 0);
    data = read_file(argv[1], &size);
    if (data == NULL) {
        fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[1]);
        return 2;
    }
    st = tgr_plan_load(&plan, data, size, &err);
    if (st != TGR_OK) {
        return refused(st, &err);
    }
    slow_bytes = strcmp(argv[3], "auto") == 0 ? all_tensors_bytes(&plan) : (uint32_t)strtoul(argv[3], NULL, 0);
    fast = aligned_block(fast_bytes);
    slow = aligned_block(slow_bytes);
    workspace = aligned_block(tgr_workspace_required(&plan));
    state = aligned_block(tgr_state_required(&plan));
    st = tgr_session_init(&session, &plan, fast, fast_bytes, slow, slow_bytes, workspace,
                          tgr_workspace_required(&plan), &err);
    if (st == TGR_OK) {
        st = tgr_session_set_state(&session, state, tgr_state_required(&plan), &err);
    }
    if (st == TGR_OK) {
        /* The rehearsal at session init takes every path of a run (allocation does not depend on
         * the data); the run adds what it asked on the way. A run an op fails on the zero input
         * (Rsqrt below its zero point) still took the same paths up to there. */
        paths = session.counters.paths;
        st = run_once(&session, &plan, &err);
        paths |= session.counters.paths;
        st = st == TGR_ERR_EXEC ? TGR_OK : st;
    }
    if (st == TGR_OK) {
        st = tgr_check_paths(&plan, &paths, &err); /* what the loader asked, with the smallest arena */
    }
    if (st != TGR_OK) {
        return refused(st, &err);
    }
    for (o = 0; o < plan.num_ops; ++o) {
        code = op_type(&plan, o);
        if (!seen[code]) {
            seen[code] = 1u;
            printf("op %u %s\n", (unsigned)code, tgr_op_name(code));
        }
        methods |= 1u << tgr_built_in_method(&plan, o);
    }
    for (code = 1; code < 32u; ++code) {
        if (methods & (1u << code)) {
            printf("method %u %s\n", (unsigned)code, tgr_method_name(code));
        }
    }
    for (code = 0; code < 32u; ++code) {
        if (paths & (1u << code)) {
            printf("path %u %s\n", (unsigned)code, tgr_path_name(code));
        }
    }
    printf("lz4 %u\n", plan.num_blocks > 0u ? 1u : 0u);
    printf("state %u\n", plan.num_state > 0u ? 1u : 0u);
    printf("slow_peak %u\n", (unsigned)session.slow.peak);
    free(fast);
    free(slow);
    free(workspace);
    free(state);
    free(data);
    return 0;
}
