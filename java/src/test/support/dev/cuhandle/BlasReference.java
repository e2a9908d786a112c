package dev.cuhandle;

/**
 * A double-precision CPU reference for BLAS level 1 with the semantics of reference BLAS (the
 * Fortran routines of netlib, nrm2 as in LAPACK 3.10), and the tolerances the GPU tests compare
 * with. Vectors are arrays of doubles; "single" precision data are doubles that hold float values
 * exactly, and element-wise results are rounded to float exactly as a float computation would be.
 *
 * <p>Increments: element {@code i} of a vector of {@code n} elements with increment {@code inc} that
 * starts at array index {@code off} is at {@code off + i*inc} for {@code inc >= 0} and at
 * {@code off + (n-1-i)*|inc|} for {@code inc < 0} (so {@code inc == 0} reads the first element
 * every time). {@code n <= 0} does nothing (reductions give 0); scal, nrm2, asum and iamax do
 * nothing (give 0) for {@code incx <= 0}.
 */
final class BlasReference {
    /** Unit roundoff of float (half an ulp of 1). */
    static final double U_F = 0x1p-24;
    /** Unit roundoff of double. */
    static final double U_D = 0x1p-53;

    private BlasReference() {}

    // ------------------------------------------------------------------------------ layout

    /** Elements a vector spans from its lowest-address element: 1 + (n-1)*|inc|, 0 for n <= 0. */
    static long span(long n, long inc) {
        return n <= 0 ? 0 : 1 + (n - 1) * Math.abs(inc);
    }

    /** Array index of element {@code i} of the vector (reference BLAS indexing). */
    static int index(int off, long i, long n, long inc) {
        long at = inc >= 0 ? i * inc : (n - 1 - i) * -inc;
        return Math.toIntExact(off + at);
    }

    private static double round(boolean single, double v) {
        return single ? (double) (float) v : v;
    }

    // ------------------------------------------------------------------------------ element-wise

    /**
     * x = alpha*x. For float data {@code alpha*x} in double is exact (24+24 bits < 53), so one
     * rounding to float gives exactly the IEEE float product. Multiplies even for alpha == 0 (NaN
     * and Inf become NaN), as reference BLAS does.
     */
    static void scal(boolean single, long n, double alpha, double[] x, int xOff, long incx) {
        if (n <= 0 || incx <= 0) {
            return;
        }
        for (long i = 0; i < n; i++) {
            int k = index(xOff, i, n, incx);
            x[k] = round(single, alpha * x[k]);
        }
    }

    /**
     * y = alpha*x + y with a single rounding (fused multiply-add): for float data the product is
     * exact in double and the sum is rounded in double and then to float, which can differ from the
     * once-rounded float result by 1 ulp (double rounding); see {@link #axpyAccepts}. Returns before
     * touching y when alpha == 0 (reference BLAS).
     */
    static void axpy(boolean single, long n, double alpha, double[] x, int xOff, long incx, double[] y, int yOff, long incy) {
        if (n <= 0 || alpha == 0) {
            return;
        }
        for (long i = 0; i < n; i++) {
            int kx = index(xOff, i, n, incx);
            int ky = index(yOff, i, n, incy);
            y[ky] = single ? (double) (float) (alpha * x[kx] + y[ky]) : Math.fma(alpha, x[kx], y[ky]);
        }
    }

    /**
     * Whether {@code got} is an acceptable y_i of axpy. Tolerance: float: within 1 ulp of the
     * reference value (float)(alpha*x + y) computed in double: the device's fmaf is correctly
     * rounded, the reference may be off by double rounding, at most 1 ulp; a non-fused device
     * computation would be further off and is rejected. double: exactly the fused result
     * {@code Math.fma} or exactly the two-rounding result {@code alpha*x + y} (both are legitimate
     * implementations; nothing in between is).
     */
    static boolean axpyAccepts(boolean single, double alpha, double x, double y, double got) {
        if (single) {
            double expected = (double) (float) (alpha * x + y);
            if (Double.isNaN(expected) || Double.isInfinite(expected)) {
                return sameValue(expected, got);
            }
            float e = (float) expected;
            float g = (float) got;
            return g == e || Math.abs(g - e) <= Math.ulp(Math.max(Math.abs(e), Math.abs(g)));
        }
        return sameValue(Math.fma(alpha, x, y), got) || sameValue(alpha * x + y, got);
    }

