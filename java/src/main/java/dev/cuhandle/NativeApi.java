package dev.cuhandle;

import java.nio.ByteBuffer;

/**
 * The native entry points (implemented in {@code rust/src/jni}, registered from one table in
 * {@code rust/src/jni/natives.rs} when the library loads: a method here that the table does not
 * match fails the load with a message naming it). Pointers to native objects travel as
 * {@code long}; each Java wrapper guarantees a pointer is used only while its object is open.
 * Call {@link Native#ensureLoaded()} before any of these.
 */
final class NativeApi {
    private NativeApi() {}

    static native void configure(String driverPath, int logLevel);

    /** The libnvrtc file to load ({@code cuhandle.nvrtc.path}); null or empty for the default search. */
    static native void configureNvrtc(String nvrtcPath);

    /** Memory pools made from now on: release threshold in bytes (negative: unlimited), and whether pools are used at all. */
    static native void configureMemory(long releaseThreshold, boolean pools);

    static native String[] nvrtcDescribe();

    static native String nvrtcTarget(String architecture, int[] computeCapabilities, boolean ptxOnly);

    /** The image as a {@code byte[]}, or NVRTC's log as a {@code String} when the source does not compile. */
    static native Object nvrtcCompile(String source, String programName, String[] headerNames, String[] headerSources, String[] flags, String target);

    /**
     * The bytes of a file that must be this user's own ({@code rust/src/core/own_file.rs}): opened without following a
     * link, then, on the opened file, a regular file owned by {@code uid}, not group or other writable, with one name,
     * of more than {@code minBytes} and at most {@code maxBytes} bytes. Returns the {@code byte[]}, null when there is
     * no such file, or a {@code String} saying why it is not used.
     */
    static native Object readOwnFile(String path, int uid, long minBytes, long maxBytes);

    static native int driverVersion();

    static native String driverPath();

    static native String missingDriverFeatures();

    static native void initialise();

    static native int deviceCount();

    static native String deviceName(int device);

    static native long[] deviceInfo(int device);

    static native int deviceAttribute(int device, int attribute);

    static native int[] stickyCodes();

    static native long currentContext();

    static native long[] primaryContextState(int device);

    /**
     * The handle creations write [native pointer, raw context, context id, device ordinal, 1 if the primary context
     * is retained, SMs of the partition (0: none)] into {@code created}, a {@code long[6]} the caller made: an
     * array made here costs less than one the native side makes (issue 35).
     */
    static native void handleCreateCurrent(int defaultDevice, long[] created);

    static native void handleCreateDevice(int device, long[] created);

    static native void handleWrap(long rawContext, long[] created);

    static native String partitionSupport(int ordinal);

    static native long[] partitionSplitParts(int ordinal, int parts);

    static native long[] partitionSplitCounts(int ordinal, int[] counts);

    static native void partitionRelease(long partition);

    static native void handleCreatePartition(long partition, long[] created);

    static native void handleDestroy(long handle);

    static native void handleSynchronize(long handle);

    static native void handleMakeCurrent(long handle);

    static native void handleSetStream(long handle, long stream);

    static native void handleResetStream(long handle);

    static native long handleStream(long handle);

    static native void handleValidate(long handle);

    static native long handleFreeMemory(long handle);

    /** [bytes handed out by the pool, bytes the pool holds, pinned bytes cached, 1 if stream-ordered]. */
    static native long[] handleMemoryStats(long handle);

    static native void handleTrimMemory(long handle);

    static native long bufferAllocate(long handle, long bytes);

    static native long bufferWrap(long handle, long address, long bytes);

    /** A view of a library variable at {@code address}: its uses are noted for the library's unload. */
    static native long bufferWrapVariable(long handle, long library, long address, long bytes);

    static native long bufferAddress(long buffer);

    static native long bufferContextId(long buffer);

    static native void bufferFree(long buffer);

    /**
     * One range of a copy between a Java array and device memory through pinned staging ({@link ArrayTransfers}):
     * {@code stream} is a raw stream from {@link #handleStream(long)}, or -1 for the handle's current stream;
     * {@code waitForDevice} makes an upload return only once its last chunk is on the device; {@code criticalCopy} copies each
     * chunk with a {@code memcpy} inside a critical region held for that copy alone, instead of a JNI region copy.
     */
    static native void arrayCopy(long handle, long buffer, long offset, Object array, int typeCode, long arrayByteOffset, long bytes, boolean upload,
            long stream, long chunkBytes, int depth, long slotBytes, int idleSlots, boolean waitForDevice, boolean criticalCopy);

