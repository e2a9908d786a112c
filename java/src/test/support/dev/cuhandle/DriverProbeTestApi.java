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

    /**
     * tests/bench/alloc_churn.c's stream-ordered loop in this process: {@code rounds} rounds of
     * {@code cuMemAllocAsync} + {@code cuMemsetD8Async} + {@code cuMemFreeAsync} of {@code bytes} on
     * {@code stream} (a stream of the current context), then {@code cuStreamSynchronize}.
     *
     * @return each round's nanoseconds, timed around the three calls as the C loop times them
     * @throws CudaException if a call fails; {@link IllegalStateException} if the driver lacks {@code cuMemAllocAsync}
     */
    public static native long[] churnInStreamOrder(long stream, long bytes, int rounds);
}
