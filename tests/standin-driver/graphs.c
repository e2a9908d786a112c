/*
 * Graphs by stream capture: beginning and ending a capture, the calls a capture forbids, the
 * recorded operations, instantiation, replay and destruction, the kernel nodes an executable
 * graph changes without a new capture, and conditional nodes (IF, WHILE) with captured bodies.
 */
#include "standin.h"

/* Node handles: numbers unique across graphs (a graph's operations move as it grows), 0 never used. */
static uintptr_t g_next_node_id = 1;

int graph_record(Graph *g, const GraphOp *op) {
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 16;
        GraphOp *ops = realloc(g->ops, cap * sizeof *ops);
        if (!ops) return OUT_OF_MEMORY;
        g->ops = ops;
        g->cap = cap;
    }
    g->ops[g->n] = *op;
    g->ops[g->n++].id = g_next_node_id++;
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
        if (!g->is_body) graph_free(g); /* a body stays its node's */
        *phGraph = NULL;
        RETURN(STREAM_CAPTURE_INVALIDATED);
    }
    if (!g->is_body) vec_push(&g_graphs, g); /* a body belongs to its conditional node */
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
        for (size_t i = 0; i < g->n && i < *numNodes; i++) nodes[i] = (CUgraphNode)g->ops[i].id;
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
    Graph *e = graph_copy(hGraph);
    if (!e) RETURN(OUT_OF_MEMORY);
    vec_push(&g_graph_execs, e);
    *phGraphExec = e;
    RETURN(SUCCESS);
}

/* A deep copy of `g` (conditional nodes' bodies included), or NULL without memory. */
Graph *graph_copy(const Graph *g) {
    Graph *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    *e = *g;
    e->cap = g->n;
    e->ops = g->n ? malloc(g->n * sizeof *e->ops) : NULL;
    if (g->n && !e->ops) {
        free(e);
        return NULL;
    }
    if (g->n) memcpy(e->ops, g->ops, g->n * sizeof *e->ops);
    for (size_t i = 0; i < e->n; i++) {
        if (!e->ops[i].conditional) continue;
        Graph **slot = malloc(sizeof *slot);
        Graph *body = slot ? graph_copy(*g->ops[i].body) : NULL;
        if (!body) {
            free(slot);
            e->n = i; /* the bodies copied so far are the copy's; the rest are still g's */
            graph_free(e);
            return NULL;
        }
        *slot = body;
        e->ops[i].body = slot;
    }
    return e;
}

/* Frees `g` and its conditional nodes' bodies. */
void graph_free(Graph *g) {
    for (size_t i = 0; i < g->n; i++)
        if (g->ops[i].conditional) {
            graph_free(*g->ops[i].body);
            free(g->ops[i].body);
        }
    free(g->ops);
    free(g);
}

/* Whether `g` is a graph the caller may add to: a template, or a graph (or body) a stream captures. */
static int graph_is_open(const Graph *g) {
    if (vec_has(&g_graphs, (void *)g)) return 1;
    for (size_t i = 0; i < g_streams.n; i++)
        if (((Stream *)g_streams.items[i])->capture == g) return 1;
    return 0;
}

/* Runs `e`'s operations on `s`; a conditional node's body runs once where its condition starts
 * non-zero (kernels do not run here, so nothing sets it: a WHILE body runs once, an IF body with the
 * default 0 never). */
static int replay(const Graph *e, Stream *s, CUstream hStream) {
    int rc;
    for (size_t i = 0; i < e->n; i++) {
        const GraphOp *op = &e->ops[i];
        if (op->conditional) {
            if (op->cond_default && (rc = replay(*op->body, s, hStream))) return rc;
        } else if (op->launch) {
            memcpy(g_last_params, op->params, sizeof op->params); /* what the tests read back (control 16) */
            memset(g_last_params + sizeof op->params, 0, sizeof g_last_params - sizeof op->params);
            int64_t done = enqueue(s, g_work_ns);
            for (int j = 0; j < op->npointers; j++) argument_use(s->ctx, &op->pointers[j], done);
            g_launches++;
            note_launch(s->ctx);
        } else if ((rc = copy((enum CopyKind)op->kind, op->dst, op->host, op->src, op->fill, op->n, hStream, 0))) {
            return rc;
        }
    }
    return SUCCESS;
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
    RETURN(replay(e, s, hStream));
}

/* The capture's status, identity, graph and current dependencies: its last recorded node alone
 * (the stand-in's captures are chains), none before the first. */
EXPORT CUresult cuStreamGetCaptureInfo_v2(CUstream hStream, int *status, uint64_t *id, CUgraph *graph, const CUgraphNode **deps,
                                          size_t *numDeps) {
    ENTER();
    if (!status) RETURN(INVALID_VALUE);
    Stream *s;
    int rc = resolve_stream(hStream, 0, &s);
    if (rc) RETURN(rc);
    Graph *g = s->capture;
    *status = !g ? 0 : g->invalidated ? 2 : 1;
    if (id) *id = (uint64_t)(uintptr_t)g;
    if (graph) *graph = g;
    s->capture_tail = g && g->n ? (CUgraphNode)g->ops[g->n - 1].id : NULL;
    if (deps) *deps = s->capture_tail ? &s->capture_tail : NULL;
    if (numDeps) *numDeps = s->capture_tail ? 1 : 0;
    RETURN(SUCCESS);
}

/* New arguments, grid, block and shared memory for a launch node of an executable graph: the node must be one
 * of its launches, the function the one it launches (the driver refuses another), the shape one a launch could
 * have; the arguments are read as the kernel declares them. Later replays use them. */
EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode, const KernelNodeParams *p) {
    ENTER();
    if (!p) RETURN(INVALID_VALUE);
    if (!vec_has(&g_graph_execs, hGraphExec)) RETURN(bad_handle(INVALID_HANDLE));
    Graph *e = hGraphExec;
    GraphOp *op = NULL;
    for (size_t i = 0; i < e->n && !op; i++)
        if (e->ops[i].id == (uintptr_t)hNode) op = &e->ops[i];
    if (!op || !op->launch) RETURN(INVALID_VALUE);
    if (p->extra || p->func != op->kernel) RETURN(INVALID_VALUE);
    Kernel *k = op->kernel;
    int rc = check_launch_shape(k, e->ctx->dev, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY, p->blockDimZ,
                                p->sharedMemBytes);
    if (rc) RETURN(rc);
    if (k->nparams > 0) {
        if (!p->kernelParams) RETURN(INVALID_VALUE);
        for (int i = 0; i < k->nparams; i++)
            if (!p->kernelParams[i]) RETURN(INVALID_VALUE);
        record_launch_arguments(op, k, p->kernelParams);
    }
    op->grid[0] = p->gridDimX, op->grid[1] = p->gridDimY, op->grid[2] = p->gridDimZ;
    op->block[0] = p->blockDimX, op->block[1] = p->blockDimY, op->block[2] = p->blockDimZ;
    op->shared = p->sharedMemBytes;
    RETURN(SUCCESS);
}

static CUresult destroy_graph(Vec *registry, void *p) {
    ENTER();
    if (!vec_has(registry, p)) RETURN(bad_handle(INVALID_HANDLE));
    vec_remove(registry, p);
    graph_free(p);
    RETURN(SUCCESS);
}

EXPORT CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) { return destroy_graph(&g_graph_execs, hGraphExec); }

EXPORT CUresult cuGraphDestroy(CUgraph hGraph) { return destroy_graph(&g_graphs, hGraph); }

/* Conditional handles: a number, its lowest bit whether the condition starts non-zero. */
static uint64_t g_next_condition = 1;

EXPORT CUresult cuGraphConditionalHandleCreate(uint64_t *handle, CUgraph hGraph, CUcontext ctx, unsigned defaultValue, unsigned flags) {
    ENTER();
    if (!handle || flags > 1) RETURN(INVALID_VALUE);
    if (!graph_is_open(hGraph)) RETURN(bad_handle(INVALID_VALUE));
    if (ctx && ctx != ((Graph *)hGraph)->ctx) RETURN(INVALID_CONTEXT);
    *handle = (g_next_condition++ << 1) | (defaultValue != 0);
    RETURN(SUCCESS);
}

/* Only conditional nodes (IF, WHILE, one body) are modelled; the dependencies must be nodes of the graph. */
EXPORT CUresult cuGraphAddNode(CUgraphNode *phNode, CUgraph hGraph, const CUgraphNode *deps, size_t n, GraphNodeParams *params) {
    ENTER();
    if (!phNode || !params || (n && !deps)) RETURN(INVALID_VALUE);
    if (!graph_is_open(hGraph)) RETURN(bad_handle(INVALID_VALUE));
    if (params->type != 13) RETURN(NOT_SUPPORTED);
    if (params->conditional.kind > 1 || params->conditional.size != 1 || !params->conditional.handle) RETURN(INVALID_VALUE);
    Graph *g = hGraph;
    for (size_t i = 0; i < n; i++) {
        int found = 0;
        for (size_t j = 0; j < g->n && !found; j++) found = g->ops[j].id == (uintptr_t)deps[i];
        if (!found) RETURN(INVALID_VALUE);
    }
    Graph **slot = malloc(sizeof *slot);
    Graph *body = calloc(1, sizeof *body);
    if (!slot || !body) {
        free(slot);
        free(body);
        RETURN(OUT_OF_MEMORY);
    }
    body->ctx = g->ctx;
    body->is_body = 1;
    *slot = body;
    GraphOp op = {0};
    op.conditional = (int)params->conditional.kind + 1;
    op.cond_default = (unsigned)(params->conditional.handle & 1);
    op.body = slot;
    int rc = graph_record(g, &op);
    if (rc) {
        free(slot);
        free(body);
        RETURN(rc);
    }
    params->conditional.phGraph_out = (CUgraph *)slot;
    *phNode = (CUgraphNode)g->ops[g->n - 1].id;
    RETURN(SUCCESS);
}

/* The stand-in's captures are chains: setting or adding dependencies changes nothing it models. */
EXPORT CUresult cuStreamUpdateCaptureDependencies(CUstream hStream, CUgraphNode *nodes, size_t n, unsigned flags) {
    ENTER();
    if ((n && !nodes) || flags > 1) RETURN(INVALID_VALUE);
    Stream *s;
    int rc = resolve_stream(hStream, 0, &s);
    if (rc) RETURN(rc);
    if (!s->capture) RETURN(ILLEGAL_STATE);
    RETURN(SUCCESS);
}

/* Capture into an existing graph: modelled for a conditional node's body, with no dependencies. */
EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph, const CUgraphNode *deps, const void *edges, size_t n, int mode) {
    ENTER();
    (void)deps;
    (void)edges;
    if (n) RETURN(NOT_SUPPORTED);
    if (mode < 0 || mode > 2 || !hGraph) RETURN(INVALID_VALUE);
    Stream *s;
    int rc = resolve_stream(hStream, 1, &s);
    if (rc) RETURN(rc);
    if (s->kind == LEGACY_STREAM) RETURN(STREAM_CAPTURE_UNSUPPORTED);
    if (s->capture) RETURN(ILLEGAL_STATE);
    Graph *g = hGraph;
    if (!g->is_body) RETURN(NOT_SUPPORTED);
    s->capture = g;
    s->capture_thread = thread_id();
    s->capture_mode = mode;
    RETURN(SUCCESS);
}
