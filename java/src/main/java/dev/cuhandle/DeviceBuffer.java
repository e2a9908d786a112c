package dev.cuhandle;

import java.util.function.LongConsumer;

/**
 * Device memory of one context (rule K3). Created by a {@link Handle}; copies use that handle's
 * stream unless another handle of the same context is given. A {@link #slice} is a view that
 * shares the memory and never frees it. Close it; a cleaner frees unreachable unclosed buffers.
 *
 * <pre>{@code
 * try (DeviceBuffer x = h.allocate(4L * n)) {                  // sizes in bytes
 *     x.upload(floats);                                        // n floats
 *     DeviceBuffer tail = x.sliceFloats(n / 2, n - n / 2);     // a view, in elements
 *     Blas.sscal(h, n - n / 2, 2f, tail, 1);
 *     x.download(floats);                                      // waits for the sscal
 * }                                                            // freed in stream order
 * }</pre>
 *
 * <p>Closing never waits for work that did not use the buffer: the memory returns to its context's
 * pool once every stream that used it has finished with it (rule L3).
 *
 * <h2 id="arrays">Copies between Java arrays and the device</h2>
 *
 * <p>The copies of this class ({@code upload}, {@code download}) and those of {@link Handle}
 * ({@code copyToDevice}, {@code copyToHost}, {@code upload} and their asynchronous forms) hold a
 * Java array in a JNI critical region only for the {@code memcpy} of one chunk (at most 4 MiB), never
 * while the calling thread waits for the GPU, so a copy never holds up the garbage collector or other
 * threads behind GPU work (rule L4). The elements move in chunks through page-locked staging memory
 * of the handle's context (a small pool, reused by later copies): one chunk is filled while the DMA
 * of the one before runs, and downloads run the same way in reverse, so a copy takes about as long
 * as the slower of the two steps, and the DMA runs at the speed of pinned memory. An array of 2 MiB
 * or more (by default) is split into ranges that several threads copy at once (the caller and
 * cuhandle's {@code cuhandle-transfer-helper} threads), all on the handle's stream. Chunk sizes
 * and thread counts are chosen by size; the system properties {@code cuhandle.transfer.threads},
 * {@code bytesPerThread}, {@code chunkBytes}, {@code minChunkBytes}, {@code depth} and
 * {@code idleSlots} (all under {@code cuhandle.transfer.}) tune them; {@code criticalCopy=false}
 * copies each chunk with JNI region copies instead, which never pin the array.
 *
 * <p>Heap ByteBuffers take the same path. Direct ByteBuffers and {@link HostBuffer}s go to the
 * driver with no staging; a direct buffer copied many times can be page-locked with
 * {@link HostRegistration#register(Handle, java.nio.ByteBuffer)}.
 *
 * <h2 id="batches">Many arrays at once</h2>
 *
 * <p>{@link Handle#uploadAll(float[][], DeviceBuffer[]) Handle.uploadAll} and {@link Handle#downloadAll(DeviceBuffer[], float[][]) Handle.downloadAll}
 * (for every primitive type, with asynchronous forms) copy many arrays, each to or from its own buffer, in one
 * pass of the pipeline above: the arrays are laid end to end, so many small arrays share one staging chunk, and
 * the copies of a chunk go to the driver in one {@code cuMemcpyBatchAsync} call (CUDA 12.8+ drivers), or one copy
 * per array piece on older drivers (pieces whose buffers follow one another in device memory become one copy).
 * The guarantees are those of a single array: no critical region across a wait for the GPU, the handle's stream,
 * each array read or written once. A batch runs on one thread. The destinations of an upload must not overlap.
 * {@code cuhandle.transfer.batchEntry=false} keeps batches off {@code cuMemcpyBatchAsync} (for comparisons).
 *
 * <h2 id="async">Asynchronous array copies</h2>
 *
 * <p>{@code uploadAsync} and {@code downloadAsync} of an array return a future at once; a
 * {@code cuhandle-transfer-async} thread runs the copy as above, on the stream the handle uses at
 * the call, after the work queued on it before. <b>Do not touch the array, and do not use the
 * buffer (an upload's destination is not filled yet, a download's source must not change), until
 * the future completes</b>: once the last chunk is on the device (upload) or in the array
 * (download). Work queued on the handle after the call is not ordered after the copy:
 * queue it when the future completes ({@code thenRun}). The handle and the buffer stay in use until
 * then (their {@code close()} waits). At most 32 such copies run at once; more wait their turn.
 */
