/*
 * libFuzzer target over the plan loader and one inference (issue 6, item 1).
 *
 * The input is a whole `.tgrs` file. It goes through
 *   1. tgr_plan_load() directly (exact-size buffer: libFuzzer's own copy), then, when accepted
 *      and small enough to run quickly,
 *   2. the host ABI shim (tigris_host_create -> interface queries -> tigris_host_run with
 *      deterministic inputs and a short trace buffer -> metrics -> for a quarter of the inputs a
 *      second run on the same handle -> tigris_host_destroy), and
 *   3. the public API with caller arenas: a fast arena one byte short, no fast arena and a short
 *      workspace (all refused by tgr_session_init), then one more inference, chosen from the
 *      plan bytes (so a replay repeats it): exact poisoned arenas after a misaligned start, a
 *      larger fast arena, or a tight slow arena.
 *
 * Invariants checked (a violation aborts, which libFuzzer reports as a crash):
 *   - a refused load returns a non-OK status equal to err.status, with a non-empty,
 *     NUL-terminated message, and the host shim refuses it with the same message;
 *   - an accepted load leaves err.status == TGR_OK and an empty message;
 *   - interface queries agree with the plan (bytes = elements x dtype size, rank <= 8);
 *   - a run never reports a fast peak above the fast arena or a slow peak above the slow arena;
 *   - arenas fail only with TGR_ERR_ARENA, and only in tgr_session_init(), which rehearses the
 *     run's allocations: a fast arena smaller than tgr_fast_arena_required(), a short workspace
 *     or a slow arena the run would outgrow is refused there; a run after a successful init
 *     fails only where an op fails on the data as the reference does (TGR_ERR_EXEC, "op N
 *     (Name): ...", or an int64 index input outside int32: "input N holds ..."), and then every
 *     run of those inputs fails with the same message, on the same handle again too;
 *   - every successful run of the same plan and inputs gives the same output bytes, whatever
 *     the arenas' previous contents, alignment, fast size above the requirement or slow size.
 * Reads and writes outside any buffer (plan, inputs, outputs, arenas, workspace, trace) are
 * ASan's job: every buffer is its own exact-size heap block.
 *
 * Plans whose tensors, budget or weight reserve exceed a few MiB are loaded but not run.
 *
 * Build (tests/fuzz/run_fuzz.py does this):
 *   clang -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -g -O1 \
 *         -Iruntime/include -Iruntime/src -Iruntime/host -DTGR_TENSOR_ALIGN=32u \
 *         tests/fuzz/fuzz_plan.c $(find runtime/src -name '*.c') runtime/host/tigris_host.c -lm
 * With -DFUZZ_REPLAY_MAIN it is a plain program instead: `fuzz_plan FILE...` runs each file
 * once through the same checks (tests/fuzz/test_fuzz_regressions.py builds it with gcc).
 */
#define _POSIX_C_SOURCE 200112L

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tgr.h"
#include "plan/plan.h"
#include "tigris_host.h"

#define MAX_TENSOR_TOTAL (2u << 20)   /* sum of tensor bytes of a plan we still run */
#define MAX_FAST (4u << 20)           /* budget + weight reserve */
#define MAX_IO_BYTES (4u << 20)       /* one interface buffer (float = 4 x elements) */
#define TRACE_CAPACITY 16u            /* short on purpose: overflow must only be counted */

static void violated(const char *fmt, ...)
{
    va_list args;
    fputs("fuzz_plan: invariant violated: ", stderr);
    va_start(args, fmt);
    vfprintf(stderr, fmt, args);
    va_end(args);
    fputc('\n', stderr);
    abort();
}

#define CHECK(cond, ...) do { if (!(cond)) violated(__VA_ARGS__); } while (0)

static uint64_t fnv1a(const uint8_t *data, size_t size)
{
    uint64_t h = 1469598103934665603ull;
    size_t i;
    for (i = 0; i < size; ++i) {
        h = (h ^ data[i]) * 1099511628211ull;
    }
    return h;
}

static uint32_t next_random(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*state >> 33);
}

