/*
 * cuda_standin.c: a CPU stand-in for the CUDA driver (libcuda) so that CI machines without a GPU
 * exercise cuhandle's native boundary. It exports every entry point cuhandle resolves
 * (rust/src/core/driver/api.rs) with the C signatures of cuda.h, keeps the driver's object model
 * (contexts, primary contexts, per-thread context stacks, streams, events, libraries, kernels,
 * allocations) in host memory, and simulates time so ordering and waits can be tested. Kernels do
 * not execute. It is stricter than the real driver: every handle is looked up in a registry
 * before use, so a stale or foreign pointer is an error code, never a crash. See README.md.
 *
 * Build: cc -shared -fPIC -O1 -Wall -Wextra -Werror -pthread -o libcuda-standin.so cuda_standin.c
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
    HOST_MEMORY_ALREADY_REGISTERED = 712, HOST_MEMORY_NOT_REGISTERED = 713
};

#define MAX_DEVICES 8
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

/* ---------------------------------------------------------------- object model */

enum StreamKind { USER_STREAM, LEGACY_STREAM, PER_THREAD_STREAM };

struct Ctx;
struct Graph;

typedef struct Stream {
    struct Ctx *ctx;
    unsigned flags;
    enum StreamKind kind;
    uint64_t thread;  /* owner thread of a per-thread stream */
    int64_t busy;     /* monotonic ns until which queued work runs */
    struct Graph *capture;   /* the graph being captured on this stream, or NULL */
    uint64_t capture_thread; /* the thread that began the capture */
    int capture_mode;        /* 0 global, 1 thread-local, 2 relaxed */
} Stream;

/* One recorded operation of a captured graph: a copy/memset (as `copy` takes it) or a launch. */
#define GRAPH_MAX_POINTER_ARGS 16
typedef struct {
    int launch;
    int kind; /* enum CopyKind, for copies */
    CUdeviceptr dst, src;
    void *host;
    unsigned char fill;
    size_t n;
    int npointers; /* 8-byte launch arguments, to mark the allocations they point into as used */
    uint64_t pointers[GRAPH_MAX_POINTER_ARGS];
} GraphOp;

/* A captured graph (template) or an instantiated one: the recorded operations, in order. */
typedef struct Graph {
    struct Ctx *ctx;
    int invalidated;
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
} Ctx;

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

static void vec_push(Vec *v, void *p) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 16;
        void **items = realloc(v->items, cap * sizeof *items);
        if (!items) abort(); /* a test double that cannot track its objects must not go on */
        v->items = items;
        v->cap = cap;
    }
    v->items[v->n++] = p;
}

static int vec_has(const Vec *v, const void *p) {
    for (size_t i = 0; i < v->n; i++)
        if (v->items[i] == p) return 1;
    return 0;
}

static void vec_remove_at(Vec *v, size_t i) {
    v->items[i] = v->items[--v->n];
}

static void vec_remove(Vec *v, const void *p) {
    for (size_t i = 0; i < v->n; i++)
        if (v->items[i] == p) {
            vec_remove_at(v, i);
            return;
        }
}

/* ---------------------------------------------------------------- global state */

static pthread_mutex_t G = PTHREAD_MUTEX_INITIALIZER;
static int g_initialised, g_devices;
static uint64_t g_next_id = 1;
static Ctx *g_primary[MAX_DEVICES];
static Vec g_contexts;   /* every context ever created (never freed) */
static Vec g_streams;    /* live user and per-thread streams */
static Vec g_events;     /* live events */
static Vec g_libraries;  /* loaded libraries */
static Vec g_kernels;    /* kernels of loaded libraries */
static Vec g_allocs;     /* live device allocations */
static Vec g_host;       /* live page-locked host blocks (HostBlock): cuMemHostAlloc'd and registered */
static Vec g_deferred;   /* copies and memsets queued to run when their stream reaches them (Deferred) */
static Vec g_quarantine; /* freed, poisoned allocations not yet returned to malloc */
static Vec g_graphs;     /* captured graphs (templates) */
static Vec g_graph_execs; /* instantiated graphs */
static Vec g_pools;       /* memory pools not yet destroyed (or destroyed with allocations left) */
static int capture_forbids_unsafe_call(void);
static int capture_in_context_forbids_wait(Ctx *c);
static int64_t g_work_ns;
/* Injected faults belong to the thread that asked for them: the JVM's cleaner thread, freeing
 * objects that other tests leaked, must never consume a fault meant for a test. */
static _Thread_local int g_fail_next_sync;
static _Thread_local int g_fail_allocs, g_fail_host_allocs;
static long g_use_after_free, g_launches, g_out_of_bounds, g_bad_handles;
/* Launches accepted while their stream's context was not the current one (CUDA 13.0 drivers). */
static long g_launches_outside_current;
/* cuLibraryLoadFromFile calls: cuhandle hands the driver the bytes it checked instead (issue 26). */
static long g_file_loads;
/* The last launch: 1 = through cuLaunchKernelEx, 2 = cooperative, 4 = clustered; and its arguments laid
 * out at the kernel's parameter offsets (for kernels whose PTX was parsed). */
static int g_last_launch_flags;
static unsigned char g_last_params[4096];

static _Thread_local Ctx *t_stack[STACK_DEPTH];
static _Thread_local int t_depth;
static _Thread_local uint64_t t_thread_id;
static atomic_ullong g_thread_ids = 1;

