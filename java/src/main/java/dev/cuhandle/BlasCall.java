package dev.cuhandle;

import java.util.Objects;

/**
 * The native calls behind {@link Blas}: the operation codes the native layer knows, the null checks, the
 * C1 refusal of host-result reductions inside a capture, and one call with the handle and every buffer
 * entered (so none of them can be closed or cleaned while the GPU work is queued, rule L2).
 */
final class BlasCall {
    /** Vector updates ({@code NativeApi.blasUpdate}). */
    static final int SCAL = 0;
    static final int AXPY = 1;
    static final int COPY = 2;
    static final int SWAP = 3;
    /** Reductions ({@code NativeApi.blasReduce}). */
    static final int DOT = 0;
    static final int NRM2 = 1;
    static final int ASUM = 2;
    static final int IAMAX = 3;
    private static final String[] REDUCTION_NAMES = {"dot", "nrm2", "asum", "iamax"};

    private BlasCall() {}

    /** {@code x = op(x)} or {@code y = op(x, y)} on the handle's stream, for elements of {@code es} bytes; {@code y} is null for scal. */
    static void update(Handle h, int es, int op, long n, double alpha, DeviceBuffer x, long incx, DeviceBuffer y, long incy) {
        Objects.requireNonNull(h, "handle");
        Objects.requireNonNull(x, "x");
        if (op != SCAL) {
            Objects.requireNonNull(y, "y");
        }
        call(h, false, es, op, n, alpha, x, incx, y, incy, null);
    }

    /** A reduction of x (and y for dot): returned (waiting for it) when {@code result} is null, else written there in stream order. */
    static double reduce(Handle h, int es, int op, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy, DeviceBuffer result) {
        Objects.requireNonNull(h, "handle");
        Objects.requireNonNull(x, "x");
        if (op == DOT) {
            Objects.requireNonNull(y, "y");
        }
        if (result == null) {
            Capture.refuseOnThisThread("Blas." + REDUCTION_NAMES[op] + " with a host result (it waits for the GPU; pass a result buffer)");
            h.awaitQueuedWorkCancellably(); // the wait that matters is for the work before it: let that one end early
        }
        return call(h, true, es, op, n, 0, x, incx, y, incy, result);
    }

    /** One native BLAS call with the handle and every buffer entered (y and result may be null). */
    private static double call(Handle h, boolean reduction, int es, int op, long n, double alpha,
            DeviceBuffer x, long incx, DeviceBuffer y, long incy, DeviceBuffer result) {
        long hp = h.enter();
        long xp = 0;
        long yp = 0;
        long rp = 0;
        try {
            xp = x.enterFor(h);
            yp = DeviceBuffer.enterFor(y, h);
            rp = DeviceBuffer.enterFor(result, h);
            long yOffset = y == null ? 0 : y.byteOffset();
            long yLength = y == null ? 0 : y.byteLength();
            if (!reduction) {
                NativeApi.blasUpdate(hp, es, op, n, alpha, xp, x.byteOffset(), x.byteLength(), incx, yp, yOffset, yLength, incy);
                return 0;
            }
            return NativeApi.blasReduce(hp, es, op, n, xp, x.byteOffset(), x.byteLength(), incx, yp, yOffset, yLength, incy,
                    rp, result == null ? 0 : result.byteOffset(), result == null ? 0 : result.byteLength());
        } finally {
            DeviceBuffer.exit(result, rp);
            DeviceBuffer.exit(y, yp);
            DeviceBuffer.exit(x, xp);
            h.exit();
        }
    }
}
