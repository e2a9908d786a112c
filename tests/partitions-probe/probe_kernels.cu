// Kernels for partition_probe.c: the SM each block ran on, a spin for a number of cycles, and a
// device variable whose address tells which context's module instance a launch used.
__device__ unsigned int marker;
extern "C" __global__ void smids(unsigned int* out) {
    if (threadIdx.x == 0) {
        unsigned int id;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
        out[blockIdx.x] = id;
    }
}
extern "C" __global__ void spin(long long cycles, unsigned int* out) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
    if (threadIdx.x == 0) out[blockIdx.x] = 1;
}
extern "C" __global__ void bump(unsigned int* out) {
    if (threadIdx.x == 0 && blockIdx.x == 0) { marker += 1; out[0] = marker; }
}
