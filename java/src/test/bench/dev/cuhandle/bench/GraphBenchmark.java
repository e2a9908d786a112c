package dev.cuhandle.bench;

import dev.cuhandle.Blas;
import dev.cuhandle.CompileOptions;
import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.Dim3;
import dev.cuhandle.Graph;
import dev.cuhandle.GraphNode;
import dev.cuhandle.Handle;
import dev.cuhandle.Kernel;
import dev.cuhandle.Library;
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
 *
 * <p>Then graphs that change (issue 36; goals on the H200: a replay after changing one scalar and one buffer
 * of a 100-kernel graph at most 1.1x a plain replay, and at least 20x faster than closing the graph and
 * capturing it again): 100 launches of an axpy kernel (n = 1024, compiled with NVRTC), one of them named
 * ({@code Handle.capturedLaunch}); per round a plain replay, or {@code update(node).arg(scale).arg(buffer)} and a
 * replay, or a close, a new capture and a replay. CSV lines
 * {@code cuhandle,graph_update_<what>_us_per_replay,100,0,<median µs per round>,0}; the results after a fixed
 * sequence of updates are checked against a CPU reference.
 */
public final class GraphBenchmark {
    private static final int KERNELS = 100;
    private static final int ROUNDS = 50; // graphs (or batches of 100 direct calls) per timed run
    private static final int RUNS = 9;

    private static final int UPDATE_N = 1024;
    private static final String AXPY = "extern \"C\" __global__ void bench_axpy(float* y, const float* x, float a, int n) {\n"
            + "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            + "  if (i < n) y[i] += a * x[i];\n"
            + "}\n";

    private GraphBenchmark() {}

    interface Round {
        void run();
    }

    /** Median over {@link #RUNS} runs (after 2 warm-ups) of µs per kernel for ROUNDS rounds of KERNELS kernels. */
    private static double usPerKernel(Handle h, Round round) {
        return usPerRound(h, round) / KERNELS;
    }

    /** Median over {@link #RUNS} runs (after 2 warm-ups) of µs per round for ROUNDS rounds. */
    private static double usPerRound(Handle h, Round round) {
        double[] us = new double[RUNS];
        for (int run = -2; run < RUNS; run++) {
            h.synchronize();
            long t0 = System.nanoTime();
            for (int i = 0; i < ROUNDS; i++) {
                round.run();
            }
            h.synchronize();
            if (run >= 0) {
                us[run] = (System.nanoTime() - t0) / 1e3 / ROUNDS;
            }
        }
        Arrays.sort(us);
        return us[RUNS / 2];
    }

    /** A graph of {@link #KERNELS} axpy launches y += a * x, the first with scale {@code a} and input {@code x}; {@code node[0]} is that one's. */
    private static Graph captureAxpys(Handle h, Kernel axpy, DeviceBuffer y, DeviceBuffer x, float a, DeviceBuffer rest, GraphNode[] node) {
        Dim3 grid = Dim3.of((UPDATE_N + 255) / 256);
        Dim3 block = Dim3.of(256);
        return h.capture(() -> {
            h.launch(axpy, grid, block, 0, y, x, a, UPDATE_N);
            node[0] = h.capturedLaunch();
            for (int k = 1; k < KERNELS; k++) {
                h.launch(axpy, grid, block, 0, y, rest, 0.5f, UPDATE_N);
            }
        });
    }

