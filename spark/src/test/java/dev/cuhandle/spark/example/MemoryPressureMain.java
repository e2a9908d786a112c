package dev.cuhandle.spark.example;

import dev.cuhandle.Blas;
import dev.cuhandle.Cuda;
import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.Handle;
import dev.cuhandle.spark.CuhandleSparkPlugin;
import dev.cuhandle.spark.GpuAdmission;
import dev.cuhandle.spark.GpuRetry;
import dev.cuhandle.spark.GpuTask;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * Issue 33's memory-pressure run (rule S2 of docs/design.md): TASKS tasks on one GPU whose device memory demand
 * adds up to about FACTOR times what the GPU has free. Each task takes a block of FACTOR x free / TASKS bytes,
 * fills it (so that it is really backed), computes {@code y = 2x + y} on a small vector of whole numbers (exact in
 * float on the GPU and the CPU alike) while it holds the block, and returns the result. Admission lets
 * {@code --concurrent} tasks hold the GPU at once; with more than 1 / FACTOR of the tasks at once the blocks do not
 * all fit, and {@link GpuRetry} turns the out-of-memory errors into retries after other tasks release theirs.
 * PASS: no failed task and every answer equal to the CPU's (not compared on the CPU stand-in driver, where kernels
 * do not run).
 *
 * <p>Usage: {@code MemoryPressureMain [--master local[16]] [--tasks 16] [--factor 2.0] [--concurrent 8]
 * [--hold-ms 300]} (run-spark-example's {@code pressure} mode).
 */
public final class MemoryPressureMain {
    private static final int N = 1 << 20;
    /** Work calls of every task, attempts included (local mode: the tasks run in this JVM). */
    private static final AtomicInteger ATTEMPTS = new AtomicInteger();

    private MemoryPressureMain() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> o = VectorScoringMain.options(args);
        String master = o.getOrDefault("master", "local[16]");
        int tasks = Integer.parseInt(o.getOrDefault("tasks", "16"));
        double factor = Double.parseDouble(o.getOrDefault("factor", "2.0"));
        int concurrent = Integer.parseInt(o.getOrDefault("concurrent", "8"));
        long holdMillis = Long.parseLong(o.getOrDefault("hold-ms", "300"));
        long free;
        try (Handle h = Handle.create(0)) {
            free = h.freeMemory();
        }
        long block = (long) (factor * free / tasks) & ~((2L << 20) - 1);
        System.out.printf("pressure: %d tasks on GPU 0, %d at once (spark.cuhandle.concurrentGpuTasks), %.1f GiB free,"
                + " %.2f GiB per task: %.2fx the free memory in all, %.2fx for the tasks admitted at once%n",
                tasks, concurrent, free / 1073741824.0, block / 1073741824.0, (double) block * tasks / free, (double) block * concurrent / free);
        SparkConf conf = new SparkConf().setMaster(master).setAppName("cuhandle memory pressure")
                .set("spark.ui.enabled", "false").set("spark.driver.host", "127.0.0.1").set("spark.driver.bindAddress", "127.0.0.1")
                .set("spark.plugins", CuhandleSparkPlugin.class.getName())
                .set(GpuAdmission.CONCURRENT_TASKS_KEY, String.valueOf(concurrent));
        AtomicInteger failed;
        long start = System.nanoTime();
        List<float[]> gpu;
        try (JavaSparkContext sc = new JavaSparkContext(conf)) {
            failed = FailedTasks.count(sc);
            List<Integer> ids = new ArrayList<>();
            for (int i = 0; i < tasks; i++) {
                ids.add(i);
            }
            gpu = sc.parallelize(ids, tasks).map(i -> onTheGpu(i, block, holdMillis)).collect();
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        int equal = 0;
        for (int i = 0; i < tasks; i++) {
            equal += Arrays.equals(gpu.get(i), onTheCpu(i)) ? 1 : 0;
        }
        System.out.printf("pressure: %.1f s; %d failed tasks; %d work attempts for %d tasks (%d retried after out-of-memory);"
                + " admission: %d waits, %.1f s waited in all, at most %d holders%n", seconds, failed.get(), ATTEMPTS.get(), tasks,
                ATTEMPTS.get() - tasks, GpuAdmission.waits(), GpuAdmission.waitedNanos() / 1e9, GpuAdmission.maxHolders(0));
        // On the CPU stand-in driver kernels do not run: the answers are not compared there.
        boolean standIn = Cuda.isStandIn();
        System.out.printf("pressure: CPU answer == GPU answer: %s (%d of %d tasks)%n", standIn ? "not compared (stand-in driver)"
                : equal == tasks ? "yes" : "no", equal, tasks);
        boolean pass = failed.get() == 0 && gpu.size() == tasks && (standIn || equal == tasks);
        System.out.println("pressure: " + (pass ? "PASS" : "FAIL"));
        System.exit(pass ? 0 : 1);
    }

    /** Task {@code id}'s inputs: whole numbers, so that 2x + y is exact in float. */
    private static float[][] inputs(int id) {
        float[] x = new float[N];
        float[] y = new float[N];
        for (int j = 0; j < N; j++) {
            x[j] = (j + id) % 1000;
            y[j] = (j * 7 + id) % 1000;
        }
        return new float[][] {x, y};
    }

    static float[] onTheCpu(int id) {
        float[][] in = inputs(id);
        for (int j = 0; j < N; j++) {
            in[1][j] = 2f * in[0][j] + in[1][j];
        }
        return in[1];
    }

    private static float[] onTheGpu(int id, long blockBytes, long holdMillis) {
        Handle h = GpuTask.handle();
        float[][] in = inputs(id);
        return GpuRetry.run(h, () -> {
            ATTEMPTS.incrementAndGet();
            try (DeviceBuffer block = h.allocate(blockBytes); DeviceBuffer x = h.upload(in[0]); DeviceBuffer y = h.upload(in[1])) {
                h.memset(block, id & 0xFF);
                Blas.saxpy(h, N, 2f, x, 1, y, 1);
                float[] out = new float[N];
                y.download(out);
                sleep(holdMillis); // holds the block a while, so that the tasks admitted at once overlap
                return out;
            }
        });
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }
}
