package dev.cuhandle;

/**
 * Test-only native entry points that ask the driver directly (rust/src/jni/testing_driver_probe.rs):
 * the module loading mode in force, raw launches whose context the driver picks itself, to set
 * beside cuhandle's own launches, and the driver's own allocation churn, to set beside cuhandle's.
 */
public final class DriverProbeTestApi {
    static {
        Native.ensureLoaded();
    }

    /** {@code CU_MODULE_EAGER_LOADING}. */
    public static final int EAGER_LOADING = 1;
    /** {@code CU_MODULE_LAZY_LOADING}. */
    public static final int LAZY_LOADING = 2;

    private DriverProbeTestApi() {}

    /** {@code cuModuleGetLoadingMode}: {@link #EAGER_LOADING}, {@link #LAZY_LOADING}, or -1 if the driver lacks the call. */
    public static native int moduleLoadingMode();

    /**
     * {@code cuLaunchKernel} of one thread of a kernel taking one pointer: {@code function} is a
     * {@code CUfunction} or a {@code CUkernel}; {@code stream} 0 is the NULL stream of the current context.
     *
     * @return the driver's {@code CUresult} (not thrown)
     */
    public static native int launchWithOnePointer(long function, long stream, long pointer);

    /** {@code cuCtxSynchronize} of the current context; returns the {@code CUresult} (not thrown). */
    public static native int synchronizeCurrent();

    /** {@link #churnInStreamOrder} as tests/bench/alloc_churn.c: {@code cuMemAllocAsync} from the device's default pool. */
    public static final int C_LOOP = 0;
    /** {@link #churnInStreamOrder} way bit: allocate from a pool made as cuhandle makes its own. */
    public static final int CUHANDLES_POOL = 1;
    /** {@link #churnInStreamOrder} way bit: {@code cuCtxGetId} before each call, as cuhandle's validation does. */
    public static final int CONTEXT_ID_PER_CALL = 2;

    /**
     * tests/bench/alloc_churn.c's stream-ordered loop in this process: {@code rounds} rounds of
     * allocate + {@code cuMemsetD8Async} + {@code cuMemFreeAsync} of {@code bytes} on {@code stream}
     * (a stream of {@code handle}'s context, which is current), then {@code cuStreamSynchronize}.
     *
     * @param way {@link #C_LOOP}, or its bits {@link #CUHANDLES_POOL} and {@link #CONTEXT_ID_PER_CALL}
     *     adding one of cuhandle's costs each
     * @return each round's nanoseconds, timed around the three calls as the C loop times them
     * @throws CudaException if a call fails; {@link IllegalStateException} if the driver lacks {@code cuMemAllocAsync}
     */
    public static long[] churnInStreamOrder(Handle handle, long stream, long bytes, int rounds, int way) {
        long h = handle.enter();
        try {
            return churnInStreamOrder(h, stream, bytes, rounds, way);
        } finally {
            handle.exit();
        }
    }

    private static native long[] churnInStreamOrder(long handle, long stream, long bytes, int rounds, int way);
}
