package dev.cuhandle.spark.example;

import dev.cuhandle.Cuda;
import dev.cuhandle.Handle;
import dev.cuhandle.spark.CuhandleSparkPlugin;
import dev.cuhandle.spark.GpuAdmission;
import dev.cuhandle.spark.GpuTask;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.SparkConf;
import org.apache.spark.Success$;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.resource.ResourceInformation;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;

/**
 * Runs the example job and reports: the GPU's answer against the CPU's, throughput, and GPU
 * sharing. Every line starts with {@code spark-example:}; the last says {@code RESULT PASS} or
 * {@code RESULT FAIL} (exit code 0 or 1).
 *
 * <pre>
 * local  [--master local[16]] [--rows 10000000] [--dim 64] [--partitions 64] [--k 10] [--runs 3] [--seed 1]
 *     Spark local mode (every task on spark.cuhandle.device, default 0): the data is generated and
 *     cached, then the CPU and the GPU job take turns (one warm-up each, then --runs each); rows/s
 *     are the rows scored divided by the median job time.
 * shared --discovery SCRIPT [--rows 4000000] [--dim 64] [--k 10] [--seed 1] [--executor-memory 8g]
 *     local-cluster[1,4,..]: one executor with one GPU (found by the discovery script) and
 *     spark.task.resource.gpu.amount=0.25, so that 4 tasks share GPU 0; a barrier stage makes the 4
 *     hold their handles and score at the same time. Needs SPARK_HOME (a folder with a jars/
 *     folder, may be empty) and SPARK_SCALA_VERSION=2.13 in the environment; the executor gets
 *     this JVM's class path.
 * knn    [--master local[16]] [--rows 32000000] ... (the nearest-neighbour job: see NearestNeighboursMain)
 * </pre>
 *
 * <p>On the CPU stand-in driver kernels do not run, so the GPU's answer is not compared there;
 * everything else runs the same.
 */
public final class VectorScoringMain {
    static final String PREFIX = "spark-example: ";

    private VectorScoringMain() {}

    /**
     * Runs a mode and exits with 0 (pass) or 1 (fail).
     *
     * @param args the mode and its options (see the class comment)
     */
    public static void main(String[] args) {
        System.exit(run(args, System.out));
    }

    static int run(String[] args, PrintStream out) {
        String mode = args.length == 0 ? "" : args[0];
        if (!(mode.equals("local") || mode.equals("shared") || mode.equals("knn"))) {
            out.println(PREFIX + "usage: local|shared|knn [--option value]... (see VectorScoringMain's and NearestNeighboursMain's comments)");
            return 1;
        }
        Map<String, String> options = options(Arrays.copyOfRange(args, 1, args.length));
        boolean pass = mode.equals("local") ? local(options, out) : mode.equals("shared") ? shared(options, out) : NearestNeighboursMain.knn(options, out);
        out.println(PREFIX + "RESULT " + (pass ? "PASS" : "FAIL"));
        return pass ? 0 : 1;
    }

