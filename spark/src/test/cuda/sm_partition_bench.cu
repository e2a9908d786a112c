// The SM-partition benchmark's kernel (dev.cuhandle.spark.example.SmPartitionIsolationMain): every
// thread of every block busy-waits `ns` nanoseconds of the GPU's global timer, then thread 0 counts
// its block in `blocks_done`. A block holds its SM's slots for the whole wait, so a grid of 8 blocks
// of 256 threads per SM fills the GPU (the long neighbour), and a grid that fits at once takes about
// `ns` (the short job). The global timer, not clock64(), so that the wait does not depend on the SM
// clock, which changes with load.

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

extern "C" __global__ void bench_spin(long long ns, unsigned int* blocks_done) {
  const unsigned long long start = now_ns();
  while (now_ns() - start < (unsigned long long)ns) {
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    atomicAdd(blocks_done, 1u);
  }
}
