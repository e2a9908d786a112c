package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Device memory (rule K3) with fresh random data: uploads and downloads of every array type and of
 * direct ByteBuffers, with offsets and lengths; memset; device-to-device copies; slices (also as
 * kernel arguments); wrapped raw memory; out of memory. Bad inputs: {@link BufferBadInputGpuTest}.
 */
@GpuTest
class BufferGpuTest extends KernelGpuTestBase {
    private static final int N = 10_007; // not a multiple of anything in particular

    @StandInCapable
    @Test
    void floatsRoundTrip() {
        Random r = freshRandom("float[]");
        float[] x = randomFloats(r, N);
        x[0] = Float.intBitsToFloat(0x7FC0_0BAD); // NaN payloads survive
        x[1] = -0.0f;
        try (Handle h = Handle.create(0); DeviceBuffer b = h.upload(x)) {
            assertEquals(4L * N, b.byteLength());
            float[] out = new float[N];
            b.download(out);
            assertExact(x, out, "float[] round trip");
            float[] y = randomFloats(r, N);
            b.upload(y);
            b.download(out);
            assertExact(y, out, "DeviceBuffer.upload(float[])");
        }
    }

    @StandInCapable
    @Test
    void doublesRoundTrip() {
        Random r = freshRandom("double[]");
        double[] x = randomDoubles(r, N);
        try (Handle h = Handle.create(0); DeviceBuffer b = h.upload(x)) {
            assertEquals(8L * N, b.byteLength());
            double[] out = new double[N];
            b.download(out);
            assertBitsEqual(x, out, "double[] round trip");
            double[] y = randomDoubles(r, N);
            b.upload(y);
            b.download(out);
            assertBitsEqual(y, out, "DeviceBuffer.upload(double[])");
        }
    }

    private static void assertBitsEqual(double[] expected, double[] actual, String what) {
        long[] e = new long[expected.length];
        long[] a = new long[actual.length];
        for (int i = 0; i < e.length; i++) {
            e[i] = Double.doubleToRawLongBits(expected[i]);
        }
        for (int i = 0; i < a.length; i++) {
            a[i] = Double.doubleToRawLongBits(actual[i]);
        }
        assertArrayEquals(e, a, what);
    }

    @StandInCapable
    @Test
    void intsLongsAndBytesRoundTrip() {
        Random r = freshRandom("int[], long[], byte[]");
        int[] ints = randomInts(r, N);
        long[] longs = randomLongs(r, N);
        byte[] bytes = randomBytes(r, N);
        try (Handle h = Handle.create(0); DeviceBuffer bi = h.upload(ints); DeviceBuffer bl = h.upload(longs); DeviceBuffer bb = h.upload(bytes)) {
            assertEquals(4L * N, bi.byteLength());
            assertEquals(8L * N, bl.byteLength());
            assertEquals(N, bb.byteLength());
            int[] oi = new int[N];
            long[] ol = new long[N];
            byte[] ob = new byte[N];
            bi.download(oi);
            bl.download(ol);
            bb.download(ob);
            assertArrayEquals(ints, oi, "int[]");
            assertArrayEquals(longs, ol, "long[]");
            assertArrayEquals(bytes, ob, "byte[]");
            // The same bytes seen as another type: little-endian, as the GPU stores them.
            byte[] asBytes = new byte[4 * N];
            h.copyToHost(bi, asBytes, 0, asBytes.length);
            ByteBuffer le = ByteBuffer.wrap(asBytes).order(java.nio.ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < N; i += 997) {
                assertEquals(ints[i], le.getInt(4 * i), "int " + i + " read back as bytes");
            }
        }
    }

    @StandInCapable
    @Test
    void emptyArraysAndZeroByteBuffersWork() {
        try (Handle h = Handle.create(0); DeviceBuffer b = h.upload(new float[0]); DeviceBuffer c = h.allocate(0)) {
            assertEquals(0, b.byteLength());
            assertEquals(0, c.byteLength());
            b.download(new float[0]);
            h.copyToHost(c, new byte[0], 0, 0);
            h.memset(c, 1);
            h.copy(b, c);
            h.synchronize();
        }
    }

