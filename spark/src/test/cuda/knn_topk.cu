// The nearest-neighbour example's kernels (dev.cuhandle.spark.example.NearestNeighbours): for every
// query, the KNN_K rows with the highest dot product, one block of rows at a time. Their logic is
// mirrored step for step by KnnKernelModel (src/test/java), which the tests check against a plain
// loop; these kernels themselves run only on a GPU (the runner's knn mode compares their answer with
// the CPU's there).
//
// knn_chunk_topk  A matrix product with a filter instead of an output matrix: a block of 256 threads
//                 scores a tile of 128 queries against a chunk of rows, 128 rows at a time. Each thread
//                 holds 8 rows x 8 queries of scores in registers, so every value it reads from shared
//                 memory feeds 8 multiply-adds; dims come through shared memory 8 at a time, transposed
//                 (rows and queries along a line, read as float4) and double-buffered, so one barrier per
//                 8 dims suffices and the next 8 are loaded while these are used. The block keeps, per
//                 query, the exact best KNN_K rows of the chunk so far (a list in the local memory of the
//                 query's owner, thread q) and their K-th score as the query's threshold (shared memory).
//                 After each 128-row tile, a score that reaches its threshold goes through a queue of
//                 the query in shared memory to the owner, which merges the queue into its list. A
//                 thread holds one query for 16 threads, so the queues are emptied after each of the
//                 thread's 8 rows (rounds): at most 16 entries per queue. Once the lists have filled,
//                 few scores reach a threshold, and a tile where none does skips the rounds. At the end
//                 the owners write their lists: per query, a list of KNN_K candidates per chunk.
//                 (A first version kept a list per thread and query, filtered by the best K-th score
//                 of any one thread's list: that bound stays far below the block's K-th best, a
//                 quarter of all scores went into lists, and the kernel ran at 3-5 TFLOP/s on an H200
//                 against 13-20 for this one.)
// knn_merge_topk  One warp per query: that query's candidates and its running best (the rows of the
//                 blocks before) into the new running best.
//
// Order: a higher score first; equal scores, the smaller row id first; empty slots (id -1, score
// -infinity) last. The same order as NeighbourLists on the host, so that ties come out the same.

#define KNN_K 16          // list length: the job's k is at most this (GpuNeighbourSearch.KERNEL_K)
#define TILE 128          // queries per block; rows per step of a block's chunk
#define SLAB 8            // dims per shared-memory stage (the row length must be a multiple)
#define PAD 4             // floats after each line of a stage: conflict-free transposed stores
#define GROUPS 16         // threads per query (and per row) of a tile: 16 x 16 threads
#define PER_THREAD 8      // rows and queries per thread: TILE / GROUPS
#define MERGE_WARPS 8     // queries per block of knn_merge_topk

// Whether (s, id) comes before (s2, id2) in the order above.
__device__ __forceinline__ bool ranks_before(float s, int id, float s2, int id2) {
  if (id2 < 0) {
    return id >= 0;
  }
  if (id < 0) {
    return false;
  }
  return s > s2 || (s == s2 && id < id2);
}

// Puts (s, id) into a sorted list of KNN_K if it comes before the list's last entry.
__device__ __forceinline__ void offer(float* scores, int* ids, float s, int id) {
  if (!ranks_before(s, id, scores[KNN_K - 1], ids[KNN_K - 1])) {
    return;
  }
  int p = KNN_K - 1;
  while (p > 0 && ranks_before(s, id, scores[p - 1], ids[p - 1])) {
    scores[p] = scores[p - 1];
    ids[p] = ids[p - 1];
    --p;
  }
  scores[p] = s;
  ids[p] = id;
}

// Element t of a thread's 8 rows (or queries) within a tile: two runs of 4, 64 apart, so that the 16
// threads of a half warp read 16 consecutive float4 and the stores of the loaders hit distinct banks.
__device__ __forceinline__ int tile_index(int group, int t) {
  return (t < 4 ? 0 : TILE / 2) + group * 4 + (t & 3);
}

