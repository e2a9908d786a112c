/* C's cold start, the yardstick for cuhandle's first Handle.create() (ColdStartBenchmark): in a fresh
 * process, cuInit(0) then the first cuDevicePrimaryCtxRetain on device 0 (which creates the primary
 * context). Run once per process; tests/bench/run-all.sh alternates it with the Java benchmark.
 *
 * Build: gcc -O2 cold_start.c -o cold_start -I<cuda>/include -lcuda   (run-all.sh uses nvcc)
 * Usage: cold_start [run number, default 1]
 * Prints CSV rows c,cold,<step>,<run>,<ms>,ms for steps cuinit, retain and cuinit_plus_retain
 * (tests/bench/report.py's input). Exits 1 with a message on stderr when a call fails. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double ms_between(struct timespec a, struct timespec b) {
  return (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
}

static void fail(const char* call, CUresult rc) {
  const char* name = "unknown";
  cuGetErrorName(rc, &name);
  fprintf(stderr, "cold_start: %s failed: %s (%d)\n", call, name, (int)rc);
  exit(1);
}

int main(int argc, char** argv) {
  const int run = argc > 1 ? atoi(argv[1]) : 1;
  struct timespec t0, t1, t2;
  CUdevice device;
  CUcontext ctx;
  CUresult rc;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if ((rc = cuInit(0)) != CUDA_SUCCESS) fail("cuInit", rc);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if ((rc = cuDeviceGet(&device, 0)) != CUDA_SUCCESS) fail("cuDeviceGet", rc);
  if ((rc = cuDevicePrimaryCtxRetain(&ctx, device)) != CUDA_SUCCESS) fail("cuDevicePrimaryCtxRetain", rc);
  clock_gettime(CLOCK_MONOTONIC, &t2);
  cuDevicePrimaryCtxRelease(device);
  printf("c,cold,cuinit,%d,%.3f,ms\n", run, ms_between(t0, t1));
  printf("c,cold,retain,%d,%.3f,ms\n", run, ms_between(t1, t2));
  printf("c,cold,cuinit_plus_retain,%d,%.3f,ms\n", run, ms_between(t0, t2));
  return 0;
}
