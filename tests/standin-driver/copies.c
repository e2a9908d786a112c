/*
 * Copies and memsets in stream time: they run at once when their stream is idle, else when the
 * stream reaches them; page-locked host memory is read or written only then, as DMA does. A copy
 * is a memmove; the stream is busy for the simulated work time and the allocations count as in
 * use until then. Every device range must lie inside one allocation of the context.
 */
#include "standin.h"

long g_deferred_runs; /* operations that ran after their call had returned */

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

void execute(int kind, CUdeviceptr dst, void *host, CUdeviceptr src, unsigned char fill, size_t n) {
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
void run_due(int64_t t) {
    while (g_deferred.n && ((Deferred *)g_deferred.items[0])->due <= t) run_first_deferred();
}

/* After sleeping until `t`: what the stream did by then is in memory when the call returns. */
void wait_until(int64_t t) {
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

void run_through_last_touching(uintptr_t base, size_t size, int host_side) {
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

static int copy_for(enum CopyKind kind, CUdeviceptr dst, void *host, CUdeviceptr src, unsigned char fill, size_t n,
                    CUstream hStream, int wait, int64_t work);

/* Copies in stream time (see Deferred): at once when the stream is idle, else when it gets there.
 * The stream is busy for the simulated work time and the allocations count as in use until then.
 * Every device range must lie inside one allocation of the context. */
int copy(enum CopyKind kind, CUdeviceptr dst, void *host, CUdeviceptr src, unsigned char fill, size_t n,
                CUstream hStream, int wait) {
    return copy_for(kind, dst, host, src, fill, n, hStream, wait, g_work_ns);
}

/* copy, keeping the stream busy for `work` ns (a batch is one piece of work: its first copy). */
static int copy_for(enum CopyKind kind, CUdeviceptr dst, void *host, CUdeviceptr src, unsigned char fill, size_t n,
                    CUstream hStream, int wait, int64_t work) {
    Stream *s;
    int rc = resolve_stream(hStream, stream_needs_current_context(), &s);
    if (rc) return rc;
    if (n == 0) return SUCCESS;
    note_outside_current(s);
    if ((kind == HTOD || kind == DTOH) && !host) return INVALID_VALUE;
    Alloc *da = NULL, *sa = NULL;
    if (kind != DTOH && (rc = device_range(s->ctx, dst, n, &da))) return rc;
    if ((kind == DTOH || kind == DTOD) && (rc = device_range(s->ctx, src, n, &sa))) return rc;
    if (s->capture) {
        GraphOp op = {.kind = kind, .dst = dst, .src = src, .host = host, .fill = fill, .n = n};
        return graph_record(s->capture, &op);
    }
    int64_t done = enqueue(s, work);
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

long g_batch_copies; /* cuMemcpyBatchAsync calls that queued their copies */

/* cuMemcpyBatchAsync in CUDA 12.8's ABI (the one cuGetProcAddress hands out for 12080): every copy
 * is checked before any is queued; then they are queued in order on the stream as one piece of
 * work. A pointer inside a device allocation of the stream's context is device memory, any other
 * host memory; host-to-host copies are not modelled (INVALID_VALUE). *failIdx is the index of the
 * copy a failure pertains to, SIZE_MAX for one that pertains to none, as the driver documents. */
EXPORT CUresult cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                   CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, size_t *failIdx,
                                   CUstream hStream) {
    ENTER();
    if (!failIdx) RETURN(INVALID_VALUE);
    *failIdx = SIZE_MAX;
    if (count == 0 || !dsts || !srcs || !sizes) RETURN(INVALID_VALUE);
    if (!attrs || !attrsIdxs || numAttrs == 0 || numAttrs > count || attrsIdxs[0] != 0) RETURN(INVALID_VALUE);
    for (size_t k = 0; k < numAttrs; k++) {
        if (k > 0 && attrsIdxs[k] <= attrsIdxs[k - 1]) RETURN(INVALID_VALUE);
        if (attrsIdxs[k] >= count) RETURN(INVALID_VALUE);
        if (attrs[k].srcAccessOrder < MEMCPY_SRC_ACCESS_ORDER_STREAM || attrs[k].srcAccessOrder > MEMCPY_SRC_ACCESS_ORDER_ANY) {
            *failIdx = attrsIdxs[k];
            RETURN(INVALID_VALUE);
        }
    }
    /* The legacy NULL stream is refused, as documented. */
    if (!hStream || (uintptr_t)hStream == STREAM_LEGACY) RETURN(INVALID_VALUE);
    Stream *s;
    int rc = resolve_stream(hStream, stream_needs_current_context(), &s);
    if (rc) RETURN(rc);
    enum CopyKind *kinds = malloc(count * sizeof *kinds);
    if (!kinds) RETURN(OUT_OF_MEMORY);
    for (size_t i = 0; i < count; i++) {
        int dst_device = find_range(s->ctx, dsts[i], 0) != NULL, src_device = find_range(s->ctx, srcs[i], 0) != NULL;
        int out_of_bounds = (dst_device && !find_range(s->ctx, dsts[i], sizes[i])) || (src_device && !find_range(s->ctx, srcs[i], sizes[i]));
        if (out_of_bounds) g_out_of_bounds++;
        if (out_of_bounds || !dsts[i] || !srcs[i] || (!dst_device && !src_device)) {
            free(kinds);
            *failIdx = i;
            RETURN(INVALID_VALUE);
        }
        kinds[i] = dst_device ? (src_device ? DTOD : HTOD) : DTOH;
    }
    for (size_t i = 0; i < count && !rc; i++) {
        void *host = kinds[i] == HTOD ? (void *)(uintptr_t)srcs[i] : kinds[i] == DTOH ? (void *)(uintptr_t)dsts[i] : NULL;
        rc = copy_for(kinds[i], kinds[i] == DTOH ? 0 : dsts[i], host, kinds[i] == HTOD ? 0 : srcs[i], 0, sizes[i], hStream, 0,
                      i == 0 ? g_work_ns : 0);
        if (rc) *failIdx = i;
    }
    free(kinds);
    if (!rc) g_batch_copies++;
    RETURN(rc);
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
