package dev.cuhandle;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Page-locked ("pinned") host memory ({@code cuMemHostAlloc}, portable to every context), the
 * source and destination of {@link Handle#uploadAsync asynchronous copies} (rule A1). Created by
 * {@link Handle#allocateHost(long) Handle.allocateHost(long)}; close it, or a cleaner frees it with a warning, like a
 * {@link DeviceBuffer}.
 *
 * <pre>{@code
 * try (HostBuffer host = h.allocateHost(4L * n); DeviceBuffer x = h.allocate(4L * n)) {
 *     host.put(0, xs, 0, n);
 *     h.uploadAsync(host, x);                         // returns at once
 *     h.launch(kernel, grid, block, 0, x, n);
 *     h.downloadAsync(x, host).join();                // completes when the data is in host
 *     host.get(0, xs, 0, n);
 * }
 * }</pre>
 *
 * <p><b>Lifetime.</b> An asynchronous copy keeps the buffer in use until its future completes:
 * {@link #close()} (and the cleaner) wait until then, so the GPU never reads or writes freed
 * memory. Closing waits for nothing else, never for the context: the memory goes back to a cache
 * of its context and is handed out again only after the GPU work that used it (copies, and graph
 * replays that recorded copies with it) is done (rule L3 of docs/design.md). A graph that recorded
 * a copy with the buffer keeps it reachable and refuses to replay once it is closed (rule L7). The typed accessors ({@link #getFloat}, {@link #put(long, float[], int, int)} ...) check
 * that the buffer is open and throw {@link IllegalStateException} after close. A view from
 * {@link #asByteBuffer()} keeps the pinned memory alive (rule L1): the memory is freed once the
 * buffer is closed (or cleaned) <i>and</i> no view handed out is reachable any more, so a view
 * never touches freed memory. Drop the views you no longer need: until then the memory stays pinned.
 *
 * <p>The bytes are shared with the GPU: reading a destination before the download's future
 * completes, or writing a source before the upload's future completes, sees or changes data the
 * copy is using. All accessors use the platform's native byte order, like the device.
 */
public final class HostBuffer extends HostBufferTypedAccess implements AutoCloseable {
    /** Bytes per internal view: the typed accessors reach buffers larger than one ByteBuffer's 2 GiB limit through several. */
    private static final long SEGMENT_BYTES = 1L << 30;
    /** Each internal view reaches this far past its segment, so an element at the end of a segment lies inside one view. */
    private static final long SEGMENT_OVERLAP = 8;

    /** The pinned memory and who holds it: this buffer until closed, and every view handed out. */
    private final PinnedMemory memory;
    private final long address;
    private final long byteLength;
    /** Views used only while entered; never handed out. */
    private final ByteBuffer[] segments;

    private HostBuffer(PinnedMemory memory, long address, long bytes, ByteBuffer[] segments) {
        super(memory.pointer, "HostBuffer", p -> memory.release()); // not `this`: the cleaner must not reach it
        this.memory = memory;
        this.address = address;
        this.byteLength = bytes;
        this.segments = segments;
    }

    /** A buffer that owns pinned memory object {@code pointer} of {@code bytes} bytes. */
    static HostBuffer of(long pointer, long bytes) {
        long a;
        ByteBuffer[] views;
        try {
            a = NativeApi.pinnedAddress(pointer);
            int count = (int) ((bytes + SEGMENT_BYTES - 1) / SEGMENT_BYTES);
            views = new ByteBuffer[count];
            for (int i = 0; i < count; i++) {
                long start = i * SEGMENT_BYTES;
                long length = Math.min(bytes - start, SEGMENT_BYTES + SEGMENT_OVERLAP);
                views[i] = NativeApi.pinnedByteBuffer(pointer, start, length).order(ByteOrder.nativeOrder());
            }
        } catch (RuntimeException | Error e) {
            NativeObject.freeNow(pointer, NativeApi::pinnedFree, e);
            throw e;
        }
        return new HostBuffer(new PinnedMemory(pointer), a, bytes, views);
    }

    /**
     * Pinned memory with a count of holders: the HostBuffer (released by its close or cleaner) and each
     * ByteBuffer view handed out (released by a cleaner once the view is unreachable). Freed at zero.
     */
    private static final class PinnedMemory {
        private final long pointer;
        private final AtomicInteger holders = new AtomicInteger(1);

        PinnedMemory(long pointer) {
            this.pointer = pointer;
        }

        /** Makes {@code view} a holder until it becomes unreachable. Called entered, so the count is above 0. */
        void holdFor(ByteBuffer view) {
            holders.incrementAndGet();
            NativeObject.onUnreachable(view, this::release);
        }

        void release() {
            if (holders.decrementAndGet() == 0) {
                NativeApi.pinnedFree(pointer);
            }
        }
    }

    /**
     * Size of the buffer.
     *
     * @return the length in bytes
     */
    public long byteLength() {
        return byteLength;
    }

    /**
     * The host address of the first byte (for interop). It stays valid only while the buffer is open.
     *
     * @return the address
     */
    public long address() {
        return address;
    }

    /**
     * A direct ByteBuffer over the whole buffer, in native byte order. The view keeps the pinned memory
     * alive until it is unreachable, also past {@link #close()} (see the class description).
     *
     * @return a new view of the whole buffer
     * @throws IllegalArgumentException if the buffer holds more than {@link Integer#MAX_VALUE} bytes (use
     *     {@link #asByteBuffer(long, int)})
     * @throws IllegalStateException if the buffer is closed
     */
    public ByteBuffer asByteBuffer() {
        if (byteLength > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("the host buffer holds " + byteLength + " bytes, more than one ByteBuffer can address; use asByteBuffer(offset, length)");
        }
        return asByteBuffer(0, (int) byteLength);
    }

    /**
     * A direct ByteBuffer over {@code length} bytes from {@code offset}, in native byte order. The view keeps
     * the pinned memory alive until it is unreachable, also past {@link #close()} (see the class description).
     *
     * @param offset first byte of the view
     * @param length bytes in the view
     * @return a new view
     * @throws IllegalArgumentException if the range is not inside the buffer
     * @throws IllegalStateException if the buffer is closed
     */
    public ByteBuffer asByteBuffer(long offset, int length) {
        checkRange(offset, length, 1);
        long p = enter();
        try {
            ByteBuffer view = NativeApi.pinnedByteBuffer(p, offset, length).order(ByteOrder.nativeOrder());
            memory.holdFor(view);
            return view;
        } finally {
            exit();
        }
    }

    /** A bulk step: moves {@code n} elements, starting at element {@code done}, through {@code view} (positioned). */
    interface Chunk {
        void move(ByteBuffer view, int done, int n);
    }

    /** Splits {@code length} elements of {@code size} bytes from byte {@code offset} at segment ends. Call entered. */
    void forEachChunk(long offset, int length, int size, Chunk chunk) {
        for (int done = 0; done < length; ) {
            long at = offset + (long) size * done;
            int n = (int) Math.min(length - done, (SEGMENT_BYTES - at % SEGMENT_BYTES + size - 1) / size);
            ByteBuffer view = segment(at).duplicate().order(ByteOrder.nativeOrder());
            view.position(local(at));
            chunk.move(view, done, n);
            done += n;
        }
    }

    /** The internal view that holds byte {@code offset}, at {@link #local(long) local(offset)}. Call entered. */
    ByteBuffer segment(long offset) {
        return segments[(int) (offset / SEGMENT_BYTES)];
    }

    static int local(long offset) {
        return (int) (offset % SEGMENT_BYTES);
    }

    /** Fails unless {@code count} elements of {@code size} bytes from byte {@code offset} lie inside the buffer. */
    void checkRange(long offset, long count, int size) {
        if (offset < 0 || count < 0 || offset > byteLength - count * size) {
            throw new IllegalArgumentException("byte range [" + offset + ", " + offset + "+" + count * size + ") is outside the host buffer of "
                    + byteLength + " bytes; expected 0 <= offset and offset + length <= " + byteLength);
        }
    }

    /**
     * Releases the memory once no call or asynchronous copy uses it: waits for the futures of copies in
     * flight, then hands the memory to its context's pinned cache (see the class description). Idempotent;
     * later accessor calls throw {@link IllegalStateException}.
     *
     * @throws IllegalStateException if this thread is capturing a graph
     */
    @Override
    public void close() {
        Capture.close(this, "HostBuffer.close");
    }

    @Override
    public String toString() {
        return "HostBuffer[" + byteLength + " bytes" + (isClosed() ? ", closed]" : "]");
    }
}
