package dev.cuhandle.bench;

import dev.cuhandle.Blas;
import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.Event;
import dev.cuhandle.Handle;
import java.util.Arrays;
import java.util.Random;

/**
 * BLAS level 1 bandwidth and latency of cuhandle, printed as CSV lines
 * {@code impl,op,n,bytes,median_ms,gbps} in the format of tests/bench/cublas_l1.cu so that
 * tests/bench/report.py can put both side by side. Bytes count reads + writes. Reductions write
 * their result to device memory (like cuBLAS's device pointer mode), so no host wait is timed.
 * Usage: BlasBenchmark [log2 n for float, default 28]
 */
public final class BlasBenchmark {
    private static final int WARMUP = 3;
    private static final int REPS = 20;

    private BlasBenchmark() {}

    interface Op {
        void run();
    }

    public static void main(String[] args) {
        int log2 = args.length > 0 ? Integer.parseInt(args[0]) : 28;
        long nf = 1L << log2;
        long nd = nf / 2;
        try (Handle h = Handle.create(0)) {
            System.out.println("# cuhandle BLAS level 1 on " + h.device());
            try (DeviceBuffer x = random(h, nf * 4); DeviceBuffer y = random(h, nf * 4); DeviceBuffer r = h.allocate(8)) {
                float a = 1.0001f;
                row(h, "sscal", nf, 2 * nf * 4, () -> Blas.sscal(h, nf, a, x, 1));
                row(h, "saxpy", nf, 3 * nf * 4, () -> Blas.saxpy(h, nf, a, x, 1, y, 1));
                row(h, "sdot", nf, 2 * nf * 4, () -> Blas.sdot(h, nf, x, 1, y, 1, r));
                row(h, "snrm2", nf, nf * 4, () -> Blas.snrm2(h, nf, x, 1, r));
                row(h, "sasum", nf, nf * 4, () -> Blas.sasum(h, nf, x, 1, r));
                row(h, "isamax", nf, nf * 4, () -> Blas.isamax(h, nf, x, 1, r));
                row(h, "scopy", nf, 2 * nf * 4, () -> Blas.scopy(h, nf, x, 1, y, 1));
                row(h, "sswap", nf, 4 * nf * 4, () -> Blas.sswap(h, nf, x, 1, y, 1));
                double da = 1.0001;
                row(h, "dscal", nd, 2 * nd * 8, () -> Blas.dscal(h, nd, da, x, 1));
                row(h, "daxpy", nd, 3 * nd * 8, () -> Blas.daxpy(h, nd, da, x, 1, y, 1));
                row(h, "ddot", nd, 2 * nd * 8, () -> Blas.ddot(h, nd, x, 1, y, 1, r));
                row(h, "dnrm2", nd, nd * 8, () -> Blas.dnrm2(h, nd, x, 1, r));
                row(h, "dasum", nd, nd * 8, () -> Blas.dasum(h, nd, x, 1, r));
                row(h, "idamax", nd, nd * 8, () -> Blas.idamax(h, nd, x, 1, r));
                row(h, "dcopy", nd, 2 * nd * 8, () -> Blas.dcopy(h, nd, x, 1, y, 1));
                row(h, "dswap", nd, 4 * nd * 8, () -> Blas.dswap(h, nd, x, 1, y, 1));
                row(h, "d2d_copy_f32", nf, 2 * nf * 4, () -> h.copy(x, y));
            }
            latency(h);
        }
    }

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

    private static void row(Handle h, String op, long n, long bytes, Op body) {
        double[] ms = new double[REPS];
        try (Event start = h.createEvent(); Event end = h.createEvent()) {
            for (int i = 0; i < WARMUP; i++) {
                body.run();
            }
            h.synchronize();
            for (int i = 0; i < REPS; i++) {
                start.record(h);
                body.run();
                end.record(h);
                end.synchronize();
                ms[i] = end.elapsedSince(start);
            }
        }
        Arrays.sort(ms);
        double median = ms[REPS / 2];
        System.out.printf("cuhandle,%s,%d,%d,%.5f,%.1f%n", op, n, bytes, median, bytes / (median * 1e6));
    }

    /** Median µs per call of {@code body} over 5 runs of {@code calls} async calls and one wait. */
    private static double perCall(Handle h, int calls, Op body) {
        double[] us = new double[5];
        for (int run = 0; run < us.length; run++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < calls; i++) {
                body.run();
            }
            h.synchronize();
            us[run] = (System.nanoTime() - t0) / 1e3 / calls;
        }
        Arrays.sort(us);
        return us[us.length / 2];
    }

    /** saxpy n=1 per call (async, then one wait) and sdot n=1000 with the result on the host. */
    private static void latency(Handle h) {
        int calls = 100_000;
        try (DeviceBuffer x = h.upload(new float[1000]); DeviceBuffer y = h.upload(new float[1000])) {
            double[] us = new double[5];
            for (int run = 0; run < us.length; run++) {
                long t0 = System.nanoTime();
                for (int i = 0; i < calls; i++) {
                    Blas.saxpy(h, 1, 2f, x, 1, y, 1);
                }
                h.synchronize();
                us[run] = (System.nanoTime() - t0) / 1e3 / calls;
            }
            Arrays.sort(us);
            System.out.printf("cuhandle,saxpy1_latency,1,0,%.3f,0%n", us[us.length / 2]);
            // The same op as cuBLAS's figure, and with the context already current (no switch).
            System.out.printf("cuhandle,sscal1_latency,1,0,%.3f,0%n", perCall(h, calls, () -> Blas.sscal(h, 1, 2f, x, 1)));
            h.makeCurrent();
            System.out.printf("cuhandle,saxpy1_latency_context_current,1,0,%.3f,0%n", perCall(h, calls, () -> Blas.saxpy(h, 1, 2f, x, 1, y, 1)));
            int dots = 20_000;
            for (int run = 0; run < us.length; run++) {
                long t0 = System.nanoTime();
                float sink = 0;
                for (int i = 0; i < dots; i++) {
                    sink += Blas.sdot(h, 1000, x, 1, y, 1);
                }
                us[run] = (System.nanoTime() - t0) / 1e3 / dots;
                if (sink != 0) {
                    throw new AssertionError("zeros dot to zero");
                }
            }
            Arrays.sort(us);
            System.out.printf("cuhandle,sdot1000_host_latency,1000,0,%.3f,0%n", us[us.length / 2]);
        }
    }
}