static void check_error(const tgr_error *err, tgr_status st, const char *where)
{
    CHECK(st != TGR_OK, "%s: expected a failure", where);
    CHECK(err->status == st, "%s: returned %s but err.status is %s", where, tgr_status_name(st),
          tgr_status_name(err->status));
    CHECK(memchr(err->message, '\0', sizeof err->message) != NULL, "%s: message not NUL-terminated", where);
    CHECK(err->message[0] != '\0', "%s: empty message for %s", where, tgr_status_name(st));
}

static void *exact_block(size_t bytes)
{
    void *block = malloc(bytes > 0u ? bytes : 1u);
    if (block == NULL) {
        violated("out of memory (%zu bytes)", bytes);
    }
    return block;
}

/* Interface buffers of one run, each its own exact-size heap block. */
typedef struct io_set {
    uint32_t count[2];
    void *buf[2][256];
    uint32_t bytes[2][256];
} io_set;

static void io_free(io_set *io)
{
    uint32_t k, i;
    for (k = 0; k < 2u; ++k) {
        for (i = 0; i < io->count[k]; ++i) {
            free(io->buf[k][i]);
        }
    }
}

static void fill_inputs(io_set *io, const tgr_plan *plan, uint64_t seed)
{
    uint32_t i, j;
    for (i = 0; i < io->count[0]; ++i) {
        tgr_io_info info;
        uint8_t *b = (uint8_t *)io->buf[0][i];
        CHECK(tgr_plan_io_info(plan, 0, i, &info) == TGR_OK, "input %u info", i);
        if (info.dtype == 1u) {
            for (j = 0; j < info.bytes / 4u; ++j) {
                uint32_t r = next_random(&seed);
                float x = j == 0u ? 1e30f : j == 1u ? -1e30f : ((float)(r % 4001u) - 2000.0f) / 250.0f;
                if (j == 2u) {
                    uint32_t nan_bits = 0x7FC00000u;
                    memcpy(&x, &nan_bits, sizeof x);
                }
                memcpy(b + 4u * j, &x, sizeof x);
            }
        } else if (info.dtype == 6u || info.dtype == 7u) {
            /* Indices: mostly small (inside or just outside an axis), now and then any value. */
            const uint32_t size = info.dtype == 6u ? 4u : 8u;
            for (j = 0; j < info.bytes / size; ++j) {
                uint32_t r = next_random(&seed);
                int64_t v = r % 8u == 0u ? (int64_t)(((uint64_t)next_random(&seed) << 32) | next_random(&seed))
                                         : (int64_t)(r % 16u) - 4;
                memcpy(b + size * j, &v, size); /* little-endian: the low word for int32 */
            }
        } else {
            for (j = 0; j < info.bytes; ++j) {
                b[j] = (uint8_t)next_random(&seed);
            }
        }
    }
}

/* Bytes per element: float32 and int32 4, int64 8 (int32 indices at an ONNX interface), int8,
 * uint8 and bool 1. */
static uint32_t dtype_size(uint32_t dtype) { return dtype == 1u || dtype == 6u ? 4u : dtype == 7u ? 8u : 1u; }

