package dev.cuhandle;

import static dev.cuhandle.BlasTestSupport.assertClose;
import static dev.cuhandle.BlasTestSupport.random;
import static dev.cuhandle.BlasTestSupport.where;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cuhandle.BlasReference.Neumaier;
import dev.cuhandle.BlasTestSupport.Prec;
import dev.cuhandle.BlasTestSupport.ResultSlot;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * n = 2^28 floats (1 GiB per vector; 2 GiB of device memory, about 2 GiB of Java heap), unit
 * stride: saxpy, sdot, snrm2, sasum and isamax (host- and device-result variants) against the
 * double-precision reference, then NaN propagation at that size. Only a few float operations run
 * at this size to stay inside the time and memory budget; the full matrix runs at 2^20+7 in
 * {@link BlasGpuTest}.
 *
 * <p>Data: x and y uniform on the multiples of 2^-23 in [-1, 2), so that sums do not cancel
 * (dot is about a third of the sum of |x_i*y_i|): the tolerances of {@link BlasReference} (a few
 * float ulps plus n*eps_double times the sum of magnitudes, here 2^28 * 2^-53 = 3e-8 of it) then
 * bound the relative error to a few 1e-7. isamax: 3*2^23 possible values, so the largest
 * magnitude occurs about 10 times and the first of them must be found.
 */
@GpuTest
class BlasLargeGpuTest {
    private static final int N = 1 << 28;
    private static final int CHUNK = 1 << 22;
    private static final int CHUNKS = N / CHUNK;

    @Test
    void float2pow28_axpyDotNrm2AsumIamax() {
        BlasTestSupport.announceSeed(BlasLargeGpuTest.class.getSimpleName());
        long neededHeap = 5L << 29; // x and y (2 GiB) plus a 16 MiB download chunk, with slack
        if (Runtime.getRuntime().maxMemory() < neededHeap) {
            String why = "BlasLargeGpuTest needs about " + (neededHeap >> 30) + " GiB of Java heap; -Xmx is " + (Runtime.getRuntime().maxMemory() >> 20) + " MiB";
            if (Boolean.getBoolean(GpuCondition.REQUIRE_GPU)) {
                throw new AssertionError(why);
            }
            Assumptions.assumeTrue(false, why);
        }
        String name = "large n=2^28";
        long seed = random(name).nextLong();
        float[] x = new float[N];
        float[] y = new float[N];
        IntStream.range(0, CHUNKS).parallel().forEach(c -> {
            SplittableRandom r = new SplittableRandom(seed + 0x9E3779B97F4A7C15L * c);
            for (int i = c * CHUNK, end = i + CHUNK; i < end; i++) {
                // multiples of 2^-23 in [-1, 2) (integers below 2^24 times a power of two: exact)
                x[i] = (r.nextInt(3 << 23) - (1 << 23)) * 0x1p-23f;
                y[i] = (r.nextInt(3 << 23) - (1 << 23)) * 0x1p-23f;
            }
        });
        float alpha = (float) (0.5 + random(name + "/alpha").nextDouble());

        try (Handle h = Handle.create(0); DeviceBuffer bx = h.upload(x); DeviceBuffer by = h.upload(y)) {
            // ---- reductions on the original data
            double[] dot = reduceChunks(c -> {
                Neumaier s = new Neumaier();
                double abs = 0;
                for (int i = c * CHUNK, end = i + CHUNK; i < end; i++) {
                    double p = (double) x[i] * y[i]; // exact: 24+24 bits
                    s.add(p);
                    abs += Math.abs(p);
                }
                return new double[] {s.value(), abs};
            });
            double dotTol = BlasReference.sumTolerance(true, N, dot[0], dot[1]);
            double sdot = Blas.sdot(h, N, bx, 1, by, 1);
            assertClose("sdot(2^28)", dot[0], sdot, dotTol, name);
            assertEquals(sdot, deviceReal(h, slot -> Blas.sdot(h, N, bx, 1, by, 1, slot.view), name), "sdot device result" + where(name));

            double[] sq = reduceChunks(c -> {
                Neumaier s = new Neumaier();
                Neumaier a = new Neumaier();
                for (int i = c * CHUNK, end = i + CHUNK; i < end; i++) {
                    s.add((double) x[i] * x[i]); // exact
                    a.add(Math.abs((double) x[i]));
                }
                return new double[] {s.value(), a.value()};
            });
            double nrm2 = Math.sqrt(sq[0]);
            double snrm2 = Blas.snrm2(h, N, bx, 1);
            assertClose("snrm2(2^28)", nrm2, snrm2, BlasReference.nrm2Tolerance(true, N, nrm2), name);
            assertEquals(snrm2, deviceReal(h, slot -> Blas.snrm2(h, N, bx, 1, slot.view), name), "snrm2 device result" + where(name));
            double sasum = Blas.sasum(h, N, bx, 1);
            assertClose("sasum(2^28)", sq[1], sasum, BlasReference.sumTolerance(true, N, sq[1], sq[1]), name);
            assertEquals(sasum, deviceReal(h, slot -> Blas.sasum(h, N, bx, 1, slot.view), name), "sasum device result" + where(name));

            long expectedMax = firstMaxAbs(x) + 1;
            int ties = countAbs(x, Math.abs(x[(int) expectedMax - 1]));
            assertEquals(expectedMax, Blas.isamax(h, N, bx, 1), "isamax(2^28) (the largest |x| occurs " + ties + " times)" + where(name));
            assertEquals(expectedMax, deviceLong(h, slot -> Blas.isamax(h, N, bx, 1, slot.view), name), "isamax device result" + where(name));

            // ---- saxpy: every element within 1 ulp of the fused result (see BlasReference.axpyAccepts)
            Blas.saxpy(h, N, alpha, bx, 1, by, 1);
            float[] chunk = new float[CHUNK];
            long mismatches = 0;
            String firstMismatch = null;
            for (int c = 0; c < CHUNKS; c++) {
                int off = c * CHUNK;
                h.copyToHost(by.slice(4L * off, 4L * CHUNK), chunk, 0, CHUNK);
                for (int i = 0; i < CHUNK; i++) {
                    float g = chunk[i];
                    float e = (float) ((double) alpha * x[off + i] + y[off + i]);
                    if (g != e && !BlasReference.axpyAccepts(true, alpha, x[off + i], y[off + i], g)) {
                        if (mismatches++ == 0) {
                            firstMismatch = "element " + (off + i) + ": " + g + ", expected " + alpha + " * " + x[off + i] + " + " + y[off + i] + " = " + e;
                        }
                    }
                }
            }
            assertEquals(0, mismatches, "saxpy(2^28): " + mismatches + " elements more than 1 ulp from the fused result; first " + firstMismatch + where(name));

            // ---- NaN at 2^28: planted at a random element that is not the maximum
            SplittableRandom rnd = random(name + "/nan");
            int q;
            do {
                q = 1 + rnd.nextInt(N - 1);
            } while (q == expectedMax - 1);
            h.copyToDevice(new float[] {Float.NaN}, 0, bx.slice(4L * q, 4), 1);
            assertEquals(expectedMax, Blas.isamax(h, N, bx, 1), "isamax never picks a NaN that is not first (NaN at element " + (q + 1) + ")" + where(name));
            assertTrue(Float.isNaN(Blas.snrm2(h, N, bx, 1)), "snrm2 with a NaN at element " + (q + 1) + where(name));
            assertTrue(Float.isNaN(Blas.sasum(h, N, bx, 1)), "sasum with a NaN at element " + (q + 1) + where(name));
            assertTrue(Float.isNaN(Blas.sdot(h, N, bx, 1, by, 1)), "sdot with a NaN at element " + (q + 1) + where(name));
            h.copyToDevice(new float[] {Float.NaN}, 0, bx.slice(0, 4), 1);
            assertEquals(1L, Blas.isamax(h, N, bx, 1), "isamax with x_1 NaN is 1" + where(name));
            assertEquals(1L, deviceLong(h, slot -> Blas.isamax(h, N, bx, 1, slot.view), name), "isamax device result with x_1 NaN" + where(name));
        }
    }