static uint64_t thread_id(void) {
    if (!t_thread_id) t_thread_id = atomic_fetch_add(&g_thread_ids, 1);
    return t_thread_id;
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_until(int64_t t) {
    struct timespec ts = {.tv_sec = t / 1000000000, .tv_nsec = t % 1000000000};
    while (now_ns() < t && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
    }
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static int is_sticky(int code) {
    return code == 700 || code == 702 || code == 710 || (code >= 714 && code <= 719) || code == 721;
}

static int env_int(const char *name, int fallback) {
    const char *v = getenv(name);
    if (!v || !*v) return fallback;
    char *end;
    long x = strtol(v, &end, 10);
    return *end ? fallback : (int)x;
}

static int driver_version(void) { return env_int("CUHANDLE_STANDIN_VERSION", 12080); }

#define LOCK() pthread_mutex_lock(&G)
#define UNLOCK() pthread_mutex_unlock(&G)
static void run_due(int64_t t);
static void wait_until(int64_t t);
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
/* The result is computed before the unlock: RETURN(f(...)) runs f under the lock. */
#define RETURN(rc)                 \
    do {                           \
        CUresult result_ = (rc);   \
        UNLOCK();                  \
        return result_;            \
    } while (0)

static int ctx_dead(const Ctx *c) { return !c->active; }

static int bad_handle(int rc) {
    g_bad_handles++;
    return rc;
}

/* A context pointer the caller handed in: known (ever created) and alive. */
static int check_ctx(const void *p, Ctx **out) {
    if (!p || !vec_has(&g_contexts, p)) return bad_handle(INVALID_CONTEXT);
    Ctx *c = (Ctx *)p;
    if (ctx_dead(c)) return CONTEXT_IS_DESTROYED;
    *out = c;
    return SUCCESS;
}

/* The current context, alive and not poisoned by a sticky error. */
static int current_ctx(Ctx **out) {
    if (t_depth == 0) return INVALID_CONTEXT;
    Ctx *c = t_stack[t_depth - 1];
    if (ctx_dead(c)) return CONTEXT_IS_DESTROYED;
    if (c->sticky) return c->sticky;
    *out = c;
    return SUCCESS;
}

static Stream *per_thread_stream(Ctx *c) {
    uint64_t me = thread_id();
    for (size_t i = 0; i < g_streams.n; i++) {
        Stream *s = g_streams.items[i];
        if (s->kind == PER_THREAD_STREAM && s->ctx == c && s->thread == me) return s;
    }
    Stream *s = calloc(1, sizeof *s);
    if (!s) abort();
    s->ctx = c;
    s->kind = PER_THREAD_STREAM;
    s->thread = me;
    vec_push(&g_streams, s);
    return s;
}

/* Resolves a stream argument. The special handles mean the current context's streams; a user
 * stream is accepted when it is live, and, if `same_as_current`, belongs to the current context. */
static int resolve_stream(void *h, int same_as_current, Stream **out) {
    uintptr_t v = (uintptr_t)h;
    Ctx *c = NULL;
    if (v == 0 || v == STREAM_LEGACY || v == STREAM_PER_THREAD) {
        int rc = current_ctx(&c);
        if (rc) return rc;
        *out = v == STREAM_PER_THREAD ? per_thread_stream(c) : &c->legacy;
        return SUCCESS;
    }
    if (!vec_has(&g_streams, h) || ((Stream *)h)->kind != USER_STREAM) return bad_handle(INVALID_HANDLE);
    Stream *s = h;
    if (same_as_current) {
        int rc = current_ctx(&c);
        if (rc) return rc;
        if (s->ctx != c) return bad_handle(INVALID_HANDLE);
    } else if (s->ctx->sticky) {
        return s->ctx->sticky;
    }
    *out = s;
    return SUCCESS;
}

/* Queues `work` ns on `s` and returns when it completes. The legacy stream waits for every
 * blocking stream of its context; blocking streams (and per-thread ones) wait for the legacy one. */
static int64_t enqueue(Stream *s, int64_t work) {
    int64_t start = max64(now_ns(), s->busy);
    Ctx *c = s->ctx;
    if (s->kind == LEGACY_STREAM) {
        for (size_t i = 0; i < g_streams.n; i++) {
            Stream *o = g_streams.items[i];
            if (o->ctx == c && !(o->flags & STREAM_NON_BLOCKING)) start = max64(start, o->busy);
        }
    } else if (!(s->flags & STREAM_NON_BLOCKING)) {
        start = max64(start, c->legacy.busy);
    }
    s->busy = start + work;
    return s->busy;
}

/* The live allocation of `c` holding [p, p+n) (n may be 0), or NULL. */
static Alloc *find_range(Ctx *c, uintptr_t p, size_t n) {
    for (size_t i = 0; i < g_allocs.n; i++) {
        Alloc *a = g_allocs.items[i];
        if ((c == NULL || a->ctx == c || a->ctx == NULL) && p >= a->base && p - a->base <= a->size && n <= a->size - (p - a->base)) return a;
    }
    return NULL;
}

static Alloc *find_base(uintptr_t p) {
    for (size_t i = 0; i < g_allocs.n; i++) {
        Alloc *a = g_allocs.items[i];
        if (a->base == p) return a;
    }
    return NULL;
}

static void sweep_quarantine(void) {
    int64_t now = now_ns();
    for (size_t i = 0; i < g_quarantine.n;) {
        Alloc *a = g_quarantine.items[i];
        if (a->in_use_until <= now && g_quarantine.n > QUARANTINE_MAX_ENTRIES / 2) {
            free(a->raw);
            free(a);
            vec_remove_at(&g_quarantine, i);
        } else {
            i++;
        }
    }
    while (g_quarantine.n > QUARANTINE_MAX_ENTRIES) { /* bounded even while simulated work runs */
        Alloc *a = g_quarantine.items[0];
        free(a->raw);
        free(a);
        vec_remove_at(&g_quarantine, 0);
    }
}

static void run_through_last_touching(uintptr_t base, size_t size, int host_side);

/* Takes `a` out of the registry: nothing reaches its memory through the stand-in any more. Queued
 * copies that use it run first (its free waits for them, or counted them as a use after free). */
static void retire_alloc(Alloc *a) {
    run_through_last_touching(a->base, a->size, 0);
    vec_remove(&g_allocs, a);
    if (a->size <= QUARANTINE_MAX_ALLOC) {
        memset((void *)a->base, 0xDB, a->size);
        vec_push(&g_quarantine, a);
        sweep_quarantine();
    } else {
        free(a->raw);
        free(a);
    }
}

static size_t live_bytes_of_device(int dev) {
    size_t sum = 0;
    for (size_t i = 0; i < g_allocs.n; i++) {
        Alloc *a = g_allocs.items[i];
        if (a->ctx && a->ctx->dev == dev) sum += a->size;
    }
    for (size_t i = 0; i < g_pools.n; i++) { /* memory a pool keeps for reuse is not free either */
        MemPool *p = g_pools.items[i];
        if (p->dev == dev) sum += p->cached;
    }
    return sum;
}

/* Cached bytes beyond the pool's release threshold go back to the device. */
static void pool_keep_within_threshold(MemPool *p) {
    size_t room = p->threshold > p->used ? (size_t)(p->threshold - p->used) : 0;
    if (p->cached > room) p->cached = room;
}

/* A pool's allocation was freed: its bytes are cached for reuse; a destroyed pool goes once empty. */
static void pool_release(MemPool *p, size_t bytes) {
    p->used -= bytes;
    p->cached += bytes;
    pool_keep_within_threshold(p);
    if (p->destroyed && p->used == 0) {
        vec_remove(&g_pools, p);
        free(p);
    }
}

/* A context's memory, streams and events go with it (destroy, primary release to 0, reset). */
static void release_resources(Ctx *c) {
    for (size_t i = 0; i < g_allocs.n;) {
        Alloc *a = g_allocs.items[i];
        if (a->ctx == c) {
            if (a->pool) pool_release(a->pool, a->size);
            retire_alloc(a);
        } else {
            i++;
        }
    }
    for (size_t i = 0; i < g_streams.n;) {
        Stream *s = g_streams.items[i];
        if (s->ctx == c) vec_remove_at(&g_streams, i); /* never freed: stale handles stay inspectable */
        else i++;
    }
    for (size_t i = 0; i < g_events.n;) {
        Event *e = g_events.items[i];
        if (e->ctx == c) vec_remove_at(&g_events, i);
        else i++;
    }
    c->legacy.busy = 0;
    c->sticky = 0;
    c->pending = 0;
}

static Ctx *new_ctx(int dev, int primary) {
    Ctx *c = calloc(1, sizeof *c);
    if (!c) abort();
    c->id = g_next_id++;
    c->dev = dev;
    c->primary = primary;
    c->active = 1;
    c->legacy.ctx = c;
    c->legacy.kind = LEGACY_STREAM;
    vec_push(&g_contexts, c);
    return c;
}

static int check_device(CUdevice dev) { return dev < 0 || dev >= g_devices ? INVALID_DEVICE : SUCCESS; }

/* What a synchronize in `c` reports before waiting: injected faults, then a pending sticky error
 * (a detected use-after-free); either sticky code poisons the context from then on. */
static int sync_outcome(Ctx *c) {
    if (c->sticky) return c->sticky;
    int rc = SUCCESS;
    if (g_fail_next_sync) {
        rc = g_fail_next_sync;
        g_fail_next_sync = 0;
    } else if (c->pending) {
        rc = c->pending;
        c->pending = 0;
    }
    if (is_sticky(rc)) c->sticky = rc;
    return rc;
}

/* ---------------------------------------------------------------- errors */

static const struct {
    int code;
    const char *name, *text;
} ERRORS[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {202, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT", "context already current"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "device not ready"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
    {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
    {710, "CUDA_ERROR_ASSERT", "device-side assert triggered"},
    {712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "part or all of the requested memory range is already mapped"},
    {713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "pointer does not correspond to a registered memory region"},
    {714, "CUDA_ERROR_HARDWARE_STACK_ERROR", "hardware stack error"},
    {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered"},
    {716, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
    {717, "CUDA_ERROR_INVALID_ADDRESS_SPACE", "operation not supported on global/shared address space"},
    {718, "CUDA_ERROR_INVALID_PC", "invalid program counter"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {721, "CUDA_ERROR_TENSOR_MEMORY_LEAK", "tensor memory not completely freed"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static CUresult describe(CUresult code, const char **out, int text) {
    if (!out) return INVALID_VALUE;
    for (size_t i = 0; i < sizeof ERRORS / sizeof ERRORS[0]; i++)
        if (ERRORS[i].code == code) {
            *out = text ? ERRORS[i].text : ERRORS[i].name;
            return SUCCESS;
        }
    *out = NULL;
    return INVALID_VALUE;
}

EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr) { return describe(error, pStr, 0); }
EXPORT CUresult cuGetErrorString(CUresult error, const char **pStr) { return describe(error, pStr, 1); }

/* ---------------------------------------------------------------- init, version, devices */

EXPORT CUresult cuInit(unsigned int flags) {
    if (flags != 0) return INVALID_VALUE;
    int n = env_int("CUHANDLE_STANDIN_DEVICES", 1);
    if (n <= 0) return NO_DEVICE;
    LOCK();
    if (!g_initialised) {
        g_devices = n > MAX_DEVICES ? MAX_DEVICES : n;
        g_initialised = 1;
    }
    RETURN(SUCCESS);
}

EXPORT CUresult cuDriverGetVersion(int *driverVersion) {
    if (!driverVersion) return INVALID_VALUE;
    *driverVersion = driver_version();
    return SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    ENTER();
    if (!device) RETURN(INVALID_VALUE);
    if (check_device(ordinal)) RETURN(INVALID_DEVICE);
    *device = ordinal; /* handles equal ordinals */
    RETURN(SUCCESS);
}

EXPORT CUresult cuDeviceGetCount(int *count) {
    ENTER();
    if (!count) RETURN(INVALID_VALUE);
    *count = g_devices;
    RETURN(SUCCESS);
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
    ENTER();
    if (!name || len <= 0) RETURN(INVALID_VALUE);
    if (check_device(dev)) RETURN(INVALID_DEVICE);
    snprintf(name, (size_t)len, "cuhandle stand-in device %d", dev);
    RETURN(SUCCESS);
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
    ENTER();
    if (!bytes) RETURN(INVALID_VALUE);
    if (check_device(dev)) RETURN(INVALID_DEVICE);
    *bytes = TOTAL_MEMORY;
    RETURN(SUCCESS);
}

static int control(int command, int arg, int *result);

EXPORT CUresult cuDeviceGetAttribute(int *pi, int attrib, CUdevice dev) {
    ENTER();
    if (!pi) RETURN(INVALID_VALUE);
    if (check_device(dev)) RETURN(INVALID_DEVICE);
    if (attrib & 0x40000000) /* the tests' control channel, see control() */
        RETURN(control((attrib >> 20) & 0x3FF, attrib & 0xFFFFF, pi));
    if (attrib <= 0 || attrib > 200) RETURN(INVALID_VALUE);
    int v = 0; /* H200-like values; anything not listed is 0 */
    switch (attrib) {
    case 1: v = 1024; break;       /* MAX_THREADS_PER_BLOCK */
    case 2: v = 1024; break;       /* MAX_BLOCK_DIM_X */
    case 3: v = 1024; break;       /* MAX_BLOCK_DIM_Y */
    case 4: v = 64; break;         /* MAX_BLOCK_DIM_Z */
    case 5: v = 2147483647; break; /* MAX_GRID_DIM_X */
    case 6: v = 65535; break;      /* MAX_GRID_DIM_Y */
    case 7: v = 65535; break;      /* MAX_GRID_DIM_Z */
    case 8: v = DEFAULT_SHARED; break; /* MAX_SHARED_MEMORY_PER_BLOCK */
    case 16: v = 132; break;       /* MULTIPROCESSOR_COUNT */
    case 75: v = env_int("CUHANDLE_STANDIN_CC", 90) / 10; break; /* COMPUTE_CAPABILITY_MAJOR */
    case 76: v = env_int("CUHANDLE_STANDIN_CC", 90) % 10; break; /* COMPUTE_CAPABILITY_MINOR */
    case 95: v = env_int("CUHANDLE_STANDIN_COOPERATIVE", 1); break; /* COOPERATIVE_LAUNCH */
    case 97: v = OPTIN_SHARED; break; /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
    case 115: v = env_int("CUHANDLE_STANDIN_POOLS", 1); break; /* MEMORY_POOLS_SUPPORTED */
    case 120: v = env_int("CUHANDLE_STANDIN_CC", 90) >= 90; break; /* CLUSTER_LAUNCH */
    default: v = 0;
    }
    *pi = v;
    RETURN(SUCCESS);
}

/* ---------------------------------------------------------------- primary contexts */

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
    ENTER();
    if (!pctx) RETURN(INVALID_VALUE);
    if (check_device(dev)) RETURN(INVALID_DEVICE);
    Ctx *c = g_primary[dev];
    if (!c) {
        c = g_primary[dev] = new_ctx(dev, 1);
    } else if (!c->active) { /* reactivated: same pointer, new id, as the real driver does */
        c->active = 1;
        c->id = g_next_id++;
    }
    c->retains++;
    *pctx = c;
    RETURN(SUCCESS);
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
    ENTER();
    if (check_device(dev)) RETURN(INVALID_DEVICE);
    Ctx *c = g_primary[dev];
    if (!c || c->retains == 0) RETURN(INVALID_CONTEXT);
    if (--c->retains == 0) {
        release_resources(c);
        c->active = 0;
    }
    RETURN(SUCCESS);
}

EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
    ENTER();
    if (!flags || !active) RETURN(INVALID_VALUE);
    if (check_device(dev)) RETURN(INVALID_DEVICE);
    *flags = 0;
    *active = g_primary[dev] && g_primary[dev]->active;
    RETURN(SUCCESS);
}

/* The real driver destroys the primary context and recreates it at the next use; here it keeps
 * its pointer, loses its resources and gets a new id, and stays active iff it is still retained. */
EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
    ENTER();
    if (check_device(dev)) RETURN(INVALID_DEVICE);
    Ctx *c = g_primary[dev];
    if (c) {
        release_resources(c);
        c->id = g_next_id++;
        c->active = c->retains > 0;
    }
    RETURN(SUCCESS);
}

/* ---------------------------------------------------------------- contexts and the thread's stack */

EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) {
    ENTER();
    (void)flags;
    if (!pctx) RETURN(INVALID_VALUE);
    if (check_device(dev)) RETURN(INVALID_DEVICE);
    if (t_depth == STACK_DEPTH) RETURN(INVALID_VALUE);
    Ctx *c = new_ctx(dev, 0);
    t_stack[t_depth++] = c;
    *pctx = c;
    RETURN(SUCCESS);
}

EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) {
    ENTER();
    Ctx *c;
    int rc = check_ctx(ctx, &c);
    if (rc) RETURN(rc);
    if (c->primary) RETURN(INVALID_CONTEXT); /* primary contexts are released, not destroyed */
    release_resources(c);
    c->active = 0;
    /* Like the driver, only the calling thread's stack loses it; other threads that still have
     * it current get CONTEXT_IS_DESTROYED from every call. */
    int j = 0;
    for (int i = 0; i < t_depth; i++)
        if (t_stack[i] != c) t_stack[j++] = t_stack[i];
    t_depth = j;
    RETURN(SUCCESS);
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx) {
    ENTER();
    if (!pctx) RETURN(INVALID_VALUE);
    *pctx = t_depth ? t_stack[t_depth - 1] : NULL;
    RETURN(SUCCESS);
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
    ENTER();
    if (!ctx) {
        if (t_depth) t_depth--;
        RETURN(SUCCESS);
    }
    Ctx *c;
    int rc = check_ctx(ctx, &c); /* stricter than the driver, which accepts a dead one and crashes later */
    if (rc) RETURN(rc);
    if (t_depth == 0) t_depth = 1;
    t_stack[t_depth - 1] = c;
    RETURN(SUCCESS);
}

EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
    ENTER();
    Ctx *c;
    int rc = check_ctx(ctx, &c);
    if (rc) RETURN(rc);
    if (t_depth == STACK_DEPTH) RETURN(INVALID_VALUE);
    t_stack[t_depth++] = c;
    RETURN(SUCCESS);
}

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx) {
    ENTER();
    if (t_depth == 0) RETURN(INVALID_CONTEXT);
    Ctx *c = t_stack[--t_depth];
    if (pctx) *pctx = c;
    RETURN(SUCCESS);
}

EXPORT CUresult cuCtxGetDevice(CUdevice *device) {
    ENTER();
    if (!device) RETURN(INVALID_VALUE);
    Ctx *c;
    int rc = current_ctx(&c);
    if (rc) RETURN(rc);
    *device = c->dev;
    RETURN(SUCCESS);
}

EXPORT CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId) {
    ENTER();
    if (!ctxId) RETURN(INVALID_VALUE);
    if (!ctx) { /* NULL: the current context */
        if (!t_depth) RETURN(INVALID_CONTEXT);
        ctx = t_stack[t_depth - 1];
    }
    if (!vec_has(&g_contexts, ctx)) RETURN(bad_handle(INVALID_CONTEXT));
    Ctx *c = ctx;
    if (ctx_dead(c)) RETURN(CONTEXT_IS_DESTROYED);
    *ctxId = c->id;
    RETURN(SUCCESS);
}

