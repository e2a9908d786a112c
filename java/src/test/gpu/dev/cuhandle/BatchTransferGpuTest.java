package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Rule T1 for batches ({@link Handle#uploadAll(float[][], DeviceBuffer[])} and friends): many arrays of every
 * element type, of lengths 0, 1, odd and across chunk boundaries, arrive exactly, byte for byte, through both ways
 * a chunk's copies reach the driver: one {@code cuMemcpyBatchAsync} call, and one copy per array piece (drivers
 * before 12.8, or {@link BatchTransfers#BATCH_ENTRY} false). Uploads are checked on the device through a direct
 * ByteBuffer (the driver's own copy, no staging), independently of the download path; downloads go into fresh
 * arrays. On the CPU stand-in a busy stream makes every copy run late, when the stream gets to it, so staging
 * refilled or drained before its copies finished shows up as wrong data; the stand-in also counts its batch
 * calls, so each path is seen to be the one taken. Refusals: {@link BatchTransferArgumentsGpuTest}.
 */
@GpuTest
@StandInCapable // copies execute on the stand-in, which models cuMemcpyBatchAsync from CUDA 12.8
class BatchTransferGpuTest extends KernelGpuTestBase {
    private static final int[] LENGTHS = {0, 1, 2, 3, 7, 31, 1000, 1023, 1025, 4097, 65_537, 0, 5, 1};

    /** The two ways a chunk's copies reach the driver. */
    enum Path {
        BATCHED(true), PER_PIECE(false);

        final boolean batchEntry;

        Path(boolean batchEntry) {
            this.batchEntry = batchEntry;
        }

        Map<String, Object> properties() {
            return Map.of(BatchTransfers.BATCH_ENTRY, batchEntry);
        }
    }

    @ParameterizedTest
    @EnumSource(ArrayTypes.class)
    void everyType_bothPaths_defaultPlan(ArrayTypes type) {
        onBothPaths(Map.of(), false, path -> roundTrip(type, path, LENGTHS, false));
    }

    /** Chunks of 4 KiB: arrays cut across chunks, chunks of many arrays, slots recycled within one batch. */
    @ParameterizedTest
    @EnumSource(ArrayTypes.class)
    void everyType_bothPaths_smallChunks(ArrayTypes type) {
        onBothPaths(Map.of(), true, path -> roundTrip(type, path, LENGTHS, false));
    }

    /** The same with JNI region copies instead of a memcpy in a critical region. */
    @ParameterizedTest
    @EnumSource(ArrayTypes.class)
    void everyType_bothPaths_regionCopies(ArrayTypes type) {
        onBothPaths(Map.of(TransferPlan.CRITICAL_COPY, false), true, path -> roundTrip(type, path, LENGTHS, false));
    }

    @ParameterizedTest
    @EnumSource(ArrayTypes.class)
    void everyType_bothPaths_async(ArrayTypes type) {
        onBothPaths(Map.of(), true, path -> roundTrip(type, path, LENGTHS, true));
    }

    /** Runs {@code test} on each path, with {@code more} properties set (and 4 KiB chunks with {@code tiny}). */
    private static void onBothPaths(Map<String, Object> more, boolean tiny, Consumer<Path> test) {
        for (Path path : Path.values()) {
            Map<String, Object> properties = new HashMap<>(path.properties());
            properties.putAll(more);
            try (TransferProperties p = tiny ? TransferProperties.tinyWith(properties) : TransferProperties.set(properties)) {
                test.accept(path);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Path.class)
    void aThousandArraysOf1024Floats(Path path) {
        try (TransferProperties p = TransferProperties.set(path.properties())) {
            roundTrip(ArrayTypes.FLOAT, path, repeat(1024, 1000), false);
        }
    }

    @ParameterizedTest
    @EnumSource(Path.class)
    void tenThousandArraysOf64Floats(Path path) {
        try (TransferProperties p = TransferProperties.set(path.properties())) {
            roundTrip(ArrayTypes.FLOAT, path, repeat(64, 10_000), false);
        }
    }

    /**
     * Views back to back in one allocation: the pieces of a chunk are device-contiguous and go as one copy per
     * chunk; the bytes must still land in their own views, and the canary after the last view stay.
     */
    @ParameterizedTest
    @EnumSource(Path.class)
    void viewsOfOneAllocation(Path path) {
        Random r = freshRandom("batch into views of one allocation, " + path);
        int count = 300;
        int[] lengths = new int[count];
        long total = 0;
        for (int i = 0; i < count; i++) {
            lengths[i] = r.nextInt(200);
            total += 4L * lengths[i];
        }
        try (TransferProperties p = TransferProperties.tinyWith(path.properties()); Handle h = Handle.create(0);
                DeviceBuffer whole = h.allocate(total + 16)) {
            h.memset(whole, 0x5A);
            float[][] src = new float[count][];
            DeviceBuffer[] views = new DeviceBuffer[count];
            long at = 0;
            for (int i = 0; i < count; i++) {
                src[i] = randomFloats(r, lengths[i]);
                views[i] = whole.slice(at, 4L * lengths[i]);
                at += 4L * lengths[i];
            }
            h.uploadAll(src, views);
            byte[] device = ArrayTypes.deviceBytes(h, whole, (int) total + 16);
            at = 0;
            for (int i = 0; i < count; i++) {
                byte[] expected = ArrayTypes.FLOAT.bytesOf(src[i], 0, lengths[i]);
                byte[] actual = java.util.Arrays.copyOfRange(device, (int) at, (int) at + expected.length);
                ArrayTransferGpuTest.assertSameBytes(expected, actual, "view " + i);
                at += expected.length;
            }
            for (int k = 0; k < 16; k++) {
                assertEquals((byte) 0x5A, device[(int) total + k], "canary byte " + k + " after the last view");
            }
            float[][] back = new float[count][];
            for (int i = 0; i < count; i++) {
                back[i] = new float[lengths[i]];
            }
            h.downloadAll(views, back);
            for (int i = 0; i < count; i++) {
                assertExact(src[i], back[i], "view " + i + " downloaded");
            }
        }
    }

    /**
     * Behind queued work (a spinning kernel on a GPU, 1 ms per copy on the stand-in), staging slots are refilled
     * only after their copies ran, and drained only once theirs arrived.
     */
    @ParameterizedTest
    @EnumSource(Path.class)
    void stagingIsReusedOnlyAfterItsCopies_evenWhenTheStreamIsBusy(Path path) {
        Random r = freshRandom("batch behind queued work, " + path);
        int count = 500;
        float[][] src = new float[count][];
        for (int i = 0; i < count; i++) {
            src[i] = randomFloats(r, 1 + r.nextInt(100));
        }
        try (TransferProperties p = TransferProperties.tinyWith(path.properties()); Handle h = Handle.create(0)) {
            List<DeviceBuffer> buffers = allocateFor(h, src, 4);
            DeviceBuffer[] dst = buffers.toArray(new DeviceBuffer[0]);
            int previous = StandIn.active() ? StandIn.setWorkMillis(1) : 0;
            float[][] back = new float[count][];
            try {
                if (!StandIn.active()) {
                    EventGpuTest.spinCycles(h, SPIN_CYCLES_10MS * 5);
                }
                h.uploadAll(src, dst);
                if (!StandIn.active()) {
                    EventGpuTest.spinCycles(h, SPIN_CYCLES_10MS * 5);
                }
                for (int i = 0; i < count; i++) {
                    back[i] = new float[src[i].length];
                }
                h.downloadAll(dst, back);
            } finally {
                if (StandIn.active()) {
                    StandIn.setWorkMillis(previous);
                }
                buffers.forEach(DeviceBuffer::close);
            }
            for (int i = 0; i < count; i++) {
                assertExact(src[i], back[i], "array " + i + " behind a busy stream");
            }
        }
    }

    private static int[] repeat(int length, int count) {
        int[] lengths = new int[count];
        java.util.Arrays.fill(lengths, length);
        return lengths;
    }

    /** A buffer per array, of its bytes and {@code spare} more (at least 1 byte: a buffer of 0 bytes is refused). */
    private static List<DeviceBuffer> allocateFor(Handle h, Object[] arrays, int elementBytes) {
        List<DeviceBuffer> buffers = new ArrayList<>();
        for (Object a : arrays) {
            buffers.add(h.allocate((long) java.lang.reflect.Array.getLength(a) * elementBytes + 8));
        }
        return buffers;
    }

    /**
     * Uploads fresh random arrays of {@code lengths} in one batch (asynchronously with {@code async}), checks every
     * buffer's bytes on the device and the canary after them, downloads into fresh arrays and compares; on the
     * stand-in, checks that the batch entry point was used exactly when the path allows it.
     */
    private static void roundTrip(ArrayTypes type, Path path, int[] lengths, boolean async) {
        Random r = freshRandom(type + " batch of " + lengths.length + ", " + path + (async ? ", async" : ""));
        Object[] src = type.batch(lengths.length);
        for (int i = 0; i < lengths.length; i++) {
            src[i] = type.random(r, lengths[i]);
        }
        try (Handle h = Handle.create(0)) {
            List<DeviceBuffer> buffers = allocateFor(h, src, type.bytes);
            try {
                DeviceBuffer[] dst = buffers.toArray(new DeviceBuffer[0]);
                for (DeviceBuffer b : dst) {
                    h.memset(b, 0xA5);
                }
                int batchesBefore = StandIn.active() ? StandIn.batchCopies() : 0;
                if (async) {
                    type.uploadAllAsync(h, src, dst).get(60, TimeUnit.SECONDS);
                } else {
                    type.uploadAll(h, src, dst);
                }
                int batches = StandIn.active() ? StandIn.batchCopies() - batchesBefore : 0;
                for (int i = 0; i < lengths.length; i++) {
                    int bytes = lengths[i] * type.bytes;
                    byte[] device = ArrayTypes.deviceBytes(h, dst[i], bytes + 8);
                    ArrayTransferGpuTest.assertSameBytes(type.bytesOf(src[i], 0, lengths[i]), java.util.Arrays.copyOf(device, bytes),
                            type + " array " + i + " of " + lengths[i] + " on the device");
                    for (int k = bytes; k < bytes + 8; k++) {
                        assertEquals((byte) 0xA5, device[k], type + " array " + i + ": canary byte " + (k - bytes) + " after it");
                    }
                }
                Object[] back = type.batch(lengths.length);
                for (int i = 0; i < lengths.length; i++) {
                    back[i] = type.allocate(lengths[i]);
                }
                if (async) {
                    type.downloadAllAsync(h, dst, back).get(60, TimeUnit.SECONDS);
                } else {
                    type.downloadAll(h, dst, back);
                }
                for (int i = 0; i < lengths.length; i++) {
                    ArrayTransferGpuTest.assertSameBytes(type.bytesOf(src[i], 0, lengths[i]), type.bytesOf(back[i], 0, lengths[i]),
                            type + " array " + i + " of " + lengths[i] + " downloaded");
                }
                if (StandIn.active()) {
                    if (path.batchEntry) {
                        assertTrue(batches > 0, "the upload made no cuMemcpyBatchAsync call on a 13.0 stand-in");
                    } else {
                        assertEquals(0, batches, "cuMemcpyBatchAsync calls with " + BatchTransfers.BATCH_ENTRY + "=false");
                    }
                }
            } catch (Exception e) {
                throw new AssertionError(e);
            } finally {
                buffers.forEach(DeviceBuffer::close);
            }
        }
    }
}
