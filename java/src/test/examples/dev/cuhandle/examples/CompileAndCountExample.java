package dev.cuhandle.examples;

import dev.cuhandle.CompileOptions;
import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.Dim3;
import dev.cuhandle.Handle;
import dev.cuhandle.Library;
import dev.cuhandle.ManagedVariable;
import java.util.Random;

/**
 * Kernels from source, end to end: CUDA C in a Java text block, compiled with NVRTC at run time,
 * launched, and a {@code __managed__} counter read back from the host. It lives in the test sources
 * because they compile for Java 17 (text blocks need 15+); tests/java-consumer compiles for Java 11,
 * the library's floor, and so cannot hold it. Run on a GPU machine with
 * {@code .gpu-bundle/run-class dev.cuhandle.examples.CompileAndCountExample}; it prints the count
 * and the CPU's and exits non-zero if they differ.
 */
public final class CompileAndCountExample {
    private CompileAndCountExample() {}

    /** Counts the elements above a threshold into a managed counter. */
    static final String SOURCE = """
            __managed__ unsigned long long above;

            extern "C" __global__ void count_above(const float* x, int n, float threshold) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n && x[i] > threshold) atomicAdd(&above, 1ULL);
            }
            """;

    /**
     * Compiles, launches over {@code x} and returns the kernel's count.
     *
     * @param x the values
     * @param threshold what to count above
     * @return how many values the GPU counted above {@code threshold}
     */
    public static long countAbove(float[] x, float threshold) {
        try (Handle h = Handle.create(); Library lib = Library.compile(h, SOURCE, CompileOptions.defaults());
                DeviceBuffer d = h.upload(x)) {
            ManagedVariable above = lib.managed("above");
            above.setLong(0, 0);
            h.launch(lib.kernel("count_above"), Dim3.of((x.length + 255) / 256), Dim3.of(256), 0, d, x.length, threshold);
            h.synchronize(); // the host reads managed memory only after the kernel is done
            return above.getLong(0);
        }
    }

    /**
     * Runs the example on random data.
     *
     * @param args ignored
     */
    public static void main(String[] args) {
        long seed = System.nanoTime();
        Random random = new Random(seed);
        float[] x = new float[1 << 20];
        for (int i = 0; i < x.length; i++) {
            x[i] = random.nextFloat();
        }
        long expected = 0;
        for (float v : x) {
            expected += v > 0.75f ? 1 : 0;
        }
        long counted = countAbove(x, 0.75f);
        System.out.println("counted " + counted + " of " + x.length + " above 0.75; the CPU counts " + expected + " (seed " + seed + ")");
        if (counted != expected) {
            System.exit(1);
        }
    }
}