EXPORT CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version) {
    ENTER();
    if (!version) RETURN(INVALID_VALUE);
    Ctx *c;
    int rc = ctx ? check_ctx(ctx, &c) : current_ctx(&c);
    if (rc) RETURN(rc);
    *version = 3020; /* what every CUDA 4.0+ driver reports */
    RETURN(SUCCESS);
}

EXPORT CUresult cuCtxSynchronize(void) {
    ENTER();
    Ctx *c;
    int rc = current_ctx(&c);
    if (rc) RETURN(rc);
    if ((rc = capture_forbids_unsafe_call())) RETURN(rc);
    if ((rc = capture_in_context_forbids_wait(c))) RETURN(rc);
    rc = sync_outcome(c);
    if (rc) RETURN(rc);
    int64_t until = c->legacy.busy;
    for (size_t i = 0; i < g_streams.n; i++) {
        Stream *s = g_streams.items[i];
        if (s->ctx == c) until = max64(until, s->busy);
    }
    UNLOCK();
    wait_until(until);
    return SUCCESS;
}

/* ---------------------------------------------------------------- streams */

EXPORT CUresult cuStreamCreate(CUstream *phStream, unsigned int flags) {
    ENTER();
    if (!phStream || (flags & ~STREAM_NON_BLOCKING)) RETURN(INVALID_VALUE);
    Ctx *c;
    int rc = current_ctx(&c);
    if (rc) RETURN(rc);
    Stream *s = calloc(1, sizeof *s);
    if (!s) RETURN(OUT_OF_MEMORY);
    s->ctx = c;
    s->flags = flags;
    s->kind = USER_STREAM;
    vec_push(&g_streams, s);
    *phStream = s;
    RETURN(SUCCESS);
}

EXPORT CUresult cuStreamDestroy_v2(CUstream hStream) {
    ENTER();
    if (!vec_has(&g_streams, hStream) || ((Stream *)hStream)->kind != USER_STREAM) RETURN(bad_handle(INVALID_HANDLE));
    vec_remove(&g_streams, hStream); /* queued work still completes; the struct is never freed */
    RETURN(SUCCESS);
}

EXPORT CUresult cuStreamSynchronize(CUstream hStream) {
    ENTER();
    Stream *s;
    int rc = resolve_stream(hStream, 0, &s);
    if (rc) RETURN(rc);
    if (s->capture) {
        s->capture->invalidated = 1;
        RETURN(STREAM_CAPTURE_UNSUPPORTED);
    }
    if ((rc = capture_forbids_unsafe_call())) RETURN(rc);
    rc = sync_outcome(s->ctx);
    if (rc) RETURN(rc);
    int64_t until = s->busy;
    UNLOCK(); /* never sleep holding the lock: other threads keep working meanwhile */
    wait_until(until);
    return SUCCESS;
}

EXPORT CUresult cuStreamQuery(CUstream hStream) {
    ENTER();
    Stream *s;
    int rc = resolve_stream(hStream, 0, &s);
    if (rc) RETURN(rc);
    RETURN(s->busy > now_ns() ? NOT_READY : SUCCESS);
}

EXPORT CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx) {
    ENTER();
    if (!pctx) RETURN(INVALID_VALUE);
    Stream *s;
    int rc = resolve_stream(hStream, 0, &s);
    if (rc) RETURN(rc);
    *pctx = s->ctx;
    RETURN(SUCCESS);
}

EXPORT CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int flags) {
    ENTER();
    (void)flags;
    Stream *s;
    int rc = resolve_stream(hStream, 0, &s);
    if (rc) RETURN(rc);
    if (!vec_has(&g_events, hEvent)) RETURN(bad_handle(INVALID_HANDLE));
    Event *e = hEvent;
    if (e->recorded) s->busy = max64(s->busy, e->time);
    RETURN(SUCCESS);
}

typedef struct {
    CUhostFn fn;
    void *data;
    int64_t at;
} HostCall;

static void *host_call_thread(void *arg) {
    HostCall *call = arg;
    wait_until(call->at);
    call->fn(call->data);
    free(call);
    return NULL;
}

EXPORT CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData) {
    ENTER();
    if (!fn) RETURN(INVALID_VALUE);
    Stream *s;
    int rc = resolve_stream(hStream, 1, &s);
    if (rc) RETURN(rc);
    HostCall *call = malloc(sizeof *call);
    if (!call) RETURN(OUT_OF_MEMORY);
    call->fn = fn;
    call->data = userData;
    call->at = enqueue(s, 0);
    pthread_t t;
    if (pthread_create(&t, NULL, host_call_thread, call) != 0) {
        free(call);
        RETURN(OUT_OF_MEMORY);
    }
    pthread_detach(t);
    RETURN(SUCCESS);
}

/* ---------------------------------------------------------------- events */

EXPORT CUresult cuEventCreate(CUevent *phEvent, unsigned int flags) {
    ENTER();
    if (!phEvent || (flags & ~0xFu)) RETURN(INVALID_VALUE);
    Ctx *c;
    int rc = current_ctx(&c);
    if (rc) RETURN(rc);
    Event *e = calloc(1, sizeof *e);
    if (!e) RETURN(OUT_OF_MEMORY);
    e->ctx = c;
    e->flags = flags;
    vec_push(&g_events, e);
    *phEvent = e;
    RETURN(SUCCESS);
}

EXPORT CUresult cuEventDestroy_v2(CUevent hEvent) {
    ENTER();
    if (!vec_has(&g_events, hEvent)) RETURN(bad_handle(INVALID_HANDLE));
    vec_remove(&g_events, hEvent); /* never freed: a stale handle stays detectable */
    RETURN(SUCCESS);
}

EXPORT CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
    ENTER();
    if (!vec_has(&g_events, hEvent)) RETURN(bad_handle(INVALID_HANDLE));
    Event *e = hEvent;
    Stream *s;
    int rc = resolve_stream(hStream, 0, &s);
    if (rc) RETURN(rc);
    if (s->ctx != e->ctx) RETURN(bad_handle(INVALID_HANDLE));
    e->time = enqueue(s, 0);
    e->recorded = 1;
    RETURN(SUCCESS);
}

EXPORT CUresult cuEventQuery(CUevent hEvent) {
    ENTER();
    if (!vec_has(&g_events, hEvent)) RETURN(bad_handle(INVALID_HANDLE));
    Event *e = hEvent;
    if (e->ctx->sticky) RETURN(e->ctx->sticky);
    RETURN(e->recorded && e->time > now_ns() ? NOT_READY : SUCCESS);
}

EXPORT CUresult cuEventSynchronize(CUevent hEvent) {
    ENTER();
    if (!vec_has(&g_events, hEvent)) RETURN(bad_handle(INVALID_HANDLE));
    Event *e = hEvent;
    int rc = capture_forbids_unsafe_call();
    if (rc) RETURN(rc);
    rc = sync_outcome(e->ctx);
    if (rc) RETURN(rc);
    int64_t until = e->recorded ? e->time : 0;
    UNLOCK();
    wait_until(until);
    return SUCCESS;
}

EXPORT CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
    ENTER();
    if (!pMilliseconds) RETURN(INVALID_VALUE);
    if (!vec_has(&g_events, hStart) || !vec_has(&g_events, hEnd)) RETURN(bad_handle(INVALID_HANDLE));
    Event *a = hStart, *b = hEnd;
    if (!a->recorded || !b->recorded || ((a->flags | b->flags) & EVENT_DISABLE_TIMING)) RETURN(INVALID_HANDLE);
    int64_t now = now_ns();
    if (a->time > now || b->time > now) RETURN(NOT_READY);
    *pMilliseconds = (float)((double)(b->time - a->time) / 1e6);
    RETURN(SUCCESS);
}

/* ---------------------------------------------------------------- memory */

static int allocate(Ctx *c, size_t bytes, Stream *s, CUdeviceptr *out) {
    if (bytes == 0) return INVALID_VALUE;
    if (g_fail_allocs > 0) {
        g_fail_allocs--;
        return OUT_OF_MEMORY;
    }
    if (bytes > TOTAL_MEMORY - live_bytes_of_device(c->dev)) return OUT_OF_MEMORY;
    Alloc *a = calloc(1, sizeof *a);
    /* calloc: large blocks come from fresh zero pages that are only touched when written */
    void *raw = a ? calloc(1, bytes + ALLOC_ALIGN) : NULL;
    if (!raw) {
        free(a);
        return OUT_OF_MEMORY;
    }
    a->raw = raw;
    a->base = ((uintptr_t)raw + ALLOC_ALIGN - 1) & ~(uintptr_t)(ALLOC_ALIGN - 1);
    a->size = bytes;
    a->ctx = c;
    a->in_use_until = s ? enqueue(s, 0) : 0;
    vec_push(&g_allocs, a);
    *out = a->base;
    return SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
    ENTER();
    if (!dptr) RETURN(INVALID_VALUE);
    Ctx *c;
    int rc = current_ctx(&c);
    if (rc) RETURN(rc);
    RETURN(allocate(c, bytesize, NULL, dptr));
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
    ENTER();
    if (!dptr) RETURN(INVALID_VALUE);
    Stream *s;
    int rc = resolve_stream(hStream, 1, &s);
    if (rc) RETURN(rc);
    RETURN(allocate(s->ctx, bytesize, s, dptr));
}

/* Like the real cuMemFree (and cudaFree), waits until work that uses the allocation is done. */
EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
    ENTER();
    Ctx *c;
    int rc = current_ctx(&c);
    if (rc) RETURN(rc);
    if ((rc = capture_forbids_unsafe_call())) RETURN(rc);
    if ((rc = capture_in_context_forbids_wait(c))) RETURN(rc);
    Alloc *a = find_base((uintptr_t)dptr);
    if (!a) RETURN(INVALID_VALUE);
    if (a->pool) pool_release(a->pool, a->size);
    int64_t until = a->in_use_until;
    retire_alloc(a);
    UNLOCK();
    wait_until(until);
    return SUCCESS;
}

/* Stream-ordered: the free happens when `hStream` reaches it. Work on another stream that still
 * uses the allocation then is a use-after-free: the call succeeds (the driver cannot tell either)
 * and the context's next synchronize reports ILLEGAL_ADDRESS. */
EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
    ENTER();
    Stream *s;
    int rc = resolve_stream(hStream, 1, &s);
    if (rc) RETURN(rc);
    Alloc *a = find_base((uintptr_t)dptr);
    if (!a) RETURN(INVALID_VALUE);
    int64_t at = enqueue(s, 0);
    if (a->in_use_until > at) {
        g_use_after_free++;
        a->ctx->pending = ILLEGAL_ADDRESS;
    }
    a->in_use_until = max64(a->in_use_until, at);
    if (a->pool) pool_release(a->pool, a->size);
    retire_alloc(a);
    RETURN(SUCCESS);
}

/* ---------------------------------------------------------------- memory pools */

