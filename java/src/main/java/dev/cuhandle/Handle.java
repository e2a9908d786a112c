package dev.cuhandle;

import java.lang.ref.Reference;

import java.nio.ByteBuffer;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A cuBLAS-style handle: bound to one driver context, with a default stream, usable from any thread
 * (rules H1-H9 of docs/design.md). No operation changes which context is current on the calling
 * thread. Close it (try-with-resources); an unreachable unclosed handle is released by a cleaner
 * with a warning.
 *
 * <pre>{@code
 * try (Handle h = Handle.create();                  // the current context, else the selected device's primary
 *      DeviceBuffer x = h.upload(xs);
 *      DeviceBuffer y = h.upload(ys)) {
 *     Blas.saxpy(h, n, 2f, x, 1, y, 1);             // queued on the handle's own stream
 *     y.download(ys);                               // waits for it, in stream order
 * }                                                 // closes the buffers, then releases the context
 * }</pre>
 *
 * <p>{@link #create(int)} binds to a device's primary context, {@link #wrap(long)} borrows a context
 * made elsewhere.
 *
 * <h2 id="arrays">Copies between Java arrays and the device</h2>
 *
 * <p>{@code copyToDevice}, {@code copyToHost}, {@code upload}, their asynchronous forms and
 * {@link DeviceBuffer}'s copies never pin a Java array, and the calling thread holds no part of it
 * while it waits for the GPU, so a copy never holds up the garbage collector or other threads
 * (rule L4). The elements move in chunks through page-locked staging memory of the handle's
 * context (a small pool, reused by later copies): JNI region copies fill one chunk while the DMA of
 * the one before runs, and downloads run the same way in reverse, so a copy takes about as long as
 * the slower of the two steps, and the DMA runs at the speed of pinned memory. An array of 2 MiB or
 * more (by default) is split into ranges that several threads copy at once (the caller and
 * cuhandle's {@code cuhandle-transfer-helper} threads), all on this handle's stream. Chunk sizes
 * and thread counts are chosen by size; the system properties {@code cuhandle.transfer.threads},
 * {@code bytesPerThread}, {@code chunkBytes}, {@code minChunkBytes}, {@code depth} and
 * {@code idleSlots} (all under {@code cuhandle.transfer.}) tune them.
 *
 * <p>Heap ByteBuffers take the same path. Direct ByteBuffers and {@link HostBuffer}s go to the
 * driver with no staging; a direct buffer copied many times can be page-locked with
 * {@link HostRegistration#register(Handle, ByteBuffer)}.
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
    /** The thread switching the handle's stream ({@link #setStream}, {@link #resetStream}), or null: other threads' calls wait. */
    private volatile Thread switchingStream;
    /** One stream switch at a time; taken before entering, so that a waiting switcher holds no call open. */
    private final Object streamSwitch = new Object();

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
     * Binds to an existing context without owning it (H3): the caller keeps it alive for as long as the handle
     * and its buffers are used, as cuBLAS requires of the context current at {@code cublasCreate}.
     *
     * <p>A context destroyed under the handle anyway is detected on a best-effort basis only. Before every use
     * the handle asks the driver for the context's id ({@code cuCtxGetId}); on the drivers measured (580,
     * CUDA 13.0) a destroyed context answers {@code CUDA_ERROR_CONTEXT_IS_DESTROYED} and every later call
     * throws a {@link CudaException}. NVIDIA documents that a destroyed context must not be passed to later
     * driver calls (undefined behaviour, {@code cuCtxDestroy}), so another driver may behave otherwise. A
     * primary context reset under a handle that retains it ({@link #create()}, {@link #create(int)}) is
     * different: a reset does not release the retained context, which stays a context the driver knows, so
     * asking for its id is defined; that the id changes with the reset, which the handle detects, was
     * measured on driver 580 (docs/handles.md, section 1).
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
        Thread switching = switchingStream;
        if (switching != null && switching != Thread.currentThread()) {
            state.exit();
            awaitStreamSwitch();
            return enter();
        }
        return pointer;
    }

    /**
     * Waits until the stream switch in progress has ended. A switch is short (it synchronises the
     * stream being left), and the call that waits here holds nothing open meanwhile.
     */
    private void awaitStreamSwitch() {
        for (int spins = 0; switchingStream != null; spins++) {
            if (spins < 1000) {
                Thread.onSpinWait();
            } else {
                java.util.concurrent.locks.LockSupport.parkNanos(50_000);
            }
        }
    }

    /**
     * Runs a stream switch with no other call on this handle in flight: calls that began before
     * finish first and calls that begin meanwhile wait, so every call's work and the use it notes
     * on memory (rule L3) go to one stream, the old or the new.
     */
    private void switchStream(java.util.function.LongConsumer operation) {
        synchronized (streamSwitch) {
            long h = enter();
            try {
                switchingStream = Thread.currentThread();
                state.awaitCallsAtMost(1);
                operation.accept(h);
            } finally {
                switchingStream = null;
                exit();
            }
        }
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
     * Calls on this handle from other threads wait while the stream is switched, and those already
     * running finish first.
     *
     * <p>The stream must stay alive until the handle leaves it ({@link #setStream}, {@link #resetStream}
     * or {@link #close()}, each of which synchronises it first): device memory that work on it used
     * is freed in stream order after that work (rule L3 of docs/design.md), so cuhandle may queue on
     * it until then. Work you queue on the stream yourself with raw device addresses is not tracked:
     * synchronise before closing a buffer it uses.
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
        switchStream(h -> NativeApi.handleSetStream(h, rawStream));
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
        switchStream(NativeApi::handleResetStream);
    }

    /**
     * The raw {@code CUstream} work goes to: the one given to {@link #setStream(long)}, or the handle's
     * own non-blocking stream (rule H9). No other live handle uses that stream: it is leased on first
     * use and goes back to its context's free list when the handle is closed, to be reused by later
     * handles, never destroyed (the driver keeps a destroyed stream's device memory cached while the
     * context lives), so a context holds at most as many as handles were ever alive at once.
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
     * What the memory pool and the pinned cache of this handle's context hold (rule M1; see
     * {@link MemoryStats}).
     *
     * @return the statistics now
     * @throws IllegalStateException if the handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public MemoryStats memoryStats() {
        long h = enter();
        try {
            return new MemoryStats(NativeApi.handleMemoryStats(h));
        } finally {
            exit();
        }
    }

    /**
     * Gives the device memory the context's pool keeps for reuse, and the cached pinned host memory whose
     * copies are done, back to the driver ({@code cuMemPoolTrimTo}, {@code cuMemFreeHost}). Memory in use
     * stays, and so does memory whose stream-ordered free has not run yet: {@link #synchronize()} first to
     * include this handle's. Does not wait for the GPU.
     *
     * @throws IllegalStateException if the handle is closed, or this thread is capturing a graph
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void trimMemory() {
        Capture.refuseOnThisThread("Handle.trimMemory");
        call(NativeApi::handleTrimMemory);
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
     * Allocates device memory in this handle's context, in stream order on this handle's stream from the
     * context's memory pool ({@code cuMemAllocFromPoolAsync}; see {@link MemoryStats}). Every handle of the
     * context may use the buffer, on any stream: a first use on another stream waits (on the GPU) for the
     * allocation, and the buffer's release waits, in stream order, for the work of every stream that used
     * it (rule L3 of docs/design.md); nothing waits on the host. The contents are not initialised; see
     * {@link #memset(DeviceBuffer, int)}. Without memory pools (device, driver or
     * {@code -Dcuhandle.pool.enabled=false}) it is {@code cuMemAlloc}, whose free waits for the whole
     * context.
     *
     * @param bytes size in bytes, 0 or more
     * @return a new buffer, owned by the caller (close it)
     * @throws IllegalArgumentException if {@code bytes} is negative
     * @throws IllegalStateException if the handle is closed
     * @throws CudaException if the memory cannot be allocated even after the pool gave its cached memory back
     *     ({@link CudaError#OUT_OF_MEMORY}, with the free memory in the message), the context was destroyed or
     *     reset, or the driver fails
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
            long lib = library.enter();
            try {
                return new DeviceBuffer(this, NativeApi.bufferWrapVariable(h, lib, address, bytes), bytes, what, library);
            } finally {
                library.exit();
            }
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
        return ArrayTransfers.uploadNew(this, values);
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
        return ArrayTransfers.uploadNew(this, values);
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
        return ArrayTransfers.uploadNew(this, values);
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
        return ArrayTransfers.uploadNew(this, values);
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
        return ArrayTransfers.uploadNew(this, values);
    }

    /**
     * Copies {@code length} elements ({@code length * 4} bytes) from {@code src[srcOffset]} onwards to the
     * start of {@code dst}, on this handle's stream. Returns once the source has been read (the array may be
     * reused at once); the device copy may still be queued. The array goes through pinned staging in chunks, split across threads when it is large, and is
     * never pinned (see <a href="#arrays">Copies between Java arrays and the device</a>).
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
        ArrayTransfers.copy(this, dst, src, srcOffset, length, true);
    }
    /**
     * Copies {@code length} elements ({@code length * 8} bytes) from {@code src[srcOffset]} onwards to the
     * start of {@code dst}, on this handle's stream. Returns once the source has been read (the array may be
     * reused at once); the device copy may still be queued. The array goes through pinned staging in chunks, split across threads when it is large, and is
     * never pinned (see <a href="#arrays">Copies between Java arrays and the device</a>).
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
        ArrayTransfers.copy(this, dst, src, srcOffset, length, true);
    }
    /**
     * Copies {@code length} elements ({@code length * 4} bytes) from {@code src[srcOffset]} onwards to the
     * start of {@code dst}, on this handle's stream. Returns once the source has been read (the array may be
     * reused at once); the device copy may still be queued. The array goes through pinned staging in chunks, split across threads when it is large, and is
     * never pinned (see <a href="#arrays">Copies between Java arrays and the device</a>).
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
        ArrayTransfers.copy(this, dst, src, srcOffset, length, true);
    }
    /**
     * Copies {@code length} elements ({@code length * 8} bytes) from {@code src[srcOffset]} onwards to the
     * start of {@code dst}, on this handle's stream. Returns once the source has been read (the array may be
     * reused at once); the device copy may still be queued. The array goes through pinned staging in chunks, split across threads when it is large, and is
     * never pinned (see <a href="#arrays">Copies between Java arrays and the device</a>).
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
        ArrayTransfers.copy(this, dst, src, srcOffset, length, true);
    }
    /**
     * Copies {@code length} elements ({@code length * 1} bytes) from {@code src[srcOffset]} onwards to the
     * start of {@code dst}, on this handle's stream. Returns once the source has been read (the array may be
     * reused at once); the device copy may still be queued. The array goes through pinned staging in chunks, split across threads when it is large, and is
     * never pinned (see <a href="#arrays">Copies between Java arrays and the device</a>).
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
        ArrayTransfers.copy(this, dst, src, srcOffset, length, true);
    }
    /**
     * Copies {@code length} elements ({@code length * 2} bytes) from {@code src[srcOffset]} onwards to the
     * start of {@code dst}, on this handle's stream. Returns once the source has been read (the array may be
     * reused at once); the device copy may still be queued. The array goes through pinned staging in chunks, split across threads when it is large, and is
     * never pinned (see <a href="#arrays">Copies between Java arrays and the device</a>).
     *
     * @param src the source array
     * @param srcOffset the first element of {@code src} to copy
     * @param dst the destination buffer, of this handle's context
     * @param length number of elements to copy
     * @throws NullPointerException if {@code src} or {@code dst} is {@code null}
     * @throws IllegalArgumentException if {@code [srcOffset, srcOffset + length)} is not inside {@code src},
     *     {@code dst} holds fewer than {@code length * 2} bytes, or {@code dst} belongs to another context
     * @throws IllegalStateException if the handle or {@code dst} is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void copyToDevice(short[] src, int srcOffset, DeviceBuffer dst, int length) {
        ArrayTransfers.copy(this, dst, src, srcOffset, length, true);
    }
    /**
     * Copies {@code length} elements ({@code length * 2} bytes) from {@code src[srcOffset]} onwards to the
     * start of {@code dst}, on this handle's stream. Returns once the source has been read (the array may be
     * reused at once); the device copy may still be queued. The array goes through pinned staging in chunks, split across threads when it is large, and is
     * never pinned (see <a href="#arrays">Copies between Java arrays and the device</a>).
     *
     * @param src the source array
     * @param srcOffset the first element of {@code src} to copy
     * @param dst the destination buffer, of this handle's context
     * @param length number of elements to copy
     * @throws NullPointerException if {@code src} or {@code dst} is {@code null}
     * @throws IllegalArgumentException if {@code [srcOffset, srcOffset + length)} is not inside {@code src},
     *     {@code dst} holds fewer than {@code length * 2} bytes, or {@code dst} belongs to another context
     * @throws IllegalStateException if the handle or {@code dst} is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void copyToDevice(char[] src, int srcOffset, DeviceBuffer dst, int length) {
        ArrayTransfers.copy(this, dst, src, srcOffset, length, true);
    }
    /**
     * Copies {@code length} elements ({@code length * 4} bytes) from the start of {@code src} to
     * {@code dst[dstOffset]} onwards, on this handle's stream, and waits until they have arrived (so earlier
     * work on the stream is done too). The array goes through pinned staging in chunks, split across threads when it is large, and is
     * never pinned (see <a href="#arrays">Copies between Java arrays and the device</a>).
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
        ArrayTransfers.copy(this, src, dst, dstOffset, length, false);
    }
    /**
     * Copies {@code length} elements ({@code length * 8} bytes) from the start of {@code src} to
     * {@code dst[dstOffset]} onwards, on this handle's stream, and waits until they have arrived (so earlier
     * work on the stream is done too). The array goes through pinned staging in chunks, split across threads when it is large, and is
     * never pinned (see <a href="#arrays">Copies between Java arrays and the device</a>).
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
        ArrayTransfers.copy(this, src, dst, dstOffset, length, false);
    }
    /**
     * Copies {@code length} elements ({@code length * 4} bytes) from the start of {@code src} to
     * {@code dst[dstOffset]} onwards, on this handle's stream, and waits until they have arrived (so earlier
     * work on the stream is done too). The array goes through pinned staging in chunks, split across threads when it is large, and is
     * never pinned (see <a href="#arrays">Copies between Java arrays and the device</a>).
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
        ArrayTransfers.copy(this, src, dst, dstOffset, length, false);
    }
    /**
     * Copies {@code length} elements ({@code length * 8} bytes) from the start of {@code src} to
     * {@code dst[dstOffset]} onwards, on this handle's stream, and waits until they have arrived (so earlier
     * work on the stream is done too). The array goes through pinned staging in chunks, split across threads when it is large, and is
     * never pinned (see <a href="#arrays">Copies between Java arrays and the device</a>).
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
        ArrayTransfers.copy(this, src, dst, dstOffset, length, false);
    }
    /**
     * Copies {@code length} elements ({@code length * 1} bytes) from the start of {@code src} to
     * {@code dst[dstOffset]} onwards, on this handle's stream, and waits until they have arrived (so earlier
     * work on the stream is done too). The array goes through pinned staging in chunks, split across threads when it is large, and is
     * never pinned (see <a href="#arrays">Copies between Java arrays and the device</a>).
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
        ArrayTransfers.copy(this, src, dst, dstOffset, length, false);
    }
    /**
     * Copies {@code length} elements ({@code length * 2} bytes) from the start of {@code src} to
     * {@code dst[dstOffset]} onwards, on this handle's stream, and waits until they have arrived (so earlier
     * work on the stream is done too). The array goes through pinned staging in chunks, split across threads when it is large, and is
     * never pinned (see <a href="#arrays">Copies between Java arrays and the device</a>).
     *
     * @param src the source buffer, of this handle's context
     * @param dst the destination array
     * @param dstOffset the first element of {@code dst} to write
     * @param length number of elements to copy
     * @throws NullPointerException if {@code src} or {@code dst} is {@code null}
     * @throws IllegalArgumentException if {@code [dstOffset, dstOffset + length)} is not inside {@code dst},
     *     {@code src} holds fewer than {@code length * 2} bytes, or {@code src} belongs to another context
     * @throws IllegalStateException if the handle or {@code src} is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails (including an earlier
     *     asynchronous failure on the stream)
     */
    public void copyToHost(DeviceBuffer src, short[] dst, int dstOffset, int length) {
        ArrayTransfers.copy(this, src, dst, dstOffset, length, false);
    }
    /**
     * Copies {@code length} elements ({@code length * 2} bytes) from the start of {@code src} to
     * {@code dst[dstOffset]} onwards, on this handle's stream, and waits until they have arrived (so earlier
     * work on the stream is done too). The array goes through pinned staging in chunks, split across threads when it is large, and is
     * never pinned (see <a href="#arrays">Copies between Java arrays and the device</a>).
     *
     * @param src the source buffer, of this handle's context
     * @param dst the destination array
     * @param dstOffset the first element of {@code dst} to write
     * @param length number of elements to copy
     * @throws NullPointerException if {@code src} or {@code dst} is {@code null}
     * @throws IllegalArgumentException if {@code [dstOffset, dstOffset + length)} is not inside {@code dst},
     *     {@code src} holds fewer than {@code length * 2} bytes, or {@code src} belongs to another context
     * @throws IllegalStateException if the handle or {@code src} is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails (including an earlier
     *     asynchronous failure on the stream)
     */
    public void copyToHost(DeviceBuffer src, char[] dst, int dstOffset, int length) {
        ArrayTransfers.copy(this, src, dst, dstOffset, length, false);
    }
    /**
     * Starts {@link #copyToDevice(float[], int, DeviceBuffer, int)} on a cuhandle thread and returns at once
     * (see <a href="#async">Asynchronous array copies</a>): do not change {@code src}, or use {@code dst}, until
     * the future completes.
     *
     * @param src the source array
     * @param srcOffset the first element of {@code src} to copy
     * @param dst the destination buffer, of this handle's context
     * @param length number of elements to copy
     * @return a future completed once the elements are on the device, or exceptionally with what made the copy fail
     * @throws IllegalArgumentException if a range is outside its array or buffer, or {@code dst} belongs to another context
     * @throws IllegalStateException if the handle or {@code dst} is closed, or this thread captures a graph
     */
    public CompletableFuture<Void> uploadAsync(float[] src, int srcOffset, DeviceBuffer dst, int length) {
        return ArrayTransfers.copyAsync(this, dst, src, srcOffset, length, true);
    }

    /**
     * Starts {@link #copyToDevice(double[], int, DeviceBuffer, int)} on a cuhandle thread and returns at once
     * (see <a href="#async">Asynchronous array copies</a>): do not change {@code src}, or use {@code dst}, until
     * the future completes.
     *
     * @param src the source array
     * @param srcOffset the first element of {@code src} to copy
     * @param dst the destination buffer, of this handle's context
     * @param length number of elements to copy
     * @return a future completed once the elements are on the device, or exceptionally with what made the copy fail
     * @throws IllegalArgumentException if a range is outside its array or buffer, or {@code dst} belongs to another context
     * @throws IllegalStateException if the handle or {@code dst} is closed, or this thread captures a graph
     */
    public CompletableFuture<Void> uploadAsync(double[] src, int srcOffset, DeviceBuffer dst, int length) {
        return ArrayTransfers.copyAsync(this, dst, src, srcOffset, length, true);
    }

    /**
     * Starts {@link #copyToDevice(int[], int, DeviceBuffer, int)} on a cuhandle thread and returns at once
     * (see <a href="#async">Asynchronous array copies</a>): do not change {@code src}, or use {@code dst}, until
     * the future completes.
     *
     * @param src the source array
     * @param srcOffset the first element of {@code src} to copy
     * @param dst the destination buffer, of this handle's context
     * @param length number of elements to copy
     * @return a future completed once the elements are on the device, or exceptionally with what made the copy fail
     * @throws IllegalArgumentException if a range is outside its array or buffer, or {@code dst} belongs to another context
     * @throws IllegalStateException if the handle or {@code dst} is closed, or this thread captures a graph
     */
    public CompletableFuture<Void> uploadAsync(int[] src, int srcOffset, DeviceBuffer dst, int length) {
        return ArrayTransfers.copyAsync(this, dst, src, srcOffset, length, true);
    }

    /**
     * Starts {@link #copyToDevice(long[], int, DeviceBuffer, int)} on a cuhandle thread and returns at once
     * (see <a href="#async">Asynchronous array copies</a>): do not change {@code src}, or use {@code dst}, until
     * the future completes.
     *
     * @param src the source array
     * @param srcOffset the first element of {@code src} to copy
     * @param dst the destination buffer, of this handle's context
     * @param length number of elements to copy
     * @return a future completed once the elements are on the device, or exceptionally with what made the copy fail
     * @throws IllegalArgumentException if a range is outside its array or buffer, or {@code dst} belongs to another context
     * @throws IllegalStateException if the handle or {@code dst} is closed, or this thread captures a graph
     */
    public CompletableFuture<Void> uploadAsync(long[] src, int srcOffset, DeviceBuffer dst, int length) {
        return ArrayTransfers.copyAsync(this, dst, src, srcOffset, length, true);
    }

    /**
     * Starts {@link #copyToDevice(byte[], int, DeviceBuffer, int)} on a cuhandle thread and returns at once
     * (see <a href="#async">Asynchronous array copies</a>): do not change {@code src}, or use {@code dst}, until
     * the future completes.
     *
     * @param src the source array
     * @param srcOffset the first element of {@code src} to copy
     * @param dst the destination buffer, of this handle's context
     * @param length number of elements to copy
     * @return a future completed once the elements are on the device, or exceptionally with what made the copy fail
     * @throws IllegalArgumentException if a range is outside its array or buffer, or {@code dst} belongs to another context
     * @throws IllegalStateException if the handle or {@code dst} is closed, or this thread captures a graph
     */
    public CompletableFuture<Void> uploadAsync(byte[] src, int srcOffset, DeviceBuffer dst, int length) {
        return ArrayTransfers.copyAsync(this, dst, src, srcOffset, length, true);
    }

    /**
     * Starts {@link #copyToDevice(short[], int, DeviceBuffer, int)} on a cuhandle thread and returns at once
     * (see <a href="#async">Asynchronous array copies</a>): do not change {@code src}, or use {@code dst}, until
     * the future completes.
     *
     * @param src the source array
     * @param srcOffset the first element of {@code src} to copy
     * @param dst the destination buffer, of this handle's context
     * @param length number of elements to copy
     * @return a future completed once the elements are on the device, or exceptionally with what made the copy fail
     * @throws IllegalArgumentException if a range is outside its array or buffer, or {@code dst} belongs to another context
     * @throws IllegalStateException if the handle or {@code dst} is closed, or this thread captures a graph
     */
    public CompletableFuture<Void> uploadAsync(short[] src, int srcOffset, DeviceBuffer dst, int length) {
        return ArrayTransfers.copyAsync(this, dst, src, srcOffset, length, true);
    }

    /**
     * Starts {@link #copyToDevice(char[], int, DeviceBuffer, int)} on a cuhandle thread and returns at once
     * (see <a href="#async">Asynchronous array copies</a>): do not change {@code src}, or use {@code dst}, until
     * the future completes.
     *
     * @param src the source array
     * @param srcOffset the first element of {@code src} to copy
     * @param dst the destination buffer, of this handle's context
     * @param length number of elements to copy
     * @return a future completed once the elements are on the device, or exceptionally with what made the copy fail
     * @throws IllegalArgumentException if a range is outside its array or buffer, or {@code dst} belongs to another context
     * @throws IllegalStateException if the handle or {@code dst} is closed, or this thread captures a graph
     */
    public CompletableFuture<Void> uploadAsync(char[] src, int srcOffset, DeviceBuffer dst, int length) {
        return ArrayTransfers.copyAsync(this, dst, src, srcOffset, length, true);
    }

    /**
     * Starts {@link #copyToHost(DeviceBuffer, float[], int, int)} on a cuhandle thread and returns at once
     * (see <a href="#async">Asynchronous array copies</a>): do not touch {@code dst}, or change {@code src}, until
     * the future completes.
     *
     * @param src the source buffer, of this handle's context
     * @param dst the destination array
     * @param dstOffset the first element of {@code dst} to write
     * @param length number of elements to copy
     * @return a future completed once the elements are in the array, or exceptionally with what made the copy fail
     * @throws IllegalArgumentException if a range is outside its array or buffer, or {@code src} belongs to another context
     * @throws IllegalStateException if the handle or {@code src} is closed, or this thread captures a graph
     */
    public CompletableFuture<Void> downloadAsync(DeviceBuffer src, float[] dst, int dstOffset, int length) {
        return ArrayTransfers.copyAsync(this, src, dst, dstOffset, length, false);
    }

    /**
     * Starts {@link #copyToHost(DeviceBuffer, double[], int, int)} on a cuhandle thread and returns at once
     * (see <a href="#async">Asynchronous array copies</a>): do not touch {@code dst}, or change {@code src}, until
     * the future completes.
     *
     * @param src the source buffer, of this handle's context
     * @param dst the destination array
     * @param dstOffset the first element of {@code dst} to write
     * @param length number of elements to copy
     * @return a future completed once the elements are in the array, or exceptionally with what made the copy fail
     * @throws IllegalArgumentException if a range is outside its array or buffer, or {@code src} belongs to another context
     * @throws IllegalStateException if the handle or {@code src} is closed, or this thread captures a graph
     */
    public CompletableFuture<Void> downloadAsync(DeviceBuffer src, double[] dst, int dstOffset, int length) {
        return ArrayTransfers.copyAsync(this, src, dst, dstOffset, length, false);
    }

    /**
     * Starts {@link #copyToHost(DeviceBuffer, int[], int, int)} on a cuhandle thread and returns at once
     * (see <a href="#async">Asynchronous array copies</a>): do not touch {@code dst}, or change {@code src}, until
     * the future completes.
     *
     * @param src the source buffer, of this handle's context
     * @param dst the destination array
     * @param dstOffset the first element of {@code dst} to write
     * @param length number of elements to copy
     * @return a future completed once the elements are in the array, or exceptionally with what made the copy fail
     * @throws IllegalArgumentException if a range is outside its array or buffer, or {@code src} belongs to another context
     * @throws IllegalStateException if the handle or {@code src} is closed, or this thread captures a graph
     */
    public CompletableFuture<Void> downloadAsync(DeviceBuffer src, int[] dst, int dstOffset, int length) {
        return ArrayTransfers.copyAsync(this, src, dst, dstOffset, length, false);
    }

    /**
     * Starts {@link #copyToHost(DeviceBuffer, long[], int, int)} on a cuhandle thread and returns at once
     * (see <a href="#async">Asynchronous array copies</a>): do not touch {@code dst}, or change {@code src}, until
     * the future completes.
     *
     * @param src the source buffer, of this handle's context
     * @param dst the destination array
     * @param dstOffset the first element of {@code dst} to write
     * @param length number of elements to copy
     * @return a future completed once the elements are in the array, or exceptionally with what made the copy fail
     * @throws IllegalArgumentException if a range is outside its array or buffer, or {@code src} belongs to another context
     * @throws IllegalStateException if the handle or {@code src} is closed, or this thread captures a graph
     */
    public CompletableFuture<Void> downloadAsync(DeviceBuffer src, long[] dst, int dstOffset, int length) {
        return ArrayTransfers.copyAsync(this, src, dst, dstOffset, length, false);
    }

    /**
     * Starts {@link #copyToHost(DeviceBuffer, byte[], int, int)} on a cuhandle thread and returns at once
     * (see <a href="#async">Asynchronous array copies</a>): do not touch {@code dst}, or change {@code src}, until
     * the future completes.
     *
     * @param src the source buffer, of this handle's context
     * @param dst the destination array
     * @param dstOffset the first element of {@code dst} to write
     * @param length number of elements to copy
     * @return a future completed once the elements are in the array, or exceptionally with what made the copy fail
     * @throws IllegalArgumentException if a range is outside its array or buffer, or {@code src} belongs to another context
     * @throws IllegalStateException if the handle or {@code src} is closed, or this thread captures a graph
     */
    public CompletableFuture<Void> downloadAsync(DeviceBuffer src, byte[] dst, int dstOffset, int length) {
        return ArrayTransfers.copyAsync(this, src, dst, dstOffset, length, false);
    }

    /**
     * Starts {@link #copyToHost(DeviceBuffer, short[], int, int)} on a cuhandle thread and returns at once
     * (see <a href="#async">Asynchronous array copies</a>): do not touch {@code dst}, or change {@code src}, until
     * the future completes.
     *
     * @param src the source buffer, of this handle's context
     * @param dst the destination array
     * @param dstOffset the first element of {@code dst} to write
     * @param length number of elements to copy
     * @return a future completed once the elements are in the array, or exceptionally with what made the copy fail
     * @throws IllegalArgumentException if a range is outside its array or buffer, or {@code src} belongs to another context
     * @throws IllegalStateException if the handle or {@code src} is closed, or this thread captures a graph
     */
    public CompletableFuture<Void> downloadAsync(DeviceBuffer src, short[] dst, int dstOffset, int length) {
        return ArrayTransfers.copyAsync(this, src, dst, dstOffset, length, false);
    }

    /**
     * Starts {@link #copyToHost(DeviceBuffer, char[], int, int)} on a cuhandle thread and returns at once
     * (see <a href="#async">Asynchronous array copies</a>): do not touch {@code dst}, or change {@code src}, until
     * the future completes.
     *
     * @param src the source buffer, of this handle's context
     * @param dst the destination array
     * @param dstOffset the first element of {@code dst} to write
     * @param length number of elements to copy
     * @return a future completed once the elements are in the array, or exceptionally with what made the copy fail
     * @throws IllegalArgumentException if a range is outside its array or buffer, or {@code src} belongs to another context
     * @throws IllegalStateException if the handle or {@code src} is closed, or this thread captures a graph
     */
    public CompletableFuture<Void> downloadAsync(DeviceBuffer src, char[] dst, int dstOffset, int length) {
        return ArrayTransfers.copyAsync(this, src, dst, dstOffset, length, false);
    }

    /**
     * Copies {@code bytes} bytes from a ByteBuffer, starting at its absolute index {@code srcOffset} (position
     * and limit are ignored and unchanged), to the start of {@code dst}, on this handle's stream. A direct
     * buffer goes to the driver with no staging: for ordinary (pageable) memory the call returns once the
     * driver has read the source, so the ByteBuffer may be reused at once; memory page-locked with
     * {@code cuMemHostRegister} (see {@link HostRegistration}) is copied asynchronously and must not change
     * until the stream has passed the copy. A heap buffer is copied as a {@code byte[]} is (see
     * <a href="#arrays">Copies between Java arrays and the device</a>) and may be reused once this returns.
     *
     * @param src a direct or heap ByteBuffer
     * @param srcOffset the first byte of {@code src} to copy (absolute index)
     * @param dst the destination buffer, of this handle's context
     * @param bytes number of bytes to copy
     * @throws NullPointerException if {@code src} or {@code dst} is {@code null}
     * @throws IllegalArgumentException if {@code [srcOffset, srcOffset + bytes)} is outside the capacity of
     *     {@code src}, {@code dst} holds fewer than {@code bytes} bytes, or {@code dst} belongs to another context
     * @throws IllegalStateException if the handle or {@code dst} is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void copyToDevice(ByteBuffer src, int srcOffset, DeviceBuffer dst, long bytes) {
        copyByteBuffer(dst, src, srcOffset, bytes, true);
    }

    /**
     * Copies {@code bytes} bytes from the start of {@code src} into a ByteBuffer at its absolute index
     * {@code dstOffset} (position and limit are ignored and unchanged), on this handle's stream, and waits
     * until they have arrived. A direct buffer is written by the driver with no staging, a heap buffer as a
     * {@code byte[]} is (see <a href="#arrays">Copies between Java arrays and the device</a>).
     *
     * @param src the source buffer, of this handle's context
     * @param dst a writable ByteBuffer, direct or heap
     * @param dstOffset the first byte of {@code dst} to write (absolute index)
     * @param bytes number of bytes to copy
     * @throws NullPointerException if {@code src} or {@code dst} is {@code null}
     * @throws IllegalArgumentException if {@code dst} is read-only, {@code [dstOffset, dstOffset + bytes)} is
     *     outside its capacity, {@code src} holds fewer than {@code bytes} bytes, or {@code src} belongs to
     *     another context
     * @throws IllegalStateException if the handle or {@code src} is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails (including an earlier
     *     asynchronous failure on the stream)
     */
    public void copyToHost(DeviceBuffer src, ByteBuffer dst, int dstOffset, long bytes) {
        copyByteBuffer(src, dst, dstOffset, bytes, false);
    }

    private void copyByteBuffer(DeviceBuffer buffer, ByteBuffer host, int offset, long bytes, boolean upload) {
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
            ArrayTransfers.copyHeapBuffer(this, buffer, host, offset, bytes, upload);
            return;
        }
        long h = enter();
        long b = 0;
        try {
            b = buffer.enterFor(this);
            if (upload) {
                NativeApi.uploadDirect(h, b, buffer.byteOffset(), host, offset, bytes);
            } else {
                NativeApi.downloadDirect(h, b, buffer.byteOffset(), host, offset, bytes);
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
     * <p>The capture runs on a private stream of the context (never the handle's own stream, which frees of
     * memory allocated on it reach in stream order from any thread), in the driver's thread-local mode, and
     * is confined to the calling thread:
     * calls on this handle from other threads are refused with an {@link IllegalStateException} until
     * it ends, and it starts once the calls other threads already began have returned. Calls that cannot
     * be recorded are refused, on this thread and before the driver sees them, with an
     * {@link IllegalStateException} that names them, and the capture goes on (rule C1 of docs/design.md):
     * {@link #synchronize()}, {@link #whenDone()}, {@link #setStream(long)}, {@link #resetStream()},
     * {@link #allocate(long)} and {@code upload}, {@link #allocateHost(long)}, {@link #trimMemory()}, copies
     * between the device and Java arrays or ByteBuffers, BLAS reductions that return their value,
     * {@link Event#synchronize()}, {@link Event#query()}, and closing a handle, buffer, host buffer, event,
     * library or graph. Buffers and libraries must therefore exist before the capture. Nothing another
     * thread does (frees, the cleaner, other handles' captures) affects this one. Asynchronous copies
     * with {@link HostBuffer}s are recorded; their futures are complete at once. Another handle used inside
     * {@code work} runs its calls at once, uncaptured.
     *
     * <p>The graph keeps what it recorded (rule L7): every {@link DeviceBuffer}, {@link HostBuffer},
     * {@link Library} and {@link Event} its calls used stays reachable while the graph is, a replay after one
     * of them was closed is an {@link IllegalStateException}, and memory released while replays are queued
     * is reused only after them.
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
     * memory from the operating system, so closed buffers' memory is cached per context and reused by later
     * allocations of its size class (a power of two up to 16 MiB, then 2 MiB steps) once the copies that
     * used it are done; {@link #trimMemory()} gives it back (see {@link MemoryStats}).
     *
     * @param bytes size in bytes, at least 1
     * @return a new host buffer, owned by the caller (close it)
     * @throws IllegalArgumentException if {@code bytes} is less than 1
     * @throws IllegalStateException if the handle is closed, or this thread is capturing a graph
     * @throws CudaException if the memory cannot be page-locked ({@link CudaError#OUT_OF_MEMORY}), the context was
     *     destroyed or reset, or the driver fails
     */
    public HostBuffer allocateHost(long bytes) {
        if (bytes < 1) {
            throw new IllegalArgumentException("host buffer size " + bytes + " is invalid; expected at least 1 byte");
        }
        Capture.refuseOnThisThread("Handle.allocateHost");
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
     * @return a future of the work queued so far
     * @throws IllegalStateException if the handle is closed, or this thread is capturing a graph (nothing of
     *     the capture runs until the graph is replayed: wait for the replay instead)
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public CompletableFuture<Void> whenDone() {
        Capture.refuseOnThisThread("Handle.whenDone");
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
     * across a wait (rule L4): the call returns as soon as the copy is queued. Inside a capture the copy is
     * recorded, the graph keeps both buffers (rule L7), and the future is complete at once: nothing was
     * queued to run.
     */
    private CompletableFuture<Void> copyAsync(HostBuffer host, long hostOffset, DeviceBuffer device, long bytes, boolean upload) {
        Objects.requireNonNull(host, upload ? "src" : "dst");
        Objects.requireNonNull(device, upload ? "dst" : "src");
        host.checkRange(hostOffset, bytes, 1);
        device.checkBytes(bytes, upload ? "destination" : "source");
        long h = enter();
        try {
            if (capture != null) {
                return recordCopy(h, host, hostOffset, device, bytes, upload);
            }
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

    /** {@link #copyAsync} inside a capture on this thread (the caller entered the handle as {@code h}). */
    private CompletableFuture<Void> recordCopy(long h, HostBuffer host, long hostOffset, DeviceBuffer device, long bytes, boolean upload) {
        long p = host.enterFor(this);
        try {
            long b = device.enterFor(this);
            try {
                NativeApi.pinnedCopyAsync(h, p, hostOffset, b, device.byteOffset(), bytes, upload);
            } finally {
                device.exit();
            }
        } finally {
            host.exit();
        }
        return CompletableFuture.completedFuture(null);
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
            long e = event.enterFor(this);
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
     * Closes the handle (H6): waits for calls in flight on other threads, synchronises its stream (its own
     * work only: no other handle shares it), frees what it owns, gives the stream back to its context for
     * later handles and releases the primary-context retain once. Idempotent; later calls throw
     * {@link IllegalStateException}. Futures of {@link #whenDone()} and of the asynchronous copies
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
