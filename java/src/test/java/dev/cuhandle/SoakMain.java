package dev.cuhandle;

import dev.cuhandle.BlasTestSupport.Prec;
import dev.cuhandle.BlasTestSupport.Reduction;
import dev.cuhandle.BlasTestSupport.Vec;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.logging.Filter;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

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
 * ({@code -Dcuhandle.soakProgressSeconds=N}). On an H200, 16 threads, RSS settled about 190 MiB
 * above the baseline (malloc arenas, JIT, driver) after 60 s and stayed there at 200 s.
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
    static final int FAILURES_SHOWN = 20;
    /** How long the end waits for the cleaner and the device memory to come back. */
    static final long SETTLE_MILLIS = 30_000;
    /** How long after the deadline a worker may take to finish before it counts as hung. */
    static final long HANG_MILLIS = 120_000;
    static final String LEAK_WARNING = "DeviceBuffer was not closed";
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
        LeakLog leakLog = LeakLog.install();
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

    private static Result soak(Options o, Handle anchor, Snapshot before, LeakLog leakLog) throws InterruptedException {
        Stats stats = new Stats();
        List<String> problems = new ArrayList<>();
        long start = System.nanoTime();
        long deadline = start + TimeUnit.MILLISECONDS.toNanos(o.millis());
        Library library = TestKernels.load();
        Handle shared = Handle.create();
        Shared common = new Shared(o, stats, shared, library, library.kernel(ADD_ONE), anchor, deadline);
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < o.threads(); i++) {
            Worker w = new Worker(common, i);
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

    private static Result result(Options o, double seconds, Stats stats, LeakLog leakLog, Snapshot before, Snapshot after, List<String> problems) {
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

    // ====================================================================== bookkeeping

    /** Counters shared by all workers. */
    static final class Stats {
        final LongAdder valid = new LongAdder();
        final LongAdder invalid = new LongAdder();
        final LongAdder expected = new LongAdder();
        final LongAdder unexpected = new LongAdder();
        final LongAdder notRefused = new LongAdder();
        final LongAdder mismatches = new LongAdder();
        final LongAdder leaked = new LongAdder();
        final ConcurrentHashMap<String, LongAdder> ops = new ConcurrentHashMap<>();
        final AtomicLong failures = new AtomicLong();
        final ConcurrentLinkedQueue<String> failureTexts = new ConcurrentLinkedQueue<>();

        void count(String op) {
            ops.computeIfAbsent(op, k -> new LongAdder()).increment();
        }

        void failure(String kind, String thread, String op, String message, Throwable t) {
            long k = failures.incrementAndGet();
            if (k <= FAILURES_SHOWN) {
                StringWriter w = new StringWriter();
                w.append("--- failure ").append(Long.toString(k)).append(" [").append(kind).append("] ").append(thread).append(" op ")
                        .append(op).append(": ").append(message).append('\n');
                if (t != null) {
                    t.printStackTrace(new PrintWriter(w, true));
                }
                failureTexts.add(w.toString());
                System.out.println("[soak] FAILURE " + k + " [" + kind + "] " + thread + " " + op + ": " + message);
            }
        }
    }

    /**
     * Counts (and keeps off the console) the cleaner's "DeviceBuffer was not closed" warnings, and
     * counts every other warning of {@code dev.cuhandle}, which still goes to the console.
     */
    static final class LeakLog implements Filter {
        final AtomicLong leakWarnings = new AtomicLong();
        final AtomicLong otherWarnings = new AtomicLong();
        private Logger jul;
        private Filter previous;
        private Level previousLevel;
        private boolean levelChanged;

        static LeakLog install() {
            LeakLog l = new LeakLog();
            l.jul = Logger.getLogger("dev.cuhandle"); // held strongly while installed
            l.previous = l.jul.getFilter();
            l.previousLevel = l.jul.getLevel();
            if (!l.jul.isLoggable(Level.WARNING)) {
                l.jul.setLevel(Level.WARNING); // the leak warnings are how the soak sees the cleaner work
                l.levelChanged = true;
            }
            l.jul.setFilter(l);
            return l;
        }

        void uninstall() {
            jul.setFilter(previous);
            if (levelChanged) {
                jul.setLevel(previousLevel);
            }
        }

        @Override
        public boolean isLoggable(LogRecord record) {
            String m = record.getMessage();
            if (m != null && m.startsWith(LEAK_WARNING)) {
                leakWarnings.incrementAndGet();
                return false;
            }
            if (record.getLevel().intValue() >= Level.WARNING.intValue()) {
                otherWarnings.incrementAndGet();
            }
            return previous == null || previous.isLoggable(record);
        }
    }

    /** A mismatch against the CPU reference (a failure, but not an exception of the API). */
    static final class Mismatch extends RuntimeException {
        Mismatch(String message) {
            super(message);
        }
    }

    /** A buffer one thread hands to another through the shared handle. */
    static final class Handoff {
        final DeviceBuffer buffer;
        final float[] data;
        final long created = System.nanoTime();
        final AtomicBoolean claimed = new AtomicBoolean();
        final CountDownLatch done = new CountDownLatch(1);

        Handoff(DeviceBuffer buffer, float[] data) {
            this.buffer = buffer;
            this.data = data;
        }
    }

    /** What every worker sees. */
    static final class Shared {
        final Options options;
        final Stats stats;
        final Handle shared;
        final Library library;
        final Kernel addOne;
        final Handle anchor;
        final long deadline;
        final ConcurrentLinkedQueue<Handoff> mailbox = new ConcurrentLinkedQueue<>();
        final ConcurrentLinkedQueue<WeakReference<DeviceBuffer>> leaks = new ConcurrentLinkedQueue<>();

        Shared(Options options, Stats stats, Handle shared, Library library, Kernel addOne, Handle anchor, long deadline) {
            this.options = options;
            this.stats = stats;
            this.shared = shared;
            this.library = library;
            this.addOne = addOne;
            this.anchor = anchor;
            this.deadline = deadline;
        }
    }

    /**
     * Buffers of one operation: made by {@code owner}, used by {@code runner}. {@link #ready()}
     * waits for the owner's stream when they differ; {@link #close()} waits for the runner's
     * stream when they differ (the free is ordered on the owner's stream) and closes them all.
     */
    static final class Bufs implements AutoCloseable {
        final Handle owner;
        final Handle runner;
        private final List<DeviceBuffer> list = new ArrayList<>();

        Bufs(Handle owner, Handle runner) {
            this.owner = owner;
            this.runner = runner;
        }

        DeviceBuffer add(DeviceBuffer b) {
            list.add(b);
            return b;
        }

        void ready() {
            if (owner != runner) {
                owner.synchronize();
            }
        }

        @Override
        public void close() {
            try {
                if (owner != runner && !runner.isClosed()) {
                    runner.synchronize();
                }
            } finally {
                for (DeviceBuffer b : list) {
                    b.close();
                }
            }
        }
    }

    // ====================================================================== the worker

    static final class Worker implements Runnable {
        private final Shared c;
        private final Stats stats;
        private final Handle shared;
        private final Random rnd;
        private final String name;
        private final int maxElems;
        private final KernelLaunch launch;
        private final List<Handoff> pending = new ArrayList<>();
        private final Map<String, Runnable> ops = new LinkedHashMap<>();
        private final String[] table;
        private Handle priv;
        private long lastLeak;
        private String currentOp = "?";

        Worker(Shared c, int index) {
            this.c = c;
            this.stats = c.stats;
            this.shared = c.shared;
            this.rnd = new Random(c.options.seed() + index);
            this.name = "soak-" + index;
            this.maxElems = 1 << c.options.maxLog2();
            this.launch = c.addOne.newLaunch();
            List<String> t = new ArrayList<>();
            op(t, 16, "blas-update", this::blasUpdate);
            op(t, 16, "blas-reduce", this::blasReduce);
            op(t, 8, "kernel", this::kernel);
            op(t, 4, "events", this::events);
            op(t, 6, "memset-copy", this::memsetCopy);
            op(t, 6, "arrays", this::arrays);
            op(t, 3, "handoff-give", this::handoffGive);
            op(t, 3, "handoff-take", this::handoffTake);
            op(t, 2, "short-handle", this::shortLivedHandle);
            op(t, 2, "handle-misc", this::handleMisc);
            op(t, 1, "private-stream", this::privateStream);
            op(t, 1, "recreate-private", this::recreatePrivate);
            op(t, 1, "leak", this::leak);
            op(t, 24, "invalid", this::invalid);
            this.table = t.toArray(new String[0]);
        }

        private void op(List<String> t, int weight, String opName, Runnable body) {
            ops.put(opName, body);
            for (int i = 0; i < weight; i++) {
                t.add(opName);
            }
        }

        @Override
        public void run() {
            try {
                priv = newHandle();
                while (System.nanoTime() < c.deadline) {
                    resolveHandoffs(false);
                    String opName = table[rnd.nextInt(table.length)];
                    currentOp = opName;
                    try {
                        ops.get(opName).run();
                    } catch (Mismatch m) {
                        stats.mismatches.increment();
                        stats.failure("mismatch", name, currentOp, m.getMessage(), m);
                    } catch (Throwable t) {
                        stats.unexpected.increment();
                        stats.failure("unexpected exception", name, currentOp, String.valueOf(t), t);
                    }
                    long cur = NativeTestApi.currentContext();
                    if (cur != 0) {
                        stats.mismatches.increment();
                        stats.failure("mismatch", name, currentOp, "H4: context 0x" + Long.toHexString(cur)
                                + " is current on the worker thread after the operation; no call may leave one current", null);
                        NativeTestApi.setCurrent(0);
                    }
                }
                resolveHandoffs(true);
            } catch (Throwable t) {
                stats.unexpected.increment();
                stats.failure("unexpected exception", name, "worker loop", String.valueOf(t), t);
            } finally {
                if (priv != null) {
                    try {
                        priv.close();
                    } catch (Throwable t) {
                        stats.unexpected.increment();
                        stats.failure("unexpected exception", name, "closing the private handle", String.valueOf(t), t);
                    }
                }
            }
        }

        // ------------------------------------------------------------------ choices

        /** A new handle of device 0's primary context: create(), create(0) or a wrap of the anchor's context. */
        private Handle newHandle() {
            int k = rnd.nextInt(5);
            if (k == 0) {
                return Handle.wrap(c.anchor.rawContext()); // borrowed: the anchor keeps the context alive
            }
            return k <= 2 ? Handle.create() : Handle.create(0);
        }

        private Handle runner() {
            return rnd.nextBoolean() ? shared : priv;
        }

        /** Usually the runner itself; one time in four the other handle (a buffer crossing handles). */
        private Handle ownerFor(Handle runner) {
            if (rnd.nextInt(4) != 0) {
                return runner;
            }
            return runner == shared ? priv : shared;
        }

        private Prec prec() {
            return rnd.nextBoolean() ? Prec.S : Prec.D;
        }

        private SplittableRandom split() {
            return new SplittableRandom(rnd.nextLong());
        }

        /** An increment: mostly +-1, also +-2..4, larger strides and (where allowed) 0. */
        private long inc(boolean zeroAllowed) {
            int r = rnd.nextInt(20);
            if (r < 8) {
                return 1;
            }
            if (r < 11) {
                return -1;
            }
            if (r < 14) {
                return 2 + rnd.nextInt(3);
            }
            if (r < 17) {
                return -(2 + rnd.nextInt(3));
            }
            if (r < 18 && zeroAllowed) {
                return 0;
            }
            return (rnd.nextBoolean() ? 1 : -1) * (5 + rnd.nextInt(60));
        }

        /** For scal, nrm2, asum, iamax: incx <= 0 does nothing, so mostly positive. */
        private long singleInc() {
            long inc = inc(true);
            return rnd.nextInt(10) < 7 ? Math.abs(inc) : inc;
        }

        /** Elements: log-uniform in [1, maxElems]. */
        private int elems() {
            int bits = rnd.nextInt(c.options.maxLog2() + 1);
            return 1 + rnd.nextInt(1 << bits);
        }

        /** n for vectors with these increments: their span stays within maxElems; rarely 0 or negative. */
        private long n(long incx, long incy) {
            if (rnd.nextInt(50) == 0) {
                return -rnd.nextInt(3);
            }
            long maxAbs = Math.max(1, Math.max(Math.abs(incx), Math.abs(incy)));
            long limit = (maxElems - 1) / maxAbs + 1;
            return Math.min(limit, elems());
        }

        /** The element offset of a vector's slice inside its buffer. */
        private int lead() {
            int r = rnd.nextInt(4);
            return r == 0 ? 0 : r == 1 ? rnd.nextInt(4096) : rnd.nextInt(8);
        }

        private double alpha(Prec p) {
            double a = p.round(0.5 + rnd.nextDouble());
            return rnd.nextBoolean() ? a : -a;
        }

        private float[] randomFloats(int n) {
            float[] f = new float[n];
            for (int i = 0; i < n; i++) {
                f[i] = (rnd.nextFloat() - 0.5f) * 2000f;
            }
            return f;
        }

        private void valid(String opName) {
            stats.valid.increment();
            stats.count(opName);
        }

        // ------------------------------------------------------------------ checks

        /** The first {@code count} elements of {@code whole}, read on {@code h}'s stream (waits for it). */
        private static double[] download(Prec p, Handle h, DeviceBuffer whole, int count) {
            double[] out = new double[count];
            if (p.single()) {
                float[] f = new float[count];
                h.copyToHost(whole, f, 0, count);
                for (int i = 0; i < count; i++) {
                    out[i] = f[i];
                }
            } else {
                h.copyToHost(whole, out, 0, count);
            }
            return out;
        }

        private static void same(String what, double[] expected, double[] got) {
            for (int i = 0; i < expected.length; i++) {
                if (!BlasReference.sameValue(expected[i], got[i])) {
                    int count = 0;
                    for (int k = 0; k < expected.length; k++) {
                        if (!BlasReference.sameValue(expected[k], got[k])) {
                            count++;
                        }
                    }
                    throw new Mismatch(what + ": buffer element " + i + " is " + got[i] + ", expected " + expected[i] + "; " + count + " of "
                            + expected.length + " elements differ");
                }
            }
        }

        private static void same(String what, float[] expected, float[] got) {
            for (int i = 0; i < expected.length; i++) {
                if (Float.floatToRawIntBits(expected[i]) != Float.floatToRawIntBits(got[i])) {
                    throw new Mismatch(what + ": element " + i + " is " + got[i] + ", expected " + expected[i]);
                }
            }
        }

        private static void sameBytes(String what, byte[] expected, byte[] got) {
            int i = Arrays.mismatch(expected, got);
            if (i >= 0) {
                throw new Mismatch(what + ": byte " + i + " differs (" + (i < got.length ? got[i] : "missing") + ", expected "
                        + (i < expected.length ? expected[i] : "none") + ")");
            }
        }

        private static String vec(String op, Prec p, long n, long incx, long incy, int lx, int ly) {
            return p.prefix() + op + "(n=" + n + ", incx=" + incx + (incy != Long.MIN_VALUE ? ", incy=" + incy : "") + ", x at element " + lx
                    + (ly >= 0 ? ", y at element " + ly : "") + ")";
        }

        // ------------------------------------------------------------------ BLAS

        private void blasUpdate() {
            Prec p = prec();
            int op = rnd.nextInt(4);
            Handle runner = runner();
            Handle owner = ownerFor(runner);
            SplittableRandom sr = split();
            switch (op) {
                case 0: {
                    long incx = singleInc();
                    long n = n(incx, 0);
                    Vec x = Vec.random(p, n, incx, lead(), sr);
                    double alpha = alpha(p);
                    double[] expected = x.copyOfAll();
                    BlasReference.scal(p.single(), n, alpha, expected, x.lead, incx);
                    String what = vec("scal", p, n, incx, Long.MIN_VALUE, x.lead, -1) + " alpha=" + alpha + crossing(owner, runner);
                    try (Bufs b = new Bufs(owner, runner)) {
                        DeviceBuffer bx = b.add(x.upload(owner));
                        b.ready();
                        p.scal(runner, n, alpha, x.view(bx), incx);
                        same(what + " x", expected, download(p, runner, bx, x.all.length));
                    }
                    valid(p.prefix() + "scal");
                    break;
                }
                case 1: {
                    long incx = inc(true);
                    long incy = inc(false);
                    long n = n(incx, incy);
                    Vec x = Vec.random(p, n, incx, lead(), sr);
                    Vec y = Vec.random(p, n, incy, lead(), sr);
                    double alpha = alpha(p);
                    String what = vec("axpy", p, n, incx, incy, x.lead, y.lead) + " alpha=" + alpha + crossing(owner, runner);
                    try (Bufs b = new Bufs(owner, runner)) {
                        DeviceBuffer bx = b.add(x.upload(owner));
                        DeviceBuffer by = b.add(y.upload(owner));
                        b.ready();
                        p.axpy(runner, n, alpha, x.view(bx), incx, y.view(by), incy);
                        double[] gotY = download(p, runner, by, y.all.length);
                        same(what + " x (read only)", x.all, download(p, runner, bx, x.all.length));
                        boolean[] element = new boolean[y.all.length];
                        for (long i = 0; i < n; i++) {
                            int ky = y.at(i);
                            element[ky] = true;
                            double xi = x.all[x.at(i)];
                            if (!BlasReference.axpyAccepts(p.single(), alpha, xi, y.all[ky], gotY[ky])) {
                                throw new Mismatch(what + ": y element " + i + " (buffer element " + ky + ") is " + gotY[ky] + ", expected "
                                        + alpha + " * " + xi + " + " + y.all[ky] + " (float: within 1 ulp of the fused result; double: fused or twice rounded)");
                            }
                        }
                        for (int k = 0; k < element.length; k++) {
                            if (!element[k] && !BlasReference.sameValue(y.all[k], gotY[k])) {
                                throw new Mismatch(what + ": buffer element " + k + " of y is not part of the vector but changed from " + y.all[k] + " to " + gotY[k]);
                            }
                        }
                    }
                    valid(p.prefix() + "axpy");
                    break;
                }
                case 2: {
                    long incx = inc(true);
                    long incy = inc(false);
                    long n = n(incx, incy);
                    Vec x = Vec.random(p, n, incx, lead(), sr);
                    Vec y = Vec.random(p, n, incy, lead(), sr);
                    double[] expectedY = y.copyOfAll();
                    BlasReference.copy(n, x.all, x.lead, incx, expectedY, y.lead, incy);
                    String what = vec("copy", p, n, incx, incy, x.lead, y.lead) + crossing(owner, runner);
                    try (Bufs b = new Bufs(owner, runner)) {
                        DeviceBuffer bx = b.add(x.upload(owner));
                        DeviceBuffer by = b.add(y.upload(owner));
                        b.ready();
                        p.copy(runner, n, x.view(bx), incx, y.view(by), incy);
                        same(what + " y", expectedY, download(p, runner, by, y.all.length));
                        same(what + " x (read only)", x.all, download(p, runner, bx, x.all.length));
                    }
                    valid(p.prefix() + "copy");
                    break;
                }
                default: {
                    long incx = inc(false);
                    long incy = inc(false);
                    long n = n(incx, incy);
                    Vec x = Vec.random(p, n, incx, lead(), sr);
                    Vec y = Vec.random(p, n, incy, lead(), sr);
                    double[] expectedX = x.copyOfAll();
                    double[] expectedY = y.copyOfAll();
                    BlasReference.swap(n, expectedX, x.lead, incx, expectedY, y.lead, incy);
                    String what = vec("swap", p, n, incx, incy, x.lead, y.lead) + crossing(owner, runner);
                    try (Bufs b = new Bufs(owner, runner)) {
                        DeviceBuffer bx = b.add(x.upload(owner));
                        DeviceBuffer by = b.add(y.upload(owner));
                        b.ready();
                        p.swap(runner, n, x.view(bx), incx, y.view(by), incy);
                        same(what + " x", expectedX, download(p, runner, bx, x.all.length));
                        same(what + " y", expectedY, download(p, runner, by, y.all.length));
                    }
                    valid(p.prefix() + "swap");
                    break;
                }
            }
        }

        private String crossing(Handle owner, Handle runner) {
            return " on the " + (runner == shared ? "shared" : "private") + " handle" + (owner != runner ? ", buffers of the other handle" : "");
        }

        private void blasReduce() {
            Prec p = prec();
            Reduction r = Reduction.values()[rnd.nextInt(4)];
            Handle runner = runner();
            Handle owner = ownerFor(runner);
            SplittableRandom sr = split();
            boolean dot = r == Reduction.DOT;
            long incx = dot ? inc(true) : singleInc();
            long incy = dot ? inc(true) : 0;
            long n = n(incx, incy);
            Vec x = Vec.random(p, n, incx, lead(), sr);
            Vec y = dot ? Vec.random(p, n, incy, lead(), sr) : null;
            double ref;
            double tol;
            switch (r) {
                case DOT:
                    ref = BlasReference.dot(n, x.all, x.lead, incx, y.all, y.lead, incy);
                    tol = BlasReference.sumTolerance(p.single(), n, ref, BlasReference.absDot(n, x.all, x.lead, incx, y.all, y.lead, incy));
                    break;
                case NRM2:
                    ref = BlasReference.nrm2(n, x.all, x.lead, incx);
                    tol = BlasReference.nrm2Tolerance(p.single(), n, ref);
                    break;
                case ASUM:
                    ref = BlasReference.asum(n, x.all, x.lead, incx);
                    tol = BlasReference.sumTolerance(p.single(), n, ref, ref);
                    break;
                default:
                    ref = BlasReference.iamax(n, x.all, x.lead, incx);
                    tol = 0;
                    break;
            }
            boolean empty = n <= 0 || (!dot && incx <= 0);
            boolean iamax = r == Reduction.IAMAX;
            int rb = p.resultBytes(iamax);
            String what = r.name(p) + "(n=" + n + ", incx=" + incx + (dot ? ", incy=" + incy : "") + ", x at element " + x.lead
                    + (dot ? ", y at element " + y.lead : "") + ")" + crossing(owner, runner);
            try (Bufs b = new Bufs(owner, runner)) {
                DeviceBuffer bx = b.add(x.upload(owner));
                DeviceBuffer by = dot ? b.add(y.upload(owner)) : null;
                byte[] fill = new byte[BlasTestSupport.RESULT_BUFFER_BYTES];
                Arrays.fill(fill, BlasTestSupport.RESULT_SENTINEL);
                DeviceBuffer res = b.add(owner.upload(fill));
                b.ready();
                DeviceBuffer vx = x.view(bx);
                DeviceBuffer vy = dot ? y.view(by) : null;
                double host = r.host(p, runner, n, vx, incx, vy, incy);
                DeviceBuffer slot = res.slice(BlasTestSupport.RESULT_OFFSET, rb);
                switch (r) {
                    case DOT:
                        p.dot(runner, n, vx, incx, vy, incy, slot);
                        break;
                    case NRM2:
                        p.nrm2(runner, n, vx, incx, slot);
                        break;
                    case ASUM:
                        p.asum(runner, n, vx, incx, slot);
                        break;
                    default:
                        p.iamax(runner, n, vx, incx, slot);
                        break;
                }
                byte[] all = new byte[BlasTestSupport.RESULT_BUFFER_BYTES];
                runner.copyToHost(res, all, 0, all.length);
                for (int i = 0; i < all.length; i++) {
                    boolean inSlot = i >= BlasTestSupport.RESULT_OFFSET && i < BlasTestSupport.RESULT_OFFSET + rb;
                    if (!inSlot && all[i] != BlasTestSupport.RESULT_SENTINEL) {
                        throw new Mismatch(what + ": device result: byte " + i + " outside the " + rb + "-byte result slice changed");
                    }
                }
                ByteBuffer bb = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
                int at = BlasTestSupport.RESULT_OFFSET;
                double device = iamax ? (double) bb.getLong(at) : p.single() ? bb.getFloat(at) : bb.getDouble(at);
                if (empty) {
                    if (Double.doubleToRawLongBits(host) != 0 || Double.doubleToRawLongBits(device) != 0) {
                        throw new Mismatch(what + ": host " + host + ", device " + device + "; expected +0 (nothing to reduce)");
                    }
                } else if (iamax) {
                    if (host != ref || device != ref) {
                        throw new Mismatch(what + ": host " + (long) host + ", device " + (long) device + ", expected " + (long) ref);
                    }
                } else {
                    if (!BlasReference.close(ref, host, tol)) {
                        throw new Mismatch(what + " = " + host + ", expected " + ref + " within " + tol + " (off by " + Math.abs(host - ref) + ")");
                    }
                    if (!BlasReference.sameValue(host, device)) {
                        throw new Mismatch(what + ": the device-result variant wrote " + device + " but the host-result variant returned " + host
                                + "; the same input must give bit-identical results");
                    }
                }
                same(what + " x (read only)", x.all, download(p, runner, bx, x.all.length));
                if (dot) {
                    same(what + " y (read only)", y.all, download(p, runner, by, y.all.length));
                }
            }
            valid(r.name(p));
        }

        // ------------------------------------------------------------------ kernels, events

        private void addOneOn(Handle runner, DeviceBuffer view, int n) {
            int block = 32 * (1 + rnd.nextInt(32));
            int grid = Math.max(1, Math.min(1024, (n + block - 1) / block));
            if (rnd.nextBoolean()) {
                runner.launch(c.addOne, Dim3.of(grid), Dim3.of(block), 0, view, n);
            } else {
                launch.grid(grid).block(block).sharedBytes(0).arg(0, view).arg(1, n);
                runner.launch(launch);
            }
        }

        /** add_one {@code times} times on a slice at a random element offset; the rest must not change. */
        private void kernelCheck(Handle runner, Handle owner, Runnable beforeAfter, String opName) {
            int n = elems();
            int lead = lead();
            int trail = rnd.nextInt(4);
            float[] all = randomFloats(lead + n + trail);
            float[] expected = all.clone();
            int times = 1 + rnd.nextInt(3);
            for (int i = lead; i < lead + n; i++) {
                for (int t = 0; t < times; t++) {
                    expected[i] += 1.0f;
                }
            }
            try (Bufs b = new Bufs(owner, runner)) {
                DeviceBuffer whole = b.add(owner.upload(all));
                b.ready();
                DeviceBuffer view = whole.slice(4L * lead, 4L * n);
                for (int t = 0; t < times; t++) {
                    addOneOn(runner, view, n);
                }
                if (beforeAfter != null) {
                    beforeAfter.run();
                }
                float[] out = new float[all.length];
                runner.copyToHost(whole, out, 0, out.length);
                same(ADD_ONE + " x" + times + " on " + n + " floats at element " + lead + crossing(owner, runner), expected, out);
            }
            valid(opName);
        }

        private void kernel() {
            Handle runner = runner();
            kernelCheck(runner, ownerFor(runner), null, "kernel " + ADD_ONE);
        }

        private void events() {
            Handle runner = runner();
            Handle maker = rnd.nextInt(3) == 0 ? (runner == shared ? priv : shared) : runner; // events of the same context
            try (Event start = maker.createEvent(); Event end = maker.createEvent()) {
                start.record(runner);
                kernelCheck(runner, ownerFor(runner), () -> {
                    end.record(runner);
                    end.synchronize();
                    float ms = end.elapsedSince(start);
                    if (!(ms >= 0) || Float.isInfinite(ms)) {
                        throw new Mismatch("event elapsed time " + ms + " ms; expected a finite value >= 0 (both recorded on one stream, in order)");
                    }
                    start.synchronize();
                }, "events record/synchronize/elapsed");
            }
        }

        // ------------------------------------------------------------------ memory

        private byte[] randomBytes(int n) {
            byte[] b = new byte[n];
            rnd.nextBytes(b);
            return b;
        }

        private void memsetCopy() {
            Handle runner = runner();
            Handle owner = ownerFor(runner);
            int na = elems();
            int nb = na + rnd.nextInt(1024);
            byte[] a = randomBytes(na);
            byte[] bb = randomBytes(nb);
            try (Bufs b = new Bufs(owner, runner)) {
                DeviceBuffer da = b.add(owner.upload(a));
                DeviceBuffer db = b.add(owner.upload(bb));
                b.ready();
                int off = rnd.nextInt(nb + 1);
                int len = rnd.nextInt(nb - off + 1);
                int v = rnd.nextInt(256);
                runner.memset(db.slice(off, len), v);
                Arrays.fill(bb, off, off + len, (byte) v);
                int sOff = rnd.nextInt(na + 1);
                int sLen = rnd.nextInt(Math.min(na - sOff, nb) + 1);
                int dOff = rnd.nextInt(nb - sLen + 1);
                runner.copy(da.slice(sOff, sLen), db.slice(dOff, nb - dOff));
                System.arraycopy(a, sOff, bb, dOff, sLen);
                if (rnd.nextInt(4) == 0) {
                    int w = rnd.nextInt(256);
                    runner.memset(da, w);
                    Arrays.fill(a, (byte) w);
                }
                byte[] gotA = new byte[na];
                byte[] gotB = new byte[nb];
                runner.copyToHost(da, gotA, 0, na);
                runner.copyToHost(db, gotB, 0, nb);
                String what = "memset [" + off + ", +" + len + ") = " + v + ", copy " + sLen + " bytes " + sOff + " -> " + dOff + crossing(owner, runner);
                sameBytes(what + ": destination", bb, gotB);
                sameBytes(what + ": source", a, gotA);
            }
            valid("memset+copy");
        }

        /** Array copies with offsets, of every element type, and direct ByteBuffers. */
        private void arrays() {
            Handle runner = runner();
            Handle owner = ownerFor(runner);
            int type = rnd.nextInt(6);
            int len = elems();
            int off = rnd.nextInt(17);
            int extra = rnd.nextInt(5);
            int es = type == 0 || type == 2 ? 4 : type == 1 || type == 3 ? 8 : 1;
            try (Bufs b = new Bufs(owner, runner)) {
                DeviceBuffer d = b.add(owner.allocate((long) len * es + rnd.nextInt(64)));
                b.ready();
                boolean own = owner == runner && rnd.nextBoolean(); // the buffer's own upload/download (owner's stream)
                String what = "array copy of " + len + " elements (" + es + " bytes) from offset " + off + crossing(owner, runner);
                switch (type) {
                    case 0: {
                        float[] src = randomFloats(off + len + extra);
                        runner.copyToDevice(src, off, d, len);
                        float[] back = new float[len + 2];
                        runner.copyToHost(d, back, 1, len);
                        check(what, Arrays.equals(back, 1, len + 1, src, off, off + len) && back[0] == 0 && back[len + 1] == 0);
                        if (own) {
                            float[] whole = randomFloats(len);
                            d.slice(0, 4L * len).upload(whole);
                            float[] out = new float[len];
                            d.slice(0, 4L * len).download(out);
                            same(what + " (DeviceBuffer.upload/download)", whole, out);
                        }
                        break;
                    }
                    case 1: {
                        double[] src = new double[off + len + extra];
                        for (int i = 0; i < src.length; i++) {
                            src[i] = rnd.nextGaussian() * 1e10;
                        }
                        runner.copyToDevice(src, off, d, len);
                        double[] back = new double[len + 2];
                        runner.copyToHost(d, back, 1, len);
                        check(what, Arrays.equals(back, 1, len + 1, src, off, off + len) && back[0] == 0 && back[len + 1] == 0);
                        if (own) {
                            double[] out = new double[len];
                            d.slice(0, 8L * len).download(out);
                            check(what + " (DeviceBuffer.download)", Arrays.equals(out, 0, len, src, off, off + len));
                        }
                        break;
                    }
                    case 2: {
                        int[] src = rnd.ints(off + len + extra).toArray();
                        runner.copyToDevice(src, off, d, len);
                        int[] back = new int[len + 2];
                        runner.copyToHost(d, back, 1, len);
                        check(what, Arrays.equals(back, 1, len + 1, src, off, off + len) && back[0] == 0 && back[len + 1] == 0);
                        break;
                    }
                    case 3: {
                        long[] src = rnd.longs(off + len + extra).toArray();
                        runner.copyToDevice(src, off, d, len);
                        long[] back = new long[len + 2];
                        runner.copyToHost(d, back, 1, len);
                        check(what, Arrays.equals(back, 1, len + 1, src, off, off + len) && back[0] == 0 && back[len + 1] == 0);
                        break;
                    }
                    case 4: {
                        byte[] src = randomBytes(off + len + extra);
                        runner.copyToDevice(src, off, d, len);
                        byte[] back = new byte[len + 2];
                        runner.copyToHost(d, back, 1, len);
                        check(what, Arrays.equals(back, 1, len + 1, src, off, off + len) && back[0] == 0 && back[len + 1] == 0);
                        break;
                    }
                    default: {
                        byte[] bytes = randomBytes(len);
                        ByteBuffer src = ByteBuffer.allocateDirect(off + len + extra);
                        src.position(off);
                        src.put(bytes);
                        runner.copyToDevice(src, off, d, len);
                        ByteBuffer dst = ByteBuffer.allocateDirect(len + 8);
                        runner.copyToHost(d, dst, 4, len);
                        byte[] back = new byte[len];
                        dst.position(4);
                        dst.get(back);
                        sameBytes(what + " (direct ByteBuffer)", bytes, back);
                        check(what + " (direct ByteBuffer guard bytes)", dst.getInt(0) == 0 && dst.getInt(4 + len) == 0);
                        break;
                    }
                }
            }
            valid("arrays " + (type == 0 ? "float" : type == 1 ? "double" : type == 2 ? "int" : type == 3 ? "long" : type == 4 ? "byte" : "direct"));
        }

        private static void check(String what, boolean ok) {
            if (!ok) {
                throw new Mismatch(what + ": the data read back differ from the data written");
            }
        }

        // ------------------------------------------------------------------ handoffs between threads

        private void handoffGive() {
            if (pending.size() >= 4) {
                return;
            }
            int n = 1 + rnd.nextInt(1 << Math.min(16, c.options.maxLog2()));
            float[] data = randomFloats(n);
            Handoff h = new Handoff(shared.upload(data), data);
            pending.add(h);
            c.mailbox.add(h);
            valid("handoff give");
        }

        private void handoffTake() {
            for (int tries = 0; tries < 8; tries++) {
                Handoff h = c.mailbox.poll();
                if (h == null) {
                    return;
                }
                if (h.claimed.compareAndSet(false, true)) {
                    try {
                        verifyHandoff(h);
                    } finally {
                        h.done.countDown();
                    }
                    valid("handoff take (another thread's buffer)");
                    return;
                }
            }
        }

        /** Reads a handed-off buffer through the shared handle (it was uploaded there). */
        private void verifyHandoff(Handoff h) {
            int n = h.data.length;
            float[] out = new float[n];
            if (rnd.nextBoolean()) {
                shared.copyToHost(h.buffer, out, 0, n);
            } else {
                h.buffer.download(out);
            }
            same("handed-off buffer of " + n + " floats", h.data, out);
            if (rnd.nextBoolean()) {
                double[] d = new double[n];
                for (int i = 0; i < n; i++) {
                    d[i] = h.data[i];
                }
                double ref = BlasReference.asum(n, d, 0, 1);
                double got = Blas.sasum(shared, n, h.buffer, 1);
                if (!BlasReference.close(ref, got, BlasReference.sumTolerance(true, n, ref, ref))) {
                    throw new Mismatch("sasum of a handed-off buffer of " + n + " floats = " + got + ", expected " + ref);
                }
            }
        }

        /**
         * Closes this thread's handed-off buffers that are done with: used by another thread (done),
         * or claimed back here after 200 ms unused (then checked here). At the end, waits for the
         * ones another thread is still using.
         */
        private void resolveHandoffs(boolean last) {
            for (Iterator<Handoff> it = pending.iterator(); it.hasNext();) {
                Handoff h = it.next();
                try {
                    boolean mine = false;
                    if (h.done.getCount() != 0 && (last || System.nanoTime() - h.created > 200_000_000L)) {
                        mine = h.claimed.compareAndSet(false, true);
                    }
                    if (mine) {
                        try {
                            verifyHandoff(h);
                        } finally {
                            h.done.countDown();
                        }
                        valid("handoff taken back");
                    } else if (h.done.getCount() != 0) {
                        if (!last) {
                            continue; // another thread is using it
                        }
                        if (!h.done.await(60, TimeUnit.SECONDS)) {
                            it.remove();
                            throw new IllegalStateException("the thread that took a handed-off buffer did not finish with it within 60 s; it stays open");
                        }
                    }
                    it.remove();
                    h.buffer.close();
                } catch (Mismatch m) {
                    it.remove();
                    h.buffer.close();
                    stats.mismatches.increment();
                    stats.failure("mismatch", name, "handoff", m.getMessage(), m);
                } catch (Throwable t) {
                    stats.unexpected.increment();
                    stats.failure("unexpected exception", name, "handoff", String.valueOf(t), t);
                }
            }
        }

        // ------------------------------------------------------------------ handles

        private void shortLivedHandle() {
            try (Handle t = newHandle()) {
                int n = 1 + rnd.nextInt(1 << Math.min(12, c.options.maxLog2()));
                float[] data = randomFloats(n);
                try (DeviceBuffer b = t.upload(data)) {
                    float[] out = new float[n];
                    b.download(out);
                    same("a short-lived handle's buffer", data, out);
                    double[] d = new double[n];
                    for (int i = 0; i < n; i++) {
                        d[i] = data[i];
                    }
                    double ref = BlasReference.asum(n, d, 0, 1);
                    double got = Blas.sasum(t, n, b, 1);
                    if (!BlasReference.close(ref, got, BlasReference.sumTolerance(true, n, ref, ref))) {
                        throw new Mismatch("sasum on a short-lived handle of " + n + " floats = " + got + ", expected " + ref);
                    }
                }
            }
            valid("short-lived handle");
        }

        private void handleMisc() {
            Handle h = runner();
            h.validate();
            h.stream();
            long free = h.freeMemory();
            if (free <= 0) {
                throw new Mismatch("freeMemory() = " + free + "; expected > 0");
            }
            if (h.contextId() != c.anchor.contextId() || h.device().ordinal() != 0) {
                throw new Mismatch(h + " is not on the anchor's context " + c.anchor);
            }
            h.synchronize();
            valid("handle validate/stream/freeMemory/synchronize");
        }

        /** The private handle on the legacy default stream for one kernel check, then back. */
        private void privateStream() {
            priv.setStream(0);
            try {
                kernelCheck(priv, priv, null, "private handle on the legacy stream");
            } finally {
                priv.resetStream();
            }
        }

        /** Closes the private handle (maybe keeping one of its buffers) and makes a new one. */
        private void recreatePrivate() {
            DeviceBuffer kept = null;
            float[] data = null;
            if (rnd.nextBoolean()) {
                data = randomFloats(1 + rnd.nextInt(4096));
                kept = priv.upload(data);
            }
            Handle old = priv;
            priv = null;
            old.close(); // synchronises its stream: the kept buffer's data are there
            priv = newHandle();
            valid("recreate private handle");
            expect("closed handle: synchronize", IllegalStateException.class, old::synchronize);
            if (kept != null) {
                try {
                    DeviceBuffer k = kept;
                    float[] d = data;
                    expect("buffer of a closed handle: download", IllegalStateException.class, () -> k.download(new float[d.length]));
                    // With another open handle of the same context the buffer still works until it is closed.
                    Handle other = rnd.nextBoolean() ? shared : priv;
                    float[] out = new float[data.length];
                    other.copyToHost(kept, out, 0, out.length);
                    same("a buffer of a closed handle read through another handle", data, out);
                    valid("buffer of a closed handle via another handle");
                } finally {
                    kept.close(); // its handle is closed: freed synchronously
                }
            }
        }

        /** Drops an unclosed buffer (at most one per thread every 2 s): the cleaner must release it. */
        private void leak() {
            long now = System.nanoTime();
            if (lastLeak != 0 && now - lastLeak < 2_000_000_000L) {
                return;
            }
            lastLeak = now;
            leakOne(runner(), 1 + rnd.nextInt(1 << Math.min(14, c.options.maxLog2())));
            stats.leaked.increment();
            valid("leak a buffer on purpose");
        }

        private void leakOne(Handle h, int n) {
            DeviceBuffer b = h.upload(new float[n]);
            c.leaks.add(new WeakReference<>(b));
        }

        // ------------------------------------------------------------------ invalid calls

        /** Runs {@code call}, which must throw {@code type}. */
        private void expect(String what, Class<? extends Throwable> type, Runnable call) {
            stats.invalid.increment();
            stats.count("invalid: " + what);
            try {
                call.run();
            } catch (Throwable t) {
                if (type.isInstance(t)) {
                    stats.expected.increment();
                } else {
                    stats.unexpected.increment();
                    stats.failure("unexpected exception", name, "invalid: " + what, "expected " + type.getSimpleName() + ", got " + t, t);
                }
                return;
            }
            stats.notRefused.increment();
            stats.failure("not refused", name, "invalid: " + what, "returned normally; expected " + type.getSimpleName(), null);
        }

        private void invalid() {
            Handle h = runner();
            switch (rnd.nextInt(18)) {
                case 0:
                    invalidZeroIncrement(h);
                    break;
                case 1:
                    invalidTooShort(h);
                    break;
                case 2:
                    invalidMisaligned(h);
                    break;
                case 3:
                    invalidBufferOfClosedHandle(h);
                    break;
                case 4:
                    invalidClosedBuffer(h);
                    break;
                case 5:
                    invalidClosedHandle();
                    break;
                case 6:
                    invalidClosedEvent(h);
                    break;
                case 7:
                    if (rnd.nextInt(4) == 0) { // loading a library is slower than the rest
                        invalidClosedLibrary(h);
                    }
                    break;
                case 8:
                    invalidSizes(h);
                    break;
                case 9:
                    invalidNulls(h);
                    break;
                case 10:
                    invalidArrayRanges(h);
                    break;
                case 11:
                    invalidKernelArguments(h);
                    break;
                case 12:
                    invalidLaunchShape(h);
                    break;
                case 13:
                    invalidMemsetAndCopy(h);
                    break;
                case 14:
                    invalidResultBuffers(h);
                    break;
                case 15:
                    invalidSlices(h);
                    break;
                case 16:
                    invalidNullBlasArguments(h);
                    break;
                default:
                    invalidZeroIncrement(h);
                    break;
            }
        }

        /** Contents of a float buffer must be as uploaded after refused calls. */
        private static void unchanged(Handle h, DeviceBuffer b, float[] data, String what) {
            float[] out = new float[data.length];
            h.copyToHost(b, out, 0, out.length);
            same(what + ": buffer contents after refused calls", data, out);
        }

        private void invalidZeroIncrement(Handle h) {
            Prec p = prec();
            long n = 1 + rnd.nextInt(64);
            SplittableRandom sr = split();
            Vec x = Vec.random(p, n, 1, 0, sr);
            Vec y = Vec.random(p, n, 1, 0, sr);
            try (DeviceBuffer bx = x.upload(h); DeviceBuffer by = y.upload(h)) {
                long incx = inc(true);
                expect("axpy incy=0", IllegalArgumentException.class, () -> p.axpy(h, n, 2.0, bx, incx, by, 0));
                expect("copy incy=0", IllegalArgumentException.class, () -> p.copy(h, n, bx, incx, by, 0));
                expect("swap incx=0", IllegalArgumentException.class, () -> p.swap(h, n, bx, 0, by, 1));
                expect("swap incy=0", IllegalArgumentException.class, () -> p.swap(h, n, bx, -1, by, 0));
                same("refused inc 0: x", x.all, download(p, h, bx, x.all.length));
                same("refused inc 0: y", y.all, download(p, h, by, y.all.length));
            }
        }

        private void invalidTooShort(Handle h) {
            Prec p = prec();
            long inc = inc(false);
            long n = 1 + Math.min(rnd.nextInt(1000), (maxElems - 1) / Math.abs(inc));
            int need = Math.toIntExact(BlasReference.span(n, inc));
            SplittableRandom sr = split();
            Vec ok = Vec.random(p, n, inc, 0, sr);
            double[] okData = Arrays.copyOf(ok.all, need);
            double[] shortData = Arrays.copyOf(ok.all, need - 1);
            long pos = Math.abs(inc);
            try (DeviceBuffer good = p.upload(h, okData); DeviceBuffer good2 = p.upload(h, okData); DeviceBuffer bad = p.upload(h, shortData)) {
                String k = "too short";
                switch (rnd.nextInt(8)) {
                    case 0:
                        expect(k + ": scal x", IllegalArgumentException.class, () -> p.scal(h, n, 2.0, bad, pos));
                        break;
                    case 1:
                        expect(k + ": axpy x", IllegalArgumentException.class, () -> p.axpy(h, n, 2.0, bad, inc, good, inc));
                        expect(k + ": axpy y", IllegalArgumentException.class, () -> p.axpy(h, n, 2.0, good, inc, bad, inc));
                        break;
                    case 2:
                        expect(k + ": copy y", IllegalArgumentException.class, () -> p.copy(h, n, good, inc, bad, inc));
                        break;
                    case 3:
                        expect(k + ": swap x", IllegalArgumentException.class, () -> p.swap(h, n, bad, inc, good, inc));
                        break;
                    case 4:
                        expect(k + ": dot y", IllegalArgumentException.class, () -> p.dot(h, n, good, inc, bad, inc));
                        break;
                    case 5:
                        expect(k + ": nrm2 x", IllegalArgumentException.class, () -> p.nrm2(h, n, bad, pos));
                        break;
                    case 6:
                        expect(k + ": asum x (device result)", IllegalArgumentException.class, () -> {
                            try (DeviceBuffer r = h.allocate(8)) {
                                p.asum(h, n, bad, pos, r);
                            }
                        });
                        break;
                    default:
                        expect(k + ": iamax x", IllegalArgumentException.class, () -> p.iamax(h, n, bad, pos));
                        break;
                }
                same("refused too-short calls: the short buffer", shortData, download(p, h, bad, shortData.length));
                same("refused too-short calls: the good buffer", okData, download(p, h, good, okData.length));
                same("refused too-short calls: the second good buffer", okData, download(p, h, good2, okData.length));
            }
        }

        private void invalidMisaligned(Handle h) {
            float[] fdata = randomFloats(64);
            double[] ddata = new double[32];
            for (int i = 0; i < ddata.length; i++) {
                ddata[i] = rnd.nextGaussian();
            }
            try (DeviceBuffer f = h.upload(fdata); DeviceBuffer d = h.upload(ddata)) {
                DeviceBuffer fx = f.slice(2, 128); // byte 2 of a float buffer
                DeviceBuffer fy = f.slice(128, 128);
                DeviceBuffer dx = d.slice(4, 128); // byte 4 of a double buffer
                DeviceBuffer dy = d.slice(128, 128);
                switch (rnd.nextInt(5)) {
                    case 0:
                        expect("misaligned: saxpy x at byte 2", IllegalArgumentException.class, () -> Blas.saxpy(h, 4, 1f, fx, 1, fy, 1));
                        break;
                    case 1:
                        expect("misaligned: sscal x at byte 2", IllegalArgumentException.class, () -> Blas.sscal(h, 4, 2f, fx, 1));
                        break;
                    case 2:
                        expect("misaligned: sdot y at byte 2", IllegalArgumentException.class, () -> Blas.sdot(h, 4, fy, 1, fx, 1));
                        break;
                    case 3:
                        expect("misaligned: dcopy x at byte 4", IllegalArgumentException.class, () -> Blas.dcopy(h, 4, dx, 1, dy, 1));
                        break;
                    default:
                        expect("misaligned: dnrm2 x at byte 4", IllegalArgumentException.class, () -> Blas.dnrm2(h, 4, dx, 1));
                        break;
                }
                unchanged(h, f, fdata, "misaligned slices");
                double[] out = new double[ddata.length];
                h.copyToHost(d, out, 0, out.length);
                same("misaligned slices: the double buffer after refused calls", ddata, out);
            }
        }

        private void invalidBufferOfClosedHandle(Handle h) {
            float[] data = randomFloats(1 + rnd.nextInt(1024));
            DeviceBuffer b;
            try (Handle t = newHandle()) {
                b = t.upload(data);
            }
            try {
                expect("buffer of a closed handle: download", IllegalStateException.class, () -> b.download(new float[data.length]));
                expect("buffer of a closed handle: upload", IllegalStateException.class, () -> b.upload(new float[data.length]));
                float[] out = new float[data.length];
                h.copyToHost(b, out, 0, out.length); // allowed: another open handle of the same context
                same("a buffer of a closed handle read through another handle", data, out);
            } finally {
                b.close();
            }
        }

        private void invalidClosedBuffer(Handle h) {
            int n = 1 + rnd.nextInt(1024);
            DeviceBuffer b = h.upload(randomFloats(n));
            DeviceBuffer view = b.slice(0, 4L * Math.max(1, n / 2));
            b.close();
            switch (rnd.nextInt(6)) {
                case 0:
                    expect("closed buffer: memset", IllegalStateException.class, () -> h.memset(b, 0));
                    break;
                case 1:
                    expect("closed buffer: download of a slice", IllegalStateException.class, () -> view.download(new float[1]));
                    break;
                case 2:
                    expect("closed buffer: sasum", IllegalStateException.class, () -> Blas.sasum(h, n, b, 1));
                    break;
                case 3:
                    expect("closed buffer: launch", IllegalStateException.class, () -> h.launch(c.addOne, Dim3.of(1), Dim3.of(32), 0, b, n));
                    break;
                case 4:
                    expect("closed buffer: copyToDevice", IllegalStateException.class, () -> h.copyToDevice(new float[1], 0, view, 1));
                    break;
                default:
                    expect("closed buffer: saxpy into a slice", IllegalStateException.class, () -> {
                        try (DeviceBuffer x = h.allocate(4L * n)) {
                            Blas.saxpy(h, 1, 1f, x, 1, view, 1);
                        }
                    });
                    break;
            }
            b.close(); // idempotent
        }

        private void invalidClosedHandle() {
            Handle t = newHandle();
            t.close();
            switch (rnd.nextInt(6)) {
                case 0:
                    expect("closed handle: allocate", IllegalStateException.class, () -> t.allocate(16));
                    break;
                case 1:
                    expect("closed handle: upload", IllegalStateException.class, () -> t.upload(new double[4]));
                    break;
                case 2:
                    expect("closed handle: createEvent", IllegalStateException.class, t::createEvent);
                    break;
                case 3:
                    expect("closed handle: sdot", IllegalStateException.class, () -> {
                        try (DeviceBuffer x = shared.allocate(64)) {
                            try {
                                Blas.sdot(t, 4, x, 1, x, 1);
                            } finally {
                                shared.synchronize();
                            }
                        }
                    });
                    break;
                case 4:
                    expect("closed handle: launch", IllegalStateException.class, () -> {
                        try (DeviceBuffer b = shared.allocate(64)) {
                            t.launch(c.addOne, Dim3.of(1), Dim3.of(16), 0, b, 16);
                        }
                    });
                    break;
                default:
                    expect("closed handle: freeMemory", IllegalStateException.class, t::freeMemory);
                    break;
            }
            t.close(); // idempotent
        }

        private void invalidClosedEvent(Handle h) {
            Event e = h.createEvent();
            try (Event other = h.createEvent()) {
                other.record(h);
                e.close();
                switch (rnd.nextInt(3)) {
                    case 0:
                        expect("closed event: record", IllegalStateException.class, () -> e.record(h));
                        break;
                    case 1:
                        expect("closed event: synchronize", IllegalStateException.class, e::synchronize);
                        break;
                    default:
                        expect("closed event: elapsedSince", IllegalStateException.class, () -> other.elapsedSince(e));
                        break;
                }
                other.synchronize();
            }
            e.close();
        }

        private void invalidClosedLibrary(Handle h) {
            Library lib = TestKernels.load();
            Kernel k = lib.kernel(ADD_ONE);
            lib.close();
            try (DeviceBuffer b = h.allocate(256)) {
                switch (rnd.nextInt(3)) {
                    case 0:
                        expect("closed library: kernel lookup", IllegalStateException.class, () -> lib.kernel(ADD_ONE));
                        break;
                    case 1:
                        expect("closed library: launch", IllegalStateException.class, () -> h.launch(k, Dim3.of(1), Dim3.of(64), 0, b, 64));
                        break;
                    default:
                        expect("closed library: prepared launch", IllegalStateException.class, () -> h.launch(k.newLaunch().arg(0, b).arg(1, 64)));
                        break;
                }
                h.synchronize();
            }
        }

        private void invalidSizes(Handle h) {
            long negative = -1 - (rnd.nextBoolean() ? rnd.nextInt(1 << 20) : rnd.nextLong() & Long.MAX_VALUE);
            switch (rnd.nextInt(3)) {
                case 0:
                    expect("negative size: allocate", IllegalArgumentException.class, () -> h.allocate(negative));
                    break;
                case 1:
                    expect("negative size: wrapPointer", IllegalArgumentException.class, () -> {
                        try (DeviceBuffer b = h.allocate(64)) {
                            h.wrapPointer(b.address(), negative);
                        }
                    });
                    break;
                default:
                    expect("negative size: slice", IllegalArgumentException.class, () -> {
                        try (DeviceBuffer b = h.allocate(64)) {
                            b.slice(0, negative);
                        }
                    });
                    break;
            }
        }

        private void invalidNulls(Handle h) {
            float[] data = randomFloats(16);
            try (DeviceBuffer b = h.upload(data)) {
                switch (rnd.nextInt(5)) {
                    case 0:
                        expect("null array: upload", NullPointerException.class, () -> h.upload((float[]) null));
                        break;
                    case 1:
                        expect("null array: download", NullPointerException.class, () -> b.download((double[]) null));
                        break;
                    case 2:
                        expect("null array: copyToDevice", NullPointerException.class, () -> h.copyToDevice((int[]) null, 0, b, 1));
                        break;
                    case 3:
                        expect("null array: copyToHost", NullPointerException.class, () -> h.copyToHost(b, (long[]) null, 0, 1));
                        break;
                    default:
                        expect("null ByteBuffer: copyToHost", NullPointerException.class, () -> h.copyToHost(b, (ByteBuffer) null, 0, 4));
                        break;
                }
                unchanged(h, b, data, "null arrays");
            }
        }

        private void invalidArrayRanges(Handle h) {
            int n = 16 + rnd.nextInt(64);
            float[] data = randomFloats(n);
            try (DeviceBuffer b = h.upload(data)) {
                float[] host = new float[n];
                switch (rnd.nextInt(6)) {
                    case 0:
                        expect("array range: negative offset", IllegalArgumentException.class, () -> h.copyToDevice(host, -1 - rnd.nextInt(100), b, 1));
                        break;
                    case 1:
                        expect("array range: past the end", IllegalArgumentException.class, () -> h.copyToDevice(host, 1 + rnd.nextInt(n), b, n));
                        break;
                    case 2:
                        expect("array range: negative length", IllegalArgumentException.class, () -> h.copyToHost(b, host, 0, -1 - rnd.nextInt(100)));
                        break;
                    case 3:
                        expect("array range: offset + length overflows", IllegalArgumentException.class, () -> h.copyToHost(b, host, 2, Integer.MAX_VALUE));
                        break;
                    case 4:
                        expect("array range: more than the buffer holds", IllegalArgumentException.class, () -> b.download(new float[n + 1 + rnd.nextInt(8)]));
                        break;
                    default:
                        expect("ByteBuffer range: past its capacity", IllegalArgumentException.class,
                                () -> h.copyToDevice(ByteBuffer.allocateDirect(32), 30, b, 4));
                        break;
                }
                unchanged(h, b, data, "bad array ranges");
            }
        }

        private void invalidKernelArguments(Handle h) {
            if (c.addOne.parameterCount() < 0) {
                return; // the driver cannot report parameter sizes (before 12.4, or not probed yet): launches are unchecked
            }
            int n = 64;
            float[] data = randomFloats(n);
            try (DeviceBuffer b = h.upload(data)) {
                switch (rnd.nextInt(4)) {
                    case 0:
                        expect("kernel: 1 argument for 2 parameters", IllegalArgumentException.class, () -> h.launch(c.addOne, Dim3.of(1), Dim3.of(64), 0, b));
                        break;
                    case 1:
                        expect("kernel: 3 arguments for 2 parameters", IllegalArgumentException.class,
                                () -> h.launch(c.addOne, Dim3.of(1), Dim3.of(64), 0, b, n, n));
                        break;
                    case 2:
                        expect("kernel: an int for the pointer parameter", IllegalArgumentException.class,
                                () -> h.launch(c.addOne, Dim3.of(1), Dim3.of(64), 0, 7, n));
                        break;
                    default:
                        expect("kernel: a byte for the int parameter", IllegalArgumentException.class,
                                () -> h.launch(c.addOne, Dim3.of(1), Dim3.of(64), 0, b, (byte) 3));
                        break;
                }
                unchanged(h, b, data, "refused launches");
            }
        }

        private void invalidLaunchShape(Handle h) {
            int n = 64;
            float[] data = randomFloats(n);
            try (DeviceBuffer b = h.upload(data)) {
                switch (rnd.nextInt(4)) {
                    case 0:
                        expect("launch: grid 0", IllegalArgumentException.class, () -> h.launch(c.addOne, Dim3.of(0), Dim3.of(64), 0, b, n));
                        break;
                    case 1:
                        expect("launch: block 0", IllegalArgumentException.class, () -> h.launch(c.addOne, Dim3.of(1), Dim3.of(0), 0, b, n));
                        break;
                    case 2:
                        expect("launch: block of 2048 threads", IllegalArgumentException.class, () -> h.launch(c.addOne, Dim3.of(1), Dim3.of(2048), 0, b, n));
                        break;
                    default:
                        expect("launch: negative shared memory", IllegalArgumentException.class, () -> h.launch(c.addOne, Dim3.of(1), Dim3.of(64), -1, b, n));
                        break;
                }
                unchanged(h, b, data, "refused launch shapes");
            }
        }

        private void invalidMemsetAndCopy(Handle h) {
            int n = 16 + rnd.nextInt(64);
            float[] data = randomFloats(n);
            try (DeviceBuffer b = h.upload(data); DeviceBuffer small = h.upload(new float[n / 2])) {
                switch (rnd.nextInt(3)) {
                    case 0:
                        expect("memset value 256", IllegalArgumentException.class, () -> h.memset(b, 256));
                        break;
                    case 1:
                        expect("memset value -1", IllegalArgumentException.class, () -> h.memset(b, -1));
                        break;
                    default:
                        expect("copy into a smaller buffer", IllegalArgumentException.class, () -> h.copy(b, small));
                        break;
                }
                unchanged(h, b, data, "refused memset/copy");
                unchanged(h, small, new float[n / 2], "refused memset/copy (the small buffer)");
            }
        }

        private void invalidResultBuffers(Handle h) {
            float[] data = randomFloats(32);
            try (DeviceBuffer x = h.upload(data); DeviceBuffer r = h.upload(new byte[32])) {
                switch (rnd.nextInt(4)) {
                    case 0:
                        expect("device result: ddot at byte 4", IllegalArgumentException.class, () -> {
                            try (DeviceBuffer d = h.upload(new double[8])) {
                                Blas.ddot(h, 8, d, 1, d, 1, r.slice(4, 16));
                            }
                        });
                        break;
                    case 1:
                        expect("device result: isamax at byte 4", IllegalArgumentException.class, () -> Blas.isamax(h, 32, x, 1, r.slice(4, 16)));
                        break;
                    case 2:
                        expect("device result: sdot into 2 bytes", IllegalArgumentException.class, () -> Blas.sdot(h, 32, x, 1, x, 1, r.slice(8, 2)));
                        break;
                    default:
                        expect("device result: isamax into 4 bytes", IllegalArgumentException.class, () -> Blas.isamax(h, 32, x, 1, r.slice(8, 4)));
                        break;
                }
                unchanged(h, x, data, "refused device results");
                byte[] out = new byte[32];
                h.copyToHost(r, out, 0, 32);
                sameBytes("refused device results: the result buffer", new byte[32], out);
            }
        }

        private void invalidSlices(Handle h) {
            int bytes = 16 + rnd.nextInt(256);
            try (DeviceBuffer b = h.allocate(bytes)) {
                switch (rnd.nextInt(3)) {
                    case 0:
                        expect("slice: negative offset", IllegalArgumentException.class, () -> b.slice(-1 - rnd.nextInt(8), 4));
                        break;
                    case 1:
                        expect("slice: past the end", IllegalArgumentException.class, () -> b.slice(bytes - 3, 4));
                        break;
                    default:
                        expect("slice: longer than the buffer", IllegalArgumentException.class, () -> b.slice(0, bytes + 1));
                        break;
                }
            }
        }

        private void invalidNullBlasArguments(Handle h) {
            try (DeviceBuffer x = h.upload(randomFloats(16))) {
                switch (rnd.nextInt(3)) {
                    case 0:
                        expect("BLAS: null x", NullPointerException.class, () -> Blas.saxpy(h, 4, 1f, null, 1, x, 1));
                        break;
                    case 1:
                        expect("BLAS: null handle", NullPointerException.class, () -> Blas.sasum(null, 4, x, 1));
                        break;
                    default:
                        expect("BLAS: null result", NullPointerException.class, () -> Blas.snrm2(h, 4, x, 1, null));
                        break;
                }
            }
        }
    }
}
