package dev.cuhandle;

import static dev.cuhandle.BlasTestSupport.assertClose;
import static dev.cuhandle.BlasTestSupport.assertSameArray;
import static dev.cuhandle.BlasTestSupport.random;
import static dev.cuhandle.BlasTestSupport.where;

import dev.cuhandle.BlasTestSupport.Prec;
import dev.cuhandle.BlasTestSupport.Reduction;
import dev.cuhandle.BlasTestSupport.Vec;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * BLAS level 1 on the device against the double-precision CPU reference ({@link BlasReference}):
 * every operation (scal, axpy, copy, swap, dot, nrm2, asum, iamax) in float and double, host- and
 * device-result variants of the reductions, for n in {0, 1, 2, 31, 32, 33, 2^20+7} and increments
 * 1, 2, -1, -3 (every pair of them for two-vector operations up to n = 33, eight pairs at 2^20+7),
 * plus increment 0 on read-only vectors (broadcast) and on single-vector operations (nothing).
 *
 * <p>Every vector sits in a buffer slice at a random element offset (unit-stride two-vector cases
 * also at equal and at different 16-byte misalignments of x and y, to reach both vector paths of
 * the kernels), with "gap" values (~1e4) between strided elements and guard elements after the
 * span: writes must leave every non-vector element bit-identical, and a reduction that read one
 * would be far off. Fresh random data every run; the seed is in every failure message.
 *
 * <p>Tolerances (justified in {@link BlasReference}): scal, copy, swap bit-exact; axpy within 1 ulp
 * of the fused result for float, exactly fused or exactly twice-rounded for double; dot, asum,
 * nrm2 within a few float ulps (float) plus the worst-case double summation bound n*eps_double
 * times the sum of magnitudes; iamax exact. The device-result value must be bit-identical to the
 * host-result value (same kernel, deterministic).
 */
@GpuTest
class BlasGpuTest {
    static final long BIG = (1L << 20) + 7;
    private static final long[] SIZES = {0, 1, 2, 31, 32, 33, BIG};
    private static final long[] INCS = {1, 2, -1, -3};
    /** The increment pairs at n = 2^20+7 (every increment appears for x and for y). */
    private static final long[][] BIG_PAIRS = {{1, 1}, {2, 2}, {-1, -1}, {-3, -3}, {1, -3}, {-3, 2}, {2, -1}, {-1, 1}};

    private static Handle h;

    @BeforeAll
    static void open() {
        BlasTestSupport.announceSeed(BlasGpuTest.class.getSimpleName());
        h = Handle.create(0);
    }

    @AfterAll
    static void close() {
        if (h != null) {
            h.close();
        }
    }

    // ------------------------------------------------------------------------------ factories

    interface OneVectorCheck {
        void run(Prec p, long n, long inc, int lead, String name);
    }

    interface TwoVectorCheck {
        void run(Prec p, long n, long incx, int leadX, long incy, int leadY, String name);
    }

    @TestFactory
    List<DynamicNode> scal() {
        return oneVector("scal", INCS, BlasGpuTest::checkScal);
    }

    @TestFactory
    List<DynamicNode> nrm2() {
        return oneVector("nrm2", INCS, (p, n, inc, lead, name) -> checkReduction(Reduction.NRM2, p, n, inc, lead, 0, 0, name));
    }

    @TestFactory
    List<DynamicNode> asum() {
        return oneVector("asum", INCS, (p, n, inc, lead, name) -> checkReduction(Reduction.ASUM, p, n, inc, lead, 0, 0, name));
    }

    @TestFactory
    List<DynamicNode> iamax() {
        return oneVector("amax", INCS, (p, n, inc, lead, name) -> checkReduction(Reduction.IAMAX, p, n, inc, lead, 0, 0, name));
    }

    @TestFactory
    List<DynamicNode> axpy() {
        return twoVector("axpy", BlasGpuTest::checkAxpy);
    }

    @TestFactory
    List<DynamicNode> copy() {
        return twoVector("copy", BlasGpuTest::checkCopy);
    }

    @TestFactory
    List<DynamicNode> swap() {
        return twoVector("swap", BlasGpuTest::checkSwap);
    }

    @TestFactory
    List<DynamicNode> dot() {
        return twoVector("dot", (p, n, incx, lx, incy, ly, name) -> checkReduction(Reduction.DOT, p, n, incx, lx, incy, ly, name));
    }

