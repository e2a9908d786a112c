package dev.cuhandle.example;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import dev.cuhandle.junit.RequiresGpu;
import java.io.IOException;
import java.io.InputStream;
import java.util.Random;
import org.junit.jupiter.api.Test;

class ScaleTest {
    @Test
    void theKernelShipsAsAResource() throws IOException {
        try (InputStream in = Scale.class.getResourceAsStream("/kernels/scale.fatbin")) {
            assertNotNull(in, "/kernels/scale.fatbin is not on the class path");
            assertArrayEquals(new byte[] {0x50, (byte) 0xED, 0x55, (byte) 0xBA}, in.readNBytes(4), "fatbin magic 0xBA55ED50");
        }
    }

    @Test
    @RequiresGpu(kernels = true)
    void scaleOnTheGpuMatchesTheCpu() {
        long seed = System.nanoTime();
        Random random = new Random(seed);
        float a = 0.5f + random.nextFloat();
        float[] x = new float[1_000_003]; // not a multiple of the block size
        float[] expected = new float[x.length];
        for (int i = 0; i < x.length; i++) {
            x[i] = 2 * random.nextFloat() - 1;
            expected[i] = a * x[i];
        }
        // One multiplication, rounded the same way on both sides: the results are equal exactly.
        assertArrayEquals(expected, Scale.scale(x, a), "seed " + seed);
    }
}