/* CUmemPoolProps of cuda.h (12.0 layout). */
typedef struct {
    int allocType, handleTypes, locationType, locationId;
    void *win32SecurityAttributes;
    unsigned char reserved[64];
} PoolProps;

static int check_pool(void *p, MemPool **out) {
    if (!p || !vec_has(&g_pools, p) || ((MemPool *)p)->destroyed) return bad_handle(INVALID_VALUE);
    *out = p;
    return SUCCESS;
}

EXPORT CUresult cuMemPoolCreate(void **pool, const PoolProps *props) {
    ENTER();
    if (!pool || !props) RETURN(INVALID_VALUE);
    /* pinned device memory on an existing device, no export handles: what cuhandle asks for */
    if (props->allocType != 1 || props->handleTypes != 0 || props->locationType != 1 || check_device(props->locationId)) RETURN(INVALID_VALUE);
    if (!env_int("CUHANDLE_STANDIN_POOLS", 1)) RETURN(NOT_SUPPORTED);
    MemPool *p = calloc(1, sizeof *p);
    if (!p) RETURN(OUT_OF_MEMORY);
    p->dev = props->locationId;
    vec_push(&g_pools, p);
    *pool = p;
    RETURN(SUCCESS);
}

EXPORT CUresult cuMemPoolDestroy(void *pool) {
    ENTER();
    MemPool *p;
    int rc = check_pool(pool, &p);
    if (rc) RETURN(rc);
    p->destroyed = 1; /* allocations still out keep it until they are freed */
    p->cached = 0;
    if (p->used == 0) {
        vec_remove(&g_pools, p);
        free(p);
    }
    RETURN(SUCCESS);
}

EXPORT CUresult cuMemPoolSetAttribute(void *pool, int attr, void *value) {
    ENTER();
    MemPool *p;
    int rc = check_pool(pool, &p);
    if (rc) RETURN(rc);
    if (!value) RETURN(INVALID_VALUE);
    switch (attr) {
    case 1: case 2: case 3: RETURN(SUCCESS); /* the reuse policies: every reuse is allowed here */
    case 4:
        p->threshold = *(cuuint64_t *)value;
        pool_keep_within_threshold(p);
        RETURN(SUCCESS);
    default: RETURN(INVALID_VALUE);
    }
}

EXPORT CUresult cuMemPoolGetAttribute(void *pool, int attr, void *value) {
    ENTER();
    MemPool *p;
    int rc = check_pool(pool, &p);
    if (rc) RETURN(rc);
    if (!value) RETURN(INVALID_VALUE);
    cuuint64_t *v = value;
    switch (attr) {
    case 4: *v = p->threshold; break;
    case 5: *v = p->used + p->cached; break;
    case 6: *v = p->reserved_high; break;
    case 7: *v = p->used; break;
    case 8: *v = p->used_high; break;
    default: RETURN(INVALID_VALUE);
    }
    RETURN(SUCCESS);
}

EXPORT CUresult cuMemPoolTrimTo(void *pool, size_t minBytesToKeep) {
    ENTER();
    MemPool *p;
    int rc = check_pool(pool, &p);
    if (rc) RETURN(rc);
    size_t room = minBytesToKeep > p->used ? minBytesToKeep - p->used : 0;
    if (p->cached > room) p->cached = room;
    RETURN(SUCCESS);
}

EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, void *pool, CUstream hStream) {
    ENTER();
    if (!dptr) RETURN(INVALID_VALUE);
    Stream *s;
    int rc = resolve_stream(hStream, 1, &s);
    if (rc) RETURN(rc);
    MemPool *p;
    if ((rc = check_pool(pool, &p))) RETURN(rc);
    if (p->dev != s->ctx->dev) RETURN(INVALID_VALUE);
    size_t reused = p->cached < bytesize ? p->cached : bytesize;
    p->cached -= reused; /* so that the device-wide count below sees the reused bytes as free */
    rc = allocate(s->ctx, bytesize, s, dptr);
    if (rc) {
        p->cached += reused;
        RETURN(rc);
    }
    Alloc *a = find_base((uintptr_t)*dptr);
    a->pool = p;
    p->used += bytesize;
    if (p->used > p->used_high) p->used_high = p->used;
    if (p->used + p->cached > p->reserved_high) p->reserved_high = p->used + p->cached;
    RETURN(SUCCESS);
}

EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
    ENTER();
    if (!free_bytes || !total) RETURN(INVALID_VALUE);
    Ctx *c;
    int rc = current_ctx(&c);
    if (rc) RETURN(rc);
    *total = TOTAL_MEMORY;
    *free_bytes = TOTAL_MEMORY - live_bytes_of_device(c->dev);
    RETURN(SUCCESS);
}

/* A device range of the current context, or INVALID_VALUE counted as out of bounds. */
static int device_range(Ctx *c, CUdeviceptr p, size_t n, Alloc **out) {
    Alloc *a = find_range(c, (uintptr_t)p, n);
    if (!a) {
        g_out_of_bounds++;
        return INVALID_VALUE;
    }
    *out = a;
    return SUCCESS;
}

enum CopyKind { HTOD, DTOH, DTOD, MEMSET };

static int graph_record(Graph *g, const GraphOp *op) {
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 16;
        GraphOp *ops = realloc(g->ops, cap * sizeof *ops);
        if (!ops) return OUT_OF_MEMORY;
        g->ops = ops;
        g->cap = cap;
    }
    g->ops[g->n++] = *op;
    return SUCCESS;
}

/* Thread-local and global captures forbid the capturing thread's unsafe calls (synchronise, free):
 * like the driver, the call fails and the capture is invalidated. Returns the code to fail with. */
static int capture_forbids_unsafe_call(void) {
    int rc = SUCCESS;
    for (size_t i = 0; i < g_streams.n; i++) {
        Stream *o = g_streams.items[i];
        if (o->capture && o->capture_mode != 2 && o->capture_thread == thread_id()) {
            o->capture->invalidated = 1;
            rc = STREAM_CAPTURE_UNSUPPORTED;
        }
    }
    return rc;
}

/* A context-wide wait (cuCtxSynchronize, the implicit one of cuMemFree) would wait for a stream that
 * is being captured, from whatever thread: like the driver, it fails and the capture is invalidated
 * (seen on driver 580: a free on one thread broke another thread's capture). */
static int capture_in_context_forbids_wait(Ctx *c) {
    int rc = SUCCESS;
    for (size_t i = 0; i < g_streams.n; i++) {
        Stream *o = g_streams.items[i];
        if (o->ctx == c && o->capture && o->capture_mode != 2) {
            o->capture->invalidated = 1;
            rc = STREAM_CAPTURE_UNSUPPORTED;
        }
    }
    return rc;
}

/* Copies at once (memmove); the stream is busy for the simulated work time and the allocations
 * count as in use until then. Every device range must lie inside one allocation of the context. */

/* ---------------------------------------------------------------- page-locked host memory */

/* The page-locked block holding [p, p+n), or NULL: pageable memory. */
static HostBlock *pinned_block(const void *p, size_t n) {
    uintptr_t a = (uintptr_t)p;
    for (size_t i = 0; i < g_host.n; i++) {
        HostBlock *b = g_host.items[i];
        if (a >= b->base && a - b->base <= b->size && n <= b->size - (a - b->base)) return b;
    }
    return NULL;
}

/* The block that starts at p, allocated (registered = 0) or registered (1), or NULL. */
static HostBlock *host_block_at(const void *p, int registered) {
    for (size_t i = 0; i < g_host.n; i++) {
        HostBlock *b = g_host.items[i];
        if (b->base == (uintptr_t)p && b->registered == registered) return b;
    }
    return NULL;
}

static int count_host_blocks(int registered) {
    int n = 0;
    for (size_t i = 0; i < g_host.n; i++)
        if (((HostBlock *)g_host.items[i])->registered == registered) n++;
    return n;
}

/* ---------------------------------------------------------------- copies in stream time */

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

static long g_deferred_runs; /* operations that ran after their call had returned */

static void execute(int kind, CUdeviceptr dst, void *host, CUdeviceptr src, unsigned char fill, size_t n) {
    void *to = kind == DTOH ? host : (void *)(uintptr_t)dst;
    if (kind == MEMSET) memset(to, fill, n);
    else memmove(to, kind == HTOD ? host : (void *)(uintptr_t)src, n);
}

/* Runs the first queued operation (the earliest due; ties in call order). */
static void run_first_deferred(void) {
    Deferred *d = g_deferred.items[0];
    memmove(g_deferred.items, g_deferred.items + 1, (g_deferred.n - 1) * sizeof *g_deferred.items);
    g_deferred.n--;
    execute(d->kind, d->dst, d->host, d->src, d->fill, d->n);
    if (d->owns_host) free(d->host);
    free(d);
    g_deferred_runs++;
}

/* Runs, in order, the queued operations due by `t`. Called with the lock held. */
static void run_due(int64_t t) {
    while (g_deferred.n && ((Deferred *)g_deferred.items[0])->due <= t) run_first_deferred();
}

/* After sleeping until `t`: what the stream did by then is in memory when the call returns. */
static void wait_until(int64_t t) {
    sleep_until(t);
    LOCK();
    run_due(now_ns());
    UNLOCK();
}

static int overlap(uintptr_t a, size_t an, uintptr_t b, size_t bn) { return an && bn && a < b + bn && b < a + an; }

/* Runs the queued operations up to the last one that touches [base, base+size) on the host side
 * (host_side) or the device side, early: the memory is about to go. Returns how many touched it. */
static int run_through_last_touching_counted(uintptr_t base, size_t size, int host_side) {
    size_t last = 0;
    int touching = 0;
    for (size_t i = 0; i < g_deferred.n; i++) {
        Deferred *d = g_deferred.items[i];
        int hit = host_side ? !d->owns_host && d->host && overlap((uintptr_t)d->host, d->n, base, size)
                            : (d->kind != DTOH && overlap(d->dst, d->n, base, size)) ||
                                  ((d->kind == DTOH || d->kind == DTOD) && overlap(d->src, d->n, base, size));
        if (hit) {
            last = i + 1;
            touching++;
        }
    }
    while (last--) run_first_deferred();
    return touching;
}

static void run_through_last_touching(uintptr_t base, size_t size, int host_side) {
    (void)run_through_last_touching_counted(base, size, host_side);
}

static int defer(int kind, CUdeviceptr dst, void *host, int pageable, CUdeviceptr src, unsigned char fill, size_t n, int64_t due) {
    Deferred *d = calloc(1, sizeof *d);
    if (!d) return OUT_OF_MEMORY;
    *d = (Deferred){.kind = kind, .dst = dst, .src = src, .host = host, .fill = fill, .n = n, .due = due};
    if (kind == HTOD && pageable) {
        d->host = malloc(n);
        if (!d->host) {
            free(d);
            return OUT_OF_MEMORY;
        }
        memcpy(d->host, host, n);
        d->owns_host = 1;
    }
    vec_push(&g_deferred, d);
    size_t i = g_deferred.n - 1; /* keep the queue ordered by due time, ties in call order */
    while (i > 0 && ((Deferred *)g_deferred.items[i - 1])->due > due) {
        g_deferred.items[i] = g_deferred.items[i - 1];
        i--;
    }
    g_deferred.items[i] = d;
    return SUCCESS;
}

/* Copies in stream time (see Deferred): at once when the stream is idle, else when it gets there.
 * The stream is busy for the simulated work time and the allocations count as in use until then.
 * Every device range must lie inside one allocation of the context. */