// rows: n_rows x dim, row-major; queries: n_queries x dim, row-major; dim a multiple of SLAB.
// Grid: x = query tiles (n_queries / TILE rounded up), y = chunks (n_rows / rows_per_chunk rounded up).
// Writes cand_scores and cand_ids: [query][chunk][KNN_K]; ids are row_base + the row.
extern "C" __global__ void __launch_bounds__(GROUPS * GROUPS, 2)
knn_chunk_topk(const float* __restrict__ rows, int n_rows, int row_base, const float* __restrict__ queries, int n_queries,
               int dim, int rows_per_chunk, float* __restrict__ cand_scores, int* __restrict__ cand_ids) {
  __shared__ __align__(16) float row_stage[2][SLAB][TILE + PAD];
  __shared__ __align__(16) float query_stage[2][SLAB][TILE + PAD];
  __shared__ float threshold[TILE];          // per query: the K-th score of its list (-infinity until full)
  __shared__ float queue_scores[TILE][GROUPS];
  __shared__ int queue_ids[TILE][GROUPS];
  __shared__ int queued[TILE];

  const int tid = threadIdx.x;
  const int query_group = tid % GROUPS;
  const int row_group = tid / GROUPS;
  const int query_base = blockIdx.x * TILE;
  const int chunk_start = blockIdx.y * rows_per_chunk;
  const int chunk_end = min(n_rows, chunk_start + rows_per_chunk);
  const int tiles = (chunk_end - chunk_start + TILE - 1) / TILE;
  const int slabs = dim / SLAB;

  float list_scores[KNN_K];  // thread tid < TILE: the list of the tile's query tid
  int list_ids[KNN_K];
  for (int p = 0; p < KNN_K; p++) {
    list_scores[p] = -INFINITY;
    list_ids[p] = -1;
  }
  if (tid < TILE) {
    threshold[tid] = -INFINITY;
    queued[tid] = 0;
  }

  // Each thread loads 4 consecutive floats of one row and of one query per stage.
  const int load_line = tid / 2;
  const int load_dim = (tid % 2) * 4;
  const bool query_in = query_base + load_line < n_queries;
  const float* query_src = queries + (size_t)(query_base + load_line) * dim + load_dim;
  const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

  int tile = 0;
  int slab = 0;
  int stage = 0;
  int load_row = chunk_start + load_line;
  float4 next_row = load_row < chunk_end ? __ldg((const float4*)(rows + (size_t)load_row * dim + load_dim)) : zero;
  float4 next_query = query_in ? __ldg((const float4*)query_src) : zero;
  float acc[PER_THREAD][PER_THREAD];

  for (;;) {
    row_stage[stage][load_dim + 0][load_line] = next_row.x;
    row_stage[stage][load_dim + 1][load_line] = next_row.y;
    row_stage[stage][load_dim + 2][load_line] = next_row.z;
    row_stage[stage][load_dim + 3][load_line] = next_row.w;
    query_stage[stage][load_dim + 0][load_line] = next_query.x;
    query_stage[stage][load_dim + 1][load_line] = next_query.y;
    query_stage[stage][load_dim + 2][load_line] = next_query.z;
    query_stage[stage][load_dim + 3][load_line] = next_query.w;
    // One barrier per stage: the other stage was last read before every thread passed the previous one.
    __syncthreads();

    int next_slab = slab + 1;
    int next_tile = tile;
    if (next_slab == slabs) {
      next_slab = 0;
      next_tile++;
    }
    const bool more = next_tile < tiles;
    if (more) {  // in flight while this stage is used
      load_row = chunk_start + next_tile * TILE + load_line;
      next_row = load_row < chunk_end ? __ldg((const float4*)(rows + (size_t)load_row * dim + next_slab * SLAB + load_dim)) : zero;
      next_query = query_in ? __ldg((const float4*)(query_src + next_slab * SLAB)) : zero;
    }

    if (slab == 0) {
#pragma unroll
      for (int r = 0; r < PER_THREAD; r++) {
#pragma unroll
        for (int q = 0; q < PER_THREAD; q++) {
          acc[r][q] = 0.0f;
        }
      }
    }
#pragma unroll
    for (int d = 0; d < SLAB; d++) {
      const float4 r0 = *(const float4*)&row_stage[stage][d][tile_index(row_group, 0)];
      const float4 r1 = *(const float4*)&row_stage[stage][d][tile_index(row_group, 4)];
      const float4 q0 = *(const float4*)&query_stage[stage][d][tile_index(query_group, 0)];
      const float4 q1 = *(const float4*)&query_stage[stage][d][tile_index(query_group, 4)];
      const float rv[PER_THREAD] = {r0.x, r0.y, r0.z, r0.w, r1.x, r1.y, r1.z, r1.w};
      const float qv[PER_THREAD] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
#pragma unroll
      for (int r = 0; r < PER_THREAD; r++) {
#pragma unroll
        for (int q = 0; q < PER_THREAD; q++) {
          acc[r][q] = fmaf(rv[r], qv[q], acc[r][q]);
        }
      }
    }

    if (slab == slabs - 1) {  // the tile's scores are complete: offer those that reach their threshold
      const int tile_start = chunk_start + tile * TILE;
      // Thresholds change only between the barriers of the rounds below, so these reads are stable.
      float limit[PER_THREAD];
#pragma unroll
      for (int q = 0; q < PER_THREAD; q++) {
        limit[q] = threshold[tile_index(query_group, q)];
      }
      bool any = false;
#pragma unroll
      for (int r = 0; r < PER_THREAD; r++) {
        const bool row_in = tile_start + tile_index(row_group, r) < chunk_end;
#pragma unroll
        for (int q = 0; q < PER_THREAD; q++) {
          any |= row_in && acc[r][q] >= limit[q];
        }
      }
      if (__syncthreads_or(any)) {
#pragma unroll
        for (int r = 0; r < PER_THREAD; r++) {
          const int row = tile_start + tile_index(row_group, r);
#pragma unroll
          for (int q = 0; q < PER_THREAD; q++) {
            const int local_query = tile_index(query_group, q);
            if (row < chunk_end && acc[r][q] >= threshold[local_query]) {
              const int at = atomicAdd(&queued[local_query], 1);  // below GROUPS: one row per thread per round
              queue_scores[local_query][at] = acc[r][q];
              queue_ids[local_query][at] = row_base + row;
            }
          }
          __syncthreads();
          if (tid < TILE) {
            for (int i = 0; i < queued[tid]; i++) {
              offer(list_scores, list_ids, queue_scores[tid][i], queue_ids[tid][i]);
            }
            queued[tid] = 0;
            threshold[tid] = list_scores[KNN_K - 1];
          }
          __syncthreads();
        }
      }
    }

    if (!more) {
      break;
    }
    tile = next_tile;
    slab = next_slab;
    stage ^= 1;
  }

  const int query = query_base + tid;
  if (tid < TILE && query < n_queries) {
    const size_t at = ((size_t)query * gridDim.y + blockIdx.y) * KNN_K;
    for (int p = 0; p < KNN_K; p++) {
      cand_scores[at + p] = list_scores[p];
      cand_ids[at + p] = list_ids[p];
    }
  }
}

