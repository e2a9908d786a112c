package dev.cuhandle.spark.example;

import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.Dim3;
import dev.cuhandle.Event;
import dev.cuhandle.Handle;
import dev.cuhandle.HostBuffer;
import dev.cuhandle.Kernel;
import dev.cuhandle.Library;
import dev.cuhandle.spark.GpuTask;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Deque;
import java.util.concurrent.CompletableFuture;

/**
 * One partition of the nearest-neighbour job on the GPU, as a pipeline of blocks of rows through two
 * slots: while the GPU scores block b from one slot, the host generates block b+1 into the other
 * slot's pinned memory and the copy engine uploads it.
 *
 * <p>Two handles, so two streams: copies go on {@code copies}, kernels on {@code compute}, and two
 * events per slot order them without a host wait. A block's kernels wait for its upload
 * ({@code uploaded}); a slot's next upload waits until the kernel has read the slot's device rows
 * ({@code consumed}); the host regenerates a slot's pinned rows once their upload's future has
 * completed. On one stream the upload of block b+1 would queue behind the kernels of block b.
 *
 * <p>Per block, {@code knn_chunk_topk} (src/test/cuda/knn_topk.cu) leaves each query's candidates
 * (its best {@link #KERNEL_K} rows of each chunk) and {@code knn_merge_topk} merges them into the query's running best
 * {@link #KERNEL_K} rows on the device; at the end the host downloads the running best and keeps the
 * job's k. Rows reach pinned memory through a small Java array and {@link HostBuffer#put(long, float[],
 * int, int)}, not through {@link HostBuffer#asByteBuffer()} views: a view keeps the pinned memory until
 * the garbage collector finds it unreachable (rule L1 of docs/design.md), so each task would pin 2
 * slots more until a collection, instead of handing them back to the context's pinned cache at close.
 *
 * <p>With {@link GpuPhaseTimes} the search instead waits for each phase and times it alone (a
 * diagnostic: nothing overlaps then).
 */
final class GpuNeighbourSearch implements AutoCloseable {
    /** The kernels' image, compiled from src/test/cuda/knn_topk.cu by the build. */
    static final String KERNEL_RESOURCE = "/kernels/knn_topk.fatbin";
    /** The length of the kernels' lists, KNN_K in knn_topk.cu: the largest k the job supports. */
    static final int KERNEL_K = 16;
    /** Queries per block of knn_chunk_topk (TILE), and rows per step of its chunk. */
    static final int TILE = 128;
    /** Threads per block of both kernels. */
    static final int THREADS = 256;
    /** Queries per block of knn_merge_topk (MERGE_WARPS): a warp each. */
    static final int MERGE_QUERIES = THREADS / 32;
    /**
     * Rows per block of knn_chunk_topk: long enough that the block's lists fill early and their thresholds
     * then turn nearly every score away, short enough for a grid of 128 blocks per 64 Ki rows at 1024
     * queries (an H200 has 132 multiprocessors).
     */
    static final int ROWS_PER_CHUNK = 4096;
    /**
     * Rows per slot: 32 MiB of 128-float rows, about 0.6 ms of an H200's copy engine and 1.3 ms of its
     * kernel at 1024 queries. Measured on an H200 with the kernels driven alone by a CUDA program:
     * uploads from pinned memory at 52-55 GB/s; knn_chunk_topk at 13.1 TFLOP/s for one grid of 65,536
     * rows (128 blocks, one per multiprocessor) and 19-20 TFLOP/s for grids of 262,144 rows, as when
     * several tasks' grids share the GPU; knn_merge_topk at 1-2% of that.
     */
    static final int BLOCK_ROWS = 65536;
    /** Rows generated into the Java array between two copies into pinned memory. */
    static final int PACK_ROWS = 256;

    private final Handle compute;
    private final Handle copies;
    private final Kernel chunkTopK;
    private final Kernel mergeTopK;
    private final NeighbourProblem problem;
    private final int slotRows;
    private final long slotBytes;
    private final int perQueryMax;
    private final float[] packed;
    /** Everything allocated here, closed in reverse order. */
    private final Deque<AutoCloseable> owned = new ArrayDeque<>();
    private final HostBuffer pinned;
    private final DeviceBuffer[] slots = new DeviceBuffer[2];
    private final Event[] uploaded = new Event[2];
    private final Event[] consumed = new Event[2];
    private final Event[] marks = new Event[2];
    private final DeviceBuffer queries;
    private final DeviceBuffer candidateScores;
    private final DeviceBuffer candidateIds;
    private final DeviceBuffer bestScores;
    private final DeviceBuffer bestIds;