/* Allocate the interface buffers from the plan; 0 when they are too large to bother. */
static int io_alloc(io_set *io, const tgr_plan *plan)
{
    uint32_t k, i, axis;
    memset(io, 0, sizeof *io);
    for (k = 0; k < 2u; ++k) {
        uint32_t n = tgr_plan_io_count(plan, (int)k);
        CHECK(n >= 1u && n <= 255u, "interface count %u", n);
        for (i = 0; i < n; ++i) {
            tgr_io_info info;
            uint64_t elements = 1u;
            CHECK(tgr_plan_io_info(plan, (int)k, i, &info) == TGR_OK, "io info %u/%u", k, i);
            CHECK(info.rank <= TGR_MAX_RANK, "io rank %u", info.rank);
            CHECK(info.name != NULL, "io name");
            CHECK(info.tensor < plan->num_tensors, "io tensor %u", info.tensor);
            for (axis = 0; axis < info.rank; ++axis) {
                CHECK(info.dims[axis] > 0, "io dim %d", info.dims[axis]);
                elements *= (uint64_t)info.dims[axis];
            }
            CHECK(elements * dtype_size(tensor_dtype(plan, info.tensor)) == tensor_bytes(plan, info.tensor),
                  "io %u/%u elements %llu vs tensor bytes %u", k, i, (unsigned long long)elements,
                  tensor_bytes(plan, info.tensor));
            CHECK((uint64_t)info.bytes == elements * dtype_size(info.dtype),
                  "io %u/%u: %u bytes for %llu elements of dtype %u", k, i, info.bytes,
                  (unsigned long long)elements, info.dtype);
            if (info.bytes > MAX_IO_BYTES) {
                io_free(io);
                return 0;
            }
            io->buf[k][i] = exact_block(info.bytes);
            io->bytes[k][i] = info.bytes;
            io->count[k] = i + 1u;
        }
        io->count[k] = n;
    }
    return 1;
}

static void outputs_poison(io_set *io, uint8_t value)
{
    uint32_t i;
    for (i = 0; i < io->count[1]; ++i) {
        memset(io->buf[1][i], value, io->bytes[1][i]);
    }
}

static uint8_t *outputs_snapshot(const io_set *io, size_t *total)
{
    uint32_t i;
    size_t n = 0;
    uint8_t *copy;
    for (i = 0; i < io->count[1]; ++i) {
        n += io->bytes[1][i];
    }
    copy = (uint8_t *)exact_block(n);
    n = 0;
    for (i = 0; i < io->count[1]; ++i) {
        memcpy(copy + n, io->buf[1][i], io->bytes[1][i]);
        n += io->bytes[1][i];
    }
    *total = n;
    return copy;
}

static void outputs_equal(const io_set *io, const uint8_t *expected, size_t total, const char *what)
{
    size_t got_total;
    uint8_t *got = outputs_snapshot(io, &got_total);
    CHECK(got_total == total && memcmp(got, expected, total) == 0, "%s: outputs differ from the first run", what);
    free(got);
}

/* A run's failure on its data, TGR_ERR_EXEC: in an op ("op N (Name): why"), or an int64 input
 * value outside the int32 range it is stored in ("input N holds ..."). */
static int is_op_fault(const char *message)
{
    unsigned op;
    char name[64];
    return sscanf(message, "op %u (%63[A-Za-z0-9]): ", &op, name) == 2 ||
           sscanf(message, "input %u holds an int64 value%63[^\n]", &op, name) == 2;
}

/* ---- the host shim ------------------------------------------------------------------------- */

typedef struct host_result {
    int ran;            /* tigris_host_run succeeded */
    char fault[sizeof(((tgr_error *)0)->message)]; /* else: why it failed (an op on these inputs, or memory) */
    uint8_t *outputs;   /* snapshot of the first run's outputs */
    size_t bytes;
    uint32_t slow_capacity;
} host_result;

