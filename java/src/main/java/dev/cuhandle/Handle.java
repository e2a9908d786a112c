package dev.cuhandle;

import java.lang.ref.Reference;

import java.nio.ByteBuffer;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A cuBLAS-style handle: bound to one driver context, with a default stream, usable from any thread
 * (rules H1-H9 of DESIGN.md). No operation changes which context is current on the calling
 * thread. Close it (try-with-resources); an unreachable unclosed handle is released by a cleaner
 * with a warning.
 */
public final class Handle implements AutoCloseable {
    private final NativeObject state;
    private final long rawContext;
    private final long contextId;
    private final Device device;
    private final boolean ownsPrimaryContext;
    /** Futures of this handle not yet settled (Completions keeps it): close() skips their scan at 0. */
    final AtomicInteger pendingFutures = new AtomicInteger();
    /** The graph capture in progress ({@link #capture(Runnable)}), or null. */
    volatile Capture capture;

    private Handle(long pointer) {
        long[] info;
        Device d;
        try {
            info = NativeApi.handleInfo(pointer);
            d = Cuda.device((int) info[2]);
        } catch (RuntimeException | Error e) {
            // Never registered: released here, not by the cleaner with a misleading leak warning.
            NativeObject.freeNow(pointer, NativeApi::handleDestroy, e);
            throw e;
        }
        this.rawContext = info[0];
        this.contextId = info[1];
        this.ownsPrimaryContext = info[3] != 0;
        this.device = d;
        this.state = NativeObject.register(this, pointer, "Handle", NativeApi::handleDestroy);
    }

    /**
     * Creates a handle like {@code cublasCreate}: binds to the context current on this thread (rule H1;
     * retained if it is a primary context, borrowed otherwise), or, with none current, to the primary context
     * of {@link Cuda#getDevice()} (rule H2), which it retains. The caller's current context is not changed.
     *
     * @return a new handle; close it
     * @throws CudaException if the driver cannot be loaded or initialised, the selected device does not exist
     *     ({@link CudaError#INVALID_DEVICE}), or the current context is unusable
     */
    public static Handle create() {
        Native.ensureLoaded();
        return new Handle(NativeApi.handleCreateCurrent(Cuda.getDevice()));
    }

    /**
     * Creates a handle bound to (and retaining) the primary context of {@code device} (rule H3). The caller's
     * current context is not changed.
     *
     * @param device the device number, from 0 to {@link Cuda#deviceCount()} - 1
     * @return a new handle; close it to release the primary context
     * @throws CudaException if the device does not exist ({@link CudaError#INVALID_DEVICE}), or the driver
     *     cannot be loaded, initialised or fails
     */
    public static Handle create(int device) {
        Native.ensureLoaded();
        return new Handle(NativeApi.handleCreateDevice(device));
    }

    /**
     * Binds to an existing context without owning it (H3): the caller keeps it alive.
     *
     * <p>Values that cannot be a driver context (0, negative, inside the first page of memory,
     * not 8-byte aligned) are refused before the driver sees them. A value that looks like a
     * context but is not one the driver created (a stale or random address) cannot be checked
     * without the driver dereferencing it: passing one is undefined behaviour, as in C.
     *
     * @param rawContext a {@code CUcontext} from the driver (JCuda's {@code getNativePointer()}, say)
     * @return a handle bound to that context
     * @throws IllegalArgumentException if {@code rawContext} cannot be a context
     * @throws CudaException if the driver rejects the context (for example, destroyed)
     */
    public static Handle wrap(long rawContext) {
        Native.ensureLoaded();
        return new Handle(NativeApi.handleWrap(rawContext));
    }

    /**
     * The device of the handle's context.
     *
     * @return the device
     */
    public Device device() {
        return device;
    }

    /**
     * The raw {@code CUcontext} the handle is bound to (for interop).
     *
     * @return the context as a number
     */
    public long rawContext() {
        return rawContext;
    }

    /**
     * The context's unique id ({@code cuCtxGetId}), read at creation; a reset or re-created context at the
     * same address has another id (rule H8).
     *
     * @return the context id
     */
    public long contextId() {
        return contextId;
    }

    /**
     * Whether the handle retained its device's primary context (and releases it on close), rather than
     * borrowing a context.
     *
     * @return {@code true} for a retained primary context
     */
    public boolean ownsPrimaryContext() {
        return ownsPrimaryContext;
    }

    /**
     * Whether the handle was closed (or cleaned).
     *
     * @return {@code true} once closed
     */
    public boolean isClosed() {
        return state.isClosed();
    }

    /** Runs a no-argument native operation inside a call (a static method reference allocates nothing). */
    private void call(java.util.function.LongConsumer operation) {
        long h = enter();
        try {
            operation.accept(h);
        } finally {
            exit();
        }
    }

    /** Enters a call: returns the native pointer; pair with {@link #exit()}. */
    long enter() {
        long pointer = state.enter();
        Capture running = capture;
        if (running != null && running.thread != Thread.currentThread()) {
            state.exit();
            throw running.otherThreadRefused();
        }
        return pointer;
    }

    /** Waits until no call but the caller's own is in flight (see {@link Capture}). */
    void awaitOtherCalls() {
        state.awaitCallsAtMost(1);
    }

    /** Leaves a call; keeps this handle reachable until here, so the cleaner never runs during a call (L2). */
    void exit() {
        state.exit();
        Reference.reachabilityFence(this);
    }

    /**
     * Checks that the handle's context still exists and is the one the handle was bound to (rule H8).
     *
     * @throws IllegalStateException if the handle is closed
     * @throws CudaException if the context was destroyed, replaced or reset
     */
    public void validate() {
        call(NativeApi::handleValidate);
    }