static int copy(enum CopyKind kind, CUdeviceptr dst, void *host, CUdeviceptr src, unsigned char fill, size_t n,
                CUstream hStream, int wait) {
    Stream *s;
    int rc = resolve_stream(hStream, 1, &s);
    if (rc) return rc;
    if (n == 0) return SUCCESS;
    if ((kind == HTOD || kind == DTOH) && !host) return INVALID_VALUE;
    Alloc *da = NULL, *sa = NULL;
    if (kind != DTOH && (rc = device_range(s->ctx, dst, n, &da))) return rc;
    if ((kind == DTOH || kind == DTOD) && (rc = device_range(s->ctx, src, n, &sa))) return rc;
    if (s->capture) {
        GraphOp op = {.kind = kind, .dst = dst, .src = src, .host = host, .fill = fill, .n = n};
        return graph_record(s->capture, &op);
    }
    int64_t done = enqueue(s, g_work_ns);
    if (da) da->in_use_until = max64(da->in_use_until, done);
    if (sa) sa->in_use_until = max64(sa->in_use_until, done);
    if (done <= now_ns()) {
        run_due(done);
        execute(kind, dst, host, src, fill, n);
    } else {
        int pageable = (kind == HTOD || kind == DTOH) && !pinned_block(host, n);
        if ((rc = defer(kind, dst, host, pageable, src, fill, n, done))) return rc;
        if (kind == DTOH && pageable) wait = 1;
    }
    if (wait) {
        UNLOCK();
        wait_until(done);
        LOCK();
    }
    return SUCCESS;
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream hStream) {
    ENTER();
    RETURN(copy(HTOD, dst, (void *)src, 0, 0, n, hStream, 0));
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream hStream) {
    ENTER();
    RETURN(copy(DTOH, 0, dst, src, 0, n, hStream, 0));
}

EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hStream) {
    ENTER();
    RETURN(copy(DTOD, dst, NULL, src, 0, n, hStream, 0));
}

EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream hStream) {
    ENTER();
    RETURN(copy(MEMSET, dst, NULL, 0, value, n, hStream, 0));
}

/* The synchronous copies run on the legacy stream and return when done. */
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
    ENTER();
    RETURN(copy(HTOD, dst, (void *)src, 0, 0, n, NULL, 1));
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
    ENTER();
    RETURN(copy(DTOH, 0, dst, src, 0, n, NULL, 1));
}

EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags) {
    ENTER();
    (void)flags;
    if (!pp || bytesize == 0) RETURN(INVALID_VALUE);
    Ctx *c;
    int rc = current_ctx(&c);
    if (rc) RETURN(rc);
    if (g_fail_host_allocs > 0) {
        g_fail_host_allocs--;
        RETURN(OUT_OF_MEMORY);
    }
    void *p = NULL;
    HostBlock *b = calloc(1, sizeof *b);
    if (!b || posix_memalign(&p, ALLOC_ALIGN, bytesize) != 0) {
        free(b);
        RETURN(OUT_OF_MEMORY);
    }
    memset(p, 0, bytesize);
    *b = (HostBlock){.base = (uintptr_t)p, .size = bytesize, .registered = 0};
    vec_push(&g_host, b);
    *pp = p;
    RETURN(SUCCESS);
}

/* Freeing memory that a queued copy still reads or writes is counted as a use after free (the
 * copies then run first, so the stand-in itself never touches freed memory). */
EXPORT CUresult cuMemFreeHost(void *p) {
    ENTER();
    HostBlock *b = host_block_at(p, 0);
    if (!b) RETURN(INVALID_VALUE);
    if (run_through_last_touching_counted(b->base, b->size, 1) > 0) g_use_after_free++;
    vec_remove(&g_host, b);
    free(b);
    free(p);
    RETURN(SUCCESS);
}

/* Host memory is the "device" memory here, so a mapped pointer is the host address itself. */
EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int flags) {
    ENTER();
    if (!pdptr || flags != 0) RETURN(INVALID_VALUE);
    if (!host_block_at(p, 0)) RETURN(INVALID_VALUE);
    *pdptr = (CUdeviceptr)(uintptr_t)p;
    RETURN(SUCCESS);
}

/* Page-locks caller memory: copies with it then run in stream time, as with cuMemHostAlloc's.
 * Overlapping an already page-locked range is HOST_MEMORY_ALREADY_REGISTERED, as in the driver. */
EXPORT CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int flags) {
    ENTER();
    if (!p || bytesize == 0 || (flags & ~0xFu)) RETURN(INVALID_VALUE);
    Ctx *c;
    int rc = current_ctx(&c);
    if (rc) RETURN(rc);
    for (size_t i = 0; i < g_host.n; i++) {
        HostBlock *o = g_host.items[i];
        if (overlap(o->base, o->size, (uintptr_t)p, bytesize)) RETURN(HOST_MEMORY_ALREADY_REGISTERED);
    }
    HostBlock *b = calloc(1, sizeof *b);
    if (!b) RETURN(OUT_OF_MEMORY);
    *b = (HostBlock){.base = (uintptr_t)p, .size = bytesize, .registered = 1};
    vec_push(&g_host, b);
    RETURN(SUCCESS);
}

/* Queued copies that use the range run first: it is pageable (and the caller's) afterwards. */
EXPORT CUresult cuMemHostUnregister(void *p) {
    ENTER();
    HostBlock *b = host_block_at(p, 1);
    if (!b) RETURN(HOST_MEMORY_NOT_REGISTERED);
    run_through_last_touching(b->base, b->size, 1);
    vec_remove(&g_host, b);
    free(b);
    RETURN(SUCCESS);
}

EXPORT CUresult cuPointerGetAttribute(void *data, int attribute, CUdeviceptr ptr) {
    ENTER();
    if (!data) RETURN(INVALID_VALUE);
    Alloc *a = find_range(NULL, (uintptr_t)ptr, 0);
    if (!a) RETURN(INVALID_VALUE);
    if (attribute == 1) *(CUcontext *)data = a->ctx; /* CU_POINTER_ATTRIBUTE_CONTEXT */
    else if (attribute == 9 && a->ctx) *(int *)data = a->ctx->dev; /* CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL */
    else RETURN(INVALID_VALUE);
    RETURN(SUCCESS);
}

/* ---------------------------------------------------------------- libraries and kernels */

static Kernel *new_kernel(Library *lib, const char *name, size_t name_len) {
    Kernel *k = calloc(1, sizeof *k);
    char *copy_of_name = malloc(name_len + 1);
    if (!k || !copy_of_name) abort();
    memcpy(copy_of_name, name, name_len);
    copy_of_name[name_len] = 0;
    k->lib = lib;
    k->name = copy_of_name;
    k->nparams = -1;
    Kernel **ks = realloc(lib->kernels, (lib->nkernels + 1) * sizeof *ks);
    if (!ks) abort();
    lib->kernels = ks;
    ks[lib->nkernels++] = k;
    vec_push(&g_kernels, k);
    return k;
}

static size_t ptx_type_size(const char *t, size_t len) {
    static const struct {
        const char *name;
        size_t size;
    } TYPES[] = {{".u8", 1}, {".s8", 1}, {".b8", 1}, {".u16", 2}, {".s16", 2}, {".b16", 2}, {".f16", 2},
                 {".u32", 4}, {".s32", 4}, {".b32", 4}, {".f32", 4}, {".u64", 8}, {".s64", 8}, {".b64", 8}, {".f64", 8}};
    for (size_t i = 0; i < sizeof TYPES / sizeof TYPES[0]; i++)
        if (strlen(TYPES[i].name) == len && strncmp(TYPES[i].name, t, len) == 0) return TYPES[i].size;
    return 0;
}

static int is_ident(char ch) { return isalnum((unsigned char)ch) || ch == '_' || ch == '$' || ch == '.'; }

/* One `.param` declaration, e.g. ".param .u64 .ptr .align 4 name" or ".param .align 8 .b8 name[16]". */
static int parse_param(const char *p, const char *end, size_t *size, size_t *align) {
    size_t elem = 0, count = 1, al = 0;
    int saw_param = 0;
    while (p < end) {
        while (p < end && isspace((unsigned char)*p)) p++;
        const char *tok = p;
        while (p < end && !isspace((unsigned char)*p)) p++;
        size_t len = (size_t)(p - tok);
        if (len == 0) break;
        if (len == 6 && strncmp(tok, ".param", 6) == 0) saw_param = 1;
        else if (len == 6 && strncmp(tok, ".align", 6) == 0) al = strtoul(p, NULL, 10);
        else if (ptx_type_size(tok, len)) elem = ptx_type_size(tok, len);
        else {
            const char *bracket = memchr(tok, '[', len);
            if (bracket) count = strtoul(bracket + 1, NULL, 10);
        }
    }
    if (!saw_param || !elem || !count) return 0;
    *size = elem * count;
    *align = al ? al : elem;
    return 1;
}

/* The static shared memory of the entry whose body follows `p`: the sizes of the `.shared` declarations
 * between its braces, e.g. ".shared .align 4 .b8 _ZZ1kE1s[32768];" (not `.extern .shared` arrays of no size:
 * those are dynamic shared memory). */
static size_t body_shared_bytes(const char *p) {
    const char *open = strchr(p, '{');
    if (!open) return 0;
    int depth = 0;
    size_t total = 0;
    for (const char *q = open; *q; q++) {
        if (*q == '{') depth++;
        else if (*q == '}' && --depth == 0) break;
        else if (strncmp(q, ".shared", 7) == 0 && isspace((unsigned char)q[7]) && (q == open || isspace((unsigned char)q[-1]))) {
            const char *line_start = q;
            while (line_start > open && line_start[-1] != '\n') line_start--;
            const char *end = strchr(q, ';');
            if (!end || memmem(line_start, (size_t)(q - line_start), ".extern", 7)) continue;
            size_t elem = 0, count = 1;
            for (const char *t = q + 7; t < end;) {
                while (t < end && isspace((unsigned char)*t)) t++;
                const char *tok = t;
                while (t < end && !isspace((unsigned char)*t)) t++;
                size_t len = (size_t)(t - tok);
                if (ptx_type_size(tok, len)) elem = ptx_type_size(tok, len);
                const char *bracket = memchr(tok, '[', len);
                if (bracket) count = strtoul(bracket + 1, NULL, 10);
            }
            total += elem * count;
            q = end;
        }
    }
    return total;
}

/* Finds every `.entry NAME( ... )` and its parameters; returns 0 if a declaration is malformed. */
static int parse_ptx(Library *lib, const char *text) {
    const char *p = text;
    while ((p = strstr(p, ".entry")) != NULL) {
        if ((p > text && !isspace((unsigned char)p[-1])) || !isspace((unsigned char)p[6])) {
            p += 6;
            continue;
        }
        p += 6;
        while (isspace((unsigned char)*p)) p++;
        const char *name = p;
        while (is_ident(*p)) p++;
        size_t name_len = (size_t)(p - name);
        while (isspace((unsigned char)*p)) p++;
        const char *close = *p == '(' ? strchr(p, ')') : NULL;
        if (!name_len || !close) return 0;
        Kernel *k = new_kernel(lib, name, name_len);
        k->offsets = calloc(MAX_PARAMS, sizeof(size_t));
        k->sizes = calloc(MAX_PARAMS, sizeof(size_t));
        if (!k->offsets || !k->sizes) abort();
        k->nparams = 0;
        size_t offset = 0;
        for (const char *seg = p + 1; seg < close;) {
            const char *comma = memchr(seg, ',', (size_t)(close - seg));
            const char *seg_end = comma ? comma : close;
            size_t size, align;
            if (parse_param(seg, seg_end, &size, &align)) {
                if (k->nparams == MAX_PARAMS) return 0;
                offset = (offset + align - 1) / align * align;
                k->offsets[k->nparams] = offset;
                k->sizes[k->nparams++] = size;
                offset += size;
            }
            seg = seg_end + 1;
        }
        p = close + 1;
        k->static_shared = body_shared_bytes(p);
    }
    return 1;
}

/* Module-scope variables: lines whose first token (after .visible/.extern/.weak) is .global or
 * .const, e.g. ".visible .global .attribute(.managed) .align 4 .u32 m;" or
 * ".const .align 4 .b8 coef[16];". Instructions such as "ld.global.u32" never start that way. */
