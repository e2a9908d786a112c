package dev.cuhandle.spark.example;

import static dev.cuhandle.spark.example.VectorScoringMain.PREFIX;

import dev.cuhandle.Cuda;
import dev.cuhandle.spark.GpuTask;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * The runner's {@code knn} mode ({@code VectorScoringMain knn [--option value]...}): the
 * nearest-neighbour job ({@link NearestNeighbours}) on the CPU and on the GPU, its answers compared,
 * rows/s of each and a breakdown of a GPU task's time.
 *
 * <pre>
 * knn [--master local[16]] [--rows 32000000] [--dim 128] [--queries 1024] [--k 10] [--partitions 32] [--runs 3] [--seed 1]
 * </pre>
 *
 * <p>Spark local mode, every task on spark.cuhandle.device (default 0). The CPU and the GPU job take
 * turns, one warm-up each (the JIT; the GPU's context, image and memory caches), then {@code --runs}
 * each; every run must give its path's warm-up answer again, bit for bit. rows/s are the rows searched
 * divided by the median job time. Then one task searches partition 0 alone, phase after phase
 * ({@link GpuPhaseTimes}). Passes when the answers agree ({@link NeighbourComparison}), every task handle
 * is closed, and the GPU job does at least {@link #TARGET_RATIO} times the CPU job's rows/s; on the CPU
 * stand-in driver, where kernels do not run, the answers are not compared and the ratio only printed.
 */
final class NearestNeighboursMain {
    /** The GPU/CPU ratio of rows/s the example is meant to show (issue 33). */
    static final double TARGET_RATIO = 10;

    private NearestNeighboursMain() {}

    static boolean knn(Map<String, String> o, PrintStream out) {
        String master = o.getOrDefault("master", "local[16]");
        NeighbourProblem problem = new NeighbourProblem(Long.parseLong(o.getOrDefault("rows", "32000000")),
                Integer.parseInt(o.getOrDefault("dim", "128")), Integer.parseInt(o.getOrDefault("queries", "1024")),
                Integer.parseInt(o.getOrDefault("k", "10")), Integer.parseInt(o.getOrDefault("partitions", "32")),
                Long.parseLong(o.getOrDefault("seed", "1")));
        int runs = Integer.parseInt(o.getOrDefault("runs", "3"));
        boolean standIn = Cuda.isStandIn();
        out.println(PREFIX + "mode knn, master " + master + ", " + problem + ", driver " + Cuda.driverPath() + ", " + Cuda.device(0));
        try (JavaSparkContext sc = new JavaSparkContext(VectorScoringMain.conf(master).setAppName("cuhandle nearest neighbours"))) {
            NeighbourAnswer cpu = NearestNeighbours.onCpu(sc, problem); // warm-up
            NeighbourAnswer gpu = NearestNeighbours.onGpu(sc, problem);
            List<Long> cpuTimes = new ArrayList<>();
            List<Long> gpuTimes = new ArrayList<>();
            for (int r = 0; r < runs; r++) {
                long c0 = System.nanoTime();
                NeighbourAnswer c = NearestNeighbours.onCpu(sc, problem);
                long c1 = System.nanoTime();
                NeighbourAnswer g = NearestNeighbours.onGpu(sc, problem);
                long g1 = System.nanoTime();
                cpuTimes.add(c1 - c0);
                gpuTimes.add(g1 - c1);
                if (!c.sameAs(cpu) || !g.sameAs(gpu)) {
                    out.println(PREFIX + "run " + (r + 1) + " differs from the warm-up: CPU " + (c.sameAs(cpu) ? "same" : "DIFFERENT") + ", GPU "
                            + (g.sameAs(gpu) ? "same" : "DIFFERENT"));
                    return false;
                }
            }
            GpuPhaseTimes breakdown = NearestNeighbours.gpuBreakdown(sc, problem, 0);

            out.println(PREFIX + "CPU answer: " + cpu.summary(2));
            out.println(PREFIX + "GPU answer: " + gpu.summary(2));
            boolean agree = compare(cpu, gpu, problem, standIn, out);
            double cpuSeconds = VectorScoringMain.median(cpuTimes) / 1e9;
            double gpuSeconds = VectorScoringMain.median(gpuTimes) / 1e9;
            double ratio = cpuSeconds / gpuSeconds;
            boolean fastEnough = ratio >= TARGET_RATIO;
            out.printf("%sthroughput: CPU %.3g rows/s (%.3g GFLOP/s), GPU %.3g rows/s (%.3g GFLOP/s); medians of %d jobs each: CPU %.3f s, GPU %.3f s%n",
                    PREFIX, problem.rows / cpuSeconds, 2 * problem.multiplyAdds() / cpuSeconds / 1e9, problem.rows / gpuSeconds,
                    2 * problem.multiplyAdds() / gpuSeconds / 1e9, runs, cpuSeconds, gpuSeconds);
            out.printf("%sGPU/CPU %.1fx: %s%s%n", PREFIX, ratio, fastEnough ? "at least " : "BELOW ", TARGET_RATIO + "x"
                    + (standIn ? " (not required on the CPU stand-in driver)" : ""));
            out.println(PREFIX + "GPU breakdown, one task alone, phases not overlapped: " + breakdown.describe(problem.queries, problem.dim));
            int open = GpuTask.openHandles();
            out.println(PREFIX + "task handles open after the jobs: " + open);
            return agree && (fastEnough || standIn) && open == 0;
        }
    }

    /** Prints and returns whether the answers agree; on the stand-in only the row counts can. */
    private static boolean compare(NeighbourAnswer cpu, NeighbourAnswer gpu, NeighbourProblem problem, boolean standIn, PrintStream out) {
        if (cpu.rows != problem.rows || gpu.rows != problem.rows) {
            out.println(PREFIX + "rows searched: CPU " + cpu.rows + ", GPU " + gpu.rows + ", expected " + problem.rows);
            return false;
        }
        if (standIn) {
            out.println(PREFIX + "CPU answer == GPU answer: not compared (the CPU stand-in driver runs no kernels)");
            return true;
        }
        NeighbourComparison comparison = NeighbourComparison.of(gpu, cpu);
        out.println(PREFIX + "CPU answer == GPU answer: " + comparison);
        return comparison.same();
    }
}