    /** copyToDevice/copyToHost with array offsets and lengths: only the named ranges move. */
    @StandInCapable
    @Test
    void partialArrayCopiesMoveExactlyTheirRange() {
        Random r = freshRandom("partial copies");
        try (Handle h = Handle.create(0); DeviceBuffer b = h.allocate(8L * N)) {
            for (int round = 0; round < 20; round++) {
                int offset = r.nextInt(N);
                int length = r.nextInt(N - offset + 1);
                // float: device starts as 0x7F bytes; upload x[offset, offset+length) to its start.
                float[] x = randomFloats(r, N);
                h.memset(b, 0x7F);
                h.copyToDevice(x, offset, b, length);
                float[] whole = new float[N];
                h.copyToHost(b, whole, 0, N);
                float filler = Float.intBitsToFloat(0x7F7F7F7F);
                for (int i = 0; i < N; i++) {
                    float expected = i < length ? x[offset + i] : filler;
                    assertEquals(Float.floatToRawIntBits(expected), Float.floatToRawIntBits(whole[i]), "float element " + i + " (offset " + offset + ", length " + length + ")");
                }
                // Download the first `length` floats into the middle of a host array: the rest keeps its values.
                float[] host = randomFloats(r, N);
                float[] before = host.clone();
                h.copyToHost(b, host, offset, length);
                for (int i = 0; i < N; i++) {
                    float expected = i >= offset && i < offset + length ? x[i] : before[i];
                    assertEquals(Float.floatToRawIntBits(expected), Float.floatToRawIntBits(host[i]), "host float " + i);
                }

                // The same for the other element types.
                double[] d = randomDoubles(r, N);
                h.copyToDevice(d, offset, b, length);
                double[] dOut = new double[length];
                h.copyToHost(b, dOut, 0, length);
                assertBitsEqual(Arrays.copyOfRange(d, offset, offset + length), dOut, "double range");
                int[] i32 = randomInts(r, N);
                h.copyToDevice(i32, offset, b, length);
                int[] iOut = new int[N];
                h.copyToHost(b, iOut, offset, length);
                assertArrayEquals(Arrays.copyOfRange(i32, offset, offset + length), Arrays.copyOfRange(iOut, offset, offset + length), "int range");
                long[] i64 = randomLongs(r, N);
                h.copyToDevice(i64, offset, b, length);
                long[] lOut = new long[length];
                h.copyToHost(b, lOut, 0, length);
                assertArrayEquals(Arrays.copyOfRange(i64, offset, offset + length), lOut, "long range");
                byte[] i8 = randomBytes(r, N);
                h.copyToDevice(i8, offset, b, length);
                byte[] bOut = new byte[length];
                h.copyToHost(b, bOut, 0, length);
                assertArrayEquals(Arrays.copyOfRange(i8, offset, offset + length), bOut, "byte range");
            }
        }
    }

    @StandInCapable
    @Test
    void directByteBuffersCopyWithAbsoluteOffsets() {
        Random r = freshRandom("direct ByteBuffers");
        int capacity = 64 * 1024 + 3;
        ByteBuffer src = ByteBuffer.allocateDirect(capacity);
        ByteBuffer dst = ByteBuffer.allocateDirect(capacity);
        byte[] data = randomBytes(r, capacity);
        src.put(data).flip();
        try (Handle h = Handle.create(0); DeviceBuffer b = h.allocate(capacity)) {
            for (int round = 0; round < 20; round++) {
                int offset = r.nextInt(capacity);
                long bytes = r.nextInt(capacity - offset + 1);
                h.memset(b, 0);
                h.copyToDevice(src, offset, b, bytes);
                byte[] onDevice = new byte[capacity];
                b.download(onDevice);
                for (int i = 0; i < capacity; i++) {
                    byte expected = i < bytes ? data[offset + i] : 0;
                    if (onDevice[i] != expected) {
                        throw new AssertionError("device byte " + i + " after copying " + bytes + " bytes from ByteBuffer offset " + offset
                                + ": expected " + expected + ", got " + onDevice[i]);
                    }
                }
                // Back into dst at another offset; bytes outside stay as they were.
                int dstOffset = r.nextInt((int) (capacity - bytes) + 1);
                byte[] fill = randomBytes(r, capacity);
                dst.clear();
                dst.put(fill).clear();
                h.copyToHost(b, dst, dstOffset, bytes);
                for (int i = 0; i < capacity; i++) {
                    byte expected = i >= dstOffset && i < dstOffset + bytes ? data[offset + i - dstOffset] : fill[i];
                    if (dst.get(i) != expected) {
                        throw new AssertionError("ByteBuffer byte " + i + " after copying " + bytes + " bytes to offset " + dstOffset);
                    }
                }
                // Offsets are absolute: position and limit do not matter.
                assertEquals(0, dst.position());
            }
            // A read-only view of a direct buffer may be a source.
            h.copyToDevice(src.asReadOnlyBuffer(), 0, b, capacity);
            byte[] all = new byte[capacity];
            b.download(all);
            assertArrayEquals(data, all, "upload from a read-only direct ByteBuffer");
        }
    }

