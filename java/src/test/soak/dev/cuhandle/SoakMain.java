package dev.cuhandle;

import java.io.IOException;
import java.lang.ref.WeakReference;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;

/**
 * The soak: N threads for M minutes of random valid and invalid calls across the public API,
 * every result checked against the CPU, then device memory, the primary context's state and the
 * JVM's RSS compared with a baseline.
 *
 * <p>Usage: {@code SoakMain [--threads N] [--minutes M | --seconds S] [--seed X] [--csv file]}
 * (defaults: 8 threads, 1 minute, a random seed that is printed). The GPU bundle runs it as
 * {@code run-soak}. Exit code 0 only if there was no mismatch, no unexpected exception, every
 * invalid call was refused with its documented exception type, every buffer leaked on purpose was
 * released by the cleaner, and after everything was closed the device's free memory is within
 * {@value #DEVICE_TOLERANCE_MIB} MiB of the baseline, the primary context's state equals the
 * baseline and RSS grew by at most {@value #RSS_TOLERANCE_MIB} MiB. Run it with a small minimum
 * heap ({@code -Xms64m}, as {@code run-soak} does) so that the heap shrinks back after the final
 * GCs and RSS compares the native side; progress (ops, RSS, heap) is printed every 30 s
 * ({@code -Dcuhandle.soakProgressSeconds=N}). RSS settles above the baseline (malloc arenas, the JIT,
 * the driver) within the first minute and stays there (docs/measurements.md).
 *
 * <p>Every worker thread works on one handle shared by all threads and on a private handle of its
 * own (all on device 0's primary context, so buffers may cross handles). Stream-ordering rules the
 * soak keeps, because handle streams are independent non-blocking streams: a buffer made by one
 * handle and used by another is waited for on the owner first ({@link Handle#synchronize()}), and
 * the using handle is synchronised before the buffer is closed (its free is ordered on the owner's
 * stream). A buffer handed to another thread is closed only after that thread reported that it is
 * done with it. Nothing here has an undefined outcome.
 *
 * <p>Tolerances are those of the BLAS GPU tests ({@link BlasReference}, {@link BlasGpuTest}):
 * scal, copy, swap bit-exact; axpy {@link BlasReference#axpyAccepts}; dot and asum
 * {@link BlasReference#sumTolerance}; nrm2 {@link BlasReference#nrm2Tolerance}; iamax exact; the
 * device-result variant bit-identical to the host-result variant; untouched elements bit-exact.
 */
public final class SoakMain {
    static final long MIB = 1L << 20;
    static final long DEVICE_TOLERANCE_MIB = 64;
    static final long RSS_TOLERANCE_MIB = 512;
    /** How long the end waits for the cleaner and the device memory to come back. */
    static final long SETTLE_MILLIS = 30_000;
    /** How long after the deadline a worker may take to finish before it counts as hung. */
    static final long HANG_MILLIS = 120_000;
    static final String ADD_ONE = "cuh_test_add_one";

    private SoakMain() {}

    // ====================================================================== options and result

    /**
     * What to run: {@code maxLog2} bounds vector and buffer sizes at {@code 1 << maxLog2}
     * elements (20 from the command line).
     */
    public record Options(int threads, long millis, long seed, Path csv, int maxLog2) {
        public Options {
            if (threads < 1) {
                throw new IllegalArgumentException("--threads must be >= 1, got " + threads);
            }
            if (millis < 1) {
                throw new IllegalArgumentException("the duration must be positive, got " + millis + " ms");
            }
            if (maxLog2 < 4 || maxLog2 > 24) {
                throw new IllegalArgumentException("maxLog2 must be in [4, 24], got " + maxLog2);
            }
        }

