// Probe for the design of SM partition handles (docs/handles.md, "SM partitions"): which driver
// calls a handle bound to a green context's CUcontext can make from any thread, which need that
// context current, and whether holding it current on one thread at a time (a lock per partition)
// while other threads queue work on its streams with nothing current is clean.
// Build and run on the GPU host: sh run.sh
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int failures;
#define TRY(label, x) ({ CUresult r_ = (x); const char* s_ = 0; if (r_ != CUDA_SUCCESS) cuGetErrorName(r_, &s_); \
    printf("PROBE %-64s %s\n", label, r_ == CUDA_SUCCESS ? "ok" : s_); r_; })
#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char* s_ = 0; cuGetErrorName(r_, &s_); \
    printf("FAIL %s -> %s line %d\n", #x, s_ ? s_ : "?", __LINE__); failures++; } } while (0)

static CUkernel k_smids, k_spin, k_bump;
static CUgreenCtx green[2];
static CUcontext green_ctx[2], primary;
static CUstream gs[2];
static CUmemoryPool pool;
static pthread_mutex_t partition_lock = PTHREAD_MUTEX_INITIALIZER;

static int nothing_current(void) { CUcontext c = (CUcontext) 1; cuCtxGetCurrent(&c); return c == 0; }

// Holds green context 0 current under the partition lock, one short driver call at a time, as
// a handle's activation would: events created and recorded, a stream created, popped again.
static void* holder(void* arg) {
    long errors = 0, n = (long) arg;
    for (int i = 0; i < 5000; i++) {
        pthread_mutex_lock(&partition_lock);
        if (cuCtxPushCurrent(green_ctx[0]) != CUDA_SUCCESS) errors++;
        CUevent e;
        if (cuEventCreate(&e, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) errors++;
        else { if (cuEventRecord(e, gs[0]) != CUDA_SUCCESS) errors++; if (cuEventDestroy(e) != CUDA_SUCCESS) errors++; }
        CUcontext popped; if (cuCtxPopCurrent(&popped) != CUDA_SUCCESS || popped != green_ctx[0]) errors++;
        pthread_mutex_unlock(&partition_lock);
    }
    printf("PROBE holder %ld: 5000 push/event/record/pop of green 0 under the lock, errors %ld, nothing current after: %s\n",
           n, errors, nothing_current() ? "yes" : "NO");
    failures += errors;
    return 0;
}

// Queues work on green stream 0 with nothing current: stream-ordered allocation from a pool,
// launches, frees.
static void* queuer(void* arg) {
    long errors = 0, n = (long) arg;
    for (int i = 0; i < 5000; i++) {
        CUdeviceptr p = 0;
        if (cuMemAllocFromPoolAsync(&p, 4096, pool, gs[0]) != CUDA_SUCCESS) { errors++; continue; }
        void* params[] = { &p };
        if (cuLaunchKernel((CUfunction) k_smids, 8, 1, 1, 32, 1, 1, 0, gs[0], params, 0) != CUDA_SUCCESS) errors++;
        if (cuMemFreeAsync(p, gs[0]) != CUDA_SUCCESS) errors++;
    }
    if (cuStreamSynchronize(gs[0]) != CUDA_SUCCESS) errors++;
    printf("PROBE queuer %ld: 5000 alloc/launch/free on green stream 0 with nothing current, errors %ld, nothing current: %s\n",
           n, errors, nothing_current() ? "yes" : "NO");
    failures += errors;
    return 0;
}

int main(int argc, char** argv) {
    CK(cuInit(0));
    CUdevice dev; CK(cuDeviceGet(&dev, 0));
    int drv = 0; cuDriverGetVersion(&drv); printf("driver CUDA %d\n", drv);
    CK(cuDevicePrimaryCtxRetain(&primary, dev));
    CUlibrary lib; CK(cuLibraryLoadFromFile(&lib, argc > 1 ? argv[1] : "probe_kernels.fatbin", 0, 0, 0, 0, 0, 0));
    CK(cuLibraryGetKernel(&k_smids, lib, "smids"));
    CK(cuLibraryGetKernel(&k_spin, lib, "spin"));
    CK(cuLibraryGetKernel(&k_bump, lib, "bump"));

    CUdevResource all; memset(&all, 0, sizeof all);
    CK(cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
    printf("PROBE device SMs %u\n", all.sm.smCount);
    // Granularity: ask for groups of 1 SM and see what the driver makes of it.
    for (unsigned int want = 1; want <= 16; want *= 2) {
        CUdevResource g[1], rest; unsigned int n = 1; memset(g, 0, sizeof g); memset(&rest, 0, sizeof rest);
        CUresult r = cuDevSmResourceSplitByCount(g, &n, &all, &rest, 0, want);
        const char* s = 0; if (r) cuGetErrorName(r, &s);
        printf("PROBE split min %2u: %s, group %u, left %u\n", want, r ? s : "ok", g[0].sm.smCount, rest.sm.smCount);
    }
    {
        CUdevResource g[8], rest; unsigned int n = 4; memset(g, 0, sizeof g); memset(&rest, 0, sizeof rest);
        CUresult r = cuDevSmResourceSplitByCount(g, &n, &all, &rest, 0, 32);
        printf("PROBE split 4 x 32: rc %d, groups %u: %u %u %u %u, left %u\n", r, n, g[0].sm.smCount, g[1].sm.smCount, g[2].sm.smCount, g[3].sm.smCount, rest.sm.smCount);
        unsigned int many = 0; r = cuDevSmResourceSplitByCount(0, &many, &all, &rest, 0, 8);
        printf("PROBE split count query (result NULL) min 8: rc %d, groups %u\n", r, many);
        n = 3; r = cuDevSmResourceSplitByCount(g, &n, &all, &rest, 0, 64);
        printf("PROBE split 3 x 64 of %u: rc %d, groups %u, left %u\n", all.sm.smCount, r, n, rest.sm.smCount);
    }
    CUdevResource parts[2], rest; unsigned int n = 2; memset(parts, 0, sizeof parts);
    CK(cuDevSmResourceSplitByCount(parts, &n, &all, &rest, 0, 64));
    for (int i = 0; i < 2; i++) {
        CUdevResourceDesc desc; CK(cuDevResourceGenerateDesc(&desc, &parts[i], 1));
        CK(cuGreenCtxCreate(&green[i], desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
        CK(cuCtxFromGreenCtx(&green_ctx[i], green[i]));
        CK(cuGreenCtxStreamCreate(&gs[i], green[i], CU_STREAM_NON_BLOCKING, 0));
    }
    unsigned long long id0 = 0, id1 = 0, idp = 0;
    TRY("cuCtxGetId(green CUcontext) without it current", cuCtxGetId(green_ctx[0], &id0));
    cuCtxGetId(green_ctx[1], &id1); cuCtxGetId(primary, &idp);
    printf("PROBE ids primary %llu green %llu %llu\n", idp, id0, id1);
    CUmemPoolProps props; memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED; props.location.type = CU_MEM_LOCATION_TYPE_DEVICE; props.location.id = dev;
    CK(cuMemPoolCreate(&pool, &props));
    CK(cuCtxSetCurrent(0));

    printf("-- events across contexts --\n");
    CUevent ep, eg;
    cuCtxPushCurrent(primary); CK(cuEventCreate(&ep, CU_EVENT_DISABLE_TIMING)); CUcontext x; cuCtxPopCurrent(&x);
    TRY("cuEventRecord(primary's event, green stream), nothing current", cuEventRecord(ep, gs[0]));
    cuCtxPushCurrent(primary);
    TRY("cuEventRecord(primary's event, green stream), primary current", cuEventRecord(ep, gs[0]));
    cuCtxPopCurrent(&x);
    cuCtxPushCurrent(green_ctx[0]); CK(cuEventCreate(&eg, CU_EVENT_DISABLE_TIMING)); cuCtxPopCurrent(&x);
    TRY("cuEventRecord(green's event, green stream), nothing current", cuEventRecord(eg, gs[0]));
    TRY("cuStreamWaitEvent(green stream 1, green 0's event), nothing current", cuStreamWaitEvent(gs[1], eg, 0));
    TRY("cuEventSynchronize(green's event), nothing current", cuEventSynchronize(eg));
    TRY("cuEventQuery(green's event), nothing current", cuEventQuery(eg));

    printf("-- memory across contexts --\n");
    CUdeviceptr a = 0, b = 0;
    TRY("cuMemAllocFromPoolAsync(pool, green stream), nothing current", cuMemAllocFromPoolAsync(&a, 1 << 20, pool, gs[0]));
    cuCtxPushCurrent(primary); CK(cuMemAlloc(&b, 1 << 20)); CUstream ps; CK(cuStreamCreate(&ps, CU_STREAM_NON_BLOCKING)); cuCtxPopCurrent(&x);
    void* pa[] = { &a }; void* pb[] = { &b };
    TRY("kernel on a primary stream writes green-pool memory", cuLaunchKernel((CUfunction) k_smids, 64, 1, 1, 32, 1, 1, 0, ps, pa, 0));
    TRY("  and synchronises", cuStreamSynchronize(ps));
    TRY("kernel on a green stream writes primary cuMemAlloc memory", cuLaunchKernel((CUfunction) k_smids, 64, 1, 1, 32, 1, 1, 0, gs[0], pb, 0));
    TRY("  and synchronises", cuStreamSynchronize(gs[0]));
    void* host = 0;
    cuCtxPushCurrent(green_ctx[0]); TRY("cuMemHostAlloc with green current", cuMemHostAlloc(&host, 1 << 20, 0)); cuCtxPopCurrent(&x);
    TRY("cuMemcpyHtoDAsync(green-pinned -> b, primary stream)", cuMemcpyHtoDAsync(b, host, 1 << 20, ps));
    TRY("cuMemcpyDtoHAsync(a -> green-pinned, green stream)", cuMemcpyDtoHAsync(host, a, 1 << 20, gs[0]));
    TRY("  and synchronises", cuStreamSynchronize(gs[0]));

    printf("-- module globals per context --\n");
    CUdeviceptr gp = 0, gg = 0; size_t sz = 0;
    cuCtxPushCurrent(primary); TRY("cuLibraryGetGlobal(marker), primary current", cuLibraryGetGlobal(&gp, &sz, lib, "marker")); cuCtxPopCurrent(&x);
    cuCtxPushCurrent(green_ctx[0]); TRY("cuLibraryGetGlobal(marker), green 0 current", cuLibraryGetGlobal(&gg, &sz, lib, "marker")); cuCtxPopCurrent(&x);
    printf("PROBE marker address primary %#llx green %#llx (%s)\n", (unsigned long long) gp, (unsigned long long) gg, gp == gg ? "same" : "different");
    unsigned int out = 0; CUdeviceptr o = 0; cuMemAllocFromPoolAsync(&o, 64, pool, gs[0]);
    void* po[] = { &o };
    CK(cuLaunchKernel((CUfunction) k_bump, 1, 1, 1, 32, 1, 1, 0, gs[0], po, 0));
    CK(cuMemcpyDtoHAsync(&out, o, 4, gs[0])); CK(cuStreamSynchronize(gs[0]));
    unsigned int vp = 0, vg = 0;
    cuCtxPushCurrent(primary); cuMemcpyDtoH(&vp, gp, 4); cuCtxPopCurrent(&x);
    cuCtxPushCurrent(green_ctx[0]); cuMemcpyDtoH(&vg, gg, 4); cuCtxPopCurrent(&x);
    printf("PROBE bump on the green stream saw %u; marker via primary address %u, via green address %u\n", out, vp, vg);

    printf("-- graphs --\n");
    CUstream cs = 0;
    TRY("cuGreenCtxStreamCreate for capture", cuGreenCtxStreamCreate(&cs, green[0], CU_STREAM_NON_BLOCKING, 0));
    TRY("cuStreamBeginCapture(green stream), nothing current", cuStreamBeginCapture(cs, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    cuLaunchKernel((CUfunction) k_smids, 64, 1, 1, 32, 1, 1, 0, cs, pa, 0);
    CUgraph graph = 0; TRY("cuStreamEndCapture", cuStreamEndCapture(cs, &graph));
    CUgraphExec exec = 0;
    TRY("cuGraphInstantiate, nothing current", cuGraphInstantiateWithFlags(&exec, graph, 0));
    if (!exec) { cuCtxPushCurrent(green_ctx[0]); TRY("cuGraphInstantiate, green current", cuGraphInstantiateWithFlags(&exec, graph, 0)); cuCtxPopCurrent(&x); }
    TRY("cuGraphLaunch(green stream), nothing current", cuGraphLaunch(exec, gs[0]));
    TRY("cuGraphLaunch(primary stream), nothing current", cuGraphLaunch(exec, ps));
    TRY("  and synchronises", cuStreamSynchronize(gs[0]));
    cuStreamSynchronize(ps);

    printf("-- streams made with the green CUcontext current --\n");
    CUstream made = 0; CUgreenCtx owner = 0;
    cuCtxPushCurrent(green_ctx[1]); TRY("cuStreamCreate with green 1 current", cuStreamCreate(&made, CU_STREAM_NON_BLOCKING)); cuCtxPopCurrent(&x);
    TRY("cuStreamGetGreenCtx(that stream)", cuStreamGetGreenCtx(made, &owner));
    printf("PROBE its green context is green 1: %s\n", owner == green[1] ? "yes" : "no");

    printf("-- one holder of green 0 under a lock, three threads queueing on its stream --\n");
    pthread_t t[4];
    pthread_create(&t[0], 0, holder, (void*) 0);
    for (long i = 1; i < 4; i++) pthread_create(&t[i], 0, queuer, (void*) i);
    for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
    printf("-- two holders handing green 0 over under the lock, two queueing --\n");
    pthread_create(&t[0], 0, holder, (void*) 0); pthread_create(&t[1], 0, holder, (void*) 1);
    for (long i = 2; i < 4; i++) pthread_create(&t[i], 0, queuer, (void*) i);
    for (int i = 0; i < 4; i++) pthread_join(t[i], 0);

    printf("-- destroying a green context --\n");
    CUstream keep = gs[1];
    CK(cuStreamSynchronize(keep));
    TRY("cuGreenCtxDestroy(green 1)", cuGreenCtxDestroy(green[1]));
    TRY("cuLaunchKernel on a stream of the destroyed green context", cuLaunchKernel((CUfunction) k_smids, 1, 1, 1, 32, 1, 1, 0, keep, pa, 0));
    TRY("cuStreamSynchronize of it", cuStreamSynchronize(keep));
    TRY("work on green 0 still runs", cuLaunchKernel((CUfunction) k_smids, 1, 1, 1, 32, 1, 1, 0, gs[0], pa, 0));
    TRY("  and synchronises", cuStreamSynchronize(gs[0]));
    printf("PROBE nothing current at the end: %s\n", nothing_current() ? "yes" : "NO");
    printf("DONE failures %d\n", failures);
    return failures != 0;
}