    /** y = x. */
    static void copy(long n, double[] x, int xOff, long incx, double[] y, int yOff, long incy) {
        if (n <= 0) {
            return;
        }
        for (long i = 0; i < n; i++) {
            y[index(yOff, i, n, incy)] = x[index(xOff, i, n, incx)];
        }
    }

    /** x <-> y (x and y must not overlap). */
    static void swap(long n, double[] x, int xOff, long incx, double[] y, int yOff, long incy) {
        if (n <= 0) {
            return;
        }
        for (long i = 0; i < n; i++) {
            int kx = index(xOff, i, n, incx);
            int ky = index(yOff, i, n, incy);
            double t = x[kx];
            x[kx] = y[ky];
            y[ky] = t;
        }
    }

    // ------------------------------------------------------------------------------ reductions

    /**
     * Sum of x_i*y_i, nearly exact: each product is split into its rounded value and its exact
     * error (fma), and both are summed with Neumaier's compensated summation, so the reference's
     * own error is about one double rounding of the result. Non-finite data give the IEEE result of
     * a plain sum (NaN for NaN, Inf - Inf or 0*Inf; +-Inf for an infinite product).
     */
    static double dot(long n, double[] x, int xOff, long incx, double[] y, int yOff, long incy) {
        if (n <= 0) {
            return 0;
        }
        double plain = 0;
        Neumaier sum = new Neumaier();
        for (long i = 0; i < n; i++) {
            double a = x[index(xOff, i, n, incx)];
            double b = y[index(yOff, i, n, incy)];
            double p = a * b;
            plain += p;
            sum.add(p);
            sum.add(Math.fma(a, b, -p));
        }
        return Double.isFinite(plain) ? sum.value() : plain;
    }

    /** Sum of |x_i*y_i|, the scale of the rounding errors of dot. */
    static double absDot(long n, double[] x, int xOff, long incx, double[] y, int yOff, long incy) {
        double s = 0;
        for (long i = 0; i < n; i++) {
            s += Math.abs(x[index(xOff, i, n, incx)] * y[index(yOff, i, n, incy)]);
        }
        return s;
    }

    /** Sum of |x_i| (compensated); 0 for n <= 0 or incx <= 0. */
    static double asum(long n, double[] x, int xOff, long incx) {
        if (n <= 0 || incx <= 0) {
            return 0;
        }
        double plain = 0;
        Neumaier sum = new Neumaier();
        for (long i = 0; i < n; i++) {
            double a = Math.abs(x[index(xOff, i, n, incx)]);
            plain += a;
            sum.add(a);
        }
        return Double.isFinite(plain) ? sum.value() : plain;
    }

    /**
     * Euclidean norm without overflow or underflow: scaled by the largest |x_i| (a division per
     * element, relative error 2 roundings each, then a compensated sum). NaN anywhere gives NaN,
     * otherwise Inf anywhere gives +Inf (LAPACK 3.10 dnrm2 behaves the same). 0 for n <= 0 or
     * incx <= 0.
     */
    static double nrm2(long n, double[] x, int xOff, long incx) {
        if (n <= 0 || incx <= 0) {
            return 0;
        }
        double scale = 0;
        boolean nan = false;
        for (long i = 0; i < n; i++) {
            double a = Math.abs(x[index(xOff, i, n, incx)]);
            if (Double.isNaN(a)) {
                nan = true;
            } else if (a > scale) {
                scale = a;
            }
        }
        if (nan) {
            return Double.NaN;
        }
        if (Double.isInfinite(scale)) {
            return Double.POSITIVE_INFINITY;
        }
        if (scale == 0) {
            return 0;
        }
        Neumaier sum = new Neumaier();
        for (long i = 0; i < n; i++) {
            double r = x[index(xOff, i, n, incx)] / scale;
            double sq = r * r;
            sum.add(sq);
            sum.add(Math.fma(r, r, -sq));
        }
        return scale * Math.sqrt(sum.value());
    }

