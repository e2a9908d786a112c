package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import java.util.function.LongConsumer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The driver's own allocation churn in the JVM ({@link DriverProbeTestApi#churnInStreamOrder}),
 * which MemoryBenchmark takes turns with, each way: it runs the rounds asked for, times each,
 * leaves the caller's current context as it was, and leaves memory usable (a cuhandle buffer
 * allocated right after holds what is written to it).
 */
@GpuTest
@StandInCapable // the stand-in models cuMemAllocAsync for this loop
class DriverChurnLoopGpuTest {
    /** Runs {@code body} with device 0's primary context current and a stream of it, as MemoryBenchmark does. */
    private static void onAStreamOfThePrimary(LongConsumer body) {
        long primary = NativeTestApi.retainPrimary(0);
        long previous = NativeTestApi.currentContext();
        NativeTestApi.setCurrent(primary);
        long stream = NativeTestApi.streamCreate();
        try {
            body.accept(stream);
            assertEquals(primary, NativeTestApi.currentContext(), "the loop leaves the current context alone");
        } finally {
            NativeTestApi.streamDestroy(stream);
            NativeTestApi.setCurrent(previous);
            NativeTestApi.releasePrimary(0);
        }
    }

    @ParameterizedTest(name = "way {0}")
    @ValueSource(ints = {DriverProbeTestApi.C_LOOP, DriverProbeTestApi.CUHANDLES_POOL, DriverProbeTestApi.CONTEXT_ID_PER_CALL,
            DriverProbeTestApi.CUHANDLES_POOL | DriverProbeTestApi.CONTEXT_ID_PER_CALL})
    void runsEveryRoundOnTheCurrentContextsStream(int way) {
        int rounds = 37;
        try (Handle h = Handle.create(0)) {
            onAStreamOfThePrimary(stream -> {
                long[] nanos = DriverProbeTestApi.churnInStreamOrder(h, stream, 1 << 16, rounds, way);
                assertEquals(rounds, nanos.length, "one time per round");
                for (long n : nanos) {
                    assertTrue(n > 0 && n < 10_000_000_000L, "a round's nanoseconds, got " + n);
                }
                assertEquals(0, DriverProbeTestApi.churnInStreamOrder(h, stream, 1 << 16, -5, way).length, "negative rounds run none");
            });
            int[] data = new Random().ints(1000).toArray();
            try (DeviceBuffer b = h.upload(data)) {
                int[] back = new int[data.length];
                b.download(back);
                assertArrayEquals(data, back, "memory after the loop");
            }
        }
    }
}
