package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * Bad inputs to buffer operations (rule K3), one test per kind: null arrays, negative or
 * out-of-range offsets and lengths, copies larger than the buffer, read-only or too small ByteBuffers,
 * bad slices, bad sizes, closed buffers and buffers of another context. Each is refused with the
 * exception that names the problem, and the buffer's contents are untouched afterwards.
 */
@GpuTest
@StandInCapable // argument checks only: every case is refused before anything is launched
class BufferBadInputGpuTest extends KernelGpuTestBase {
    private static final int N = 64;
    private Handle h;
    private DeviceBuffer b;
    private float[] contents;

    @BeforeEach
    void openHandleAndBuffer() {
        contents = randomFloats(new Random(N), N);
        h = Handle.create(0);
        b = h.upload(contents);
    }

    @AfterEach
    void contentsAreUntouchedAndEverythingIsClosed() {
        try {
            if (!b.isClosed()) {
                float[] out = new float[N];
                b.download(out);
                assertExact(contents, out, "the buffer's contents after refused operations");
            }
        } finally {
            b.close();
            h.close();
        }
    }

    private static void refused(Class<? extends RuntimeException> type, Executable call, String... messageParts) {
        RuntimeException e = assertThrows(type, call);
        if (messageParts.length > 0) {
            assertContains(e.getMessage(), messageParts);
        }
    }

    @Test
    void nullArraysAreNullPointers() {
        refused(NullPointerException.class, () -> h.upload((float[]) null), "values");
        refused(NullPointerException.class, () -> h.upload((double[]) null), "values");
        refused(NullPointerException.class, () -> h.upload((int[]) null), "values");
        refused(NullPointerException.class, () -> h.upload((long[]) null), "values");
        refused(NullPointerException.class, () -> h.upload((byte[]) null), "values");
        refused(NullPointerException.class, () -> b.download((float[]) null));
        refused(NullPointerException.class, () -> b.download((double[]) null));
        refused(NullPointerException.class, () -> b.download((int[]) null));
        refused(NullPointerException.class, () -> b.download((long[]) null));
        refused(NullPointerException.class, () -> b.download((byte[]) null));
        refused(NullPointerException.class, () -> b.upload((float[]) null));
        refused(NullPointerException.class, () -> b.upload((double[]) null));
        refused(NullPointerException.class, () -> h.copyToDevice((float[]) null, 0, b, 1), "source array");
        refused(NullPointerException.class, () -> h.copyToDevice((double[]) null, 0, b, 1), "source array");
        refused(NullPointerException.class, () -> h.copyToDevice((int[]) null, 0, b, 1), "source array");
        refused(NullPointerException.class, () -> h.copyToDevice((long[]) null, 0, b, 1), "source array");
        refused(NullPointerException.class, () -> h.copyToDevice((byte[]) null, 0, b, 1), "source array");
        refused(NullPointerException.class, () -> h.copyToHost(b, (float[]) null, 0, 1), "destination array");
        refused(NullPointerException.class, () -> h.copyToHost(b, (double[]) null, 0, 1), "destination array");
        refused(NullPointerException.class, () -> h.copyToHost(b, (int[]) null, 0, 1), "destination array");
        refused(NullPointerException.class, () -> h.copyToHost(b, (long[]) null, 0, 1), "destination array");
        refused(NullPointerException.class, () -> h.copyToHost(b, (byte[]) null, 0, 1), "destination array");
        refused(NullPointerException.class, () -> h.copyToDevice((ByteBuffer) null, 0, b, 1), "ByteBuffer");
        refused(NullPointerException.class, () -> h.copyToHost(b, (ByteBuffer) null, 0, 1), "ByteBuffer");
    }

    @Test
    void nullBuffersAreNullPointers() {
        refused(NullPointerException.class, () -> h.copyToDevice(new float[1], 0, null, 1));
        refused(NullPointerException.class, () -> h.copyToHost(null, new float[1], 0, 1));
        refused(NullPointerException.class, () -> h.copyToDevice(ByteBuffer.allocateDirect(4), 0, null, 4));
        refused(NullPointerException.class, () -> h.memset(null, 0));
        refused(NullPointerException.class, () -> h.copy(null, b));
        refused(NullPointerException.class, () -> h.copy(b, null));
    }

    @Test
    void negativeArrayOffsetsAndLengthsAreIllegalArguments() {
        float[] host = new float[N];
        refused(IllegalArgumentException.class, () -> h.copyToDevice(host, -1, b, 1), "[-1", "array of length " + N);
        refused(IllegalArgumentException.class, () -> h.copyToDevice(host, 0, b, -1), "-1)");
        refused(IllegalArgumentException.class, () -> h.copyToHost(b, host, -1, 1), "[-1");
        refused(IllegalArgumentException.class, () -> h.copyToHost(b, host, 0, -1), "-1)");
        refused(IllegalArgumentException.class, () -> h.copyToDevice(new double[N], Integer.MIN_VALUE, b, 1));
        refused(IllegalArgumentException.class, () -> h.copyToHost(b, new long[N], 0, Integer.MIN_VALUE));
        refused(IllegalArgumentException.class, () -> h.copyToDevice(new byte[N], -5, b, 2));
        refused(IllegalArgumentException.class, () -> h.copyToHost(b, new int[N], 0, -100));
    }

