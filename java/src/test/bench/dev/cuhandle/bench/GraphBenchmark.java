package dev.cuhandle.bench;

import dev.cuhandle.Blas;
import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.Graph;
import dev.cuhandle.Handle;
import java.util.Arrays;
import java.util.Random;

/**
 * CUDA graphs of handle calls (issue 12 item 3; goal on the H200: a graph of 100 small kernels
 * replays at <= 1.0 µs per kernel, set against stream launches of the same kernels). Both
 * are timed here, in one run: 100 {@code Blas.saxpy} calls of n=1 launched one by one on the
 * handle's stream, and the same 100 calls captured once and replayed with one {@code cuGraphLaunch}.
 * Each figure is the median over 9 runs of wall time to completion (the stream is synchronised at
 * the end of each run) divided by the number of kernels. Prints CSV lines
 * {@code cuhandle,<what>,<kernels per run>,0,<median µs per kernel>,0} and whether the graph's
 * results equal the direct calls' bit for bit and a CPU reference.
 */
public final class GraphBenchmark {
    private static final int KERNELS = 100;
    private static final int ROUNDS = 50; // graphs (or batches of 100 direct calls) per timed run
    private static final int RUNS = 9;

    private GraphBenchmark() {}

    interface Round {
        void run();
    }

    /** Median over {@link #RUNS} runs (after 2 warm-ups) of µs per kernel for ROUNDS rounds of KERNELS kernels. */
    private static double usPerKernel(Handle h, Round round) {
        double[] us = new double[RUNS];
        for (int run = -2; run < RUNS; run++) {
            h.synchronize();
            long t0 = System.nanoTime();
            for (int i = 0; i < ROUNDS; i++) {
                round.run();
            }
            h.synchronize();
            if (run >= 0) {
                us[run] = (System.nanoTime() - t0) / 1e3 / ((double) ROUNDS * KERNELS);
            }
        }
        Arrays.sort(us);
        return us[RUNS / 2];
    }

    /**
     * Runs the benchmark on device 0.
     *
     * @param args ignored
     */
    public static void main(String[] args) {
        long seed = args.length > 0 ? Long.parseLong(args[0]) : System.nanoTime();
        Random random = new Random(seed);
        float x0 = random.nextInt(201) - 100;
        float y0 = random.nextInt(201) - 100;
        float alpha = 0.5f * (random.nextInt(9) - 4); // a multiple of 0.5: every sum is exact in float
        try (Handle h = Handle.create(0); DeviceBuffer x = h.upload(new float[] {x0}); DeviceBuffer yDirect = h.upload(new float[] {y0});
                DeviceBuffer yGraph = h.upload(new float[] {y0})) {
            Round direct = () -> {
                for (int k = 0; k < KERNELS; k++) {
                    Blas.saxpy(h, 1, alpha, x, 1, yDirect, 1);
                }
            };
            try (DeviceBuffer scratch = h.upload(new float[] {0f})) {
                Blas.saxpy(h, 1, alpha, x, 1, scratch, 1); // loads the kernel in this context before the capture
                h.synchronize();
            }
            try (Graph g = h.capture(() -> {
                for (int k = 0; k < KERNELS; k++) {
                    Blas.saxpy(h, 1, alpha, x, 1, yGraph, 1);
                }
            })) {
                // Correctness first, on fresh data: one round each from y0.
                direct.run();
                g.launch(h);
                float[] d = new float[1];
                float[] gr = new float[1];
                yDirect.download(d);
                yGraph.download(gr);
                float reference = y0;
                for (int k = 0; k < KERNELS; k++) {
                    reference = alpha * x0 + reference;
                }
                boolean identical = Float.floatToIntBits(d[0]) == Float.floatToIntBits(gr[0]);
                boolean matchesCpu = gr[0] == reference;
                double stream = usPerKernel(h, direct);
                double graph = usPerKernel(h, () -> g.launch(h));
                System.out.printf("cuhandle,graph_saxpy_n1_stream_launch_us_per_kernel,%d,0,%.3f,0%n", KERNELS, stream);
                System.out.printf("cuhandle,graph_saxpy_n1_graph_replay_us_per_kernel,%d,0,%.3f,0%n", KERNELS, graph);
                System.out.printf("# graph of %d saxpy n=1 kernels (%d nodes): replay %.3f us/kernel vs stream launch %.3f us/kernel (%.1fx);"
                        + " goal <= 1.0 us/kernel: %s; graph result identical to direct calls: %s; equals CPU reference %s: %s (seed %d)%n",
                        KERNELS, g.nodeCount(), graph, stream, stream / graph, graph <= 1.0 ? "MET" : "NOT MET", identical, reference, matchesCpu,
                        seed);
                if (!identical || !matchesCpu) {
                    System.out.println("# MISMATCH: direct " + d[0] + ", graph " + gr[0] + ", CPU " + reference);
                    System.exit(1);
                }
            }
        }
    }
}