    /**
     * Increment 0: allowed on read-only vectors, where every element is the first (axpy x, dot x
     * and/or y, copy x); scal, nrm2, asum and iamax with incx = 0 do nothing / give 0.
     */
    @TestFactory
    List<DynamicNode> zeroIncrement() {
        List<DynamicNode> all = new ArrayList<>();
        long[] sizes = {1, 2, 33, BIG};
        for (Prec p : Prec.values()) {
            List<DynamicNode> tests = new ArrayList<>();
            for (long n : sizes) {
                for (long incy : new long[] {1, -3}) {
                    tests.add(twoCase(p, "axpy", n, 0, incy, BlasGpuTest::checkAxpy));
                }
                for (long incy : new long[] {1, 2, -3}) {
                    tests.add(twoCase(p, "copy", n, 0, incy, BlasGpuTest::checkCopy));
                }
                for (long[] inc : new long[][] {{0, 1}, {2, 0}, {0, 0}, {-1, 0}, {0, -3}}) {
                    tests.add(twoCase(p, "dot", n, inc[0], inc[1],
                            (q, m, incx, lx, incy, ly, name) -> checkReduction(Reduction.DOT, q, m, incx, lx, incy, ly, name)));
                }
                tests.add(oneCase(p, "scal", n, 0, BlasGpuTest::checkScal));
                tests.add(oneCase(p, "nrm2", n, 0, (q, m, inc, lead, name) -> checkReduction(Reduction.NRM2, q, m, inc, lead, 0, 0, name)));
                tests.add(oneCase(p, "asum", n, 0, (q, m, inc, lead, name) -> checkReduction(Reduction.ASUM, q, m, inc, lead, 0, 0, name)));
                tests.add(oneCase(p, "amax", n, 0, (q, m, inc, lead, name) -> checkReduction(Reduction.IAMAX, q, m, inc, lead, 0, 0, name)));
            }
            all.add(DynamicContainer.dynamicContainer(p.prefix(), tests));
        }
        return all;
    }

    private static List<DynamicNode> oneVector(String op, long[] incs, OneVectorCheck check) {
        List<DynamicNode> all = new ArrayList<>();
        for (Prec p : Prec.values()) {
            List<DynamicNode> tests = new ArrayList<>();
            for (long n : SIZES) {
                for (long inc : incs) {
                    if (inc == 1) {
                        tests.add(oneCase(p, op, n, inc, 0, check)); // 256-byte aligned start
                    }
                    tests.add(oneCase(p, op, n, inc, check));
                }
            }
            all.add(DynamicContainer.dynamicContainer(opName(p, op), tests));
        }
        return all;
    }

    private static List<DynamicNode> twoVector(String op, TwoVectorCheck check) {
        List<DynamicNode> all = new ArrayList<>();
        for (Prec p : Prec.values()) {
            List<DynamicNode> tests = new ArrayList<>();
            for (long n : SIZES) {
                List<long[]> pairs = new ArrayList<>();
                if (n == BIG) {
                    pairs.addAll(List.of(BIG_PAIRS));
                } else {
                    for (long incx : INCS) {
                        for (long incy : INCS) {
                            pairs.add(new long[] {incx, incy});
                        }
                    }
                }
                for (long[] inc : pairs) {
                    if (inc[0] == 1 && inc[1] == 1) {
                        // x and y equally misaligned (16-byte vector path for both) and differently
                        // misaligned (x element by element): offsets in elements, so 4 and 24
                        // bytes (float) or 8 and 48 bytes (double) from a 256-byte boundary.
                        tests.add(twoCase(p, op, n, 1, 3, 1, 3, check));
                        tests.add(twoCase(p, op, n, 1, 1, 1, 6, check));
                    }
                    tests.add(twoCase(p, op, n, inc[0], inc[1], check));
                }
            }
            all.add(DynamicContainer.dynamicContainer(opName(p, op), tests));
        }
        return all;
    }

    private static String opName(Prec p, String op) {
        return op.equals("amax") ? "i" + p.prefix() + "amax" : p.prefix() + op;
    }

    /** Elements of random lead: up to a bit more than 256 bytes, to reach every head length. */
    private static int randomLead(Prec p, String base) {
        return random(base + "/lead").nextInt(256 / p.bytes + 16);
    }

    private static DynamicNode oneCase(Prec p, String op, long n, long inc, OneVectorCheck check) {
        String base = opName(p, op) + " n=" + n + " incx=" + inc;
        return oneCase(p, op, n, inc, randomLead(p, base), check);
    }

    private static DynamicNode oneCase(Prec p, String op, long n, long inc, int lead, OneVectorCheck check) {
        String name = opName(p, op) + " n=" + n + " incx=" + inc + " offset=" + lead;
        return DynamicTest.dynamicTest(name, () -> check.run(p, n, inc, lead, name));
    }