public final class DeviceBuffer extends DeviceBufferTypedAccess implements AutoCloseable {
    private final Handle owner;
    /**
     * The buffer a view was sliced from (null for a buffer that owns its state). A view holds it
     * strongly so that the memory behind a view can never be cleaned while the view is reachable
     * (rule L1).
     */
    private final DeviceBuffer parent;
    /** What must stay reachable while this buffer is (the Library of a variable view), or null. */
    private final Object anchor;
    private final long contextId;
    /**
     * The device address of the root buffer's first byte, or {@link #UNREAD}: a new allocation reads
     * it on the first {@link #address()} (most temporaries never ask, and the read is a JNI call of
     * its own). Views use their root's.
     */
    private volatile long baseAddress;
    private final long byteOffset;
    private final long byteLength;

    /**
     * Frees a native buffer. A class, not {@code NativeApi::bufferFree}: the first method reference of a JVM costs
     * milliseconds of {@code java.lang.invoke} set-up, and a process's first allocation runs this (issue 35;
     * ColdPathLambdaTest).
     */
    private static final LongConsumer FREE = new LongConsumer() {
        @Override
        public void accept(long pointer) {
            NativeApi.bufferFree(pointer);
        }
    };

    private DeviceBuffer(Handle owner, long pointer, long address, long bytes, String what, Object anchor) {
        super(pointer, what, FREE, anchor != null);
        this.owner = owner;
        this.parent = null;
        this.anchor = anchor;
        this.contextId = owner.contextId();
        this.byteOffset = 0;
        this.byteLength = bytes;
        this.baseAddress = address;
    }

    private DeviceBuffer(DeviceBuffer parent, long offset, long length) {
        super(parent.state);
        this.owner = parent.owner;
        this.parent = parent.parent == null ? parent : parent.parent;
        this.anchor = null; // the root buffer holds it
        this.contextId = parent.contextId;
        this.baseAddress = UNREAD; // see the root's
        this.byteOffset = parent.byteOffset + offset;
        this.byteLength = length;
    }

    /** {@link #baseAddress} not read yet. No device address is all ones. */
    private static final long UNREAD = -1L;

    /** A buffer that owns native memory object {@code pointer}, a new allocation whose address is read when asked for. */
    static DeviceBuffer allocated(Handle owner, long pointer, long bytes) {
        return new DeviceBuffer(owner, pointer, UNREAD, bytes, "DeviceBuffer", null);
    }

    /**
     * A buffer over memory allocated elsewhere at {@code address}, native memory object
     * {@code pointer}. With an {@code anchor} (a library whose variable this views) the buffer keeps
     * it reachable and leaks quietly: the anchor closes it.
     */
    static DeviceBuffer wrapping(Handle owner, long pointer, long address, long bytes, String what, Object anchor) {
        return new DeviceBuffer(owner, pointer, address, bytes, what, anchor);
    }

    /**
     * Size of this buffer (or view).
     *
     * @return the length in bytes
     */
    public long byteLength() {
        return byteLength;
    }

    long byteOffset() {
        return byteOffset;
    }

    /** The buffer that owns the memory: this one, or the one a view was sliced from. */
    DeviceBuffer root() {
        return parent == null ? this : parent;
    }

    /**
     * The device address of the first byte ({@code CUdeviceptr}; for kernels and interop). It stays valid
     * only while the buffer is open. A new allocation reads it from its native object on the first call
     * (allocations whose address nobody asks for save that call).
     *
     * @return the device address
     * @throws IllegalStateException if the buffer was closed before its address was ever read
     */
    public long address() {
        DeviceBuffer root = parent == null ? this : parent;
        long base = root.baseAddress;
        return (base != UNREAD ? base : root.readAddress()) + byteOffset;
    }

    /**
     * Reads the root buffer's device address from its native object (once: racing readers store the same value).
     *
     * @throws IllegalStateException if the buffer is closed
     */
    private long readAddress() {
        long pointer = enter();
        try {
            long base = NativeApi.bufferAddress(pointer);
            baseAddress = base;
            return base;
        } finally {
            exit();
        }
    }

    /**
     * The unique id ({@code cuCtxGetId}) of the context the memory belongs to.
     *
     * @return the context id
     */
    public long contextId() {
        return contextId;
    }

