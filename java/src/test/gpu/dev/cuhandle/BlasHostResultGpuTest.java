package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;

/**
 * Host results of reductions arrive in a per-handle pinned slot that the kernel writes as a flagged
 * packet (rust/src/core/host_result.rs). Checks that results never mix up between threads that share one
 * handle, or whose handles share a stream of the context's pool, and that a result queued behind
 * long work (so that the host stops spinning and blocks in the driver) is still the right one.
 * Every value is compared with a CPU reference on random data; the seed is in the messages.
 */
@GpuTest
class BlasHostResultGpuTest extends HandleGpuTestBase {
    private static final long SEED = System.nanoTime();
    private static final int N = 1000;

    /** One thread's data: its own random x and y, with CPU references. */
    private static final class Data {
        final float[] x;
        final float[] y;
        final double dot;
        final double asum;
        final long iamax;

        Data(Random random) {
            x = new float[N];
            y = new float[N];
            for (int i = 0; i < N; i++) {
                x[i] = (float) (random.nextGaussian() * 10);
                y[i] = (float) random.nextGaussian();
            }
            double d = 0;
            double a = 0;
            long best = 0;
            for (int i = 0; i < N; i++) {
                d += (double) x[i] * y[i];
                a += Math.abs(x[i]);
                if (Math.abs(x[i]) > Math.abs(x[(int) best])) {
                    best = i;
                }
            }
            dot = d;
            asum = a;
            iamax = best + 1;
        }
    }

