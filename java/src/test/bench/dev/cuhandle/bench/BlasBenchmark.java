package dev.cuhandle.bench;

import dev.cuhandle.Blas;
import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.Event;
import dev.cuhandle.Handle;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;

/**
 * BLAS level 1 of cuhandle at every power-of-two size, measured exactly as tests/bench/cublas_l1.cu
 * measures cuBLAS (same sizes, batching and time box), plus the latency of reductions whose result
 * goes to the host. Prints CSV rows {@code impl,group,name,n,value,unit} for tests/bench/report.py:
 * <ul>
 *   <li>{@code cuhandle,blas,<op>,<n>,<us per call>,us}: the 16 routines; reductions write their result
 *       to device memory (like cuBLAS's device pointer mode), so no host wait is timed. Per call time is
 *       a batch of back-to-back calls between two events divided by the batch size (about 2 ms per batch:
 *       the issue rate at small n, one call at large n), the median of 5-15 batches (as many as fit into
 *       about 30 ms);</li>
 *   <li>{@code cuhandle,blas_host,<op>,1000,<us per call>,us}: sdot, ddot, snrm2, sasum, isamax at
 *       n = 1000 returning the result to Java, median of 5 runs of 2,000 calls.</li>
 * </ul>
 * Usage: {@code BlasBenchmark [log2 n min, default 10] [log2 n max, default 28]}.
 */
public final class BlasBenchmark {
    /** The time box, identical to cublas_l1.cu's. */
    private static final double BATCH_MS = 2.0;
    private static final int MAX_BATCH = 2000;
    private static final double POINT_MS = 30.0;
    private static final int MIN_REPS = 5;
    private static final int MAX_REPS = 15;
    /** Calls per routine in {@link #warmUp}: enough for C2 with margin, about 70 ms per routine. */
    private static final int WARM_UP_CALLS = 20_000;

    private BlasBenchmark() {}

    /** One routine at size {@code n} (elements) on the benchmark's vectors. */
    interface SizedOp {
        void run(long n);
    }

    /** Runs the sweep and the host-result latencies; prints CSV rows on stdout. */
    public static void main(String[] args) {
        BenchSupport.requireGpu("BlasBenchmark");
        int lo = args.length > 0 ? Integer.parseInt(args[0]) : 10;
        int hi = args.length > 1 ? Integer.parseInt(args[1]) : 28;
        if (lo < 0 || hi > 30 || lo > hi) {
            throw new IllegalArgumentException("usage: BlasBenchmark [log2 n min 0..30] [log2 n max, >= min, <= 30]; got " + lo + " " + hi);
        }
        try (Handle h = Handle.create(0)) {
            System.out.println("# cuhandle BLAS level 1 on " + h.device());
            long maxBytes = 8L << hi; // doubles: room for both precisions
            try (DeviceBuffer pristine = random(h, maxBytes); DeviceBuffer x = h.allocate(maxBytes); DeviceBuffer y = h.allocate(maxBytes);
                 DeviceBuffer r = h.allocate(8); Event start = h.createEvent(); Event end = h.createEvent()) {
                Map<String, SizedOp> routines = routines(h, x, y, r);
                warmUp(h, routines, pristine, x, y);
                hostLatency(h);
                for (Map.Entry<String, SizedOp> op : routines.entrySet()) {
                    for (int log2 = lo; log2 <= hi; log2++) {
                        long n = 1L << log2;
                        // Fresh data for every routine and size, so repeated scal/axpy/swap stay in range.
                        long bytes = n * elementBytes(op.getKey());
                        h.copy(pristine.slice(0, bytes), x.slice(0, bytes));
                        h.copy(pristine.slice(maxBytes - bytes, bytes), y.slice(0, bytes));
                        try {
                            double us = usPerCall(h, start, end, () -> op.getValue().run(n));
                            System.out.printf("cuhandle,blas,%s,%d,%.4f,us%n", op.getKey(), n, us);
                        } catch (RuntimeException e) { // a bad point must not cost the rest of the one device run
                            System.out.println("# " + op.getKey() + " n=" + n + " failed: " + e);
                        }
                    }
                }
            }
        }
    }

    /**
     * Untimed calls until the JIT has compiled the Java side of every call path (C2 compiles a method
     * after about 10,000 invocations): without this the first routine's small sizes, measured while
     * the JIT still works, look slower per call than the same calls later (docs/measurements.md). C
     * has no such phase, so this is the steady state both sides are compared in.
     */
    private static void warmUp(Handle h, Map<String, SizedOp> routines, DeviceBuffer pristine, DeviceBuffer x, DeviceBuffer y) {
        long n = 1024;
        h.copy(pristine.slice(0, 8 * n), x.slice(0, 8 * n));
        h.copy(pristine.slice(0, 8 * n), y.slice(0, 8 * n));
        for (SizedOp op : routines.values()) {
            for (int i = 0; i < WARM_UP_CALLS; i++) {
                op.run(n);
            }
            h.synchronize();
        }
    }

