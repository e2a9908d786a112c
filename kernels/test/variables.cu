// Module-scope variables for the library-variable tests (rule K4): a __device__ and a
// __constant__ variable (one copy per context) and a __managed__ one (one copy per process), with
// kernels that read and write them. A module of its own, so that the other GPU tests' module has
// no managed memory.

__device__ int cuh_test_counter;
__constant__ float cuh_test_coefficients[4];
__managed__ int cuh_test_managed;

extern "C" __global__ void cuh_test_counter_add(int v) {
  if (blockIdx.x == 0 && threadIdx.x == 0) cuh_test_counter += v;
}

extern "C" __global__ void cuh_test_counter_read(int* out) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *out = cuh_test_counter;
}

// x[i] *= cuh_test_coefficients[k]
extern "C" __global__ void cuh_test_scale_by_coefficient(float* x, int n, int k) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    x[i] *= cuh_test_coefficients[k];
  }
}

extern "C" __global__ void cuh_test_managed_add(int v) {
  if (blockIdx.x == 0 && threadIdx.x == 0) cuh_test_managed += v;
}