    /**
     * Allocates the slots and buffers for partitions of up to {@code maxRows} rows.
     *
     * @param compute the handle for kernels and the final download (the task's)
     * @param copies a second handle of the same context, for the uploads
     */
    GpuNeighbourSearch(Handle compute, Handle copies, Library kernels, NeighbourProblem problem, int maxRows) {
        this.compute = compute;
        this.copies = copies;
        this.chunkTopK = kernels.kernel("knn_chunk_topk");
        this.mergeTopK = kernels.kernel("knn_merge_topk");
        this.problem = problem;
        this.slotRows = Math.min(BLOCK_ROWS, maxRows);
        this.slotBytes = 4L * slotRows * problem.dim;
        this.perQueryMax = chunks(slotRows) * KERNEL_K;
        this.packed = new float[PACK_ROWS * problem.dim];
        try {
            pinned = own(compute.allocateHost(2 * slotBytes));
            for (int s = 0; s < 2; s++) {
                slots[s] = own(compute.allocate(slotBytes));
                uploaded[s] = own(compute.createEvent());
                consumed[s] = own(compute.createEvent());
                marks[s] = own(compute.createEvent());
            }
            queries = own(compute.upload(problem.queryVectors()));
            candidateScores = own(compute.allocate(4L * problem.queries * perQueryMax));
            candidateIds = own(compute.allocate(4L * problem.queries * perQueryMax));
            float[] noScores = new float[problem.queries * KERNEL_K];
            int[] noIds = new int[problem.queries * KERNEL_K];
            Arrays.fill(noScores, Float.NEGATIVE_INFINITY);
            Arrays.fill(noIds, -1);
            bestScores = own(compute.upload(noScores));
            bestIds = own(compute.upload(noIds));
        } catch (RuntimeException | Error e) {
            close();
            throw e;
        }
    }

    private <T extends AutoCloseable> T own(T resource) {
        owned.push(resource);
        return resource;
    }

    private static int chunks(int rows) {
        return (rows + ROWS_PER_CHUNK - 1) / ROWS_PER_CHUNK;
    }

    /**
     * Partition {@code partition}'s best rows for every query; with {@code times}, phase by phase (see the
     * class comment). Waits for the GPU only through {@link GpuTask} or the task handle, so a killed task
     * stops waiting at once.
     */
    NeighbourAnswer search(int partition, GpuPhaseTimes times) {
        long first = problem.firstRow(partition);
        int count = problem.rowCount(partition);
        CompletableFuture<?>[] uploads = new CompletableFuture<?>[2];
        for (int done = 0, block = 0; done < count; done += slotRows, block++) {
            int s = block % 2;
            int n = Math.min(slotRows, count - done);
            if (uploads[s] != null) {
                GpuTask.await(uploads[s]); // the slot's pinned rows of two blocks ago have been copied
            }
            long packStart = System.nanoTime();
            pack(s, first + done, n);
            copies.waitFor(consumed[s]); // the kernel of two blocks ago has read the slot's device rows
            if (times != null) {
                times.packMs += (System.nanoTime() - packStart) / 1e6;
                marks[0].record(copies);
            }
            uploads[s] = copies.uploadAsync(pinned, s * slotBytes, slots[s], 4L * n * problem.dim);
            uploaded[s].record(copies);
            compute.waitFor(uploaded[s]);
            if (times != null) {
                times.copyMs += elapsed(marks[0], uploaded[s], copies);
                marks[1].record(compute);
            }
            int chunks = chunks(n);
            compute.launch(chunkTopK, Dim3.of((problem.queries + TILE - 1) / TILE, chunks), Dim3.of(THREADS), 0,
                    slots[s], n, done, queries, problem.queries, problem.dim, ROWS_PER_CHUNK, candidateScores, candidateIds);
            consumed[s].record(compute);
            if (times != null) {
                times.kernelMs += elapsed(marks[1], consumed[s], compute);
            }
            compute.launch(mergeTopK, Dim3.of((problem.queries + MERGE_QUERIES - 1) / MERGE_QUERIES), Dim3.of(THREADS), 0,
                    candidateScores, candidateIds, chunks * KERNEL_K, problem.queries, bestScores, bestIds);
            if (times != null) {
                marks[1].record(compute);
                times.mergeMs += elapsed(consumed[s], marks[1], compute);
                times.blocks++;
            }
        }
        long mergeStart = System.nanoTime();
        float[] scores = new float[problem.queries * KERNEL_K];
        int[] ids = new int[problem.queries * KERNEL_K];
        bestScores.download(scores); // on the task's handle: after every merge, and a killed task stops waiting
        bestIds.download(ids);
        NeighbourLists best = new NeighbourLists(problem.queries, problem.k);
        best.offerCandidates(scores, ids, KERNEL_K, first);
        if (times != null) {
            times.hostMergeMs += (System.nanoTime() - mergeStart) / 1e6;
            times.rows += count;
        }
        return new NeighbourAnswer(count, best);
    }

    /** Generates {@code n} rows from id {@code firstRow} into slot {@code s}'s pinned memory. */
    private void pack(int s, long firstRow, int n) {
        int dim = problem.dim;
        for (int done = 0; done < n; done += PACK_ROWS) {
            int m = Math.min(PACK_ROWS, n - done);
            problem.generateRows(packed, 0, firstRow + done, m);
            pinned.put(s * slotBytes + 4L * done * dim, packed, 0, m * dim);
        }
    }

    /** Milliseconds from {@code start} to {@code end}, once {@code h}'s work so far is done. */
    private static double elapsed(Event start, Event end, Handle h) {
        GpuTask.synchronize(h);
        return end.elapsedSince(start);
    }

    /** Frees the pinned memory, buffers and events (also after the constructor failed half way). */
    @Override
    public void close() {
        while (!owned.isEmpty()) {
            try {
                owned.pop().close();
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }
    }
}
