package dev.cuhandle.example;

import dev.cuhandle.Cuda;
import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.Dim3;
import dev.cuhandle.Handle;
import dev.cuhandle.Kernel;
import dev.cuhandle.Library;
import java.util.Arrays;

/** Scales a float array on the GPU with an own CUDA kernel, src/main/cuda/scale.cu. */
public final class Scale {
    private static final int BLOCK = 256;
    private static Kernel kernel;

    private Scale() {}

    /** Multiplies the first n elements of x by a, queued on h's stream (returns without waiting). */
    public static void scale(Handle h, DeviceBuffer x, float a, int n) {
        if (n == 0) {
            return;
        }
        int blocks = (n + BLOCK - 1) / BLOCK;
        h.launch(kernel(), Dim3.of(blocks), Dim3.of(BLOCK), 0, x, a, n);
    }

    /** Returns a * xs, computed on the GPU. */
    public static float[] scale(float[] xs, float a) {
        try (Handle h = Handle.create(); DeviceBuffer x = h.upload(xs)) {
            scale(h, x, a, xs.length);
            float[] result = new float[xs.length];
            x.download(result); // waits for the kernel: same stream
            return result;
        }
    }

    /** The library is loaded once per process, on first use; its kernels run in any handle's context. */
    private static synchronized Kernel kernel() {
        if (kernel == null) {
            kernel = Library.loadResource(Scale.class, "/kernels/scale.fatbin").kernel("scale");
        }
        return kernel;
    }

    public static void main(String[] args) {
        String reason = Cuda.unavailableReason();
        if (reason != null) {
            System.out.println("no GPU: " + reason);
            return;
        }
        System.out.println(Arrays.toString(scale(new float[] {1, 2, 3}, 2.0f)));
    }
}
