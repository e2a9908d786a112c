package dev.cuhandle.example;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import dev.cuhandle.junit.RequiresGpu;
import java.util.Random;
import org.junit.jupiter.api.Test;

class ReadmeExampleTest {
    @Test
    @RequiresGpu(kernels = true)
    void theReadmesOpeningExampleComputesHalfOfTwoXPlusY() {
        long seed = System.nanoTime();
        Random random = new Random(seed);
        int n = 100_003;
        float[] x = new float[n];
        float[] y = new float[n];
        float[] expected = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = 2 * random.nextFloat() - 1;
            y[i] = 2 * random.nextFloat() - 1;
            // 2x is exact, so saxpy's single rounding of 2x + y equals this; halving is exact.
            expected[i] = 0.5f * (2f * x[i] + y[i]);
        }
        assertArrayEquals(expected, ReadmeExample.run(x, y), "seed " + seed);
    }
}
