// cuBLAS level 1 baseline for cuhandle's own kernels: every routine at every power-of-two size,
// measured exactly as java/src/test/bench/dev/cuhandle/bench/BlasBenchmark.java measures cuhandle
// (same sizes, same batching and time box, same data), so that tests/bench/report.py can divide.
//
// Build and run on the GPU machine (tests/bench/run-all.sh does both):
//   nvcc -O2 -std=c++17 -arch=sm_90 tests/bench/cublas_l1.cu -o cublas_l1 -lcublas
//   ./cublas_l1 [log2 n min (default 10)] [log2 n max (default 28)]
//
// Prints CSV rows impl,group,name,n,value,unit (tests/bench/report.py's input format):
//   cublas,blas,<op>,<n>,<us per call>,us   for the 16 routines; reductions write their result to
//       device memory (device pointer mode), so no host wait is inside the timing. Per call time is
//       a batch of back-to-back calls between two events divided by the batch size (the batch is
//       about 2 ms long, so at small n it is the issue rate, at large n one call); the median of
//       5-15 batches, as many as fit into about 30 ms.
//   cublas,blas_host,<op>,1000,<us per call>,us   sdot, ddot, snrm2, sasum, isamax at n = 1000 in
//       host pointer mode: each call includes waiting for the result on the host (median of 5 runs).
//   cublas,blas,d2d_copy,<n>,<us>,us   cudaMemcpyAsync device to device of n floats (a ceiling).
// Bytes moved (report.py derives GB/s from them): reads + writes, scal 2N, axpy 3N, dot 2N,
// nrm2/asum/iamax N, copy 2N, swap 4N elements.

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#define CUDA_CHECK(call)                                                                     \
  do {                                                                                       \
    cudaError_t err_ = (call);                                                               \
    if (err_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                     \
                   cudaGetErrorString(err_));                                                \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

#define CUBLAS_CHECK(call)                                                                   \
  do {                                                                                       \
    cublasStatus_t st_ = (call);                                                             \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                                      \
      std::fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #call,       \
                   static_cast<int>(st_));                                                   \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

namespace {

// The time box, identical in BlasBenchmark.java: batches of about kBatchMs, at most kMaxBatch
// calls, and as many timed batches (kMinReps to kMaxReps) as fit into kPointMs.
constexpr double kBatchMs = 2.0;
constexpr int kMaxBatch = 2000;
constexpr double kPointMs = 30.0;
constexpr int kMinReps = 5;
constexpr int kMaxReps = 15;

// Uniform in [-1, 1) from a hash of the index and a seed: random enough to defeat any shortcut
// on zeros or repeated values, and needs no host-side fill of gigabytes.
template <class T>
__global__ void fill_random(T* p, long long n, unsigned long long seed) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    unsigned long long z = (static_cast<unsigned long long>(i) + seed) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    p[i] = static_cast<T>(static_cast<double>(z >> 11) * 0x1p-52 - 1.0);
  }
}

template <class T>
void fill(T* p, long long n, unsigned long long seed) {
  fill_random<<<1024, 256>>>(p, n, seed);
  CUDA_CHECK(cudaGetLastError());
}

double elapsed_ms(cudaEvent_t start, cudaEvent_t stop) {
  float ms = 0;
  CUDA_CHECK(cudaEventSynchronize(stop));
  CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  return ms;
}

// Median microseconds per call of `op`: a 10-call probe sizes the batch (about kBatchMs of
// back-to-back calls between two events) and the number of timed batches; one untimed batch
// warms up.
double us_per_call(const std::function<void()>& op) {
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  op();
  CUDA_CHECK(cudaEventRecord(start));
  for (int i = 0; i < 10; ++i) op();
  CUDA_CHECK(cudaEventRecord(stop));
  const double probe_ms = std::max(elapsed_ms(start, stop) / 10, 1e-4);
  const int batch = std::clamp(static_cast<int>(kBatchMs / probe_ms), 1, kMaxBatch);
  const int reps = std::clamp(static_cast<int>(kPointMs / (batch * probe_ms)), kMinReps, kMaxReps);
  for (int i = 0; i < batch; ++i) op();
  std::vector<double> us(reps);
  for (int r = 0; r < reps; ++r) {
    CUDA_CHECK(cudaEventRecord(start));
    for (int i = 0; i < batch; ++i) op();
    CUDA_CHECK(cudaEventRecord(stop));
    us[r] = elapsed_ms(start, stop) * 1e3 / batch;
  }
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(us.begin(), us.end());
  return us[reps / 2];
}

void row(const char* group, const std::string& name, long long n, double us) {
  std::printf("cublas,%s,%s,%lld,%.4f,us\n", group, name.c_str(), n, us);
  std::fflush(stdout);
}