    @Test
    void arrayRangesPastTheArrayAreIllegalArguments() {
        float[] host = new float[N];
        refused(IllegalArgumentException.class, () -> h.copyToDevice(host, 1, b, N), "[1, 1+" + N + ")", "array of length " + N);
        refused(IllegalArgumentException.class, () -> h.copyToDevice(host, N + 1, b, 0), "array of length " + N);
        refused(IllegalArgumentException.class, () -> h.copyToHost(b, host, N - 3, 4), "array of length " + N);
        // offset + length overflows int: still refused, not wrapped around.
        refused(IllegalArgumentException.class, () -> h.copyToDevice(host, Integer.MAX_VALUE, b, 2));
        refused(IllegalArgumentException.class, () -> h.copyToHost(b, host, 2, Integer.MAX_VALUE));
        refused(IllegalArgumentException.class, () -> h.copyToHost(b, new byte[8], 4, 5));
        refused(IllegalArgumentException.class, () -> h.copyToDevice(new long[2], 1, b, 2));
    }

    @Test
    void copiesLargerThanTheBufferAreIllegalArguments() {
        refused(IllegalArgumentException.class, () -> h.copyToDevice(new float[N + 1], 0, b, N + 1), "holds " + 4 * N + " bytes", (4 * N + 4) + " bytes");
        refused(IllegalArgumentException.class, () -> h.copyToHost(b, new double[N], 0, N), "holds " + 4 * N + " bytes", 8 * N + " bytes");
        refused(IllegalArgumentException.class, () -> b.upload(new double[N]), "holds " + 4 * N + " bytes");
        refused(IllegalArgumentException.class, () -> b.download(new float[N + 1]), "holds " + 4 * N + " bytes");
        refused(IllegalArgumentException.class, () -> b.download(new long[N / 2 + 1]));
        DeviceBuffer small = b.slice(0, 8);
        refused(IllegalArgumentException.class, () -> small.download(new float[3]), "holds 8 bytes", "12 bytes");
        refused(IllegalArgumentException.class, () -> h.copy(b, small), "holds 8 bytes", 4 * N + " bytes");
        refused(IllegalArgumentException.class, () -> h.copyToDevice(ByteBuffer.allocateDirect(4 * N + 1), 0, b, 4 * N + 1), "holds " + 4 * N);
    }

    @Test
    void readOnlyAndOutOfRangeByteBuffersAreIllegalArguments() {
        refused(IllegalArgumentException.class, () -> h.copyToHost(b, ByteBuffer.allocate(16).asReadOnlyBuffer(), 0, 16), "read-only");
        refused(IllegalArgumentException.class, () -> h.copyToDevice(ByteBuffer.allocate(32), 30, b, 4), "[30, 30+4)", "capacity of 32");
        refused(IllegalArgumentException.class, () -> h.copyToHost(b, ByteBuffer.allocateDirect(16).asReadOnlyBuffer(), 0, 16), "read-only");
        ByteBuffer direct = ByteBuffer.allocateDirect(32);
        refused(IllegalArgumentException.class, () -> h.copyToDevice(direct, -1, b, 4), "capacity of 32");
        refused(IllegalArgumentException.class, () -> h.copyToDevice(direct, 0, b, -4), "capacity of 32");
        refused(IllegalArgumentException.class, () -> h.copyToDevice(direct, 30, b, 4), "[30, 30+4)", "capacity of 32");
        refused(IllegalArgumentException.class, () -> h.copyToHost(b, direct, 0, 33), "capacity of 32");
        refused(IllegalArgumentException.class, () -> h.copyToHost(b, direct, Integer.MAX_VALUE, 2), "capacity of 32");
        refused(IllegalArgumentException.class, () -> h.copyToHost(b, direct, 1, Long.MAX_VALUE), "capacity of 32");
        refused(IllegalArgumentException.class, () -> h.copyToHost(b, direct, 1, Long.MIN_VALUE), "capacity of 32");
        // A slice of a direct buffer is direct: its capacity counts, not the parent's.
        ByteBuffer part = direct.position(16).slice();
        refused(IllegalArgumentException.class, () -> h.copyToDevice(part, 0, b, 17), "capacity of 16");
    }