    /** The 16 routines, float and double of each family; alpha close to 1 keeps thousands of repeats in range. */
    private static Map<String, SizedOp> routines(Handle h, DeviceBuffer x, DeviceBuffer y, DeviceBuffer r) {
        Map<String, SizedOp> ops = new LinkedHashMap<>();
        float a = 0.999f;
        double da = 0.999;
        both(ops, "scal", n -> Blas.sscal(h, n, a, x, 1), n -> Blas.dscal(h, n, da, x, 1));
        both(ops, "axpy", n -> Blas.saxpy(h, n, a, x, 1, y, 1), n -> Blas.daxpy(h, n, da, x, 1, y, 1));
        both(ops, "dot", n -> Blas.sdot(h, n, x, 1, y, 1, r), n -> Blas.ddot(h, n, x, 1, y, 1, r));
        both(ops, "nrm2", n -> Blas.snrm2(h, n, x, 1, r), n -> Blas.dnrm2(h, n, x, 1, r));
        both(ops, "asum", n -> Blas.sasum(h, n, x, 1, r), n -> Blas.dasum(h, n, x, 1, r));
        both(ops, "amax", n -> Blas.isamax(h, n, x, 1, r), n -> Blas.idamax(h, n, x, 1, r));
        both(ops, "copy", n -> Blas.scopy(h, n, x, 1, y, 1), n -> Blas.dcopy(h, n, x, 1, y, 1));
        both(ops, "swap", n -> Blas.sswap(h, n, x, 1, y, 1), n -> Blas.dswap(h, n, x, 1, y, 1));
        return ops;
    }

    /** Adds the float and the double routine of a family under their BLAS names (isamax for amax). */
    private static void both(Map<String, SizedOp> ops, String family, SizedOp single, SizedOp dbl) {
        String prefix = family.equals("amax") ? "i" : "";
        ops.put(prefix + "s" + family, single);
        ops.put(prefix + "d" + family, dbl);
    }

    /** 8 for the double routines (d..., id...), 4 for the float ones. */
    static int elementBytes(String routine) {
        return routine.charAt(routine.startsWith("i") ? 1 : 0) == 'd' ? 8 : 4;
    }

    /** Random values in [-1, 1) (as floats; read as doubles they are finite and of varied magnitude). */
    private static DeviceBuffer random(Handle h, long bytes) {
        DeviceBuffer b = h.allocate(bytes);
        float[] chunk = new float[1 << 22];
        Random rnd = new Random(42);
        for (int i = 0; i < chunk.length; i++) {
            chunk[i] = rnd.nextFloat() * 2 - 1;
        }
        long floats = bytes / 4;
        for (long at = 0; at < floats; at += chunk.length) {
            int len = (int) Math.min(chunk.length, floats - at);
            h.copyToDevice(chunk, 0, b.slice(at * 4, (long) len * 4), len);
        }
        return b;
    }

    /**
     * Median µs per call of {@code body}: a 10-call probe sizes the batch (about {@link #BATCH_MS} of
     * back-to-back calls between two events) and the number of timed batches; one untimed batch warms up.
     * The same algorithm as cublas_l1.cu's {@code us_per_call}.
     */
    static double usPerCall(Handle h, Event start, Event end, Runnable body) {
        body.run();
        start.record(h);
        for (int i = 0; i < 10; i++) {
            body.run();
        }
        end.record(h);
        end.synchronize();
        double probeMs = Math.max(end.elapsedSince(start) / 10.0, 1e-4);
        int batch = clamp((int) (BATCH_MS / probeMs), 1, MAX_BATCH);
        int reps = clamp((int) (POINT_MS / (batch * probeMs)), MIN_REPS, MAX_REPS);
        for (int i = 0; i < batch; i++) {
            body.run();
        }
        double[] us = new double[reps];
        for (int rep = 0; rep < reps; rep++) {
            start.record(h);
            for (int i = 0; i < batch; i++) {
                body.run();
            }
            end.record(h);
            end.synchronize();
            us[rep] = end.elapsedSince(start) * 1e3 / batch;
        }
        Arrays.sort(us);
        return us[reps / 2];
    }

    private static int clamp(int v, int lo, int hi) {
        return Math.max(lo, Math.min(hi, v));
    }

    /** A reduction whose result comes back to Java; returns it so that the JIT cannot drop the call. */
    interface HostReduction {
        double run();
    }

    /** Median over 5 runs of µs per call, each run {@code calls} calls that each wait for their result. */
    static double hostLatencyUs(int calls, HostReduction call) {
        double sink = 0;
        for (int i = 0; i < 5_000; i++) { // the JIT compiles this reduction's path first (see warmUp)
            sink += call.run();
        }
        double[] us = new double[5];
        for (int run = 0; run < us.length; run++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < calls; i++) {
                sink += call.run();
            }
            us[run] = (System.nanoTime() - t0) / 1e3 / calls;
        }
        if (Double.isNaN(sink)) {
            throw new AssertionError("a reduction of finite data returned NaN");
        }
        Arrays.sort(us);
        return us[us.length / 2];
    }

    /** sdot, ddot, snrm2, sasum, isamax at n = 1000 with the result on the host, as cuBLAS's host pointer mode. */
    private static void hostLatency(Handle h) {
        int n = 1000;
        int calls = 2000;
        try (DeviceBuffer x = random(h, 8L * n); DeviceBuffer y = random(h, 8L * n)) {
            Map<String, HostReduction> ops = new LinkedHashMap<>();
            ops.put("sdot", () -> Blas.sdot(h, n, x, 1, y, 1));
            ops.put("ddot", () -> Blas.ddot(h, n, x, 1, y, 1));
            ops.put("snrm2", () -> Blas.snrm2(h, n, x, 1));
            ops.put("sasum", () -> Blas.sasum(h, n, x, 1));
            ops.put("isamax", () -> Blas.isamax(h, n, x, 1));
            for (Map.Entry<String, HostReduction> op : ops.entrySet()) {
                System.out.printf("cuhandle,blas_host,%s,%d,%.4f,us%n", op.getKey(), n, hostLatencyUs(calls, op.getValue()));
            }
        }
    }
}
