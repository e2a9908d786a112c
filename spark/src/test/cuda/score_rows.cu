// The example job's kernel (dev.cuhandle.spark.example.VectorScoring): the dot product of every
// row of a row-major n x dim matrix with one query vector.
//
// One warp per row: the 32 lanes read the row's consecutive floats together (one 128-byte
// transaction per step instead of 32 scattered ones, as a thread per row would do), then add
// their partial sums with shuffles. Memory-bound either way; this keeps the loads coalesced.

#define WARP 32

extern "C" __global__ void score_rows(const float* rows, const float* query, float* scores, int n, int dim) {
  long long row = (long long)blockIdx.x * (blockDim.x / WARP) + threadIdx.x / WARP;
  int lane = threadIdx.x % WARP;
  if (row >= n) {
    return;
  }
  const float* r = rows + row * dim;
  float sum = 0.0f;
  for (int j = lane; j < dim; j += WARP) {
    sum += r[j] * __ldg(query + j);
  }
  for (int offset = WARP / 2; offset > 0; offset /= 2) {
    sum += __shfl_down_sync(0xffffffffu, sum, offset);
  }
  if (lane == 0) {
    scores[row] = sum;
  }
}
