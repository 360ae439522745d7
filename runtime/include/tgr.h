/*
 * tgr: a portable C99 runtime for TiGrIS `.tgrs` plans (tigris-ml 0.12.1, schemas 2-10).
 *
 * The plan is read in place (zero copy, execute-in-place flash works). All memory is supplied
 * by the caller: a fast arena, a slow arena and a small workspace. The runtime never calls
 * malloc and keeps no global state, so several plans can run side by side in one program.
 *
 * Everything a kernel relies on is checked once by tgr_plan_load(); a plan this runtime cannot
 * execute exactly is refused there with a status code and a message naming the reason.
 */
#ifndef TGR_H
#define TGR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every arena allocation is rounded up to this many bytes. 32 reproduces the reference host
 * runtime's offsets and peaks exactly; 16 is the natural Cortex-M value (peaks can only drop). */
#ifndef TGR_TENSOR_ALIGN
#define TGR_TENSOR_ALIGN 32u
#endif

/* Build limits. A plan beyond them is refused at load time with TGR_ERR_LIMIT. */
#define TGR_MAX_TENSORS 512u
#define TGR_MAX_RANK 8u
#define TGR_MAX_STAGE_IO 16u

#define TGR_VERSION "0.1.0"

typedef enum tgr_status {
    TGR_OK = 0,
    TGR_ERR_ARGUMENT,       /* NULL pointer, wrong count or size from the caller */
    TGR_ERR_PLATFORM,       /* big-endian host */
    TGR_ERR_TRUNCATED,      /* buffer shorter than the header or than file_size */
    TGR_ERR_MAGIC,          /* not "TGRS" */
    TGR_ERR_VERSION,        /* schema outside 2..10 */
    TGR_ERR_SECTION,        /* directory or section extents inconsistent */
    TGR_ERR_RANGE,          /* an index or offset points outside its table or pool */
    TGR_ERR_TENSOR,         /* tensor record inconsistent (dtype, flags, shape vs size) */
    TGR_ERR_QUANT,          /* quantization entry invalid */
    TGR_ERR_WEIGHT,         /* weight entry missing, misplaced or of the wrong size */
    TGR_ERR_OP,             /* op record inconsistent with its tensors */
    TGR_ERR_STAGE,          /* stage table inconsistent */
    TGR_ERR_ATTRIBUTE,      /* op attribute table inconsistent */
    TGR_ERR_UNSUPPORTED,    /* valid plan, but something this runtime does not execute */
    TGR_ERR_LIMIT,          /* plan exceeds this build's limits */
    TGR_ERR_ARENA,          /* an arena or the workspace is too small */
    TGR_ERR_EXEC            /* failure while running (should not happen on a loaded plan) */
} tgr_status;

typedef struct tgr_error {
    tgr_status status;
    char message[160];
} tgr_error;

/* A validated view of a plan buffer. Filled by tgr_plan_load(); all pointers point into the
 * caller's buffer, which must stay valid and unchanged while the plan is used. */
typedef struct tgr_plan {
    const uint8_t *data;
    uint32_t size;
    uint32_t version;
    uint32_t budget;
    uint32_t flags;
    uint16_t num_tensors;
    uint16_t num_ops;
    uint16_t num_stages;
    uint16_t num_tile_plans;
    uint16_t num_weights;
    uint16_t num_quant;
    uint16_t num_attrs;
    uint16_t num_blocks;
    uint16_t model_io_off;
    uint8_t num_inputs;
    uint8_t num_outputs;
    uint8_t is_int8;
    const uint8_t *tensors;
    const uint8_t *ops;
    const uint8_t *stages;
    const uint8_t *tile_plans;
    const uint8_t *index_pool;
    uint32_t index_pool_count;
    const uint8_t *shape_pool;
    uint32_t shape_pool_count;
    const char *strings;
    uint32_t strings_len;
    const uint8_t *weight_entries;
    const uint8_t *weight_blob;
    uint32_t weight_blob_len;
    const uint8_t *quant_entries;
    const uint8_t *quant_data;
    uint32_t quant_data_count;
    const uint8_t *attr_entries;
    const uint8_t *attr_data;
    uint32_t attr_data_len;
    const uint8_t *block_entries;
    const uint8_t *block_blobs;
    uint32_t block_blobs_len;
    uint32_t weight_reserve;      /* fast bytes reserved for decompressed weight blocks */
    const uint8_t *graphs;        /* SEC_SUBGRAPHS entries (schema 10 control flow), or NULL */
    uint16_t num_graphs;          /* 0 without control flow: every stage is the main graph's */
    const uint8_t *state;         /* SEC_STATE (schema 10 state variables), or NULL */
    uint16_t num_state;
    uint32_t state_bytes;         /* the state buffer a session keeps them in */
} tgr_plan;

/* Element types: the dtype codes of a plan's tensor records and of tgr_io_info.dtype (the ONNX
 * TensorProto codes, which the plan format takes over). A plan's tensors are int8 but for the
 * few the loader allows otherwise (docs/plan-format.md#tensor-records); INT64 appears only as an
 * interface dtype, for int32 indices behind an ONNX interface. */
