package dev.cuhandle;

import java.nio.ByteBuffer;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * Copies between Java arrays (and ByteBuffers) and device memory, for {@link Handle} and
 * {@link DeviceBuffer} (rules T1 and L4): the checks, the split of large copies into ranges copied
 * on several threads ({@link TransferPlan}, {@link TransferThreads}), and the asynchronous copies.
 * Each range moves through the native pipeline ({@code rust/src/core/transfer}): pinned staging
 * slots of the context, the host copy of one chunk (a memcpy in a critical region held for that copy
 * alone, or a JNI region copy) overlapping the DMA of the one before, and no part of the array
 * pinned while the thread waits for the GPU.
 */
final class ArrayTransfers {
    /** Stream argument of {@code NativeApi.arrayCopy}: the handle's current stream. */
    static final long HANDLE_STREAM = -1;

    private ArrayTransfers() {}

    /** A primitive array type: the JVM's letter for it (which picks JNI's region copy) and its element size. */
    enum Kind {
        BYTE(byte.class, 'B', 1), SHORT(short.class, 'S', 2), CHAR(char.class, 'C', 2), INT(int.class, 'I', 4), LONG(long.class, 'J', 8),
        FLOAT(float.class, 'F', 4), DOUBLE(double.class, 'D', 8);

        private static final Kind[] ALL = values();
        final Class<?> element;
        final int code;
        final int bytes;

        Kind(Class<?> element, char code, int bytes) {
            this.element = element;
            this.code = code;
            this.bytes = bytes;
        }

        static Kind of(Object array) {
            return ofArrayClass(array.getClass());
        }

        /** The kind of the arrays of class {@code arrayClass} ({@code float[].class} and friends). */
        static Kind ofArrayClass(Class<?> arrayClass) {
            Class<?> element = arrayClass.getComponentType();
            for (Kind kind : ALL) {
                if (kind.element == element) {
                    return kind;
                }
            }
            throw new IllegalArgumentException("unsupported array type " + arrayClass.getSimpleName()
                    + "; expected byte[], short[], char[], int[], long[], float[] or double[]");
        }
    }

    /** {@link Handle#upload(float[])} and friends: a new buffer of the array's size holding its elements. */
    static DeviceBuffer uploadNew(Handle handle, Object values) {
        Objects.requireNonNull(values, "values");
        int length = java.lang.reflect.Array.getLength(values);
        DeviceBuffer b = handle.allocate((long) length * Kind.of(values).bytes);
        try {
            copy(handle, b, values, 0, length, true);
            return b;
        } catch (RuntimeException | Error e) {
            b.close();
            throw e;
        }
    }

    /**
     * Copies {@code length} elements from {@code array[arrayOffset]} to the start of {@code buffer}
     * ({@code upload}) or back, on the handle's current stream. An upload returns once the array
     * has been read, a download once the elements are in the array.
     */
    static void copy(Handle handle, DeviceBuffer buffer, Object array, int arrayOffset, int length, boolean upload) {
        Capture.refuseOnThisThread(upload ? "a copy from a Java array to the device" : "a copy from the device to a Java array");
        Kind kind = check(buffer, array, arrayOffset, length, upload);
        handle.awaitQueuedWorkCancellably();
        long h = handle.enter();
        long b = 0;
        try {
            b = buffer.enterFor(handle);
            run(h, b, buffer.byteOffset(), array, kind, arrayOffset, length, upload, HANDLE_STREAM, false);
        } finally {
            DeviceBuffer.exit(buffer, b);
            handle.exit();
        }
    }

    /**
     * Starts the copy of {@link #copy} on a cuhandle thread and returns its future at once. The
     * stream is the handle's current one at this call, so the copy is ordered after the work
     * queued on it before. The handle and buffer stay entered until the copy is done (their close
     * waits); the future completes after that, normally once the last chunk is on the device
     * (upload) or in the array (download), exceptionally with what made the copy fail.
     */
    static CompletableFuture<Void> copyAsync(Handle handle, DeviceBuffer buffer, Object array, int arrayOffset, int length, boolean upload) {
        Capture.refuseOnThisThread(upload ? "an asynchronous copy from a Java array to the device" : "an asynchronous copy from the device to a Java array");
        Kind kind = check(buffer, array, arrayOffset, length, upload);
        long h = handle.enter();
        long b = 0;
        long stream;
        try {
            b = buffer.enterFor(handle);
            stream = NativeApi.handleStream(h);
        } catch (RuntimeException | Error e) {
            DeviceBuffer.exit(buffer, b);
            handle.exit();
            throw e;
        }
        long entered = b;
        long bufferOffset = buffer.byteOffset();
        return TransferThreads.future(() -> run(h, entered, bufferOffset, array, kind, arrayOffset, length, upload, stream, true), () -> {
            DeviceBuffer.exit(buffer, entered);
            handle.exit();
        });
    }

