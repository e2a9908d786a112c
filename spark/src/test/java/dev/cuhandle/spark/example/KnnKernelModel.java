package dev.cuhandle.spark.example;

import java.util.Arrays;
import java.util.Random;

/**
 * The kernels of src/test/cuda/knn_topk.cu in Java, step for step, and {@link GpuNeighbourSearch}'s
 * use of them, so that their algorithm can be tested where no GPU is (the CPU stand-in driver runs
 * no kernels): tiles and chunks, which thread holds which rows and queries, the thresholds and the
 * rounds through the queues, the owners' lists, the candidate layout, the merge into the running
 * best, the row ids. A list is a {@link NeighbourLists} of one query, whose offer is the kernels'
 * (same order, same shifts). Scores are {@link Math#fma} chains in dim order, the kernel's
 * arithmetic, so the model predicts the GPU's answer bit for bit; the CUDA code itself is checked on
 * a GPU, by the runner's knn mode.
 *
 * <p>The threads of a block run one after the other here, in an order the caller chooses; on the GPU
 * they run at once and fill the queues in any order. The answer must not depend on it, which the tests
 * check with several orders.
 */
final class KnnKernelModel {
    static final int K = GpuNeighbourSearch.KERNEL_K;
    static final int TILE = GpuNeighbourSearch.TILE;
    /** Threads per row (and per query) of a tile: the kernel's 16 x 16 threads (GROUPS). */
    static final int GROUPS = 16;
    static final int PER_THREAD = TILE / GROUPS;
    static final int THREADS = GROUPS * GROUPS;

    private final Random threadOrder;

    /** @param threadOrderSeed shuffles the threads' order in each tile; a negative seed keeps thread order */
    KnnKernelModel(long threadOrderSeed) {
        this.threadOrder = threadOrderSeed < 0 ? null : new Random(threadOrderSeed);
    }

    /** {@link GpuNeighbourSearch#search}: {@code count} rows, {@code slotRows} per block, ids from {@code firstRow}. */
    NeighbourLists search(float[] rows, int count, long firstRow, float[] queries, int nQueries, int dim, int k, int slotRows) {
        float[] bestScores = new float[nQueries * K];
        int[] bestIds = new int[nQueries * K];
        Arrays.fill(bestScores, Float.NEGATIVE_INFINITY);
        Arrays.fill(bestIds, -1);
        int chunksMax = (slotRows + GpuNeighbourSearch.ROWS_PER_CHUNK - 1) / GpuNeighbourSearch.ROWS_PER_CHUNK;
        float[] candidateScores = new float[nQueries * chunksMax * K];
        int[] candidateIds = new int[candidateScores.length];
        for (int done = 0; done < count; done += slotRows) {
            int n = Math.min(slotRows, count - done);
            float[] block = Arrays.copyOfRange(rows, done * dim, (done + n) * dim);
            int chunks = (n + GpuNeighbourSearch.ROWS_PER_CHUNK - 1) / GpuNeighbourSearch.ROWS_PER_CHUNK;
            for (int x = 0; x < (nQueries + TILE - 1) / TILE; x++) {
                for (int y = 0; y < chunks; y++) {
                    chunkTopK(x, y, chunks, block, n, done, queries, nQueries, dim, GpuNeighbourSearch.ROWS_PER_CHUNK, candidateScores, candidateIds);
                }
            }
            mergeTopK(candidateScores, candidateIds, chunks * K, nQueries, bestScores, bestIds);
        }
        NeighbourLists best = new NeighbourLists(nQueries, k);
        best.offerCandidates(bestScores, bestIds, K, firstRow);
        return best;
    }

    /** The kernel's tile_index: element {@code t} of a thread's 8 rows or queries, in two runs of 4, 64 apart. */
    static int tileIndex(int group, int t) {
        return (t < 4 ? 0 : TILE / 2) + group * 4 + (t & 3);
    }

