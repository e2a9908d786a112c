/*
 * The stand-in's state: one lock over every registry (contexts, streams, events, libraries,
 * kernels, allocations, page-locked host blocks, queued copies, graphs, pools), the counters the
 * tests read through the control channel, the calling thread's context stack, simulated time,
 * and the lookups every entry point makes before it trusts a handle.
 */
#include "standin.h"

pthread_mutex_t G = PTHREAD_MUTEX_INITIALIZER;

int g_initialised, g_devices;
uint64_t g_init_thread;

int g_sms = DEFAULT_SMS; /* SMs per device (CUHANDLE_STANDIN_SMS, read at cuInit) */

uint64_t g_next_id = 1;

Ctx *g_primary[MAX_DEVICES];

Vec g_contexts;   /* every context ever created (never freed) */

Vec g_streams;    /* live user and per-thread streams */

Vec g_events;     /* live events */

Vec g_libraries;  /* loaded libraries */

Vec g_kernels;    /* kernels of loaded libraries */

Vec g_allocs;     /* live device allocations */

Vec g_host;       /* live page-locked host blocks (HostBlock): cuMemHostAlloc'd and registered */

Vec g_deferred;   /* copies and memsets queued to run when their stream reaches them (Deferred) */

static Vec g_quarantine; /* freed, poisoned allocations not yet returned to malloc */

Vec g_graphs;     /* captured graphs (templates) */

Vec g_graph_execs; /* instantiated graphs */

Vec g_pools;       /* memory pools not yet destroyed (or destroyed with allocations left) */

Vec g_greens;      /* every green context ever created (never freed) */

Vec g_detached;    /* user streams of destroyed green contexts, not yet destroyed themselves */

/* Times a green context's CUcontext became current on a thread while it was current on another
 * (NVIDIA: "a green context can be current to only one thread at a time"); calls refused because
 * they named a detached stream. */
long g_green_violations, g_detached_calls;

/* The SMs the last kernel launch could use: its stream's green context's, else the whole device's. */
SmSet g_last_launch_sms;

int64_t g_work_ns;

/* Injected faults belong to the thread that asked for them: the JVM's cleaner thread, freeing
 * objects that other tests leaked, must never consume a fault meant for a test. */
_Thread_local int g_fail_next_sync;

_Thread_local int g_fail_allocs, g_fail_host_allocs;

long g_use_after_free, g_launches, g_out_of_bounds, g_bad_handles;

/* Launches accepted while their stream's context was not the current one (CUDA 13.0 drivers). */
long g_launches_outside_current;

/* Copies, memsets, pool allocations and stream-ordered frees accepted on a user stream while its
 * context was not the current one (CUDA 13.0 drivers). */
long g_memory_calls_outside_current;

void note_outside_current(const Stream *s) {
    if (s->kind == USER_STREAM && (!t_depth || t_stack[t_depth - 1] != s->ctx)) g_memory_calls_outside_current++;
}

/* cuLibraryLoadFromFile calls: cuhandle hands the driver the bytes it checked instead (issue 26). */
long g_file_loads;

/* The last launch: 1 = through cuLaunchKernelEx, 2 = cooperative, 4 = clustered; and its arguments laid
 * out at the kernel's parameter offsets (for kernels whose PTX was parsed). */
int g_last_launch_flags;

unsigned char g_last_params[4096];

_Thread_local Ctx *t_stack[STACK_DEPTH];

_Thread_local int t_depth;

static _Thread_local uint64_t t_thread_id;

static atomic_ullong g_thread_ids = 1;

/* A thread that exits with a context current no longer holds it: a pthread key's destructor takes
 * the thread's stack down, so a dead JVM thread never counts as a second holder of a green context. */
static pthread_key_t g_exit_key;

static pthread_once_t g_exit_key_once = PTHREAD_ONCE_INIT;

static _Thread_local int t_exit_hooked;

static void thread_exits(void *unused) {
    (void)unused;
    LOCK();
    Ctx *before = t_depth ? t_stack[t_depth - 1] : NULL;
    t_depth = 0;
    note_current_change(before);
    UNLOCK();
}

static void make_exit_key(void) {
    if (pthread_key_create(&g_exit_key, thread_exits) != 0) abort();
}

void note_current_change(Ctx *before) {
    Ctx *after = t_depth ? t_stack[t_depth - 1] : NULL;
    if (before == after) return;
    if (before) before->current_threads--;
    if (!after) return;
    if (after->green && after->current_threads > 0) g_green_violations++;
    after->current_threads++;
    if (!t_exit_hooked) {
        pthread_once(&g_exit_key_once, make_exit_key);
        pthread_setspecific(g_exit_key, (void *)1);
        t_exit_hooked = 1;
    }
}

