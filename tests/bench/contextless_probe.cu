// Probe: which stream-ordered driver calls work when the stream's context is NOT current on the
// calling thread (nothing current, or another context current)? If a launch of a context's own
// CUfunction on that context's stream works without making the context current, a library can
// skip the per-call activation (cuCtxSetCurrent in and out) for launches, memsets and stream-ordered
// allocations and frees from a pool (rust/src/core/driver/stream_context.rs). Prints one line per
// observation: PROBE <name> <result>. Built and run on the GPU host by tests/bench/run-all.sh.
#include <cuda.h>
#include <chrono>
#include <cstdio>

static const char* PTX =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry k(.param .u64 p, .param .u32 v) {\n"
    " .reg .b64 %rd<3>; .reg .b32 %r<2>;\n"
    " ld.param.u64 %rd1, [p]; ld.param.u32 %r1, [v]; cvta.to.global.u64 %rd2, %rd1;\n"
    " st.global.u32 [%rd2], %r1; ret;\n}\n"
    ".visible .entry e() { ret; }\n";

static const char* name(CUresult r) {
  const char* s = "?";
  cuGetErrorName(r, &s);
  return s;
}
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Reads the value at p with ctx current, then leaves nothing current.
static unsigned readBack(CUcontext ctx, CUdeviceptr p) {
  unsigned v = 0;
  cuCtxSetCurrent(ctx);
  cuCtxSynchronize();
  cuMemcpyDtoH(&v, p, 4);
  cuCtxSetCurrent(nullptr);
  return v;
}

// Stream-ordered memory on a's stream with `current` current (nothing, or another context): a
// 4-byte allocation from `pool` (a pool of a's device, as cuhandle's), a memset into it, read back
// in a, freed on the stream. Prints each call's result, the value read and whether `current` stayed
// current throughout.
static void poolRound(const char* label, CUcontext a, CUcontext current, CUmemoryPool pool, CUstream s, unsigned value) {
  cuCtxSetCurrent(current);
  CUdeviceptr q = 0;
  CUresult ra = cuMemAllocFromPoolAsync(&q, 4, pool, s);
  CUresult rm = ra == CUDA_SUCCESS ? cuMemsetD32Async(q, value, 1, s) : ra;
  CUcontext after_alloc = nullptr;
  cuCtxGetCurrent(&after_alloc);
  unsigned got = rm == CUDA_SUCCESS ? readBack(a, q) : 0;
  cuCtxSetCurrent(current);
  CUresult rf = ra == CUDA_SUCCESS ? cuMemFreeAsync(q, s) : ra;
  CUcontext after_free = nullptr;
  cuCtxGetCurrent(&after_free);
  cuCtxSetCurrent(a);
  CUresult rs = cuStreamSynchronize(s);
  cuCtxSetCurrent(nullptr);
  printf("PROBE alloc_from_pool_async_%s %s memset %s free_async %s then_sync %s value %u current_kept %d\n", label, name(ra), name(rm), name(rf), name(rs),
         got, after_alloc == current && after_free == current);
}

int main() {
  setvbuf(stdout, nullptr, _IONBF, 0);
  cuInit(0);
  CUdevice dev;
  cuDeviceGet(&dev, 0);
  CUcontext a, b, cur;
  cuDevicePrimaryCtxRetain(&a, dev);
  cuCtxSetCurrent(a);
  CUlibrary lib;
  CUresult r = cuLibraryLoadData(&lib, PTX, nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (r != CUDA_SUCCESS) { printf("PROBE load %s\n", name(r)); return 1; }
  CUkernel kk, ke;
  cuLibraryGetKernel(&kk, lib, "k");
  cuLibraryGetKernel(&ke, lib, "e");
  CUfunction fk, fe;
  cuKernelGetFunction(&fk, kk);
  cuKernelGetFunction(&fe, ke);
  CUstream s;
  cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
  CUevent ev;
  cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING);
  CUdeviceptr p;
  cuMemAlloc(&p, 4);
  cuMemsetD32(p, 0, 1);
  cuCtxSynchronize();
  cuCtxSetCurrent(nullptr);

  unsigned v = 11;
  void* args[] = {&p, &v};
  r = cuLaunchKernel(fk, 1, 1, 1, 1, 1, 1, 0, s, args, nullptr);
  printf("PROBE launch_function_nothing_current %s value %u\n", name(r), readBack(a, p));
  v = 12;
  r = cuLaunchKernel((CUfunction)kk, 1, 1, 1, 1, 1, 1, 0, s, args, nullptr);
  printf("PROBE launch_kernel_nothing_current %s value %u\n", name(r), readBack(a, p));
  unsigned host = 13;
  r = cuMemcpyHtoDAsync(p, &host, 4, s);
  printf("PROBE memcpy_htod_async_nothing_current %s value %u\n", name(r), readBack(a, p));
  r = cuMemsetD32Async(p, 14, 1, s);
  printf("PROBE memset_async_nothing_current %s value %u\n", name(r), readBack(a, p));
  r = cuEventRecord(ev, s);
  printf("PROBE event_record_nothing_current %s\n", name(r));
  r = cuStreamSynchronize(s);
  printf("PROBE stream_sync_nothing_current %s\n", name(r));
  r = cuStreamQuery(s);
  printf("PROBE stream_query_nothing_current %s\n", name(r));
  // What a staged array copy on a handle's own stream does per chunk (rust/src/core/transfer):
  // a DMA from host memory, an event record after it, and later a wait on that event.
  unsigned back = 0;
  r = cuMemcpyDtoHAsync(&back, p, 4, s);
  CUresult rr = cuEventRecord(ev, s);
  CUresult rw = cuEventSynchronize(ev);
  printf("PROBE memcpy_dtoh_async_nothing_current %s record %s event_sync %s value %u\n", name(r), name(rr), name(rw), back);

#if CUDA_VERSION >= 13000
  cuCtxCreate(&b, nullptr, 0, dev);  // b is now current
#else
  cuCtxCreate(&b, 0, dev);
#endif
  v = 15;
  r = cuLaunchKernel(fk, 1, 1, 1, 1, 1, 1, 0, s, args, nullptr);
  cuCtxGetCurrent(&cur);
  printf("PROBE launch_function_other_current %s still_other_current %d", name(r), cur == b);
  printf(" value %u\n", readBack(a, p));
  cuCtxSetCurrent(b);
  v = 16;
  r = cuLaunchKernel((CUfunction)kk, 1, 1, 1, 1, 1, 1, 0, s, args, nullptr);
  printf("PROBE launch_kernel_other_current_on_a_stream %s", name(r));
  printf(" value %u\n", readBack(a, p));
  cuCtxSetCurrent(b);
  r = cuMemsetD32Async(p, 17, 1, s);
  printf("PROBE memset_async_other_current %s value %u\n", name(r), readBack(a, p));
  cuCtxSetCurrent(b);
  back = 0;
  r = cuMemcpyDtoHAsync(&back, p, 4, s);
  rr = cuEventRecord(ev, s);
  rw = cuEventSynchronize(ev);
  cuCtxGetCurrent(&cur);
  printf("PROBE memcpy_dtoh_async_other_current %s record %s event_sync %s value %u still_other_current %d\n", name(r), name(rr), name(rw), back, cur == b);

  CUmemPoolProps props = {};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = dev;
  CUmemoryPool pool;
  r = cuMemPoolCreate(&pool, &props);
  if (r != CUDA_SUCCESS) {
    printf("PROBE pool_create %s\n", name(r));
  } else {
    poolRound("nothing_current", a, nullptr, pool, s, 18);
    poolRound("other_current", a, b, pool, s, 19);
    // Costs of a 1 MiB allocate + memset + free round (the churn of docs/performance.md) on s.
    const int M = 100000;
    for (int rep = 0; rep < 3; rep++) {
      for (int way = 0; way < 3; way++) {
        cuCtxSetCurrent(way == 1 ? a : nullptr);
        double t0 = now();
        for (int i = 0; i < M; i++) {
          CUdeviceptr q;
          if (way == 2) cuCtxSetCurrent(a);
          cuMemAllocFromPoolAsync(&q, 1 << 20, pool, s);
          if (way == 2) { cuCtxSetCurrent(nullptr); cuCtxSetCurrent(a); }
          cuMemsetD8Async(q, 0, 1 << 20, s);
          if (way == 2) { cuCtxSetCurrent(nullptr); cuCtxSetCurrent(a); }
          cuMemFreeAsync(q, s);
          if (way == 2) cuCtxSetCurrent(nullptr);
        }
        double t1 = now();
        cuStreamSynchronize(s);
        const char* what[] = {"nothing_current", "context_current", "set_current_in_and_out"};
        printf("PROBE cost_churn_%s_us %.3f\n", what[way], (t1 - t0) / M * 1e6);
      }
    }
    cuCtxSetCurrent(nullptr);
  }

  // Costs: empty launches on s with nothing current, with a current, and switching per launch.
  const int N = 200000;
  for (int rep = 0; rep < 3; rep++) {
    cuCtxSetCurrent(nullptr);
    double t0 = now();
    for (int i = 0; i < N; i++) cuLaunchKernel(fe, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr);
    cuStreamSynchronize(s);
    double t1 = now();
    printf("PROBE cost_launch_nothing_current_us %.3f\n", (t1 - t0) / N * 1e6);
    cuCtxSetCurrent(a);
    t0 = now();
    for (int i = 0; i < N; i++) cuLaunchKernel(fe, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr);
    cuStreamSynchronize(s);
    t1 = now();
    printf("PROBE cost_launch_context_current_us %.3f\n", (t1 - t0) / N * 1e6);
    cuCtxSetCurrent(nullptr);
    t0 = now();
    for (int i = 0; i < N; i++) {
      cuCtxSetCurrent(a);
      cuLaunchKernel(fe, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr);
      cuCtxSetCurrent(nullptr);
    }
    cuStreamSynchronize(s);
    t1 = now();
    printf("PROBE cost_launch_set_current_in_and_out_us %.3f\n", (t1 - t0) / N * 1e6);
    t0 = now();
    for (int i = 0; i < N; i++) {
      unsigned long long id;
      cuCtxGetId(a, &id);
      cuLaunchKernel(fe, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr);
    }
    cuStreamSynchronize(s);
    t1 = now();
    printf("PROBE cost_launch_nothing_current_with_id_check_us %.3f\n", (t1 - t0) / N * 1e6);
  }
  cuCtxSetCurrent(nullptr);
  cuCtxGetCurrent(&cur);
  printf("PROBE done current_is_null %d\n", cur == nullptr);
  return 0;
}
