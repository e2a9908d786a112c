package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * BLAS calls in a CUDA graph (needs a real GPU: kernels do not execute on the stand-in): a captured
 * chain of saxpy/sscal/scopy and a device-result sdot replays to the results of the same direct
 * calls, bit for bit, and of a CPU reference, on fresh random data for every replay.
 */
@GpuTest
class GraphBlasGpuTest extends KernelGpuTestBase {
    private static final int N = 10_000;

    /** Integers in [-64, 64]: every product and sum below is exact in float, so the CPU reference is exact. */
    private static float[] smallIntegers(Random random, int n) {
        float[] values = new float[n];
        for (int i = 0; i < n; i++) {
            values[i] = random.nextInt(129) - 64;
        }
        return values;
    }

    private static void chain(Handle h, DeviceBuffer x, DeviceBuffer y, DeviceBuffer z, DeviceBuffer dot) {
        Blas.saxpy(h, N, 2f, x, 1, y, 1); // y = 2x + y
        Blas.sscal(h, N, 0.5f, y, 1); // y = y / 2
        Blas.scopy(h, N, y, 1, z, 1); // z = y
        Blas.saxpy(h, N, -1f, x, 1, z, 1); // z = y - x
        Blas.sdot(h, N, x, 1, z, 1, dot); // dot = x . z, on the device
    }

    @Test
    void capturedBlasChainMatchesDirectCallsAndTheCpu() {
        long seed = System.nanoTime();
        Random random = new Random(seed);
        try (Handle h = Handle.create(0); DeviceBuffer x = h.allocate(4L * N); DeviceBuffer y = h.allocate(4L * N);
                DeviceBuffer z = h.allocate(4L * N); DeviceBuffer dot = h.allocate(4); DeviceBuffer zDirect = h.allocate(4L * N);
                DeviceBuffer yDirect = h.allocate(4L * N); DeviceBuffer dotDirect = h.allocate(4)) {
            h.memset(x, 0);
            chain(h, x, yDirect, zDirect, dotDirect); // loads the kernels in this context before the capture
            try (Graph g = h.capture(() -> chain(h, x, y, z, dot))) {
                assertEquals(true, g.nodeCount() >= 5, "nodes: " + g.nodeCount());
                for (int round = 0; round < 10; round++) {
                    float[] xs = smallIntegers(random, N);
                    float[] ys = smallIntegers(random, N);
                    x.upload(xs);
                    y.upload(ys);
                    yDirect.upload(ys);
                    g.launch(h);
                    chain(h, x, yDirect, zDirect, dotDirect);
                    float[] expectedY = new float[N];
                    float[] expectedZ = new float[N];
                    double expectedDot = 0;
                    for (int i = 0; i < N; i++) {
                        expectedY[i] = (2 * xs[i] + ys[i]) * 0.5f;
                        expectedZ[i] = expectedY[i] - xs[i];
                        expectedDot += (double) xs[i] * expectedZ[i];
                    }
                    String where = " (round " + round + ", seed " + seed + ")";
                    float[] got = new float[N];
                    float[] direct = new float[N];
                    y.download(got);
                    yDirect.download(direct);
                    assertArrayEquals(direct, got, "y: graph vs direct" + where);
                    assertArrayEquals(expectedY, got, "y: graph vs CPU" + where);
                    z.download(got);
                    zDirect.download(direct);
                    assertArrayEquals(direct, got, "z: graph vs direct" + where);
                    assertArrayEquals(expectedZ, got, "z: graph vs CPU" + where);
                    float[] d = new float[1];
                    float[] dd = new float[1];
                    dot.download(d);
                    dotDirect.download(dd);
                    assertEquals(Float.floatToIntBits(dd[0]), Float.floatToIntBits(d[0]), "dot: graph vs direct" + where);
                    assertEquals((float) expectedDot, d[0], "dot: graph vs CPU (exact integers)" + where);
                }
            }
        }
    }
}