    /**
     * A batch copy between many Java arrays of one type and as many device buffers, in one staged pass ({@link BatchTransfers}):
     * {@code buffers} are entered buffer pointers, {@code offsets} their byte offsets, {@code lengths} the arrays' byte lengths;
     * {@code stream}, {@code waitForDevice} and {@code criticalCopy} as for {@link #arrayCopy}; {@code batched} lets the copies of
     * a chunk go to the driver in one {@code cuMemcpyBatchAsync} call where the driver has it.
     */
    static native void batchCopy(long handle, long[] buffers, long[] offsets, long[] lengths, Object[] arrays, int typeCode, boolean upload,
            long stream, long chunkBytes, int depth, long slotBytes, int idleSlots, boolean waitForDevice, boolean criticalCopy, boolean batched);

    static native long hostRegister(long handle, ByteBuffer direct);

    static native void hostUnregister(long registration);

    static native void uploadDirect(long handle, long buffer, long offset, ByteBuffer direct, long directOffset, long bytes);

    static native void downloadDirect(long handle, long buffer, long offset, ByteBuffer direct, long directOffset, long bytes);

    static native void memset(long handle, long buffer, long offset, long bytes, int value);

    static native void copy(long handle, long dst, long dstOffset, long src, long srcOffset, long bytes);

    static native long directBufferAddress(ByteBuffer direct);

    static native long libraryLoad(byte[] image, int optimizationLevel, int maxRegisters, boolean logVerbose, boolean binaryIsPreserved);

    static native long libraryLoadFile(String path, int optimizationLevel, int maxRegisters, boolean logVerbose);

    static native String libraryInfoLog(long library);

    static native long[] kernelParamSizesOn(long library, long kernel, int device);

    static native void kernelSetAttribute(long library, long kernel, int attribute, int value, int device);

    static native void libraryUnload(long library);

    static native long[] kernelGet(long library, String name);

    static native long[] kernelParamSizes(long handle, long library, long kernel);

    static native String[] libraryKernelNames(long library);

    static native int kernelAttribute(long library, long kernel, int attribute, int device);

    static native long kernelFunction(long handle, long kernel);

    /** cuOccupancyMaxPotentialClusterSize in the handle's context; -1 where the driver lacks it. */
    static native int kernelMaxClusterSize(long handle, long function, int gx, int gy, int gz, int bx, int by, int bz, int sharedBytes, boolean nonPortableAllowed);

    static native void launch(long handle, long function, int gx, int gy, int gz, int bx, int by, int bz, int sharedBytes, long params, int argCount,
            boolean cooperative, int clusterX, int clusterY, int clusterZ, long memory, int memoryCount, long library);

    static native long[] libraryGlobal(long handle, long library, String name);

    static native long[] libraryManaged(long library, int device, String name);

    static native long managedRead(long library, long address, long bytes, long offset, int length);

    static native void managedWrite(long library, long address, long bytes, long offset, int length, long value);

    static native void captureBegin(long handle);

    static native long captureEnd(long handle);

    static native void captureAbort(long handle);

    /** [context id, node count] */
    static native long[] graphInfo(long graph);

    static native void graphLaunch(long graph, long handle, long[] buffers, long[] pinned, long[] libraries);

    static native void graphDestroy(long graph);

    /** The node the handle's capture recorded last (a kernel launch's, as the caller knows). */
    static native long captureLastNode(long handle);

    /** A new condition in the graph the handle's capture records into, starting at {@code defaultValue} on each launch. */
    static native long captureCreateCondition(long handle, int defaultValue);

    /** Adds an IF (0) or WHILE (1) node on {@code condition} and records the handle's later calls into its body. */
    static native void captureBeginConditional(long handle, int kind, long condition);

    static native void captureEndConditional(long handle);

    static native void graphSetKernelNode(long graph, long handle, long node, long function, int gx, int gy, int gz, int bx, int by, int bz, int sharedBytes,
            long params, int argCount);

    static native long eventCreate(long handle);

    static native void eventRecord(long event, long handle);

    static native void eventSynchronize(long event);

    static native float eventElapsed(long start, long end);

    static native void eventDestroy(long event);

    static native byte[] builtinFatbin();

    static native void blasUpdate(long handle, int elementBytes, int op, long n, double alpha,
            long x, long xOffset, long xLength, long incx, long y, long yOffset, long yLength, long incy);

    static native double blasReduce(long handle, int elementBytes, int op, long n, long x, long xOffset, long xLength, long incx,
            long y, long yOffset, long yLength, long incy, long result, long resultOffset, long resultLength);

    static native boolean eventQuery(long event);

    static native void handleWaitEvent(long handle, long event);

    static native long markerRecord(long handle, long id);

    static native boolean markerQuery(long marker);

    static native void markerRelease(long marker);

    static native long[] markerAwait(long timeoutNanos);

    static native void markerWake();

    static native long pinnedAllocate(long handle, long bytes);

    static native long pinnedAddress(long pinned);

    static native void pinnedFree(long pinned);

    static native ByteBuffer pinnedByteBuffer(long pinned, long offset, long length);

    static native void pinnedCopyAsync(long handle, long pinned, long hostOffset, long buffer, long bufferOffset, long bytes, boolean upload);
}