    /**
     * {@link Handle#copyToDevice(ByteBuffer, int, DeviceBuffer, long) Handle.copyToDevice(ByteBuffer, int, DeviceBuffer, long)} and {@code copyToHost}: a direct
     * buffer goes to the driver with no staging, a heap buffer through {@link #copyHeapBuffer}.
     */
    static void copyByteBuffer(Handle handle, DeviceBuffer buffer, ByteBuffer host, int offset, long bytes, boolean upload) {
        Capture.refuseOnThisThread(upload ? "a copy from a ByteBuffer to the device" : "a copy from the device to a ByteBuffer");
        Objects.requireNonNull(buffer, "device buffer");
        Objects.requireNonNull(host, "ByteBuffer");
        if (!upload && host.isReadOnly()) {
            throw new IllegalArgumentException("the destination ByteBuffer is read-only");
        }
        if (offset < 0 || bytes < 0 || offset > host.capacity() - bytes) {
            throw new IllegalArgumentException("byte range [" + offset + ", " + offset + "+" + bytes
                    + ") is outside the ByteBuffer's capacity of " + host.capacity());
        }
        buffer.checkBytes(bytes, upload ? "destination" : "source");
        if (!host.isDirect()) {
            copyHeapBuffer(handle, buffer, host, offset, bytes, upload);
            return;
        }
        handle.awaitQueuedWorkCancellably();
        long h = handle.enter();
        long b = 0;
        try {
            b = buffer.enterFor(handle);
            if (upload) {
                NativeApi.uploadDirect(h, b, buffer.byteOffset(), host, offset, bytes);
            } else {
                NativeApi.downloadDirect(h, b, buffer.byteOffset(), host, offset, bytes);
            }
        } finally {
            DeviceBuffer.exit(buffer, b);
            handle.exit();
        }
    }

    /**
     * {@link Handle#copyToDevice(ByteBuffer, int, DeviceBuffer, long) Handle.copyToDevice(ByteBuffer, int, DeviceBuffer, long)} and {@code copyToHost} for a heap
     * ByteBuffer (range and read-only checks done): its backing array goes through {@link #copy}; a
     * read-only one, whose array is out of reach, is read into a temporary array piece by piece.
     */
    static void copyHeapBuffer(Handle handle, DeviceBuffer buffer, ByteBuffer heap, int offset, long bytes, boolean upload) {
        if (heap.hasArray()) {
            copy(handle, buffer, heap.array(), heap.arrayOffset() + offset, (int) bytes, upload);
            return;
        }
        // Read-only (the caller refused read-only destinations): only an upload reaches here.
        ByteBuffer source = heap.duplicate();
        byte[] piece = new byte[(int) Math.min(bytes, TransferPlan.of(bytes, 1).slotBytes)];
        for (long done = 0; done < bytes; ) {
            int n = (int) Math.min(piece.length, bytes - done);
            source.limit(offset + (int) done + n).position(offset + (int) done);
            source.get(piece, 0, n);
            copy(handle, buffer.slice(done, n), piece, 0, n, true);
            done += n;
        }
    }

    /** Checks the arguments; returns the array's kind. */
    private static Kind check(DeviceBuffer buffer, Object array, int arrayOffset, int length, boolean upload) {
        Objects.requireNonNull(buffer, "device buffer");
        Objects.requireNonNull(array, upload ? "source array" : "destination array");
        Kind kind = Kind.of(array);
        int arrayLength = java.lang.reflect.Array.getLength(array);
        if (arrayOffset < 0 || length < 0 || arrayOffset > arrayLength - length) {
            throw new IllegalArgumentException("array range [" + arrayOffset + ", " + arrayOffset + "+" + length
                    + ") is outside the array of length " + arrayLength + "; expected 0 <= offset, 0 <= length, offset + length <= array length");
        }
        buffer.checkBytes((long) length * kind.bytes, upload ? "destination" : "source");
        return kind;
    }

    /**
     * Runs the copy on entered pointers: in one native call, or split into ranges copied at once by
     * this thread and helpers, all on one stream (so that the stream sees one copy).
     * {@code waitForDevice}: an upload returns only once its last chunk is on the device.
     */
    private static void run(long h, long b, long bufferOffset, Object array, Kind kind, int arrayOffset, int length, boolean upload, long stream,
            boolean waitForDevice) {
        long bytes = (long) length * kind.bytes;
        long arrayByteOffset = (long) arrayOffset * kind.bytes;
        TransferPlan plan = TransferPlan.of(bytes, kind.bytes);
        if (plan.threads == 1) {
            NativeApi.arrayCopy(h, b, bufferOffset, array, kind.code, arrayByteOffset, bytes, upload, stream, plan.chunkBytes, plan.depth, plan.slotBytes,
                    plan.idleSlots, waitForDevice, plan.criticalCopy);
            return;
        }
        long shared = stream == HANDLE_STREAM ? NativeApi.handleStream(h) : stream;
        TransferThreads.copyRanges(plan.threads, i -> {
            long start = i * plan.rangeBytes;
            long n = Math.min(plan.rangeBytes, bytes - start);
            NativeApi.arrayCopy(h, b, bufferOffset + start, array, kind.code, arrayByteOffset + start, n, upload, shared, plan.chunkBytes, plan.depth,
                    plan.slotBytes, plan.idleSlots, waitForDevice, plan.criticalCopy);
        });
    }
}
