package dev.cuhandle.spark.example;

import dev.cuhandle.Handle;
import dev.cuhandle.Kernel;
import dev.cuhandle.spark.GpuLibraries;
import dev.cuhandle.spark.GpuTask;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.SplittableRandom;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * The example job: score every row of an RDD of float vectors against a query vector (a dot
 * product) and find the k best rows and the sum of all scores, once on the GPU with cuhandle
 * (a kernel for the dot products, BLAS {@code sasum} and {@code isamax} per partition) and once
 * on the CPU, which must give the same answer.
 *
 * <pre>{@code
 * JavaRDD<float[]> rows = VectorScoring.vectors(sc, 10_000_000, 64, 64, seed).cache();
 * ScoreAnswer gpu = VectorScoring.onGpu(rows, query, 10);   // GpuTask.handle() in every task
 * ScoreAnswer cpu = VectorScoring.onCpu(rows, query, 10);
 * }</pre>
 */
public final class VectorScoring {
    /** The kernel image, compiled from src/test/cuda/score_rows.cu by the build. */
    static final String KERNEL_RESOURCE = "/kernels/score_rows.fatbin";
    /** Rows per upload: 8 MiB of 64-float rows, large enough to keep the copy engine busy. */
    static final int CHUNK_ROWS = 32768;

    private VectorScoring() {}

    /**
     * {@code rows} vectors of {@code dim} floats in [0, 1) in {@code partitions} partitions, generated in
     * the tasks from {@code seed} (nothing is shipped from the driver; the same seed gives the same rows).
     */
    public static JavaRDD<float[]> vectors(JavaSparkContext sc, long rows, int dim, int partitions, long seed) {
        List<Integer> indices = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            indices.add(p);
        }
        return sc.parallelize(indices, partitions).mapPartitionsWithIndex((p, ignored) -> {
            long first = rows * p / partitions;
            long count = rows * (p + 1) / partitions - first;
            // Each partition's generator seeded from a mixed value: seeds that differ by a multiple of
            // SplittableRandom's step would give the same numbers, shifted.
            return generated(count, dim, new SplittableRandom(new SplittableRandom(seed + 1 + p).nextLong()));
        }, true);
    }

    /** The query vector for {@code seed}: {@code dim} floats in [0, 1). */
    public static float[] query(int dim, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        float[] q = new float[dim];
        for (int j = 0; j < dim; j++) {
            q[j] = random.nextFloat();
        }
        return q;
    }

    private static Iterator<float[]> generated(long count, int dim, SplittableRandom random) {
        return new Iterator<>() {
            private long made;

            @Override
            public boolean hasNext() {
                return made < count;
            }

            @Override
            public float[] next() {
                if (made == count) {
                    throw new NoSuchElementException();
                }
                made++;
                float[] row = new float[dim];
                for (int j = 0; j < dim; j++) {
                    row[j] = random.nextFloat();
                }
                return row;
            }
        };
    }

    /** The answer computed on the GPU: each task scores its partition with {@link GpuTask#handle()}. */
    public static ScoreAnswer onGpu(JavaRDD<float[]> rows, float[] query, int k) {
        return rows.mapPartitionsWithIndex((p, it) -> Collections.singletonList(scoreOnGpu(p, it, query, k)).iterator(), false)
                .reduce((a, b) -> a.merge(b, k));
    }

    /** The same answer computed on the CPU, for comparison. */
    public static ScoreAnswer onCpu(JavaRDD<float[]> rows, float[] query, int k) {
        return rows.mapPartitionsWithIndex((p, it) -> Collections.singletonList(scoreOnCpu(p, it, query, k)).iterator(), false)
                .reduce((a, b) -> a.merge(b, k));
    }

    /** One partition on the GPU of the running task. */
    static ScoreAnswer scoreOnGpu(int partition, Iterator<float[]> rows, float[] query, int k) {
        Handle h = GpuTask.handle();
        Kernel kernel = GpuLibraries.resource(VectorScoring.class, KERNEL_RESOURCE).kernel("score_rows");
        try (GpuPartitionScorer scorer = new GpuPartitionScorer(h, kernel, query, CHUNK_ROWS)) {
            while (rows.hasNext()) {
                scorer.add(rows.next());
            }
            return scorer.answer(partition, k);
        }
    }

    /** One partition on the CPU: the same dot products, in index order, and a heap for the best k. */
    static ScoreAnswer scoreOnCpu(int partition, Iterator<float[]> rows, float[] query, int k) {
        TopK best = new TopK(k);
        double total = 0;
        long index = 0;
        while (rows.hasNext()) {
            float[] row = rows.next();
            if (row.length != query.length) {
                throw new IllegalArgumentException("a row has " + row.length + " floats; the query has " + query.length);
            }
            float score = 0f;
            for (int j = 0; j < row.length; j++) {
                score += row[j] * query[j];
            }
            total += score;
            best.offer(ScoreAnswer.rowId(partition, index++), score);
        }
        return best.answer(index, total);
    }
}