    private static DynamicNode twoCase(Prec p, String op, long n, long incx, long incy, TwoVectorCheck check) {
        String base = opName(p, op) + " n=" + n + " incx=" + incx + " incy=" + incy;
        return twoCase(p, op, n, incx, randomLead(p, base + "/x"), incy, randomLead(p, base + "/y"), check);
    }

    private static DynamicNode twoCase(Prec p, String op, long n, long incx, int leadX, long incy, int leadY, TwoVectorCheck check) {
        String name = opName(p, op) + " n=" + n + " incx=" + incx + " incy=" + incy + " offsets=" + leadX + "," + leadY;
        return DynamicTest.dynamicTest(name, () -> check.run(p, n, incx, leadX, incy, leadY, name));
    }

    // ------------------------------------------------------------------------------ checks

    /** A random alpha of either sign, |alpha| in [0.5, 1.5), rounded to the precision. */
    private static double alpha(Prec p, SplittableRandom rnd) {
        double a = p.round(0.5 + rnd.nextDouble());
        return rnd.nextBoolean() ? a : -a;
    }

    /**
     * scal: bit-exact. Tolerance 0: the device does one IEEE multiplication per element in the
     * data's precision, and so does the reference (for float, the double product of two floats is
     * exact and is rounded once to float); gaps untouched.
     */
    static void checkScal(Prec p, long n, long inc, int lead, String name) {
        SplittableRandom rnd = random(name);
        Vec x = Vec.random(p, n, inc, lead, rnd);
        double alpha = alpha(p, rnd);
        double[] expected = x.copyOfAll();
        BlasReference.scal(p.single(), n, alpha, expected, lead, inc);
        try (DeviceBuffer bx = x.upload(h)) {
            p.scal(h, n, alpha, x.view(bx), inc);
            assertSameArray(expected, x.download(bx), p.prefix() + "scal(alpha=" + alpha + ") x", name);
        }
    }

    /**
     * axpy: y within {@link BlasReference#axpyAccepts} (float: 1 ulp of the fused result, because
     * the reference (float)(alpha*x + y) evaluated in double may differ from the device's single
     * fmaf rounding by double rounding; double: exactly fused or exactly twice rounded); x and every
     * non-vector element bit-exact.
     */
    static void checkAxpy(Prec p, long n, long incx, int leadX, long incy, int leadY, String name) {
        SplittableRandom rnd = random(name);
        Vec x = Vec.random(p, n, incx, leadX, rnd);
        Vec y = Vec.random(p, n, incy, leadY, rnd);
        double alpha = alpha(p, rnd);
        try (DeviceBuffer bx = x.upload(h); DeviceBuffer by = y.upload(h)) {
            p.axpy(h, n, alpha, x.view(bx), incx, y.view(by), incy);
            double[] gotY = y.download(by);
            assertSameArray(x.all, x.download(bx), p.prefix() + "axpy x (read only)", name);
            checkAxpyResult(p, n, alpha, x, y, gotY, name);
        }
    }

    static void checkAxpyResult(Prec p, long n, double alpha, Vec x, Vec y, double[] gotY, String name) {
        boolean[] isElement = new boolean[y.all.length];
        for (long i = 0; i < n; i++) {
            int ky = y.at(i);
            isElement[ky] = true;
            double xi = x.all[x.at(i)];
            if (!BlasReference.axpyAccepts(p.single(), alpha, xi, y.all[ky], gotY[ky])) {
                throw new AssertionError(p.prefix() + "axpy: y element " + i + " (buffer element " + ky + ") is " + gotY[ky] + ", expected "
                        + alpha + " * " + xi + " + " + y.all[ky] + " = " + (p.single() ? (double) (float) (alpha * xi + y.all[ky]) : Math.fma(alpha, xi, y.all[ky]))
                        + " (float: within 1 ulp of the fused result; double: fused or twice rounded)" + where(name));
            }
        }
        for (int k = 0; k < isElement.length; k++) {
            if (!isElement[k] && !BlasReference.sameValue(y.all[k], gotY[k])) {
                throw new AssertionError(p.prefix() + "axpy: buffer element " + k + " of y is not part of the vector but changed from " + y.all[k]
                        + " to " + gotY[k] + where(name));
            }
        }
    }

