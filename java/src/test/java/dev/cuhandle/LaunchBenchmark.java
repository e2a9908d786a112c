package dev.cuhandle;

import java.util.Arrays;

/**
 * Launch overhead of cuhandle, measured the way ../shared/anchors/anchors.cu measures
 * {@code cuLaunchKernel}: the empty kernel with grid 1 and block 32 on one stream, 1,000 warm-up
 * launches and a synchronize, then runs of 200,000 asynchronous launches followed by one
 * synchronize, reported as µs per launch (the median of the runs). Uses a reusable
 * {@link KernelLaunch}, the allocation-free hot path (rule K1).
 *
 * <p>Prints the CSV line {@code java,launch_empty,1,0,<median us>,0} and a line for people.
 * Usage: {@code LaunchBenchmark [runs, default 5] [launches per run, default 200000]}.
 */
public final class LaunchBenchmark {
    private LaunchBenchmark() {}

    public static void main(String[] args) {
        int runs = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        int launches = args.length > 1 ? Integer.parseInt(args[1]) : 200_000;
        try (Library lib = TestKernels.load(); Handle h = Handle.create(0)) {
            Kernel empty = KernelGpuTestBase.lookUp(lib, "cuh_test_empty");
            KernelLaunch launch = empty.newLaunch().grid(1).block(32);
            // Warm-up: as in anchors.cu, plus enough launches for the JIT to compile the path.
            for (int i = 0; i < 1000; i++) {
                launch.launch(h);
            }
            h.synchronize();
            for (int i = 0; i < launches; i++) {
                launch.launch(h);
            }
            h.synchronize();

            double[] us = new double[runs];
            for (int run = 0; run < runs; run++) {
                long t0 = System.nanoTime();
                for (int i = 0; i < launches; i++) {
                    launch.launch(h);
                }
                h.synchronize();
                us[run] = (System.nanoTime() - t0) / 1e3 / launches;
            }
            double[] sorted = us.clone();
            Arrays.sort(sorted);
            double median = sorted[runs / 2];
            System.out.printf("java,launch_empty,1,0,%.3f,0%n", median);
            StringBuilder all = new StringBuilder();
            for (double u : us) {
                all.append(all.length() == 0 ? "" : ", ").append(String.format("%.3f", u));
            }
            System.out.printf("# cuhandle launch of an empty kernel (grid 1, block 32) on %s: median %.3f us per launch over %d runs of %d"
                    + " async launches + 1 synchronize (runs: %s us); compare driver_launch_us of anchors.cu%n",
                    h.device().name(), median, runs, launches, all);
        }
    }
}
