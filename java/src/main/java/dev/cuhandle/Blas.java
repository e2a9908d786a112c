package dev.cuhandle;

import java.util.Objects;

/**
 * BLAS level 1 on a {@link Handle}, for {@code float} (s) and {@code double} (d), with cuBLAS-like
 * signatures and reference-BLAS semantics:
 * <ul>
 * <li>{@code n <= 0}: nothing is done; reductions return 0.</li>
 * <li>Increments may be negative: element i of a vector with increment {@code inc < 0} is at
 * {@code (n-1-i)*|inc|} from its start, as in reference BLAS. A vector that is only read may have
 * increment 0 (every element is its first); a written vector with increment 0 is an
 * {@link IllegalArgumentException}. scal, nrm2, asum and iamax do nothing (return 0) for
 * {@code incx <= 0}, as reference BLAS does.</li>
 * <li>Vectors start at the start of their {@link DeviceBuffer} (use {@link DeviceBuffer#slice} for
 * an offset, a multiple of the element size) and must hold {@code 1 + (n-1)*|inc|} elements. A
 * device result must be aligned to its size (4 or 8 bytes; 8 for iamax).</li>
 * <li>Reductions return a host value (waiting for it), or, with a result {@link DeviceBuffer},
 * write it there in stream order without waiting. Reductions are deterministic: the same input
 * gives a bit-identical result on every run (fixed grid per device, fixed summation order).</li>
 * <li>{@code isamax}/{@code idamax} return a 1-based index like BLAS; NaN follows reference BLAS:
 * if the first element is NaN the answer is 1, otherwise NaN elements are never chosen.</li>
 * <li>{@code snrm2} accumulates squares in double and {@code dnrm2} uses Blue's scaled
 * accumulators, so neither overflows nor underflows for representable results.</li>
 * </ul>
 */
public final class Blas {
    private static final int SCAL = 0;
    private static final int AXPY = 1;
    private static final int COPY = 2;
    private static final int SWAP = 3;
    private static final int DOT = 0;
    private static final int NRM2 = 1;
    private static final int ASUM = 2;
    private static final int IAMAX = 3;

    private Blas() {}

    public static void sscal(Handle h, long n, float alpha, DeviceBuffer x, long incx) {
        update(h, 4, SCAL, n, alpha, x, incx, null, 0);
    }

    public static void dscal(Handle h, long n, double alpha, DeviceBuffer x, long incx) {
        update(h, 8, SCAL, n, alpha, x, incx, null, 0);
    }

    public static void saxpy(Handle h, long n, float alpha, DeviceBuffer x, long incx, DeviceBuffer y, long incy) {
        update(h, 4, AXPY, n, alpha, x, incx, y, incy);
    }

    public static void daxpy(Handle h, long n, double alpha, DeviceBuffer x, long incx, DeviceBuffer y, long incy) {
        update(h, 8, AXPY, n, alpha, x, incx, y, incy);
    }

    public static void scopy(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy) {
        update(h, 4, COPY, n, 0, x, incx, y, incy);
    }

    public static void dcopy(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy) {
        update(h, 8, COPY, n, 0, x, incx, y, incy);
    }

    public static void sswap(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy) {
        update(h, 4, SWAP, n, 0, x, incx, y, incy);
    }

    public static void dswap(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy) {
        update(h, 8, SWAP, n, 0, x, incx, y, incy);
    }

    public static float sdot(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy) {
        return (float) reduce(h, 4, DOT, n, x, incx, y, incy, null);
    }

    public static double ddot(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy) {
        return reduce(h, 8, DOT, n, x, incx, y, incy, null);
    }

    /** Writes the float dot product to the first 4 bytes of {@code result}, without waiting. */
    public static void sdot(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy, DeviceBuffer result) {
        reduce(h, 4, DOT, n, x, incx, y, incy, Objects.requireNonNull(result, "result"));
    }

    /** Writes the double dot product to the first 8 bytes of {@code result}, without waiting. */
    public static void ddot(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy, DeviceBuffer result) {
        reduce(h, 8, DOT, n, x, incx, y, incy, Objects.requireNonNull(result, "result"));
    }

    public static float snrm2(Handle h, long n, DeviceBuffer x, long incx) {
        return (float) reduce(h, 4, NRM2, n, x, incx, null, 0, null);
    }

    public static double dnrm2(Handle h, long n, DeviceBuffer x, long incx) {
        return reduce(h, 8, NRM2, n, x, incx, null, 0, null);
    }

    public static void snrm2(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer result) {
        reduce(h, 4, NRM2, n, x, incx, null, 0, Objects.requireNonNull(result, "result"));
    }

    public static void dnrm2(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer result) {
        reduce(h, 8, NRM2, n, x, incx, null, 0, Objects.requireNonNull(result, "result"));
    }

    public static float sasum(Handle h, long n, DeviceBuffer x, long incx) {
        return (float) reduce(h, 4, ASUM, n, x, incx, null, 0, null);
    }

    public static double dasum(Handle h, long n, DeviceBuffer x, long incx) {
        return reduce(h, 8, ASUM, n, x, incx, null, 0, null);
    }

    public static void sasum(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer result) {
        reduce(h, 4, ASUM, n, x, incx, null, 0, Objects.requireNonNull(result, "result"));
    }

    public static void dasum(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer result) {
        reduce(h, 8, ASUM, n, x, incx, null, 0, Objects.requireNonNull(result, "result"));
    }

    /** 1-based index of the first element of largest absolute value; 0 if n <= 0 or incx <= 0. */
    public static long isamax(Handle h, long n, DeviceBuffer x, long incx) {
        return (long) reduce(h, 4, IAMAX, n, x, incx, null, 0, null);
    }

    public static long idamax(Handle h, long n, DeviceBuffer x, long incx) {
        return (long) reduce(h, 8, IAMAX, n, x, incx, null, 0, null);
    }

    /** Writes the 1-based index as a 64-bit integer to the first 8 bytes of {@code result}, without waiting. */
    public static void isamax(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer result) {
        reduce(h, 4, IAMAX, n, x, incx, null, 0, Objects.requireNonNull(result, "result"));
    }

    public static void idamax(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer result) {
        reduce(h, 8, IAMAX, n, x, incx, null, 0, Objects.requireNonNull(result, "result"));
    }

    private static void update(Handle h, int es, int op, long n, double alpha, DeviceBuffer x, long incx, DeviceBuffer y, long incy) {
        Objects.requireNonNull(h, "handle");
        Objects.requireNonNull(x, "x");
        if (op != SCAL) {
            Objects.requireNonNull(y, "y");
        }
        call(h, false, es, op, n, alpha, x, incx, y, incy, null);
    }

    private static double reduce(Handle h, int es, int op, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy, DeviceBuffer result) {
        Objects.requireNonNull(h, "handle");
        Objects.requireNonNull(x, "x");
        if (op == DOT) {
            Objects.requireNonNull(y, "y");
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
