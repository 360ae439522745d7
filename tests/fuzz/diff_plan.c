/*
 * Differential plan runner: the same plan bytes through two host-ABI libraries, the bundled
 * reference runtime and ours, each in its own forked child (a corrupted plan may crash or hang
 * the reference; that must not take the comparison down), and one verdict per library:
 *
 *   refuse <message>   tigris_host_create failed, or the interface is one tigris.runtime.Session
 *                      refuses (a dtype it has no numpy type for, duplicate names)
 *   fail <message>     created, but tigris_host_run failed
 *   ok <digest>        ran; digest = FNV-1a 64 over the interface (dtype, rank, dims, bytes of
 *                      every input and output) and every output byte
 *   crash <signal> / hang
 *
 * Inputs are the same deterministic bytes for both (drawn from the interface each library
 * reports, so an interface that differs shows up as a different digest, not as a crash).
 *
 *   diff_plan REF.so OURS.so FILE...                       one line per file:
 *                                                          FILE \t reference verdict \t our verdict
 *   diff_plan REF.so OURS.so --fuzz SECONDS SEED OUTDIR FILE...
 *                                                          mutates the files (seed corpus) for
 *                                                          SECONDS, writes every input the two
 *                                                          disagree on to OUTDIR, prints counts
 *
 * Which disagreements count as findings is the caller's rule (tests/fuzz/differential.py); in
 * fuzz mode this file applies the same rule (is_finding) to decide what to keep.
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUN_SECONDS 10u                 /* a child still running after this is a hang */
#define MAX_IO 64u                      /* interface tensors a run feeds or reads */
#define MAX_IO_BYTES (16u << 20)        /* a plan asking for more is run with no inputs (refused) */
#define VERDICT_LEN 240u

typedef struct {
    uint32_t (*abi)(void);
    const char *(*create)(const void *, uint32_t, uint32_t, void **);
    void (*destroy)(void *);
    uint32_t (*count)(void *, int);
    const char *(*name)(void *, int, uint32_t);
    uint32_t (*bytes)(void *, int, uint32_t);
    uint32_t (*dtype)(void *, int, uint32_t);
    uint32_t (*rank)(void *, int, uint32_t);
    int32_t (*dim)(void *, int, uint32_t, uint32_t);
    const char *(*run)(void *, void **, uint32_t *, uint32_t, void **, uint32_t *, uint32_t);
} host_abi;

static void *symbol(void *lib, const char *name, const char *path)
{
    void *f = dlsym(lib, name);
    if (f == NULL) {
        fprintf(stderr, "diff_plan: %s has no %s\n", path, name);
        exit(2);
    }
    return f;
}

static void bind_library(host_abi *h, const char *path)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "diff_plan: %s\n", dlerror());
        exit(2);
    }
    /* POSIX guarantees a function pointer round-trips through void * for dlsym. */
    *(void **)&h->abi = symbol(lib, "tigris_host_abi", path);
    *(void **)&h->create = symbol(lib, "tigris_host_create", path);
    *(void **)&h->destroy = symbol(lib, "tigris_host_destroy", path);
    *(void **)&h->count = symbol(lib, "tigris_host_tensor_count", path);
    *(void **)&h->name = symbol(lib, "tigris_host_tensor_name", path);
    *(void **)&h->bytes = symbol(lib, "tigris_host_tensor_bytes", path);
    *(void **)&h->dtype = symbol(lib, "tigris_host_tensor_dtype", path);
    *(void **)&h->rank = symbol(lib, "tigris_host_tensor_rank", path);
    *(void **)&h->dim = symbol(lib, "tigris_host_tensor_dim", path);
    *(void **)&h->run = symbol(lib, "tigris_host_run", path);
}

static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
    const uint8_t *p = (const uint8_t *)data;
    size_t i;
    for (i = 0; i < n; ++i) {
        h = (h ^ p[i]) * 0x100000001b3ull;
    }
    return h;
}

static uint32_t next_random(uint32_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 17;
    *state ^= *state << 5;
    return *state;
}

/* Values every runtime takes the same way: floats in [-1, 1), bytes of any value, small
 * non-negative integers for int32/int64/bool (index-like inputs stay mostly in range). */
