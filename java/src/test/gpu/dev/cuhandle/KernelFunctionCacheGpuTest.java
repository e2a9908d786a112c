package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * A Kernel keeps its function ({@code cuKernelGetFunction}) for the context of its last launch
 * (Kernel.java). One kernel launched alternately through handles of two contexts must run in each
 * handle's own context every time: results are compared exactly with the CPU.
 */
@GpuTest
@StandInCapable // every launch is counted; buffers must come back unchanged
class KernelFunctionCacheGpuTest extends HandleGpuTestBase {
    private static final int N = 1024;
    private static final int ROUNDS = 25;

    @Test
    void oneKernel_alternatingBetweenTwoContexts_runsInEachHandlesContext() {
        long user = NativeTestApi.createContext(0);
        try {
            makeOnlyCurrent(0);
            try (Handle primary = Handle.create(0); Handle other = Handle.wrap(user)) {
                assertNotEquals(primary.contextId(), other.contextId(), "the two handles' contexts");
                Random random = new Random(0x6b66L);
                float[] xa = randomFloats(random, N);
                float[] xb = randomFloats(random, N);
                try (DeviceBuffer a = primary.upload(xa); DeviceBuffer b = other.upload(xb)) {
                    LaunchCount launches = new LaunchCount();
                    for (int r = 0; r < ROUNDS; r++) {
                        addOne(primary, a, N);
                        addOne(other, b, N);
                    }
                    launches.assertAccepted(2 * ROUNDS, "alternating launches");
                    float[] outA = new float[N];
                    float[] outB = new float[N];
                    a.download(outA);
                    b.download(outB);
                    assertExact(afterAddOnes(xa, ROUNDS), outA, "primary context's buffer after " + ROUNDS + " alternating launches");
                    assertExact(afterAddOnes(xb, ROUNDS), outB, "user context's buffer after " + ROUNDS + " alternating launches");
                }
            }
        } finally {
            destroyQuietly(user);
        }
    }
}