enum {
    TGR_DTYPE_FLOAT32 = 1, TGR_DTYPE_UINT8 = 2, TGR_DTYPE_INT8 = 3, TGR_DTYPE_INT16 = 5, TGR_DTYPE_INT32 = 6,
    TGR_DTYPE_INT64 = 7, TGR_DTYPE_BOOL = 9
};

/* One interface tensor as the caller sees it: interface dtype, storage-order extents. */
typedef struct tgr_io_info {
    const char *name;
    uint32_t bytes;               /* byte size in the interface dtype */
    uint8_t dtype;                /* TGR_DTYPE_*: FLOAT32, UINT8, INT8, INT32, INT64 or BOOL */
    uint8_t rank;
    int32_t dims[TGR_MAX_RANK];
    uint16_t tensor;              /* plan tensor index */
} tgr_io_info;

/* A bump allocator over caller memory with peak tracking. */
typedef struct tgr_pool {
    uint8_t *base;
    uint32_t size;
    uint32_t used;
    uint32_t floor;               /* resets return here; raised over persistent blocks */
    uint32_t peak;
} tgr_pool;

/* Execution events, laid out exactly as the host ABI's 48-byte trace record. */
typedef struct tgr_trace_event {
    uint8_t kind;
    uint8_t pool;
    uint8_t path;
    uint8_t pad0;
    uint16_t stage;
    uint16_t tensor;
    uint16_t op;
    uint16_t pad1;
    uint32_t offset;
    uint32_t src_offset;
    uint32_t bytes;
    int32_t row0;
    int32_t row1;
    int32_t col0;
    int32_t col1;
    uint32_t fast_used;
    uint32_t slow_used;
} tgr_trace_event;

enum {
    TGR_EV_STAGE_BEGIN = 1, TGR_EV_STAGE_END, TGR_EV_TILE_BEGIN, TGR_EV_LOAD, TGR_EV_SPILL,
    TGR_EV_ALLOC, TGR_EV_RESET, TGR_EV_MOVE, TGR_EV_WEIGHTS, TGR_EV_OP, TGR_EV_COPY
};
enum { TGR_POOL_FAST = 0, TGR_POOL_SLOW = 1, TGR_POOL_NONE = 0xFF };
enum { TGR_PATH_NORMAL = 0, TGR_PATH_TILED = 1, TGR_PATH_TILED_2D = 2, TGR_PATH_BY_INPUT = 3,
       TGR_PATH_TRANSPOSE = 4, TGR_PATH_ROWS = 5, TGR_PATH_RESHAPE = 6, TGR_PATH_CHAIN = 7, TGR_PATH_CONTROL = 8 };

typedef void (*tgr_trace_fn)(void *user, const tgr_trace_event *event);

/* Data movement of the last run, as the host ABI's counters report it. */
typedef struct tgr_counters {
    uint64_t load_bytes;
    uint64_t spill_bytes;
    uint64_t weight_bytes;
    uint64_t copy_bytes;
    uint32_t compactions;
    uint32_t tiles;
    uint32_t paths;               /* bit 1 << TGR_PATH_*: paths the run took or path selection asked about */
} tgr_counters;

/* Per-run state. Initialise with tgr_session_init(); fields are read-only for callers. */
typedef struct tgr_session {
    const tgr_plan *plan;
    tgr_pool fast;
    tgr_pool slow;
    uint8_t **tensor_ptr;         /* current address of each tensor, or NULL (workspace) */
    uint32_t *tensor_alloc;       /* rounded bytes of the allocation a tensor owns (workspace) */
    uint16_t *last_use;           /* per-tensor scratch for the stage being run (workspace) */
    uint16_t *origin;             /* per tensor: lowest-numbered tensor sharing its allocation */
    int32_t *region;              /* per tensor: rows [0],[1) and cols [2],[3) held by its buffer */
    int32_t *held;                /* per tensor: rows a line buffer kept from the previous tile */
    uint32_t workspace_bytes;
    uint32_t rehearsing;          /* tgr_session_init's allocation-only run: no kernels */
    uint8_t *state;               /* the state variables between runs (tgr_session_set_state) */
    tgr_counters counters;
    tgr_trace_fn trace;
    void *trace_user;
} tgr_session;

/* Workspace bytes tgr_session_init() needs for a plan with `num_tensors` tensors. Usable in
 * static array sizes; tgr_workspace_required() gives the same figure for a loaded plan. */
#define TGR_WORKSPACE_PER_TENSOR \
    ((uint32_t)(sizeof(uint8_t *) + 6u * sizeof(int32_t) + sizeof(uint32_t) + 2u * sizeof(uint16_t)))
#define TGR_WORKSPACE_BYTES(num_tensors) \
    ((uint32_t)(num_tensors) * TGR_WORKSPACE_PER_TENSOR + (uint32_t)sizeof(uint8_t *))

/* Validate `data` as a plan and fill `plan`. Nothing is copied. */
tgr_status tgr_plan_load(tgr_plan *plan, const void *data, uint32_t size, tgr_error *err);