static void fill_input(uint8_t *buf, uint32_t bytes, uint32_t dtype, uint32_t seed)
{
    uint32_t state = 0x9E3779B9u ^ (seed * 2654435761u), i;
    if (dtype == 1u) {
        for (i = 0; i + 4u <= bytes; i += 4u) {
            float v = (float)((int32_t)(next_random(&state) % 2048u) - 1024) / 1024.0f;
            memcpy(buf + i, &v, 4);
        }
    } else if (dtype == 6u || dtype == 7u || dtype == 9u) {
        uint32_t width = dtype == 6u ? 4u : dtype == 7u ? 8u : 1u;
        memset(buf, 0, bytes);
        for (i = 0; i + width <= bytes; i += width) {
            buf[i] = (uint8_t)(next_random(&state) % (dtype == 9u ? 2u : 4u));
        }
    } else {
        for (i = 0; i < bytes; ++i) {
            buf[i] = (uint8_t)next_random(&state);
        }
    }
}

static int session_dtype(uint32_t code)
{
    return code == 1u || code == 2u || code == 3u || code == 6u || code == 7u || code == 9u;
}

/* What tigris.runtime.Session does after create: interface it can represent, unique names. */
static const char *interface_refusal(const host_abi *h, void *handle)
{
    int io;
    uint32_t i, j;
    for (io = 0; io < 2; ++io) {
        uint32_t n = h->count(handle, io);
        if (n > MAX_IO) {
            return "interface too large for diff_plan";
        }
        for (i = 0; i < n; ++i) {
            if (!session_dtype(h->dtype(handle, io, i))) {
                return "Unsupported interface dtype";
            }
            for (j = 0; j < i; ++j) {
                if (strcmp(h->name(handle, io, i), h->name(handle, io, j)) == 0) {
                    return "Model interface contains duplicate names";
                }
            }
        }
    }
    return NULL;
}

static void child_verdict(const host_abi *h, const uint8_t *plan, uint32_t size, char *out)
{
    void *handle = NULL;
    void *inputs[MAX_IO], *outputs[MAX_IO];
    uint32_t in_sizes[MAX_IO], out_sizes[MAX_IO], n_in, n_out, i, a;
    uint64_t digest = 0xcbf29ce484222325ull;
    const char *msg = h->create(plan, size, 0u, &handle);
    int io;
    if (msg != NULL) {
        snprintf(out, VERDICT_LEN, "refuse %s", msg);
        return;
    }
    msg = interface_refusal(h, handle);
    if (msg != NULL) {
        snprintf(out, VERDICT_LEN, "refuse %s", msg);
        return;
    }
    n_in = h->count(handle, 0);
    n_out = h->count(handle, 1);
    for (io = 0; io < 2; ++io) {
        uint32_t n = io ? n_out : n_in;
        for (i = 0; i < n; ++i) {
            uint32_t meta[3];
            uint32_t bytes = h->bytes(handle, io, i);
            meta[0] = h->dtype(handle, io, i);
            meta[1] = h->rank(handle, io, i);
            meta[2] = bytes;
            digest = fnv(digest, meta, sizeof meta);
            for (a = 0; a < meta[1] && a < 16u; ++a) {
                int32_t d = h->dim(handle, io, i, a);
                digest = fnv(digest, &d, sizeof d);
            }
            if (bytes > MAX_IO_BYTES) {
                snprintf(out, VERDICT_LEN, "refuse interface tensor of %u bytes (diff_plan limit)", bytes);
                return;
            }
            if (io == 0) {
                inputs[i] = malloc(bytes ? bytes : 1u);
                in_sizes[i] = bytes;
                fill_input((uint8_t *)inputs[i], bytes, meta[0], i);
            } else {
                outputs[i] = calloc(bytes ? bytes : 1u, 1u);
                out_sizes[i] = bytes;
            }
        }
    }
    msg = h->run(handle, inputs, in_sizes, n_in, outputs, out_sizes, n_out);
    if (msg != NULL) {
        snprintf(out, VERDICT_LEN, "fail %s", msg);
        return;
    }
    for (i = 0; i < n_out; ++i) {
        digest = fnv(digest, outputs[i], out_sizes[i]);
    }
    snprintf(out, VERDICT_LEN, "ok %016llx", (unsigned long long)digest);
}

