/*
 * Device memory (cuMemAlloc, stream-ordered frees), stream-ordered memory pools, memory info, and
 * page-locked host memory (cuMemHostAlloc, cuMemHostRegister) with its device pointers.
 */
#include "standin.h"

int allocate(Ctx *c, size_t bytes, Stream *s, CUdeviceptr *out) {
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

/* Like the real cuMemFree (and cudaFree), waits until work that uses the allocation is done. */
EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
    ENTER();
    Ctx *c;
    int rc = current_ctx(&c);
    if (rc) RETURN(rc);
    if ((rc = capture_forbids_context_wait(c))) RETURN(rc);
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
    int rc = resolve_stream(hStream, stream_needs_current_context(), &s);
    if (rc) RETURN(rc);
    Alloc *a = find_base((uintptr_t)dptr);
    if (!a) RETURN(INVALID_VALUE);
    note_outside_current(s);
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
    int rc = resolve_stream(hStream, stream_needs_current_context(), &s);
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
    note_outside_current(s);
    p->used += bytesize;
    if (p->used > p->used_high) p->used_high = p->used;
    if (p->used + p->cached > p->reserved_high) p->reserved_high = p->used + p->cached;
    RETURN(SUCCESS);
}

/* From the device's default pool, which the stand-in does not account: only the test entry point
 * that runs alloc_churn.c's loop in the JVM (DriverProbeTestApi.churnInStreamOrder) calls it. */
EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
    ENTER();
    if (!dptr) RETURN(INVALID_VALUE);
    Stream *s;
    int rc = resolve_stream(hStream, stream_needs_current_context(), &s);
    if (rc) RETURN(rc);
    if ((rc = allocate(s->ctx, bytesize, s, dptr))) RETURN(rc);
    note_outside_current(s);
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

/* The page-locked block holding [p, p+n), or NULL: pageable memory. */
HostBlock *pinned_block(const void *p, size_t n) {
    uintptr_t a = (uintptr_t)p;
    for (size_t i = 0; i < g_host.n; i++) {
        HostBlock *b = g_host.items[i];
        if (a >= b->base && a - b->base <= b->size && n <= b->size - (a - b->base)) return b;
    }
    return NULL;
}

/* The block that starts at p, allocated (registered = 0) or registered (1), or NULL. */
HostBlock *host_block_at(const void *p, int registered) {
    for (size_t i = 0; i < g_host.n; i++) {
        HostBlock *b = g_host.items[i];
        if (b->base == (uintptr_t)p && b->registered == registered) return b;
    }
    return NULL;
}

int count_host_blocks(int registered) {
    int n = 0;
    for (size_t i = 0; i < g_host.n; i++)
        if (((HostBlock *)g_host.items[i])->registered == registered) n++;
    return n;
}