// cand_*: [query][per_query]; best_*: [query][KNN_K], read and replaced (initialise with -infinity and
// -1). Blocks of MERGE_WARPS * 32 threads, one warp per query.
extern "C" __global__ void knn_merge_topk(const float* __restrict__ cand_scores, const int* __restrict__ cand_ids, int per_query,
                                          int n_queries, float* best_scores, int* best_ids) {
  const int query = blockIdx.x * MERGE_WARPS + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (query >= n_queries) {
    return;  // the whole warp: the shuffles below see all 32 lanes
  }
  float scores[KNN_K];
  int ids[KNN_K];
  for (int p = 0; p < KNN_K; p++) {
    scores[p] = -INFINITY;
    ids[p] = -1;
  }
  // Each lane keeps the best of every 32nd candidate, the running best included.
  const float* cs = cand_scores + (size_t)query * per_query;
  const int* ci = cand_ids + (size_t)query * per_query;
  float* bs = best_scores + (size_t)query * KNN_K;
  int* bi = best_ids + (size_t)query * KNN_K;
  for (int i = lane; i < per_query + KNN_K; i += 32) {
    const bool candidate = i < per_query;
    offer(scores, ids, candidate ? cs[i] : bs[i - per_query], candidate ? ci[i] : bi[i - per_query]);
  }
  __syncwarp();  // every lane has read the running best before lane 0 replaces it

  // KNN_K rounds: the first of the 32 lanes' heads wins and its lane moves on.
  int head = 0;
  for (int rank = 0; rank < KNN_K; rank++) {
    float s = head < KNN_K ? scores[head] : -INFINITY;
    int id = head < KNN_K ? ids[head] : -1;
    int from = lane;
    for (int offset = 16; offset > 0; offset /= 2) {
      const float other_s = __shfl_xor_sync(0xffffffffu, s, offset);
      const int other_id = __shfl_xor_sync(0xffffffffu, id, offset);
      const int other_from = __shfl_xor_sync(0xffffffffu, from, offset);
      const bool other_first = ranks_before(other_s, other_id, s, id) ||
                               (!ranks_before(s, id, other_s, other_id) && other_from < from);
      if (other_first) {
        s = other_s;
        id = other_id;
        from = other_from;
      }
    }
    if (lane == from) {
      head++;
    }
    if (lane == 0) {
      bs[rank] = s;
      bi[rank] = id;
    }
  }
}
