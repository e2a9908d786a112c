// Allocation churn anchors on the GPU host (rule L3, docs/design.md): 1 MiB allocate + memset + free
// per round, three ways, alone and next to another thread's 20 ms kernels in the same (primary)
// context; run-all sets dev.cuhandle.bench.MemoryBenchmark's figures beside them.
//   nvcc -O2 -o alloc_churn alloc_churn.c -lcuda -lpthread   (or gcc with -I/usr/local/cuda/include)
// Prints the median and max microseconds per round for each way.
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char *s; cuGetErrorName(r_, &s); fprintf(stderr, "%s:%d %s -> %s\n", __FILE__, __LINE__, #x, s); exit(1); } } while (0)
static double now_us(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }

static CUcontext ctx;
static CUfunction spin;
static volatile int stop_busy;
static const char *PTX =
  ".version 7.0\n.target sm_70\n.address_size 64\n"
  ".visible .entry spin(.param .u64 p_ns)\n{\n .reg .pred p; .reg .b64 t0, t, d, ns;\n"
  " ld.param.u64 ns, [p_ns];\n mov.u64 t0, %globaltimer;\nL: mov.u64 t, %globaltimer;\n sub.u64 d, t, t0;\n"
  " setp.lt.u64 p, d, ns;\n @p bra L;\n ret;\n}\n";

static void *busy(void *arg) {
  CUstream s; CK(cuCtxSetCurrent(ctx)); CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  unsigned long long ns = 20000000ull; void *params[] = { &ns };
  while (!stop_busy) { CK(cuLaunchKernel(spin, 1, 1, 1, 32, 1, 1, 0, s, params, NULL)); CK(cuStreamSynchronize(s)); }
  CK(cuStreamDestroy(s)); return NULL;
}

static void run(const char *name, int way, CUstream s, double ms) {
  enum { MAXN = 200000 }; static double t[MAXN]; int n = 0; double end = now_us() + ms * 1000;
  size_t bytes = 1 << 20;
  while (now_us() < end && n < MAXN) {
    double t0 = now_us(); CUdeviceptr p;
    if (way == 0) { CK(cuMemAlloc(&p, bytes)); CK(cuMemsetD8Async(p, 0, bytes, s)); CK(cuMemFree(p)); }
    else if (way == 1) { CK(cuMemAlloc(&p, bytes)); CK(cuMemsetD8Async(p, 0, bytes, s)); CK(cuCtxSynchronize()); CK(cuMemFree(p)); }
    else { CK(cuMemAllocAsync(&p, bytes, s)); CK(cuMemsetD8Async(p, 0, bytes, s)); CK(cuMemFreeAsync(p, s)); }
    t[n++] = now_us() - t0;
  }
  CK(cuStreamSynchronize(s));
  qsort(t, n, sizeof t[0], cmp);
  printf("ANCHOR %-44s median %8.2f us  p99 %9.2f us  max %9.2f us  (n=%d)\n", name, t[n / 2], t[(int)(n * 0.99)], t[n - 1], n);
}

int main(void) {
  CUdevice dev; CUmodule mod; CUstream s; CUmemoryPool pool; cuuint64_t threshold = ~0ull;
  CK(cuInit(0)); CK(cuDeviceGet(&dev, 0)); CK(cuDevicePrimaryCtxRetain(&ctx, dev)); CK(cuCtxSetCurrent(ctx));
  CK(cuModuleLoadData(&mod, PTX)); CK(cuModuleGetFunction(&spin, mod, "spin"));
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CK(cuDeviceGetDefaultMemPool(&pool, dev)); CK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
  const char *names[] = { "cuMemAlloc+memsetAsync+cuMemFree", "cuMemAlloc+memsetAsync+cuCtxSynchronize+Free", "cuMemAllocAsync+memsetAsync+cuMemFreeAsync" };
  for (int w = 0; w < 3; w++) run(names[w], w, s, 300); // warm
  char label[128];
  for (int w = 0; w < 3; w++) { snprintf(label, sizeof label, "alone: %s", names[w]); run(label, w, s, 1000); }
  pthread_t th; stop_busy = 0; pthread_create(&th, NULL, busy, NULL);
  struct timespec d = { 0, 50000000 }; nanosleep(&d, NULL);
  for (int w = 0; w < 3; w++) { snprintf(label, sizeof label, "busy neighbour: %s", names[w]); run(label, w, s, 1500); }
  stop_busy = 1; pthread_join(th, NULL);
  return 0;
}
