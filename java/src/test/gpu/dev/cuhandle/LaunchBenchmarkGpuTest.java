package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * LaunchBenchmark's kernels and cuhandle launchers, so that the one device run of {@code run-all bench}
 * does not fail on a harness bug: each kernel launches with the arguments its launcher sets, and where
 * the driver reports parameters, the kernel has exactly that many.
 */
@GpuTest
class LaunchBenchmarkGpuTest {
    @StandInCapable
    @Test
    void everyBenchmarkKernelLaunchesWithTheArgumentsItsLauncherSets() {
        // As in LaunchBenchmark: a handle keeps the primary context active while launchers come and go.
        try (Handle keepAlive = Handle.create(0); Library lib = Library.load(LaunchBenchmark.PTX.getBytes(StandardCharsets.US_ASCII))) {
            for (int argCount : LaunchBenchmark.ARG_COUNTS) {
                for (boolean makeCurrent : new boolean[] {false, true}) {
                    try (LaunchBenchmark.Launcher l = new LaunchBenchmark.CuhandleLauncher(lib, argCount, makeCurrent)) {
                        l.launchAndSync(3);
                        long launched = l.launchUntil(System.nanoTime());
                        assertTrue(launched >= 256, "launchUntil launches at least one round of 256, got " + launched);
                    } finally {
                        NativeTestApi.setCurrent(0); // LaunchBenchmark's threads end instead
                    }
                }
                int reported = lib.kernel("bench_args" + argCount).parameterCount();
                assertTrue(reported == -1 || reported == argCount, "bench_args" + argCount + " reports " + reported + " parameters");
            }
        }
    }
}
