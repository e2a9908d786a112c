/*
 * Streams (user, legacy and per-thread, with the legacy stream's ordering against blocking
 * streams), host functions queued on them, and events.
 */
#include "standin.h"

EXPORT CUresult cuStreamCreate(CUstream *phStream, unsigned int flags) {
    ENTER();
    if (!phStream || (flags & ~STREAM_NON_BLOCKING)) RETURN(INVALID_VALUE);
    Ctx *c;
    int rc = current_ctx(&c);
    if (rc) RETURN(rc);
    RETURN(new_user_stream(c, flags, phStream));
}

/* A user stream of `c`; counted for its green context, if it has one. */
int new_user_stream(Ctx *c, unsigned flags, CUstream *out) {
    Stream *s = calloc(1, sizeof *s);
    if (!s) return OUT_OF_MEMORY;
    s->ctx = c;
    s->flags = flags;
    s->kind = USER_STREAM;
    vec_push(&g_streams, s);
    if (c->green) c->green->streams++;
    *out = s;
    return SUCCESS;
}

EXPORT CUresult cuStreamDestroy_v2(CUstream hStream) {
    ENTER();
    if (vec_has(&g_detached, hStream)) {
        /* NVIDIA: a detached stream can still be destroyed, on drivers from 13.1 */
        if (driver_version() < 13010) {
            g_detached_calls++;
            RETURN(STREAM_DETACHED);
        }
        vec_remove(&g_detached, hStream);
        RETURN(SUCCESS);
    }
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
