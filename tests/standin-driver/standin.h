#ifndef CUHANDLE_STANDIN_H
#define CUHANDLE_STANDIN_H

/*
 * A CPU stand-in for the CUDA driver (libcuda) so that CI machines without a GPU exercise
 * cuhandle's native boundary. It exports every entry point cuhandle resolves
 * (rust/src/core/driver/api.rs) with the C signatures of cuda.h, keeps the driver's object model
 * (contexts, primary contexts, per-thread context stacks, streams, events, libraries, kernels,
 * allocations) in host memory, and simulates time so ordering and waits can be tested. Kernels do
 * not execute. It is stricter than the real driver: every handle is looked up in a registry
 * before use, so a stale or foreign pointer is an error code, never a crash. See README.md.
 *
 * This header is what the stand-in's files (one per section of the driver API) share: cuda.h's
 * types and codes as far as they are modelled, the object model, the lock and its macros, and the
 * functions and state one file uses of another (hidden: the library exports the entry points only).
 *
 * Build: cc -shared -fPIC -O1 -Wall -Wextra -Werror -pthread -o libcuda-standin.so *.c
 */
#define _GNU_SOURCE

#include <ctype.h>

#include <pthread.h>

#include <stdatomic.h>

#include <stdint.h>

#include <stdio.h>

#include <stdlib.h>

#include <string.h>

#include <time.h>

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;

typedef int CUdevice;

typedef unsigned long long CUdeviceptr;

typedef unsigned long long cuuint64_t;

typedef void *CUcontext, *CUstream, *CUevent, *CUlibrary, *CUkernel, *CUfunction, *CUgraph, *CUgraphExec, *CUgraphNode;

typedef void (*CUhostFn)(void *userData);

enum {
    SUCCESS = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, NOT_INITIALIZED = 3,
    NO_DEVICE = 100, INVALID_DEVICE = 101, INVALID_IMAGE = 200, INVALID_CONTEXT = 201,
    CONTEXT_ALREADY_CURRENT = 202, INVALID_PTX = 218, INVALID_HANDLE = 400, NOT_FOUND = 500,
    NOT_READY = 600, ILLEGAL_ADDRESS = 700, CONTEXT_IS_DESTROYED = 709, COOPERATIVE_LAUNCH_TOO_LARGE = 720,
    ILLEGAL_STATE = 401, NOT_SUPPORTED = 801, STREAM_CAPTURE_UNSUPPORTED = 900, STREAM_CAPTURE_INVALIDATED = 901,
    STREAM_CAPTURE_WRONG_THREAD = 908, INVALID_CLUSTER_SIZE = 912, UNKNOWN = 999,
    HOST_MEMORY_ALREADY_REGISTERED = 712, HOST_MEMORY_NOT_REGISTERED = 713,
    INVALID_RESOURCE_TYPE = 914, INVALID_RESOURCE_CONFIGURATION = 915, STREAM_DETACHED = 917
};

#define MAX_DEVICES 8

/* SMs per device: CUHANDLE_STANDIN_SMS, 1 to MAX_SMS, default an H200's 132. */
#define MAX_SMS 256

#define DEFAULT_SMS 132

#define STACK_DEPTH 64

#define MAX_PARAMS 512

#define TOTAL_MEMORY (8ull << 30)

#define ALLOC_ALIGN 256

/* Shared memory per block by default (48 KiB) and with opt-in (an H200's 227 KiB). */
#define DEFAULT_SHARED 49152

#define OPTIN_SHARED 232448

#define STREAM_LEGACY ((uintptr_t)0x1)

#define STREAM_PER_THREAD ((uintptr_t)0x2)

#define STREAM_NON_BLOCKING 0x1u

#define EVENT_DISABLE_TIMING 0x2u

/* Freed allocations up to this size are poisoned and quarantined, so their addresses are not
 * handed out again at once (a stale pointer then stays detectable); larger ones are freed. */
#define QUARANTINE_MAX_ALLOC (16u << 20)

#define QUARANTINE_MAX_ENTRIES 256

enum StreamKind { USER_STREAM, LEGACY_STREAM, PER_THREAD_STREAM };

struct Ctx;

struct Graph;

struct Green;

/* A set of a device's SMs (bit i: SM i). */
typedef struct {
    uint64_t bits[MAX_SMS / 64];
} SmSet;