    /** "--name value" pairs as a map from name to value; the examples' mains share it. */
    static Map<String, String> options(String[] args) {
        Map<String, String> options = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i += 2) {
            if (!args[i].startsWith("--") || i + 1 == args.length) {
                throw new IllegalArgumentException("expected --name value pairs, got '" + args[i] + "'");
            }
            options.put(args[i].substring(2), args[i + 1]);
        }
        return options;
    }

    static SparkConf conf(String master) {
        SparkConf conf = new SparkConf()
                .setMaster(master)
                .setAppName("cuhandle vector scoring")
                .set("spark.ui.enabled", "false")
                .set("spark.driver.host", "127.0.0.1")
                .set("spark.driver.bindAddress", "127.0.0.1")
                .set("spark.plugins", CuhandleSparkPlugin.class.getName());
        // These jobs' tasks spend most of their time on the host (generating and packing rows) and hold little
        // GPU memory (0.5 GiB each): admission's default of 2 tasks per GPU at once left 14 of 16 cores idle
        // (the knn job on the H200: 5.8 s with 2, 1.8 s with 16). A job whose tasks need much GPU memory keeps
        // the limit low instead (MemoryPressureMain).
        int cores = localCores(master);
        if (cores > 0 && !conf.contains(GpuAdmission.CONCURRENT_TASKS_KEY)) {
            conf.set(GpuAdmission.CONCURRENT_TASKS_KEY, String.valueOf(cores));
        }
        return conf;
    }

    /** N for {@code local[N]}, the processors for {@code local[*]}, else 0 (a cluster: the default applies). */
    static int localCores(String master) {
        if (!master.startsWith("local[") || !master.endsWith("]")) {
            return 0;
        }
        String n = master.substring("local[".length(), master.length() - 1);
        return n.equals("*") ? Runtime.getRuntime().availableProcessors() : Integer.parseInt(n.split(",")[0].trim());
    }

    private static boolean local(Map<String, String> o, PrintStream out) {
        String master = o.getOrDefault("master", "local[16]");
        long rows = Long.parseLong(o.getOrDefault("rows", "10000000"));
        int dim = Integer.parseInt(o.getOrDefault("dim", "64"));
        int partitions = Integer.parseInt(o.getOrDefault("partitions", "64"));
        int k = Integer.parseInt(o.getOrDefault("k", "10"));
        int runs = Integer.parseInt(o.getOrDefault("runs", "3"));
        long seed = Long.parseLong(o.getOrDefault("seed", "1"));
        out.println(PREFIX + "mode local, master " + master + ", " + rows + " rows x " + dim + " floats in " + partitions + " partitions, k "
                + k + ", driver " + Cuda.driverPath() + ", " + Cuda.device(0));
        try (JavaSparkContext sc = new JavaSparkContext(conf(master))) {
            long t0 = System.nanoTime();
            JavaRDD<float[]> data = VectorScoring.vectors(sc, rows, dim, partitions, seed).cache();
            long counted = data.count();
            out.printf("%sdata generated and cached: %d rows in %.1f s%n", PREFIX, counted, (System.nanoTime() - t0) / 1e9);
            float[] query = VectorScoring.query(dim, seed);

            ScoreAnswer cpu = VectorScoring.onCpu(data, query, k); // warm-up: JIT, and the GPU's context and library
            ScoreAnswer gpu = VectorScoring.onGpu(data, query, k);
            List<Long> cpuTimes = new ArrayList<>();
            List<Long> gpuTimes = new ArrayList<>();
            for (int r = 0; r < runs; r++) {
                long c0 = System.nanoTime();
                ScoreAnswer c = VectorScoring.onCpu(data, query, k);
                long c1 = System.nanoTime();
                ScoreAnswer g = VectorScoring.onGpu(data, query, k);
                long g1 = System.nanoTime();
                cpuTimes.add(c1 - c0);
                gpuTimes.add(g1 - c1);
                if (c.disagreement(cpu) != null || g.disagreement(gpu) != null) {
                    out.println(PREFIX + "runs differ from the warm-up: CPU " + c.disagreement(cpu) + "; GPU " + g.disagreement(gpu));
                    return false;
                }
            }
            out.println(PREFIX + "CPU answer: " + cpu);
            out.println(PREFIX + "GPU answer: " + gpu);
            boolean agree = report(cpu, gpu, counted, out);
            double cpuSeconds = median(cpuTimes) / 1e9;
            double gpuSeconds = median(gpuTimes) / 1e9;
            out.printf("%sthroughput: CPU %.3g rows/s, GPU %.3g rows/s (GPU/CPU %.2fx); medians of %d jobs each: CPU %.3f s, GPU %.3f s%n",
                    PREFIX, counted / cpuSeconds, counted / gpuSeconds, cpuSeconds / gpuSeconds, runs, cpuSeconds, gpuSeconds);
            int open = GpuTask.openHandles();
            out.println(PREFIX + "task handles open after the jobs: " + open);
            return agree && open == 0;
        }
    }

    /** Prints and returns whether the answers agree; on the stand-in only the row counts can. */
    private static boolean report(ScoreAnswer cpu, ScoreAnswer gpu, long rows, PrintStream out) {
        if (cpu.rows != rows || gpu.rows != rows) {
            out.println(PREFIX + "rows scored: CPU " + cpu.rows + ", GPU " + gpu.rows + ", expected " + rows);
            return false;
        }
        if (Cuda.isStandIn()) {
            out.println(PREFIX + "CPU answer == GPU answer: not compared (the CPU stand-in driver runs no kernels)");
            return true;
        }
        String why = gpu.disagreement(cpu);
        out.println(PREFIX + "CPU answer == GPU answer: " + (why == null ? "yes" : "NO: " + why));
        return why == null;
    }

    static double median(List<Long> nanos) {
        List<Long> sorted = new ArrayList<>(nanos);
        Collections.sort(sorted);
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2.0;
    }

    private static boolean shared(Map<String, String> o, PrintStream out) {
        String discovery = o.get("discovery");
        if (discovery == null) {
            throw new IllegalArgumentException("shared needs --discovery <the GPU discovery script>");
        }
        int tasks = 4;
        long rows = Long.parseLong(o.getOrDefault("rows", "4000000"));
        int dim = Integer.parseInt(o.getOrDefault("dim", "64"));
        int k = Integer.parseInt(o.getOrDefault("k", "10"));
        long seed = Long.parseLong(o.getOrDefault("seed", "1"));
        String memory = o.getOrDefault("executor-memory", "8g");
        long memoryMiB = Long.parseLong(memory.replaceAll("[gG]$", "")) * (memory.matches(".*[gG]$") ? 1024 : 1);
        String master = "local-cluster[1," + tasks + "," + (memoryMiB + 512) + "]";
        out.println(PREFIX + "mode shared, master " + master + ", 1 GPU per executor, spark.task.resource.gpu.amount=0.25, " + rows + " rows x "
                + dim + " floats in " + tasks + " partitions");
        SparkConf conf = conf(master)
                .set("spark.worker.resource.gpu.amount", "1")
                .set("spark.worker.resource.gpu.discoveryScript", discovery)
                .set("spark.executor.resource.gpu.amount", "1")
                .set("spark.task.resource.gpu.amount", "0.25")
                .set("spark.executor.cores", String.valueOf(tasks))
                .set("spark.executor.memory", memory)
                .set("spark.executor.extraClassPath", System.getProperty("java.class.path"));
        try (JavaSparkContext sc = new JavaSparkContext(conf)) {
            AtomicInteger failed = new AtomicInteger();
            sc.sc().addSparkListener(new SparkListener() {
                @Override
                public void onTaskEnd(SparkListenerTaskEnd end) {
                    if (end.reason() != Success$.MODULE$) {
                        failed.incrementAndGet();
                    }
                }
            });
            BarrierStage.awaitExecutors(sc, 1, 120_000);
            float[] query = VectorScoring.query(dim, seed);
            JavaRDD<float[]> data = VectorScoring.vectors(sc, rows, dim, tasks, seed);
            List<SharedTask> reports = BarrierStage.mapPartitions(data, it -> sharedTask(it, query, k), SharedTask.class).collect();
            ScoreAnswer gpu = reports.get(0).answer;
            for (int i = 1; i < reports.size(); i++) {
                gpu = gpu.merge(reports.get(i).answer, k);
            }
            ScoreAnswer cpu = VectorScoring.onCpu(data, query, k);
            TreeSet<String> addresses = new TreeSet<>();
            TreeSet<Integer> devices = new TreeSet<>();
            int handlesAtOnce = 0;
            for (SharedTask r : reports) {
                addresses.add(r.addresses);
                devices.add(r.device);
                handlesAtOnce = Math.max(handlesAtOnce, r.peersHoldingHandles);
            }
            out.println(PREFIX + reports.size() + " tasks in one barrier stage: GPU addresses " + addresses + ", devices " + devices
                    + ", handles open on the executor while they scored " + handlesAtOnce + ", most tasks scoring at once "
                    + mostAtOnce(reports) + ", failed or killed tasks " + failed.get());
            out.println(PREFIX + "CPU answer: " + cpu);
            out.println(PREFIX + "GPU answer: " + gpu);
            boolean agree = report(cpu, gpu, rows, out);
            boolean shared = reports.size() == tasks && addresses.equals(new TreeSet<>(List.of("0"))) && devices.equals(new TreeSet<>(List.of(0)))
                    && handlesAtOnce == tasks && failed.get() == 0;
            out.println(PREFIX + tasks + " tasks sharing GPU 0 ran concurrently without errors: " + (shared ? "yes" : "NO"));
            return agree && shared;
        }
    }

    /** What a task of the shared stage reports. */
    static final class SharedTask implements java.io.Serializable {
        private static final long serialVersionUID = 1L;
        String addresses;
        int device;
        int peersHoldingHandles;
        long start;
        long end;
        ScoreAnswer answer;
    }

    /**
     * Takes the handle, waits until every task of the stage has its own, scores, and waits again until
     * all have scored: in between, all 4 hold a handle on GPU 0 at once.
     */
    private static Iterator<SharedTask> sharedTask(Iterator<float[]> rows, float[] query, int k) {
        BarrierTaskContext context = BarrierTaskContext.get();
        SharedTask r = new SharedTask();
        ResourceInformation gpu = context.resourcesJMap().get("gpu");
        r.addresses = gpu == null ? "none" : String.join(",", gpu.addresses());
        Handle h = GpuTask.handle();
        r.device = h.device().ordinal();
        context.barrier();
        r.peersHoldingHandles = GpuTask.openHandles(); // the executor's JVM: all tasks of the stage have theirs now
        r.start = System.nanoTime();
        r.answer = VectorScoring.scoreOnGpu(context.partitionId(), rows, query, k);
        r.end = System.nanoTime();
        context.barrier();
        return Collections.singletonList(r).iterator();
    }

    /** The most scoring intervals that overlap at one moment (the tasks ran in one executor JVM: one clock). */
    private static int mostAtOnce(List<SharedTask> reports) {
        int most = 0;
        for (SharedTask a : reports) {
            int at = 0;
            for (SharedTask b : reports) {
                if (b.start <= a.start && a.start < b.end) {
                    at++;
                }
            }
            most = Math.max(most, at);
        }
        return most;
    }
}
