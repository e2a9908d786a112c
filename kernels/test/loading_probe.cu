// A module whose arrival in a context shows in the device's free memory: the driver allocates the
// 256 MiB __device__ array below in every context the module is loaded into. ModuleLoadingChild
// uses it to see when a library reaches an existing and a new context under CUDA_MODULE_LOADING
// EAGER and LAZY (docs/handles.md, "When modules reach contexts"). A module of its own, so that no
// other test pays for the array.

#define CUH_PROBE_BYTES (256u << 20)

__device__ unsigned char cuh_loading_probe_block[CUH_PROBE_BYTES];

// Stores value (0..255) in the array's last byte and writes that byte + 1 to *out.
extern "C" __global__ void cuh_loading_probe_touch(int* out, int value) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    cuh_loading_probe_block[CUH_PROBE_BYTES - 1] = (unsigned char)value;
    __threadfence();
    *out = ((volatile unsigned char*)cuh_loading_probe_block)[CUH_PROBE_BYTES - 1] + 1;
  }
}