typedef struct Stream {
    struct Ctx *ctx;
    unsigned flags;
    enum StreamKind kind;
    uint64_t thread;  /* owner thread of a per-thread stream */
    int64_t busy;     /* monotonic ns until which queued work runs */
    struct Graph *capture;   /* the graph being captured on this stream, or NULL */
    CUgraphNode capture_tail; /* cuStreamGetCaptureInfo's dependency array: the capture's last node */
    uint64_t capture_thread; /* the thread that began the capture */
    int capture_mode;        /* 0 global, 1 thread-local, 2 relaxed */
} Stream;

/* One recorded operation of a captured graph: a copy/memset (as `copy` takes it) or a launch. */
#define GRAPH_MAX_POINTER_ARGS 16
/* The argument bytes a recorded launch keeps, laid out as the kernel's parameters (g_last_params). */
#define GRAPH_PARAM_BYTES 256

typedef struct {
    int launch;
    int kind; /* enum CopyKind, for copies */
    CUdeviceptr dst, src;
    void *host;
    unsigned char fill;
    size_t n;
    int npointers; /* 8-byte launch arguments, to mark the allocations they point into as used */
    uint64_t pointers[GRAPH_MAX_POINTER_ARGS];
    uintptr_t id;  /* the node's handle (CUgraphNode), unique across graphs, kept by instantiation */
    int conditional;       /* a conditional node: 1 IF, 2 WHILE (CUgraphConditionalNodeType + 1), else 0 */
    unsigned cond_default; /* its condition's value at each launch */
    struct Graph **body;   /* its body graph, in an array of one that cuGraphAddNode hands out */
    struct Kernel *kernel; /* a launch's kernel, its grid and block, and its arguments' bytes */
    unsigned grid[3], block[3], shared;
    unsigned char params[GRAPH_PARAM_BYTES];
} GraphOp;

/* CUgraphNodeParams (CUDA 12.4) with its conditional member, CUDA_CONDITIONAL_NODE_PARAMS. */
typedef struct {
    unsigned type; /* CU_GRAPH_NODE_TYPE_CONDITIONAL: 13 */
    int reserved0[3];
    struct {
        uint64_t handle;
        unsigned kind; /* 0 IF, 1 WHILE */
        unsigned size;
        CUgraph *phGraph_out;
        CUcontext ctx;
    } conditional;
    long long rest[25];
    long long reserved2;
} GraphNodeParams;

/* CUDA_KERNEL_NODE_PARAMS_v2 (CUDA 12.0). */
typedef struct {
    CUfunction func;
    unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
    void **kernelParams, **extra;
    CUkernel kern;
    CUcontext ctx;
} KernelNodeParams;

/* A captured graph (template) or an instantiated one: the recorded operations, in order. */
typedef struct Graph {
    struct Ctx *ctx;
    int invalidated;
    int is_body; /* a conditional node's body: owned by the node, never in a registry */
    size_t n, cap;
    GraphOp *ops;
} Graph;

/* Contexts are never freed: a destroyed context's pointer stays safe to inspect. */
typedef struct Ctx {
    uint64_t id;
    int dev;
    int primary;
    int active;    /* user contexts: until destroyed; primary: retained (or reset while retained) */
    int retains;   /* primary contexts only */
    int sticky;    /* a sticky error code: every later call in the context returns it */
    int pending;   /* a sticky error the next synchronize reports (a detected use-after-free) */
    Stream legacy; /* the NULL / CU_STREAM_LEGACY stream */
    struct Green *green; /* the green context whose CUcontext this is (cuCtxFromGreenCtx), else NULL */
    int current_threads; /* threads whose stack has it on top (green.c counts a second one as a violation) */
} Ctx;

/* A green context (cuGreenCtxCreate): its own CUcontext limited to a set of SMs, and what the tests
 * read about it through the control channel. Never freed: a destroyed one stays safe to inspect. */
typedef struct Green {
    Ctx *ctx;
    int destroyed;
    SmSet sms;
    int sm_count;
    long streams;  /* streams made in it: cuGreenCtxStreamCreate, or cuStreamCreate with its CUcontext current */
    long launches; /* kernel launches queued on its streams (direct, and replayed from graphs) */
} Green;

typedef struct Event {
    Ctx *ctx;
    unsigned flags;
    int recorded;
    int64_t time;
} Event;

/* A stream-ordered memory pool (cuMemPoolCreate): byte counts only; its allocations are Allocs. */
typedef struct MemPool {
    int dev;
    int destroyed;         /* cuMemPoolDestroy was called; freed once nothing of it is in use */
    size_t used, cached;   /* handed out; freed and kept for reuse */
    size_t used_high, reserved_high;
    cuuint64_t threshold;  /* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: cached bytes beyond it go back at once */
} MemPool;

