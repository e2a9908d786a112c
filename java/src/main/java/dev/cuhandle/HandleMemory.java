package dev.cuhandle;

import java.util.Objects;
import java.util.function.LongConsumer;

/**
 * The memory side of a {@link Handle}: allocations in its context (device memory from the context's
 * stream-ordered pool, rule M1; page-locked host memory), views of memory allocated elsewhere, the
 * device-side fills and copies, and what the pool holds. {@link Handle} is the only subclass; every
 * call enters it through {@link Handle#enter()}, with the handle's capture and stream-switch guards.
 */
abstract class HandleMemory extends NativeResource {
    HandleMemory(long pointer, String what, LongConsumer free) {
        super(pointer, what, free);
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
            return DeviceBuffer.allocated(self(), NativeApi.bufferAllocate(h, bytes), bytes);
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
            return DeviceBuffer.wrapping(self(), NativeApi.bufferWrap(h, deviceAddress, bytes), deviceAddress, bytes, "wrapped DeviceBuffer", null);
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
            return HostBuffer.of(NativeApi.pinnedAllocate(h, bytes), bytes);
        } finally {
            exit();
        }
    }
}
