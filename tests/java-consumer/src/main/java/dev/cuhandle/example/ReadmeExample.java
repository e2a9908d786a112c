package dev.cuhandle.example;

import dev.cuhandle.Blas;
import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.Dim3;
import dev.cuhandle.Handle;
import dev.cuhandle.Kernel;
import dev.cuhandle.Library;

/** The opening example of the README, verbatim between the markers, so that it keeps compiling. */
public final class ReadmeExample {
    private ReadmeExample() {}

    /** y = 0.5 * (2 * x + y), elementwise, on the GPU: BLAS saxpy, then the own kernel {@code scale}. */
    public static float[] run(float[] xs, float[] ys) {
        int n = xs.length;
        // README begin
        // Your own kernel, `extern "C" __global__ void scale(float* x, float a, int n)`, compiled to a
        // fatbin that ships as a resource: see docs/guide/kernels.md.
        Kernel scale = Library.loadResource(App.class, "/kernels/scale.fatbin").kernel("scale");
        try (Handle h = Handle.create()) {                       // binds like cublasCreate (rules H1-H3)
            try (DeviceBuffer x = h.upload(xs); DeviceBuffer y = h.upload(ys)) {
                Blas.saxpy(h, n, 2.0f, x, 1, y, 1);              // built-in library function: y += 2x
                h.launch(scale, Dim3.of((n + 255) / 256), Dim3.of(256), 0, y, 0.5f, n);  // your kernel: y *= 0.5
                y.download(ys);                                  // waits for both, in stream order
            }
        }                                                        // releases the primary context
        // README end
        return ys;
    }

    /** Stands for the user's own class in the README: the anchor whose class loader finds the resource. */
    static final class App {
        private App() {}
    }
}
