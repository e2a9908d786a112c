package dev.cuhandle.bench;

import dev.cuhandle.CompileOptions;
import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.Dim3;
import dev.cuhandle.Graph;
import dev.cuhandle.GraphCondition;
import dev.cuhandle.Handle;
import dev.cuhandle.Kernel;
import dev.cuhandle.Library;
import java.util.Arrays;

/**
 * What one iteration of a WHILE loop costs the GPU by itself (issue 36; docs/guide/graphs.md, "What a loop iteration
 * costs"): loops of 200 iterations whose body is 0 to 3 empty kernels, counted (the setter only counts) or on a
 * {@code floatAbove(...).thenZero()} condition, against the same kernels as a plain chain of graph nodes. Prints one
 * line per body size, median of 9 runs of launch + synchronize, in µs per iteration.
 */
public final class GraphLoopOverhead {
    private static final String SOURCE = "extern \"C\" __global__ void empty(int* p) {}\n";

    private GraphLoopOverhead() {}

    private static double usPerRun(Handle h, Graph g) {
        double[] us = new double[9];
        for (int run = -2; run < us.length; run++) {
            h.synchronize();
            long t0 = System.nanoTime();
            g.launch(h);
            h.synchronize();
            if (run >= 0) {
                us[run] = (System.nanoTime() - t0) / 1e3;
            }
        }
        Arrays.sort(us);
        return us[us.length / 2];
    }

    /**
     * Runs the measurement on device 0.
     *
     * @param args none
     */
    public static void main(String[] args) {
        int iterations = 200;
        try (Handle h = Handle.create(0); Library lib = Library.compile(h, SOURCE, CompileOptions.defaults());
                DeviceBuffer p = h.allocate(16); DeviceBuffer count = h.allocate(4)) {
            Kernel empty = lib.kernel("empty");
            for (int body = 0; body <= 3; body++) {
                int b = body;
                try (Graph loop = h.capture(() -> h.whileLoop(iterations, count, l -> {
                        for (int k = 0; k < b; k++) {
                            h.launch(empty, Dim3.of(16), Dim3.of(256), 0, p);
                        }
                    }));
                        Graph loopCond = h.capture(() -> h.whileLoop(iterations, count, l -> {
                            for (int k = 0; k < b; k++) {
                                h.launch(empty, Dim3.of(16), Dim3.of(256), 0, p);
                            }
                            l.continueWhile(GraphCondition.floatAbove(p, -1f).thenZero());
                        }));
                        Graph chain = h.capture(() -> {
                            for (int i = 0; i < iterations; i++) {
                                for (int k = 0; k < Math.max(b, 1); k++) {
                                    h.launch(empty, Dim3.of(16), Dim3.of(256), 0, p);
                                }
                            }
                        })) {
                    double l = usPerRun(h, loop) / iterations;
                    double lc = usPerRun(h, loopCond) / iterations;
                    double c = usPerRun(h, chain) / iterations;
                    System.out.printf("body %d kernels: WHILE (counted) %.3f us/iter, WHILE on floatAbove.thenZero %.3f us/iter, chain of %d kernels %.3f us per group%n",
                            b, l, lc, Math.max(b, 1), c);
                }
            }
        }
    }
}
