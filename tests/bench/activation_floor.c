/* The driver's own cost of what a cuhandle call does to activate its context while the caller has
 * another context current (rules H4 and H8): cuCtxGetId on the handle's context (validation),
 * cuCtxGetCurrent, cuCtxSetCurrent to the handle's context, and cuCtxSetCurrent back to the caller's.
 * HandleBenchmark's activation_overhead (a Handle.stream() call minus a bare JNI call) cannot go below
 * this sequence; run-all.sh runs both in alternating fresh processes so the report can set one
 * against the other. The single calls are timed too, to show where the floor goes.
 *
 * Build: gcc -O2 activation_floor.c -o activation_floor -I<cuda>/include -lcuda   (run-all.sh uses nvcc)
 * Usage: activation_floor [run number, default 1]
 * Prints CSV rows c,handle,<what>,<run>,<ns per call>,ns (tests/bench/report.py's input): the median
 * over 15 rounds of 200,000 calls, the measurements taking turns within each round so that drift of
 * the host hits them alike. Exits 1 with a message on stderr when a call fails. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ROUNDS 15
#define CALLS 200000
#define KINDS 4

static const char* const NAMES[KINDS] = {
    "driver_cuCtxGetCurrent", "driver_cuCtxGetId", "driver_cuCtxSetCurrent_pair", "activation_driver_floor"};

static CUcontext handle_ctx, caller_ctx;
static unsigned long long handle_id;

static void fail(const char* call, CUresult rc) {
  const char* name = "unknown";
  cuGetErrorName(rc, &name);
  fprintf(stderr, "activation_floor: %s failed: %s (%d)\n", call, name, (int)rc);
  exit(1);
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

/* One call of measurement `kind`; every result is checked, as cuhandle checks them. */
static void once(int kind) {
  CUcontext current;
  unsigned long long id;
  CUresult rc = CUDA_SUCCESS;
  switch (kind) {
    case 0:
      rc = cuCtxGetCurrent(&current);
      break;
    case 1:
      rc = cuCtxGetId(handle_ctx, &id);
      if (rc == CUDA_SUCCESS && id != handle_id) fail("cuCtxGetId (id changed)", CUDA_ERROR_CONTEXT_IS_DESTROYED);
      break;
    case 2:
      if ((rc = cuCtxSetCurrent(handle_ctx)) == CUDA_SUCCESS) rc = cuCtxSetCurrent(caller_ctx);
      break;
    default: /* the whole sequence of a cuhandle call with another context current */
      if ((rc = cuCtxGetId(handle_ctx, &id)) != CUDA_SUCCESS || id != handle_id) break;
      if ((rc = cuCtxGetCurrent(&current)) != CUDA_SUCCESS) break;
      if (current != handle_ctx && (rc = cuCtxSetCurrent(handle_ctx)) == CUDA_SUCCESS) rc = cuCtxSetCurrent(current);
      break;
  }
  if (rc != CUDA_SUCCESS) fail(NAMES[kind], rc);
}

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  const int run = argc > 1 ? atoi(argv[1]) : 1;
  CUdevice device;
  CUresult rc;
  if ((rc = cuInit(0)) != CUDA_SUCCESS) fail("cuInit", rc);
  if ((rc = cuDeviceGet(&device, 0)) != CUDA_SUCCESS) fail("cuDeviceGet", rc);
  if ((rc = cuDevicePrimaryCtxRetain(&handle_ctx, device)) != CUDA_SUCCESS) fail("cuDevicePrimaryCtxRetain", rc);
  if ((rc = cuCtxGetId(handle_ctx, &handle_id)) != CUDA_SUCCESS) fail("cuCtxGetId", rc);
#if CUDA_VERSION >= 13000
  rc = cuCtxCreate(&caller_ctx, NULL, 0, device); /* current from now on: the caller's context */
#else
  rc = cuCtxCreate(&caller_ctx, 0, device);
#endif
  if (rc != CUDA_SUCCESS) fail("cuCtxCreate", rc);

  double ns[KINDS][ROUNDS];
  for (int kind = 0; kind < KINDS; kind++) /* warm-up */
    for (int i = 0; i < CALLS; i++) once(kind);
  for (int round = 0; round < ROUNDS; round++) {
    for (int kind = 0; kind < KINDS; kind++) {
      double t0 = now_ns();
      for (int i = 0; i < CALLS; i++) once(kind);
      ns[kind][round] = (now_ns() - t0) / CALLS;
    }
  }
  for (int kind = 0; kind < KINDS; kind++) {
    qsort(ns[kind], ROUNDS, sizeof(double), by_value);
    printf("c,handle,%s,%d,%.3f,ns\n", NAMES[kind], run, ns[kind][ROUNDS / 2]);
  }
  cuCtxDestroy(caller_ctx);
  cuDevicePrimaryCtxRelease(device);
  return 0;
}
