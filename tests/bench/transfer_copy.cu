// C baselines for cuhandle's TransferBenchmark (rule T1, issue 24): copies of 64 KiB, 4 MiB,
// 64 MiB and 1 GiB between host memory and device memory with cuMemcpyHtoDAsync/DtoHAsync on a
// non-blocking stream, each followed by cuStreamSynchronize, from pageable memory (malloc, what a
// Java array is to the driver) and from pinned memory (cuMemHostAlloc, portable: the ceiling any
// staged copy can reach). Wall clock; the median of 7 rounds after a warm-up, each round the median
// of a batch (more copies for small sizes), as TransferBenchmark does. Output rows, as the Java side:
// c_pageable|c_pinned,transfer,h2d|d2h,<bytes>,<GB/s>,GB/s (GB = 1e9 bytes).
// Arguments: sizes in bytes (default the four above).
// Build: nvcc -O2 transfer_copy.cu -o transfer_copy -lcuda
#include <cuda.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(call)                                                               \
  do {                                                                            \
    CUresult rc_ = (call);                                                        \
    if (rc_ != CUDA_SUCCESS) {                                                    \
      const char* name_ = nullptr;                                                \
      cuGetErrorName(rc_, &name_);                                                \
      std::fprintf(stderr, "%s failed: %s (%d)\n", #call, name_ ? name_ : "?", rc_); \
      std::exit(1);                                                               \
    }                                                                             \
  } while (0)

static const int kRounds = 7;

// Copies per round, as TransferBenchmark.batchFor.
static int batch_for(size_t bytes) {
  return bytes <= (size_t(1) << 20) ? 101 : bytes <= (size_t(16) << 20) ? 21 : bytes <= (size_t(256) << 20) ? 7 : 3;
}

template <class F>
static double median_ns(F copy, int count) {
  std::vector<double> ns;
  for (int i = 0; i < count; i++) {
    auto t0 = std::chrono::steady_clock::now();
    copy();
    ns.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ns.begin(), ns.end());
  return ns[ns.size() / 2];
}

template <class F>
static double gbps(size_t bytes, F copy) {
  std::vector<double> rounds;
  int batch = batch_for(bytes);
  for (int round = -1; round < kRounds; round++) {
    double ns = median_ns(copy, batch);
    if (round >= 0) rounds.push_back(bytes / ns);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

int main(int argc, char** argv) {
  std::vector<size_t> sizes = {size_t(64) << 10, size_t(4) << 20, size_t(64) << 20, size_t(1) << 30};
  if (argc > 1) {
    sizes.clear();
    for (int i = 1; i < argc; i++) sizes.push_back(std::strtoull(argv[i], nullptr, 10));
  }
  CHECK(cuInit(0));
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  for (size_t bytes : sizes) {
    CUdeviceptr d;
    CHECK(cuMemAlloc(&d, bytes));
    void* pageable = std::malloc(bytes);
    void* pinned = nullptr;
    if (!pageable) return 1;
    CHECK(cuMemHostAlloc(&pinned, bytes, CU_MEMHOSTALLOC_PORTABLE));
    std::memset(pageable, 1, bytes);
    std::memset(pinned, 1, bytes);
    const struct {
      const char* impl;
      void* host;
    } kinds[] = {{"c_pageable", pageable}, {"c_pinned", pinned}};
    for (const auto& k : kinds) {
      double up = gbps(bytes, [&] {
        CHECK(cuMemcpyHtoDAsync(d, k.host, bytes, stream));
        CHECK(cuStreamSynchronize(stream));
      });
      double down = gbps(bytes, [&] {
        CHECK(cuMemcpyDtoHAsync(k.host, d, bytes, stream));
        CHECK(cuStreamSynchronize(stream));
      });
      std::printf("%s,transfer,h2d,%zu,%.3f,GB/s\n", k.impl, bytes, up);
      std::printf("%s,transfer,d2h,%zu,%.3f,GB/s\n", k.impl, bytes, down);
      std::fflush(stdout);
    }
    std::free(pageable);
    CHECK(cuMemFreeHost(pinned));
    CHECK(cuMemFree(d));
  }
  CHECK(cuStreamDestroy(stream));
  CHECK(cuDevicePrimaryCtxRelease(dev));
  return 0;
}
