// Kernels for the launch-check tests: a parameter of every shape the checks read from a module
// image (PTX .entry lists, cubin .nv.info attributes, the members of a fatbin) must get right;
// structures by value at every argument position (the reusable launch behind Handle.launch); and
// static plus dynamic shared memory above 48 KiB together. Compiled into a fatbin, a cubin and
// PTX by the build (java/pom.xml) and by the Rust unit tests of rust/src/core/param_layout.

// 1 KiB of bytes, passed by value.
struct CuhBytes1k {
  unsigned char b[1024];
};

// 48 bytes, 8-byte aligned.
struct CuhDoubles6 {
  double d[6];
};

// 16 bytes, 16-byte aligned: the parameter before it gets padding.
struct __align__(16) CuhFloat4 {
  float x, y, z, w;
};

// 24 bytes: a at 0, b at 8 (after 4 bytes of padding), c at 16, 4 bytes of tail padding.
struct CuhMixed {
  float a;
  double b;
  int c;
};

// out[0] = position + the sum of the structure's bytes.
__device__ void cuh_check_sum_bytes(const CuhBytes1k& s, int position, int* out) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  int sum = position;
  for (int i = 0; i < 1024; ++i) sum += s.b[i];
  out[0] = sum;
}

// A 1 KiB structure at argument 0, 1, 2, 3 and 4.
extern "C" __global__ void cuh_check_struct_at_0(CuhBytes1k s, int* out) { cuh_check_sum_bytes(s, 0, out); }
extern "C" __global__ void cuh_check_struct_at_1(int* out, CuhBytes1k s) { cuh_check_sum_bytes(s, 1, out); }
extern "C" __global__ void cuh_check_struct_at_2(int* out, int a, CuhBytes1k s) { cuh_check_sum_bytes(s, 2, out); }
extern "C" __global__ void cuh_check_struct_at_3(int* out, int a, int b, CuhBytes1k s) { cuh_check_sum_bytes(s, 3, out); }
extern "C" __global__ void cuh_check_struct_at_4(int* out, int a, int b, int c, CuhBytes1k s) { cuh_check_sum_bytes(s, 4, out); }

// A pointer and a count: an int for the pointer is 4 bytes where 8 are expected.
extern "C" __global__ void cuh_check_pointer_and_count(float* x, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x[i] *= 2.0f;
}

// A 48-byte structure: a 40-byte one is refused.
extern "C" __global__ void cuh_check_struct48(CuhDoubles6 s, double* out) {
  if (blockIdx.x == 0 && threadIdx.x < 6) out[threadIdx.x] = s.d[threadIdx.x];
}

// Every width and alignment, with padding between parameters (offsets 0, 2, 4, 8, 16, 24, 32, 40,
// 96, 112, 136; 137 bytes in all).
extern "C" __global__ void cuh_check_every_width(char c, short s, int i, long long l, float f, double d, float* p, CuhDoubles6 big,
                                                 CuhFloat4 v, CuhMixed m, unsigned char u) {
  if (p) p[0] = c + s + i + l + f + d + big.d[3] + v.z + m.b + u;
}

extern "C" __global__ void cuh_check_no_parameters() {}

// Parameters the body never reads are parameters all the same.
extern "C" __global__ void cuh_check_unused(int a, float* b, int c) {}

// C++ names are mangled: _Z14cuh_check_tmplIfEvPT_S0_ and _Z14cuh_check_tmplIdEvPT_S0_.
template <typename T>
__global__ void cuh_check_tmpl(T* p, T v) {
  p[0] = v;
}
template __global__ void cuh_check_tmpl<float>(float*, float);
template __global__ void cuh_check_tmpl<double>(double*, double);

// 32 KiB of static shared memory plus `n` floats of dynamic shared memory, one block:
// out[i] = in[n - 1 - i] + (i % 8192), through both.
extern "C" __global__ void cuh_check_static_and_dynamic_shared(const float* in, float* out, int n) {
  __shared__ float fixed[8192];
  extern __shared__ float dynamic[];
  for (int i = threadIdx.x; i < 8192; i += blockDim.x) fixed[i] = static_cast<float>(i);
  for (int i = threadIdx.x; i < n; i += blockDim.x) dynamic[i] = in[i];
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = dynamic[n - 1 - i] + fixed[i % 8192];
}