static void parse_ptx_variables(Library *lib, const char *text) {
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        const char *end = strchr(line, '\n');
        if (!end) end = line + strlen(line);
        const char *p = line;
        int is_var = 0, managed = 0;
        size_t elem = 0, count = 1, name_len = 0;
        const char *name = NULL;
        while (p < end) {
            while (p < end && isspace((unsigned char)*p)) p++;
            const char *tok = p;
            while (p < end && !isspace((unsigned char)*p) && *p != ';' && *p != '=') p++;
            size_t len = (size_t)(p - tok);
            if (len == 0) break;
            if ((len == 8 && !strncmp(tok, ".visible", 8)) || (len == 7 && !strncmp(tok, ".extern", 7)) || (len == 5 && !strncmp(tok, ".weak", 5))) continue;
            if (!is_var) {
                if ((len == 7 && !strncmp(tok, ".global", 7)) || (len == 6 && !strncmp(tok, ".const", 6))) {
                    is_var = 1;
                    continue;
                }
                break;
            }
            if (len >= 10 && !strncmp(tok, ".attribute", 10)) managed = memmem(tok, len, ".managed", 8) != NULL;
            else if (len == 6 && !strncmp(tok, ".align", 6)) {
                while (p < end && isspace((unsigned char)*p)) p++;
                while (p < end && isdigit((unsigned char)*p)) p++;
            } else if (ptx_type_size(tok, len)) elem = ptx_type_size(tok, len);
            else if (tok[0] != '.') {
                const char *bracket = memchr(tok, '[', len);
                name = tok;
                name_len = bracket ? (size_t)(bracket - tok) : len;
                if (bracket) count = strtoul(bracket + 1, NULL, 10);
                break;
            }
        }
        if (!is_var || !name || !name_len || !elem || !count) continue;
        Var *vars = realloc(lib->vars, (lib->nvars + 1) * sizeof *vars);
        char *copy = malloc(name_len + 1);
        if (!vars || !copy) abort();
        memcpy(copy, name, name_len);
        copy[name_len] = 0;
        lib->vars = vars;
        vars[lib->nvars++] = (Var){copy, elem * count, managed};
    }
}

/* LZ4 block decompression (nvcc compresses fatbin entries with it); 0 on malformed input. */
static size_t lz4_block(const unsigned char *in, size_t in_len, unsigned char *out, size_t cap) {
    const unsigned char *ip = in, *end = in + in_len;
    size_t op = 0;
    while (ip < end) {
        unsigned token = *ip++;
        size_t lit = token >> 4;
        if (lit == 15) {
            unsigned char b;
            do {
                if (ip >= end) return 0;
                b = *ip++;
                lit += b;
            } while (b == 255);
        }
        if (lit > (size_t)(end - ip) || lit > cap - op) return 0;
        memcpy(out + op, ip, lit);
        ip += lit;
        op += lit;
        if (ip >= end) break; /* the last sequence has literals only */
        if (end - ip < 2) return 0;
        size_t offset = ip[0] | (size_t)ip[1] << 8;
        ip += 2;
        size_t match = token & 15;
        if (match == 15) {
            unsigned char b;
            do {
                if (ip >= end) return 0;
                b = *ip++;
                match += b;
            } while (b == 255);
        }
        match += 4;
        if (offset == 0 || offset > op || match > cap - op) return 0;
        for (size_t i = 0; i < match; i++, op++) out[op] = out[op - offset];
    }
    return op;
}

static uint64_t le(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* The first PTX entry of a fatbin as NUL-terminated text (malloc'ed), or NULL. The fatbin's own
 * sizes were checked by cuhandle (image.rs) before it reaches any driver. Entry header: kind u16
 * (1 = PTX), version u16, header size u32, payload size u64, compressed size u32 at 16, flags u64
 * at 40 (0x2000 = LZ4-compressed), uncompressed size u64 at 56. */
static char *fatbin_ptx(const unsigned char *b) {
    uint64_t at = le(b + 6, 2), end = at + le(b + 8, 8);
    while (at + 16 <= end) {
        const unsigned char *e = b + at;
        uint64_t header = le(e + 4, 4), payload = le(e + 8, 8);
        if (header < 16 || header + payload > end - at) return NULL;
        if (le(e, 2) == 1) {
            const unsigned char *data = e + header;
            int compressed = header >= 64 && (le(e + 40, 8) & 0x2000);
            size_t size = compressed ? le(e + 56, 8) : payload;
            if (size > (256u << 20)) return NULL;
            char *text = calloc(1, size + 1);
            if (!text) return NULL;
            if (!compressed) memcpy(text, data, size);
            else if (!lz4_block(data, le(e + 16, 4) <= payload ? le(e + 16, 4) : payload, (unsigned char *)text, size)) {
                free(text);
                return NULL;
            }
            return text;
        }
        at += header + payload;
    }
    return NULL;
}

/* Writes `message` into the log buffer option `buffer_option` (5: error log, 3: info log) and its size option. */
static void write_log(void **options_values, int *options, unsigned n, int buffer_option, const char *message) {
    char *buffer = NULL;
    size_t size = 0;
    for (unsigned i = 0; options && options_values && i < n; i++) {
        if (options[i] == buffer_option) buffer = options_values[i];
        if (options[i] == buffer_option + 1) size = (size_t)(uintptr_t)options_values[i];
    }
    if (buffer && size) snprintf(buffer, size, "%s", message);
}

static void jit_log(void **options_values, int *options, unsigned n, const char *message) {
    write_log(options_values, options, n, 5, message); /* CU_JIT_ERROR_LOG_BUFFER */
}

/* Known JIT options only, with values the real driver accepts; anything else is INVALID_VALUE. */
static int check_jit_options(int *options, void **values, unsigned n, int *verbose) {
    *verbose = 0;
    for (unsigned i = 0; options && values && i < n; i++) {
        uintptr_t v = (uintptr_t)values[i];
        switch (options[i]) {
        case 0: if (v < 1 || v > 255) return INVALID_VALUE; break;   /* CU_JIT_MAX_REGISTERS */
        case 7: if (v > 4) return INVALID_VALUE; break;              /* CU_JIT_OPTIMIZATION_LEVEL */
        case 12: *verbose = v != 0; break;                           /* CU_JIT_LOG_VERBOSE */
        case 3: case 4: case 5: case 6: break;                       /* the log buffers */
        default: return INVALID_VALUE;
        }
    }
    return SUCCESS;
}

EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code, int *jitOptions, void **jitOptionsValues,
                                  unsigned int numJitOptions, int *libraryOptions, void **libraryOptionValues,
                                  unsigned int numLibraryOptions) {
    ENTER();
    if (!library || !code) RETURN(INVALID_VALUE);
    for (unsigned i = 0; i < numLibraryOptions; i++) /* CU_LIBRARY_BINARY_IS_PRESERVED (1) only */
        if (!libraryOptions || !libraryOptionValues || libraryOptions[i] != 1) RETURN(INVALID_VALUE);
    int verbose;
    if (check_jit_options(jitOptions, jitOptionsValues, numJitOptions, &verbose)) RETURN(INVALID_VALUE);
    /* Byte by byte, so a short NUL-terminated PTX text is never read past its end. */
    const unsigned char *b = code;
    Library *lib = calloc(1, sizeof *lib);
    if (!lib) RETURN(OUT_OF_MEMORY);
    if (b[0] == 0x50 && b[1] == 0xED && b[2] == 0x55 && b[3] == 0xBA) { /* 0xBA55ED50 little-endian */
        lib->kind = IMAGE_FATBIN;
        /* Kernels and parameters come from the fatbin's PTX where it has one (nvcc's
         * -gencode ...,code=compute_XX); without one, any name is a kernel of unknown signature. */
        char *ptx = fatbin_ptx(b);
        lib->parsed = ptx && parse_ptx(lib, ptx) && lib->nkernels > 0;
        if (lib->parsed) parse_ptx_variables(lib, ptx);
        free(ptx);
        if (!lib->parsed) { /* forget what a half-parsed PTX declared */
            for (size_t i = 0; i < lib->nkernels; i++) vec_remove(&g_kernels, lib->kernels[i]);
            lib->nkernels = 0;
        }
    } else if (b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F') {
        lib->kind = IMAGE_CUBIN;
    } else if (strstr(code, ".version") && strstr(code, ".target")) {
        lib->kind = IMAGE_PTX;
        lib->parsed = 1;
        if (!parse_ptx(lib, code)) {
            jit_log(jitOptionsValues, jitOptions, numJitOptions, "stand-in: a .entry declaration could not be parsed");
            for (size_t i = 0; i < lib->nkernels; i++) vec_remove(&g_kernels, lib->kernels[i]);
            RETURN(INVALID_PTX);
        }
        parse_ptx_variables(lib, code);
    } else {
        free(lib);
        RETURN(INVALID_IMAGE);
    }
    vec_push(&g_libraries, lib);
    *library = lib;
    char info[160];
    snprintf(info, sizeof info, "stand-in JIT: %s image, %zu kernels%s", lib->kind == IMAGE_PTX ? "PTX" : lib->kind == IMAGE_CUBIN ? "cubin" : "fatbin",
             lib->nkernels, verbose ? " (verbose)" : "");
    write_log(jitOptionsValues, jitOptions, numJitOptions, 3, info); /* CU_JIT_INFO_LOG_BUFFER */
    RETURN(SUCCESS);
}

/* Reads the file and loads it as cuLibraryLoadData does (which takes the lock itself). */
EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, int *jitOptions, void **jitOptionsValues,
                                      unsigned int numJitOptions, int *libraryOptions, void **libraryOptionValues,
                                      unsigned int numLibraryOptions) {
    if (!fileName) return INVALID_VALUE;
    __atomic_add_fetch(&g_file_loads, 1, __ATOMIC_RELAXED);
    FILE *f = fopen(fileName, "rb");
    if (!f) return 301; /* CUDA_ERROR_FILE_NOT_FOUND */
    size_t cap = 1 << 16, n = 0;
    unsigned char *data = malloc(cap + 1);
    size_t got;
    while (data && (got = fread(data + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            unsigned char *bigger = realloc(data, 2 * cap + 1);
            if (!bigger) { free(data); data = NULL; break; }
            data = bigger;
            cap *= 2;
        }
    }
    fclose(f);
    if (!data) return OUT_OF_MEMORY;
    if (n < 4) { free(data); return INVALID_IMAGE; }
    data[n] = 0; /* PTX text ends here */
    CUresult rc = cuLibraryLoadData(library, data, jitOptions, jitOptionsValues, numJitOptions, libraryOptions, libraryOptionValues, numLibraryOptions);
    free(data); /* the stand-in keeps nothing that points into the image */
    return rc;
}

EXPORT CUresult cuLibraryUnload(CUlibrary library) {
    ENTER();
    if (!vec_has(&g_libraries, library)) RETURN(bad_handle(INVALID_HANDLE));
    Library *lib = library;
    vec_remove(&g_libraries, lib);
    /* Never freed: launching a kernel of an unloaded library is an INVALID_HANDLE, not a crash. */
    for (size_t i = 0; i < lib->nkernels; i++) vec_remove(&g_kernels, lib->kernels[i]);
    for (size_t i = 0; i < g_allocs.n;) { /* its variables' storage, in every context */
        Alloc *a = g_allocs.items[i];
        if (a->library == lib) retire_alloc(a);
        else i++;
    }
    RETURN(SUCCESS);
}

/* The storage of variable `name` of `lib` in context `c` (managed: shared by all), made on first use. */
static int library_variable(Library *lib, const char *name, Ctx *c, int want_managed, CUdeviceptr *dptr, size_t *bytes) {
    for (size_t v = 0; v < lib->nvars; v++) {
        if (strcmp(lib->vars[v].name, name) != 0 || lib->vars[v].managed != want_managed) continue;
        for (size_t i = 0; i < g_allocs.n; i++) {
            Alloc *a = g_allocs.items[i];
            if (a->library == lib && a->variable == v && (want_managed || a->ctx == c)) {
                if (dptr) *dptr = a->base;
                if (bytes) *bytes = a->size;
                return SUCCESS;
            }
        }
        CUdeviceptr base;
        int rc = allocate(c, lib->vars[v].size, NULL, &base);
        if (rc) return rc;
        Alloc *a = g_allocs.items[g_allocs.n - 1];
        a->library = lib;
        a->variable = v;
        if (want_managed) a->ctx = NULL;
        if (dptr) *dptr = base;
        if (bytes) *bytes = a->size;
        return SUCCESS;
    }
    return NOT_FOUND;
}

EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name) {
    ENTER();
    if (!name) RETURN(INVALID_VALUE);
    if (!vec_has(&g_libraries, library)) RETURN(bad_handle(INVALID_HANDLE));
    Ctx *c;
    int rc = current_ctx(&c);
    if (rc) RETURN(rc);
    RETURN(library_variable(library, name, c, 0, dptr, bytes));
}