    @Test
    void memsetSetsEveryByteOfTheBufferOrSlice() {
        Random r = freshRandom("memset");
        try (Handle h = Handle.create(0); DeviceBuffer b = h.upload(randomBytes(r, N))) {
            h.memset(b, 0xAB);
            byte[] out = new byte[N];
            b.download(out);
            byte[] expected = new byte[N];
            Arrays.fill(expected, (byte) 0xAB);
            assertArrayEquals(expected, out, "memset of the whole buffer");
            int from = 1 + r.nextInt(N / 2);
            int length = r.nextInt(N - from);
            h.memset(b.slice(from, length), 0x00);
            b.download(out);
            Arrays.fill(expected, from, from + length, (byte) 0);
            assertArrayEquals(expected, out, "memset of bytes [" + from + ", " + (from + length) + ")");
            // memset then a float kernel: 0 bytes are 0.0f.
            float[] zeros = new float[N / 4];
            try (DeviceBuffer f = h.allocate(4L * zeros.length)) {
                h.memset(f, 0);
                launchAddOne(h, f, zeros.length);
                float[] got = new float[zeros.length];
                f.download(got);
                assertExact(plusOne(zeros, 0, zeros.length), got, "add_one after memset 0");
            }
        }
    }

    @Test
    void deviceToDeviceCopiesCopyAllOfTheSourceToTheStartOfTheDestination() {
        Random r = freshRandom("device-to-device copy");
        float[] x = randomFloats(r, N);
        float[] y = randomFloats(r, 2 * N);
        try (Handle h = Handle.create(0); DeviceBuffer src = h.upload(x); DeviceBuffer dst = h.upload(y)) {
            h.copy(src, dst);
            float[] out = new float[2 * N];
            dst.download(out);
            float[] expected = y.clone();
            System.arraycopy(x, 0, expected, 0, N);
            assertExact(expected, out, "copy into a larger buffer");
            // Between slices: src[100, 200) -> dst[N + 5, N + 105).
            h.copy(src.slice(400, 400), dst.slice(4L * (N + 5), 400));
            dst.download(out);
            System.arraycopy(x, 100, expected, N + 5, 100);
            assertExact(expected, out, "copy between slices");
            // Stream order: a kernel then a copy then a kernel, with no waits in between.
            launchAddOne(h, src, N);
            h.copy(src, dst);
            launchAddOne(h, dst, N);
            dst.download(out);
            float[] twice = plusOne(plusOne(x, 0, N), 0, N);
            System.arraycopy(twice, 0, expected, 0, N);
            assertExact(expected, out, "add_one, copy, add_one in stream order");
        }
    }

    @StandInCapable
    @Test
    void slicesAreViewsWithTheRightAddress() {
        Random r = freshRandom("slices");
        float[] x = randomFloats(r, N);
        try (Handle h = Handle.create(0); DeviceBuffer b = h.upload(x)) {
            DeviceBuffer s = b.slice(40, 400);
            assertEquals(b.address() + 40, s.address());
            assertEquals(400, s.byteLength());
            assertEquals(b.contextId(), s.contextId());
            assertSame(h, s.owner());
            DeviceBuffer ss = s.slice(8, 16);
            assertEquals(b.address() + 48, ss.address(), "a slice of a slice adds the offsets");
            assertEquals(16, ss.byteLength());
            float[] got = new float[4];
            ss.download(got);
            assertExact(Arrays.copyOfRange(x, 12, 16), got, "download of a slice of a slice");
            DeviceBuffer empty = b.slice(b.byteLength(), 0);
            assertEquals(0, empty.byteLength());
            assertEquals(b.address() + b.byteLength(), empty.address());
            // Uploading into a slice writes only there.
            float[] y = randomFloats(r, 100);
            h.copyToDevice(y, 0, s, 100);
            float[] out = new float[N];
            b.download(out);
            float[] expected = x.clone();
            System.arraycopy(y, 0, expected, 10, 100);
            assertExact(expected, out, "upload into slice [40, 440)");
            // Closing a view frees nothing: the buffer stays usable.
            s.close();
            assertFalse(b.isClosed(), "closing a slice does not close its buffer");
            b.download(out);
            assertExact(expected, out, "the buffer after closing a slice");
        }
    }