    @Test
    void badSlicesAreIllegalArguments() {
        long len = b.byteLength();
        long[][] bad = {{-1, 4}, {0, -1}, {0, len + 1}, {len + 1, 0}, {len - 3, 4}, {1, len}, {Long.MAX_VALUE, 1}, {1, Long.MAX_VALUE},
            {Long.MIN_VALUE, 0}, {0, Long.MIN_VALUE}};
        for (long[] s : bad) {
            refused(IllegalArgumentException.class, () -> b.slice(s[0], s[1]), "slice [" + s[0] + ", " + s[0] + "+" + s[1] + ")",
                    "buffer of " + len + " bytes");
        }
        DeviceBuffer view = b.slice(8, 16);
        refused(IllegalArgumentException.class, () -> view.slice(0, 17), "buffer of 16 bytes");
        refused(IllegalArgumentException.class, () -> view.slice(9, 8), "buffer of 16 bytes");
    }

    @Test
    void negativeSizesAreIllegalArguments() {
        refused(IllegalArgumentException.class, () -> h.allocate(-1), "-1 bytes");
        refused(IllegalArgumentException.class, () -> h.allocate(Long.MIN_VALUE), String.valueOf(Long.MIN_VALUE));
        refused(IllegalArgumentException.class, () -> h.wrapPointer(b.address(), -1), "-1 bytes");
    }

    @Test
    void wrappingPointerZeroWithASizeIsAnIllegalArgument() {
        refused(IllegalArgumentException.class, () -> h.wrapPointer(0, 16), "device pointer to wrap is 0 (NULL)");
        refused(IllegalArgumentException.class, () -> h.wrapPointer(-16, 64), "negative (-16)");
        refused(IllegalArgumentException.class, () -> h.wrapPointer(Long.MAX_VALUE - 8, 64), "overflows");
    }

    @Test
    void aClosedBufferIsAnIllegalState() {
        DeviceBuffer other = h.allocate(64);
        DeviceBuffer view = other.slice(0, 32);
        other.close();
        refused(IllegalStateException.class, () -> other.download(new float[4]), "closed");
        refused(IllegalStateException.class, () -> other.upload(new float[4]), "closed");
        refused(IllegalStateException.class, () -> h.copyToHost(other, new byte[4], 0, 4), "closed");
        refused(IllegalStateException.class, () -> h.copyToDevice(ByteBuffer.allocateDirect(4), 0, other, 4), "closed");
        refused(IllegalStateException.class, () -> h.memset(other, 0), "closed");
        refused(IllegalStateException.class, () -> h.copy(other, b), "closed");
        refused(IllegalStateException.class, () -> h.copy(b.slice(0, 64), other), "closed");
        refused(IllegalStateException.class, () -> view.download(new float[4]), "closed");
        refused(IllegalStateException.class, () -> h.memset(view, 0), "closed");
    }

    @Test
    void aBufferAfterItsHandleClosedIsAnIllegalState() {
        Handle second = Handle.create(0);
        DeviceBuffer owned = second.upload(new float[8]);
        second.close();
        // Its own operations go through the closed owner handle.
        refused(IllegalStateException.class, () -> owned.download(new float[8]), "closed");
        // With another open handle of the same context the buffer still works until it is closed.
        float[] out = new float[8];
        h.copyToHost(owned, out, 0, 8);
        assertArrayEquals(new float[8], out);
        owned.close();
        refused(IllegalStateException.class, () -> h.copyToHost(owned, out, 0, 8), "closed");
    }

    /** K3 for copies and memset: a buffer of a user context with a handle of the primary context. */
    @Test
    void aBufferOfAnotherContextIsAnIllegalArgument() {
        long user = 0;
        Handle onUser = null;
        DeviceBuffer foreign = null;
        try {
            user = newUserContext(0);
            onUser = Handle.wrap(user);
            foreign = onUser.upload(new float[N]);
            DeviceBuffer f = foreign;
            String both = "context id " + onUser.contextId();
            refused(IllegalArgumentException.class, () -> h.copyToHost(f, new float[N], 0, N), both, "context id " + h.contextId());
            refused(IllegalArgumentException.class, () -> h.copyToDevice(new float[N], 0, f, N), both);
            refused(IllegalArgumentException.class, () -> h.copyToDevice(ByteBuffer.allocateDirect(16), 0, f, 16), both);
            refused(IllegalArgumentException.class, () -> h.memset(f, 0), both);
            refused(IllegalArgumentException.class, () -> h.copy(f, b), both);
            refused(IllegalArgumentException.class, () -> h.copy(b, f), both);
            refused(IllegalArgumentException.class, () -> h.memset(f.slice(0, 4), 0), both);
            Event e = onUser.createEvent();
            try {
                refused(IllegalArgumentException.class, () -> e.record(h), "context");
            } finally {
                e.close();
            }
            // Unchanged and usable with its own handle.
            float[] out = new float[N];
            foreign.download(out);
            assertArrayEquals(new float[N], out);
            assertEquals(0L, current());
        } finally {
            closeQuietly(foreign);
            closeQuietly(onUser);
            destroyQuietly(user);
        }
    }
}