void sm_set_all(SmSet *set, int n) {
    memset(set, 0, sizeof *set);
    for (int i = 0; i < n; i++) set->bits[i / 64] |= 1ull << (i % 64);
}

int sm_set_count(const SmSet *set) {
    int n = 0;
    for (size_t i = 0; i < sizeof set->bits / sizeof set->bits[0]; i++) n += __builtin_popcountll(set->bits[i]);
    return n;
}

/* The SMs work in `c` can use: a green context's share, else the whole device. */
int sm_count_of(const Ctx *c) { return c->green ? c->green->sm_count : g_sms; }

uint64_t thread_id(void) {
    if (!t_thread_id) t_thread_id = atomic_fetch_add(&g_thread_ids, 1);
    return t_thread_id;
}

int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void sleep_until(int64_t t) {
    struct timespec ts = {.tv_sec = t / 1000000000, .tv_nsec = t % 1000000000};
    while (now_ns() < t && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
    }
}

int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static int is_sticky(int code) {
    return code == 700 || code == 702 || code == 710 || (code >= 714 && code <= 719) || code == 721;
}

int env_int(const char *name, int fallback) {
    const char *v = getenv(name);
    if (!v || !*v) return fallback;
    char *end;
    long x = strtol(v, &end, 10);
    return *end ? fallback : (int)x;
}

int driver_version(void) { return env_int("CUHANDLE_STANDIN_VERSION", 12080); }

int stream_needs_current_context(void) { return driver_version() < 13000; }

int ctx_dead(const Ctx *c) { return !c->active; }

int bad_handle(int rc) {
    g_bad_handles++;
    return rc;
}

/* A context pointer the caller handed in: known (ever created) and alive. */
int check_ctx(const void *p, Ctx **out) {
    if (!p || !vec_has(&g_contexts, p)) return bad_handle(INVALID_CONTEXT);
    Ctx *c = (Ctx *)p;
    if (ctx_dead(c)) return CONTEXT_IS_DESTROYED;
    *out = c;
    return SUCCESS;
}

/* The current context, alive and not poisoned by a sticky error. */
int current_ctx(Ctx **out) {
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
int resolve_stream(void *h, int same_as_current, Stream **out) {
    uintptr_t v = (uintptr_t)h;
    Ctx *c = NULL;
    if (v == 0 || v == STREAM_LEGACY || v == STREAM_PER_THREAD) {
        int rc = current_ctx(&c);
        if (rc) return rc;
        *out = v == STREAM_PER_THREAD ? per_thread_stream(c) : &c->legacy;
        return SUCCESS;
    }
    if (vec_has(&g_detached, h)) { /* its green context was destroyed (cuGreenCtxDestroy) */
        g_detached_calls++;
        return STREAM_DETACHED;
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
int64_t enqueue(Stream *s, int64_t work) {
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
Alloc *find_range(Ctx *c, uintptr_t p, size_t n) {
    for (size_t i = 0; i < g_allocs.n; i++) {
        Alloc *a = g_allocs.items[i];
        if ((c == NULL || a->ctx == c || a->ctx == NULL) && p >= a->base && p - a->base <= a->size && n <= a->size - (p - a->base)) return a;
    }
    return NULL;
}

Alloc *find_base(uintptr_t p) {
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

/* Takes `a` out of the registry: nothing reaches its memory through the stand-in any more. Queued
 * copies that use it run first (its free waits for them, or counted them as a use after free). */
void retire_alloc(Alloc *a) {
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

size_t live_bytes_of_device(int dev) {
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
void pool_keep_within_threshold(MemPool *p) {
    size_t room = p->threshold > p->used ? (size_t)(p->threshold - p->used) : 0;
    if (p->cached > room) p->cached = room;
}

/* A pool's allocation was freed: its bytes are cached for reuse; a destroyed pool goes once empty. */
void pool_release(MemPool *p, size_t bytes) {
    p->used -= bytes;
    p->cached += bytes;
    pool_keep_within_threshold(p);
    if (p->destroyed && p->used == 0) {
        vec_remove(&g_pools, p);
        free(p);
    }
}

/* A context's memory, streams and events go with it (destroy, primary release to 0, reset). */
void release_resources(Ctx *c) {
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

Ctx *new_ctx(int dev, int primary) {
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

int check_device(CUdevice dev) { return dev < 0 || dev >= g_devices ? INVALID_DEVICE : SUCCESS; }

/* What a synchronize in `c` reports before waiting: injected faults, then a pending sticky error
 * (a detected use-after-free); either sticky code poisons the context from then on. */
int sync_outcome(Ctx *c) {
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
