package dev.cuhandle;

/**
 * Test-only native entry points for green contexts (CUDA 12.4+; implemented in
 * rust/src/jni/testing_green_context.rs, looked up with {@code cuGetProcAddress}): create one with
 * a share of the device's SMs, destroy it, and ask which green context a stream belongs to.
 */
public final class GreenContextTestApi {
    static {
        Native.ensureLoaded();
    }

    /** Index of the green context ({@code CUgreenCtx}) in {@link #create}'s answer. */
    public static final int GREEN = 0;
    /** Index of its {@code CUcontext} ({@code cuCtxFromGreenCtx}). */
    public static final int CONTEXT = 1;
    /** Index of the green context's SM count. */
    public static final int SMS = 2;
    /** Index of the device's SM count. */
    public static final int DEVICE_SMS = 3;

    private GreenContextTestApi() {}

    /** Whether the driver has every green-context entry point these tests use. */
    public static native boolean available();

    /**
     * Creates a green context on {@code device} with one group of at least {@code minSms} SMs
     * ({@code cuDevSmResourceSplitByCount}); nothing is made current.
     *
     * @return {@code [CUgreenCtx, its CUcontext, its SM count, the device's SM count]}
     */
    public static native long[] create(int device, int minSms);

    /** {@code cuGreenCtxDestroy}. */
    public static native void destroy(long green);

    /** {@code cuStreamGetGreenCtx}: the green context {@code stream} was created in, 0 if none. */
    public static native long greenContextOfStream(long stream);
}
