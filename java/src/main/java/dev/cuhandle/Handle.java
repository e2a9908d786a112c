package dev.cuhandle;

import java.lang.ref.Reference;

import java.nio.ByteBuffer;
import java.util.Objects;

/**
 * A cuBLAS-style handle: bound to one driver context, owning a stream, usable from any thread
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
     * Binds to the context current on this thread (H1; retained if it is a primary context), or,
     * with none current, to the primary context of {@link Cuda#getDevice()} (H2).
     */
    public static Handle create() {
        Native.ensureLoaded();
        return new Handle(NativeApi.handleCreateCurrent(Cuda.getDevice()));
    }

    /** Binds to (and retains) the primary context of {@code device} (H3). */
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

    public Device device() {
        return device;
    }

    /** The raw {@code CUcontext} (interop). */
    public long rawContext() {
        return rawContext;
    }

    /** The context's unique id ({@code cuCtxGetId}) at creation. */
    public long contextId() {
        return contextId;
    }

    /** True when the handle retained its device's primary context (and releases it on close). */
    public boolean ownsPrimaryContext() {
        return ownsPrimaryContext;
    }

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
        return state.enter();
    }

    /** Leaves a call; keeps this handle reachable until here, so the cleaner never runs during a call (L2). */
    void exit() {
        state.exit();
        Reference.reachabilityFence(this);
    }

    /** Fails with a {@link CudaException} if the context was destroyed or reset (H8). */
    public void validate() {
        call(NativeApi::handleValidate);
    }

    /** Makes the handle's context current on this thread and leaves it so (for raw driver calls). */
    public void makeCurrent() {
        call(NativeApi::handleMakeCurrent);
    }

    /** Waits for all work queued on the handle's stream. */
    public void synchronize() {
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
        long h = enter();
        try {
            NativeApi.handleSetStream(h, rawStream);
        } finally {
            exit();
        }
    }

    /** Back to the handle's own non-blocking stream (H9). */
    public void resetStream() {
        call(NativeApi::handleResetStream);
    }

    /** The raw {@code CUstream} work goes to. */
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

    /** Allocates {@code bytes} of device memory in this handle's context (stream-ordered). */
    public DeviceBuffer allocate(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("buffer size is " + bytes + " bytes; expected >= 0");
        }
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

    /** A new buffer of this handle's context holding {@code values}. */
    public DeviceBuffer upload(float[] values) {
        return uploadArray(values);
    }

    public DeviceBuffer upload(double[] values) {
        return uploadArray(values);
    }

    public DeviceBuffer upload(int[] values) {
        return uploadArray(values);
    }

    public DeviceBuffer upload(long[] values) {
        return uploadArray(values);
    }

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

    /** Copies {@code length} elements from {@code src[srcOffset...]} to the start of {@code dst}. */
    public void copyToDevice(float[] src, int srcOffset, DeviceBuffer dst, int length) {
        copyArray(dst, src, srcOffset, length, true);
    }

    public void copyToDevice(double[] src, int srcOffset, DeviceBuffer dst, int length) {
        copyArray(dst, src, srcOffset, length, true);
    }

    public void copyToDevice(int[] src, int srcOffset, DeviceBuffer dst, int length) {
        copyArray(dst, src, srcOffset, length, true);
    }

    public void copyToDevice(long[] src, int srcOffset, DeviceBuffer dst, int length) {
        copyArray(dst, src, srcOffset, length, true);
    }

    public void copyToDevice(byte[] src, int srcOffset, DeviceBuffer dst, int length) {
        copyArray(dst, src, srcOffset, length, true);
    }

    /** Copies {@code length} elements from the start of {@code src} to {@code dst[dstOffset...]}; waits. */
    public void copyToHost(DeviceBuffer src, float[] dst, int dstOffset, int length) {
        copyArray(src, dst, dstOffset, length, false);
    }

    public void copyToHost(DeviceBuffer src, double[] dst, int dstOffset, int length) {
        copyArray(src, dst, dstOffset, length, false);
    }

    public void copyToHost(DeviceBuffer src, int[] dst, int dstOffset, int length) {
        copyArray(src, dst, dstOffset, length, false);
    }

    public void copyToHost(DeviceBuffer src, long[] dst, int dstOffset, int length) {
        copyArray(src, dst, dstOffset, length, false);
    }

    public void copyToHost(DeviceBuffer src, byte[] dst, int dstOffset, int length) {
        copyArray(src, dst, dstOffset, length, false);
    }

    /** Copies {@code bytes} from a direct ByteBuffer (from its absolute {@code srcOffset}) to {@code dst}. */
    public void copyToDevice(ByteBuffer src, int srcOffset, DeviceBuffer dst, long bytes) {
        copyDirect(dst, src, srcOffset, bytes, true);
    }

    /** Copies {@code bytes} from {@code src} into a direct ByteBuffer at absolute {@code dstOffset}; waits. */
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

    /** Sets every byte of {@code buffer} to {@code value}, in stream order. */
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

    /** Copies all of {@code src} to the start of {@code dst} on the device, in stream order. */
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
     * Launches {@code kernel} with {@code args} ({@link DeviceBuffer}, Integer, Long, Float, Double,
     * Short, Byte). Convenient; for hot loops use a reusable {@link KernelLaunch}, which allocates
     * nothing per launch.
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

    /** Launches a prepared launch object (see {@link KernelLaunch}). */
    public void launch(KernelLaunch launch) {
        launch.launch(this);
    }

    /** An event of this handle's context, for timing and ordering. */
    public Event createEvent() {
        long h = enter();
        try {
            return new Event(this, NativeApi.eventCreate(h));
        } finally {
            exit();
        }
    }

    /**
     * Closes the handle (H6): waits for calls in flight on other threads, synchronises the stream,
     * frees what it owns and releases the primary-context retain once. Idempotent; later calls
     * throw {@link IllegalStateException}.
     */
    @Override
    public void close() {
        state.close();
        Reference.reachabilityFence(this);
    }

    @Override
    public String toString() {
        return "Handle[context 0x" + Long.toHexString(rawContext) + " id " + contextId + ", device " + device.ordinal()
                + (ownsPrimaryContext ? ", primary" : ", borrowed") + (isClosed() ? ", closed]" : "]");
    }
}