/* Page-locked host memory: a cuMemHostAlloc block (ours to free) or a range the caller registered. */
typedef struct HostBlock {
    uintptr_t base;
    size_t size;
    int registered;
} HostBlock;

typedef struct Alloc {
    uintptr_t base;
    size_t size;
    void *raw;
    Ctx *ctx;             /* NULL: a __managed__ variable, valid in every context */
    int64_t in_use_until; /* queued work referencing the allocation runs until then */
    void *library;        /* a library variable's storage: its library, else NULL */
    size_t variable;      /* ... and the variable's index in it */
    MemPool *pool;        /* the pool it came from (cuMemAllocFromPoolAsync), else NULL */
} Alloc;

enum ImageKind { IMAGE_FATBIN, IMAGE_CUBIN, IMAGE_PTX };

struct Library;

typedef struct Kernel {
    struct Library *lib;
    char *name;
    int nparams; /* -1: unknown (fatbin/cubin images are not parsed) */
    size_t *offsets, *sizes;
    size_t static_shared; /* the .shared declarations of its PTX body (CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) */
    int max_dynamic_shared[MAX_DEVICES]; /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES + 1; 0: the default */
    int non_portable_clusters[MAX_DEVICES]; /* CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED */
} Kernel;

/* A module-scope variable declared in the PTX: `.global` (__device__), `.const` (__constant__),
 * or `.global .attribute(.managed)` (__managed__). */
typedef struct Var {
    char *name;
    size_t size;
    int managed;
} Var;

typedef struct Library {
    enum ImageKind kind;
    int parsed; /* kernels and parameters known from PTX (the image's own or a fatbin's) */
    size_t nkernels;
    Kernel **kernels; /* PTX: every entry; fatbin/cubin: those looked up so far */
    size_t nvars;
    Var *vars;        /* from the PTX; storage is made per context on first lookup (managed: once) */
} Library;

typedef struct {
    void **items;
    size_t n, cap;
} Vec;

static inline void vec_push(Vec *v, void *p) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 16;
        void **items = realloc(v->items, cap * sizeof *items);
        if (!items) abort(); /* a test double that cannot track its objects must not go on */
        v->items = items;
        v->cap = cap;
    }
    v->items[v->n++] = p;
}

static inline int vec_has(const Vec *v, const void *p) {
    for (size_t i = 0; i < v->n; i++)
        if (v->items[i] == p) return 1;
    return 0;
}

static inline void vec_remove_at(Vec *v, size_t i) {
    v->items[i] = v->items[--v->n];
}

static inline void vec_remove(Vec *v, const void *p) {
    for (size_t i = 0; i < v->n; i++)
        if (v->items[i] == p) {
            vec_remove_at(v, i);
            return;
        }
}

#define LOCK() pthread_mutex_lock(&G)

#define UNLOCK() pthread_mutex_unlock(&G)

/* Every entry point that needs cuInit: locks, or returns NOT_INITIALIZED; then runs the queued
 * copies whose time has come, so that every call sees the memory as the GPU would have left it. */
#define ENTER()                     \
    do {                            \
        LOCK();                     \
        if (!g_initialised) {       \
            UNLOCK();               \
            return NOT_INITIALIZED; \
        }                           \
        run_due(now_ns());          \
    } while (0)

/* The result is computed before the unlock: RETURN(f(...)) runs f under the lock. A failure is
 * logged to the registered log callbacks after the unlock, on the calling thread (logs.c). */
#define RETURN(rc)                             \
    do {                                       \
        CUresult result_ = (rc);               \
        UNLOCK();                              \
        log_failure(__func__, result_);        \
        return result_;                        \
    } while (0)

enum CopyKind { HTOD, DTOH, DTOD, MEMSET };

/* A copy or memset that runs when its stream reaches it (only while simulated work keeps a stream
 * busy: with no work time every operation is due at once and runs inside its call). Copies with
 * page-locked host memory read and write it then, as DMA does: a caller that reuses the memory
 * before the stream got there sees the damage. A pageable source is read at the call (the driver
 * stages it before returning) and a pageable destination makes the call wait (so does the driver). */
typedef struct Deferred {
    int kind; /* enum CopyKind */
    CUdeviceptr dst, src;
    void *host;    /* page-locked memory, or the owned snapshot of a pageable source */
    int owns_host;
    unsigned char fill;
    size_t n;
    int64_t due;
} Deferred;

/* cuda.h's CUlaunchAttribute and CUlaunchConfig. */
typedef struct {
    int id;
    char pad[4];
    union {
        char bytes[64];
        int cooperative;
        struct { unsigned x, y, z; } clusterDim;
        void *align;
    } value;
} LaunchAttribute;

