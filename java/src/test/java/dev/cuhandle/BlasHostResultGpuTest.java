package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Host results of reductions arrive in a per-handle pinned slot that the kernel writes and signals
 * (rust/src/core/host_result.rs). Checks that results never mix up between threads that share one
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

    private static void assertClose(String what, double expected, double got, double tolerance, String seed) {
        assertTrue(Math.abs(expected - got) <= tolerance, what + ": expected " + expected + " +- " + tolerance + ", got " + got + seed);
    }
}