    /** A slice as a kernel argument: the kernel writes exactly the slice's part of the buffer. */
    @Test
    void aSliceAsAKernelArgumentWritesTheRightPart() {
        Random r = freshRandom("slice argument");
        float[] x = randomFloats(r, N);
        try (Handle h = Handle.create(0); DeviceBuffer b = h.upload(x)) {
            float[] expected = x.clone();
            for (int round = 0; round < 10; round++) {
                int from = r.nextInt(N);
                int count = r.nextInt(N - from + 1);
                DeviceBuffer part = b.slice(4L * from, 4L * count);
                if (round % 2 == 0) {
                    h.launch(addOne(), gridFor(count), Dim3.of(BLOCK), 0, part, count);
                } else {
                    h.launch(addOne().newLaunch().grid(gridFor(count).x).block(BLOCK).arg(0, part).arg(1, count));
                }
                expected = plusOne(expected, from, from + count);
            }
            float[] out = new float[N];
            b.download(out);
            assertExact(expected, out, "add_one on 10 random slices");
        }
    }

    /** Interop inside one context: raw cuMemAlloc memory of the handle's context, wrapped. */
    @Test
    void wrapPointerViewsRawMemoryOfTheHandlesContext() {
        Random r = freshRandom("wrapPointer");
        int n = 4096;
        float[] x = randomFloats(r, n);
        long raw = 0;
        try (Handle h = Handle.create(0)) {
            raw = rawAlloc(h, 4L * n);
            assertEquals(0L, current());
            try (DeviceBuffer w = h.wrapPointer(raw, 4L * n)) {
                assertEquals(raw, w.address());
                assertEquals(4L * n, w.byteLength());
                assertEquals(h.contextId(), w.contextId());
                h.copyToDevice(x, 0, w, n);
                launchAddOne(h, w, n);
                float[] out = new float[n];
                w.download(out);
                assertExact(plusOne(x, 0, n), out, "add_one on wrapped raw memory");
            }
            // Closing the wrapper freed nothing: the memory still holds the data.
            try (DeviceBuffer again = h.wrapPointer(raw, 4L * n)) {
                float[] out = new float[n];
                again.download(out);
                assertExact(plusOne(x, 0, n), out, "the raw memory after the wrapper was closed");
            }
            rawFree(h, raw); // succeeds only if nobody freed it before
            raw = 0;
            assertEquals(0L, current());
        } finally {
            if (raw != 0) {
                System.out.println("[kernel-tests] leaking raw allocation " + hex(raw) + " after a failure");
            }
        }
    }

    @Test
    void outOfMemoryIsACudaExceptionNamingTheSize() {
        long bytes = 1L << 50; // 1 PiB
        try (Handle h = Handle.create(0)) {
            CudaException e = assertThrows(CudaException.class, () -> h.allocate(bytes).close());
            assertEquals(CudaError.OUT_OF_MEMORY, e.error(), e.getMessage());
            assertEquals(2, e.code());
            assertFalse(e.isSticky(), "out of memory is not sticky");
            assertContains(e.getMessage(), String.valueOf(bytes));
            assertTrue(e.operation().startsWith("cuMemAlloc"), "operation " + e.operation());
            // The handle is fine afterwards.
            try (DeviceBuffer small = h.upload(new float[] {1f, 2f})) {
                launchAddOne(h, small, 2);
                float[] out = new float[2];
                small.download(out);
                assertExact(new float[] {2f, 3f}, out, "a launch after out of memory");
            }
        }
    }

    @StandInCapable
    @Test
    void closeIsIdempotentAndReported() {
        try (Handle h = Handle.create(0)) {
            DeviceBuffer b = h.allocate(1024);
            assertFalse(b.isClosed());
            assertTrue(b.toString().contains("1024 bytes"), b.toString());
            b.close();
            assertTrue(b.isClosed());
            assertTrue(b.toString().contains("closed"), b.toString());
            b.close();
            assertTrue(b.isClosed());
        }
    }

    @StandInCapable
    @Test
    void buffersSurviveManyAllocationsAndFrees() {
        Random r = freshRandom("allocation churn");
        try (Handle h = Handle.create(0)) {
            for (int i = 0; i < 2000; i++) {
                long bytes = 1 + r.nextInt(1 << 20);
                try (DeviceBuffer b = h.allocate(bytes)) {
                    h.memset(b, i & 0xFF);
                    if (i % 250 == 0) {
                        byte[] out = new byte[(int) bytes];
                        b.download(out);
                        for (byte v : out) {
                            assertEquals((byte) i, v, "byte after memset in round " + i);
                        }
                    }
                }
            }
            h.synchronize();
        }
    }
}
