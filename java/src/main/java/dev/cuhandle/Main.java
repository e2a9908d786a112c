package dev.cuhandle;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Random;

/**
 * The command-line entry point only, not API: {@code java -jar cuhandle.jar} prints an environment report,
 * then (with a GPU) runs a self-test that loads the embedded fatbin, launches a kernel from it and checks the
 * result against the CPU. Exits 0 when healthy; otherwise 1, after a line {@code cuhandle: NOT HEALTHY: <reason>}
 * and the steps to take next ({@link Diagnosis}).
 */
final class Main {
    /** The reason line's prefix, which scripts and tests look for. */
    static final String NOT_HEALTHY = "cuhandle: NOT HEALTHY: ";

    /** Why the report failed: the one-line reason and what kind of failure it is. */
    static final class Unhealthy {
        final String reason;
        final Diagnosis diagnosis;

        Unhealthy(String reason, Diagnosis diagnosis) {
            this.reason = reason;
            this.diagnosis = diagnosis;
        }
    }

    private Main() {}

    /**
     * Prints the environment report and runs the self-test, then exits the JVM with status 0 when healthy and
     * 1 otherwise (the reason and the next steps are the last lines).
     *
     * @param args ignored
     */
    public static void main(String[] args) {
        Unhealthy problem;
        try {
            problem = run();
        } catch (RuntimeException e) {
            problem = new Unhealthy(e.toString(), Diagnosis.UNEXPECTED);
        }
        if (problem == null) {
            System.out.println("cuhandle: healthy");
            System.exit(0);
        }
        System.out.println(NOT_HEALTHY + problem.reason.replace('\n', ' '));
        System.out.println("What to do next:");
        for (String step : problem.diagnosis.nextSteps()) {
            System.out.println("  - " + step);
        }
        System.exit(1);
    }

    /** Which NVRTC Library.compile would use, or why there is none (it is optional: not a health problem). */
    private static String nvrtc() {
        try {
            String[] n = RuntimeCompiler.nvrtc();
            return "NVRTC " + n[0] + " at " + n[1] + " (Library.compile works)";
        } catch (CudaException e) {
            return "none, so Library.compile is unavailable (everything else works): " + e.getMessage();
        }
    }

    /** Prints the report and runs the self-test; returns null when healthy, else what is wrong. */
    static Unhealthy run() {
        Package p = Main.class.getPackage();
        System.out.println("cuhandle " + (p.getImplementationVersion() != null ? p.getImplementationVersion() : "(development build)") + " environment report");
        System.out.println("  java:           " + System.getProperty("java.runtime.version") + " (" + System.getProperty("java.vendor") + ") at " + System.getProperty("java.home"));
        System.out.println("  os:             " + System.getProperty("os.name") + " " + System.getProperty("os.version") + " " + System.getProperty("os.arch") + ", " + glibc());
        System.out.println("  native library: " + Cuda.nativeLibrarySource());
        if (!Native.isLoaded()) {
            return new Unhealthy("the cuhandle native library could not be loaded (see above)", Diagnosis.NATIVE_LIBRARY);
        }
        try {
            int version = Cuda.driverVersion();
            String missing = NativeApi.missingDriverFeatures();
            System.out.println("  driver:         " + Cuda.driverPath() + ", CUDA " + version / 1000 + "." + (version % 1000) / 10);
            System.out.println("  kernel checks:  " + (missing.contains("cuKernelGetParamInfo")
                    ? "ON (from the image): this driver predates CUDA 12.4 (no cuKernelGetParamInfo), so each kernel's parameters are read from its"
                            + " module image (PTX, cubin or fatbin) and launch arguments are checked against their count and sizes"
                    : "ON (from the driver): launch arguments are checked against each kernel's parameter count and sizes (cuKernelGetParamInfo)"));
            if (!missing.isEmpty()) {
                System.out.println("  driver lacks:   " + missing + " (optional entry points; the features that need them are off)");
            }
            System.out.println("  nvrtc:          " + nvrtc());
        } catch (CudaException e) {
            System.out.println("  driver:         not usable: " + e.getMessage());
            return new Unhealthy(e.getMessage(), Diagnosis.ofDriverFailure(e));
        }
        int count;
        try {
            count = Cuda.deviceCount();
        } catch (CudaException e) {
            System.out.println("  devices:        none: " + e.getMessage());
            return new Unhealthy(e.getMessage(), Diagnosis.ofDriverFailure(e));
        }
        System.out.println("  devices:        " + count);
        for (int d = 0; d < count; d++) {
            System.out.println("    " + Cuda.device(d) + (Cuda.device(d).supportsMemoryPools() ? ", memory pools" : ""));
            System.out.println("      SM partitions: " + smPartitions(Cuda.device(d)));
        }
        if (count == 0) {
            return new Unhealthy("the driver reports no CUDA device", Diagnosis.NO_DEVICE);
        }
        String wrong = selfTest();
        return wrong == null ? null : new Unhealthy(wrong, Diagnosis.SELF_TEST);
    }