typedef struct {
    unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
    CUstream hStream;
    LaunchAttribute *attrs;
    unsigned numAttrs;
} LaunchConfig;

/* CUmemcpyAttributes of CUDA 12.8 (cuMemcpyBatchAsync): CUmemLocation is { type, id }. */
typedef struct {
    int type, id;
} MemLocation;
typedef struct {
    unsigned srcAccessOrder; /* CUmemcpySrcAccessOrder */
    MemLocation srcLocHint, dstLocHint;
    unsigned flags;
} CUmemcpyAttributes;
#define MEMCPY_SRC_ACCESS_ORDER_STREAM 1u
#define MEMCPY_SRC_ACCESS_ORDER_ANY 3u

/* Entry points that other entry points hand out (cuGetProcAddress). */
EXPORT CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset, size_t *paramSize);
EXPORT CUresult cuLibraryGetKernelCount(unsigned int *count, CUlibrary library);
EXPORT CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int numKernels, CUlibrary library);
EXPORT CUresult cuKernelGetName(const char **name, CUkernel kernel);
EXPORT CUresult cuKernelSetAttribute(int attrib, int val, CUkernel kernel, CUdevice dev);
EXPORT CUresult cuOccupancyMaxPotentialClusterSize(int *clusterSize, CUfunction f, const LaunchConfig *config);
EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
EXPORT CUresult cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                   CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, size_t *failIdx,
                                   CUstream hStream);
EXPORT CUresult cuModuleGetLoadingMode(int *mode);
EXPORT CUresult cuLogsUnregisterCallback(void *callback);
EXPORT CUresult cuGraphConditionalHandleCreate(uint64_t *handle, CUgraph hGraph, CUcontext ctx, unsigned defaultValue, unsigned flags);
EXPORT CUresult cuGraphAddNode(CUgraphNode *phNode, CUgraph hGraph, const CUgraphNode *deps, size_t n, GraphNodeParams *params);
EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph, const CUgraphNode *deps, const void *edges, size_t n, int mode);
EXPORT CUresult cuLogsRegisterCallback(void (*callbackFunc)(void *, int, char *, size_t), void *userData, void **callback_out);
EXPORT CUresult cuDeviceGetDevResource(CUdevice device, void *resource, int type);
EXPORT CUresult cuDevSmResourceSplitByCount(void *result, unsigned int *nbGroups, const void *input, void *remaining, unsigned int useFlags, unsigned int minCount);
EXPORT CUresult cuDevResourceGenerateDesc(void **phDesc, void *resources, unsigned int nbResources);
EXPORT CUresult cuGreenCtxCreate(void **phCtx, void *desc, CUdevice dev, unsigned int flags);
EXPORT CUresult cuCtxFromGreenCtx(CUcontext *pContext, void *hCtx);
EXPORT CUresult cuGreenCtxDestroy(void *hCtx);
EXPORT CUresult cuGreenCtxStreamCreate(CUstream *phStream, void *greenCtx, unsigned int flags, int priority);
EXPORT CUresult cuStreamGetGreenCtx(CUstream hStream, void **phCtx);

/* What the stand-in's files share; not exported from the library (only EXPORT entry points are). */
#pragma GCC visibility push(hidden)

/* state.c */
extern pthread_mutex_t G;
extern int g_initialised, g_devices, g_sms;
extern uint64_t g_init_thread; /* thread_id() of the thread whose cuInit initialised */
extern uint64_t g_next_id;
extern Ctx *g_primary[MAX_DEVICES];
extern Vec g_contexts; /* every context ever created (never freed) */
extern Vec g_streams; /* live user and per-thread streams */
extern Vec g_events; /* live events */
extern Vec g_libraries; /* loaded libraries */
extern Vec g_kernels; /* kernels of loaded libraries */
extern Vec g_allocs; /* live device allocations */
extern Vec g_host; /* live page-locked host blocks (HostBlock): cuMemHostAlloc'd and registered */
extern Vec g_deferred; /* copies and memsets queued to run when their stream reaches them (Deferred) */
extern Vec g_graphs; /* captured graphs (templates) */
extern Vec g_graph_execs; /* instantiated graphs */
extern Vec g_pools; /* memory pools not yet destroyed (or destroyed with allocations left) */
extern Vec g_greens; /* every green context ever created (never freed) */
extern Vec g_detached; /* user streams of destroyed green contexts, not yet destroyed themselves */
extern long g_green_violations, g_detached_calls;
extern SmSet g_last_launch_sms;
/* Call after the calling thread's stack changed, with the context that was on top before (or NULL):
 * keeps Ctx.current_threads and counts a green context made current on a second thread. */
