package dev.cuhandle;

import java.lang.management.ManagementFactory;

/**
 * Cold start of cuhandle in a fresh JVM (run it once per JVM; tests/bench/run-all.sh alternates it with
 * tests/bench/cold_start.c, C's {@code cuInit} + first primary-context retain). Prints CSV rows
 * {@code cuhandle,cold,<step>,<run>,<ms>,ms} (tests/bench/report.py's input). Two modes:
 * <ul>
 *   <li>{@code whole}: the first {@code Handle.create(0)} as one call (what a user sees), row
 *       {@code first_handle_create}; then the loader's own steps inside it ({@code extract},
 *       {@code system_load}, {@code configure});</li>
 *   <li>{@code steps}: the same work one step at a time, each a row: {@code extract}, {@code system_load},
 *       {@code configure} (loading libcuhandle; System.Logger is set up on a background thread since the loader stopped waiting for it), {@code driver_load} (loading libcuda, no cuInit),
 *       {@code cuinit} ({@code Cuda.deviceCount()}), {@code retain} (the first {@code Handle.create(0)}: the
 *       Handle class, the primary context's retain and the handle; also as its parts {@code handle_class},
 *       {@code retain_driver}, the driver's retain alone, and {@code handle_create}, the create that follows), {@code blas_first_call} (the first {@code Blas.sscal} and synchronize:
 *       loading the BLAS kernel image, first launch), {@code blas_second_call}.</li>
 * </ul>
 * Both modes also print {@code jvm_start_to_main} (from the JVM's start time, millisecond resolution).
 * Usage: {@code ColdStartBenchmark whole|steps [run number, default 1]}.
 */
public final class ColdStartBenchmark {
    private ColdStartBenchmark() {}

    private static int run;

    private static void row(String step, double ms) {
        System.out.printf("cuhandle,cold,%s,%d,%.3f,ms%n", step, run, ms);
    }

    private static double msSince(long t0) {
        return (System.nanoTime() - t0) / 1e6;
    }

    /** Measures one cold start; exits with status 2 and a {@code #} line when no GPU can be used. */
    public static void main(String[] args) {
        long mainStart = System.nanoTime();
        long mainWallMs = System.currentTimeMillis();
        String mode = args.length > 0 ? args[0] : "whole";
        run = args.length > 1 ? Integer.parseInt(args[1]) : 1;
        if (!mode.equals("whole") && !mode.equals("steps")) {
            throw new IllegalArgumentException("usage: ColdStartBenchmark whole|steps [run]; got mode " + mode);
        }
        try {
            if (mode.equals("whole")) {
                whole();
            } else {
                steps();
            }
        } catch (CudaException e) {
            System.out.println("# cold start not measured: " + e.getMessage());
            System.exit(2);
        }
        row("jvm_start_to_main", mainWallMs - ManagementFactory.getRuntimeMXBean().getStartTime());
        row("main_to_here", msSince(mainStart));
    }

    private static void loaderSteps() {
        long[] ns = Native.startupNanos();
        row("extract", ns[0] / 1e6);
        row("system_load", ns[1] / 1e6);
        row("configure", ns[2] / 1e6);
    }

    private static void whole() {
        long t0 = System.nanoTime();
        Handle h = Handle.create(0);
        row("first_handle_create", msSince(t0));
        h.close();
        loaderSteps();
    }

    private static void steps() {
        Native.ensureLoaded();
        loaderSteps();
        long t0 = System.nanoTime();
        int version = Cuda.driverVersion();
        row("driver_load", msSince(t0));
        t0 = System.nanoTime();
        int count = Cuda.deviceCount();
        row("cuinit", msSince(t0));
        if (count == 0 || version == 0) {
            throw new CudaException(CudaError.NO_DEVICE.code(), "cold start", "the driver (version " + version + ") reports no device");
        }
        // retain is the three parts below together: the Handle class (loading and verifying it and what its
        // verification loads), the driver's first cuDevicePrimaryCtxRetain alone (C's retain) and the first
        // Handle.create(0) with the primary context already active (cuhandle's own share).
        // Times are taken first and printed after the three, so that no printing is inside retain; the test
        // API's class is set up before (its first use is not the driver's retain).
        NativeTestApi.noop(0);
        long t = System.nanoTime();
        Class<?> handleClass = Handle.class;
        try {
            Class.forName(handleClass.getName(), true, handleClass.getClassLoader());
        } catch (ClassNotFoundException e) {
            throw new AssertionError(e);
        }
        long loaded = System.nanoTime();
        NativeTestApi.retainPrimary(0);
        long retained = System.nanoTime();
        try (Handle h = Handle.create(0)) {
            long created = System.nanoTime();
            row("handle_class", (loaded - t) / 1e6);
            row("retain_driver", (retained - loaded) / 1e6);
            row("handle_create", (created - retained) / 1e6);
            row("retain", (created - t) / 1e6);
            try (DeviceBuffer x = h.allocate(4096)) {
                t0 = System.nanoTime();
                Blas.sscal(h, 1024, 2f, x, 1);
                h.synchronize();
                row("blas_first_call", msSince(t0));
                t0 = System.nanoTime();
                Blas.sscal(h, 1024, 2f, x, 1);
                h.synchronize();
                row("blas_second_call", msSince(t0));
            }
        } finally {
            NativeTestApi.releasePrimary(0);
        }
    }
}