// Type-specific cuBLAS entry points, so one template benchmarks both precisions.
struct F32 {
  using T = float;
  static constexpr const char* kPrefix = "s";
  static cublasStatus_t scal(cublasHandle_t h, int n, const T* a, T* x) {
    return cublasSscal(h, n, a, x, 1);
  }
  static cublasStatus_t axpy(cublasHandle_t h, int n, const T* a, const T* x, T* y) {
    return cublasSaxpy(h, n, a, x, 1, y, 1);
  }
  static cublasStatus_t dot(cublasHandle_t h, int n, const T* x, const T* y, T* r) {
    return cublasSdot(h, n, x, 1, y, 1, r);
  }
  static cublasStatus_t nrm2(cublasHandle_t h, int n, const T* x, T* r) {
    return cublasSnrm2(h, n, x, 1, r);
  }
  static cublasStatus_t asum(cublasHandle_t h, int n, const T* x, T* r) {
    return cublasSasum(h, n, x, 1, r);
  }
  static cublasStatus_t iamax(cublasHandle_t h, int n, const T* x, int* r) {
    return cublasIsamax(h, n, x, 1, r);
  }
  static cublasStatus_t copy(cublasHandle_t h, int n, const T* x, T* y) {
    return cublasScopy(h, n, x, 1, y, 1);
  }
  static cublasStatus_t swap(cublasHandle_t h, int n, T* x, T* y) {
    return cublasSswap(h, n, x, 1, y, 1);
  }
};

struct F64 {
  using T = double;
  static constexpr const char* kPrefix = "d";
  static cublasStatus_t scal(cublasHandle_t h, int n, const T* a, T* x) {
    return cublasDscal(h, n, a, x, 1);
  }
  static cublasStatus_t axpy(cublasHandle_t h, int n, const T* a, const T* x, T* y) {
    return cublasDaxpy(h, n, a, x, 1, y, 1);
  }
  static cublasStatus_t dot(cublasHandle_t h, int n, const T* x, const T* y, T* r) {
    return cublasDdot(h, n, x, 1, y, 1, r);
  }
  static cublasStatus_t nrm2(cublasHandle_t h, int n, const T* x, T* r) {
    return cublasDnrm2(h, n, x, 1, r);
  }
  static cublasStatus_t asum(cublasHandle_t h, int n, const T* x, T* r) {
    return cublasDasum(h, n, x, 1, r);
  }
  static cublasStatus_t iamax(cublasHandle_t h, int n, const T* x, int* r) {
    return cublasIdamax(h, n, x, 1, r);
  }
  static cublasStatus_t copy(cublasHandle_t h, int n, const T* x, T* y) {
    return cublasDcopy(h, n, x, 1, y, 1);
  }
  static cublasStatus_t swap(cublasHandle_t h, int n, T* x, T* y) {
    return cublasDswap(h, n, x, 1, y, 1);
  }
};


// Every routine of precision P at every n from 2^lo to 2^hi, on x and y of 2^hi elements; x and
// y are refilled before each routine and size so that repeated scal/axpy/swap stay in range.
template <class P>
void sweep(cublasHandle_t h, typename P::T* x, typename P::T* y, int lo, int hi) {
  using T = typename P::T;
  T* d_scalars;
  int* d_index;
  CUDA_CHECK(cudaMalloc(&d_scalars, 2 * sizeof(T)));
  CUDA_CHECK(cudaMalloc(&d_index, sizeof(int)));
  // alpha != 1 and != 0, so no implementation may skip the work; close to 1 so thousands of
  // repeated scalings or accumulations keep the data in a normal range.
  const T alpha[2] = {T(0.999), T(0)};
  CUDA_CHECK(cudaMemcpy(d_scalars, alpha, sizeof(alpha), cudaMemcpyHostToDevice));
  const T* d_alpha = d_scalars;
  T* d_result = d_scalars + 1;
  CUBLAS_CHECK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));
  const std::string p = P::kPrefix;
  const std::vector<std::pair<std::string, std::function<void(int)>>> ops = {
      {p + "scal", [&](int n) { CUBLAS_CHECK(P::scal(h, n, d_alpha, x)); }},
      {p + "axpy", [&](int n) { CUBLAS_CHECK(P::axpy(h, n, d_alpha, x, y)); }},
      {p + "dot", [&](int n) { CUBLAS_CHECK(P::dot(h, n, x, y, d_result)); }},
      {p + "nrm2", [&](int n) { CUBLAS_CHECK(P::nrm2(h, n, x, d_result)); }},
      {p + "asum", [&](int n) { CUBLAS_CHECK(P::asum(h, n, x, d_result)); }},
      {"i" + p + "amax", [&](int n) { CUBLAS_CHECK(P::iamax(h, n, x, d_index)); }},
      {p + "copy", [&](int n) { CUBLAS_CHECK(P::copy(h, n, x, y)); }},
      {p + "swap", [&](int n) { CUBLAS_CHECK(P::swap(h, n, x, y)); }},
  };
  for (const auto& op : ops) {
    for (int log2 = lo; log2 <= hi; ++log2) {
      const int n = 1 << log2;
      fill(x, n, 1);
      fill(y, n, 2);
      row("blas", op.first, n, us_per_call([&] { op.second(n); }));
    }
  }
  CUDA_CHECK(cudaFree(d_scalars));
  CUDA_CHECK(cudaFree(d_index));
}

