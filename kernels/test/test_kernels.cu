// Kernels for the Java GPU tests: launch mechanics, argument marshalling, close-while-busy and
// error paths. Built into a test-only module; never shipped.

// Does nothing, so that timing many launches measures launch overhead alone.
extern "C" __global__ void cuh_test_empty() {}

extern "C" __global__ void cuh_test_add_one(float* x, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    x[i] += 1.0f;
  }
}

// y[i] += a * x[i]: a scalar and two buffers, what the graph update tests change between replays.
extern "C" __global__ void cuh_test_axpy(float* y, const float* x, float a, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    y[i] += a * x[i];
  }
}

// One thread counts: *counter += 1, and *go = (*counter < k), the condition of a graph's WHILE loop
// that runs until a device counter reaches k (GraphConditionalGpuTest).
extern "C" __global__ void cuh_test_count_to(int* counter, int* go, int k) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  const int c = *counter + 1;
  *counter = c;
  *go = c < k ? 1 : 0;
}

// One thread counts *counter += 1 and, while the count is below k, raises *f, *d and *i by one:
// values a WHILE loop's condition reads and zeroes (GraphCondition.thenZero), so the loop stops at
// the k-th iteration only where the zeroing happened (GraphConditionalGpuTest).
extern "C" __global__ void cuh_test_raise_until(int* counter, float* f, double* d, int* i, int k) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  const int c = *counter + 1;
  *counter = c;
  if (c < k) {
    *f += 1.0f;
    *d += 1.0;
    *i += 1;
  }
}

// One thread halves *value: a residual that a WHILE loop drives below a threshold.
extern "C" __global__ void cuh_test_halve(float* value) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  *value *= 0.5f;
}

// Echoes every argument into out[0..6] so a test can see that each one arrived with its size,
// alignment and value intact. Floating-point arguments are returned as their bit patterns
// (c zero-extended), so the test compares exactly, NaN payloads included.
extern "C" __global__ void cuh_test_params(long long* out, int a, long long b, float c, double d,
                                           short e, signed char f, float* p) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  out[0] = a;
  out[1] = b;
  out[2] = static_cast<long long>(__float_as_uint(c));
  out[3] = __double_as_longlong(d);
  out[4] = e;
  out[5] = f;
  out[6] = reinterpret_cast<long long>(p);
}

// Keeps the stream busy for `cycles` SM clock ticks, so a test can close a handle while a call is
// in flight. One thread spins; the others leave at once.
extern "C" __global__ void cuh_test_spin(long long cycles) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

// Waits `cycles` SM clock ticks, then copies x to out: a late reader of x, for the tests of rule L3
// (memory freed while a kernel on another stream still has to read it must not be handed out and
// overwritten before that read). Every block waits, so no element is read early.
extern "C" __global__ void cuh_test_late_copy(const float* x, float* out, int n, long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    out[i] = x[i];
  }
}

// Called with an unmapped address (e.g. 0x10) to provoke CUDA_ERROR_ILLEGAL_ADDRESS, a sticky
// error. volatile keeps the store even if the compiler could prove the pointer bad.
extern "C" __global__ void cuh_test_fault(int* p) { *static_cast<volatile int*>(p) = 1; }

// Needs blockDim.x * sizeof(float) bytes of dynamic shared memory (the launch's sharedBytes);
// with less it accesses shared memory out of bounds. Block 0 writes 1 + 2 + ... + blockDim.x
// = blockDim.x * (blockDim.x + 1) / 2 to out[0], exact in float for any legal block size.
extern "C" __global__ void cuh_test_dynamic_shared(float* out) {
  extern __shared__ float values[];
  values[threadIdx.x] = static_cast<float>(threadIdx.x + 1);
  __syncthreads();
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  float sum = 0.0f;
  for (unsigned i = 0; i < blockDim.x; ++i) sum += values[i];
  out[0] = sum;
}

// Records the SM each block ran on (out[blockIdx.x]), so a test can see which SMs a partition's
// work uses; every thread of a block spins `cycles` first, so the blocks spread over the SMs they may use.
extern "C" __global__ void cuh_test_smids(unsigned int* out, long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  if (threadIdx.x == 0) {
    unsigned int id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    out[blockIdx.x] = id;
  }
}