    /**
     * Makes the handle's context current on this thread and leaves it so ({@code cuCtxSetCurrent}), for raw
     * driver calls: the one operation that changes the caller's current context (rule H4).
     *
     * @throws IllegalStateException if the handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void makeCurrent() {
        call(NativeApi::handleMakeCurrent);
    }

    /**
     * Waits for all work queued on the handle's current stream ({@code cuStreamSynchronize}).
     *
     * @throws IllegalStateException if the handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails (including an
     *     asynchronous failure of earlier work, such as a sticky error of a kernel)
     */
    public void synchronize() {
        Capture.refuseOnThisThread("Handle.synchronize");
        call(NativeApi::handleSynchronize);
    }

    /**
     * Sends later work to a raw {@code CUstream} of this handle's context (0 or 1 = the legacy
     * default stream), like {@code cublasSetStream}. The previous stream is synchronised first.
     *
     * <p>{@code CU_STREAM_PER_THREAD} (2) is refused: it is a different stream on every calling
     * thread, so the handle could not order its reductions, {@link #synchronize()} or
     * {@link #close()} on it. Values that cannot be a stream (negative, inside the first page, not
     * 8-byte aligned) are refused before the driver sees them; a stream of another context is
     * refused by asking the driver. A value that looks like a stream but is not a live one cannot
     * be checked: passing one is undefined behaviour, as in C.
     *
     * @param rawStream a {@code CUstream} of this handle's context, or 0
     * @throws IllegalArgumentException if the value cannot be a stream of this context
     * @throws CudaException if the driver rejects the stream
     */
    public void setStream(long rawStream) {
        Capture.refuseOnThisThread("Handle.setStream");
        long h = enter();
        try {
            NativeApi.handleSetStream(h, rawStream);
        } finally {
            exit();
        }
    }

    /**
     * Sends later work back to the handle's default non-blocking stream (rule H9), after synchronising
     * the current one.
     *
     * @throws IllegalStateException if the handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void resetStream() {
        Capture.refuseOnThisThread("Handle.resetStream");
        call(NativeApi::handleResetStream);
    }

    /**
     * The raw {@code CUstream} work goes to: the one given to {@link #setStream(long)}, or the handle's
     * default non-blocking stream. That one comes from a pool of 32 per context, taken in turn by the
     * handles of the context on their first use (so handles created one after another run
     * concurrently); it is never destroyed, because the driver keeps a destroyed stream's device
     * memory cached while the context lives.
     *
     * @return the stream as a number (0 or 1 for the legacy default stream)
     * @throws IllegalStateException if the handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public long stream() {
        long h = enter();
        try {
            return NativeApi.handleStream(h);
        } finally {
            exit();
        }
    }

    /**
     * Free device memory in bytes as the driver reports it ({@code cuMemGetInfo}) in this handle's
     * context: memory of the whole device that no context of any process holds.
     *
     * @return free bytes of the handle's device
     * @throws CudaException if the context is gone or the driver fails
     * @throws IllegalStateException if the handle is closed
     */
    public long freeMemory() {
        long h = enter();
        try {
            return NativeApi.handleFreeMemory(h);
        } finally {
            exit();
        }
    }