    /** copy: bit-exact y (tolerance 0: values are moved, not computed); x unchanged. */
    static void checkCopy(Prec p, long n, long incx, int leadX, long incy, int leadY, String name) {
        SplittableRandom rnd = random(name);
        Vec x = Vec.random(p, n, incx, leadX, rnd);
        Vec y = Vec.random(p, n, incy, leadY, rnd);
        double[] expectedY = y.copyOfAll();
        BlasReference.copy(n, x.all, leadX, incx, expectedY, leadY, incy);
        try (DeviceBuffer bx = x.upload(h); DeviceBuffer by = y.upload(h)) {
            p.copy(h, n, x.view(bx), incx, y.view(by), incy);
            assertSameArray(expectedY, y.download(by), p.prefix() + "copy y", name);
            assertSameArray(x.all, x.download(bx), p.prefix() + "copy x (read only)", name);
        }
    }

    /** swap: bit-exact x and y (tolerance 0: values are moved, not computed). */
    static void checkSwap(Prec p, long n, long incx, int leadX, long incy, int leadY, String name) {
        SplittableRandom rnd = random(name);
        Vec x = Vec.random(p, n, incx, leadX, rnd);
        Vec y = Vec.random(p, n, incy, leadY, rnd);
        double[] expectedX = x.copyOfAll();
        double[] expectedY = y.copyOfAll();
        BlasReference.swap(n, expectedX, leadX, incx, expectedY, leadY, incy);
        try (DeviceBuffer bx = x.upload(h); DeviceBuffer by = y.upload(h)) {
            p.swap(h, n, x.view(bx), incx, y.view(by), incy);
            assertSameArray(expectedX, x.download(bx), p.prefix() + "swap x", name);
            assertSameArray(expectedY, y.download(by), p.prefix() + "swap y", name);
        }
    }

    /**
     * A reduction, host- and device-result variants, against the reference with the tolerance of
     * {@link BlasReference} (iamax exact); the device result must equal the host result bit for
     * bit; empty reductions (n <= 0, or incx <= 0 for nrm2/asum/iamax) must give exactly +0 and the
     * device variant must write +0; the inputs must be unchanged.
     */
    static void checkReduction(Reduction r, Prec p, long n, long incx, int leadX, long incy, int leadY, String name) {
        SplittableRandom rnd = random(name);
        Vec x = Vec.random(p, n, incx, leadX, rnd);
        Vec y = r == Reduction.DOT ? Vec.random(p, n, incy, leadY, rnd) : null;
        String what = r.name(p) + "(n=" + n + ", incx=" + incx + (y != null ? ", incy=" + incy : "") + ")";
        double ref;
        double tol;
        switch (r) {
            case DOT:
                ref = BlasReference.dot(n, x.all, leadX, incx, y.all, leadY, incy);
                // float: 4*2^-24*|ref| (float result of a double sum) + 2n*2^-53*sum|x_i*y_i|
                // (double summation bound); double: 2(n+1)*2^-53*sum|x_i*y_i|; see sumTolerance
                tol = BlasReference.sumTolerance(p.single(), n, ref, BlasReference.absDot(n, x.all, leadX, incx, y.all, leadY, incy));
                break;
            case NRM2:
                ref = BlasReference.nrm2(n, x.all, leadX, incx);
                // float: (4*2^-24 + (n+4)*2^-53)*|ref|; double (Blue): (n+16)*2^-53*|ref|; see nrm2Tolerance
                tol = BlasReference.nrm2Tolerance(p.single(), n, ref);
                break;
            case ASUM:
                ref = BlasReference.asum(n, x.all, leadX, incx);
                // as dot with sum|x_i| = ref (no cancellation): a few float ulps, or n*2^-53 relative
                tol = BlasReference.sumTolerance(p.single(), n, ref, ref);
                break;
            default:
                ref = BlasReference.iamax(n, x.all, leadX, incx);
                tol = 0; // an index: exact
                break;
        }
        boolean empty = n <= 0 || (r != Reduction.DOT && incx <= 0);
        // Both variants, bit-identical, inputs unchanged (BlasTestSupport.reduce).
        double got = BlasTestSupport.reduce(h, r, x, y, name);
        if (empty) {
            checkZero(what, got, name);
        } else if (r == Reduction.IAMAX) {
            if (got != ref) {
                throw new AssertionError(what + " = " + (long) got + ", expected " + (long) ref + where(name));
            }
        } else {
            assertClose(what, ref, got, tol, name);
        }
    }

    private static void checkZero(String what, double got, String name) {
        if (Double.doubleToRawLongBits(got) != 0) {
            throw new AssertionError(what + " = " + got + " (bits 0x" + Long.toHexString(Double.doubleToRawLongBits(got))
                    + "), expected +0: reference BLAS returns 0 for n <= 0 (and for incx <= 0 in nrm2, asum, iamax)" + where(name));
        }
    }
}