// Median over 5 runs of microseconds per call, each run `count` calls; every call waits for its
// result on the host (host pointer mode), so this is the latency a caller sees.
double host_latency_us(int count, const std::function<void()>& call) {
  for (int i = 0; i < 200; ++i) call();
  std::vector<double> us(5);
  for (auto& u : us) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < count; ++i) call();
    const std::chrono::duration<double, std::micro> elapsed =
        std::chrono::steady_clock::now() - start;
    u = elapsed.count() / count;
  }
  std::sort(us.begin(), us.end());
  return us[2];
}

void host_latency(cublasHandle_t h) {
  constexpr int n = 1000;
  constexpr int calls = 2000;
  float *x, *y;
  double *dx, *dy;
  CUDA_CHECK(cudaMalloc(&x, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&y, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&dx, n * sizeof(double)));
  CUDA_CHECK(cudaMalloc(&dy, n * sizeof(double)));
  fill(x, n, 3);
  fill(y, n, 4);
  fill(dx, n, 5);
  fill(dy, n, 6);
  CUDA_CHECK(cudaDeviceSynchronize());
  CUBLAS_CHECK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
  float fr;
  double dr;
  int ir;
  row("blas_host", "sdot", n, host_latency_us(calls, [&] { CUBLAS_CHECK(cublasSdot(h, n, x, 1, y, 1, &fr)); }));
  row("blas_host", "ddot", n, host_latency_us(calls, [&] { CUBLAS_CHECK(cublasDdot(h, n, dx, 1, dy, 1, &dr)); }));
  row("blas_host", "snrm2", n, host_latency_us(calls, [&] { CUBLAS_CHECK(cublasSnrm2(h, n, x, 1, &fr)); }));
  row("blas_host", "sasum", n, host_latency_us(calls, [&] { CUBLAS_CHECK(cublasSasum(h, n, x, 1, &fr)); }));
  row("blas_host", "isamax", n, host_latency_us(calls, [&] { CUBLAS_CHECK(cublasIsamax(h, n, x, 1, &ir)); }));
  CUDA_CHECK(cudaFree(x));
  CUDA_CHECK(cudaFree(y));
  CUDA_CHECK(cudaFree(dx));
  CUDA_CHECK(cudaFree(dy));
}

}  // namespace

int main(int argc, char** argv) {
  const int lo = argc > 1 ? std::atoi(argv[1]) : 10;
  const int hi = argc > 2 ? std::atoi(argv[2]) : 28;
  if (lo < 0 || hi > 30 || lo > hi) {  // the classic cuBLAS API takes int n
    std::fprintf(stderr, "usage: cublas_l1 [log2 n min 0..30] [log2 n max, >= min, <= 30]\n");
    return 2;
  }
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  int runtime = 0;
  CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  cublasHandle_t h;
  CUBLAS_CHECK(cublasCreate(&h));
  int cublas_version = 0;
  CUBLAS_CHECK(cublasGetVersion(h, &cublas_version));
  std::printf("# cublas_l1 on %s, %d SMs, CUDA runtime %d, cuBLAS %d\n", prop.name,
              prop.multiProcessorCount, runtime, cublas_version);

  const size_t max_n = size_t{1} << hi;
  double *x, *y;  // doubles: room for both precisions
  CUDA_CHECK(cudaMalloc(&x, max_n * sizeof(double)));
  CUDA_CHECK(cudaMalloc(&y, max_n * sizeof(double)));
  host_latency(h);
  sweep<F32>(h, reinterpret_cast<float*>(x), reinterpret_cast<float*>(y), lo, hi);
  sweep<F64>(h, x, y, lo, hi);
  for (int log2 = lo; log2 <= hi; ++log2) {
    const size_t n = size_t{1} << log2;
    row("blas", "d2d_copy", static_cast<long long>(n), us_per_call([&] {
          CUDA_CHECK(cudaMemcpyAsync(y, x, n * sizeof(float), cudaMemcpyDeviceToDevice));
        }));
  }
  CUDA_CHECK(cudaFree(x));
  CUDA_CHECK(cudaFree(y));
  CUBLAS_CHECK(cublasDestroy(h));
  return 0;
}