    @Test
    void hostResults_neverMixUpBetweenThreadsHandlesAndPoolStreams() throws Exception {
        int threads = 6;
        int rounds = 300;
        String seed = " (seed " + SEED + ")";
        try (Handle shared = Handle.create(0)) {
            List<Data> data = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                data.add(new Data(new Random(SEED + t)));
            }
            List<String> results = onFreshThreads("host-results", threads, t -> {
                Data d = data.get(t);
                // More handles than the pool has streams, so some share a stream with another thread's.
                try (Handle own = Handle.create(0); DeviceBuffer x = shared.allocate(4L * N); DeviceBuffer y = shared.allocate(4L * N)) {
                    x.upload(d.x);
                    y.upload(d.y);
                    shared.synchronize();
                    float firstDot = Blas.sdot(own, N, x, 1, y, 1);
                    assertClose("thread " + t + " sdot", d.dot, firstDot, 1e-5 * (Math.abs(d.dot) + d.asum) + 1e-6, seed);
                    for (int r = 0; r < rounds; r++) {
                        Handle h = r % 2 == 0 ? shared : own;
                        String where = "thread " + t + " round " + r + (h == shared ? " (shared handle)" : " (own handle)") + seed;
                        assertEquals(firstDot, Blas.sdot(h, N, x, 1, y, 1), "sdot, " + where);
                        assertEquals(d.iamax, Blas.isamax(h, N, x, 1), "isamax, " + where);
                        assertClose("sasum, " + where, d.asum, Blas.sasum(h, N, x, 1), 1e-6 * d.asum, "");
                    }
                    return "ok";
                }
            });
            assertEquals(threads, results.size());
        }
    }

    @Test
    void hostResult_behindLongWork_isStillTheRightOne() throws Exception {
        Data d = new Data(new Random(SEED));
        String seed = " (seed " + SEED + ")";
        try (Handle h = Handle.create(0); DeviceBuffer x = h.allocate(4L * N); DeviceBuffer y = h.allocate(4L * N)) {
            x.upload(d.x);
            y.upload(d.y);
            float quick = Blas.sdot(h, N, x, 1, y, 1);
            // 20 ms of work ahead: far past the host's spin budget, so it blocks in the driver.
            spin(h, 0.02);
            long t0 = System.nanoTime();
            float behind = Blas.sdot(h, N, x, 1, y, 1);
            double waitedMs = (System.nanoTime() - t0) / 1e6;
            assertEquals(quick, behind, "sdot behind 20 ms of work" + seed);
            assertTrue(waitedMs >= 10, "sdot waited only " + waitedMs + " ms for 20 ms of work queued before it on its stream");
            spin(h, 0.02);
            assertEquals(d.iamax, Blas.isamax(h, N, x, 1), "isamax behind 20 ms of work" + seed);
        }
    }

    @Test
    void hostResult_reflectsEarlierWorkOnItsStream() {
        Data d = new Data(new Random(SEED ^ 0x5ca1eL));
        String seed = " (seed " + SEED + ")";
        try (Handle h = Handle.create(0); DeviceBuffer x = h.allocate(4L * N)) {
            x.upload(d.x);
            float asum = Blas.sasum(h, N, x, 1);
            assertClose("sasum", d.asum, asum, 1e-6 * d.asum, seed);
            for (int k = 1; k <= 20; k++) {
                // Doubling is exact in float and in the double sum, so each result is exactly twice the last.
                Blas.sscal(h, N, 2f, x, 1);
                float doubled = Blas.sasum(h, N, x, 1);
                assertEquals(asum * 2f, doubled, "sasum right after sscal by 2, step " + k + seed);
                asum = doubled;
            }
        }
    }

    /**
     * The host result is the packet the kernel wrote (its two 32-bit halves put back together): it has
     * the same bits as the same reduction's device result, for float, double and index results, for
     * one-block grids (n up to a few thousand) and multi-block ones, negative results (sign bit in the
     * high half of a double) included; an iamax whose x_1 is NaN gives 1 both ways.
     */
    @Test
    void hostResults_haveTheBitsOfDeviceResults() {
        Random random = new Random(SEED ^ 0xb175L);
        String seed = " (seed " + SEED + ")";
        int max = 300_007;
        try (Handle h = Handle.create(0); DeviceBuffer x = h.allocate(8L * max); DeviceBuffer y = h.allocate(8L * max);
             DeviceBuffer r = h.allocate(8)) {
            for (int n : new int[] {1, 7, 1000, 4099, max}) {
                float[] xf = new float[n];
                float[] yf = new float[n];
                double[] xd = new double[n];
                double[] yd = new double[n];
                for (int i = 0; i < n; i++) {
                    xf[i] = (float) (random.nextGaussian() * 1e3);
                    yf[i] = (float) (random.nextGaussian() - 0.3); // dot results of either sign
                    xd[i] = random.nextGaussian() * 1e-3;
                    yd[i] = -Math.abs(random.nextGaussian()); // a negative ddot
                }
                String at = " at n=" + n + seed;
                for (boolean dbl : new boolean[] {false, true}) {
                    if (dbl) {
                        x.upload(xd);
                        y.upload(yd);
                    } else {
                        x.upload(xf);
                        y.upload(yf);
                    }
                    String p = dbl ? "d" : "s";
                    sameBits(p + "dot" + at, r, dbl,
                            either(dbl, () -> Blas.ddot(h, n, x, 1, y, 1, r), () -> Blas.sdot(h, n, x, 1, y, 1, r)),
                            () -> dbl ? bits(Blas.ddot(h, n, x, 1, y, 1)) : bits(Blas.sdot(h, n, x, 1, y, 1)));
                    sameBits(p + "nrm2" + at, r, dbl,
                            either(dbl, () -> Blas.dnrm2(h, n, x, 1, r), () -> Blas.snrm2(h, n, x, 1, r)),
                            () -> dbl ? bits(Blas.dnrm2(h, n, x, 1)) : bits(Blas.snrm2(h, n, x, 1)));
                    sameBits(p + "asum" + at, r, dbl,
                            either(dbl, () -> Blas.dasum(h, n, x, 1, r), () -> Blas.sasum(h, n, x, 1, r)),
                            () -> dbl ? bits(Blas.dasum(h, n, x, 1)) : bits(Blas.sasum(h, n, x, 1)));
                    Runnable amaxToDevice = either(dbl, () -> Blas.idamax(h, n, x, 1, r), () -> Blas.isamax(h, n, x, 1, r));
                    LongSupplier amax = () -> dbl ? Blas.idamax(h, n, x, 1) : Blas.isamax(h, n, x, 1);
                    amaxToDevice.run();
                    assertEquals(deviceLong(r), amax.getAsLong(), "i" + p + "amax" + at);
                    if (dbl) {
                        x.upload(new double[] {Double.NaN});
                    } else {
                        x.upload(new float[] {Float.NaN});
                    }
                    amaxToDevice.run();
                    assertEquals(1L, deviceLong(r), "i" + p + "amax, x_1 NaN, device result" + at);
                    assertEquals(1L, amax.getAsLong(), "i" + p + "amax, x_1 NaN" + at);
                }
            }
        }
    }

    /** Runs a reduction into {@code r} and to the host, and checks that both results have the same bits. */
    private static void sameBits(String what, DeviceBuffer r, boolean dbl, Runnable toDevice, LongSupplier hostBits) {
        toDevice.run();
        long device = dbl ? deviceDouble(r) : deviceFloat(r);
        assertEquals(device, hostBits.getAsLong(), what);
    }

    private static Runnable either(boolean dbl, Runnable doubles, Runnable floats) {
        return dbl ? doubles : floats;
    }

    private static long bits(float v) {
        return Float.floatToRawIntBits(v);
    }

    private static long bits(double v) {
        return Double.doubleToRawLongBits(v);
    }

    private static int deviceFloat(DeviceBuffer r) {
        float[] v = new float[1];
        r.download(v);
        return Float.floatToRawIntBits(v[0]);
    }

    private static long deviceDouble(DeviceBuffer r) {
        double[] v = new double[1];
        r.download(v);
        return Double.doubleToRawLongBits(v[0]);
    }

    private static long deviceLong(DeviceBuffer r) {
        long[] v = new long[1];
        r.download(v);
        return v[0];
    }

    private static void assertClose(String what, double expected, double got, double tolerance, String seed) {
        assertTrue(Math.abs(expected - got) <= tolerance, what + ": expected " + expected + " +- " + tolerance + ", got " + got + seed);
    }
}
