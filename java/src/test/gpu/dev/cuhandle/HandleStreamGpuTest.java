package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Rule H9: each handle owns a non-blocking stream; setStream accepts a raw {@code CUstream} of the
 * handle's context (interop, like cublasSetStream) and work is ordered on it; a stream of another
 * context is rejected.
 */
@GpuTest
@StandInCapable // spin() occupies the raw stream in simulated time; add-one checks count launches
class HandleStreamGpuTest extends HandleGpuTestBase {
    private final Random random = new Random(0x4839L);

    @Test
    void h9_eachHandleOwnsItsStream() {
        try (Handle a = Handle.create(0); Handle b = Handle.create(0)) {
            long sa = a.stream();
            long sb = b.stream();
            assertNotEquals(0L, sa, "H9: the default stream of a handle is its own, not the legacy stream 0");
            assertTrue(sa > 2, "H9: the own stream is a real stream, not CU_STREAM_LEGACY/PER_THREAD: " + hex(sa));
            assertNotEquals(sa, sb, "H9: two handles have different streams");
            assertEquals(sa, a.stream(), "stream() is stable");
            checkAddOne(a, random, 1000, 2, "H9: work on a's own stream");
            checkAddOne(b, random, 1000, 2, "H9: work on b's own stream");
        }
    }

    /**
     * Work after setStream(raw) goes to that raw stream: handle a queues a long spin then +1, and
     * handle b, also set to the raw stream, reads the result back. If a's work went anywhere but
     * the raw stream, b's read would not wait for it and would see the old values.
     */
    @Test
    void h9_setStreamWithARawStream_orderedOnIt() {
        try (Handle a = Handle.create(0); Handle b = Handle.create(0)) {
            long ownStream = a.stream();
            a.makeCurrent(); // raw driver calls go to the handle's context (H4's documented exception)
            long raw;
            try {
                raw = NativeTestApi.streamCreate();
            } finally {
                clearCurrent();
            }
            try {
                int n = 1 << 16;
                float[] x = randomFloats(random, n);
                try (DeviceBuffer buf = a.upload(x)) {
                    a.setStream(raw);
                    b.setStream(raw);
                    assertEquals(raw, a.stream(), "H9: stream() reports the raw stream after setStream");
                    assertEquals(raw, b.stream());
                    LaunchCount launches = new LaunchCount();
                    spin(a, 0.3);
                    addOne(a, buf, n);
                    addOne(a, buf, n);
                    float[] out = new float[n];
                    long t0 = System.nanoTime();
                    b.copyToHost(buf, out, 0, n); // on the raw stream: waits for a's spin and launches
                    long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                    launches.assertAccepted(3, "H9: the spin and two launches on the raw stream");
                    assertExact(afterAddOnes(x, 2), out, "H9: a's work on the raw stream, read back through b on the same stream");
                    System.out.println("[h9] the read on the raw stream waited " + waitedMs + " ms for the spin kernel");
                    assertTrue(waitedMs >= 100, "H9: the read on the raw stream should have waited for a's ~0.3 s spin; it took " + waitedMs + " ms");

                    a.resetStream();
                    b.resetStream();
                    assertEquals(ownStream, a.stream(), "H9: resetStream() returns to the handle's own stream");
                    addOne(a, buf, n);
                    a.copyToHost(buf, out, 0, n);
                    launches.assertAccepted(4, "H9: one more launch on the own stream");
                    assertExact(afterAddOnes(x, 3), out, "H9: work back on the own stream");
                }
                assertEquals(0L, current());
            } finally {
                a.resetStream();
                b.resetStream();
                a.makeCurrent();
                try {
                    NativeTestApi.streamDestroy(raw);
                } finally {
                    clearCurrent();
                }
            }
        }
    }

    @Test
    void h9_rawStreamOfAUserContext_fromWrap() {
        long user = newUserContext(0);
        long raw = 0;
        try {
            NativeTestApi.setCurrent(user);
            raw = NativeTestApi.streamCreate();
            clearCurrent();
            try (Handle h = Handle.wrap(user)) {
                h.setStream(raw);
                assertEquals(raw, h.stream());
                checkAddOne(h, random, 5000, 3, "H9: work on a raw stream of a user context");
                h.setStream(0); // legacy default stream of the context
                assertEquals(0L, h.stream());
                checkAddOne(h, random, 5000, 1, "H9: work on the legacy default stream");
                h.resetStream();
                assertTrue(h.stream() > 2);
            }
        } finally {
            clearCurrent();
            if (raw != 0) {
                NativeTestApi.setCurrent(user);
                NativeTestApi.streamDestroy(raw);
                clearCurrent();
            }
            destroyQuietly(user);
        }
    }

    @Test
    void h9_setStreamWithAStreamOfAnotherContext_isRejected() {
        long other = newUserContext(0);
        long foreign = 0;
        try {
            NativeTestApi.setCurrent(other);
            foreign = NativeTestApi.streamCreate();
            clearCurrent();
            try (Handle h = Handle.create(0)) {
                long own = h.stream();
                long f = foreign;
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> h.setStream(f),
                        "H9: setStream with a stream of another context");
                assertTrue(e.getMessage().contains("context"), "the message explains the context mismatch: " + e.getMessage());
                System.out.println("[h9] " + e.getMessage());
                assertEquals(own, h.stream(), "a rejected setStream leaves the handle's stream unchanged");
                assertEquals(0L, current(), "H4");
                checkAddOne(h, random, 1000, 1, "H9: the handle after a rejected setStream");
            }
            // And the other way round: a user-context handle rejects a stream of the primary context.
            try (Handle p = Handle.create(0); Handle u = Handle.wrap(other)) {
                long primaryStream = p.stream();
                assertThrows(IllegalArgumentException.class, () -> u.setStream(primaryStream),
                        "H9: a user-context handle rejects a stream of the primary context");
            }
        } finally {
            clearCurrent();
            if (foreign != 0) {
                NativeTestApi.setCurrent(other);
                NativeTestApi.streamDestroy(foreign);
                clearCurrent();
            }
            destroyQuietly(other);
        }
    }
}
