/*
 * Contexts and the calling thread's context stack: create, destroy, current, push and pop, id,
 * API version and the context-wide synchronize.
 */
#include "standin.h"

/* Puts `c` on top of the calling thread's stack (the caller checked there is room). */
static void push_current(Ctx *c) {
    Ctx *before = t_depth ? t_stack[t_depth - 1] : NULL;
    t_stack[t_depth++] = c;
    note_current_change(before);
}

EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) {
    ENTER();
    (void)flags;
    if (!pctx) RETURN(INVALID_VALUE);
    if (check_device(dev)) RETURN(INVALID_DEVICE);
    if (t_depth == STACK_DEPTH) RETURN(INVALID_VALUE);
    Ctx *c = new_ctx(dev, 0);
    push_current(c);
    *pctx = c;
    RETURN(SUCCESS);
}

EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) {
    ENTER();
    Ctx *c;
    int rc = check_ctx(ctx, &c);
    if (rc) RETURN(rc);
    /* Primary contexts are released, not destroyed; a green context's CUcontext goes with cuGreenCtxDestroy. */
    if (c->primary || c->green) RETURN(INVALID_CONTEXT);
    release_resources(c);
    c->active = 0;
    drop_from_stack(c);
    RETURN(SUCCESS);
}

/* Like the driver, only the calling thread's stack loses a destroyed context; other threads that
 * still have it current get CONTEXT_IS_DESTROYED from every call. */
void drop_from_stack(Ctx *c) {
    Ctx *before = t_depth ? t_stack[t_depth - 1] : NULL;
    int j = 0;
    for (int i = 0; i < t_depth; i++)
        if (t_stack[i] != c) t_stack[j++] = t_stack[i];
    t_depth = j;
    note_current_change(before);
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx) {
    ENTER();
    if (!pctx) RETURN(INVALID_VALUE);
    *pctx = t_depth ? t_stack[t_depth - 1] : NULL;
    RETURN(SUCCESS);
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
    ENTER();
    Ctx *before = t_depth ? t_stack[t_depth - 1] : NULL;
    if (!ctx) {
        if (t_depth) t_depth--;
        note_current_change(before);
        RETURN(SUCCESS);
    }
    Ctx *c;
    int rc = check_ctx(ctx, &c); /* stricter than the driver, which accepts a dead one and crashes later */
    if (rc) RETURN(rc);
    if (t_depth == 0) t_depth = 1;
    t_stack[t_depth - 1] = c;
    note_current_change(before);
    RETURN(SUCCESS);
}

EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
    ENTER();
    Ctx *c;
    int rc = check_ctx(ctx, &c);
    if (rc) RETURN(rc);
    if (t_depth == STACK_DEPTH) RETURN(INVALID_VALUE);
    push_current(c);
    RETURN(SUCCESS);
}

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx) {
    ENTER();
    if (!t_depth) RETURN(INVALID_CONTEXT);
    Ctx *before = t_stack[t_depth - 1];
    t_depth--;
    note_current_change(before);
    if (pctx) *pctx = before;
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
    if ((rc = capture_forbids_context_wait(c))) RETURN(rc);
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
