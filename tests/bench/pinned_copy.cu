// C baseline for cuhandle's AsyncBenchmark (issue 12): 1 GiB copies between pinned host memory
// (cuMemHostAlloc, portable, as HostBuffer) and device memory with cuMemcpyHtoDAsync/DtoHAsync on
// a non-blocking stream, each followed by cuStreamSynchronize, wall clock, median of 7 after 2
// warm-ups; plus pageable (malloc) copies. CSV like the Java side: c,<what>,<bytes>,0,<GB/s>,0.
// Build: nvcc -O2 pinned_copy.cu -o pinned_copy -lcuda
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

static const size_t kBytes = size_t(1) << 30;

template <class F>
static double median_gbps(F copy) {
  std::vector<double> gbps;
  for (int run = -2; run < 7; run++) {
    auto t0 = std::chrono::steady_clock::now();
    copy();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (run >= 0) gbps.push_back(kBytes / s / 1e9);
  }
  std::sort(gbps.begin(), gbps.end());
  return gbps[gbps.size() / 2];
}

int main() {
  CHECK(cuInit(0));
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  void* pinned = nullptr;
  CHECK(cuMemHostAlloc(&pinned, kBytes, CU_MEMHOSTALLOC_PORTABLE));
  std::memset(pinned, 1, kBytes);
  CUdeviceptr d;
  CHECK(cuMemAlloc(&d, kBytes));
  double h2d = median_gbps([&] {
    CHECK(cuMemcpyHtoDAsync(d, pinned, kBytes, stream));
    CHECK(cuStreamSynchronize(stream));
  });
  double d2h = median_gbps([&] {
    CHECK(cuMemcpyDtoHAsync(pinned, d, kBytes, stream));
    CHECK(cuStreamSynchronize(stream));
  });
  std::printf("c,pinned_h2d_1gib_gbps,%zu,0,%.2f,0\n", kBytes, h2d);
  std::printf("c,pinned_d2h_1gib_gbps,%zu,0,%.2f,0\n", kBytes, d2h);
  void* pageable = std::malloc(kBytes);
  if (!pageable) return 1;
  std::memset(pageable, 1, kBytes);
  double ph2d = median_gbps([&] {
    CHECK(cuMemcpyHtoDAsync(d, pageable, kBytes, stream));
    CHECK(cuStreamSynchronize(stream));
  });
  double pd2h = median_gbps([&] {
    CHECK(cuMemcpyDtoHAsync(pageable, d, kBytes, stream));
    CHECK(cuStreamSynchronize(stream));
  });
  std::printf("c,pageable_h2d_1gib_gbps,%zu,0,%.2f,0\n", kBytes, ph2d);
  std::printf("c,pageable_d2h_1gib_gbps,%zu,0,%.2f,0\n", kBytes, pd2h);
  std::free(pageable);
  CHECK(cuMemFree(d));
  CHECK(cuMemFreeHost(pinned));
  CHECK(cuStreamDestroy(stream));
  CHECK(cuDevicePrimaryCtxRelease(dev));
  return 0;
}
