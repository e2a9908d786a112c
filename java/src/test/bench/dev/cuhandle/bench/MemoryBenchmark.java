package dev.cuhandle.bench;

import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.DriverProbeTestApi;
import dev.cuhandle.Dim3;
import dev.cuhandle.Graph;
import dev.cuhandle.Handle;
import dev.cuhandle.Kernel;
import dev.cuhandle.Library;
import dev.cuhandle.NativeTestApi;
import dev.cuhandle.TestKernels;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The figures of rules L3, H9, M1 and C1 (stream-ordered memory, a stream per handle), as lines
 * {@code memory,<what>,<value>,<unit>} for tests/bench/report.py and the docs, set beside
 * tests/bench/alloc_churn.c's {@code ANCHOR} lines (the driver's own calls) from the same run:
 * <ul>
 *   <li>churn alone: 1 MiB {@code allocate} + {@code memset} + {@code close} per round, on one handle,
 *       in turns with alloc_churn.c's stream-ordered loop run in this process
 *       ({@link DriverProbeTestApi#churnInStreamOrder}), so that both see the same machine;
 *   <li>churn next to busy handles: the same while another thread's handle of the same context runs
 *       20 ms kernels back to back (median, p99, max, rounds above 1 ms, and how many of those
 *       overlapped a stop-the-world GC pause: {@link GcPauses});
 *   <li>16 threads churning, each with its own handle, random sizes 1 KiB-64 MiB: rounds/s against
 *       1 thread, and the device memory before, after the churn and after {@code trimMemory()};
 *   <li>no false sharing: 200 live handles, one running a 300 ms kernel: the slowest tiny launch +
 *       synchronize and the slowest close on the others;
 *   <li>capture next to frees: 1,000 captures of 100 launches while 4 threads allocate and free (some
 *       buffers leaked for the cleaner): how many succeed.
 * </ul>
 * Run with {@code .gpu-bundle/run-class dev.cuhandle.bench.MemoryBenchmark}; the argument
 * {@code churn} measures the two churns only (run-all runs them once more under ZGC, whose pauses
 * stay under a millisecond, to tell the collector's pauses from cuhandle's waits).
 */
public final class MemoryBenchmark {
    private static final int MIB = 1 << 20;
    /** ~1.98 GHz SM clock on the H200: cycles per millisecond. */
    private static final long CYCLES_PER_MS = 1_980_000L;
    /** The JVM's pauses from the start, to tell slow rounds the collector caused. */
    private static final GcPauses GC_PAUSES = GcPauses.record();

    private MemoryBenchmark() {}

    public static void main(String[] args) throws Exception {
        BenchSupport.requireGpu("MemoryBenchmark");
        try (Library kernels = TestKernels.load(); Handle keeper = Handle.create(0)) {
            Kernel spin = kernels.kernel("cuh_test_spin");
            Kernel empty = kernels.kernel("cuh_test_empty");
            System.out.println("# memory: " + keeper.memoryStats());
            List<String> collectors = new ArrayList<>();
            for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
                collectors.add(gc.getName());
            }
            System.out.println("# collectors: " + String.join(", ", collectors));
            churnAlone();
            churnNextToBusyHandle(spin);
            if (args.length > 0 && args[0].equals("churn")) {
                return;
            }
            threadsChurning(keeper);
            noFalseSharing(spin, empty);
            captureNextToFrees(empty);
        }
    }

    /** Rounds of one churn: their microseconds, sorted, and how many of those over 1 ms overlapped a GC pause. */
    private static final class Rounds {
        final double[] sorted;
        final int over1msInGcPause;

        Rounds(double[] sorted, int over1msInGcPause) {
            this.sorted = sorted;
            this.over1msInGcPause = over1msInGcPause;
        }

        double median() {
            return sorted[sorted.length / 2];
        }

        /** The rounds of several churns as one. */
        static Rounds of(List<Rounds> turns) {
            double[] all = turns.stream().flatMapToDouble(r -> Arrays.stream(r.sorted)).sorted().toArray();
            return new Rounds(all, turns.stream().mapToInt(r -> r.over1msInGcPause).reduce((a, b) -> a < 0 || b < 0 ? -1 : a + b).orElse(-1));
        }

        /**
         * Rounds timed in nanoseconds by the driver loop, which runs in native code that a GC pause
         * does not stop: no count of rounds in GC pauses (-1).
         */
        static Rounds ofNanos(long[] nanos) {
            return new Rounds(Arrays.stream(nanos).mapToDouble(n -> n / 1e3).sorted().toArray(), -1);
        }
    }

    /** Microseconds per 1 MiB allocate + memset + close round on {@code h} for {@code millis}. */
    /** 300 ms of churn that counts for nothing (its first round creates the pool: ~10 ms), with rounds over 1 ms said to be warm-up. */
    private static void warmUp(Handle h) throws InterruptedException {
        System.out.println("# warm-up (not counted) begins");
        churn(h, 300);
        System.out.println("# warm-up ends");
    }

    private static Rounds churn(Handle h, long millis) throws InterruptedException {
        double[] us = new double[400_000];
        List<double[]> slow = new ArrayList<>(); // {JVM uptime ms at the end, microseconds}
        int n = 0;
        long end = System.nanoTime() + millis * 1_000_000;
        while (System.nanoTime() < end && n < us.length) {
            long t0 = System.nanoTime();
            try (DeviceBuffer temp = h.allocate(MIB)) {
                h.memset(temp, 0);
            }
            us[n++] = (System.nanoTime() - t0) / 1e3;
            if (us[n - 1] > 1000) {
                slow.add(new double[] {GcPauses.uptimeMillis(), us[n - 1]});
            }
        }
        h.synchronize();
        Thread.sleep(100); // the collectors' notifications arrive after their pauses
        int inGc = 0;
        for (double[] round : slow) {
            boolean paused = GC_PAUSES.overlapsPause((long) round[0], round[1]);
            inGc += paused ? 1 : 0;
            // Uptime as -Xlog:gc's uptime decorator prints it.
            System.out.printf("# round over 1 ms: %.2f us, ended at JVM uptime %.3f s, %s%n", round[1], round[0] / 1e3,
                    paused ? "during a GC pause" : "outside GC pauses");
        }
        double[] rounds = Arrays.copyOf(us, n);
        Arrays.sort(rounds);
        return new Rounds(rounds, inGc);
    }

    private static void report(String what, Rounds rounds) {
        double[] sorted = rounds.sorted;
        int over1ms = 0;
        for (double v : sorted) {
            if (v > 1000) {
                over1ms++;
            }
        }
        System.out.printf("memory,%s_median,%.2f,us%n", what, sorted[sorted.length / 2]);
        System.out.printf("memory,%s_p99,%.2f,us%n", what, sorted[(int) (sorted.length * 0.99)]);
        System.out.printf("memory,%s_max,%.2f,us%n", what, sorted[sorted.length - 1]);
        System.out.printf("memory,%s_rounds,%d,rounds%n", what, sorted.length);
        System.out.printf("memory,%s_over_1ms,%d,rounds%n", what, over1ms);
        if (rounds.over1msInGcPause >= 0) {
            System.out.printf("memory,%s_over_1ms_in_gc_pause,%d,rounds%n", what, rounds.over1msInGcPause);
        }
    }

    /** Turns of each side in {@link #churnAlone()}, the order rotating. */
    private static final int TURNS = 10;
    /** Rounds of a driver-loop turn: about as long as a cuhandle turn (100 ms). */
    private static final int DRIVER_ROUNDS_PER_TURN = 20_000;
    /** The driver loop's ways ({@link DriverProbeTestApi#churnInStreamOrder}) and their names in the output. */
    private static final int[] WAYS = {DriverProbeTestApi.C_LOOP, DriverProbeTestApi.CUHANDLES_POOL, DriverProbeTestApi.CONTEXT_ID_PER_CALL,
        DriverProbeTestApi.CUHANDLES_POOL | DriverProbeTestApi.CONTEXT_ID_PER_CALL};
    private static final String[] WAY_NAMES = {"driver_loop", "driver_loop_cuhandles_pool", "driver_loop_context_id_per_call",
        "driver_loop_cuhandles_pool_and_context_id"};

    /**
     * The churn alone, in turns with the same loop made of the driver's calls alone (alloc_churn.c's
     * stream-ordered way, on a stream of the primary context made current here): the machine's speed
     * drifts between processes and minutes, so the gap is taken turn by turn in one process. The
     * driver loop also runs with cuhandle's kind of pool and with cuhandle's per-call context check,
     * each alone and both, to tell the driver's share of a gap from cuhandle's own code.
     */
    private static void churnAlone() throws InterruptedException {
        long primary = NativeTestApi.retainPrimary(0);
        long previous = NativeTestApi.currentContext();
        NativeTestApi.setCurrent(primary);
        long stream = NativeTestApi.streamCreate();
        try (Handle h = Handle.create(0)) {
            warmUp(h); // the JIT, the pool
            for (int way : WAYS) {
                DriverProbeTestApi.churnInStreamOrder(h, stream, MIB, DRIVER_ROUNDS_PER_TURN / 4, way);
            }
            List<Rounds> ours = new ArrayList<>();
            List<List<Rounds>> driver = new ArrayList<>();
            double[][] gaps = new double[WAYS.length][TURNS];
            for (int w = 0; w < WAYS.length; w++) {
                driver.add(new ArrayList<>());
            }
            for (int turn = 0; turn < TURNS; turn++) {
                // cuhandle's turn moves through the order of the four driver ways, so it does not
                // always follow the same one (the ways keep their order among themselves).
                int oursAt = turn % (WAYS.length + 1);
                Rounds o = null;
                Rounds[] d = new Rounds[WAYS.length];
                for (int slot = 0, w = 0; slot <= WAYS.length; slot++) {
                    if (slot == oursAt) {
                        o = churn(h, 100);
                    } else {
                        d[w] = Rounds.ofNanos(DriverProbeTestApi.churnInStreamOrder(h, stream, MIB, DRIVER_ROUNDS_PER_TURN, WAYS[w]));
                        w++;
                    }
                }
                ours.add(o);
                for (int w = 0; w < WAYS.length; w++) {
                    driver.get(w).add(d[w]);
                    gaps[w][turn] = o.median() - d[w].median();
                }
            }
            report("churn_alone", Rounds.of(ours));
            for (int w = 0; w < WAYS.length; w++) {
                report("churn_alone_" + WAY_NAMES[w], Rounds.of(driver.get(w)));
            }
            for (int w = 0; w < WAYS.length; w++) {
                double[] g = gaps[w];
                Arrays.sort(g);
                System.out.printf("memory,churn_alone_gap_to_%s_median_of_turns,%.2f,us%n", WAY_NAMES[w], (g[TURNS / 2 - 1] + g[TURNS / 2]) / 2);
                // The turn in which cuhandle was furthest behind (the largest signed gap).
                System.out.printf("memory,churn_alone_gap_to_%s_widest_turn,%.2f,us%n", WAY_NAMES[w], g[TURNS - 1]);
            }
        } finally {
            NativeTestApi.streamDestroy(stream);
            NativeTestApi.setCurrent(previous);
            NativeTestApi.releasePrimary(0);
        }
    }

    private static void churnNextToBusyHandle(Kernel spin) throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong kernels = new AtomicLong();
        Thread busy = new Thread(() -> {
            try (Handle b = Handle.create(0)) {
                while (!stop.get()) {
                    b.launch(spin, Dim3.of(1), Dim3.of(1), 0, 20 * CYCLES_PER_MS);
                    b.synchronize();
                    kernels.incrementAndGet();
                }
            }
        }, "busy-neighbour");
        busy.start();
        try (Handle h = Handle.create(0)) {
            Thread.sleep(50);
            warmUp(h);
            report("churn_next_to_busy", churn(h, 1500));
        } finally {
            stop.set(true);
            busy.join();
        }
        System.out.printf("memory,busy_neighbour_kernels,%d,kernels%n", kernels.get());
    }

    private static void threadsChurning(Handle keeper) throws Exception {
        keeper.trimMemory();
        long freeBefore = keeper.freeMemory();
        double one = roundsPerSecond(1, 2000);
        double sixteen = roundsPerSecond(16, 2000);
        long freeAfter = keeper.freeMemory();
        keeper.trimMemory();
        long freeTrimmed = keeper.freeMemory();
        System.out.printf("memory,churn_random_1_thread,%.0f,rounds/s%n", one);
        System.out.printf("memory,churn_random_16_threads,%.0f,rounds/s%n", sixteen);
        System.out.printf("memory,churn_random_16_over_1,%.2f,x%n", sixteen / one);
        System.out.printf("memory,device_free_before,%d,MiB%n", freeBefore >> 20);
        System.out.printf("memory,device_free_after_churn,%d,MiB%n", freeAfter >> 20);
        System.out.printf("memory,device_free_after_trim,%d,MiB%n", freeTrimmed >> 20);
        System.out.printf("memory,device_drift_after_trim,%d,MiB%n", (freeBefore - freeTrimmed) >> 20);
    }

    /** Rounds per second of {@code threads} threads, each with its own handle, allocating 1 KiB-64 MiB, memset, close. */
    private static double roundsPerSecond(int threads, long millis) throws Exception {
        AtomicLong rounds = new AtomicLong();
        List<Thread> all = new ArrayList<>();
        long end = System.nanoTime() + millis * 1_000_000;
        for (int t = 0; t < threads; t++) {
            int seed = t;
            Thread worker = new Thread(() -> {
                Random random = new Random(seed);
                try (Handle h = Handle.create(0)) {
                    while (System.nanoTime() < end) {
                        long bytes = 1024L << random.nextInt(17); // 1 KiB .. 64 MiB
                        try (DeviceBuffer temp = h.allocate(bytes)) {
                            h.memset(temp, seed);
                        }
                        rounds.incrementAndGet();
                    }
                    h.synchronize();
                }
            }, "churn-" + t);
            worker.start();
            all.add(worker);
        }
        for (Thread worker : all) {
            worker.join();
        }
        return rounds.get() * 1000.0 / millis;
    }

    private static void noFalseSharing(Kernel spin, Kernel empty) {
        List<Handle> handles = new ArrayList<>();
        try {
            for (int i = 0; i < 200; i++) {
                handles.add(Handle.create(0));
                handles.get(i).stream(); // its own stream, now
            }
            Handle busy = handles.get(0);
            // The empty kernel's first launch in the context loads it (lazy module loading), which may
            // wait for the whole context: load it before the long kernel runs.
            handles.get(1).launch(empty, Dim3.of(1), Dim3.of(1), 0);
            handles.get(1).synchronize();
            long start = System.nanoTime();
            // Nothing is queued after the long kernel: a dependent operation behind it (an event, a
            // host function) would hold up the hardware queue it shares with other streams.
            busy.launch(spin, Dim3.of(1), Dim3.of(1), 0, 300 * CYCLES_PER_MS);
            double slowestLaunch = 0;
            double slowestClose = 0;
            for (Handle h : handles.subList(1, handles.size())) {
                long t0 = System.nanoTime();
                h.launch(empty, Dim3.of(1), Dim3.of(1), 0);
                h.synchronize();
                slowestLaunch = Math.max(slowestLaunch, (System.nanoTime() - t0) / 1e3);
            }
            for (Handle h : handles.subList(1, handles.size())) {
                long t0 = System.nanoTime();
                h.close();
                slowestClose = Math.max(slowestClose, (System.nanoTime() - t0) / 1e3);
            }
            System.out.printf("memory,false_sharing_slowest_launch_sync,%.1f,us%n", slowestLaunch);
            System.out.printf("memory,false_sharing_slowest_close,%.1f,us%n", slowestClose);
            double othersMs = (System.nanoTime() - start) / 1e6;
            busy.synchronize();
            System.out.printf("memory,false_sharing_all_others_ms,%.1f,ms%n", othersMs);
            System.out.printf("memory,false_sharing_long_kernel_ms,%.1f,ms%n", (System.nanoTime() - start) / 1e6);
        } finally {
            handles.forEach(Handle::close);
        }
    }

    private static void captureNextToFrees(Kernel empty) throws Exception {
        // The leaked buffers' warnings (one per cleaned object, as rule H7 wants) would flood the output.
        java.util.logging.Logger jul = java.util.logging.Logger.getLogger("dev.cuhandle");
        java.util.logging.Level level = jul.getLevel();
        jul.setLevel(java.util.logging.Level.SEVERE);
        try {
            capturesWhileOthersFree(empty);
        } finally {
            jul.setLevel(level);
        }
    }

    private static void capturesWhileOthersFree(Kernel empty) throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        List<Thread> churners = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            int seed = t;
            Thread churner = new Thread(() -> {
                Random random = new Random(seed);
                try (Handle h = Handle.create(0)) {
                    while (!stop.get()) {
                        DeviceBuffer temp = h.allocate(1 + random.nextInt(MIB));
                        h.memset(temp, 1);
                        if (random.nextInt(16) != 0) {
                            temp.close(); // the others are leaked: the cleaner frees them
                        }
                        if (random.nextInt(256) == 0) {
                            System.gc();
                        }
                    }
                }
            }, "free-" + t);
            churner.start();
            churners.add(churner);
        }
        int ok = 0;
        String firstFailure = null;
        try (Handle capturing = Handle.create(0)) {
            for (int i = 0; i < 1000; i++) {
                try (Graph g = capturing.capture(() -> {
                    for (int k = 0; k < 100; k++) {
                        capturing.launch(empty, Dim3.of(1), Dim3.of(1), 0);
                    }
                })) {
                    if (g.nodeCount() == 100) {
                        ok++;
                    }
                } catch (RuntimeException e) {
                    if (firstFailure == null) {
                        firstFailure = e.toString();
                    }
                }
            }
        } finally {
            stop.set(true);
            for (Thread churner : churners) {
                churner.join();
            }
        }
        System.out.printf("memory,captures_next_to_frees_ok,%d,of 1000%n", ok);
        if (firstFailure != null) {
            System.out.println("# first capture failure: " + firstFailure);
        }
    }
}
