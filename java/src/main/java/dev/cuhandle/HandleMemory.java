package dev.cuhandle;

import java.util.Objects;
import java.util.function.LongConsumer;

/**
 * The memory side of a {@link Handle}: allocations in its context (device memory from the context's
 * stream-ordered pool, rule M1; page-locked host memory), views of memory allocated elsewhere, the
 * device-side fills and copies, and what the pool holds; and the owner's scope over them: what the handle
 * made, closed in one call ({@link #trackResources() trackResources()}), and how its blocking waits end
 * ({@link #setWaitCancellation(WaitCancellation) setWaitCancellation(WaitCancellation)}). {@link Handle} is the only subclass; every call enters it through
 * {@link Handle#enter()}, with the handle's capture and stream-switch guards.
 */
abstract class HandleMemory extends NativeResource {
    /** What the handle made since {@link #trackResources() trackResources()}, or null while it does not track. */
    private volatile TrackedResources tracked;
    /** What ends this handle's blocking waits early, or null: they wait in the driver. */
    private volatile WaitCancellation waitCancellation;

    HandleMemory(long pointer, String what, LongConsumer free) {
        super(pointer, what, free);
    }

    /**
     * From now on, notes every {@link DeviceBuffer}, {@link HostBuffer}, {@link Event} and {@link Graph} this
     * handle makes ({@code allocate}, {@code upload}, {@code wrapPointer}, {@code allocateHost},
     * {@code createEvent}, {@code capture}), so that {@link #closeTrackedResources() closeTrackedResources()} can close those still open,
     * for an owner that ends all of a unit of work's objects at once, also when the work failed half way (a
     * Spark task's handle does this when the task ends). Views ({@code slice}) belong to their buffer. Off by
     * default; idempotent. Notes are pruned as objects close, so a loop that makes and closes buffers keeps
     * the list short.
     *
     * @throws IllegalStateException if the handle is closed
     */
    public void trackResources() {
        call(p -> { });
        synchronized (this) {
            if (tracked == null) {
                tracked = new TrackedResources();
            }
        }
    }

    /**
     * Closes every object noted since {@link #trackResources() trackResources()} that is still open, the newest first, and
     * forgets them; tracking stays on. Each close is attempted; the first failure is thrown after the others.
     * Also allowed after the handle itself was closed (objects may outlive their handle).
     *
     * @return how many objects were open and closed here; 0 when the handle does not track
     * @throws RuntimeException the first failure of a close, with the later ones suppressed
     */
    public int closeTrackedResources() {
        TrackedResources t = tracked;
        return t == null ? 0 : t.closeAll();
    }

    /**
     * Makes this handle's blocking waits end early as {@code cancellation} says ({@link Handle#synchronize()} and
     * the blocking copies between Java arrays or {@code ByteBuffer}s and the device: see {@link WaitCancellation}
     * for what they do then and what it costs), or, with {@code null}, wait in the driver again (the default).
     *
     * @param cancellation what ends the waits, e.g. {@link WaitCancellation#onInterrupt()}; {@code null} for none
     * @throws IllegalStateException if the handle is closed
     */
    public void setWaitCancellation(WaitCancellation cancellation) {
        call(p -> { });
        waitCancellation = cancellation;
    }

    /**
     * What ends this handle's blocking waits early ({@link #setWaitCancellation(WaitCancellation) setWaitCancellation(WaitCancellation)}), or {@code null}.
     *
     * @return the cancellation, or {@code null} when waits end only with the work
     */
    public WaitCancellation waitCancellation() {
        return waitCancellation;
    }

    /**
     * Before a blocking call: with a {@link WaitCancellation}, waits for the work queued so far in a way it can
     * end (a thread capturing a graph waits for nothing: its calls are recorded, not run).
     */
    final void awaitQueuedWorkCancellably() {
        WaitCancellation c = waitCancellation;
        if (c != null && !Capture.activeOnThisThread()) {
            CancellableWaits.await(self(), c);
        }
    }

    /**
     * Before the close's own synchronisation: with a {@link WaitCancellation}, waits for the queued work by
     * parking (not cancellable: the release must follow the work, rule H6), so that a cancelled task's close
     * does not spin in the driver.
     */
    final void awaitQueuedWorkBeforeClose() {
        if (waitCancellation != null && !isClosed() && !Capture.activeOnThisThread()) {
            CancellableWaits.awaitQuietly(self());
        }
    }

    /**
     * {@code resource} (a {@link NativeResource}), noted if the handle tracks what it makes. Bounded by the interface
     * only: the verifier loads a class to check an argument against a parameter of a class type, but not against one
     * of an interface type, so verifying {@code Handle} no longer loads DeviceBuffer, HostBuffer, Event and Graph in a
     * process's first {@code Handle.create} (issue 35's cold start). {@link TrackedResources#add} checks the type.
     */
    final <T extends AutoCloseable> T track(T resource) {
        TrackedResources t = tracked;
        return t == null ? resource : t.add(resource);
    }

    private Handle self() {
        return (Handle) this;
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
     * stays, and so does memory whose stream-ordered free has not run yet: {@link Handle#synchronize()} first to
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
     * {@link #memset(DeviceBuffer, int) memset(DeviceBuffer, int)}. Without memory pools (device, driver or
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
            return track(DeviceBuffer.allocated(self(), NativeApi.bufferAllocate(h, bytes), bytes));
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
            return track(DeviceBuffer.wrapping(self(), NativeApi.bufferWrap(h, deviceAddress, bytes), deviceAddress, bytes, "wrapped DeviceBuffer", null));
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
                return DeviceBuffer.wrapping(self(), NativeApi.bufferWrapVariable(h, lib, address, bytes), address, bytes, what, library);
            } finally {
                library.exit();
            }
        } finally {
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
            b = buffer.enterFor(self());
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
            s = src.enterFor(self());
            d = dst.enterFor(self());
            NativeApi.copy(h, d, dst.byteOffset(), s, src.byteOffset(), src.byteLength());
        } finally {
            DeviceBuffer.exit(dst, d);
            DeviceBuffer.exit(src, s);
            exit();
        }
    }

    /**
     * Allocates {@code bytes} of page-locked host memory ({@code cuMemHostAlloc}, portable to every
     * context), the source and destination of {@link Handle#uploadAsync(HostBuffer, DeviceBuffer) Handle.uploadAsync(HostBuffer, DeviceBuffer)} and
     * {@link Handle#downloadAsync(DeviceBuffer, HostBuffer) Handle.downloadAsync(DeviceBuffer, HostBuffer)}. Page-locking is slow (milliseconds per GiB) and takes
     * memory from the operating system, so closed buffers' memory is cached per context and reused by later
     * allocations of its size class (a power of two up to 16 MiB, then 2 MiB steps) once the copies that
     * used it are done; {@link #trimMemory() trimMemory()} gives it back (see {@link MemoryStats}).
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
            return track(HostBuffer.of(NativeApi.pinnedAllocate(h, bytes), bytes));
        } finally {
            exit();
        }
    }
}
