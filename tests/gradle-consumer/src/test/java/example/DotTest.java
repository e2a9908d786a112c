package example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.cuhandle.Cuda;
import dev.cuhandle.CudaException;
import dev.cuhandle.junit.RequiresGpu;
import java.util.Random;
import org.junit.jupiter.api.Test;

class DotTest {
    @Test
    void theLibraryLoadsFromTheGradleDependencyAndAnswersWithoutAGpuToo() {
        String reason = Cuda.unavailableReason();
        if (reason != null) {
            assertFalse(Cuda.isAvailable());
            assertThrows(CudaException.class, () -> Dot.dot(new float[] {1}, new float[] {1}));
        }
        System.out.println("[gradle-consumer] GPU: " + (reason != null ? reason : "available"));
    }

    @Test
    @RequiresGpu(kernels = true)
    void dotOnTheGpuMatchesTheCpu() {
        long seed = System.nanoTime();
        Random random = new Random(seed);
        float[] x = new float[100_003];
        float[] y = new float[x.length];
        double expected = 0;
        for (int i = 0; i < x.length; i++) {
            x[i] = random.nextFloat();
            y[i] = random.nextFloat();
            expected += (double) x[i] * y[i];
        }
        // Float sums of 1e5 products in different orders: a relative tolerance of 1e-4.
        assertEquals(expected, Dot.dot(x, y), 1e-4 * expected, "seed " + seed);
    }
}
