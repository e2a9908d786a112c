package dev.cuhandle;

/**
 * The native library's state. Class initialisation never throws (H12): a loading failure is kept
 * and rethrown as a {@link CudaException} by {@link #ensureLoaded()} on every use.
 */
final class Native {
    /** {@code -Dcuhandle.driver.path=/path/to/libcuda.so.1} chooses the driver library. */
    static final String DRIVER_PROPERTY = "cuhandle.driver.path";

    private static final NativeLoader.Loaded LOADED;
    private static final CudaException FAILURE;

    static {
        NativeLoader.Loaded loaded = null;
        CudaException failure = null;
        try {
            loaded = NativeLoader.load();
            NativeApi.configure(System.getProperty(DRIVER_PROPERTY), NativeLog.enabledNativeLevel());
        } catch (CudaException e) {
            failure = e;
        } catch (Throwable e) {
            failure = new CudaException(CudaError.NOT_FOUND.code(), "loading libcuhandle", e.toString(), e);
        }
        LOADED = loaded;
        FAILURE = failure;
    }

    private Native() {}

    static void ensureLoaded() {
        if (FAILURE != null) {
            // A fresh exception each time, so every caller gets its own stack trace.
            throw FAILURE.rethrown();
        }
    }

    static boolean isLoaded() {
        return FAILURE == null;
    }

    static String source() {
        return LOADED != null ? LOADED.source : "not loaded: " + FAILURE.getMessage();
    }
}
