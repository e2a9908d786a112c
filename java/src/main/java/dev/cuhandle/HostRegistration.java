package dev.cuhandle;

import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.util.Objects;

/**
 * A direct ByteBuffer page-locked for repeated copies ({@code cuMemHostRegister}, portable to every
 * context), until {@link #close()}. While registered, {@link Handle#copyToDevice(ByteBuffer, int, DeviceBuffer, long) Handle.copyToDevice(ByteBuffer, int, DeviceBuffer, long)}
 * and {@link Handle#copyToHost(DeviceBuffer, ByteBuffer, int, long) Handle.copyToHost(DeviceBuffer, ByteBuffer, int, long)} with that buffer (or any view of
 * its memory) run at pinned speed, straight from and to its memory: the driver no longer stages
 * pageable memory through its own buffer. An upload from registered memory is asynchronous: change
 * the bytes only once the stream has passed the copy ({@link Handle#synchronize()}).
 *
 * <p>Page-locking takes memory from the operating system and is slow (milliseconds per GiB):
 * register a buffer you copy many times, not one per copy. For memory you allocate anyway, a
 * {@link HostBuffer} ({@link Handle#allocateHost(long) Handle.allocateHost(long)}) is pinned from the start.
 *
 * <p><b>Lifetime.</b> The registration holds the ByteBuffer, so its memory stays allocated while
 * registered. Close it once the copies that use the buffer are done ({@code synchronize()} the
 * handles that copied): the memory is then pageable again. An unreachable registration is
 * unregistered by a cleaner with a warning. It keeps the registering handle's context alive (a
 * primary context stays retained) until it is closed.
 *
 * <pre>{@code
 * ByteBuffer staging = ByteBuffer.allocateDirect(1 << 20);
 * try (HostRegistration pinned = HostRegistration.register(h, staging)) {
 *     for (Chunk c : chunks) {
 *         c.writeTo(staging);
 *         h.copyToDevice(staging, 0, device, staging.capacity());   // at pinned speed
 *         h.synchronize();                                            // before the next chunk changes the bytes
 *     }
 * }
 * }</pre>
 */
public final class HostRegistration extends NativeResource implements AutoCloseable {
    private final ByteBuffer buffer;

    private HostRegistration(long pointer, ByteBuffer buffer) {
        // The free action holds the ByteBuffer, not this object: the memory must outlive the registration.
        super(pointer, "HostRegistration", p -> {
            NativeApi.hostUnregister(p);
            Reference.reachabilityFence(buffer);
        });
        this.buffer = buffer;
    }

    /**
     * Page-locks the memory of {@code direct} (its whole capacity) in {@code handle}'s context, portable
     * to every context.
     *
     * @param handle a handle whose context registers the memory
     * @param direct a direct ByteBuffer
     * @return the registration; close it before the memory is freed
     * @throws NullPointerException if an argument is {@code null}
     * @throws IllegalArgumentException if {@code direct} is not a direct buffer or has no capacity
     * @throws IllegalStateException if the handle is closed, or this thread is capturing a graph (page-locking
     *     cannot be recorded, rule C1)
     * @throws CudaException if the driver refuses, for example
     *     {@code CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED} for memory that is already page-locked
     *     (another registration, or a {@link HostBuffer})
     */
    public static HostRegistration register(Handle handle, ByteBuffer direct) {
        Objects.requireNonNull(handle, "handle");
        Objects.requireNonNull(direct, "direct");
        if (!direct.isDirect()) {
            throw new IllegalArgumentException("the ByteBuffer is a heap buffer; only a direct ByteBuffer's memory can be page-locked");
        }
        if (direct.capacity() == 0) {
            throw new IllegalArgumentException("the ByteBuffer has no capacity; expected at least 1 byte to page-lock");
        }
        Capture.refuseOnThisThread("HostRegistration.register");
        long h = handle.enter();
        try {
            return new HostRegistration(NativeApi.hostRegister(h, direct), direct);
        } finally {
            handle.exit();
        }
    }

    /**
     * The registered ByteBuffer.
     *
     * @return the buffer given to {@link #register(Handle, ByteBuffer)}
     */
    public ByteBuffer buffer() {
        return buffer;
    }

    /**
     * Unregisters the memory (idempotent); the ByteBuffer stays usable as ordinary memory.
     *
     * @throws IllegalStateException if this thread is capturing a graph (closing anything is refused there, rule C1)
     */
    @Override
    public void close() {
        Capture.close(this, "HostRegistration.close");
    }

    @Override
    public String toString() {
        return "HostRegistration[" + buffer.capacity() + " bytes" + (isClosed() ? ", closed]" : "]");
    }
}