EXPORT CUresult cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name) {
    ENTER();
    if (!name) RETURN(INVALID_VALUE);
    if (!vec_has(&g_libraries, library)) RETURN(bad_handle(INVALID_HANDLE));
    Ctx *c;
    int rc = current_ctx(&c);
    if (rc) RETURN(rc);
    RETURN(library_variable(library, name, c, 1, dptr, bytes));
}

EXPORT CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name) {
    ENTER();
    if (!pKernel || !name) RETURN(INVALID_VALUE);
    if (!vec_has(&g_libraries, library)) RETURN(bad_handle(INVALID_HANDLE));
    Library *lib = library;
    for (size_t i = 0; i < lib->nkernels; i++)
        if (strcmp(lib->kernels[i]->name, name) == 0) {
            *pKernel = lib->kernels[i];
            RETURN(SUCCESS);
        }
    /* Cubins, and fatbins without PTX, are not parsed: any name is a kernel of unknown parameters. */
    if (lib->parsed) RETURN(NOT_FOUND);
    *pKernel = new_kernel(lib, name, strlen(name));
    RETURN(SUCCESS);
}

static int check_kernel(void *k) { return vec_has(&g_kernels, k) ? SUCCESS : bad_handle(INVALID_HANDLE); }

/* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: as set, else the default less the static shared memory. */
static int max_dynamic_shared(const Kernel *k, int dev) {
    if (k->max_dynamic_shared[dev]) return k->max_dynamic_shared[dev] - 1;
    return k->static_shared < DEFAULT_SHARED ? (int)(DEFAULT_SHARED - k->static_shared) : 0;
}

/* Needs a current context, like the real driver. Fatbin/cubin kernels answer INVALID_VALUE at
 * index 0, which callers read as "no (more) parameters": see README.md. */
EXPORT CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset, size_t *paramSize) {
    ENTER();
    int rc = check_kernel(kernel);
    if (rc) RETURN(rc);
    Ctx *c;
    if ((rc = current_ctx(&c))) RETURN(rc);
    Kernel *k = kernel;
    if (k->nparams < 0 || paramIndex >= (size_t)k->nparams) RETURN(INVALID_VALUE);
    if (paramOffset) *paramOffset = k->offsets[paramIndex];
    if (paramSize) *paramSize = k->sizes[paramIndex];
    RETURN(SUCCESS);
}

static size_t listed_kernels(Library *lib) { return lib->parsed ? lib->nkernels : 0; }

EXPORT CUresult cuLibraryGetKernelCount(unsigned int *count, CUlibrary library) {
    ENTER();
    if (!count) RETURN(INVALID_VALUE);
    if (!vec_has(&g_libraries, library)) RETURN(bad_handle(INVALID_HANDLE));
    *count = (unsigned)listed_kernels(library);
    RETURN(SUCCESS);
}

EXPORT CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int numKernels, CUlibrary library) {
    ENTER();
    if (!kernels) RETURN(INVALID_VALUE);
    if (!vec_has(&g_libraries, library)) RETURN(bad_handle(INVALID_HANDLE));
    Library *lib = library;
    if (numKernels != listed_kernels(lib)) RETURN(INVALID_VALUE);
    for (unsigned i = 0; i < numKernels; i++) kernels[i] = lib->kernels[i];
    RETURN(SUCCESS);
}

EXPORT CUresult cuKernelGetName(const char **name, CUkernel kernel) {
    ENTER();
    if (!name) RETURN(INVALID_VALUE);
    int rc = check_kernel(kernel);
    if (rc) RETURN(rc);
    *name = ((Kernel *)kernel)->name;
    RETURN(SUCCESS);
}

/* A kernel's instance in the current context: the kernel object itself here (cuLaunchKernel
 * accepts both, as the real driver does). */
EXPORT CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel) {
    ENTER();
    if (!pFunc) RETURN(INVALID_VALUE);
    int rc = check_kernel(kernel);
    if (rc) RETURN(rc);
    Ctx *c;
    if ((rc = current_ctx(&c))) RETURN(rc);
    *pFunc = kernel;
    RETURN(SUCCESS);
}

EXPORT CUresult cuKernelGetAttribute(int *pi, int attrib, CUkernel kernel, CUdevice dev) {
    ENTER();
    if (!pi) RETURN(INVALID_VALUE);
    int rc = check_kernel(kernel);
    if (rc) RETURN(rc);
    if (check_device(dev)) RETURN(INVALID_DEVICE);
    if (attrib < 0 || attrib > 20) RETURN(INVALID_VALUE);
    /* max threads per block, static shared memory, registers, max dynamic shared memory (set, or the 48 KiB
     * default less the static), non-portable clusters allowed; others 0 */
    Kernel *k = kernel;
    switch (attrib) {
    case 0: *pi = 1024; break;
    case 1: *pi = (int)k->static_shared; break;
    case 4: *pi = 32; break;
    case 8: *pi = max_dynamic_shared(k, dev); break;
    case 15: *pi = k->non_portable_clusters[dev]; break;
    default: *pi = 0;
    }
    RETURN(SUCCESS);
}

/* Only CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (8), up to the opt-in limit less the static shared
 * memory, and CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED (15), 0 or 1, as the driver. */
EXPORT CUresult cuKernelSetAttribute(int attrib, int val, CUkernel kernel, CUdevice dev) {
    ENTER();
    int rc = check_kernel(kernel);
    if (rc) RETURN(rc);
    if (check_device(dev)) RETURN(INVALID_DEVICE);
    Kernel *k = kernel;
    if (attrib == 8 && val >= 0 && (size_t)val + k->static_shared <= OPTIN_SHARED) k->max_dynamic_shared[dev] = val + 1;
    else if (attrib == 15 && (val == 0 || val == 1)) k->non_portable_clusters[dev] = val;
    else RETURN(INVALID_VALUE);
    RETURN(SUCCESS);
}

/* A function's attribute: cuKernelGetFunction returns the kernel itself here, so this sets the kernel's
 * attribute on the current context's device (the real driver keeps it per function). */
EXPORT CUresult cuFuncSetAttribute(CUfunction f, int attrib, int val) {
    ENTER();
    int rc = check_kernel(f);
    if (rc) RETURN(rc);
    Ctx *c;
    if ((rc = current_ctx(&c))) RETURN(rc);
    Kernel *k = f;
    if (attrib == 8 && val >= 0 && (size_t)val + k->static_shared <= OPTIN_SHARED) k->max_dynamic_shared[c->dev] = val + 1;
    else if (attrib == 15 && (val == 0 || val == 1)) k->non_portable_clusters[c->dev] = val;
    else RETURN(INVALID_VALUE);
    RETURN(SUCCESS);
}

/* The most blocks of a cluster of `k` on `dev`: 8, the portable limit, or 16 (an H200's) where the kernel
 * allows non-portable sizes. */
static unsigned max_cluster_blocks(const Kernel *k, int dev) { return k->non_portable_clusters[dev] ? 16 : 8; }

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

/* Needs a current context, as the driver; the configuration's block and shared memory do not limit the
 * answer here (an H200 holds 16 blocks of any legal size per cluster). */
EXPORT CUresult cuOccupancyMaxPotentialClusterSize(int *clusterSize, CUfunction f, const LaunchConfig *config) {
    ENTER();
    if (!clusterSize || !config) RETURN(INVALID_VALUE);
    int rc = check_kernel(f);
    if (rc) RETURN(rc);
    Ctx *c;
    if ((rc = current_ctx(&c))) RETURN(rc);
    *clusterSize = (int)max_cluster_blocks(f, c->dev);
    RETURN(SUCCESS);
}

/* Marks the allocation an 8-byte argument points into (if any) as used by the launch. */
static void argument_use(Ctx *c, const void *arg, int64_t until) {
    uint64_t v;
    memcpy(&v, arg, 8);
    Alloc *a = find_range(c, (uintptr_t)v, 0);
    if (a && (uintptr_t)v < a->base + a->size) a->in_use_until = max64(a->in_use_until, until);
}

/* The launch itself, with the lock held; `flags` as g_last_launch_flags, `cluster_blocks` 0 without clusters. */
static int launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                  unsigned sharedMemBytes, CUstream hStream, void **kernelParams, void **extra, int flags, uint64_t cluster_blocks) {
    int rc = check_kernel(f);
    if (rc) return rc;
    Stream *s;
    /* Drivers from 13.0 (contextless_probe.cu, driver 580) launch on a user stream in the stream's
     * context, with no context or another one current; older ones are modelled as wanting the
     * stream's context current. */
    if ((rc = resolve_stream(hStream, driver_version() < 13000, &s))) return rc;
    if (extra) return NOT_SUPPORTED; /* cuhandle passes parameters through kernelParams only */
    if (gx < 1 || gy < 1 || gz < 1 || gx > 2147483647u || gy > 65535 || gz > 65535) return INVALID_VALUE;
    if (bx < 1 || by < 1 || bz < 1 || bx > 1024 || by > 1024 || bz > 64 || (uint64_t)bx * by * bz > 1024) return INVALID_VALUE;
    Kernel *k = f;
    /* Up to the kernel's max dynamic shared memory on this device: 48 KiB less its static shared memory unless
     * cuKernelSetAttribute opted it in to more (or set less). */
    if ((int64_t)sharedMemBytes > max_dynamic_shared(k, s->ctx->dev)) return INVALID_VALUE;
    if (cluster_blocks > max_cluster_blocks(k, s->ctx->dev)) return INVALID_CLUSTER_SIZE;
    /* Reads every argument as the kernel declares it, so a missing or short one is caught here. */
    int nargs = 0;
    if (k->nparams >= 0) {
        if (k->nparams > 0 && !kernelParams) return INVALID_VALUE;
        memset(g_last_params, 0, sizeof g_last_params);
        for (int i = 0; i < k->nparams; i++) {
            if (!kernelParams[i]) return INVALID_VALUE;
            if (k->offsets[i] + k->sizes[i] <= sizeof g_last_params) memcpy(g_last_params + k->offsets[i], kernelParams[i], k->sizes[i]);
        }
        nargs = k->nparams;
    }
    /* An unknown signature's arguments are not read at all: cuhandle passes exact-size arrays
     * (blas.rs), so there is no NULL to stop at, and an argument may be shorter than 8 bytes. */
    if (s->capture) {
        GraphOp op = {0};
        op.launch = 1;
        for (int i = 0; i < nargs && op.npointers < GRAPH_MAX_POINTER_ARGS; i++)
            if (k->sizes[i] == 8) memcpy(&op.pointers[op.npointers++], kernelParams[i], 8);
        return graph_record(s->capture, &op);
    }
    if (!t_depth || t_stack[t_depth - 1] != s->ctx) g_launches_outside_current++;
    int64_t done = enqueue(s, g_work_ns);
    for (int i = 0; i < nargs; i++)
        if (k->sizes[i] == 8) argument_use(s->ctx, kernelParams[i], done);
    g_launches++;
    g_last_launch_flags = flags;
    return SUCCESS;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                               unsigned int by, unsigned int bz, unsigned int sharedMemBytes, CUstream hStream,
                               void **kernelParams, void **extra) {
    ENTER();
    RETURN(launch(f, gx, gy, gz, bx, by, bz, sharedMemBytes, hStream, kernelParams, extra, 0, 0));
}