    /** knn_chunk_topk's block ({@code x}, {@code y}) of a grid with {@code chunks} chunks. */
    void chunkTopK(int x, int y, int chunks, float[] rows, int nRows, int rowBase, float[] queries, int nQueries, int dim, int rowsPerChunk,
            float[] candidateScores, int[] candidateIds) {
        int queryBase = x * TILE;
        int chunkStart = y * rowsPerChunk;
        int chunkEnd = Math.min(nRows, chunkStart + rowsPerChunk);
        int tiles = (chunkEnd - chunkStart + TILE - 1) / TILE;
        NeighbourLists[] lists = new NeighbourLists[TILE]; // per query of the tile: its owner's list
        float[] threshold = new float[TILE];
        for (int q = 0; q < TILE; q++) {
            lists[q] = new NeighbourLists(1, K);
            threshold[q] = Float.NEGATIVE_INFINITY;
        }
        int[] order = new int[THREADS];
        for (int t = 0; t < THREADS; t++) {
            order[t] = t;
        }
        for (int tile = 0; tile < tiles; tile++) {
            int tileStart = chunkStart + tile * TILE;
            float[][] scores = new float[TILE][TILE]; // [row of the tile][query of the tile]: the threads' registers
            boolean any = false;
            for (int r = 0; r < TILE; r++) {
                for (int q = 0; q < TILE; q++) {
                    scores[r][q] = score(rows, tileStart + r, queries, queryBase + q, nRows, nQueries, dim);
                    any |= tileStart + r < chunkEnd && scores[r][q] >= threshold[q];
                }
            }
            if (!any) {
                continue; // __syncthreads_or(any): no round
            }
            for (int round = 0; round < PER_THREAD; round++) {
                if (threadOrder != null) {
                    shuffle(order);
                }
                float[][] queueScores = new float[TILE][GROUPS];
                int[][] queueIds = new int[TILE][GROUPS];
                int[] queued = new int[TILE];
                for (int tid : order) {
                    int row = tileIndex(tid / GROUPS, round);
                    for (int t = 0; t < PER_THREAD; t++) {
                        int q = tileIndex(tid % GROUPS, t);
                        if (tileStart + row < chunkEnd && scores[row][q] >= threshold[q]) {
                            queueScores[q][queued[q]] = scores[row][q]; // at most GROUPS: one row per thread per round
                            queueIds[q][queued[q]++] = rowBase + tileStart + row;
                        }
                    }
                }
                for (int q = 0; q < TILE; q++) { // the owners, after the barrier
                    for (int i = 0; i < queued[q]; i++) {
                        lists[q].offer(0, queueScores[q][i], queueIds[q][i]);
                    }
                    threshold[q] = lists[q].scores[K - 1];
                }
            }
        }
        for (int q = 0; q < TILE; q++) {
            int query = queryBase + q;
            if (query < nQueries) {
                lists[q].copyTo(candidateScores, candidateIds, (query * chunks + y) * K);
            }
        }
    }

    /** A row's score as the kernel computes it: a fused multiply-add per dim, in dim order; 0 for a padded row or query. */
    static float score(float[] rows, int row, float[] queries, int query, int nRows, int nQueries, int dim) {
        if (row >= nRows || query >= nQueries) {
            return 0f;
        }
        float acc = 0f;
        for (int d = 0; d < dim; d++) {
            acc = Math.fma(rows[row * dim + d], queries[query * dim + d], acc);
        }
        return acc;
    }

    /** knn_merge_topk: per query a warp of 32 lanes, each keeping every 32nd candidate's best, then K rounds. */
    static void mergeTopK(float[] candidateScores, int[] candidateIds, int perQuery, int nQueries, float[] bestScores, int[] bestIds) {
        for (int query = 0; query < nQueries; query++) {
            NeighbourLists[] lanes = new NeighbourLists[32];
            for (int lane = 0; lane < 32; lane++) {
                lanes[lane] = new NeighbourLists(1, K);
                for (int i = lane; i < perQuery + K; i += 32) {
                    boolean candidate = i < perQuery;
                    lanes[lane].offer(0, candidate ? candidateScores[query * perQuery + i] : bestScores[query * K + i - perQuery],
                            candidate ? candidateIds[query * perQuery + i] : bestIds[query * K + i - perQuery]);
                }
            }
            int[] head = new int[32];
            for (int rank = 0; rank < K; rank++) {
                int from = 0;
                for (int lane = 1; lane < 32; lane++) {
                    if (NeighbourLists.ranksBefore(headScore(lanes, head, lane), headId(lanes, head, lane), headScore(lanes, head, from),
                            headId(lanes, head, from))) {
                        from = lane; // equal heads: the lower lane stays, as the kernel's shuffles decide
                    }
                }
                bestScores[query * K + rank] = headScore(lanes, head, from);
                bestIds[query * K + rank] = (int) headId(lanes, head, from);
                head[from]++;
            }
        }
    }

    private static float headScore(NeighbourLists[] lanes, int[] head, int lane) {
        return head[lane] < K ? lanes[lane].scores[head[lane]] : Float.NEGATIVE_INFINITY;
    }

    private static long headId(NeighbourLists[] lanes, int[] head, int lane) {
        return head[lane] < K ? lanes[lane].ids[head[lane]] : -1;
    }

    private void shuffle(int[] order) {
        for (int i = order.length - 1; i > 0; i--) {
            int j = threadOrder.nextInt(i + 1);
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
    }
}
