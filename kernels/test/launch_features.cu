// Kernels for the launch-feature tests (issue 11 item 4): a structure passed by value, dynamic
// shared memory above 48 KiB, a cooperative grid-wide synchronisation and thread-block clusters
// with distributed shared memory. Compiled for sm_90 (SASS and PTX) only: clusters need it, and
// the tests run on an H200.

#include <cooperative_groups.h>

namespace cg = cooperative_groups;

// 24 bytes: a at 0, b at 8 (after 4 bytes of padding), c at 16, 4 bytes of tail padding.
struct CuhMixed {
  float a;
  double b;
  int c;
};

// out[i] = a * i + b - c
extern "C" __global__ void cuh_test_struct_by_value(CuhMixed m, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = (double)m.a * i + m.b - m.c;
}

// One block: out[i] = 2 * in[n - 1 - i], through `n` floats of dynamic shared memory.
extern "C" __global__ void cuh_test_big_shared(const float* in, float* out, int n) {
  extern __shared__ float tile[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) tile[i] = in[i];
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = 2.0f * tile[n - 1 - i];
}

// out[i] = 2 * in[(i + 1) % n]: every element is written by another thread (often of another
// block) before the grid-wide barrier, so the result is right only if the barrier held.
extern "C" __global__ void cuh_test_grid_rotate(const float* in, float* tmp, float* out, int n) {
  cg::grid_group grid = cg::this_grid();
  for (int i = grid.thread_rank(); i < n; i += grid.size()) tmp[i] = 2.0f * in[i];
  grid.sync();
  for (int i = grid.thread_rank(); i < n; i += grid.size()) out[i] = tmp[(i + 1) % n];
}

// Per block b (1-D grid and clusters): rank[b] = its rank in the cluster, out[b] = the value that
// the next block of the cluster (cyclically) put in its own shared memory, read remotely.
extern "C" __global__ void cuh_test_cluster_neighbour(const float* in, int* rank, float* out) {
  __shared__ float value;
  cg::cluster_group cluster = cg::this_cluster();
  unsigned int r = cluster.block_rank();
  unsigned int blocks = cluster.dim_blocks().x * cluster.dim_blocks().y * cluster.dim_blocks().z;
  if (threadIdx.x == 0) value = in[blockIdx.x];
  cluster.sync();
  float* peer = cluster.map_shared_rank(&value, (r + 1) % blocks);
  if (threadIdx.x == 0) {
    out[blockIdx.x] = *peer;
    rank[blockIdx.x] = (int)r;
  }
  cluster.sync();  // the peer's shared memory must outlive the remote read
}