/* One verdict, computed in a child so a crash or hang of either library is a verdict too. */
static void verdict(const host_abi *h, const uint8_t *plan, uint32_t size, char *out)
{
    int fds[2], status = 0;
    pid_t pid;
    ssize_t got = 0, n;
    if (pipe(fds) != 0) {
        perror("pipe");
        exit(2);
    }
    pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(2);
    }
    if (pid == 0) {
        char line[VERDICT_LEN];
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) {
            dup2(devnull, 2); /* the reference prints nothing we need; keep our output readable */
        }
        close(fds[0]);
        alarm(RUN_SECONDS);
        child_verdict(h, plan, size, line);
        if (write(fds[1], line, strlen(line)) < 0) {
            _exit(3);
        }
        _exit(0);
    }
    close(fds[1]);
    while (got < (ssize_t)VERDICT_LEN - 1 && (n = read(fds[0], out + got, VERDICT_LEN - 1u - (size_t)got)) > 0) {
        got += n;
    }
    out[got] = '\0';
    close(fds[0]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status)) {
        if (WTERMSIG(status) == SIGALRM) {
            snprintf(out, VERDICT_LEN, "hang");
        } else {
            snprintf(out, VERDICT_LEN, "crash %d", WTERMSIG(status));
        }
    } else if (got == 0) {
        snprintf(out, VERDICT_LEN, "crash exit %d", WEXITSTATUS(status));
    }
    for (n = 0; out[n] != '\0'; ++n) {
        if (out[n] == '\t' || out[n] == '\n') {
            out[n] = ' ';
        }
    }
}

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Ours ran where the reference refused or failed, both ran to different bytes, ours crashed, or
 * ours hung where the reference did not (a While loop the plan never ends hangs both: the host
 * library keeps the reference's unbounded loop; firmware bounds it): never acceptable. Ours
 * refusing what the reference runs is allowed (fail closed). */
static int is_finding(const char *ref, const char *ours)
{
    if (starts(ours, "crash") || (starts(ours, "hang") && !starts(ref, "hang"))) {
        return 1;
    }
    if (starts(ours, "ok")) {
        return starts(ref, "refuse") || starts(ref, "fail") || (starts(ref, "ok") && strcmp(ref, ours) != 0);
    }
    if (starts(ours, "fail")) {
        return starts(ref, "refuse");
    }
    return 0;
}

static uint8_t *read_file(const char *path, uint32_t *size)
{
    FILE *f = fopen(path, "rb");
    uint8_t *data;
    long n;
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "diff_plan: cannot read %s\n", path);
        exit(2);
    }
    data = malloc((size_t)n + 1u);
    if (data == NULL || fread(data, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "diff_plan: cannot read %s\n", path);
        exit(2);
    }
    fclose(f);
    *size = (uint32_t)n;
    return data;
}

/* ---- fuzz mode ------------------------------------------------------------------------- */

static uint32_t boundary_value(uint32_t *rng, uint32_t old, uint32_t width)
{
    uint32_t max = width == 1u ? 0xFFu : width == 2u ? 0xFFFFu : 0xFFFFFFFFu;
    switch (next_random(rng) % 8u) {
    case 0: return 0u;
    case 1: return 1u;
    case 2: return max;
    case 3: return max - 1u;
    case 4: return (old + 1u) & max;
    case 5: return (old - 1u) & max;
    case 6: return (old ^ (1u << (next_random(rng) % (8u * width)))) & max;
    default: return next_random(rng) & max;
    }
}

/* A few field-sized edits at (mostly) aligned offsets; the header's file_size (bytes 8..11) is
 * put back most of the time so edits reach the structure behind the first check. */
static void mutate(uint8_t *data, uint32_t size, uint32_t *rng, char *log, size_t log_len)
{
    uint32_t edits = 1u + next_random(rng) % 3u, e, file_size = 0;
    size_t used = 0;
    log[0] = '\0';
    if (size >= 12u) {
        memcpy(&file_size, data + 8, 4);
    }
    for (e = 0; e < edits && size >= 4u; ++e) {
        uint32_t width = 1u << (next_random(rng) % 3u);
        uint32_t at = next_random(rng) % (size - width + 1u), old = 0, value;
        if (width > 1u && next_random(rng) % 4u != 0u) {
            at &= ~(width - 1u);
        }
        memcpy(&old, data + at, width);
        value = boundary_value(rng, old, width);
        memcpy(data + at, &value, width);
        if (used < log_len) {
            used += (size_t)snprintf(log + used, log_len - used, "%s@%u/%u:0x%x->0x%x", e ? " " : "", at, width, old,
                                     value);
        }
    }
    if (size >= 12u && next_random(rng) % 16u != 0u) {
        memcpy(data + 8, &file_size, 4);
    }
}

