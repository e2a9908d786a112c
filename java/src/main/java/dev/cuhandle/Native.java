package dev.cuhandle;

/**
 * The native library's state. Class initialisation never throws (H12): a loading failure is kept
 * and rethrown as a {@link CudaException} by {@link #ensureLoaded()} on every use.
 */
final class Native {
    /** {@code -Dcuhandle.driver.path=/path/to/libcuda.so.1} chooses the driver library. */
    static final String DRIVER_PROPERTY = "cuhandle.driver.path";
    /** {@code -Dcuhandle.nvrtc.path=/path/to/libnvrtc.so} chooses NVRTC for run-time compilation. */
    static final String NVRTC_PROPERTY = "cuhandle.nvrtc.path";

    private static final NativeLoader.Loaded LOADED;
    private static final CudaException FAILURE;
    /** Time spent configuring the library (stores settings, loads no driver; the System.Logger is set up on another thread). */
    private static final long CONFIGURE_NANOS;

    static {
        NativeLoader.Loaded loaded = null;
        CudaException failure = null;
        long configureNanos = 0;
        try {
            loaded = NativeLoader.load();
            long t0 = System.nanoTime();
            String driverPath = System.getProperty(DRIVER_PROPERTY);
            configureFirst(loaded, driverPath);
            // As soon as the driver's path is set (a library that could not take it initialises no driver), so that the
            // rest of the configuration runs while the driver initialises: none of it concerns the driver (NVRTC's path,
            // the settings of memory pools made later, the log level). If the first call needs the driver, it
            // initialises while that call sets up its classes. The price: should a later step fail (they throw only on a
            // JVM error, such as running out of memory), the library is unusable and the driver was initialised anyway.
            DriverStart.startIfWanted();
            NativeApi.configureNvrtc(System.getProperty(NVRTC_PROPERTY));
            MemoryConfiguration.configure();
            LogLevelSetup.startFor(driverPath);
            configureNanos = System.nanoTime() - t0;
        } catch (CudaException e) {
            failure = e;
        } catch (IllegalCallerException e) {
            // Java 24+ under --illegal-native-access=deny refuses System.load to a module without native
            // access. The message names the flag and where it goes, and cuhandle-junit fails GPU tests
            // on it instead of skipping them (GpuExtension looks for "--enable-native-access").
            failure = new CudaException(CudaError.SHARED_OBJECT_INIT_FAILED.code(), "loading libcuhandle", "the JVM denied native access ("
                    + e.getMessage() + "): run java with --enable-native-access=ALL-UNNAMED (on the module path: =dev.cuhandle); for tests,"
                    + " put it in Maven Surefire's <argLine> or Gradle's test { jvmArgs }", e);
        } catch (Throwable e) {
            failure = new CudaException(CudaError.SHARED_OBJECT_INIT_FAILED.code(), "loading libcuhandle", e.toString(), e);
        }
        LOADED = loaded;
        FAILURE = failure;
        CONFIGURE_NANOS = configureNanos;
    }

    private Native() {}

    /**
     * Sets up {@code System.Logger "dev.cuhandle"} off the loading path, then narrows the native log
     * level to what the logger enables. Until then the native side keeps every record (level
     * {@link NativeLog#ALL_NATIVE_LEVELS}); the logger filters them when they are published, so none is
     * lost and none below the logger's level appears. The set-up (logging framework and its
     * configuration) costs a fresh JVM milliseconds (docs/measurements.md), which would otherwise delay the first
     * {@code Handle.create()}. A named class rather than a lambda: the first lambda costs a fresh JVM
     * milliseconds of bootstrap as well.
     */
    private static final class LogLevelSetup extends Thread {
        private final String driverPath;

        LogLevelSetup(String driverPath) {
            super("cuhandle-log-setup");
            this.driverPath = driverPath;
            setDaemon(true);
        }

        /** Starts the set-up; where no thread can be started (a restrictive environment), runs it here. */
        static void startFor(String driverPath) {
            try {
                new LogLevelSetup(driverPath).start();
            } catch (RuntimeException | OutOfMemoryError noThread) {
                narrowLevel(driverPath);
            }
        }

        @Override
        public void run() {
            narrowLevel(driverPath);
        }

        private static void narrowLevel(String driverPath) {
            try {
                // configure again with the same driver path: only the level changes.
                NativeApi.configure(driverPath, NativeLog.enabledNativeLevel());
            } catch (Throwable e) {
                // The native level stays at ALL_NATIVE_LEVELS: records still pass the logger's filter.
            }
        }
    }

    /**
     * The first native call. A libcuhandle registers all its native methods when it loads, and a
     * table that does not match these classes (a libcuhandle of another cuhandle version) fails the
     * load itself, naming the method; so a first call that cannot be linked means the library
     * registered nothing: it is no libcuhandle, or one from before the registration.
     */
    private static void configureFirst(NativeLoader.Loaded loaded, String driverPath) {
        try {
            NativeApi.configure(driverPath, NativeLog.ALL_NATIVE_LEVELS);
        } catch (UnsatisfiedLinkError e) {
            throw new CudaException(CudaError.SHARED_OBJECT_INIT_FAILED.code(), "loading libcuhandle",
                    "the native library " + loaded.source + " registered no cuhandle native methods (" + e.getMessage() + "): it is not a libcuhandle of this"
                            + " cuhandle version. Use the libcuhandle.so of the same cuhandle JAR (remove -D" + NativeLoader.PATH_PROPERTY
                            + " to use the bundled one)");
        }
    }

    static void ensureLoaded() {
        if (FAILURE != null) {
            // A fresh exception each time, so every caller gets its own stack trace.
            throw FAILURE.rethrown();
        }
    }

    static boolean isLoaded() {
        return FAILURE == null;
    }

    /**
     * The loading steps' durations in ns: extracting the library, {@code System.load}, configuring it
     * (for the cold-start benchmark; zeros where loading failed before the step).
     */
    static long[] startupNanos() {
        return LOADED == null ? new long[3] : new long[] {LOADED.extractNanos, LOADED.systemLoadNanos, CONFIGURE_NANOS};
    }

    static String source() {
        return LOADED != null ? LOADED.source : "not loaded: " + FAILURE.getMessage();
    }
}
