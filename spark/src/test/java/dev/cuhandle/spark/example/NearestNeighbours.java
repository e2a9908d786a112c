package dev.cuhandle.spark.example;

import dev.cuhandle.Handle;
import dev.cuhandle.spark.GpuLibraries;
import dev.cuhandle.spark.GpuTask;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * The nearest-neighbour example job, where the GPU is the obvious choice: every row of a data set
 * scored against every query (a dot product) and, per query, the k best rows kept. Each row costs
 * {@code queries x dim} multiply-adds for its {@code 4 x dim} bytes (131,072 for 512 bytes at 1024
 * queries of 128 floats): the work is arithmetic, where a GPU outruns a CPU many times over, rather
 * than copying, which made the GPU lose the first example ({@link VectorScoring}: one query).
 *
 * <pre>{@code
 * NeighbourProblem problem = new NeighbourProblem(32_000_000, 128, 1024, 10, 32, seed);
 * NeighbourAnswer gpu = NearestNeighbours.onGpu(sc, problem);   // GpuTask.handle() in every task
 * NeighbourAnswer cpu = NearestNeighbours.onCpu(sc, problem);
 * NeighbourComparison.of(gpu, cpu).same();
 * }</pre>
 *
 * <p>Nothing is read or cached: each task generates its partition's rows from the seed
 * ({@link GeneratedRows}), in both jobs, and returns its best rows per query; the driver merges them.
 */
public final class NearestNeighbours {
    private NearestNeighbours() {}

    /** The answer computed on the GPU: each task searches its partition with {@link GpuTask#handle()}. */
    public static NeighbourAnswer onGpu(JavaSparkContext sc, NeighbourProblem problem) {
        return partitions(sc, problem).map(p -> searchOnGpu(problem, p, null)).reduce(NeighbourAnswer::merge);
    }

    /** The same answer computed on the CPU, for comparison. */
    public static NeighbourAnswer onCpu(JavaSparkContext sc, NeighbourProblem problem) {
        return partitions(sc, problem).map(p -> CpuNeighbourSearch.search(problem, p)).reduce(NeighbourAnswer::merge);
    }

    /** Partition {@code partition} searched on the GPU by one task alone, phase after phase, timed. */
    public static GpuPhaseTimes gpuBreakdown(JavaSparkContext sc, NeighbourProblem problem, int partition) {
        return sc.parallelize(List.of(partition), 1).map(p -> {
            GpuPhaseTimes times = new GpuPhaseTimes();
            searchOnGpu(problem, p, times);
            return times;
        }).first();
    }

    /** One element per partition, its number: the tasks generate their rows from it. */
    private static JavaRDD<Integer> partitions(JavaSparkContext sc, NeighbourProblem problem) {
        List<Integer> numbers = new ArrayList<>();
        for (int p = 0; p < problem.partitions; p++) {
            numbers.add(p);
        }
        return sc.parallelize(numbers, problem.partitions);
    }

    /**
     * One partition on the GPU of the running task: kernels on the task's handle, uploads on a second
     * handle of the same device (its own stream, so that they overlap the kernels), closed when the task
     * ends and cancelled with it.
     */
    static NeighbourAnswer searchOnGpu(NeighbourProblem problem, int partition, GpuPhaseTimes times) {
        Handle compute = GpuTask.handle();
        Handle copies = Handle.create(compute.device().ordinal());
        GpuTask.closeAtEnd(copies);
        copies.setWaitCancellation(compute.waitCancellation());
        try (GpuNeighbourSearch search = new GpuNeighbourSearch(compute, copies,
                GpuLibraries.resource(NearestNeighbours.class, GpuNeighbourSearch.KERNEL_RESOURCE), problem, problem.rowCount(partition))) {
            return search.search(partition, times);
        }
    }
}
