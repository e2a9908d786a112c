// cuBLAS level 1 bandwidth and latency baseline, the yardstick for cuhandle's own kernels.
//
// Build and run on the GPU machine:
//   nvcc -O2 -std=c++17 -arch=sm_90 tests/bench/cublas_l1.cu -o cublas_l1 -lcublas
//   ./cublas_l1 [n_float (default 2^28)] [n_double (default 2^27)]
//
// Prints CSV on stdout: impl,op,n,bytes,median_ms,gbps. Bytes count reads plus writes (scal 2N,
// axpy 3N, dot 2N, nrm2/asum/iamax N, copy 2N, swap 4N elements). Each bandwidth figure is the
// median of 20 event-timed calls after 3 warm-ups; reductions use device pointer mode so no
// host wait is inside the timed region. Two latency rows hold microseconds per call in the
// median_ms column (bytes and gbps are 0 there):
//   sscal_latency: n = 1, 100k asynchronous calls then one synchronize (launch cost);
//   sdot1000_host_latency: n = 1000, host pointer mode, so each call includes waiting for the
//   result on the host.

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

constexpr int kWarmups = 3;
constexpr int kTimed = 20;

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

// Median of kTimed event-timed runs of `op`, after kWarmups untimed ones, in milliseconds.
double median_ms(const std::function<void()>& op) {
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < kWarmups; ++i) op();
  std::vector<float> ms(kTimed);
  for (int i = 0; i < kTimed; ++i) {
    CUDA_CHECK(cudaEventRecord(start));
    op();
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    CUDA_CHECK(cudaEventElapsedTime(&ms[i], start, stop));
  }
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  return 0.5 * (ms[kTimed / 2 - 1] + ms[kTimed / 2]);
}

void report(const char* op, long long n, double bytes, double ms) {
  std::printf("cublas,%s,%lld,%.0f,%.6f,%.1f\n", op, n, bytes, ms, bytes / (ms * 1e-3) / 1e9);
  std::fflush(stdout);
}

// Type-specific cuBLAS entry points, so one template benchmarks both precisions.
struct F32 {
  using T = float;
  static constexpr const char* kPrefix = "s";
  static constexpr const char* kCopyName = "d2d_copy_f32";
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
  static constexpr const char* kCopyName = "d2d_copy_f64";
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

template <class P>
void bench(cublasHandle_t h, long long n64) {
  using T = typename P::T;
  // The classic cuBLAS API takes int n; the default sizes fit.
  if (n64 <= 0 || n64 > 0x7fffffffLL) {
    std::fprintf(stderr, "n = %lld out of range for the int cuBLAS API\n", n64);
    std::exit(1);
  }
  const int n = static_cast<int>(n64);
  const double es = sizeof(T);
  T *x, *y, *d_scalars;
  int* d_index;
  CUDA_CHECK(cudaMalloc(&x, n * sizeof(T)));
  CUDA_CHECK(cudaMalloc(&y, n * sizeof(T)));
  CUDA_CHECK(cudaMalloc(&d_scalars, 2 * sizeof(T)));
  CUDA_CHECK(cudaMalloc(&d_index, sizeof(int)));
  fill(x, n, 1);
  fill(y, n, 2);
  // alpha != 1 and != 0, so no implementation may skip the work; close to 1 so 23 repeated
  // scalings or accumulations keep the data in a normal range.
  const T alpha[2] = {T(0.999), T(0)};
  CUDA_CHECK(cudaMemcpy(d_scalars, alpha, sizeof(alpha), cudaMemcpyHostToDevice));
  const T* d_alpha = d_scalars;
  T* d_result = d_scalars + 1;
  CUBLAS_CHECK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));

  auto name = [](const char* op) { return std::string(P::kPrefix) + op; };
  auto run = [&](const char* op, double elements_moved, const std::function<void()>& f) {
    report(name(op).c_str(), n, elements_moved * n * es, median_ms(f));
  };
  run("scal", 2, [&] { CUBLAS_CHECK(P::scal(h, n, d_alpha, x)); });
  run("axpy", 3, [&] { CUBLAS_CHECK(P::axpy(h, n, d_alpha, x, y)); });
  run("dot", 2, [&] { CUBLAS_CHECK(P::dot(h, n, x, y, d_result)); });
  run("nrm2", 1, [&] { CUBLAS_CHECK(P::nrm2(h, n, x, d_result)); });
  run("asum", 1, [&] { CUBLAS_CHECK(P::asum(h, n, x, d_result)); });
  report((std::string("i") + P::kPrefix + "amax").c_str(), n, n * es,
         median_ms([&] { CUBLAS_CHECK(P::iamax(h, n, x, d_index)); }));
  run("copy", 2, [&] { CUBLAS_CHECK(P::copy(h, n, x, y)); });
  run("swap", 4, [&] { CUBLAS_CHECK(P::swap(h, n, x, y)); });
  report(P::kCopyName, n, 2.0 * n * es, median_ms([&] {
           CUDA_CHECK(cudaMemcpyAsync(y, x, n * sizeof(T), cudaMemcpyDeviceToDevice));
         }));

  CUDA_CHECK(cudaFree(x));
  CUDA_CHECK(cudaFree(y));
  CUDA_CHECK(cudaFree(d_scalars));
  CUDA_CHECK(cudaFree(d_index));
}

// Microseconds per call of `call`, run `count` times after a warm-up, then one synchronize.
double us_per_call(int count, const std::function<void()>& call) {
  for (int i = 0; i < 100; ++i) call();
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < count; ++i) call();
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::chrono::duration<double, std::micro> elapsed =
      std::chrono::steady_clock::now() - start;
  return elapsed.count() / count;
}

void latency(cublasHandle_t h) {
  float *x, *y;
  CUDA_CHECK(cudaMalloc(&x, 1000 * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&y, 1000 * sizeof(float)));
  fill(x, 1000, 3);
  fill(y, 1000, 4);
  CUBLAS_CHECK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
  const float alpha = 0.999f;
  std::printf("cublas,sscal_latency,1,0,%.3f,0\n",
              us_per_call(100000, [&] { CUBLAS_CHECK(cublasSscal(h, 1, &alpha, x, 1)); }));
  float result;
  std::printf("cublas,sdot1000_host_latency,1000,0,%.3f,0\n", us_per_call(10000, [&] {
                CUBLAS_CHECK(cublasSdot(h, 1000, x, 1, y, 1, &result));
              }));
  CUDA_CHECK(cudaFree(x));
  CUDA_CHECK(cudaFree(y));
}

}  // namespace

int main(int argc, char** argv) {
  const long long n_float = argc > 1 ? std::atoll(argv[1]) : 1LL << 28;
  const long long n_double = argc > 2 ? std::atoll(argv[2]) : 1LL << 27;

  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  int runtime = 0;
  CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  cublasHandle_t h;
  CUBLAS_CHECK(cublasCreate(&h));
  int cublas_version = 0;
  CUBLAS_CHECK(cublasGetVersion(h, &cublas_version));
  std::fprintf(stderr, "device %s, %d SMs, CUDA runtime %d, cuBLAS %d\n", prop.name,
               prop.multiProcessorCount, runtime, cublas_version);

  std::printf("impl,op,n,bytes,median_ms,gbps\n");
  bench<F32>(h, n_float);
  bench<F64>(h, n_double);
  latency(h);
  CUBLAS_CHECK(cublasDestroy(h));
  return 0;
}
