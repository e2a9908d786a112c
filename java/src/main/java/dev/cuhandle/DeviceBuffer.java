package dev.cuhandle;

import java.lang.ref.Reference;

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
 */
public final class DeviceBuffer implements AutoCloseable {
    private final NativeObject state;
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
    private final long baseAddress;
    private final long byteOffset;
    private final long byteLength;

    DeviceBuffer(Handle owner, long pointer, long bytes, boolean owned) {
        this(owner, pointer, bytes, owned ? "DeviceBuffer" : "wrapped DeviceBuffer", null);
    }

    /**
     * A buffer over native memory object {@code pointer}. With an {@code anchor} (a library whose
     * variable this views) the buffer keeps it reachable and leaks quietly: the anchor closes it.
     */
    DeviceBuffer(Handle owner, long pointer, long bytes, String what, Object anchor) {
        this.owner = owner;
        this.parent = null;
        this.anchor = anchor;
        this.contextId = owner.contextId();
        this.byteOffset = 0;
        this.byteLength = bytes;
        long address;
        try {
            address = NativeApi.bufferAddress(pointer);
        } catch (RuntimeException | Error e) {
            NativeObject.freeNow(pointer, NativeApi::bufferFree, e);
            throw e;
        }
        this.baseAddress = address;
        this.state = anchor == null ? NativeObject.register(this, pointer, what, NativeApi::bufferFree)
                : NativeObject.registerQuiet(this, pointer, what, NativeApi::bufferFree);
    }