    /**
     * Reference BLAS i?amax: 1-based index of the first element of largest |x_i|, scanning with a
     * strict {@code >}: if x_1 is NaN the answer is 1, otherwise NaN elements are never chosen;
     * ties go to the smallest index. 0 for n <= 0 or incx <= 0.
     */
    static long iamax(long n, double[] x, int xOff, long incx) {
        if (n <= 0 || incx <= 0) {
            return 0;
        }
        long best = 1;
        double max = Math.abs(x[index(xOff, 0, n, incx)]);
        for (long i = 1; i < n; i++) {
            double a = Math.abs(x[index(xOff, i, n, incx)]);
            if (a > max) {
                max = a;
                best = i + 1;
            }
        }
        return best;
    }

    // ------------------------------------------------------------------------------ tolerances

    /**
     * Tolerance of dot (absSum = sum |x_i*y_i|) and asum (absSum = the result) against the nearly
     * exact reference.
     * <ul>
     * <li>float: the kernels accumulate float data in double; products of floats and |x_i| are
     * exact in double, and any summation order of n terms in double is off by at most
     * (n-1)*U_D*absSum; the final conversion to float adds at most U_F*|result|. Tolerance
     * 4*U_F*|ref| (two float ulps; far tighter than the n*eps_float of float accumulation: a
     * missing element among 2^20 shifts the result by ~1e-6 relative and is caught) plus
     * 2*n*U_D*absSum (the double summation bound, with the reference's own error), plus the
     * smallest subnormal for a result that underflows.</li>
     * <li>double: each product is rounded (or fused) once and the sum is off by at most
     * (n-1)*U_D*absSum: tolerance 2*(n+1)*U_D*absSum + 2*U_D*|ref| plus two subnormals.</li>
     * </ul>
     */
    static double sumTolerance(boolean single, long n, double ref, double absSum) {
        if (single) {
            return 4 * U_F * Math.abs(ref) + 2.0 * n * U_D * absSum + Float.MIN_VALUE;
        }
        return 2.0 * (n + 1) * U_D * absSum + 2 * U_D * Math.abs(ref) + 2 * Double.MIN_VALUE;
    }

    /**
     * Tolerance of nrm2 against the scaled reference.
     * <ul>
     * <li>float (squares exact in double, summed in double, sqrt in double, one rounding to
     * float): the sum of n positive terms is off by at most (n-1)*U_D relative, the square root
     * halves that, plus U_F for the float result: 4*U_F*|ref| (two float ulps) + (n+4)*U_D*|ref|
     * + 2 float subnormals (results in the subnormal range round absolutely).</li>
     * <li>double (Blue's algorithm: one rounding per square, power-of-two scalings are exact, the
     * sum of n terms (n-1)*U_D relative, a few roundings in the final combination and sqrt, the
     * reference ~3*U_D): (n+16)*U_D*|ref| + 4 double subnormals.</li>
     * </ul>
     */
    static double nrm2Tolerance(boolean single, long n, double ref) {
        if (single) {
            return 4 * U_F * Math.abs(ref) + (n + 4.0) * U_D * Math.abs(ref) + 2 * Float.MIN_VALUE;
        }
        return (n + 16.0) * U_D * Math.abs(ref) + 4 * Double.MIN_VALUE;
    }

    /** NaN matches NaN, an infinity the same infinity, otherwise |got - expected| <= tol. */
    static boolean close(double expected, double got, double tol) {
        if (Double.isNaN(expected) || Double.isInfinite(expected)) {
            return sameValue(expected, got);
        }
        return !Double.isNaN(got) && Math.abs(got - expected) <= tol;
    }

    /** Equal bits, except that any NaN equals any NaN. */
    static boolean sameValue(double a, double b) {
        if (Double.isNaN(a) || Double.isNaN(b)) {
            return Double.isNaN(a) && Double.isNaN(b);
        }
        return Double.doubleToRawLongBits(a) == Double.doubleToRawLongBits(b);
    }

    /** Neumaier's compensated summation (Kahan-Babuska): error about one rounding of the sum. */
    static final class Neumaier {
        private double sum;
        private double compensation;

        void add(double v) {
            double t = sum + v;
            if (Math.abs(sum) >= Math.abs(v)) {
                compensation += (sum - t) + v;
            } else {
                compensation += (v - t) + sum;
            }
            sum = t;
        }

        void add(Neumaier other) {
            add(other.sum);
            add(other.compensation);
        }

        double value() {
            return sum + compensation;
        }
    }
}