    private static float[] integers(Random random, int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = random.nextInt(21) - 10;
        }
        return v;
    }

    /** The update benchmark: plain replay, replay after changing one scalar and one buffer, close and capture again. */
    private static boolean updates(Handle h, Random random, long seed) {
        float[] xa = integers(random, UPDATE_N);
        float[] xb = integers(random, UPDATE_N);
        float[] restValues = integers(random, UPDATE_N);
        float[] y0 = integers(random, UPDATE_N);
        try (Library lib = Library.compile(h, AXPY, CompileOptions.defaults()); DeviceBuffer x1 = h.upload(xa); DeviceBuffer x2 = h.upload(xb);
                DeviceBuffer rest = h.upload(restValues); DeviceBuffer y = h.upload(y0)) {
            Kernel axpy = lib.kernel("bench_axpy");
            GraphNode[] node = new GraphNode[1];
            Graph[] graph = {captureAxpys(h, axpy, y, x1, 1f, rest, node)};
            try {
                // Correctness: 4 replays with changed scale and input, against the CPU (small integers and halves: exact).
                float[] expected = y0.clone();
                for (int r = 0; r < 4; r++) {
                    float a = r - 1.5f;
                    DeviceBuffer x = r % 2 == 0 ? x2 : x1;
                    float[] xv = r % 2 == 0 ? xb : xa;
                    graph[0].update(node[0]).arg(2, a).arg(1, x);
                    graph[0].launch(h);
                    for (int i = 0; i < UPDATE_N; i++) {
                        expected[i] += a * xv[i];
                        for (int k = 1; k < KERNELS; k++) {
                            expected[i] += 0.5f * restValues[i];
                        }
                    }
                }
                float[] got = new float[UPDATE_N];
                y.download(got);
                boolean matches = Arrays.equals(expected, got);
                int[] round = {0};
                double plain = usPerRound(h, () -> graph[0].launch(h));
                double updated = usPerRound(h, () -> {
                    int r = round[0]++;
                    graph[0].update(node[0]).arg(2, (r & 7) - 3.5f).arg(1, (r & 1) == 0 ? x2 : x1);
                    graph[0].launch(h);
                });
                double recaptured = usPerRound(h, () -> {
                    int r = round[0]++;
                    graph[0].close();
                    graph[0] = captureAxpys(h, axpy, y, (r & 1) == 0 ? x2 : x1, (r & 7) - 3.5f, rest, node);
                    graph[0].launch(h);
                });
                // The host's share alone, no replay: what the change costs the calling thread. The replay above is the
                // GPU running 100 dependent kernels (about 1 us each), the same for both ways, so it bounds the
                // end-to-end ratio: (change + replay) against (close + capture + instantiate + replay).
                double changeOnly = usPerRound(h, () -> {
                    int r = round[0]++;
                    graph[0].update(node[0]).arg(2, (r & 7) - 3.5f).arg(1, (r & 1) == 0 ? x2 : x1);
                });
                double recaptureOnly = usPerRound(h, () -> {
                    int r = round[0]++;
                    graph[0].close();
                    graph[0] = captureAxpys(h, axpy, y, (r & 1) == 0 ? x2 : x1, (r & 7) - 3.5f, rest, node);
                });
                System.out.printf("cuhandle,graph_update_change_only_us,%d,0,%.3f,0%n", KERNELS, changeOnly);
                System.out.printf("cuhandle,graph_update_recapture_only_us,%d,0,%.3f,0%n", KERNELS, recaptureOnly);
                System.out.printf("# host time of the change alone: update of a scalar and a buffer %.3f us vs close + capture + instantiate %.3f us"
                        + " (%.1fx); the replay both are followed by runs %.3f us on the GPU%n", changeOnly, recaptureOnly, recaptureOnly / changeOnly,
                        plain);
                System.out.printf("cuhandle,graph_update_plain_replay_us_per_replay,%d,0,%.3f,0%n", KERNELS, plain);
                System.out.printf("cuhandle,graph_update_scalar_and_buffer_us_per_replay,%d,0,%.3f,0%n", KERNELS, updated);
                System.out.printf("cuhandle,graph_update_recapture_us_per_replay,%d,0,%.3f,0%n", KERNELS, recaptured);
                System.out.printf("# graph of %d axpy n=%d kernels: replay after changing a scalar and a buffer %.3f us vs plain replay %.3f us (%.2fx;"
                        + " goal <= 1.1x: %s); close and capture again %.3f us (%.1fx the updated replay; goal >= 20x: %s); results after updates"
                        + " equal the CPU reference: %s (seed %d)%n", KERNELS, UPDATE_N, updated, plain, updated / plain,
                        updated / plain <= 1.1 ? "MET" : "NOT MET", recaptured, recaptured / updated, recaptured / updated >= 20 ? "MET" : "NOT MET",
                        matches, seed);
                return matches;
            } finally {
                graph[0].close();
            }
        }
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
        // A non-zero multiple of 0.5 (-2 .. -0.5, 0.5 .. 2): every sum is exact in float. Never 0: saxpy with alpha 0
        // returns before launching (reference BLAS), so the graph would record nothing (a run of 2026-12-02 drew 0).
        int halves = random.nextInt(8) - 4;
        float alpha = 0.5f * (halves >= 0 ? halves + 1 : halves);
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
                if (g.nodeCount() != KERNELS) {
                    System.out.println("# MISMATCH: the graph holds " + g.nodeCount() + " nodes, not " + KERNELS);
                    System.exit(1);
                }
                if (!identical || !matchesCpu) {
                    System.out.println("# MISMATCH: direct " + d[0] + ", graph " + gr[0] + ", CPU " + reference);
                    System.exit(1);
                }
            }
            if (!updates(h, random, seed)) {
                System.out.println("# MISMATCH: the updated graph's results differ from the CPU reference");
                System.exit(1);
            }
        }
    }
}
