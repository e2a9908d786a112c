/*
 * Kernel launches: cuLaunchKernel and cuLaunchKernelEx with the cooperative and cluster
 * attributes, the cluster size query, and the allocations a launch's arguments point into.
 */
#include "standin.h"

/* The most blocks of a cluster of `k` on `dev`: 8, the portable limit, or 16 (an H200's) where the kernel
 * allows non-portable sizes. */
static unsigned max_cluster_blocks(const Kernel *k, int dev) { return k->non_portable_clusters[dev] ? 16 : 8; }

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
void argument_use(Ctx *c, const void *arg, int64_t until) {
    uint64_t v;
    memcpy(&v, arg, 8);
    Alloc *a = find_range(c, (uintptr_t)v, 0);
    if (a && (uintptr_t)v < a->base + a->size) a->in_use_until = max64(a->in_use_until, until);
}

/* The grid, block and dynamic shared memory of a launch of `k` on device `dev`: INVALID_VALUE where they do not fit. */
int check_launch_shape(const Kernel *k, int dev, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                       unsigned sharedMemBytes) {
    if (gx < 1 || gy < 1 || gz < 1 || gx > 2147483647u || gy > 65535 || gz > 65535) return INVALID_VALUE;
    if (bx < 1 || by < 1 || bz < 1 || bx > 1024 || by > 1024 || bz > 64 || (uint64_t)bx * by * bz > 1024) return INVALID_VALUE;
    /* Up to the kernel's max dynamic shared memory on this device: 48 KiB less its static shared memory unless
     * cuKernelSetAttribute opted it in to more (or set less). */
    if ((int64_t)sharedMemBytes > max_dynamic_shared(k, dev)) return INVALID_VALUE;
    return SUCCESS;
}

/* What a graph keeps of a launch's arguments (the caller checked them): their bytes, and the 8-byte ones as pointers. */
void record_launch_arguments(GraphOp *op, const Kernel *k, void **kernelParams) {
    memset(op->params, 0, sizeof op->params);
    op->npointers = 0;
    for (int i = 0; i < k->nparams; i++) {
        if (k->offsets[i] + k->sizes[i] <= sizeof op->params) memcpy(op->params + k->offsets[i], kernelParams[i], k->sizes[i]);
        if (k->sizes[i] == 8 && op->npointers < GRAPH_MAX_POINTER_ARGS) memcpy(&op->pointers[op->npointers++], kernelParams[i], 8);
    }
}

/* The launch itself, with the lock held; `flags` as g_last_launch_flags, `cluster_blocks` 0 without clusters. */
int launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                  unsigned sharedMemBytes, CUstream hStream, void **kernelParams, void **extra, int flags, uint64_t cluster_blocks) {
    int rc = check_kernel(f);
    if (rc) return rc;
    Stream *s;
    /* Drivers from 13.0 (contextless_probe.cu, driver 580) launch on a user stream in the stream's
     * context, with no context or another one current; older ones are modelled as wanting the
     * stream's context current. */
    if ((rc = resolve_stream(hStream, stream_needs_current_context(), &s))) return rc;
    if (extra) return NOT_SUPPORTED; /* cuhandle passes parameters through kernelParams only */
    Kernel *k = f;
    if ((rc = check_launch_shape(k, s->ctx->dev, gx, gy, gz, bx, by, bz, sharedMemBytes))) return rc;
    if (cluster_blocks > max_cluster_blocks(k, s->ctx->dev)) return INVALID_CLUSTER_SIZE;
    /* A cooperative grid must be resident at once: up to 2048 threads per SM on the SMs of the
     * stream's context (a green context's share, else the device's). */
    uint64_t threads = (uint64_t)bx * by * bz, blocks = (uint64_t)gx * gy * gz;
    if ((flags & 2) && blocks > (uint64_t)sm_count_of(s->ctx) * (2048 / threads)) return COOPERATIVE_LAUNCH_TOO_LARGE;
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
        op.kernel = k;
        op.grid[0] = gx, op.grid[1] = gy, op.grid[2] = gz;
        op.block[0] = bx, op.block[1] = by, op.block[2] = bz;
        op.shared = sharedMemBytes;
        if (nargs) record_launch_arguments(&op, k, kernelParams);
        return graph_record(s->capture, &op);
    }
    if (!t_depth || t_stack[t_depth - 1] != s->ctx) g_launches_outside_current++;
    int64_t done = enqueue(s, g_work_ns);
    for (int i = 0; i < nargs; i++)
        if (k->sizes[i] == 8) argument_use(s->ctx, kernelParams[i], done);
    g_launches++;
    note_launch(s->ctx);
    g_last_launch_flags = flags;
    return SUCCESS;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                               unsigned int by, unsigned int bz, unsigned int sharedMemBytes, CUstream hStream,
                               void **kernelParams, void **extra) {
    ENTER();
    RETURN(launch(f, gx, gy, gz, bx, by, bz, sharedMemBytes, hStream, kernelParams, extra, 0, 0));
}

/* Models the H200: cooperative grids up to 2048 resident threads per SM on its SMs; clusters that divide
 * the grid, up to 8 blocks (portable) or 16 where the kernel allows non-portable sizes; programmatic stream
 * serialization (alone) is accepted. Other attributes are NOT_SUPPORTED. */
EXPORT CUresult cuLaunchKernelEx(const LaunchConfig *config, CUfunction f, void **kernelParams, void **extra) {
    ENTER();
    if (!config || (config->numAttrs && !config->attrs)) RETURN(INVALID_VALUE);
    int flags = 1;
    uint64_t cluster_blocks = 0;
    for (unsigned i = 0; i < config->numAttrs; i++) {
        const LaunchAttribute *a = &config->attrs[i];
        if (a->id == 2) { /* CU_LAUNCH_ATTRIBUTE_COOPERATIVE */
            if (!a->value.cooperative) continue;
            flags |= 2; /* the grid's size is checked against the stream's SMs in launch() */
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