static int fuzz(const host_abi *ref, const host_abi *ours, unsigned seconds, uint32_t seed, const char *outdir,
                char **files, int n_files)
{
    uint8_t **seeds = malloc(sizeof *seeds * (size_t)n_files);
    uint32_t *sizes = malloc(sizeof *sizes * (size_t)n_files);
    unsigned long runs = 0, findings = 0, ref_refused = 0, ref_failed = 0, both_ok = 0, ours_stricter = 0,
                  ref_crashed = 0;
    uint32_t rng = seed ? seed : 1u;
    time_t end = time(NULL) + (time_t)seconds;
    int i;
    if (seeds == NULL || sizes == NULL) {
        return 2;
    }
    mkdir(outdir, 0777);
    for (i = 0; i < n_files; ++i) {
        seeds[i] = read_file(files[i], &sizes[i]);
    }
    while (time(NULL) < end) {
        uint32_t pick = next_random(&rng) % (uint32_t)n_files;
        uint32_t size = sizes[pick];
        uint8_t *plan = malloc(size ? size : 1u);
        char a[VERDICT_LEN], b[VERDICT_LEN], edits[160];
        memcpy(plan, seeds[pick], size);
        mutate(plan, size, &rng, edits, sizeof edits);
        verdict(ref, plan, size, a);
        verdict(ours, plan, size, b);
        ++runs;
        ref_refused += starts(a, "refuse");
        ref_failed += starts(a, "fail");
        ref_crashed += starts(a, "crash") || starts(a, "hang");
        both_ok += starts(a, "ok") && strcmp(a, b) == 0;
        ours_stricter += starts(a, "ok") && (starts(b, "refuse") || starts(b, "fail"));
        if (is_finding(a, b)) {
            char path[4096];
            FILE *f;
            ++findings;
            snprintf(path, sizeof path, "%s/finding-%lu.tgrs", outdir, findings);
            f = fopen(path, "wb");
            if (f != NULL) {
                fwrite(plan, 1, size, f);
                fclose(f);
            }
            printf("finding %s\t%s %s\treference: %s\tours: %s\n", path, files[pick], edits, a, b);
            fflush(stdout);
        }
        free(plan);
    }
    printf("{\"runs\": %lu, \"reference_refused\": %lu, \"reference_failed_run\": %lu, "
           "\"reference_crashed_or_hung\": %lu, \"both_ran_identical\": %lu, \"ours_refused_reference_ran\": %lu, "
           "\"findings\": %lu, \"seconds\": %u, \"seed\": %u}\n",
           runs, ref_refused, ref_failed, ref_crashed, both_ok, ours_stricter, findings, seconds, seed);
    return findings ? 1 : 0;
}

int main(int argc, char **argv)
{
    host_abi ref, ours;
    int i;
    if (argc < 4) {
        fprintf(stderr, "usage: diff_plan REF.so OURS.so FILE... | --fuzz SECONDS SEED OUTDIR FILE...\n");
        return 2;
    }
    bind_library(&ref, argv[1]);
    bind_library(&ours, argv[2]);
    if (strcmp(argv[3], "--fuzz") == 0) {
        if (argc < 8) {
            fprintf(stderr, "usage: diff_plan REF.so OURS.so --fuzz SECONDS SEED OUTDIR FILE...\n");
            return 2;
        }
        return fuzz(&ref, &ours, (unsigned)strtoul(argv[4], NULL, 10), (uint32_t)strtoul(argv[5], NULL, 10),
                    argv[6], argv + 7, argc - 7);
    }
    for (i = 3; i < argc; ++i) {
        uint32_t size;
        uint8_t *plan = read_file(argv[i], &size);
        char a[VERDICT_LEN], b[VERDICT_LEN];
        verdict(&ref, plan, size, a);
        verdict(&ours, plan, size, b);
        printf("%s\t%s\t%s\n", argv[i], a, b);
        fflush(stdout);
        free(plan);
    }
    return 0;
}
