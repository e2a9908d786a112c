/*
 * Graphs by stream capture: beginning and ending a capture, the calls a capture forbids, the
 * recorded operations, instantiation, replay and destruction.
 */
#include "standin.h"

int graph_record(Graph *g, const GraphOp *op) {
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
int capture_forbids_unsafe_call(void) {
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
int capture_in_context_forbids_wait(Ctx *c) {
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

/* What a context-wide wait by the calling thread (cuCtxSynchronize, cuMemFree) checks first: its own
 * captures forbid it as an unsafe call, else any capture in `c` forbids the wait. */
int capture_forbids_context_wait(Ctx *c) {
    int rc = capture_forbids_unsafe_call();
    return rc ? rc : capture_in_context_forbids_wait(c);
}

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
            note_launch(s->ctx);
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
