package dev.cuhandle;

import java.util.concurrent.ConcurrentHashMap;

/**
 * Process-wide facts about the driver and devices, and the calling thread's selected device.
 *
 * <pre>{@code
 * if (!Cuda.isAvailable()) {
 *     System.out.println("running on the CPU: " + Cuda.unavailableReason());   // one line: what is missing
 *     return;
 * }
 * System.out.println("driver " + Cuda.driverVersion() + ", " + Cuda.deviceCount() + " device(s), the first a " + Cuda.device(0).name());
 * }</pre>
 */
public final class Cuda {
    /**
     * The device {@link #setDevice} selected on this thread, 0 by default. A subclass, not
     * {@code withInitial(() -> 0)}: the first lambda of a JVM costs milliseconds of
     * {@code java.lang.invoke} set-up, and this class is initialised by the first {@code Handle.create} (issue 35).
     */
    private static final ThreadLocal<Integer> SELECTED = new ThreadLocal<Integer>() {
        @Override
        protected Integer initialValue() {
            return 0;
        }
    };
    private static final ConcurrentHashMap<Integer, Device> DEVICES = new ConcurrentHashMap<>();
    /** The stand-in's identity query: control command 61 of tests/standin-driver/README.md's channel. */
    private static final int STANDIN_IDENTITY_ATTRIBUTE = 0x40000000 | (61 << 20);
    /** What the stand-in answers to it: "STAN" in ASCII. */
    private static final int STANDIN_IDENTITY = 0x5354414E;
    private static volatile Boolean standIn;

    private Cuda() {}

    /** Initialises this class (its empty device cache) ahead of a process's first handle; see {@code NativeObject.initialise()}. */
    static void initialise() {
        // The call itself initialises the class; nothing else to do.
    }

    /**
     * Whether CUDA can be used: the native library and the driver load, and at least one device exists. Never
     * throws.
     *
     * @return {@code true} when CUDA is usable; {@link #unavailableReason()} says why not otherwise
     */
    public static boolean isAvailable() {
        return unavailableReason() == null;
    }

    /**
     * Why {@link #isAvailable()} is false, in one line. Never throws.
     *
     * @return the reason, or {@code null} when CUDA is available
     */
    public static String unavailableReason() {
        try {
            return deviceCount() > 0 ? null : "the driver reports no CUDA device";
        } catch (RuntimeException | LinkageError e) {
            // LinkageError: a broken installation must still get an answer, not an Error (H12).
            return e.getMessage() != null ? e.getMessage() : e.toString();
        }
    }

    /**
     * The CUDA version of the installed driver ({@code cuDriverGetVersion}). Needs no device.
     *
     * @return the version as {@code 1000 * major + 10 * minor}, e.g. 13000 for 13.0
     * @throws CudaException if the native library or the driver cannot be loaded
     */
    public static int driverVersion() {
        Native.ensureLoaded();
        return NativeApi.driverVersion();
    }

    /**
     * The libcuda file that was loaded: chosen by {@code -Dcuhandle.driver.path} or the environment variable
     * {@code CUHANDLE_DRIVER_PATH} (an absolute path, trusted configuration: see docs/security.md), else found in
     * the usual driver folders, the absolute entries of {@code LD_LIBRARY_PATH} or the dynamic linker's cache
     * (never the current folder; a library without the driver's entry points is skipped).
     *
     * @return the path or library name that was loaded
     * @throws CudaException if the native library or the driver cannot be loaded
     */
    public static String driverPath() {
        Native.ensureLoaded();
        return NativeApi.driverPath();
    }

    /**
     * Where libcuhandle came from, or why it could not be loaded. Never throws.
     *
     * @return the bundled resource, the {@code cuhandle.library.path} file, or "not loaded: " and the reason
     */
    public static String nativeLibrarySource() {
        return Native.source();
    }

    /**
     * Number of CUDA devices ({@code cuDeviceGetCount}); initialises the driver on first use.
     *
     * @return the number of devices, which may be 0
     * @throws CudaException if the native library or the driver cannot be loaded or initialised (e.g.
     *     {@link CudaError#NO_DEVICE})
     */
    public static int deviceCount() {
        DriverStart.ensureLoaded();
        return NativeApi.deviceCount();
    }