    /**
     * Allocates device memory in this handle's context ({@code cuMemAlloc}; not stream-ordered, so every
     * handle of the context may use it on any stream). The contents are not initialised; see
     * {@link #memset(DeviceBuffer, int)}.
     *
     * @param bytes size in bytes, 0 or more
     * @return a new buffer, owned by the caller (close it)
     * @throws IllegalArgumentException if {@code bytes} is negative
     * @throws IllegalStateException if the handle is closed
     * @throws CudaException if the memory cannot be allocated ({@link CudaError#OUT_OF_MEMORY}, with the free
     *     memory in the message), the context was destroyed or reset, or the driver fails
     */
    public DeviceBuffer allocate(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("buffer size is " + bytes + " bytes; expected >= 0");
        }
        Capture.refuseOnThisThread("Handle.allocate (and upload of a new buffer)");
        long h = enter();
        try {
            return new DeviceBuffer(this, NativeApi.bufferAllocate(h, bytes), bytes, true);
        } finally {
            exit();
        }
    }

    /**
     * Views memory someone else allocated in this context (interop); closing it frees nothing.
     *
     * <p>An address that cannot be device memory (0 with a non-zero size, negative, inside the
     * first page) is refused. Whether the range really is live device memory of this context
     * cannot be checked: the caller keeps it allocated while the view is used. BLAS calls check
     * the alignment of every operand's absolute address, so a misaligned view is refused there
     * rather than faulting on the device.
     *
     * @param deviceAddress the first byte ({@code CUdeviceptr})
     * @param bytes size of the range in bytes
     * @return a buffer that views the range
     * @throws IllegalArgumentException if the address or size cannot be valid
     */
    public DeviceBuffer wrapPointer(long deviceAddress, long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("buffer size is " + bytes + " bytes; expected >= 0");
        }
        long h = enter();
        try {
            return new DeviceBuffer(this, NativeApi.bufferWrap(h, deviceAddress, bytes), bytes, false);
        } finally {
            exit();
        }
    }

    /** A view of a library variable at {@code address} in this handle's context, closed by (and keeping alive) {@code library}. */
    DeviceBuffer wrapVariable(long address, long bytes, String what, Library library) {
        long h = enter();
        try {
            return new DeviceBuffer(this, NativeApi.bufferWrap(h, address, bytes), bytes, what, library);
        } finally {
            exit();
        }
    }

    /**
     * Allocates a buffer of {@code values.length * 4} bytes in this handle's context and copies
     * {@code values} into it, on this handle's stream. Returns once the array has been read; the copy may
     * still be queued (later work on this handle's stream sees the data).
     *
     * @param values the elements to upload
     * @return a new buffer, owned by the caller (close it)
     * @throws NullPointerException if {@code values} is {@code null}
     * @throws IllegalStateException if the handle is closed
     * @throws CudaException if the memory cannot be allocated ({@link CudaError#OUT_OF_MEMORY}), the context
     *     was destroyed or reset, or the driver fails
     */
    public DeviceBuffer upload(float[] values) {
        return uploadArray(values);
    }

    /**
     * Allocates a buffer of {@code values.length * 8} bytes in this handle's context and copies
     * {@code values} into it, on this handle's stream. Returns once the array has been read; the copy may
     * still be queued (later work on this handle's stream sees the data).
     *
     * @param values the elements to upload
     * @return a new buffer, owned by the caller (close it)
     * @throws NullPointerException if {@code values} is {@code null}
     * @throws IllegalStateException if the handle is closed
     * @throws CudaException if the memory cannot be allocated ({@link CudaError#OUT_OF_MEMORY}), the context
     *     was destroyed or reset, or the driver fails
     */
    public DeviceBuffer upload(double[] values) {
        return uploadArray(values);
    }

    /**
     * Allocates a buffer of {@code values.length * 4} bytes in this handle's context and copies
     * {@code values} into it, on this handle's stream. Returns once the array has been read; the copy may
     * still be queued (later work on this handle's stream sees the data).
     *
     * @param values the elements to upload
     * @return a new buffer, owned by the caller (close it)
     * @throws NullPointerException if {@code values} is {@code null}
     * @throws IllegalStateException if the handle is closed
     * @throws CudaException if the memory cannot be allocated ({@link CudaError#OUT_OF_MEMORY}), the context
     *     was destroyed or reset, or the driver fails
     */
    public DeviceBuffer upload(int[] values) {
        return uploadArray(values);
    }

    /**
     * Allocates a buffer of {@code values.length * 8} bytes in this handle's context and copies
     * {@code values} into it, on this handle's stream. Returns once the array has been read; the copy may
     * still be queued (later work on this handle's stream sees the data).
     *
     * @param values the elements to upload
     * @return a new buffer, owned by the caller (close it)
     * @throws NullPointerException if {@code values} is {@code null}
     * @throws IllegalStateException if the handle is closed
     * @throws CudaException if the memory cannot be allocated ({@link CudaError#OUT_OF_MEMORY}), the context
     *     was destroyed or reset, or the driver fails
     */
    public DeviceBuffer upload(long[] values) {
        return uploadArray(values);
    }

    /**
     * Allocates a buffer of {@code values.length * 1} bytes in this handle's context and copies
     * {@code values} into it, on this handle's stream. Returns once the array has been read; the copy may
     * still be queued (later work on this handle's stream sees the data).
     *
     * @param values the elements to upload
     * @return a new buffer, owned by the caller (close it)
     * @throws NullPointerException if {@code values} is {@code null}
     * @throws IllegalStateException if the handle is closed
     * @throws CudaException if the memory cannot be allocated ({@link CudaError#OUT_OF_MEMORY}), the context
     *     was destroyed or reset, or the driver fails
     */
    public DeviceBuffer upload(byte[] values) {
        return uploadArray(values);
    }

    private DeviceBuffer uploadArray(Object values) {
        Objects.requireNonNull(values, "values");
        int length = java.lang.reflect.Array.getLength(values);
        DeviceBuffer b = allocate((long) length * elementBytes(values));
        try {
            copyArray(b, values, 0, length, true);
            return b;
        } catch (RuntimeException e) {
            b.close();
            throw e;
        }
    }

    /**
     * Copies {@code length} elements ({@code length * 4} bytes) from {@code src[srcOffset]} onwards to the
     * start of {@code dst}, on this handle's stream. Returns once the source has been read (the array may be
     * reused at once); the device copy may still be queued. The array is read in chunks and never pinned, so
     * the garbage collector is never held up.
     *
     * @param src the source array
     * @param srcOffset the first element of {@code src} to copy
     * @param dst the destination buffer, of this handle's context
     * @param length number of elements to copy
     * @throws NullPointerException if {@code src} or {@code dst} is {@code null}
     * @throws IllegalArgumentException if {@code [srcOffset, srcOffset + length)} is not inside {@code src},
     *     {@code dst} holds fewer than {@code length * 4} bytes, or {@code dst} belongs to another context
     * @throws IllegalStateException if the handle or {@code dst} is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void copyToDevice(float[] src, int srcOffset, DeviceBuffer dst, int length) {
        copyArray(dst, src, srcOffset, length, true);
    }

    /**
     * Copies {@code length} elements ({@code length * 8} bytes) from {@code src[srcOffset]} onwards to the
     * start of {@code dst}, on this handle's stream. Returns once the source has been read (the array may be
     * reused at once); the device copy may still be queued. The array is read in chunks and never pinned, so
     * the garbage collector is never held up.
     *
     * @param src the source array
     * @param srcOffset the first element of {@code src} to copy
     * @param dst the destination buffer, of this handle's context
     * @param length number of elements to copy
     * @throws NullPointerException if {@code src} or {@code dst} is {@code null}
     * @throws IllegalArgumentException if {@code [srcOffset, srcOffset + length)} is not inside {@code src},
     *     {@code dst} holds fewer than {@code length * 8} bytes, or {@code dst} belongs to another context
     * @throws IllegalStateException if the handle or {@code dst} is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void copyToDevice(double[] src, int srcOffset, DeviceBuffer dst, int length) {
        copyArray(dst, src, srcOffset, length, true);
    }

    /**
     * Copies {@code length} elements ({@code length * 4} bytes) from {@code src[srcOffset]} onwards to the
     * start of {@code dst}, on this handle's stream. Returns once the source has been read (the array may be
     * reused at once); the device copy may still be queued. The array is read in chunks and never pinned, so
     * the garbage collector is never held up.
     *
     * @param src the source array
     * @param srcOffset the first element of {@code src} to copy
     * @param dst the destination buffer, of this handle's context
     * @param length number of elements to copy
     * @throws NullPointerException if {@code src} or {@code dst} is {@code null}
     * @throws IllegalArgumentException if {@code [srcOffset, srcOffset + length)} is not inside {@code src},
     *     {@code dst} holds fewer than {@code length * 4} bytes, or {@code dst} belongs to another context
     * @throws IllegalStateException if the handle or {@code dst} is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void copyToDevice(int[] src, int srcOffset, DeviceBuffer dst, int length) {
        copyArray(dst, src, srcOffset, length, true);
    }

    /**
     * Copies {@code length} elements ({@code length * 8} bytes) from {@code src[srcOffset]} onwards to the
     * start of {@code dst}, on this handle's stream. Returns once the source has been read (the array may be
     * reused at once); the device copy may still be queued. The array is read in chunks and never pinned, so
     * the garbage collector is never held up.
     *
     * @param src the source array
     * @param srcOffset the first element of {@code src} to copy
     * @param dst the destination buffer, of this handle's context
     * @param length number of elements to copy
     * @throws NullPointerException if {@code src} or {@code dst} is {@code null}
     * @throws IllegalArgumentException if {@code [srcOffset, srcOffset + length)} is not inside {@code src},
     *     {@code dst} holds fewer than {@code length * 8} bytes, or {@code dst} belongs to another context
     * @throws IllegalStateException if the handle or {@code dst} is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void copyToDevice(long[] src, int srcOffset, DeviceBuffer dst, int length) {
        copyArray(dst, src, srcOffset, length, true);
    }

    /**
     * Copies {@code length} elements ({@code length * 1} bytes) from {@code src[srcOffset]} onwards to the
     * start of {@code dst}, on this handle's stream. Returns once the source has been read (the array may be
     * reused at once); the device copy may still be queued. The array is read in chunks and never pinned, so
     * the garbage collector is never held up.
     *
     * @param src the source array
     * @param srcOffset the first element of {@code src} to copy
     * @param dst the destination buffer, of this handle's context
     * @param length number of elements to copy
     * @throws NullPointerException if {@code src} or {@code dst} is {@code null}
     * @throws IllegalArgumentException if {@code [srcOffset, srcOffset + length)} is not inside {@code src},
     *     {@code dst} holds fewer than {@code length * 1} bytes, or {@code dst} belongs to another context
     * @throws IllegalStateException if the handle or {@code dst} is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void copyToDevice(byte[] src, int srcOffset, DeviceBuffer dst, int length) {
        copyArray(dst, src, srcOffset, length, true);
    }

    /**
     * Copies {@code length} elements ({@code length * 4} bytes) from the start of {@code src} to
     * {@code dst[dstOffset]} onwards, on this handle's stream, and waits until they have arrived (so earlier
     * work on the stream is done too). The array is written in chunks and never pinned.
     *
     * @param src the source buffer, of this handle's context
     * @param dst the destination array
     * @param dstOffset the first element of {@code dst} to write
     * @param length number of elements to copy
     * @throws NullPointerException if {@code src} or {@code dst} is {@code null}
     * @throws IllegalArgumentException if {@code [dstOffset, dstOffset + length)} is not inside {@code dst},
     *     {@code src} holds fewer than {@code length * 4} bytes, or {@code src} belongs to another context
     * @throws IllegalStateException if the handle or {@code src} is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails (including an earlier
     *     asynchronous failure on the stream)
     */
    public void copyToHost(DeviceBuffer src, float[] dst, int dstOffset, int length) {
        copyArray(src, dst, dstOffset, length, false);
    }

    /**
     * Copies {@code length} elements ({@code length * 8} bytes) from the start of {@code src} to
     * {@code dst[dstOffset]} onwards, on this handle's stream, and waits until they have arrived (so earlier
     * work on the stream is done too). The array is written in chunks and never pinned.
     *
     * @param src the source buffer, of this handle's context
     * @param dst the destination array
     * @param dstOffset the first element of {@code dst} to write
     * @param length number of elements to copy
     * @throws NullPointerException if {@code src} or {@code dst} is {@code null}
     * @throws IllegalArgumentException if {@code [dstOffset, dstOffset + length)} is not inside {@code dst},
     *     {@code src} holds fewer than {@code length * 8} bytes, or {@code src} belongs to another context
     * @throws IllegalStateException if the handle or {@code src} is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails (including an earlier
     *     asynchronous failure on the stream)
     */
    public void copyToHost(DeviceBuffer src, double[] dst, int dstOffset, int length) {
        copyArray(src, dst, dstOffset, length, false);
    }

    /**
     * Copies {@code length} elements ({@code length * 4} bytes) from the start of {@code src} to
     * {@code dst[dstOffset]} onwards, on this handle's stream, and waits until they have arrived (so earlier
     * work on the stream is done too). The array is written in chunks and never pinned.
     *
     * @param src the source buffer, of this handle's context
     * @param dst the destination array
     * @param dstOffset the first element of {@code dst} to write
     * @param length number of elements to copy
     * @throws NullPointerException if {@code src} or {@code dst} is {@code null}
     * @throws IllegalArgumentException if {@code [dstOffset, dstOffset + length)} is not inside {@code dst},
     *     {@code src} holds fewer than {@code length * 4} bytes, or {@code src} belongs to another context
     * @throws IllegalStateException if the handle or {@code src} is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails (including an earlier
     *     asynchronous failure on the stream)
     */
    public void copyToHost(DeviceBuffer src, int[] dst, int dstOffset, int length) {
        copyArray(src, dst, dstOffset, length, false);
    }

    /**
     * Copies {@code length} elements ({@code length * 8} bytes) from the start of {@code src} to
     * {@code dst[dstOffset]} onwards, on this handle's stream, and waits until they have arrived (so earlier
     * work on the stream is done too). The array is written in chunks and never pinned.
     *
     * @param src the source buffer, of this handle's context
     * @param dst the destination array
     * @param dstOffset the first element of {@code dst} to write
     * @param length number of elements to copy
     * @throws NullPointerException if {@code src} or {@code dst} is {@code null}
     * @throws IllegalArgumentException if {@code [dstOffset, dstOffset + length)} is not inside {@code dst},
     *     {@code src} holds fewer than {@code length * 8} bytes, or {@code src} belongs to another context
     * @throws IllegalStateException if the handle or {@code src} is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails (including an earlier
     *     asynchronous failure on the stream)
     */
    public void copyToHost(DeviceBuffer src, long[] dst, int dstOffset, int length) {
        copyArray(src, dst, dstOffset, length, false);
    }

    /**
     * Copies {@code length} elements ({@code length * 1} bytes) from the start of {@code src} to
     * {@code dst[dstOffset]} onwards, on this handle's stream, and waits until they have arrived (so earlier
     * work on the stream is done too). The array is written in chunks and never pinned.
     *
     * @param src the source buffer, of this handle's context
     * @param dst the destination array
     * @param dstOffset the first element of {@code dst} to write
     * @param length number of elements to copy
     * @throws NullPointerException if {@code src} or {@code dst} is {@code null}
     * @throws IllegalArgumentException if {@code [dstOffset, dstOffset + length)} is not inside {@code dst},
     *     {@code src} holds fewer than {@code length * 1} bytes, or {@code src} belongs to another context
     * @throws IllegalStateException if the handle or {@code src} is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails (including an earlier
     *     asynchronous failure on the stream)
     */
    public void copyToHost(DeviceBuffer src, byte[] dst, int dstOffset, int length) {
        copyArray(src, dst, dstOffset, length, false);
    }

    /**
     * Copies {@code bytes} bytes from a direct ByteBuffer, starting at its absolute index {@code srcOffset}
     * (position and limit are ignored and unchanged), to the start of {@code dst}, on this handle's stream.
     * For ordinary (pageable) memory it returns once the driver has read the source, so the ByteBuffer may be
     * reused at once; memory page-locked with {@code cuMemHostRegister} is copied asynchronously and must not
     * change until the stream has passed the copy.
     *
     * @param src a direct ByteBuffer
     * @param srcOffset the first byte of {@code src} to copy (absolute index)
     * @param dst the destination buffer, of this handle's context
     * @param bytes number of bytes to copy
     * @throws NullPointerException if {@code src} or {@code dst} is {@code null}
     * @throws IllegalArgumentException if {@code src} is not direct, {@code [srcOffset, srcOffset + bytes)}
     *     is outside its capacity, {@code dst} holds fewer than {@code bytes} bytes, or {@code dst} belongs
     *     to another context
     * @throws IllegalStateException if the handle or {@code dst} is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void copyToDevice(ByteBuffer src, int srcOffset, DeviceBuffer dst, long bytes) {
        copyDirect(dst, src, srcOffset, bytes, true);
    }

    /**
     * Copies {@code bytes} bytes from the start of {@code src} into a direct ByteBuffer at its absolute index
     * {@code dstOffset} (position and limit are ignored and unchanged), on this handle's stream, and waits
     * until they have arrived.
     *
     * @param src the source buffer, of this handle's context
     * @param dst a direct, writable ByteBuffer
     * @param dstOffset the first byte of {@code dst} to write (absolute index)
     * @param bytes number of bytes to copy
     * @throws NullPointerException if {@code src} or {@code dst} is {@code null}
     * @throws IllegalArgumentException if {@code dst} is not direct or is read-only,
     *     {@code [dstOffset, dstOffset + bytes)} is outside its capacity, {@code src} holds fewer than
     *     {@code bytes} bytes, or {@code src} belongs to another context
     * @throws IllegalStateException if the handle or {@code src} is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails (including an earlier
     *     asynchronous failure on the stream)
     */
    public void copyToHost(DeviceBuffer src, ByteBuffer dst, int dstOffset, long bytes) {
        copyDirect(src, dst, dstOffset, bytes, false);
    }

    /** The JVM's type letter of the array's elements, which the native side uses to pick JNI's region copy. */
    private static int typeCode(Object array) {
        if (array instanceof float[]) {
            return 'F';
        }
        if (array instanceof double[]) {
            return 'D';
        }
        if (array instanceof int[]) {
            return 'I';
        }
        if (array instanceof long[]) {
            return 'J';
        }
        return 'B';
    }

    private static int elementBytes(Object array) {
        if (array instanceof float[] || array instanceof int[]) {
            return 4;
        }
        if (array instanceof double[] || array instanceof long[]) {
            return 8;
        }
        if (array instanceof byte[]) {
            return 1;
        }
        throw new IllegalArgumentException("unsupported array type " + array.getClass().getSimpleName());
    }

    private void copyArray(DeviceBuffer buffer, Object array, int arrayOffset, int length, boolean upload) {
        Capture.refuseOnThisThread(upload ? "a copy from a Java array to the device" : "a copy from the device to a Java array");
        Objects.requireNonNull(buffer, "device buffer");
        Objects.requireNonNull(array, upload ? "source array" : "destination array");
        int arrayLength = java.lang.reflect.Array.getLength(array);
        if (arrayOffset < 0 || length < 0 || arrayOffset > arrayLength - length) {
            throw new IllegalArgumentException("array range [" + arrayOffset + ", " + arrayOffset + "+" + length
                    + ") is outside the array of length " + arrayLength + "; expected 0 <= offset, 0 <= length, offset + length <= array length");
        }
        int es = elementBytes(array);
        long bytes = (long) length * es;
        buffer.checkBytes(bytes, upload ? "destination" : "source");
        long h = enter();
        long b = 0;
        try {
            b = buffer.enterFor(this);
            if (upload) {
                NativeApi.uploadArray(h, b, buffer.byteOffset(), array, typeCode(array), (long) arrayOffset * es, bytes);
            } else {
                NativeApi.downloadArray(h, b, buffer.byteOffset(), array, typeCode(array), (long) arrayOffset * es, bytes);
            }
        } finally {
            DeviceBuffer.exit(buffer, b);
            exit();
        }
    }

    private void copyDirect(DeviceBuffer buffer, ByteBuffer direct, int offset, long bytes, boolean upload) {
        Capture.refuseOnThisThread(upload ? "a copy from a ByteBuffer to the device" : "a copy from the device to a ByteBuffer");
        Objects.requireNonNull(buffer, "device buffer");
        Objects.requireNonNull(direct, "ByteBuffer");
        if (!direct.isDirect()) {
            throw new IllegalArgumentException("the ByteBuffer is a heap buffer; expected a direct ByteBuffer (ByteBuffer.allocateDirect)");
        }
        if (!upload && direct.isReadOnly()) {
            throw new IllegalArgumentException("the destination ByteBuffer is read-only");
        }
        if (offset < 0 || bytes < 0 || offset > direct.capacity() - bytes) {
            throw new IllegalArgumentException("byte range [" + offset + ", " + offset + "+" + bytes
                    + ") is outside the ByteBuffer's capacity of " + direct.capacity());
        }
        buffer.checkBytes(bytes, upload ? "destination" : "source");
        long h = enter();
        long b = 0;
        try {
            b = buffer.enterFor(this);
            if (upload) {
                NativeApi.uploadDirect(h, b, buffer.byteOffset(), direct, offset, bytes);
            } else {
                NativeApi.downloadDirect(h, b, buffer.byteOffset(), direct, offset, bytes);
            }
        } finally {
            DeviceBuffer.exit(buffer, b);
            exit();
        }
    }

    /**
     * Sets every byte of {@code buffer} to {@code value} ({@code cuMemsetD8Async}), in stream order on this
     * handle's stream; returns without waiting.
     *
     * @param buffer the buffer (or view) to fill, of this handle's context
     * @param value the byte value, 0 to 255
     * @throws NullPointerException if {@code buffer} is {@code null}
     * @throws IllegalArgumentException if {@code value} is outside 0..255 or {@code buffer} belongs to
     *     another context
     * @throws IllegalStateException if the handle or the buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void memset(DeviceBuffer buffer, int value) {
        Objects.requireNonNull(buffer, "buffer");
        if (value < 0 || value > 255) {
            throw new IllegalArgumentException("memset value " + value + " is not a byte; expected 0..255");
        }
        long h = enter();
        long b = 0;
        try {
            b = buffer.enterFor(this);
            NativeApi.memset(h, b, buffer.byteOffset(), buffer.byteLength(), value);
        } finally {
            DeviceBuffer.exit(buffer, b);
            exit();
        }
    }

    /**
     * Copies all of {@code src} ({@code src.byteLength()} bytes) to the start of {@code dst} on the device
     * ({@code cuMemcpyDtoDAsync}), in stream order on this handle's stream; returns without waiting.
     *
     * @param src the source buffer (or view), of this handle's context
     * @param dst the destination buffer (or view), of this handle's context
     * @throws NullPointerException if {@code src} or {@code dst} is {@code null}
     * @throws IllegalArgumentException if {@code dst} is shorter than {@code src}, either belongs to another
     *     context, or the two ranges overlap in one allocation
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void copy(DeviceBuffer src, DeviceBuffer dst) {
        Objects.requireNonNull(src, "src");
        Objects.requireNonNull(dst, "dst");
        dst.checkBytes(src.byteLength(), "destination");
        long h = enter();
        long s = 0;
        long d = 0;
        try {
            s = src.enterFor(this);
            d = dst.enterFor(this);
            NativeApi.copy(h, d, dst.byteOffset(), s, src.byteOffset(), src.byteLength());
        } finally {
            DeviceBuffer.exit(dst, d);
            DeviceBuffer.exit(src, s);
            exit();
        }
    }

    /**
     * Launches {@code kernel} on this handle's stream with {@code args}, each a {@link DeviceBuffer} (passed
     * as its device address), Integer, Long, Float, Double, Short, Byte or a {@link java.nio.ByteBuffer} (a
     * structure by value, see {@link KernelLaunch#arg(int, java.nio.ByteBuffer)}), in parameter order. Returns
     * without waiting for the kernel. Convenient; for hot loops use a reusable {@link KernelLaunch}, which
     * allocates nothing per launch.
     *
     * @param kernel the kernel, of an open library
     * @param grid the grid size in blocks
     * @param block the block size in threads
     * @param sharedBytes dynamic shared memory per block, in bytes
     * @param args the kernel's arguments, at most {@link KernelLaunch#MAX_ARGS}
     * @throws NullPointerException if {@code kernel}, {@code grid}, {@code block} or {@code args} is
     *     {@code null}
     * @throws IllegalArgumentException if an argument has an unsupported type or is {@code null}, the
     *     arguments do not match the kernel's parameters (where they are known: see {@link Kernel}), the grid,
     *     block or shared memory exceed the device's limits, or a buffer belongs to another context
     * @throws IllegalStateException if the handle, the kernel's library or a buffer argument is closed
     * @throws CudaException if the context was destroyed or reset, or the driver refuses the launch
     */
    public void launch(Kernel kernel, Dim3 grid, Dim3 block, int sharedBytes, Object... args) {
        KernelLaunch launch = KernelLaunch.forThread(kernel);
        launch.grid(grid.x, grid.y, grid.z).block(block.x, block.y, block.z).sharedBytes(sharedBytes);
        try {
            launch.setArgs(args);
            launch.launch(this);
        } finally {
            launch.release(); // the thread's launch object must not keep the kernel, its library or buffers alive
        }
    }

    /**
     * Launches a prepared launch object on this handle's stream; same as
     * {@link KernelLaunch#launch(Handle) launch.launch(this)}.
     *
     * @param launch the launch, with kernel, shape and arguments set
     * @throws NullPointerException if {@code launch} is {@code null}
     * @throws IllegalArgumentException if the launch does not fit the kernel or the device, or a buffer
     *     argument belongs to another context
     * @throws IllegalStateException if the handle, the kernel's library or a buffer argument is closed
     * @throws CudaException if the context was destroyed or reset, or the driver refuses the launch
     */
    public void launch(KernelLaunch launch) {
        launch.launch(this);
    }

    /**
     * Records this handle's calls made by {@code work} into a CUDA graph instead of running them, for
     * replay with {@link Graph#launch(Handle)} at a fraction of the launch cost (stream capture,
     * {@code cuStreamBeginCapture}). BLAS calls that write to device memory, kernel launches,
     * {@link #memset(DeviceBuffer, int)}, {@link #copy(DeviceBuffer, DeviceBuffer)} and device-result
     * reductions are recorded; none of them runs now.
     *
     * <p>The capture runs on a stream only this handle uses (the handle's default stream may be shared
     * with other handles), in the driver's thread-local mode, and is confined to the calling thread:
     * calls on this handle from other threads are refused with an {@link IllegalStateException} until
     * it ends, and it starts once the calls other threads already began have returned. Calls that wait
     * for the GPU or free memory cannot be recorded and are refused, on this thread, with an
     * {@link IllegalStateException} that names them: {@link #synchronize()}, {@link #setStream(long)},
     * {@link #resetStream()}, {@link #allocate(long)} and {@code upload}, copies between the device and
     * Java arrays or ByteBuffers, BLAS reductions that return their value, {@link Event#synchronize()},
     * and closing a handle, buffer, library or graph. Buffers and libraries must therefore exist before
     * the capture. Another handle used inside {@code work} runs its calls at once, uncaptured.
     *
     * <p>If {@code work} throws, or ending the capture fails, the capture is ended, what was recorded
     * is destroyed and the exception propagates; the handle is usable afterwards.
     *
     * @param work the calls to record, made on this thread
     * @return the instantiated graph; close it
     * @throws NullPointerException if {@code work} is {@code null}
     * @throws IllegalStateException if the handle is closed or already capturing, this thread is
     *     capturing with another handle, or {@code work} made a call that cannot be captured
     * @throws CudaException if the driver refuses the capture or the graph (for example a call the
     *     driver cannot capture, {@link CudaError#STREAM_CAPTURE_INVALIDATED})
     */
    public Graph capture(Runnable work) {
        return Capture.record(this, work);
    }

    /**
     * Creates an event of this handle's context ({@code cuEventCreate}, timing enabled), for timing and
     * ordering.
     *
     * @return a new event; close it
     * @throws IllegalStateException if the handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public Event createEvent() {
        long h = enter();
        try {
            return new Event(this, NativeApi.eventCreate(h));
        } finally {
            exit();
        }
    }

    /**
     * Allocates {@code bytes} of page-locked host memory ({@code cuMemHostAlloc}, portable to every
     * context), the source and destination of {@link #uploadAsync(HostBuffer, DeviceBuffer)} and
     * {@link #downloadAsync(DeviceBuffer, HostBuffer)}. Page-locking is slow (milliseconds per GiB) and takes
     * memory from the operating system: allocate once, reuse.
     *
     * @param bytes size in bytes, at least 1
     * @return a new host buffer, owned by the caller (close it)
     * @throws IllegalArgumentException if {@code bytes} is less than 1
     * @throws IllegalStateException if the handle is closed
     * @throws CudaException if the memory cannot be page-locked ({@link CudaError#OUT_OF_MEMORY}), the context was
     *     destroyed or reset, or the driver fails
     */
    public HostBuffer allocateHost(long bytes) {
        if (bytes < 1) {
            throw new IllegalArgumentException("host buffer size " + bytes + " is invalid; expected at least 1 byte");
        }
        long h = enter();
        try {
            return new HostBuffer(NativeApi.pinnedAllocate(h, bytes), bytes);
        } finally {
            exit();
        }
    }

    /**
     * A future that completes when the GPU has finished the work queued on this handle's stream before this
     * call; returns at once. It completes exceptionally with a {@link CudaException} if that work faults
     * (a sticky error of the context) or the context is destroyed. Closing the handle completes it.
     *
     * <p>The future is completed by a cuhandle thread that hands the completion to a dispatch executor: the
     * continuations you attach without {@code Async} run there (never on a CUDA driver thread), so they may
     * call cuhandle, but a slow one delays nothing else only because the executor adds threads; use the
     * {@code *Async} variants with your own executor for long work.
     *
     * <p>A thread that waits for this future itself ({@code join()}, {@code get()}) first polls the GPU for up to
     * 1 ms, as {@code cuStreamSynchronize} spins, and completes the future on its own thread as soon as the work
     * is done: waiting then costs about what {@link #synchronize()} costs. The continuations attached by then run
     * on that waiting thread. Futures derived from this one ({@code thenApply} ...) do not poll.
     *
     * <p>A handle's default stream is shared with other handles of its context (a pool of 32 streams per
     * context): the future may then also wait for their work queued on the same stream earlier. Give the
     * handle its own stream ({@link #setStream(long)}) where that matters.
     *
     * @return a future of the work queued so far
     * @throws IllegalStateException if the handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public CompletableFuture<Void> whenDone() {
        long h = enter();
        try {
            return Completions.track(this, h, () -> { });
        } finally {
            exit();
        }
    }

    /**
     * Copies all of {@code src} to the start of {@code dst} on this handle's stream and returns at once
     * ({@code cuMemcpyHtoDAsync}). Same as {@link #uploadAsync(HostBuffer, long, DeviceBuffer, long)
     * uploadAsync(src, 0, dst, src.byteLength())}.
     *
     * @param src the pinned source
     * @param dst the destination buffer, of this handle's context
     * @return a future completed when the copy is done (see {@link #whenDone()})
     * @throws NullPointerException if an argument is {@code null}
     * @throws IllegalArgumentException if {@code dst} is smaller than {@code src} or belongs to another context
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public CompletableFuture<Void> uploadAsync(HostBuffer src, DeviceBuffer dst) {
        return copyAsync(Objects.requireNonNull(src, "src"), 0, dst, src.byteLength(), true);
    }

    /**
     * Copies {@code bytes} bytes from {@code src} at byte {@code srcOffset} to the start of {@code dst} on this
     * handle's stream and returns at once ({@code cuMemcpyHtoDAsync}). Until the returned future completes, both
     * buffers stay in use: their {@code close()} waits for the copy. Do not change the source bytes meanwhile.
     *
     * @param src the pinned source
     * @param srcOffset first byte of {@code src} to copy
     * @param dst the destination buffer (or view), of this handle's context
     * @param bytes number of bytes
     * @return a future completed when the copy is done, exceptionally with a {@link CudaException} if the
     *     stream faults (see {@link #whenDone()})
     * @throws NullPointerException if an argument is {@code null}
     * @throws IllegalArgumentException if a range is outside its buffer or {@code dst} belongs to another context
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public CompletableFuture<Void> uploadAsync(HostBuffer src, long srcOffset, DeviceBuffer dst, long bytes) {
        return copyAsync(src, srcOffset, dst, bytes, true);
    }

    /**
     * Copies all of {@code dst}'s length from the start of {@code src} into {@code dst} on this handle's stream
     * and returns at once ({@code cuMemcpyDtoHAsync}). Same as
     * {@link #downloadAsync(DeviceBuffer, HostBuffer, long, long) downloadAsync(src, dst, 0, dst.byteLength())}.
     *
     * @param src the source buffer, of this handle's context
     * @param dst the pinned destination
     * @return a future completed when the data has arrived (see {@link #whenDone()})
     * @throws NullPointerException if an argument is {@code null}
     * @throws IllegalArgumentException if {@code src} is smaller than {@code dst} or belongs to another context
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public CompletableFuture<Void> downloadAsync(DeviceBuffer src, HostBuffer dst) {
        return copyAsync(Objects.requireNonNull(dst, "dst"), 0, src, dst.byteLength(), false);
    }

    /**
     * Copies {@code bytes} bytes from the start of {@code src} into {@code dst} at byte {@code dstOffset} on this
     * handle's stream and returns at once ({@code cuMemcpyDtoHAsync}). Until the returned future completes, both
     * buffers stay in use (their {@code close()} waits) and the destination bytes are not yet valid.
     *
     * @param src the source buffer (or view), of this handle's context
     * @param dst the pinned destination
     * @param dstOffset first byte of {@code dst} to write
     * @param bytes number of bytes
     * @return a future completed when the data has arrived, exceptionally with a {@link CudaException} if the
     *     stream faults (see {@link #whenDone()})
     * @throws NullPointerException if an argument is {@code null}
     * @throws IllegalArgumentException if a range is outside its buffer or {@code src} belongs to another context
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public CompletableFuture<Void> downloadAsync(DeviceBuffer src, HostBuffer dst, long dstOffset, long bytes) {
        return copyAsync(dst, dstOffset, src, bytes, false);
    }

    /**
     * Queues a copy between pinned and device memory and tracks it: the buffers stay entered (close waits)
     * until the copy's future settles, so the GPU never touches freed memory (rule A1). Nothing is pinned
     * across a wait (rule L4): the call returns as soon as the copy is queued.
     */
    private CompletableFuture<Void> copyAsync(HostBuffer host, long hostOffset, DeviceBuffer device, long bytes, boolean upload) {
        Objects.requireNonNull(host, upload ? "src" : "dst");
        Objects.requireNonNull(device, upload ? "dst" : "src");
        host.checkRange(hostOffset, bytes, 1);
        device.checkBytes(bytes, upload ? "destination" : "source");
        long h = enter();
        try {
            long p = host.enter();
            long b;
            try {
                b = device.enterFor(this);
            } catch (RuntimeException | Error e) {
                host.exit();
                throw e;
            }
            Runnable release = () -> {
                device.exit();
                host.exit();
            };
            try {
                NativeApi.pinnedCopyAsync(h, p, hostOffset, b, device.byteOffset(), bytes, upload);
            } catch (RuntimeException | Error e) {
                release.run();
                throw e;
            }
            try {
                return Completions.track(this, h, release);
            } catch (RuntimeException | Error e) {
                // The copy is queued but cannot be tracked: wait for it here, so that releasing the
                // buffers cannot free memory the GPU still uses.
                try {
                    NativeApi.handleSynchronize(h);
                } catch (RuntimeException s) {
                    e.addSuppressed(s);
                }
                release.run();
                throw e;
            }
        } finally {
            exit();
        }
    }

    /**
     * Makes the work queued on this handle from now on wait until {@code event}'s recorded work is done
     * ({@code cuStreamWaitEvent}), without blocking the calling thread: orders one handle's work after
     * another's (the event may belong to another context, even another device). An event never recorded
     * imposes no wait.
     *
     * @param event the event to wait for
     * @throws NullPointerException if {@code event} is {@code null}
     * @throws IllegalStateException if the handle or the event is closed
     * @throws CudaException if a context was destroyed or reset, or the driver fails
     */
    public void waitFor(Event event) {
        Objects.requireNonNull(event, "event");
        long h = enter();
        try {
            long e = event.enter();
            try {
                NativeApi.handleWaitEvent(h, e);
            } finally {
                event.exit();
            }
        } finally {
            exit();
        }
    }

    /**
     * Closes the handle (H6): waits for calls in flight on other threads, synchronises the stream,
     * frees what it owns and releases the primary-context retain once. Idempotent; later calls
     * throw {@link IllegalStateException}. Futures of {@link #whenDone()} and of the asynchronous copies
     * whose work was on the handle's stream are completed (exceptionally if the work failed) before it
     * returns.
     */
    @Override
    public void close() {
        Capture.refuseOnThisThread("Handle.close");
        state.close();
        Completions.settleAll(this); // its stream was synchronised: complete its futures now
        Reference.reachabilityFence(this);
    }

    @Override
    public String toString() {
        return "Handle[context 0x" + Long.toHexString(rawContext) + " id " + contextId + ", device " + device.ordinal()
                + (ownsPrimaryContext ? ", primary" : ", borrowed") + (isClosed() ? ", closed]" : "]");
    }
}