void note_current_change(Ctx *before);
int sm_count_of(const Ctx *c);
void sm_set_all(SmSet *set, int n);
int sm_set_count(const SmSet *set);
extern int64_t g_work_ns;
extern _Thread_local int g_fail_next_sync;
extern _Thread_local int g_fail_allocs, g_fail_host_allocs;
extern long g_use_after_free, g_launches, g_out_of_bounds, g_bad_handles;
extern long g_batch_copies;
extern long g_launches_outside_current, g_memory_calls_outside_current;
/* Counts a memory call on `s` made while its context is not current (g_memory_calls_outside_current). */
void note_outside_current(const Stream *s);
extern long g_file_loads;
extern int g_last_launch_flags;
extern unsigned char g_last_params[4096];
extern _Thread_local Ctx *t_stack[STACK_DEPTH];
extern _Thread_local int t_depth;
uint64_t thread_id(void);
int64_t now_ns(void);
void sleep_until(int64_t t);
int64_t max64(int64_t a, int64_t b);
int env_int(const char *name, int fallback);
int driver_version(void);
/* Whether stream-ordered calls on a user stream need its context current: below driver 13000.
 * From 13000 they run in the stream's context whatever is current, as driver 580 does
 * (tests/bench/contextless_probe.cu). */
int stream_needs_current_context(void);
int ctx_dead(const Ctx *c);
int bad_handle(int rc);
int check_ctx(const void *p, Ctx **out);
int current_ctx(Ctx **out);
int resolve_stream(void *h, int same_as_current, Stream **out);
int64_t enqueue(Stream *s, int64_t work);
Alloc *find_range(Ctx *c, uintptr_t p, size_t n);
Alloc *find_base(uintptr_t p);
void retire_alloc(Alloc *a);
size_t live_bytes_of_device(int dev);
void pool_keep_within_threshold(MemPool *p);
void pool_release(MemPool *p, size_t bytes);
void release_resources(Ctx *c);
Ctx *new_ctx(int dev, int primary);
int check_device(CUdevice dev);
int sync_outcome(Ctx *c);

/* memory.c */
int allocate(Ctx *c, size_t bytes, Stream *s, CUdeviceptr *out);
HostBlock *pinned_block(const void *p, size_t n);
HostBlock *host_block_at(const void *p, int registered);
int count_host_blocks(int registered);

/* copies.c */
extern long g_deferred_runs; /* operations that ran after their call had returned */
void execute(int kind, CUdeviceptr dst, void *host, CUdeviceptr src, unsigned char fill, size_t n);
void run_due(int64_t t);
void wait_until(int64_t t);
void run_through_last_touching(uintptr_t base, size_t size, int host_side);
int copy(enum CopyKind kind, CUdeviceptr dst, void *host, CUdeviceptr src, unsigned char fill, size_t n, CUstream hStream, int wait);

/* images.c */
Kernel *new_kernel(Library *lib, const char *name, size_t name_len);
int parse_ptx(Library *lib, const char *text);
void parse_ptx_variables(Library *lib, const char *text);
char *fatbin_ptx(const unsigned char *b);

/* libraries.c */
int check_kernel(void *k);
int max_dynamic_shared(const Kernel *k, int dev);

/* launches.c */
void argument_use(Ctx *c, const void *arg, int64_t until);
int check_launch_shape(const struct Kernel *k, int dev, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                       unsigned sharedMemBytes);
void record_launch_arguments(GraphOp *op, const struct Kernel *k, void **kernelParams);
int launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                  unsigned sharedMemBytes, CUstream hStream, void **kernelParams, void **extra, int flags, uint64_t cluster_blocks);

/* contexts.c */
void drop_from_stack(Ctx *c);

/* streams.c */
int new_user_stream(Ctx *c, unsigned flags, CUstream *out);

/* devices.c */
Ctx *primary_retain(int dev);
void primary_release(int dev);

/* green.c */
void note_launch(Ctx *c);
Green *green_by_context_id(uint64_t id);
int green_shared_sms(const Green *g);
int sm_set_first(const SmSet *set);

/* control.c */
int control(int command, int arg, int *result);

/* logs.c */
void log_failure(const char *entry_point, CUresult rc);
EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr);

/* graphs.c */
int graph_record(Graph *g, const GraphOp *op);
Graph *graph_copy(const Graph *g);
void graph_free(Graph *g);
int capture_forbids_unsafe_call(void);
int capture_in_context_forbids_wait(Ctx *c);
int capture_forbids_context_wait(Ctx *c);

#pragma GCC visibility pop

#endif