    private DeviceBuffer(DeviceBuffer parent, long offset, long length) {
        this.owner = parent.owner;
        this.parent = parent.parent == null ? parent : parent.parent;
        this.anchor = null; // the root buffer holds it
        this.state = parent.state;
        this.contextId = parent.contextId;
        this.baseAddress = parent.baseAddress;
        this.byteOffset = parent.byteOffset + offset;
        this.byteLength = length;
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

    /**
     * The device address of the first byte ({@code CUdeviceptr}; for kernels and interop). It stays valid
     * only while the buffer is open.
     *
     * @return the device address
     */
    public long address() {
        return baseAddress + byteOffset;
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
     * Whether the memory was released: this buffer (or, for a view, the buffer it views) was closed or
     * cleaned.
     *
     * @return {@code true} once closed
     */
    public boolean isClosed() {
        return state.isClosed();
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

    /** Enters a call with {@code handle}: checks the context (K3) and that the buffer is open. */
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

    /** The native pointer of the memory (of the buffer a view was sliced from), for a graph that holds it open while it replays. */
    long nativePointer() {
        return state.pointer();
    }

    /** Leaves a call entered with {@link #enterFor}; keeps this buffer (and a view's parent) reachable until here. */
    void exit() {
        state.exit();
        Reference.reachabilityFence(this);
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

    /**
     * Copies the start of this buffer into all of {@code dst} ({@code dst.length} elements of 4 bytes) on the
     * owner handle's stream, and waits until the data has arrived. Same as
     * {@link Handle#copyToHost(DeviceBuffer, float[], int, int) owner().copyToHost(this, dst, 0, dst.length)}.
     *
     * @param dst the destination; its length says how many elements are copied
     * @throws NullPointerException if {@code dst} is {@code null}
     * @throws IllegalArgumentException if this buffer holds fewer than {@code dst.length * 4} bytes
     * @throws IllegalStateException if this buffer or its owner handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails (including an earlier
     *     asynchronous failure on the stream)
     */
    public void download(float[] dst) {
        java.util.Objects.requireNonNull(dst, "dst");
        owner.copyToHost(this, dst, 0, dst.length);
    }

    /**
     * Copies the start of this buffer into all of {@code dst} ({@code dst.length} elements of 8 bytes) on the
     * owner handle's stream, and waits until the data has arrived. Same as
     * {@link Handle#copyToHost(DeviceBuffer, double[], int, int) owner().copyToHost(this, dst, 0, dst.length)}.
     *
     * @param dst the destination; its length says how many elements are copied
     * @throws NullPointerException if {@code dst} is {@code null}
     * @throws IllegalArgumentException if this buffer holds fewer than {@code dst.length * 8} bytes
     * @throws IllegalStateException if this buffer or its owner handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails (including an earlier
     *     asynchronous failure on the stream)
     */
    public void download(double[] dst) {
        java.util.Objects.requireNonNull(dst, "dst");
        owner.copyToHost(this, dst, 0, dst.length);
    }

    /**
     * Copies the start of this buffer into all of {@code dst} ({@code dst.length} elements of 4 bytes) on the
     * owner handle's stream, and waits until the data has arrived. Same as
     * {@link Handle#copyToHost(DeviceBuffer, int[], int, int) owner().copyToHost(this, dst, 0, dst.length)}.
     *
     * @param dst the destination; its length says how many elements are copied
     * @throws NullPointerException if {@code dst} is {@code null}
     * @throws IllegalArgumentException if this buffer holds fewer than {@code dst.length * 4} bytes
     * @throws IllegalStateException if this buffer or its owner handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails (including an earlier
     *     asynchronous failure on the stream)
     */
    public void download(int[] dst) {
        java.util.Objects.requireNonNull(dst, "dst");
        owner.copyToHost(this, dst, 0, dst.length);
    }

    /**
     * Copies the start of this buffer into all of {@code dst} ({@code dst.length} elements of 8 bytes) on the
     * owner handle's stream, and waits until the data has arrived. Same as
     * {@link Handle#copyToHost(DeviceBuffer, long[], int, int) owner().copyToHost(this, dst, 0, dst.length)}.
     *
     * @param dst the destination; its length says how many elements are copied
     * @throws NullPointerException if {@code dst} is {@code null}
     * @throws IllegalArgumentException if this buffer holds fewer than {@code dst.length * 8} bytes
     * @throws IllegalStateException if this buffer or its owner handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails (including an earlier
     *     asynchronous failure on the stream)
     */
    public void download(long[] dst) {
        java.util.Objects.requireNonNull(dst, "dst");
        owner.copyToHost(this, dst, 0, dst.length);
    }

    /**
     * Copies the start of this buffer into all of {@code dst} ({@code dst.length} elements of 1 bytes) on the
     * owner handle's stream, and waits until the data has arrived. Same as
     * {@link Handle#copyToHost(DeviceBuffer, byte[], int, int) owner().copyToHost(this, dst, 0, dst.length)}.
     *
     * @param dst the destination; its length says how many elements are copied
     * @throws NullPointerException if {@code dst} is {@code null}
     * @throws IllegalArgumentException if this buffer holds fewer than {@code dst.length * 1} bytes
     * @throws IllegalStateException if this buffer or its owner handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails (including an earlier
     *     asynchronous failure on the stream)
     */
    public void download(byte[] dst) {
        java.util.Objects.requireNonNull(dst, "dst");
        owner.copyToHost(this, dst, 0, dst.length);
    }

    /**
     * Copies all of {@code src} ({@code src.length} elements of 4 bytes) to the start of this buffer on the
     * owner handle's stream. Returns once {@code src} has been read (it may be reused at once); the device
     * copy may still be queued. Same as
     * {@link Handle#copyToDevice(float[], int, DeviceBuffer, int) owner().copyToDevice(src, 0, this, src.length)}.
     *
     * @param src the values; its length says how many elements are copied
     * @throws NullPointerException if {@code src} is {@code null}
     * @throws IllegalArgumentException if this buffer holds fewer than {@code src.length * 4} bytes
     * @throws IllegalStateException if this buffer or its owner handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void upload(float[] src) {
        java.util.Objects.requireNonNull(src, "src");
        owner.copyToDevice(src, 0, this, src.length);
    }

    /**
     * Copies all of {@code src} ({@code src.length} elements of 8 bytes) to the start of this buffer on the
     * owner handle's stream. Returns once {@code src} has been read (it may be reused at once); the device
     * copy may still be queued. Same as
     * {@link Handle#copyToDevice(double[], int, DeviceBuffer, int) owner().copyToDevice(src, 0, this, src.length)}.
     *
     * @param src the values; its length says how many elements are copied
     * @throws NullPointerException if {@code src} is {@code null}
     * @throws IllegalArgumentException if this buffer holds fewer than {@code src.length * 8} bytes
     * @throws IllegalStateException if this buffer or its owner handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void upload(double[] src) {
        java.util.Objects.requireNonNull(src, "src");
        owner.copyToDevice(src, 0, this, src.length);
    }

    /**
     * Copies all of {@code src} ({@code src.length} elements of 4 bytes) to the start of this buffer on the
     * owner handle's stream. Returns once {@code src} has been read (it may be reused at once); the device
     * copy may still be queued. Same as
     * {@link Handle#copyToDevice(int[], int, DeviceBuffer, int) owner().copyToDevice(src, 0, this, src.length)}.
     *
     * @param src the values; its length says how many elements are copied
     * @throws NullPointerException if {@code src} is {@code null}
     * @throws IllegalArgumentException if this buffer holds fewer than {@code src.length * 4} bytes
     * @throws IllegalStateException if this buffer or its owner handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void upload(int[] src) {
        java.util.Objects.requireNonNull(src, "src");
        owner.copyToDevice(src, 0, this, src.length);
    }

    /**
     * Copies all of {@code src} ({@code src.length} elements of 8 bytes) to the start of this buffer on the
     * owner handle's stream. Returns once {@code src} has been read (it may be reused at once); the device
     * copy may still be queued. Same as
     * {@link Handle#copyToDevice(long[], int, DeviceBuffer, int) owner().copyToDevice(src, 0, this, src.length)}.
     *
     * @param src the values; its length says how many elements are copied
     * @throws NullPointerException if {@code src} is {@code null}
     * @throws IllegalArgumentException if this buffer holds fewer than {@code src.length * 8} bytes
     * @throws IllegalStateException if this buffer or its owner handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void upload(long[] src) {
        java.util.Objects.requireNonNull(src, "src");
        owner.copyToDevice(src, 0, this, src.length);
    }

    /**
     * Copies all of {@code src} ({@code src.length} elements of 1 bytes) to the start of this buffer on the
     * owner handle's stream. Returns once {@code src} has been read (it may be reused at once); the device
     * copy may still be queued. Same as
     * {@link Handle#copyToDevice(byte[], int, DeviceBuffer, int) owner().copyToDevice(src, 0, this, src.length)}.
     *
     * @param src the values; its length says how many elements are copied
     * @throws NullPointerException if {@code src} is {@code null}
     * @throws IllegalArgumentException if this buffer holds fewer than {@code src.length * 1} bytes
     * @throws IllegalStateException if this buffer or its owner handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void upload(byte[] src) {
        java.util.Objects.requireNonNull(src, "src");
        owner.copyToDevice(src, 0, this, src.length);
    }

    /**
     * A view of {@code count} {@code float} elements from element {@code first}: the same as
     * {@link #slice(long, long) slice(first * 4, count * 4)}, counted in elements as every BLAS
     * argument is (so {@code x.sliceFloats(i, n)} instead of {@code x.slice(4L * i, 4L * n)}).
     *
     * @param first the first element of the view, counted from the start of this buffer (or view)
     * @param count elements in the view
     * @return the view, which keeps this buffer's memory reachable but does not own it
     * @throws IllegalArgumentException if the elements are not inside this buffer
     */
    public DeviceBuffer sliceFloats(long first, long count) {
        return sliceElements(first, count, 4, "float");
    }

    /**
     * A view of {@code count} {@code double} elements from element {@code first}: the same as
     * {@link #slice(long, long) slice(first * 8, count * 8)}, counted in elements as every BLAS
     * argument is (so {@code x.sliceDoubles(i, n)} instead of {@code x.slice(8L * i, 8L * n)}).
     *
     * @param first the first element of the view, counted from the start of this buffer (or view)
     * @param count elements in the view
     * @return the view, which keeps this buffer's memory reachable but does not own it
     * @throws IllegalArgumentException if the elements are not inside this buffer
     */
    public DeviceBuffer sliceDoubles(long first, long count) {
        return sliceElements(first, count, 8, "double");
    }

    /**
     * A view of {@code count} {@code int} elements from element {@code first}: the same as
     * {@link #slice(long, long) slice(first * 4, count * 4)}, counted in elements as every BLAS
     * argument is (so {@code x.sliceInts(i, n)} instead of {@code x.slice(4L * i, 4L * n)}).
     *
     * @param first the first element of the view, counted from the start of this buffer (or view)
     * @param count elements in the view
     * @return the view, which keeps this buffer's memory reachable but does not own it
     * @throws IllegalArgumentException if the elements are not inside this buffer
     */
    public DeviceBuffer sliceInts(long first, long count) {
        return sliceElements(first, count, 4, "int");
    }

    /**
     * A view of {@code count} {@code long} elements from element {@code first}: the same as
     * {@link #slice(long, long) slice(first * 8, count * 8)}, counted in elements as every BLAS
     * argument is (so {@code x.sliceLongs(i, n)} instead of {@code x.slice(8L * i, 8L * n)}).
     *
     * @param first the first element of the view, counted from the start of this buffer (or view)
     * @param count elements in the view
     * @return the view, which keeps this buffer's memory reachable but does not own it
     * @throws IllegalArgumentException if the elements are not inside this buffer
     */
    public DeviceBuffer sliceLongs(long first, long count) {
        return sliceElements(first, count, 8, "long");
    }

    private DeviceBuffer sliceElements(long first, long count, int elementBytes, String type) {
        long max = byteLength / elementBytes;
        if (first < 0 || count < 0 || first > max - count) {
            throw new IllegalArgumentException("elements [" + first + ", " + first + "+" + count + ") are outside the buffer, which holds " + max
                    + " " + type + " elements (" + byteLength + " bytes)");
        }
        return new DeviceBuffer(this, first * elementBytes, count * elementBytes);
    }

    /**
     * Copies {@code length} elements of {@code src} from {@code srcOffset} to the start of this
     * buffer, on the owner handle's stream. Returns once {@code src} has been read; the device copy
     * may still be queued. Same as
     * {@link Handle#copyToDevice(float[], int, DeviceBuffer, int) owner().copyToDevice(src, srcOffset, this, length)};
     * for another offset in the buffer, upload into a {@link #slice(long, long) slice}.
     *
     * @param src the source array
     * @param srcOffset the first element of {@code src} to copy
     * @param length how many elements to copy (4 bytes each)
     * @throws NullPointerException if {@code src} is {@code null}
     * @throws IllegalArgumentException if the range is outside {@code src} or this buffer is too short
     * @throws IllegalStateException if this buffer or its owner handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void upload(float[] src, int srcOffset, int length) {
        java.util.Objects.requireNonNull(src, "src");
        owner.copyToDevice(src, srcOffset, this, length);
    }

    /**
     * Copies {@code length} elements from the start of this buffer into {@code dst} from
     * {@code dstOffset}, on the owner handle's stream, and waits until they have arrived. Same as
     * {@link Handle#copyToHost(DeviceBuffer, float[], int, int) owner().copyToHost(this, dst, dstOffset, length)};
     * for another offset in the buffer, download from a {@link #slice(long, long) slice}.
     *
     * @param dst the destination array
     * @param dstOffset the first element of {@code dst} to write
     * @param length how many elements to copy (4 bytes each)
     * @throws NullPointerException if {@code dst} is {@code null}
     * @throws IllegalArgumentException if the range is outside {@code dst} or this buffer is too short
     * @throws IllegalStateException if this buffer or its owner handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails (including an
     *     earlier asynchronous failure on the stream)
     */
    public void download(float[] dst, int dstOffset, int length) {
        java.util.Objects.requireNonNull(dst, "dst");
        owner.copyToHost(this, dst, dstOffset, length);
    }

    /**
     * Copies {@code length} elements of {@code src} from {@code srcOffset} to the start of this
     * buffer, on the owner handle's stream. Returns once {@code src} has been read; the device copy
     * may still be queued. Same as
     * {@link Handle#copyToDevice(double[], int, DeviceBuffer, int) owner().copyToDevice(src, srcOffset, this, length)};
     * for another offset in the buffer, upload into a {@link #slice(long, long) slice}.
     *
     * @param src the source array
     * @param srcOffset the first element of {@code src} to copy
     * @param length how many elements to copy (8 bytes each)
     * @throws NullPointerException if {@code src} is {@code null}
     * @throws IllegalArgumentException if the range is outside {@code src} or this buffer is too short
     * @throws IllegalStateException if this buffer or its owner handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void upload(double[] src, int srcOffset, int length) {
        java.util.Objects.requireNonNull(src, "src");
        owner.copyToDevice(src, srcOffset, this, length);
    }

    /**
     * Copies {@code length} elements from the start of this buffer into {@code dst} from
     * {@code dstOffset}, on the owner handle's stream, and waits until they have arrived. Same as
     * {@link Handle#copyToHost(DeviceBuffer, double[], int, int) owner().copyToHost(this, dst, dstOffset, length)};
     * for another offset in the buffer, download from a {@link #slice(long, long) slice}.
     *
     * @param dst the destination array
     * @param dstOffset the first element of {@code dst} to write
     * @param length how many elements to copy (8 bytes each)
     * @throws NullPointerException if {@code dst} is {@code null}
     * @throws IllegalArgumentException if the range is outside {@code dst} or this buffer is too short
     * @throws IllegalStateException if this buffer or its owner handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails (including an
     *     earlier asynchronous failure on the stream)
     */
    public void download(double[] dst, int dstOffset, int length) {
        java.util.Objects.requireNonNull(dst, "dst");
        owner.copyToHost(this, dst, dstOffset, length);
    }

    /**
     * Copies {@code length} elements of {@code src} from {@code srcOffset} to the start of this
     * buffer, on the owner handle's stream. Returns once {@code src} has been read; the device copy
     * may still be queued. Same as
     * {@link Handle#copyToDevice(int[], int, DeviceBuffer, int) owner().copyToDevice(src, srcOffset, this, length)};
     * for another offset in the buffer, upload into a {@link #slice(long, long) slice}.
     *
     * @param src the source array
     * @param srcOffset the first element of {@code src} to copy
     * @param length how many elements to copy (4 bytes each)
     * @throws NullPointerException if {@code src} is {@code null}
     * @throws IllegalArgumentException if the range is outside {@code src} or this buffer is too short
     * @throws IllegalStateException if this buffer or its owner handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void upload(int[] src, int srcOffset, int length) {
        java.util.Objects.requireNonNull(src, "src");
        owner.copyToDevice(src, srcOffset, this, length);
    }

    /**
     * Copies {@code length} elements from the start of this buffer into {@code dst} from
     * {@code dstOffset}, on the owner handle's stream, and waits until they have arrived. Same as
     * {@link Handle#copyToHost(DeviceBuffer, int[], int, int) owner().copyToHost(this, dst, dstOffset, length)};
     * for another offset in the buffer, download from a {@link #slice(long, long) slice}.
     *
     * @param dst the destination array
     * @param dstOffset the first element of {@code dst} to write
     * @param length how many elements to copy (4 bytes each)
     * @throws NullPointerException if {@code dst} is {@code null}
     * @throws IllegalArgumentException if the range is outside {@code dst} or this buffer is too short
     * @throws IllegalStateException if this buffer or its owner handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails (including an
     *     earlier asynchronous failure on the stream)
     */
    public void download(int[] dst, int dstOffset, int length) {
        java.util.Objects.requireNonNull(dst, "dst");
        owner.copyToHost(this, dst, dstOffset, length);
    }

    /**
     * Copies {@code length} elements of {@code src} from {@code srcOffset} to the start of this
     * buffer, on the owner handle's stream. Returns once {@code src} has been read; the device copy
     * may still be queued. Same as
     * {@link Handle#copyToDevice(long[], int, DeviceBuffer, int) owner().copyToDevice(src, srcOffset, this, length)};
     * for another offset in the buffer, upload into a {@link #slice(long, long) slice}.
     *
     * @param src the source array
     * @param srcOffset the first element of {@code src} to copy
     * @param length how many elements to copy (8 bytes each)
     * @throws NullPointerException if {@code src} is {@code null}
     * @throws IllegalArgumentException if the range is outside {@code src} or this buffer is too short
     * @throws IllegalStateException if this buffer or its owner handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void upload(long[] src, int srcOffset, int length) {
        java.util.Objects.requireNonNull(src, "src");
        owner.copyToDevice(src, srcOffset, this, length);
    }

    /**
     * Copies {@code length} elements from the start of this buffer into {@code dst} from
     * {@code dstOffset}, on the owner handle's stream, and waits until they have arrived. Same as
     * {@link Handle#copyToHost(DeviceBuffer, long[], int, int) owner().copyToHost(this, dst, dstOffset, length)};
     * for another offset in the buffer, download from a {@link #slice(long, long) slice}.
     *
     * @param dst the destination array
     * @param dstOffset the first element of {@code dst} to write
     * @param length how many elements to copy (8 bytes each)
     * @throws NullPointerException if {@code dst} is {@code null}
     * @throws IllegalArgumentException if the range is outside {@code dst} or this buffer is too short
     * @throws IllegalStateException if this buffer or its owner handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails (including an
     *     earlier asynchronous failure on the stream)
     */
    public void download(long[] dst, int dstOffset, int length) {
        java.util.Objects.requireNonNull(dst, "dst");
        owner.copyToHost(this, dst, dstOffset, length);
    }

    /**
     * Copies {@code length} elements of {@code src} from {@code srcOffset} to the start of this
     * buffer, on the owner handle's stream. Returns once {@code src} has been read; the device copy
     * may still be queued. Same as
     * {@link Handle#copyToDevice(byte[], int, DeviceBuffer, int) owner().copyToDevice(src, srcOffset, this, length)};
     * for another offset in the buffer, upload into a {@link #slice(long, long) slice}.
     *
     * @param src the source array
     * @param srcOffset the first element of {@code src} to copy
     * @param length how many elements to copy (1 byte each)
     * @throws NullPointerException if {@code src} is {@code null}
     * @throws IllegalArgumentException if the range is outside {@code src} or this buffer is too short
     * @throws IllegalStateException if this buffer or its owner handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void upload(byte[] src, int srcOffset, int length) {
        java.util.Objects.requireNonNull(src, "src");
        owner.copyToDevice(src, srcOffset, this, length);
    }

    /**
     * Copies {@code length} elements from the start of this buffer into {@code dst} from
     * {@code dstOffset}, on the owner handle's stream, and waits until they have arrived. Same as
     * {@link Handle#copyToHost(DeviceBuffer, byte[], int, int) owner().copyToHost(this, dst, dstOffset, length)};
     * for another offset in the buffer, download from a {@link #slice(long, long) slice}.
     *
     * @param dst the destination array
     * @param dstOffset the first element of {@code dst} to write
     * @param length how many elements to copy (1 byte each)
     * @throws NullPointerException if {@code dst} is {@code null}
     * @throws IllegalArgumentException if the range is outside {@code dst} or this buffer is too short
     * @throws IllegalStateException if this buffer or its owner handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails (including an
     *     earlier asynchronous failure on the stream)
     */
    public void download(byte[] dst, int dstOffset, int length) {
        java.util.Objects.requireNonNull(dst, "dst");
        owner.copyToHost(this, dst, dstOffset, length);
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
     * @throws IllegalStateException if this thread is capturing a graph
     */
    @Override
    public void close() {
        if (parent == null) {
            Capture.refuseOnThisThread("DeviceBuffer.close");
            state.close();
        }
        Reference.reachabilityFence(this);
    }

    @Override
    public String toString() {
        return "DeviceBuffer[0x" + Long.toHexString(address()) + ", " + byteLength + " bytes, context id " + contextId + (isClosed() ? ", closed]" : "]");
    }
}
