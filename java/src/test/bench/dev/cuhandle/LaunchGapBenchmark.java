package dev.cuhandle;

import dev.cuhandle.bench.BenchSupport;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import jcuda.driver.CUcontext;
import jcuda.driver.JCudaDriver;

/**
 * Where cuhandle's 0-argument launch loses to JCuda's (LaunchBenchmark, issue 13): a cuhandle launch
 * does what a JCuda launch does plus what every handle call does, the context check of rule H8
 * ({@code cuCtxGetId}) and the lifetime fences of rules L2/L5 (the handle and the library are entered and
 * left, so a concurrent close waits). This times, on one thread with the primary context current, in 11
 * rounds in which the loops take turns (median printed): JCuda's launch; JCuda's launch followed by one
 * {@link Handle#validate()} (a handle call that does only that check and those fences); JCuda's launch
 * followed by one more trivial JCuda call ({@code cuCtxGetCurrent}); and cuhandle's launch.
 *
 * <p>Prints CSV rows {@code <variant>,launch_gap,args0,1,<us per launch>,us} (tests/bench/report.py's
 * input), variants {@code jcuda}, {@code jcuda_plus_validate}, {@code jcuda_plus_jcuda_call} and
 * {@code cuhandle}; without JCuda's natives, one {@code #} line saying why.
 */
public final class LaunchGapBenchmark {
    private static final int LAUNCHES = 20_000;
    private static final int ROUNDS = 11;

    private LaunchGapBenchmark() {}

    /** Runs the measurement; prints CSV rows on stdout. */
    public static void main(String[] args) {
        BenchSupport.requireGpu("LaunchGapBenchmark");
        String missing = LaunchBenchmark.JCudaLauncher.unavailableReason();
        if (missing != null) {
            System.out.println("# jcuda unavailable, no launch gap measured: " + missing);
            return;
        }
        try (Library lib = Library.load(LaunchBenchmark.PTX.getBytes(StandardCharsets.US_ASCII));
                LaunchBenchmark.JCudaLauncher jcuda = new LaunchBenchmark.JCudaLauncher(0); // makes the primary context current
                LaunchBenchmark.CuhandleLauncher cuhandle = new LaunchBenchmark.CuhandleLauncher(lib, 0, true);
                Handle validated = Handle.create(0)) {
            CUcontext current = new CUcontext();
            String[] names = {"jcuda", "jcuda_plus_validate", "jcuda_plus_jcuda_call", "cuhandle"};
            Runnable[] loops = {
                jcuda::launchOnce,
                () -> {
                    jcuda.launchOnce();
                    validated.validate();
                },
                () -> {
                    jcuda.launchOnce();
                    JCudaDriver.cuCtxGetCurrent(current);
                },
                cuhandle::launchOnce,
            };
            double[][] us = new double[names.length][ROUNDS];
            for (int round = -3; round < ROUNDS; round++) { // three warm-up rounds
                for (int turn = 0; turn < names.length; turn++) {
                    int variant = (turn + Math.max(round, 0)) % names.length; // who goes first rotates
                    Runnable loop = loops[variant];
                    long t0 = System.nanoTime();
                    for (int i = 0; i < LAUNCHES; i++) {
                        loop.run();
                    }
                    jcuda.launchAndSync(0);
                    cuhandle.launchAndSync(0);
                    if (round >= 0) {
                        us[variant][round] = (System.nanoTime() - t0) / 1e3 / LAUNCHES;
                    }
                }
            }
            for (int variant = 0; variant < names.length; variant++) {
                double[] sorted = us[variant].clone();
                Arrays.sort(sorted);
                System.out.printf("%s,launch_gap,args0,1,%.4f,us%n", names[variant], sorted[ROUNDS / 2]);
            }
        }
    }
}