static void run_host(const uint8_t *data, size_t size, const tgr_plan *plan, io_set *io, uint64_t seed,
                     host_result *res)
{
    void *h = NULL;
    const char *msg;
    uint32_t k, i;
    tgr_trace_event *trace = (tgr_trace_event *)exact_block(TRACE_CAPACITY * sizeof *trace);
    memset(res, 0, sizeof *res);
    msg = tigris_host_create(data, (uint32_t)size, 0u, &h);
    CHECK(msg == NULL && h != NULL, "host create refused a plan tgr_plan_load accepted: %s", msg ? msg : "?");
    for (k = 0; k < 2u; ++k) {
        CHECK(tigris_host_tensor_count(h, (int)k) == io->count[k], "host tensor count");
        for (i = 0; i < io->count[k]; ++i) {
            uint32_t rank = tigris_host_tensor_rank(h, (int)k, i);
            uint32_t axis;
            CHECK(tigris_host_tensor_bytes(h, (int)k, i) == io->bytes[k][i], "host tensor bytes");
            CHECK(rank <= TGR_MAX_RANK, "host rank");
            CHECK(tigris_host_tensor_name(h, (int)k, i) != NULL, "host name");
            (void)tigris_host_tensor_dtype(h, (int)k, i);
            for (axis = 0; axis <= rank; ++axis) {
                (void)tigris_host_tensor_dim(h, (int)k, i, axis);
            }
        }
        CHECK(tigris_host_tensor_bytes(h, (int)k, io->count[k]) == 0u, "host bytes past the interface");
    }
    res->slow_capacity = (uint32_t)tigris_host_metric(h, 1);
    tigris_host_trace_buffer(h, trace, TRACE_CAPACITY);
    fill_inputs(io, plan, seed);
    outputs_poison(io, 0xC3);
    msg = tigris_host_run(h, io->buf[0], io->bytes[0], io->count[0], io->buf[1], io->bytes[1], io->count[1]);
    CHECK(tigris_host_metric(h, 2) <= tigris_host_metric(h, 0), "fast peak %llu above the fast arena %llu",
          (unsigned long long)tigris_host_metric(h, 2), (unsigned long long)tigris_host_metric(h, 0));
    CHECK(tigris_host_metric(h, 3) <= tigris_host_metric(h, 1), "slow peak %llu above the slow arena %llu",
          (unsigned long long)tigris_host_metric(h, 3), (unsigned long long)tigris_host_metric(h, 1));
    for (i = 0; i < 16u; ++i) {
        (void)tigris_host_metric(h, i);
    }
    if (msg == NULL) {
        res->ran = 1;
        res->outputs = outputs_snapshot(io, &res->bytes);
    } else {
        CHECK(memchr(msg, '\0', sizeof(((tgr_error *)0)->message)) != NULL && msg[0] != '\0', "host run message");
        snprintf(res->fault, sizeof res->fault, "%s", msg);
    }
    if ((seed >> 4) % 4u == 0u || msg != NULL) {
        /* Again on the same handle: leftovers of the first run (failed or not) must not matter. */
        CHECK(tigris_host_reset_state(h) == NULL, "reset_state");
        tigris_host_trace_buffer(h, NULL, 0u);
        outputs_poison(io, 0x3C);
        msg = tigris_host_run(h, io->buf[0], io->bytes[0], io->count[0], io->buf[1], io->bytes[1], io->count[1]);
        if (res->ran) {
            CHECK(msg == NULL, "second host run failed: %s", msg);
            outputs_equal(io, res->outputs, res->bytes, "second host run");
        } else {
            CHECK(msg != NULL && strcmp(msg, res->fault) == 0, "second host run: '%s', first '%s'",
                  msg ? msg : "(ran)", res->fault);
        }
    }
    tigris_host_destroy(h);
    free(trace);
}

/* ---- the public API with caller memory ------------------------------------------------------- */

typedef struct arenas {
    uint8_t *fast, *slow, *work, *state;
} arenas;

/* One session over fresh exact-size blocks. The fast block is 32-byte aligned and handed over
 * from `fast_skew` bytes in, so its usable part starts (32 - skew) % 32 bytes later. */
