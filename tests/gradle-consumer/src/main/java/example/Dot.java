package example;

import dev.cuhandle.Blas;
import dev.cuhandle.Cuda;
import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.Handle;

/** The dot product of two float arrays with cuhandle's built-in BLAS, from a Gradle build. */
public final class Dot {
    private Dot() {}

    /** Returns the sum of x[i] * y[i], computed on the GPU. */
    public static float dot(float[] x, float[] y) {
        if (x.length != y.length) {
            throw new IllegalArgumentException("x and y differ in length: " + x.length + " vs " + y.length);
        }
        try (Handle h = Handle.create(); DeviceBuffer dx = h.upload(x); DeviceBuffer dy = h.upload(y)) {
            return Blas.sdot(h, x.length, dx, 1, dy, 1);
        }
    }

    public static void main(String[] args) {
        String reason = Cuda.unavailableReason();
        if (reason != null) {
            System.out.println("[gradle-consumer] no GPU: " + reason);
            return;
        }
        System.out.println("[gradle-consumer] dot = " + dot(new float[] {1, 2, 3}, new float[] {4, 5, 6}));
    }
}
