package dev.cuhandle.spark.example;

import dev.cuhandle.Blas;
import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.Dim3;
import dev.cuhandle.Handle;
import dev.cuhandle.Kernel;
import dev.cuhandle.spark.GpuTask;
import java.util.Arrays;

/**
 * Scores one partition's rows on the GPU: rows are packed into a Java array a chunk at a time,
 * uploaded (the upload returns once the array has been read, so packing the next chunk overlaps
 * the copy and the kernel of this one) and scored by the {@code score_rows} kernel into one device
 * vector of scores. At the end BLAS reduces the scores: {@code sasum} for the total (scores are
 * non-negative: features and query lie in [0, 1)) and {@code isamax} k times for the best rows,
 * zeroing each one found.
 *
 * <p>The one wait for the GPU goes through {@link GpuTask#synchronize(Handle)}, so a cancelled
 * task stops waiting at once.
 */
final class GpuPartitionScorer implements AutoCloseable {
    static final int BLOCK = 256;
    private static final int ROWS_PER_BLOCK = BLOCK / 32; // one warp per row

    private final Handle h;
    private final Kernel kernel;
    private final int dim;
    private final int chunkRows;
    private final float[] packed;
    private DeviceBuffer query;
    private DeviceBuffer chunk;
    private DeviceBuffer scores;
    private long capacity;
    private int filled;
    private long scored;

    GpuPartitionScorer(Handle h, Kernel kernel, float[] query, int chunkRows) {
        this.h = h;
        this.kernel = kernel;
        this.dim = query.length;
        this.chunkRows = chunkRows;
        this.packed = new float[chunkRows * dim];
        try {
            this.query = h.upload(query);
            this.chunk = h.allocate(4L * packed.length);
            this.capacity = 4L * chunkRows;
            this.scores = h.allocate(4L * capacity);
        } catch (RuntimeException | Error e) {
            close();
            throw e;
        }
    }

    /** Adds one row (its length must be the query's). */
    void add(float[] row) {
        if (row.length != dim) {
            throw new IllegalArgumentException("a row has " + row.length + " floats; the query has " + dim);
        }
        System.arraycopy(row, 0, packed, filled * dim, dim);
        if (++filled == chunkRows) {
            flush();
        }
    }

    /**
     * Queues the upload and scoring of the rows packed so far. The same device chunk is reused: the next
     * upload into it is queued on the same stream, after this kernel.
     */
    private void flush() {
        if (filled == 0) {
            return;
        }
        ensureCapacity(scored + filled);
        chunk.upload(packed, 0, filled * dim);
        h.launch(kernel, Dim3.of((filled + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK), Dim3.of(BLOCK), 0,
                chunk, query, scores.sliceFloats(scored, filled), filled, dim);
        scored += filled;
        filled = 0;
    }

    /** Grows the score vector to hold {@code rows} (a stream-ordered copy of the scores so far). */
    private void ensureCapacity(long rows) {
        if (rows <= capacity) {
            return;
        }
        long grown = Math.max(rows, 2 * capacity);
        DeviceBuffer bigger = h.allocate(4L * grown);
        if (scored > 0) {
            h.copy(scores.sliceFloats(0, scored), bigger.sliceFloats(0, scored));
        }
        scores.close();
        scores = bigger;
        capacity = grown;
    }

    /** The partition's answer: its row count, the sum of its scores and its {@code k} best rows. */
    ScoreAnswer answer(int partition, int k) {
        flush();
        GpuTask.synchronize(h); // all uploads and kernels done; a cancelled task stops here
        if (scored == 0) {
            return new ScoreAnswer(0, 0, new long[0], new float[0]);
        }
        double total = Blas.sasum(h, scored, scores, 1);
        int picks = (int) Math.min(k, scored);
        long[] ids = new long[picks];
        float[] best = new float[picks];
        float[] value = new float[1];
        int found = 0;
        for (; found < picks; found++) {
            long index = Blas.isamax(h, scored, scores, 1) - 1; // BLAS counts from 1
            if (index < 0 || index >= scored) {
                break; // only where kernels do not run (the CPU stand-in driver): no index to take
            }
            DeviceBuffer one = scores.sliceFloats(index, 1);
            one.download(value);
            h.memset(one, 0); // below every real score: the next isamax finds the next best
            ids[found] = ScoreAnswer.rowId(partition, index);
            best[found] = value[0];
        }
        return new ScoreAnswer(scored, total, Arrays.copyOf(ids, found), Arrays.copyOf(best, found));
    }

    /** Frees the device buffers (also after the constructor failed half way). */
    @Override
    public void close() {
        for (DeviceBuffer b : new DeviceBuffer[] {scores, chunk, query}) {
            if (b != null) {
                b.close();
            }
        }
    }
}