static tgr_status run_direct(const tgr_plan *plan, io_set *io, uint32_t fast_bytes, uint32_t fast_skew,
                             uint32_t slow_bytes, uint32_t work_bytes, uint8_t poison, int run, tgr_error *err)
{
    arenas a;
    tgr_session session;
    tgr_status st;
    size_t fast_block = (size_t)fast_bytes + fast_skew;
    void *block = NULL;
    if (posix_memalign(&block, 32u, fast_block > 0u ? fast_block : 1u) != 0) {
        violated("out of memory (%u fast bytes)", fast_bytes);
    }
    a.fast = (uint8_t *)block;
    a.slow = (uint8_t *)exact_block(slow_bytes);
    a.work = (uint8_t *)exact_block(work_bytes);
    a.state = (uint8_t *)exact_block(tgr_state_required(plan));
    memset(a.fast, poison, (size_t)fast_bytes + fast_skew);
    memset(a.slow, poison ^ 0xFF, slow_bytes);
    memset(a.work, poison, work_bytes);
    st = tgr_session_init(&session, plan, a.fast + fast_skew, fast_bytes, a.slow, slow_bytes, a.work, work_bytes,
                          err);
    if (st == TGR_OK) {
        st = tgr_session_set_state(&session, a.state, tgr_state_required(plan), err);
        CHECK(st == TGR_OK, "a state buffer of tgr_state_required bytes was refused: %s", err->message);
    }
    if (st == TGR_OK && run) {
        outputs_poison(io, poison);
        st = tgr_run(&session, (const void *const *)io->buf[0], io->bytes[0], io->count[0],
                     (void *const *)io->buf[1], io->bytes[1], io->count[1], err);
        CHECK(st == TGR_OK || (st == TGR_ERR_EXEC && is_op_fault(err->message)),
              "session init accepted the arenas, then the run failed: %s", err->message);
        CHECK(session.fast.peak <= session.fast.size, "fast peak %u above the usable fast arena %u",
              session.fast.peak, session.fast.size);
        CHECK(session.slow.peak <= session.slow.size, "slow peak %u above the usable slow arena %u",
              session.slow.peak, session.slow.size);
    }
    free(a.fast);
    free(a.slow);
    free(a.work);
    free(a.state);
    return st;
}

/* A run after a successful init: OK; TGR_ERR_ARENA (slow arena too tight); or the failure on the
 * data the host run had on the same inputs, with the same message (when the host's arenas stopped
 * its run before any op, a larger arena may reach the op that fails on these inputs). */
static void check_run_status(tgr_status st, const tgr_error *err, const host_result *host, const char *what)
{
    if (st != TGR_OK) {
        check_error(err, st, what);
        CHECK(st == TGR_ERR_ARENA ||
                  (st == TGR_ERR_EXEC && !host->ran && is_op_fault(err->message) &&
                   (strcmp(err->message, host->fault) == 0 || !is_op_fault(host->fault))),
              "%s: a loaded plan failed with %s: %s", what, tgr_status_name(st), err->message);
    }
}

static void run_api(const tgr_plan *plan, io_set *io, const host_result *host, uint64_t seed)
{
    const uint32_t need = tgr_fast_arena_required(plan);
    const uint32_t work = tgr_workspace_required(plan);
    tgr_error err;
    tgr_status st;
    uint32_t tight;

    CHECK(need >= plan->budget, "fast requirement %u below the budget %u", need, plan->budget);
    CHECK(work == TGR_WORKSPACE_BYTES(plan->num_tensors), "workspace figure");

    /* Arenas too small are refused by tgr_session_init, before any kernel runs. */
    st = run_direct(plan, io, need - 1u, 0u, 64u, work, 0x11, 1, &err);
    check_error(&err, st, "fast arena one byte short");
    CHECK(st == TGR_ERR_ARENA, "fast arena one byte short: %s", tgr_status_name(st));
    st = run_direct(plan, io, 0u, 0u, 64u, work, 0x11, 1, &err);
    CHECK(st == TGR_ERR_ARENA, "empty fast arena: %s", tgr_status_name(st));
    st = run_direct(plan, io, need, 0u, 64u, work - 1u - (uint32_t)sizeof(void *), 0x11, 1, &err);
    CHECK(st == TGR_ERR_ARENA, "short workspace: %s", tgr_status_name(st));

    /* One more inference per input (which one depends on the plan bytes, so a replay repeats it):
     * each must give the host run's result. */
    switch (seed % 3u) {
    case 0u:
        /* Exactly the requirement after a misaligned start (31 bytes skipped), poisoned arenas,
         * the host's slow size. */
        st = run_direct(plan, io, need + TGR_TENSOR_ALIGN - 1u, 1u, host->slow_capacity, work, 0xA5, 1, &err);
        check_run_status(st, &err, host, "exact arenas");
        CHECK((st == TGR_OK) == host->ran, "exact arenas: %s but the host run %s", tgr_status_name(st),
              host->ran ? "succeeded" : "failed");
        if (st == TGR_OK) {
            outputs_equal(io, host->outputs, host->bytes, "exact arenas");
        }
        break;
    case 1u:
        /* More fast memory than the plan needs. */
        st = run_direct(plan, io, need + need / 2u + 4096u, 0u, host->slow_capacity, work, 0x5A, 1, &err);
        check_run_status(st, &err, host, "large fast arena");
        if (st == TGR_OK && host->ran) {
            outputs_equal(io, host->outputs, host->bytes, "large fast arena");
        }
        break;
    default:
        /* A tight slow arena: the same result, or TGR_ERR_ARENA. */
        tight = host->slow_capacity > 0u ? (uint32_t)((seed >> 8) % host->slow_capacity) : 0u;
        st = run_direct(plan, io, need, 0u, tight, work, 0x77, 1, &err);
        check_run_status(st, &err, host, "tight slow arena");
        if (st == TGR_OK && host->ran) {
            outputs_equal(io, host->outputs, host->bytes, "tight slow arena");
        }
        break;
    }
}