    /**
     * The handle that created this buffer (for a view, the one that created the buffer it views). Its stream
     * carries the copies of {@link #upload(float[])} and {@link #download(float[])} and friends.
     *
     * @return the owner handle
     */
    public Handle owner() {
        return owner;
    }

    /**
     * A view of {@code length} bytes from byte {@code offset}, sharing this buffer's memory. The
     * view keeps the memory reachable (it is never cleaned while the view is in use) but does not
     * own it: closing the view does nothing, and once this buffer is closed every use of the view
     * throws {@link IllegalStateException}.
     *
     * @param offset first byte of the view, counted from the start of this buffer (or view)
     * @param length bytes in the view
     * @return the view
     * @throws IllegalArgumentException if the range is not inside this buffer
     */
    public DeviceBuffer slice(long offset, long length) {
        if (offset < 0 || length < 0 || offset > byteLength - length) {
            throw new IllegalArgumentException("slice [" + offset + ", " + offset + "+" + length + ") is outside the buffer of " + byteLength + " bytes");
        }
        return new DeviceBuffer(this, offset, length);
    }

    void checkBytes(long bytes, String role) {
        if (bytes > byteLength) {
            throw new IllegalArgumentException("the " + role + " device buffer holds " + byteLength + " bytes; " + bytes + " bytes were asked for");
        }
    }

    /**
     * Enters a call with {@code handle}: checks the context (K3) and that the buffer is open; a capture on
     * the handle notes the buffer a view was sliced from, which owns the memory (rule L7).
     */
    long enterFor(Handle handle) {
        if (handle.contextId() != contextId) {
            throw new IllegalArgumentException("this DeviceBuffer belongs to context id " + contextId + " (device " + owner.device().ordinal()
                    + ") but the handle is bound to context id " + handle.contextId() + " (device " + handle.device().ordinal()
                    + "); device memory can only be used with handles of its own context");
        }
        long pointer = state.enter();
        Capture.noteUse(handle, parent == null ? this : parent);
        return pointer;
    }

    /** {@link #enterFor} for an optional buffer: 0 (nothing entered) when {@code buffer} is null. */
    static long enterFor(DeviceBuffer buffer, Handle handle) {
        return buffer == null ? 0 : buffer.enterFor(handle);
    }

    /** Leaves a call entered with {@link #enterFor}; {@code pointer} 0 means it was never entered. */
    static void exit(DeviceBuffer buffer, long pointer) {
        if (pointer != 0) {
            buffer.exit();
        }
    }

    /** The view of {@code sliceFloats} and friends: elements of {@code elementBytes} bytes, named {@code type} in messages. */
    DeviceBuffer sliceElements(long first, long count, int elementBytes, String type) {
        long max = byteLength / elementBytes;
        if (first < 0 || count < 0 || first > max - count) {
            throw new IllegalArgumentException("elements [" + first + ", " + first + "+" + count + ") are outside the buffer, which holds " + max
                    + " " + type + " elements (" + byteLength + " bytes)");
        }
        return new DeviceBuffer(this, first * elementBytes, count * elementBytes);
    }

    /**
     * Frees the memory (a view or wrapped pointer frees nothing) without waiting for the GPU: the free is
     * queued in stream order after the work that used the buffer, on every stream of every handle that
     * used it (and the graph replays queued with it), and the memory is reused only after that (rule L3
     * of docs/design.md). Work that did not touch the buffer is never waited for. Idempotent; returns when
     * the free is queued, also when another thread closes it at the same time. Work you queued yourself
     * with its raw {@link #address()} on a stream cuhandle does not know is not tracked: synchronise that
     * stream first.
     *
     * @throws IllegalStateException if this thread is capturing a graph and this buffer owns memory (closing a
     *     view releases nothing, so it is allowed anywhere, a capture included)
     */
    @Override
    public void close() {
        if (parent == null) {
            Capture.close(this, "DeviceBuffer.close");
        }
    }

    @Override
    public String toString() {
        String where;
        try {
            where = "0x" + Long.toHexString(address());
        } catch (IllegalStateException closedBeforeItWasRead) {
            where = "address never read";
        }
        return "DeviceBuffer[" + where + ", " + byteLength + " bytes, context id " + contextId + (isClosed() ? ", closed]" : "]");
    }
}