    interface ChunkSum {
        double[] apply(int chunk);
    }

    /** Sums per-chunk results (parallel), combining them with compensated summation. */
    private static double[] reduceChunks(ChunkSum f) {
        double[][] parts = IntStream.range(0, CHUNKS).parallel().mapToObj(f::apply).toArray(double[][]::new);
        double[] out = new double[parts[0].length];
        for (int k = 0; k < out.length; k++) {
            Neumaier s = new Neumaier();
            for (double[] part : parts) {
                s.add(part[k]);
            }
            out[k] = s.value();
        }
        return out;
    }

    private static long firstMaxAbs(float[] x) {
        int[] best = IntStream.range(0, CHUNKS).parallel().map(c -> {
            int b = c * CHUNK;
            float max = Math.abs(x[b]);
            for (int i = b + 1, end = b + CHUNK; i < end; i++) {
                if (Math.abs(x[i]) > max) {
                    max = Math.abs(x[i]);
                    b = i;
                }
            }
            return b;
        }).toArray();
        int b = best[0];
        for (int c = 1; c < CHUNKS; c++) {
            if (Math.abs(x[best[c]]) > Math.abs(x[b])) {
                b = best[c];
            }
        }
        return b;
    }

    private static int countAbs(float[] x, float value) {
        return IntStream.range(0, CHUNKS).parallel().map(c -> {
            int count = 0;
            for (int i = c * CHUNK, end = i + CHUNK; i < end; i++) {
                if (Math.abs(x[i]) == value) {
                    count++;
                }
            }
            return count;
        }).sum();
    }

    interface SlotCall {
        void run(ResultSlot slot);
    }

    private static double deviceReal(Handle h, SlotCall call, String name) {
        try (ResultSlot slot = new ResultSlot(h, 4)) {
            call.run(slot);
            return slot.readReal(Prec.S, name);
        }
    }

    private static long deviceLong(Handle h, SlotCall call, String name) {
        try (ResultSlot slot = new ResultSlot(h, 8)) {
            call.run(slot);
            return slot.readLong(name);
        }
    }
}