/* Models the H200: cooperative grids up to 2048 resident threads per SM on 132 SMs; clusters that divide
 * the grid, up to 8 blocks (portable) or 16 where the kernel allows non-portable sizes; programmatic stream
 * serialization (alone) is accepted. Other attributes are NOT_SUPPORTED. */
EXPORT CUresult cuLaunchKernelEx(const LaunchConfig *config, CUfunction f, void **kernelParams, void **extra) {
    ENTER();
    if (!config || (config->numAttrs && !config->attrs)) RETURN(INVALID_VALUE);
    int flags = 1;
    uint64_t cluster_blocks = 0;
    uint64_t blocks = (uint64_t)config->gridDimX * config->gridDimY * config->gridDimZ;
    uint64_t threads = (uint64_t)config->blockDimX * config->blockDimY * config->blockDimZ;
    for (unsigned i = 0; i < config->numAttrs; i++) {
        const LaunchAttribute *a = &config->attrs[i];
        if (a->id == 2) { /* CU_LAUNCH_ATTRIBUTE_COOPERATIVE */
            if (!a->value.cooperative) continue;
            flags |= 2;
            if (threads && blocks > 132 * (2048 / threads)) RETURN(COOPERATIVE_LAUNCH_TOO_LARGE);
        } else if (a->id == 4) { /* CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION */
            unsigned x = a->value.clusterDim.x, y = a->value.clusterDim.y, z = a->value.clusterDim.z;
            if (!x || !y || !z || (uint64_t)x * y * z > 16) RETURN(INVALID_CLUSTER_SIZE);
            if (config->gridDimX % x || config->gridDimY % y || config->gridDimZ % z) RETURN(INVALID_CLUSTER_SIZE);
            cluster_blocks = (uint64_t)x * y * z; /* above 8 only where the kernel allows it: launch() */
            flags |= 4;
        } else if (a->id == 6) { /* CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION */
            /* the BLAS kernels' dependent launches: the stand-in runs a stream's work in order anyway */
            if (config->numAttrs != 1 || a->value.cooperative > 1) RETURN(INVALID_VALUE); /* an int 0 or 1 */
        } else {
            RETURN(NOT_SUPPORTED);
        }
    }
    RETURN(launch(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX, config->blockDimY, config->blockDimZ,
                  config->sharedMemBytes, config->hStream, kernelParams, extra, flags, cluster_blocks));
}

/* ---------------------------------------------------------------- graphs (stream capture) */

EXPORT CUresult cuStreamBeginCapture_v2(CUstream hStream, int mode) {
    ENTER();
    Stream *s;
    int rc = resolve_stream(hStream, 1, &s);
    if (rc) RETURN(rc);
    if (mode < 0 || mode > 2) RETURN(INVALID_VALUE);
    if (s->kind == LEGACY_STREAM) RETURN(STREAM_CAPTURE_UNSUPPORTED); /* the legacy stream cannot be captured */
    if (s->capture) RETURN(ILLEGAL_STATE);
    Graph *g = calloc(1, sizeof *g);
    if (!g) RETURN(OUT_OF_MEMORY);
    g->ctx = s->ctx;
    s->capture = g;
    s->capture_thread = thread_id();
    s->capture_mode = mode;
    RETURN(SUCCESS);
}

EXPORT CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph) {
    ENTER();
    if (!phGraph) RETURN(INVALID_VALUE);
    Stream *s;
    int rc = resolve_stream(hStream, 0, &s);
    if (rc) RETURN(rc);
    if (!s->capture) RETURN(ILLEGAL_STATE);
    if (s->capture_mode != 2 && s->capture_thread != thread_id()) RETURN(STREAM_CAPTURE_WRONG_THREAD);
    Graph *g = s->capture;
    s->capture = NULL;
    if (g->invalidated) {
        free(g->ops);
        free(g);
        *phGraph = NULL;
        RETURN(STREAM_CAPTURE_INVALIDATED);
    }
    vec_push(&g_graphs, g);
    *phGraph = g;
    RETURN(SUCCESS);
}

EXPORT CUresult cuStreamIsCapturing(CUstream hStream, int *status) {
    ENTER();
    if (!status) RETURN(INVALID_VALUE);
    Stream *s;
    int rc = resolve_stream(hStream, 0, &s);
    if (rc) RETURN(rc);
    *status = !s->capture ? 0 : s->capture->invalidated ? 2 : 1;
    RETURN(SUCCESS);
}

EXPORT CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes) {
    ENTER();
    if (!numNodes) RETURN(INVALID_VALUE);
    if (!vec_has(&g_graphs, hGraph)) RETURN(bad_handle(INVALID_HANDLE));
    Graph *g = hGraph;
    if (nodes)
        for (size_t i = 0; i < g->n && i < *numNodes; i++) nodes[i] = &g->ops[i];
    *numNodes = g->n;
    RETURN(SUCCESS);
}

EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags) {
    ENTER();
    if (!phGraphExec || flags) RETURN(INVALID_VALUE);
    if (!vec_has(&g_graphs, hGraph)) RETURN(bad_handle(INVALID_HANDLE));
    Ctx *current;
    int rc = current_ctx(&current); /* driver 580 answers INVALID_CONTEXT without a current context */
    if (rc) RETURN(rc);
    Graph *g = hGraph, *e = calloc(1, sizeof *e);
    if (!e) RETURN(OUT_OF_MEMORY);
    *e = *g;
    e->cap = g->n;
    e->ops = g->n ? malloc(g->n * sizeof *e->ops) : NULL;
    if (g->n && !e->ops) {
        free(e);
        RETURN(OUT_OF_MEMORY);
    }
    if (g->n) memcpy(e->ops, g->ops, g->n * sizeof *e->ops);
    vec_push(&g_graph_execs, e);
    *phGraphExec = e;
    RETURN(SUCCESS);
}

/* Replays the recorded operations on the stream, each as if queued there now: copies and memsets
 * execute (their ranges are checked again, so a freed buffer is out of bounds), launches count. */
EXPORT CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
    ENTER();
    if (!vec_has(&g_graph_execs, hGraphExec)) RETURN(bad_handle(INVALID_HANDLE));
    Graph *e = hGraphExec;
    Stream *s;
    int rc = resolve_stream(hStream, 1, &s);
    if (rc) RETURN(rc);
    if (s->ctx != e->ctx) RETURN(INVALID_VALUE);
    if (s->capture) RETURN(NOT_SUPPORTED); /* graph launches are not captured here */
    for (size_t i = 0; i < e->n; i++) {
        GraphOp *op = &e->ops[i];
        if (op->launch) {
            int64_t done = enqueue(s, g_work_ns);
            for (int j = 0; j < op->npointers; j++) argument_use(s->ctx, &op->pointers[j], done);
            g_launches++;
        } else if ((rc = copy((enum CopyKind)op->kind, op->dst, op->host, op->src, op->fill, op->n, hStream, 0))) {
            RETURN(rc);
        }
    }
    RETURN(SUCCESS);
}

static CUresult destroy_graph(Vec *registry, void *p) {
    ENTER();
    if (!vec_has(registry, p)) RETURN(bad_handle(INVALID_HANDLE));
    vec_remove(registry, p);
    Graph *g = p;
    free(g->ops);
    free(g);
    RETURN(SUCCESS);
}

EXPORT CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) { return destroy_graph(&g_graph_execs, hGraphExec); }

EXPORT CUresult cuGraphDestroy(CUgraph hGraph) { return destroy_graph(&g_graphs, hGraph); }

/* ---------------------------------------------------------------- optional entry points */

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags, int *symbolStatus) {
    (void)cudaVersion;
    (void)flags;
    if (!symbol || !pfn) return INVALID_VALUE;
    static const struct {
        const char *name;
        void *fn;
        int since;
    } OPTIONAL[] = {
        {"cuKernelGetParamInfo", (void *)cuKernelGetParamInfo, 12040},
        {"cuLibraryGetKernelCount", (void *)cuLibraryGetKernelCount, 12040},
        {"cuLibraryEnumerateKernels", (void *)cuLibraryEnumerateKernels, 12040},
        {"cuKernelGetName", (void *)cuKernelGetName, 12030},
        {"cuOccupancyMaxPotentialClusterSize", (void *)cuOccupancyMaxPotentialClusterSize, 11080},
    };
    int version = driver_version();
    for (size_t i = 0; i < sizeof OPTIONAL / sizeof OPTIONAL[0]; i++)
        if (strcmp(symbol, OPTIONAL[i].name) == 0 && version >= OPTIONAL[i].since) {
            *pfn = OPTIONAL[i].fn;
            if (symbolStatus) *symbolStatus = 0; /* CU_GET_PROC_ADDRESS_SUCCESS */
            return SUCCESS;
        }
    *pfn = NULL;
    if (symbolStatus) *symbolStatus = 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
    return NOT_FOUND;
}

/* ---------------------------------------------------------------- the tests' control channel */

static int count_of(const Vec *v, int user_streams_only) {
    int n = 0;
    for (size_t i = 0; i < v->n; i++)
        if (!user_streams_only || ((Stream *)v->items[i])->kind == USER_STREAM) n++;
    return n;
}

/* Commands of cuDeviceGetAttribute's magic attribute (README.md); called with the lock held. */
static int control(int command, int arg, int *result) {
    int previous;
    size_t bytes = 0;
    switch (command) {
    case 1:
        previous = (int)(g_work_ns / 1000000);
        g_work_ns = (int64_t)arg * 1000000;
        *result = previous;
        return SUCCESS;
    case 2:
        *result = g_fail_next_sync;
        g_fail_next_sync = arg;
        return SUCCESS;
    case 3: *result = (int)g_use_after_free; return SUCCESS;
    case 4: *result = (int)g_allocs.n; return SUCCESS;
    case 5:
        for (size_t i = 0; i < g_allocs.n; i++) bytes += ((Alloc *)g_allocs.items[i])->size;
        *result = (int)((bytes + 1023) / 1024);
        return SUCCESS;
    case 6:
        if (check_device(arg)) return INVALID_DEVICE;
        *result = g_primary[arg] ? g_primary[arg]->retains : 0;
        return SUCCESS;
    case 7:
        g_use_after_free = g_launches = g_out_of_bounds = g_bad_handles = g_launches_outside_current = 0;
        *result = 0;
        return SUCCESS;
    case 8: *result = (int)g_launches; return SUCCESS;
    case 15: *result = g_last_launch_flags; return SUCCESS;
    case 16:
        if (arg < 0 || (size_t)arg + 4 > sizeof g_last_params) return INVALID_VALUE;
        memcpy(result, g_last_params + arg, 4);
        return SUCCESS;
    case 9: *result = (int)g_out_of_bounds; return SUCCESS;
    case 10: *result = (int)g_bad_handles; return SUCCESS;
    case 11: *result = count_of(&g_streams, 1); return SUCCESS;
    case 12: *result = count_of(&g_events, 0); return SUCCESS;
    case 13:
        *result = g_fail_allocs;
        g_fail_allocs = arg;
        return SUCCESS;
    case 14:
        *result = g_fail_host_allocs;
        g_fail_host_allocs = arg;
        return SUCCESS;
    case 40: *result = (int)g_graphs.n; return SUCCESS;
    case 41: *result = (int)g_graph_execs.n; return SUCCESS;
    case 42: *result = (int)g_launches_outside_current; return SUCCESS;
    case 43: *result = count_host_blocks(0); return SUCCESS;
    case 44: *result = count_host_blocks(1); return SUCCESS;
    case 45: *result = (int)g_deferred_runs; return SUCCESS;
    case 46: *result = (int)g_pools.n; return SUCCESS;
    case 60: *result = (int)__atomic_load_n(&g_file_loads, __ATOMIC_RELAXED); return SUCCESS;
    default: return INVALID_VALUE;
    }
}