    /** How device memory is allocated and freed in the self-test's context (rule M1), chosen once per context. */
    static String memoryPath(MemoryStats stats) {
        if (!stats.streamOrdered()) {
            return "cuMemAlloc, each free waits for the whole context (no memory pools: device, driver or -D"
                    + MemoryConfiguration.POOL_ENABLED_PROPERTY + "=false)";
        }
        long threshold = MemoryConfiguration.releaseThreshold(System.getProperty(MemoryConfiguration.RELEASE_THRESHOLD_PROPERTY));
        return "stream-ordered pool (cuMemAllocFromPoolAsync, cuMemFreeAsync), release threshold "
                + (threshold < 0 ? "unlimited" : threshold + " bytes");
    }

    /** saxpy from the embedded fatbin on device 0, checked against the CPU, with timings. */
    static String selfTest() {
        System.out.println("self-test on device 0:");
        int n = 1 << 20;
        float alpha = 2.5f;
        Random random = new Random();
        float[] x = new float[n];
        float[] y = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = random.nextFloat() * 2 - 1;
            y[i] = random.nextFloat() * 2 - 1;
        }
        long t0 = System.nanoTime();
        try (Handle h = Handle.create(0)) {
            long t1 = System.nanoTime();
            byte[] fatbin = NativeApi.builtinFatbin();
            try (Library lib = Library.load(fatbin);
                 DeviceBuffer dx = h.upload(x);
                 DeviceBuffer dy = h.upload(y)) {
                long t2 = System.nanoTime();
                System.out.println("  device memory: " + memoryPath(h.memoryStats()));
                Kernel saxpy = lib.kernel("cuh_saxpy");
                KernelLaunch launch = saxpy.newLaunch().grid(Math.max(1, h.device().multiprocessorCount() * 4)).block(256)
                        .arg(0, (long) n).arg(1, alpha).arg(2, dx).arg(3, 1L).arg(4, dy).arg(5, 1L);
                long t3 = System.nanoTime();
                launch.launch(h);
                h.synchronize();
                long t4 = System.nanoTime();
                float[] result = new float[n];
                dy.download(result);
                int bad = 0;
                for (int i = 0; i < n; i++) {
                    float expected = alpha * x[i] + y[i];
                    if (Math.abs(result[i] - expected) > 1e-6f * Math.max(1f, Math.abs(expected))) {
                        bad++;
                    }
                }
                int reps = 1000;
                long t5 = System.nanoTime();
                for (int i = 0; i < reps; i++) {
                    launch.launch(h);
                }
                h.synchronize();
                long t6 = System.nanoTime();
                System.out.printf("  primary context retain + handle: %.2f ms%n", (t1 - t0) / 1e6);
                System.out.printf("  fatbin load (cuLibraryLoadData, %d KiB) + uploads: %.2f ms%n", fatbin.length / 1024, (t2 - t1) / 1e6);
                System.out.printf("  first launch + synchronize (no JIT: SASS for sm_%d%d is in the fatbin up to sm_90): %.3f ms%n",
                        h.device().computeCapabilityMajor(), h.device().computeCapabilityMinor(), (t4 - t3) / 1e6);
                System.out.printf("  saxpy n=2^20 steady state: %.2f us per launch over %d launches%n", (t6 - t5) / 1e3 / reps, reps);
                System.out.println("  result check against the CPU: " + (bad == 0 ? "all " + n + " elements match" : bad + " of " + n + " elements WRONG"));
                return bad == 0 ? null : "self-test saxpy produced " + bad + " wrong elements";
            }
        }
    }

    /** Whether the device can be split into SM partitions, and into what (Device.splitSms), or why not. */
    static String smPartitions(Device device) {
        try {
            String why = device.smPartitionSupport();
            if (!why.isEmpty()) {
                return "not available: " + why;
            }
            try (SmPartitions one = device.splitSms(1)) {
                return "available, in steps of " + one.minimumSms() + " SMs (at most " + one.deviceSms() / one.minimumSms() + " partitions of "
                        + one.deviceSms() + " SMs; Device.splitSms)";
            }
        } catch (RuntimeException e) {
            return "not available: " + e.getMessage();
        }
    }

    private static String glibc() {
        try {
            Process p = new ProcessBuilder("ldd", "--version").redirectErrorStream(true).start();
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                String first = r.readLine();
                p.destroy();
                return first == null ? "glibc unknown" : "libc: " + first.replaceAll("^ldd\\s*", "");
            }
        } catch (Exception e) {
            return "glibc unknown (" + e.getMessage() + ")";
        }
    }
}
