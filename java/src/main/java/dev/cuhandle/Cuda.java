package dev.cuhandle;

import java.util.concurrent.ConcurrentHashMap;

/** Process-wide facts about the driver and devices, and the calling thread's selected device. */
public final class Cuda {
    private static final ThreadLocal<Integer> SELECTED = ThreadLocal.withInitial(() -> 0);
    private static final ConcurrentHashMap<Integer, Device> DEVICES = new ConcurrentHashMap<>();

    private Cuda() {}

    /** True when the native library and driver load and at least one device exists. Never throws. */
    public static boolean isAvailable() {
        return unavailableReason() == null;
    }

    /** Why {@link #isAvailable()} is false (one line), or null when it is true. Never throws. */
    public static String unavailableReason() {
        try {
            return deviceCount() > 0 ? null : "the driver reports no CUDA device";
        } catch (RuntimeException | LinkageError e) {
            // LinkageError: a broken installation must still get an answer, not an Error (H12).
            return e.getMessage() != null ? e.getMessage() : e.toString();
        }
    }

    /** The driver's CUDA version, e.g. 13000 for 13.0. Needs no device. */
    public static int driverVersion() {
        Native.ensureLoaded();
        return NativeApi.driverVersion();
    }

    /** The libcuda file that was loaded. */
    public static String driverPath() {
        Native.ensureLoaded();
        return NativeApi.driverPath();
    }

    /** Where libcuhandle came from (or why it could not be loaded). */
    public static String nativeLibrarySource() {
        return Native.source();
    }

    /** Number of CUDA devices; throws {@link CudaException} (e.g. {@link CudaError#NO_DEVICE}) if the driver cannot be initialised. */
    public static int deviceCount() {
        Native.ensureLoaded();
        return NativeApi.deviceCount();
    }

    public static Device device(int ordinal) {
        Native.ensureLoaded();
        return DEVICES.computeIfAbsent(ordinal, o -> new Device(o, NativeApi.deviceName(o), NativeApi.deviceInfo(o)));
    }

    /**
     * Selects the device that {@link Handle#create()} uses on this thread when no context is
     * current (rule H2). Fails with {@link CudaError#INVALID_DEVICE} for a device that does not exist.
     */
    public static void setDevice(int ordinal) {
        int count = deviceCount();
        if (ordinal < 0 || ordinal >= count) {
            throw new CudaException(CudaError.INVALID_DEVICE.code(), "Cuda.setDevice(" + ordinal + ")",
                    "CUDA_ERROR_INVALID_DEVICE (101): device " + ordinal + " does not exist; this machine has " + count + " CUDA device(s), numbered from 0");
        }
        SELECTED.set(ordinal);
    }

    /** The device selected on this thread (default 0). */
    public static int getDevice() {
        return SELECTED.get();
    }

    /** The raw {@code CUcontext} current on this thread, 0 if none (for interop and checks). */
    public static long currentContext() {
        Native.ensureLoaded();
        return NativeApi.currentContext();
    }
}
