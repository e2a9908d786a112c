package example;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import dev.cuhandle.Blas;
import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.Handle;
import dev.cuhandle.junit.RequiresGpu;
import org.junit.jupiter.api.Test;

/** Checks what a kernel computed: needs a GPU that executes kernels, so not the CPU stand-in. */
class SaxpyTest {
    @Test
    @RequiresGpu(kernels = true)
    void saxpyOnTheGpuMatchesTheCpu() {
        float[] x = {1, 2, 3, 4};
        float[] y = {10, 20, 30, 40};
        try (Handle h = Handle.create();
             DeviceBuffer dx = h.upload(x);
             DeviceBuffer dy = h.upload(y)) {
            Blas.saxpy(h, x.length, 2f, dx, 1, dy, 1);
            dy.download(y);
        }
        assertArrayEquals(new float[] {12, 24, 36, 48}, y);
    }
}