        static Options parse(String[] args) {
            int threads = 8;
            long millis = 60_000;
            long seed = new Random().nextLong() ^ System.nanoTime();
            Path csv = null;
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                if (a.equals("--help") || a.equals("-h")) {
                    throw new IllegalArgumentException("usage");
                }
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException(a + " needs a value");
                }
                String v = args[++i];
                switch (a) {
                    case "--threads":
                        threads = Integer.parseInt(v);
                        break;
                    case "--minutes":
                        millis = Math.round(Double.parseDouble(v) * 60_000);
                        break;
                    case "--seconds":
                        millis = Math.round(Double.parseDouble(v) * 1000);
                        break;
                    case "--seed":
                        seed = Long.decode(v);
                        break;
                    case "--csv":
                        csv = Paths.get(v);
                        break;
                    default:
                        throw new IllegalArgumentException("unknown option " + a);
                }
            }
            return new Options(threads, millis, seed, csv, 20);
        }
    }

    /** Device memory, RSS, heap and primary-context state at one moment. */
    public record Snapshot(long deviceFree, long rss, long heapCommitted, long nonHeapCommitted, long[] primary) {
        static Snapshot take(Handle anchor) {
            return new Snapshot(anchor.freeMemory(), readRss(), Runtime.getRuntime().totalMemory(), readNonHeap(),
                    NativeTestApi.primaryState(anchor.device().ordinal()));
        }

        String primaryText() {
            return primary == null ? "?" : "[flags=" + primary[0] + ", active=" + primary[1] + "]";
        }
    }

    /** Everything the soak measured; {@link #pass()} is the verdict. */
    public record Result(Options options, double seconds, long validOps, long invalidTried, long expectedExceptions,
            long unexpectedExceptions, long notRefused, long mismatches, long leaked, long leakReleased, long otherWarnings,
            Snapshot before, Snapshot after, Map<String, Long> opCounts, List<String> problems, List<String> failures,
            long failureCount, boolean pass) {

        /** The summary table, the per-operation counts and the first failures. */
        public String report() {
            StringBuilder s = new StringBuilder();
            s.append("cuhandle soak: ").append(pass ? "PASS" : "FAIL").append(" (seed ").append(options.seed()).append(")\n");
            for (String[] row : summaryRows()) {
                s.append(String.format(Locale.ROOT, "  %-36s %s%n", row[0], row[1]));
            }
            s.append("operations (valid calls; 'invalid:' = calls that must be refused):\n");
            for (Map.Entry<String, Long> e : opCounts.entrySet()) {
                s.append(String.format(Locale.ROOT, "  %-36s %d%n", e.getKey(), e.getValue()));
            }
            if (!problems.isEmpty()) {
                s.append("problems:\n");
                for (String p : problems) {
                    s.append("  ").append(p).append('\n');
                }
            }
            if (failureCount > 0) {
                s.append("first ").append(failures.size()).append(" of ").append(failureCount).append(" failures:\n");
                for (String f : failures) {
                    s.append(f).append('\n');
                }
            }
            return s.toString();
        }

        List<String[]> summaryRows() {
            List<String[]> rows = new ArrayList<>();
            rows.add(row("result", pass ? "PASS" : "FAIL"));
            rows.add(row("seed", Long.toString(options.seed())));
            rows.add(row("threads", Integer.toString(options.threads())));
            rows.add(row("seconds", String.format(Locale.ROOT, "%.1f", seconds)));
            rows.add(row("valid ops", Long.toString(validOps)));
            rows.add(row("invalid calls tried", Long.toString(invalidTried)));
            rows.add(row("expected exceptions", Long.toString(expectedExceptions)));
            rows.add(row("unexpected exceptions", Long.toString(unexpectedExceptions)));
            rows.add(row("invalid calls not refused", Long.toString(notRefused)));
            rows.add(row("mismatches", Long.toString(mismatches)));
            rows.add(row("leaked-on-purpose buffers", Long.toString(leaked)));
            rows.add(row("leak warnings (cleaner released)", Long.toString(leakReleased)));
            rows.add(row("other cuhandle warnings", Long.toString(otherWarnings)));
            rows.add(row("device free before MiB", mib(before == null ? -1 : before.deviceFree())));
            rows.add(row("device free after MiB", mib(after == null ? -1 : after.deviceFree())));
            rows.add(row("RSS before MiB", mib(before == null ? -1 : before.rss())));
            rows.add(row("RSS after MiB", mib(after == null ? -1 : after.rss())));
            rows.add(row("heap committed before MiB", mib(before == null ? -1 : before.heapCommitted())));
            rows.add(row("heap committed after MiB", mib(after == null ? -1 : after.heapCommitted())));
            rows.add(row("non-heap committed before MiB", mib(before == null ? -1 : before.nonHeapCommitted())));
            rows.add(row("non-heap committed after MiB", mib(after == null ? -1 : after.nonHeapCommitted())));
            rows.add(row("primary state before", before == null ? "?" : before.primaryText()));
            rows.add(row("primary state after", after == null ? "?" : after.primaryText()));
            return rows;
        }

        /** kind,name,value rows: the summary, then one row per operation. */
        public String csv() {
            StringBuilder s = new StringBuilder("kind,name,value\n");
            for (String[] row : summaryRows()) {
                s.append("summary,").append(row[0]).append(',').append(row[1].replace(",", ";")).append('\n');
            }
            for (Map.Entry<String, Long> e : opCounts.entrySet()) {
                s.append("op,").append(e.getKey().replace(",", ";")).append(',').append(e.getValue()).append('\n');
            }
            return s.toString();
        }

        private static String[] row(String name, String value) {
            return new String[] {name, value};
        }

        private static String mib(long bytes) {
            return bytes < 0 ? "?" : String.format(Locale.ROOT, "%.1f", bytes / (double) MIB);
        }
    }

    // ====================================================================== entry points

    public static void main(String[] args) {
        Options options;
        try {
            options = Options.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println((e.getMessage().equals("usage") ? "" : e.getMessage() + "\n")
                    + "usage: SoakMain [--threads N] [--minutes M | --seconds S] [--seed X] [--csv file]");
            System.exit(2);
            return;
        }
        Result r;
        try {
            r = run(options);
        } catch (Throwable t) {
            System.out.println("cuhandle soak: FAIL: the soak itself failed before it could report");
            t.printStackTrace(System.out);
            System.out.flush();
            System.exit(1);
            return;
        }
        System.out.print(r.report());
        if (options.csv() != null) {
            try {
                Files.write(options.csv(), r.csv().getBytes(StandardCharsets.UTF_8));
                System.out.println("CSV written to " + options.csv());
            } catch (IOException e) {
                System.out.println("writing the CSV failed: " + e);
            }
        }
        System.out.flush();
        System.exit(r.pass() ? 0 : 1);
    }

    /** Runs the soak and returns its result (never calls System.exit). */
    public static Result run(Options o) throws InterruptedException {
        if (!Cuda.isAvailable()) {
            throw new IllegalStateException("no usable CUDA GPU: " + Cuda.unavailableReason());
        }
        System.out.println("[soak] " + o.threads() + " threads for " + o.millis() / 1000.0 + " s, seed " + o.seed()
                + ", sizes up to 2^" + o.maxLog2() + " elements, device 0: " + Cuda.device(0).name());
        SoakLeakLog leakLog = SoakLeakLog.install();
        Handle anchor = null;
        try {
            // The anchor keeps the primary context retained for the whole run, so the baseline and
            // the final measurement see the same context, and is the handle that measures.
            anchor = Handle.create(0);
            try (Handle first = Handle.create(0)) {
                warmUp(first); // loads the BLAS kernels, creates a stream and a workspace, closes them again
            }
            warmUp(anchor);
            settle(anchor);
            Snapshot before = Snapshot.take(anchor);
            System.out.println("[soak] baseline: device free " + before.deviceFree() / MIB + " MiB, RSS " + before.rss() / MIB
                    + " MiB, primary " + before.primaryText());
            return soak(o, anchor, before, leakLog);
        } finally {
            leakLog.uninstall();
            if (anchor != null) {
                anchor.close();
            }
        }
    }

    private static Result soak(Options o, Handle anchor, Snapshot before, SoakLeakLog leakLog) throws InterruptedException {
        SoakStats stats = new SoakStats();
        List<String> problems = new ArrayList<>();
        long start = System.nanoTime();
        long deadline = start + TimeUnit.MILLISECONDS.toNanos(o.millis());
        Library library = TestKernels.load();
        Handle shared = Handle.create();
        SoakShared common = new SoakShared(o, stats, shared, library, library.kernel(ADD_ONE), anchor, deadline);
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < o.threads(); i++) {
            SoakWorker w = new SoakWorker(common, i);
            Thread t = new Thread(w, "soak-" + i);
            t.setDaemon(true);
            threads.add(t);
        }
        for (Thread t : threads) {
            t.start();
        }
        long progressNanos = TimeUnit.SECONDS.toNanos(Long.getLong("cuhandle.soakProgressSeconds", 30));
        long nextProgress = start + progressNanos;
        long hangAt = deadline + TimeUnit.MILLISECONDS.toNanos(HANG_MILLIS);
        boolean hung = false;
        for (Thread t : threads) {
            while (t.isAlive()) {
                t.join(1000);
                long now = System.nanoTime();
                if (now >= nextProgress) {
                    System.out.println("[soak] " + (now - start) / 1_000_000_000L + " s: " + stats.valid.sum() + " valid ops, "
                            + stats.invalid.sum() + " invalid calls, " + stats.failures.get() + " failures; RSS " + readRss() / MIB
                            + " MiB (heap committed " + Runtime.getRuntime().totalMemory() / MIB + " MiB, non-heap " + readNonHeap() / MIB + " MiB)");
                    nextProgress += progressNanos;
                }
                if (now > hangAt) {
                    hung = true;
                    break;
                }
            }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        for (Thread t : threads) {
            if (t.isAlive()) {
                hung = true;
                Throwable where = new Throwable("stack of " + t.getName());
                where.setStackTrace(t.getStackTrace());
                stats.failure("hang", t.getName(), "worker", "did not finish within " + HANG_MILLIS / 1000 + " s after the deadline", where);
            }
        }
        if (hung) {
            // A worker may be inside a call on the shared handle: closing it would wait for that call.
            problems.add("a worker thread hung; the shared handle and library were left open and the memory checks are void");
            Snapshot after = Snapshot.take(anchor);
            return result(o, seconds, stats, leakLog, before, after, problems);
        }
        common.mailbox.clear(); // only stale entries: every producer resolved its own handoffs
        library.close();
        shared.close();

        // The cleaner releases what was leaked on purpose; then the device memory comes back.
        long settleEnd = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(SETTLE_MILLIS);
        while (System.nanoTime() < settleEnd) {
            System.gc();
            Thread.sleep(100);
            if (leakLog.leakWarnings.get() >= stats.leaked.sum() && allCleared(common.leaks)) {
                break;
            }
        }
        Thread.sleep(200); // the warning is logged just before the cleaner frees
        long tolerance = DEVICE_TOLERANCE_MIB * MIB;
        while (true) {
            touch(anchor); // a synchronisation, then trimMemory: the pool gives its cached memory back
            if (before.deviceFree() - anchor.freeMemory() <= tolerance || System.nanoTime() >= settleEnd) {
                break;
            }
            System.gc();
            Thread.sleep(200);
        }
        settle(anchor);
        Snapshot after = Snapshot.take(anchor);
        if (leakLog.leakWarnings.get() < stats.leaked.sum() || !allCleared(common.leaks)) {
            problems.add("the cleaner released " + leakLog.leakWarnings.get() + " of " + stats.leaked.sum()
                    + " buffers leaked on purpose within " + SETTLE_MILLIS / 1000 + " s");
        }
        long lost = before.deviceFree() - after.deviceFree();
        if (lost > tolerance) {
            problems.add("device free memory is " + lost / MIB + " MiB below the baseline (tolerance " + DEVICE_TOLERANCE_MIB + " MiB)");
        }
        if (!Arrays.equals(before.primary(), after.primary())) {
            problems.add("the primary context's state changed from " + before.primaryText() + " to " + after.primaryText());
        }
        long grown = after.rss() - before.rss();
        if (grown > RSS_TOLERANCE_MIB * MIB) {
            problems.add("RSS grew by " + grown / MIB + " MiB (tolerance " + RSS_TOLERANCE_MIB + " MiB; heap committed "
                    + before.heapCommitted() / MIB + " -> " + after.heapCommitted() / MIB + " MiB, non-heap "
                    + before.nonHeapCommitted() / MIB + " -> " + after.nonHeapCommitted() / MIB + " MiB)");
        }
        return result(o, seconds, stats, leakLog, before, after, problems);
    }

    private static Result result(Options o, double seconds, SoakStats stats, SoakLeakLog leakLog, Snapshot before, Snapshot after, List<String> problems) {
        Map<String, Long> ops = new TreeMap<>();
        stats.ops.forEach((k, v) -> ops.put(k, v.sum()));
        boolean pass = stats.mismatches.sum() == 0 && stats.unexpected.sum() == 0 && stats.notRefused.sum() == 0 && problems.isEmpty()
                && stats.failures.get() == 0;
        return new Result(o, seconds, stats.valid.sum(), stats.invalid.sum(), stats.expected.sum(), stats.unexpected.sum(),
                stats.notRefused.sum(), stats.mismatches.sum(), stats.leaked.sum(), leakLog.leakWarnings.get(), leakLog.otherWarnings.get(),
                before, after, ops, List.copyOf(problems), List.copyOf(stats.failureTexts), stats.failures.get(), pass);
    }

    /** Some work on {@code h}: a stream, a buffer, every reduction (loads the kernels lazily), a kernel-free sync. */
    private static void warmUp(Handle h) {
        float[] data = new float[4096];
        Arrays.fill(data, 1f);
        try (DeviceBuffer b = h.upload(data); DeviceBuffer r = h.allocate(8)) {
            Blas.sasum(h, data.length, b, 1);
            Blas.sdot(h, data.length, b, 1, b, 1);
            Blas.snrm2(h, data.length, b, 1);
            Blas.isamax(h, data.length, b, 1);
            Blas.sasum(h, data.length, b, 1, r);
            h.synchronize();
        }
        h.synchronize();
    }

    /** A tiny allocation, free and synchronisation on {@code h} (the pool trims at synchronisations). */
    /** A synchronisation, and the context's cached pool and pinned memory given back (rule M1). */
    private static void touch(Handle h) {
        try (DeviceBuffer b = h.upload(new byte[16])) {
            h.memset(b, 0);
        }
        h.synchronize();
        h.trimMemory();
    }

    private static void settle(Handle anchor) throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(100);
        }
        touch(anchor);
    }

    private static boolean allCleared(ConcurrentLinkedQueue<WeakReference<DeviceBuffer>> refs) {
        for (WeakReference<DeviceBuffer> r : refs) {
            if (r.get() != null) {
                return false;
            }
        }
        return true;
    }

    /** Committed non-heap memory the JVM accounts for (code cache, metaspace). */
    static long readNonHeap() {
        return java.lang.management.ManagementFactory.getMemoryMXBean().getNonHeapMemoryUsage().getCommitted();
    }

    /** VmRSS of this process in bytes (-1 where /proc is missing). */
    static long readRss() {
        try {
            for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    String[] parts = line.trim().split("\\s+");
                    return Long.parseLong(parts[1]) * 1024;
                }
            }
        } catch (IOException | RuntimeException e) {
            // fall through
        }
        return -1;
    }
}
