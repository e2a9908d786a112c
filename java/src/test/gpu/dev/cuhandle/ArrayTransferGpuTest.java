package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Rule T1: copies of Java arrays and heap ByteBuffers through the pinned staging pipeline arrive
 * exactly, byte for byte, for every element type, offset and length: 0 and 1 element, odd
 * lengths, lengths on and around chunk boundaries, ranges split over several threads. The device
 * side is read back through a direct ByteBuffer (the driver's own copy, no staging), so an upload
 * is checked independently of the download path. On the CPU stand-in, a busy stream makes every
 * DMA run late, when the stream gets to it, so a staging chunk refilled or read before its DMA
 * finished shows up as wrong data. Large arrays: {@link ArrayTransferLargeGpuTest}; many threads:
 * {@link ArrayTransferStressGpuTest}.
 */
@GpuTest
@StandInCapable // copies execute on the stand-in, with DMA in simulated stream time
class ArrayTransferGpuTest extends KernelGpuTestBase {
    private static final int MAX_LENGTH = 100_003;
    private static final byte CANARY = (byte) 0xA5;

    @ParameterizedTest
    @EnumSource(ArrayTypes.class)
    void everyOffsetAndLength_smallChunksAndSeveralThreads(ArrayTypes type) {
        int chunk = TransferProperties.TINY_CHUNK / type.bytes; // elements per chunk
        try (TransferProperties p = TransferProperties.tiny()) {
            roundTrips(type, 0, 1, 2, 3, chunk - 1, chunk, chunk + 1, 2 * chunk - 1, 2 * chunk, 2 * chunk + 1, 5 * chunk + 3, 9 * chunk + 1,
                    MAX_LENGTH);
        }
    }

    /**
     * The same with JNI region copies instead of the default memcpy in a critical region
     * ({@link TransferPlan#CRITICAL_COPY} false).
     */
    @ParameterizedTest
    @EnumSource(ArrayTypes.class)
    void everyOffsetAndLength_regionCopies(ArrayTypes type) {
        int chunk = TransferProperties.TINY_CHUNK / type.bytes;
        try (TransferProperties p = TransferProperties.tinyWith(Map.of(TransferPlan.CRITICAL_COPY, false))) {
            roundTrips(type, 0, 1, 3, chunk - 1, chunk + 1, 2 * chunk + 1, 9 * chunk + 1, MAX_LENGTH);
        }
        try (TransferProperties p = TransferProperties.set(Map.of(TransferPlan.CRITICAL_COPY, false))) {
            roundTrips(type, 0, 1, 65_537, (3 << 20) / type.bytes + 1);
        }
    }

    @ParameterizedTest
    @EnumSource(ArrayTypes.class)
    void everyOffsetAndLength_defaultPlan(ArrayTypes type) {
        int threeMiB = (3 << 20) / type.bytes; // three ranges on the default plan
        roundTrips(type, 0, 1, 7, 65_537, MAX_LENGTH, threeMiB + 1);
    }

    /**
     * For each length and source offset: fills the device with a canary, uploads, checks the device
     * bytes (and the canary right after them), downloads into a fresh array at another offset and
     * checks both the copied elements and the untouched ones around them.
     */
    private static void roundTrips(ArrayTypes type, int... lengths) {
        Random r = freshRandom(type + " round trips");
        int longest = Arrays.stream(lengths).max().orElse(0);
        try (Handle h = Handle.create(0); DeviceBuffer d = h.allocate((long) (longest + 8) * type.bytes)) {
            for (int length : lengths) {
                for (int offset : new int[] {0, 1, 7}) {
                    String what = type + " length " + length + " offset " + offset;
                    Object src = type.random(r, offset + length + 5);
                    h.memset(d, CANARY & 0xFF);
                    type.copyToDevice(h, src, offset, d, length);
                    byte[] device = ArrayTypes.deviceBytes(h, d, (length + 3) * type.bytes);
                    byte[] expected = Arrays.copyOf(type.bytesOf(src, offset, length), (length + 3) * type.bytes);
                    Arrays.fill(expected, length * type.bytes, expected.length, CANARY);
                    assertSameBytes(expected, device, what + ": device after upload (with the 3 elements after it untouched)");

                    int dstOffset = (offset + 3) % 5;
                    Object back = type.random(r, dstOffset + length + 4);
                    byte[] before = type.bytesOf(back, 0, dstOffset + length + 4);
                    type.copyToHost(h, d, back, dstOffset, length);
                    byte[] after = type.bytesOf(back, 0, dstOffset + length + 4);
                    byte[] want = before.clone();
                    System.arraycopy(type.bytesOf(src, offset, length), 0, want, dstOffset * type.bytes, length * type.bytes);
                    assertSameBytes(want, after, what + ": array after download to offset " + dstOffset + " (elements around it untouched)");
                }
            }
        }
    }

    static void assertSameBytes(byte[] expected, byte[] actual, String what) {
        int at = ArrayTypes.firstDifference(expected, actual);
        if (at >= 0) {
            fail(what + ": first difference at byte " + at + " of " + expected.length + " (expected "
                    + (at < expected.length ? expected[at] : "end") + ", got " + (at < actual.length ? actual[at] : "end") + ")");
        }
    }

    /**
     * Every DMA waits behind 50 ms of queued work, and on the stand-in each chunk's DMA also takes
     * 1 ms of its own: the copy must recycle its two staging slots per range only after their DMA
     * ran, and drain a downloaded chunk only once it arrived.
     */
    @Test
    void stagingIsReusedOnlyAfterItsDma_evenWhenTheStreamIsBusy() {
        Random r = freshRandom("staging reuse behind queued work");
        int n = 40 * TransferProperties.TINY_CHUNK / 4; // 40 chunks of floats, over 4 threads
        float[] xs = randomFloats(r, n);
        try (TransferProperties p = TransferProperties.tiny(); Handle h = Handle.create(0); DeviceBuffer d = h.allocate(4L * n)) {
            int lateBefore = StandIn.active() ? StandIn.deferredCopies() : 0;
            int previous = StandIn.active() ? StandIn.setWorkMillis(1) : 0;
            try {
                EventGpuTest.spinCycles(h, SPIN_CYCLES_10MS * 5);
                h.copyToDevice(xs, 0, d, n);
                EventGpuTest.spinCycles(h, SPIN_CYCLES_10MS * 5);
                float[] back = new float[n];
                h.copyToHost(d, back, 0, n);
                assertExact(xs, back, "float[] through 40 chunks behind a busy stream");
            } finally {
                if (StandIn.active()) {
                    StandIn.setWorkMillis(previous);
                }
            }
            assertSameBytes(ArrayTypes.FLOAT.bytesOf(xs, 0, n), ArrayTypes.deviceBytes(h, d, 4 * n), "device bytes");
            if (StandIn.active()) {
                int late = StandIn.deferredCopies() - lateBefore;
                assertTrue(late >= 80, "the stand-in ran " + late + " copies late; expected every chunk's DMA (40 up, 40 down) to");
            }
        }
    }

    @Test
    void uploadReturnsOnceTheArrayIsRead_theArrayMayBeReusedAtOnce() {
        Random r = freshRandom("array reuse after upload");
        int n = 12 * TransferProperties.TINY_CHUNK / 8;
        try (TransferProperties p = TransferProperties.tiny(); Handle h = Handle.create(0); DeviceBuffer d = h.allocate(8L * n)) {
            EventGpuTest.spinCycles(h, SPIN_CYCLES_10MS * 5); // the DMAs are still queued when the upload returns
            double[] xs = randomDoubles(r, n);
            double[] expected = xs.clone();
            h.copyToDevice(xs, 0, d, n);
            Arrays.fill(xs, 42.0);
            double[] back = new double[n];
            h.copyToHost(d, back, 0, n);
            assertArrayEquals(ArrayTypes.DOUBLE.bytesOf(expected, 0, n), ArrayTypes.DOUBLE.bytesOf(back, 0, n));
        }
    }

    @Test
    void heapByteBuffers_withArrayOffsetsAndReadOnly_arriveExactly() {
        Random r = freshRandom("heap ByteBuffers");
        byte[] bytes = new byte[50_000];
        r.nextBytes(bytes);
        try (TransferProperties p = TransferProperties.tiny(); Handle h = Handle.create(0); DeviceBuffer d = h.allocate(bytes.length)) {
            ByteBuffer slice = ByteBuffer.wrap(bytes).position(7).slice(); // arrayOffset 7
            h.copyToDevice(slice, 3, d, 40_000);
            assertSameBytes(Arrays.copyOfRange(bytes, 10, 40_010), ArrayTypes.deviceBytes(h, d, 40_000), "from a heap slice at index 3");

            ByteBuffer readOnly = ByteBuffer.wrap(bytes).asReadOnlyBuffer();
            h.copyToDevice(readOnly, 5, d, 45_000); // no reachable array: read piece by piece
            assertSameBytes(Arrays.copyOfRange(bytes, 5, 45_005), ArrayTypes.deviceBytes(h, d, 45_000), "from a read-only heap buffer at index 5");
            assertEquals(0, readOnly.position(), "position unchanged");

            byte[] target = new byte[50_000];
            ByteBuffer into = ByteBuffer.wrap(target).position(11).slice();
            h.copyToHost(d, into, 2, 45_000);
            assertSameBytes(Arrays.copyOfRange(bytes, 5, 45_005), Arrays.copyOfRange(target, 13, 45_013), "into a heap slice at index 2");
            assertTrue(allZero(target, 0, 13) && allZero(target, 45_013, target.length), "bytes outside the range untouched");
            assertThrows(IllegalArgumentException.class, () -> h.copyToHost(d, ByteBuffer.allocate(16).asReadOnlyBuffer(), 0, 16));
        }
    }

    private static boolean allZero(byte[] a, int from, int to) {
        for (int i = from; i < to; i++) {
            if (a[i] != 0) {
                return false;
            }
        }
        return true;
    }

    @ParameterizedTest
    @EnumSource(ArrayTypes.class)
    void asyncCopiesOfEveryType_completeWithTheDataInPlace(ArrayTypes type) throws Exception {
        Random r = freshRandom(type + " async");
        int n = 9 * TransferProperties.TINY_CHUNK / type.bytes + 3;
        try (TransferProperties p = TransferProperties.tiny(); Handle h = Handle.create(0); DeviceBuffer d = h.allocate((long) n * type.bytes)) {
            Object src = type.random(r, n + 2);
            CompletableFuture<Void> up = type.uploadAsync(h, src, 2, d, n);
            up.get(30, TimeUnit.SECONDS);
            assertSameBytes(type.bytesOf(src, 2, n), ArrayTypes.deviceBytes(h, d, n * type.bytes), type + ": device once the upload future completed");
            Object back = type.allocate(n + 1);
            CompletableFuture<Void> down = type.downloadAsync(h, d, back, 1, n);
            down.get(30, TimeUnit.SECONDS);
            assertSameBytes(type.bytesOf(src, 2, n), type.bytesOf(back, 1, n), type + ": array once the download future completed");
        }
    }

    @Test
    void anAsyncDownloadReturnsAtOnce_runsAfterEarlierWork_andCloseWaitsForIt() throws Exception {
        Random r = freshRandom("async download behind work");
        int n = 20 * TransferProperties.TINY_CHUNK / 4;
        float[] xs = randomFloats(r, n);
        QueuedWorkTurns.run(300, "an async download behind queued work", occupiedMs -> {
            float[] back = new float[n];
            CompletableFuture<Void> down;
            boolean stillQueued;
            try (TransferProperties p = TransferProperties.tiny(); Handle h = Handle.create(0); DeviceBuffer d = h.allocate(4L * n)) {
                h.copyToDevice(xs, 0, d, n);
                EventGpuTest.spinCycles(h, SPIN_CYCLES_10MS * occupiedMs / 10); // before the download may start
                long start = System.nanoTime();
                down = h.downloadAsync(d, back, 0, n);
                long returnedMs = (System.nanoTime() - start) / 1_000_000;
                stillQueued = !down.isDone();
                if (stillQueued) {
                    assertTrue(returnedMs < occupiedMs * 2L / 3,
                            "downloadAsync took " + returnedMs + " ms to return; it should not wait for the " + occupiedMs + " ms of queued work");
                }
                d.close(); // waits for the copy, which keeps the buffer in use
                assertExact(xs, back, "the array when closing the source buffer returned (close waits for the copy)");
            }
            down.get(5, TimeUnit.SECONDS);
            return stillQueued;
        });
    }

    @Test
    void asyncCopiesCheckTheirArgumentsAtTheCall() {
        try (Handle h = Handle.create(0); DeviceBuffer d = h.allocate(64)) {
            assertThrows(IllegalArgumentException.class, () -> h.uploadAsync(new float[20], 0, d, 20), "more than the buffer holds");
            assertThrows(IllegalArgumentException.class, () -> h.downloadAsync(d, new int[4], 2, 3), "outside the array");
            assertThrows(NullPointerException.class, () -> h.uploadAsync((long[]) null, 0, d, 1));
            DeviceBuffer closed = h.allocate(16);
            closed.close();
            assertThrows(IllegalStateException.class, () -> h.uploadAsync(new byte[4], 0, closed, 4));
        }
    }

    @Test
    void shortAndCharArraysHaveTheirOwnCopies() {
        try (Handle h = Handle.create(0); DeviceBuffer d = h.allocate(8)) {
            short[] s = {1, -2, Short.MIN_VALUE, Short.MAX_VALUE};
            h.copyToDevice(s, 0, d, 4);
            char[] c = new char[4];
            h.copyToHost(d, c, 0, 4);
            assertArrayEquals(new char[] {1, (char) -2, (char) Short.MIN_VALUE, (char) Short.MAX_VALUE}, c);
        }
    }
}
