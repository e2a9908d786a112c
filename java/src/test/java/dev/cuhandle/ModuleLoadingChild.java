package dev.cuhandle;

import java.util.Locale;
import java.util.Random;

/**
 * Child JVM of {@link ModuleLoadingGpuTest}: when does a library loaded with {@code cuLibraryLoadData}
 * reach a context, under the {@code CUDA_MODULE_LOADING} the parent set? The probe module
 * (kernels/test/loading_probe.cu) holds a 256 MiB {@code __device__} array, which the driver allocates in
 * every context the module is loaded into, so its arrival shows as a drop of the device's free memory
 * ({@code cuMemGetInfo}). Measured, in this order:
 * <ol>
 * <li>{@code context_created_before_load_mib}: creating a user context before the probe is loaded (what a
 * context costs by itself);</li>
 * <li>{@code load_mib}: loading the probe library while the primary context and one user context exist,
 * with nothing current;</li>
 * <li>{@code context_created_after_load_mib}: creating a user context after the load;</li>
 * <li>{@code first_launch_<context>_mib}: the first launch of the probe's kernel in each of the three
 * contexts, and {@code second_launch_primary_mib} for a second one.</li>
 * </ol>
 * Every context first runs a kernel of another library and has its buffers, so that its own first-use
 * costs are paid before anything is measured. Prints {@code [module-loading] key=value} lines and
 * {@link #DONE} at the end; uses no JUnit classes. The parent judges the figures.
 */
public final class ModuleLoadingChild {
    static final String PREFIX = "[module-loading] ";
    static final String DONE = PREFIX + "done";
    static final String PROBE = "/kernels/loading_probe.fatbin";
    /** The size of the probe's {@code __device__} array (CUH_PROBE_BYTES of loading_probe.cu). */
    static final long PROBE_BYTES = 256L << 20;

    private ModuleLoadingChild() {}

    public static void main(String[] args) {
        String env = System.getenv("CUDA_MODULE_LOADING");
        print("env", env == null ? "unset" : env);
        print("driver", String.valueOf(Cuda.driverVersion()));
        int mode = DriverProbeTestApi.moduleLoadingMode();
        print("mode", mode == DriverProbeTestApi.EAGER_LOADING ? "EAGER" : mode == DriverProbeTestApi.LAZY_LOADING ? "LAZY" : "unknown-" + mode);
        print("probe_mib", mib(PROBE_BYTES));

        Library warmUp = TestKernels.load();
        Kernel empty = warmUp.kernel("cuh_test_empty");
        Handle primary = Handle.create(0);
        long userA = newUserContext();
        Handle onA = Handle.wrap(userA);
        DeviceBuffer outPrimary = primary.allocate(4);
        DeviceBuffer outA = onA.allocate(4);
        warm(primary, empty);
        warm(onA, empty);

        long before = free(primary);
        long calibration = newUserContext();
        print("context_created_before_load_mib", mib(before - free(primary)));
        NativeTestApi.destroyContext(calibration);

        before = free(primary);
        Library probe = Library.loadResource(ModuleLoadingChild.class, PROBE);
        Kernel touch = probe.kernel("cuh_loading_probe_touch");
        print("load_mib", mib(before - free(primary)));

        before = free(primary);
        long userB = newUserContext();
        print("context_created_after_load_mib", mib(before - free(primary)));
        Handle onB = Handle.wrap(userB);
        DeviceBuffer outB = onB.allocate(4);
        warm(onB, empty);

        Random random = new Random();
        firstLaunch("first_launch_primary_mib", primary, touch, outPrimary, random);
        firstLaunch("first_launch_user_existing_at_load_mib", onA, touch, outA, random);
        firstLaunch("first_launch_user_created_after_load_mib", onB, touch, outB, random);
        firstLaunch("second_launch_primary_mib", primary, touch, outPrimary, random);

        outB.close();
        outA.close();
        outPrimary.close();
        onB.close();
        onA.close();
        primary.close();
        probe.close();
        warmUp.close();
        NativeTestApi.destroyContext(userB);
        NativeTestApi.destroyContext(userA);
        System.out.println(DONE);
    }

    /** Launches the probe kernel once through {@code h}, checks its result and prints the free-memory drop. */
    private static void firstLaunch(String key, Handle h, Kernel touch, DeviceBuffer out, Random random) {
        int value = random.nextInt(256);
        long before = free(h);
        h.launch(touch, Dim3.of(1), Dim3.of(1), 0, out, value);
        h.synchronize();
        long drop = before - free(h);
        int[] result = new int[1];
        out.download(result);
        if (result[0] != value + 1) {
            throw new AssertionError(key + ": the probe kernel wrote " + result[0] + ", expected " + (value + 1));
        }
        print(key, mib(drop));
    }

    private static void warm(Handle h, Kernel empty) {
        h.launch(empty, Dim3.of(1), Dim3.of(1), 0);
        h.synchronize();
    }

    /** A user context, with nothing left current on this thread. */
    private static long newUserContext() {
        long ctx = NativeTestApi.createContext(0);
        NativeTestApi.setCurrent(0);
        if (NativeTestApi.currentContext() != 0) {
            throw new AssertionError("cuCtxCreate left more than one context on this thread's stack");
        }
        return ctx;
    }

    private static long free(Handle h) {
        return h.freeMemory();
    }

    private static String mib(long bytes) {
        return String.format(Locale.ROOT, "%.1f", bytes / (double) (1L << 20));
    }

    private static void print(String key, String value) {
        System.out.println(PREFIX + key + "=" + value);
    }
}