/* Fill `plan` from a buffer that tgr_plan_load() has accepted before, byte for byte, without
 * validating it again: for firmware that first compares the plan's digest with the one the build
 * validated (`scons validate=digest`). Calling it on any other bytes is undefined. */
tgr_status tgr_plan_bind(tgr_plan *plan, const void *data, uint32_t size, tgr_error *err);

/* Interface tensors, in the model's declared order. */
uint32_t tgr_plan_io_count(const tgr_plan *plan, int is_output);
tgr_status tgr_plan_io_info(const tgr_plan *plan, int is_output, uint32_t index, tgr_io_info *info);

/* Name of the model (always kept in the plan). */
const char *tgr_plan_model_name(const tgr_plan *plan);

/* Fast arena the plan needs: header budget + decompressed-weight reserve. */
uint32_t tgr_fast_arena_required(const tgr_plan *plan);
uint32_t tgr_workspace_required(const tgr_plan *plan);

/* Bind a loaded plan to caller memory. Arenas need not be aligned; the usable part starts at
 * the first TGR_TENSOR_ALIGN boundary. Allocation does not depend on the data, so this rehearses
 * one inference's loads, spills and allocations without running a kernel: arenas the plan does
 * not fit (a stage's band or a slow allocation) are refused here (TGR_ERR_ARENA), never halfway
 * through tgr_run. */
tgr_status tgr_session_init(tgr_session *session, const tgr_plan *plan,
                            void *fast, uint32_t fast_bytes, void *slow, uint32_t slow_bytes,
                            void *workspace, uint32_t workspace_bytes, tgr_error *err);

/* State variables (schema 10 plans with LSTM/SVDF): tgr_state_required() bytes of caller
 * memory the session keeps them in from run to run, bound after tgr_session_init() and set to
 * their initial values; tgr_run() refuses a plan with state until it is bound. A run updates the
 * state only when it succeeds. tgr_session_reset_state() restores the initial values. */
uint32_t tgr_state_required(const tgr_plan *plan);
tgr_status tgr_session_set_state(tgr_session *session, void *state, uint32_t state_bytes, tgr_error *err);
void tgr_session_reset_state(tgr_session *session);

/* Report every execution event of the following runs to `fn` (NULL stops reporting). */
void tgr_session_set_trace(tgr_session *session, tgr_trace_fn fn, void *user);

/* One inference. Buffers are in interface order, dtype and storage axis order; sizes in bytes
 * must equal tgr_io_info.bytes. Peaks and counters describe this run only. */
tgr_status tgr_run(tgr_session *session,
                   const void *const *inputs, const uint32_t *input_bytes, uint32_t num_inputs,
                   void *const *outputs, const uint32_t *output_bytes, uint32_t num_outputs,
                   tgr_error *err);

/* Work profile. The opcode name of op `op` of a loaded plan, and its multiply-accumulates
 * (Conv, DepthwiseConv, ConvTranspose, Gemm and MatMul; 0 for every other op). */
const char *tgr_plan_op_name(const tgr_plan *plan, uint32_t op);
uint32_t tgr_plan_op_macs(const tgr_plan *plan, uint32_t op);

/* A runtime built with TGR_PROFILE=1 (the firmware's `profile=1`) calls these, which the
 * application defines, directly before (end 0) and after (end 1) each op's run and each
 * execution unit (a stage, or the stages of a chain). Other builds never call them. */
void tgr_profile_op(uint32_t op, int end);
void tgr_profile_unit(uint32_t stage, int end);

/* A runtime built with TGR_STAGE_MEMORY=1 (the firmware's `stage_memory=1`) calls this, which the
 * application defines, once at the end of each execution unit of tgr_run (never during
 * tgr_session_init's rehearsal): stages first..last (last > first only for a chain, whose member
 * stages run together) used at most `fast_bytes` of the fast arena and `slow_bytes` of the slow
 * arena. Each figure is the unit's high-water mark of the pool's bump offset from the arena start,
 * every allocation rounded to TGR_TENSOR_ALIGN: it counts the unit's tensors, tiles, accumulators
 * and decompressed weight blocks, anything a surrounding control stage keeps under the fast floor,
 * and in slow memory everything live there (model inputs, tensors crossing stage boundaries, the
 * unit's spilled outputs and slow overflow). It is the maximum of the host trace's `fast_used` /
 * `slow_used` from the unit's stage_begin to its stage_end (equal with TGR_TENSOR_ALIGN 32), never
 * above the unit's fast limit (the plan's peak_bytes, tiled_peak_bytes or chain need, plus LZ4
 * weights). A control stage's unit includes the units of the graphs it runs, which report first.
 * The run's own peaks (tgr_session.fast.peak, .slow.peak) are unchanged. Other builds never call
 * it. */
void tgr_stage_memory(uint32_t first, uint32_t last, uint32_t fast_bytes, uint32_t slow_bytes);

/* Short stable name of a status code, e.g. "TGR_ERR_UNSUPPORTED". */
const char *tgr_status_name(tgr_status status);

#ifdef __cplusplus
}
#endif

#endif /* TGR_H */
