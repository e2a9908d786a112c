package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * Rule K2 for batches: every refusal of {@link Handle#uploadAll(float[][], DeviceBuffer[])} and friends is a clear
 * exception that names the index of what is wrong (and, for a small buffer, its size and the size needed), thrown
 * before anything is copied; empty batches and arrays of length 0 are fine.
 */
@GpuTest
@StandInCapable // refusals come before any copy; the rest runs on the stand-in
class BatchTransferArgumentsGpuTest extends HandleGpuTestBase {

    private static void assertMessage(Class<? extends Throwable> type, Executable call, String... parts) {
        Throwable e = assertThrows(type, call);
        for (String part : parts) {
            assertTrue(e.getMessage() != null && e.getMessage().contains(part), "message \"" + e.getMessage() + "\" lacks \"" + part + "\"");
        }
    }

    @Test
    void nullListsAndElementsAreRefusedByIndex() {
        try (Handle h = Handle.create(0); DeviceBuffer a = h.allocate(16); DeviceBuffer b = h.allocate(16)) {
            assertMessage(NullPointerException.class, () -> h.uploadAll((float[][]) null, new DeviceBuffer[0]), "src");
            assertMessage(NullPointerException.class, () -> h.uploadAll(new float[0][], null), "dst");
            assertMessage(NullPointerException.class, () -> h.uploadAll(new float[][] {new float[1], null}, new DeviceBuffer[] {a, b}), "src[1] is null");
            assertMessage(NullPointerException.class, () -> h.uploadAll(new float[][] {new float[1], new float[1]}, new DeviceBuffer[] {a, null}),
                    "dst[1] is null");
            assertMessage(NullPointerException.class, () -> h.downloadAll(new DeviceBuffer[] {null}, new int[][] {new int[1]}), "src[0] is null");
            assertMessage(NullPointerException.class, () -> h.downloadAll(new DeviceBuffer[] {a}, new int[][] {null}), "dst[0] is null");
            assertMessage(NullPointerException.class, () -> h.uploadAllAsync(new long[][] {null}, new DeviceBuffer[] {a}), "src[0] is null");
        }
    }

    @Test
    void listsOfDifferentLengthsAreRefused() {
        try (Handle h = Handle.create(0); DeviceBuffer a = h.allocate(16)) {
            assertMessage(IllegalArgumentException.class, () -> h.uploadAll(new float[2][1], new DeviceBuffer[] {a}), "src holds 2 arrays",
                    "dst holds 1 buffers");
            assertMessage(IllegalArgumentException.class, () -> h.downloadAll(new DeviceBuffer[] {a, a}, new double[1][1]), "dst holds 1 arrays",
                    "src holds 2 buffers");
        }
    }

    @Test
    void aBufferTooSmallIsRefusedWithItsIndexSizeAndTheSizeNeeded() {
        try (Handle h = Handle.create(0); DeviceBuffer big = h.allocate(64); DeviceBuffer small = h.allocate(12)) {
            assertMessage(IllegalArgumentException.class, () -> h.uploadAll(new float[][] {new float[16], new float[4]}, new DeviceBuffer[] {big, small}),
                    "dst[1] holds 12 bytes", "4 elements (16 bytes)", "at least 16 bytes");
            assertMessage(IllegalArgumentException.class, () -> h.downloadAll(new DeviceBuffer[] {small}, new long[][] {new long[2]}),
                    "src[0] holds 12 bytes", "at least 16 bytes");
            assertMessage(IllegalArgumentException.class, () -> h.uploadAllAsync(new short[][] {new short[7]}, new DeviceBuffer[] {small}),
                    "dst[0] holds 12 bytes", "at least 14 bytes");
        }
    }

    @Test
    void closedBuffersAndHandlesAreRefusedByIndex() {
        try (Handle h = Handle.create(0); DeviceBuffer a = h.allocate(16)) {
            DeviceBuffer closed = h.allocate(16);
            closed.close();
            assertMessage(IllegalStateException.class, () -> h.uploadAll(new float[][] {new float[1], new float[1]}, new DeviceBuffer[] {a, closed}),
                    "dst[1]");
            assertMessage(IllegalStateException.class, () -> h.downloadAll(new DeviceBuffer[] {closed}, new float[][] {new float[1]}), "src[0]");
            assertMessage(IllegalStateException.class, () -> h.uploadAllAsync(new float[][] {new float[1]}, new DeviceBuffer[] {closed}), "dst[0]");
            // The refused batch left the open buffer usable (entered and left again).
            h.uploadAll(new float[][] {{1f, 2f}}, new DeviceBuffer[] {a});
            float[][] back = {new float[2]};
            h.downloadAll(new DeviceBuffer[] {a}, back);
            assertArrayEquals(new float[] {1f, 2f}, back[0]);
        }
        Handle closedHandle = Handle.create(0);
        closedHandle.close();
        assertThrows(IllegalStateException.class, () -> closedHandle.uploadAll(new float[0][], new DeviceBuffer[0]));
    }

    /** A handle on a user context (cuCtxCreate, current) and one on device 0's primary context: different contexts. */
    @Test
    void buffersOfAnotherContextAreRefusedByIndex() {
        long ctx = NativeTestApi.createContext(0);
        try (Handle other = Handle.create(); Handle h = Handle.create(0); DeviceBuffer mine = h.allocate(16); DeviceBuffer theirs = other.allocate(16)) {
            assertMessage(IllegalArgumentException.class, () -> h.uploadAll(new int[][] {new int[1], new int[1]}, new DeviceBuffer[] {mine, theirs}),
                    "dst[1]", "context");
            assertMessage(IllegalArgumentException.class, () -> h.downloadAll(new DeviceBuffer[] {theirs}, new int[][] {new int[1]}), "src[0]",
                    "context");
        } finally {
            NativeTestApi.destroyContext(ctx);
            NativeTestApi.setCurrent(0);
        }
    }

    @Test
    void overlappingDestinationsOfAnUploadAreRefused() {
        try (Handle h = Handle.create(0); DeviceBuffer a = h.allocate(64)) {
            assertMessage(IllegalArgumentException.class,
                    () -> h.uploadAll(new float[][] {new float[4], new float[4]}, new DeviceBuffer[] {a.slice(0, 16), a.slice(8, 16)}), "overlap");
            // Reading one buffer into two arrays is fine.
            h.uploadAll(new float[][] {{3f, 4f}}, new DeviceBuffer[] {a});
            float[][] twice = {new float[2], new float[1]};
            h.downloadAll(new DeviceBuffer[] {a, a}, twice);
            assertArrayEquals(new float[] {3f, 4f}, twice[0]);
            assertArrayEquals(new float[] {3f}, twice[1]);
        }
    }

    @Test
    void emptyBatchesAndEmptyArraysAreFine() throws Exception {
        try (Handle h = Handle.create(0); DeviceBuffer a = h.allocate(8)) {
            h.uploadAll(new float[0][], new DeviceBuffer[0]);
            h.downloadAll(new DeviceBuffer[0], new byte[0][]);
            h.uploadAllAsync(new char[0][], new DeviceBuffer[0]).get(10, TimeUnit.SECONDS);
            h.downloadAllAsync(new DeviceBuffer[0], new double[0][]).get(10, TimeUnit.SECONDS);
            h.uploadAll(new float[][] {new float[0], new float[0]}, new DeviceBuffer[] {a, a});
            h.downloadAll(new DeviceBuffer[] {a}, new float[][] {new float[0]});
        }
    }
}