/* ---- entry points ------------------------------------------------------------------------------ */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tgr_plan plan;
    tgr_error err;
    tgr_status st;
    uint64_t total = 0;
    uint64_t seed;
    uint32_t t;
    io_set io;
    host_result host;

    if (size > 0xFFFFFFFFu) {
        return 0;
    }
    memset(&err, 0xEE, sizeof err);
    st = tgr_plan_load(&plan, data, (uint32_t)size, &err);
    if (st != TGR_OK) {
        void *h = (void *)&plan;
        const char *msg;
        check_error(&err, st, "tgr_plan_load");
        msg = tigris_host_create(data, (uint32_t)size, 0u, &h);
        CHECK(msg != NULL && h == NULL, "host create accepted a plan tgr_plan_load refused");
        CHECK(strcmp(msg, err.message) == 0, "host create said '%s', tgr_plan_load '%s'", msg, err.message);
        return 0;
    }
    CHECK(err.status == TGR_OK && err.message[0] == '\0', "accepted plan left an error message");
    CHECK(plan.data == data && plan.size == size, "plan view");
    CHECK(tgr_plan_model_name(&plan) != NULL, "model name");

    for (t = 0; t < plan.num_tensors; ++t) {
        total += tensor_bytes(&plan, t);
    }
    if (total > MAX_TENSOR_TOTAL || plan.budget > MAX_FAST || plan.weight_reserve > MAX_FAST ||
        tgr_fast_arena_required(&plan) > MAX_FAST || tgr_fast_arena_required(&plan) < plan.budget) {
        return 0;
    }
    if (!io_alloc(&io, &plan)) {
        return 0;
    }
    seed = fnv1a(data, size);
    run_host(data, size, &plan, &io, seed, &host);
    run_api(&plan, &io, &host, seed);
    free(host.outputs);
    io_free(&io);
    return 0;
}

#ifndef FUZZ_REPLAY_MAIN
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

/* Most mutations keep the header's file_size equal to the new length, so they get past the
 * first check and reach the structure behind it; one in eight leaves it as mutated. */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    size = LLVMFuzzerMutate(data, size, max_size);
    if (size >= 12u && (seed & 7u) != 0u) {
        data[8] = (uint8_t)size;
        data[9] = (uint8_t)(size >> 8);
        data[10] = (uint8_t)(size >> 16);
        data[11] = (uint8_t)(size >> 24);
    }
    return size;
}
#else
int main(int argc, char **argv)
{
    int i;
    for (i = 1; i < argc; ++i) {
        FILE *f = fopen(argv[i], "rb");
        uint8_t *buf;
        long n;
        if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
            fprintf(stderr, "cannot read %s\n", argv[i]);
            return 2;
        }
        buf = (uint8_t *)exact_block((size_t)n);
        if (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n) {
            fprintf(stderr, "cannot read %s\n", argv[i]);
            return 2;
        }
        fclose(f);
        fprintf(stderr, "replay %s (%ld bytes)\n", argv[i], n);
        LLVMFuzzerTestOneInput(buf, (size_t)n);
        free(buf);
    }
    return 0;
}
#endif