    /**
     * The properties of one device, read from the driver once per process and cached.
     *
     * @param ordinal the device number, from 0 to {@link #deviceCount()} - 1
     * @return the device's properties
     * @throws CudaException if the device does not exist ({@link CudaError#INVALID_DEVICE}), or the native
     *     library or the driver cannot be loaded
     */
    public static Device device(int ordinal) {
        DriverStart.ensureLoaded();
        // get and putIfAbsent, not computeIfAbsent with a lambda: this runs in the first Handle.create (see SELECTED).
        Device known = DEVICES.get(ordinal);
        if (known != null) {
            return known;
        }
        Device read = new Device(ordinal, NativeApi.deviceName(ordinal), NativeApi.deviceInfo(ordinal));
        Device raced = DEVICES.putIfAbsent(ordinal, read);
        return raced != null ? raced : read;
    }

    /**
     * Selects the device that {@link Handle#create()} uses on this thread when no context is current (rule
     * H2), like {@code cudaSetDevice}, but without creating or making current any context.
     *
     * @param ordinal the device number, from 0 to {@link #deviceCount()} - 1
     * @throws CudaException with {@link CudaError#INVALID_DEVICE} for a device that does not exist, or if the
     *     driver cannot be loaded or initialised
     */
    public static void setDevice(int ordinal) {
        int count = deviceCount();
        if (ordinal < 0 || ordinal >= count) {
            throw new CudaException(CudaError.INVALID_DEVICE.code(), "Cuda.setDevice(" + ordinal + ")",
                    "CUDA_ERROR_INVALID_DEVICE (101): device " + ordinal + " does not exist; this machine has " + count + " CUDA device(s), numbered from 0");
        }
        SELECTED.set(ordinal);
    }

    /**
     * The device selected on this thread by {@link #setDevice(int)}.
     *
     * @return the device number; 0 when this thread never selected one
     */
    public static int getDevice() {
        return SELECTED.get();
    }

    /**
     * The raw {@code CUcontext} current on this thread ({@code cuCtxGetCurrent}), for interop and checks.
     *
     * @return the context as a number, 0 if none is current
     * @throws CudaException if the native library or the driver cannot be loaded or initialised
     */
    public static long currentContext() {
        Native.ensureLoaded();
        return NativeApi.currentContext();
    }

    /**
     * Whether the loaded driver is the CPU stand-in for libcuda that cuhandle's repository builds for testing
     * without a GPU (tests/standin-driver): it keeps the driver's bookkeeping (contexts, streams, memory,
     * copies) but <b>kernels do not execute</b>, so results computed by kernels are meaningless there. Never
     * throws; asked of the driver once per process.
     *
     * <p>The driver answers it, not its file name: the stand-in answers a device attribute outside the range
     * of {@code CUdevice_attribute} with a fixed identity value, and a real driver refuses such an attribute
     * with {@code CUDA_ERROR_INVALID_VALUE}. A renamed or relocated stand-in is thus still recognised, and a
     * real libcuda in a folder whose name happens to contain "standin" is not mistaken for it.
     * {@code @RequiresGpu(kernels = true)} of cuhandle-junit uses this to skip kernel-result tests there.
     *
     * <pre>{@code
     * if (Cuda.isAvailable() && !Cuda.isStandIn()) {
     *     assertArrayEquals(expected, resultOfAKernel);   // kernels really ran
     * }
     * }</pre>
     *
     * @return {@code true} when CUDA is available and its driver is the stand-in; {@code false} for a real
     *     driver, or when no driver or device is usable
     */
    public static boolean isStandIn() {
        Boolean known = standIn;
        if (known == null) {
            known = askStandIn();
            standIn = known;
        }
        return known;
    }

    private static boolean askStandIn() {
        try {
            return deviceCount() > 0 && NativeApi.deviceAttribute(0, STANDIN_IDENTITY_ATTRIBUTE) == STANDIN_IDENTITY;
        } catch (RuntimeException | LinkageError e) {
            // A real driver refuses the attribute (INVALID_VALUE); no driver at all is not the stand-in either.
            return false;
        }
    }
}
