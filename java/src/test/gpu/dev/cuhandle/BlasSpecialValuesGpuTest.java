package dev.cuhandle;

import static dev.cuhandle.BlasTestSupport.assertClose;
import static dev.cuhandle.BlasTestSupport.assertSameArray;
import static dev.cuhandle.BlasTestSupport.random;
import static dev.cuhandle.BlasTestSupport.where;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cuhandle.BlasTestSupport.Prec;
import dev.cuhandle.BlasTestSupport.Reduction;
import dev.cuhandle.BlasTestSupport.ResultSlot;
import dev.cuhandle.BlasTestSupport.Vec;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * NaN, Inf, signed zeros, extreme magnitudes and empty vectors, as reference BLAS handles them:
 * nrm2 with an Inf is Inf and with a NaN is NaN; asum and dot propagate NaN (and Inf); iamax
 * returns 1 if x_1 is NaN, otherwise never picks a NaN, and picks the smallest index among equal
 * magnitudes; nrm2 neither overflows nor underflows for huge, tiny and subnormal data; axpy with
 * alpha = 0 leaves y untouched even when x holds NaN; scal multiplies even by 0; copy and swap move
 * bits (NaN payloads, -0, subnormals); n <= 0 does nothing, reductions give 0 and the
 * device-result variant writes 0; incx <= 0 makes scal, nrm2, asum and iamax do nothing.
 */
@GpuTest
class BlasSpecialValuesGpuTest {
    private static final long BIG = BlasGpuTest.BIG;
    private static final double NAN = Double.NaN;
    private static final double INF = Double.POSITIVE_INFINITY;

    private static Handle h;

    @BeforeAll
    static void open() {
        BlasTestSupport.announceSeed(BlasSpecialValuesGpuTest.class.getSimpleName());
        h = Handle.create(0);
    }

    @AfterAll
    static void close() {
        if (h != null) {
            h.close();
        }
    }

    /** Random elements with the given values planted at the given element positions. */
    private static Vec planted(Prec p, long n, long inc, String name, long[] positions, double[] values) {
        SplittableRandom rnd = random(name);
        Vec x = Vec.random(p, n, inc, rnd.nextInt(8), rnd);
        for (int k = 0; k < positions.length; k++) {
            x.all[x.at(positions[k])] = p.round(values[k]);
        }
        return x;
    }

    // ------------------------------------------------------------------------------ nrm2, asum, dot

    @ParameterizedTest
    @EnumSource(Prec.class)
    void nrm2AndAsum_propagateInfAndNaN(Prec p) {
        // {values planted, expected nrm2, expected asum}
        Object[][] cases = {
            {new double[] {INF}, INF, INF},
            {new double[] {-INF}, INF, INF},
            {new double[] {NAN}, NAN, NAN},
            {new double[] {NAN, INF}, NAN, NAN},
            {new double[] {-INF, NAN}, NAN, NAN},
            {new double[] {INF, -INF}, INF, INF},
        };
        for (long n : new long[] {1, 5, 33, BIG}) {
            for (long inc : new long[] {1, 2}) {
                for (int c = 0; c < cases.length; c++) {
                    double[] values = (double[]) cases[c][0];
                    if (values.length > n) {
                        continue;
                    }
                    String name = p.prefix() + "nrm2/asum n=" + n + " incx=" + inc + " case " + c + " " + Arrays.toString(values);
                    long[] positions = distinctPositions(n, values.length, random(name + "/pos"));
                    Vec x = planted(p, n, inc, name, positions, values);
                    double nrm2 = BlasTestSupport.reduce(h, Reduction.NRM2, x, null, name);
                    double asum = BlasTestSupport.reduce(h, Reduction.ASUM, x, null, name);
                    assertTrue(BlasReference.sameValue((double) cases[c][1], nrm2),
                            p.prefix() + "nrm2 = " + nrm2 + ", expected " + cases[c][1] + where(name));
                    assertTrue(BlasReference.sameValue((double) cases[c][2], asum),
                            p.prefix() + "asum = " + asum + ", expected " + cases[c][2] + where(name));
                    // the reference agrees (guards the reference used everywhere else)
                    assertTrue(BlasReference.sameValue(nrm2, BlasReference.nrm2(n, x.all, x.lead, inc)), where(name));
                    assertTrue(BlasReference.sameValue(asum, BlasReference.asum(n, x.all, x.lead, inc)), where(name));
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Prec.class)
    void dot_propagatesNaNAndInf(Prec p) {
        for (long n : new long[] {1, 33, BIG}) {
            for (long[] inc : new long[][] {{1, 1}, {2, -1}}) {
                String base = p.prefix() + "dot n=" + n + " incx=" + inc[0] + " incy=" + inc[1];
                SplittableRandom rnd = random(base);
                long at = rnd.nextLong(n);
                long other = n > 1 ? (at + 1 + rnd.nextLong(n - 1)) % n : at;

                // NaN in x -> NaN
                check(p, base + " NaN in x", n, inc, new long[] {at}, new double[] {NAN}, new long[0], new double[0], NAN);
                // NaN in y -> NaN
                check(p, base + " NaN in y", n, inc, new long[0], new double[0], new long[] {at}, new double[] {NAN}, NAN);
                // Inf * (y = 2) -> +Inf, -Inf * 2 -> -Inf
                check(p, base + " Inf", n, inc, new long[] {at}, new double[] {INF}, new long[] {at}, new double[] {2}, INF);
                check(p, base + " -Inf", n, inc, new long[] {at}, new double[] {-INF}, new long[] {at}, new double[] {2}, -INF);
                // Inf * 0 -> NaN
                check(p, base + " Inf*0", n, inc, new long[] {at}, new double[] {INF}, new long[] {at}, new double[] {0}, NAN);
                if (n > 1) {
                    // Inf + (-Inf) -> NaN
                    check(p, base + " Inf-Inf", n, inc, new long[] {at, other}, new double[] {INF, INF}, new long[] {at, other}, new double[] {1, -1},
                            NAN);
                }
            }
        }
    }

    private static void check(Prec p, String name, long n, long[] inc, long[] xAt, double[] xValues, long[] yAt, double[] yValues, double expected) {
        Vec x = planted(p, n, inc[0], name + "/x", xAt, xValues);
        Vec y = planted(p, n, inc[1], name + "/y", yAt, yValues);
        double got = BlasTestSupport.reduce(h, Reduction.DOT, x, y, name);
        assertTrue(BlasReference.sameValue(expected, got), p.prefix() + "dot = " + got + ", expected " + expected + where(name));
        assertTrue(BlasReference.sameValue(expected, BlasReference.dot(n, x.all, x.lead, inc[0], y.all, y.lead, inc[1])), "reference" + where(name));
    }

    /**
     * nrm2 of huge, tiny and subnormal data, and of mixtures that take every branch of Blue's
     * algorithm (small only, medium only, big only, small + medium, big + medium, all three):
     * finite, non-zero, and within {@link BlasReference#nrm2Tolerance} of the scaled reference.
     */
    @ParameterizedTest
    @EnumSource(Prec.class)
    void nrm2_hugeTinyAndSubnormal_noOverflowOrUnderflow(Prec p) {
        double[][] scaleSets = p.single()
                ? new double[][] {
                    {1e30}, {1e-30}, {1e-40}, {1e-44}, {1e19}, {1e35}, {1e-20, 1}, {1e20, 1}, {1e30, 1e-30}, {1e30, 1, 1e-40},
                }
                : new double[][] {
                    {1e300}, {1e-300}, {1e-310}, {1e150}, {1e-160}, {1e-300, 1}, {1e200, 1}, {1e300, 1e-300}, {1e300, 1, 1e-310},
                    {0x1p-512, 0x1p-510}, {0x1p486, 0x1p487},
                };
        for (double[] scales : scaleSets) {
            for (long n : new long[] {1, 33, BIG}) {
                for (long inc : new long[] {1, 2}) {
                    String name = p.prefix() + "nrm2 scales " + Arrays.toString(scales) + " n=" + n + " incx=" + inc;
                    SplittableRandom rnd = random(name);
                    Vec x = Vec.random(p, n, inc, rnd.nextInt(8), rnd);
                    for (long i = 0; i < n; i++) {
                        // element i gets scale i mod k (so small n still mixes), times [-1, 1) with
                        // magnitude at least 1/4 (no accidental zero)
                        double u = (0.25 + 0.75 * rnd.nextDouble()) * (rnd.nextBoolean() ? 1 : -1);
                        x.all[x.at(i)] = p.round(u * scales[(int) (i % scales.length)]);
                    }
                    double ref = BlasReference.nrm2(n, x.all, x.lead, inc);
                    double got = BlasTestSupport.reduce(h, Reduction.NRM2, x, null, name);
                    double maxRepresentable = p.single() ? Float.MAX_VALUE : Double.MAX_VALUE;
                    assertTrue(ref > 0 && ref <= maxRepresentable, "the test data must have a representable, non-zero norm: " + ref + where(name));
                    assertTrue(got > 0 && got <= maxRepresentable, p.prefix() + "nrm2 overflowed or underflowed: " + got + ", expected " + ref + where(name));
                    assertClose(p.prefix() + "nrm2", ref, got, BlasReference.nrm2Tolerance(p.single(), n, ref), name);
                }
            }
        }
    }

    // ------------------------------------------------------------------------------ iamax

    @ParameterizedTest
    @EnumSource(Prec.class)
    void iamax_nanTiesAndInf_likeReferenceBlas(Prec p) {
        // {elements, expected 1-based index}
        Object[][] cases = {
            {new double[] {NAN, 1, 5, INF}, 1L},
            {new double[] {NAN}, 1L},
            {new double[] {NAN, NAN, NAN}, 1L},
            {new double[] {1, NAN, 2, NAN}, 3L},
            {new double[] {0.5, NAN, NAN, NAN}, 1L},
            {new double[] {3, 1, NAN, 3}, 1L},
            {new double[] {1, -INF, NAN, INF}, 2L},
            {new double[] {1, -3, 3, -3}, 2L},
            {new double[] {-2, 2}, 1L},
            {new double[] {0, -0.0, 0}, 1L},
            {new double[] {-0.0, 0, 1e-45}, 3L}, // 1e-45: the smallest float subnormal
            {new double[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, -33}, 33L},
        };
        for (long inc : new long[] {1, 2, 3}) {
            for (int c = 0; c < cases.length; c++) {
                double[] values = (double[]) cases[c][0];
                long expected = (long) cases[c][1];
                String name = "i" + p.prefix() + "amax incx=" + inc + " " + Arrays.toString(values);
                assertIamax(p, name, inc, Vec.of(p, inc, c % 5, random(name), values), expected);
            }
        }
    }

    /**
     * Large vectors: equal maxima far apart (different blocks and threads) give the first; NaNs
     * before it change nothing; a NaN first element gives 1; a maximum in the last element or in
     * the first is found.
     */
    @ParameterizedTest
    @EnumSource(Prec.class)
    void iamax_largeVectors_firstOfEqualMaxima(Prec p) {
        for (long inc : new long[] {1, 2}) {
            String base = "i" + p.prefix() + "amax n=" + BIG + " incx=" + inc;
            SplittableRandom rnd = random(base);
            long p1 = 2 + rnd.nextLong(BIG / 3 - 2);
            long p2 = BIG / 3 + rnd.nextLong(BIG / 3);
            long p3 = 2 * (BIG / 3) + rnd.nextLong(BIG / 3);
            long nanBefore = 1 + rnd.nextLong(p1 - 1);
            long nanAfter = p1 + 1 + rnd.nextLong(BIG - p1 - 1);
            // ties (-100, 100, -100) with NaNs around
            expectIamax(p, base + " ties", inc, new long[] {p3, p2, p1, nanBefore, nanAfter}, new double[] {-100, 100, -100, NAN, NAN}, p1 + 1);
            // a NaN first element wins
            expectIamax(p, base + " NaN first", inc, new long[] {0, p2}, new double[] {NAN, 100}, 1);
            // the maximum in the last element
            expectIamax(p, base + " last", inc, new long[] {BIG - 1, p1}, new double[] {101, NAN}, BIG);
            // the maximum in the first element, equal ones later
            expectIamax(p, base + " first", inc, new long[] {0, p2, BIG - 1}, new double[] {-100, 100, 100}, 1);
            // an infinity beats everything, the first of two
            expectIamax(p, base + " inf", inc, new long[] {p2, p3, p1}, new double[] {-INF, INF, NAN}, p2 + 1);
            // a plateau: every element from p1 on has the largest magnitude, so each thread (and
            // each 16-byte vector) sees many equal maxima and must keep its first
            long[] plateau = new long[(int) (BIG - p1)];
            double[] plateauValues = new double[plateau.length];
            for (int k = 0; k < plateau.length; k++) {
                plateau[k] = p1 + k;
                plateauValues[k] = (k & 1) == 0 ? 100 : -100;
            }
            expectIamax(p, base + " plateau", inc, plateau, plateauValues, p1 + 1);
            // every element of equal magnitude: 1
            long[] every = new long[(int) BIG];
            double[] everyValues = new double[every.length];
            for (int k = 0; k < every.length; k++) {
                every[k] = k;
                everyValues[k] = k % 3 == 0 ? -7 : 7;
            }
            expectIamax(p, base + " all equal", inc, every, everyValues, 1);
        }
    }

    private static void expectIamax(Prec p, String name, long inc, long[] positions, double[] values, long expected) {
        assertIamax(p, name, inc, planted(p, BIG, inc, name, positions, values), expected);
    }

    /** The reference and the device result agree that iamax of {@code x} is {@code expected}. */
    private static void assertIamax(Prec p, String name, long inc, Vec x, long expected) {
        assertEquals(expected, BlasReference.iamax(x.n, x.all, x.lead, inc), "reference" + where(name));
        double got = BlasTestSupport.reduce(h, Reduction.IAMAX, x, null, name);
        assertEquals(expected, (long) got, "i" + p.prefix() + "amax" + where(name));
    }

    // ------------------------------------------------------------------------------ axpy, scal

    /** alpha = 0 (and -0): y bit-identical even though x is all NaN and Inf (reference BLAS returns first). */
    @ParameterizedTest
    @EnumSource(Prec.class)
    void axpy_alphaZero_leavesYUntouchedEvenWithNaNInX(Prec p) {
        for (double alpha : new double[] {0.0, -0.0}) {
            for (long n : new long[] {1, 33, BIG}) {
                for (long[] inc : new long[][] {{1, 1}, {2, -1}, {-3, 2}, {0, 1}}) {
                    String name = p.prefix() + "axpy alpha=" + alpha + " n=" + n + " incx=" + inc[0] + " incy=" + inc[1];
                    SplittableRandom rnd = random(name);
                    Vec x = Vec.random(p, n, inc[0], rnd.nextInt(8), rnd);
                    double[] specials = {NAN, INF, -INF};
                    for (long i = 0; i < n; i++) {
                        x.all[x.at(i)] = specials[(int) (i % 3)];
                    }
                    Vec y = Vec.random(p, n, inc[1], rnd.nextInt(8), rnd);
                    y.all[y.at(n / 2)] = NAN; // stays NaN, bit for bit
                    try (DeviceBuffer bx = x.upload(h); DeviceBuffer by = y.upload(h)) {
                        p.axpy(h, n, alpha, x.view(bx), inc[0], y.view(by), inc[1]);
                        assertSameArray(y.all, y.download(by), p.prefix() + "axpy with alpha " + alpha + ": y", name);
                        assertSameArray(x.all, x.download(bx), p.prefix() + "axpy x", name);
                    }
                }
            }
        }
    }

    /** alpha = 0 still multiplies (reference BLAS): NaN and Inf become NaN, signs of zero follow IEEE. */
    @ParameterizedTest
    @EnumSource(Prec.class)
    void scal_alphaZero_multipliesLikeReferenceBlas(Prec p) {
        double[] values = {NAN, INF, -INF, 1, -1, 0.0, -0.0, 3.5, -1e-30};
        for (double alpha : new double[] {0.0, -0.0}) {
            for (long inc : new long[] {1, 2}) {
                String name = p.prefix() + "scal alpha=" + alpha + " incx=" + inc;
                Vec x = Vec.of(p, inc, 3, random(name), values);
                double[] expected = x.copyOfAll();
                for (int i = 0; i < values.length; i++) {
                    expected[x.at(i)] = p.round(alpha * expected[x.at(i)]);
                }
                try (DeviceBuffer bx = x.upload(h)) {
                    p.scal(h, x.n, alpha, x.view(bx), inc);
                    double[] got = x.download(bx);
                    assertSameArray(expected, got, p.prefix() + "scal by " + alpha, name);
                    assertTrue(Double.isNaN(got[x.at(1)]) && Double.isNaN(got[x.at(2)]), "0 * Inf must be NaN" + where(name));
                }
            }
        }
    }

    // ------------------------------------------------------------------------------ copy, swap bits

    /** copy and swap move bit patterns unchanged: NaN payloads (quiet and signalling), -0, subnormals, Inf. */
    @Test
    void copyAndSwap_moveBitsExactly() {
        String name = "copy/swap bits";
        SplittableRandom rnd = random(name);
        int[] fbits = {0x7fc12345, 0xffc00001, 0x7f800001, 0xff812345, 0x80000000, 0x00000001, 0x807fffff, 0x7f800000, 0xff800000, 0x3f800000};
        long[] dbits = {0x7ff8000000012345L, 0xfff8000000000001L, 0x7ff0000000000001L, 0xfff0123456789abcL, 0x8000000000000000L, 0x1L,
            0x800fffffffffffffL, 0x7ff0000000000000L, 0xfff0000000000000L, 0x3ff0000000000000L};
        int n = 37;
        int[] fx = new int[2 * n];
        int[] fy = new int[2 * n];
        long[] dx = new long[2 * n];
        long[] dy = new long[2 * n];
        for (int i = 0; i < 2 * n; i++) {
            fx[i] = fbits[rnd.nextInt(fbits.length)];
            fy[i] = rnd.nextInt();
            dx[i] = dbits[rnd.nextInt(dbits.length)];
            dy[i] = rnd.nextLong();
        }
        // float: x with increment 2, y with increment -1 (y element i at n-1-i)
        int[] expectedFy = fy.clone();
        for (int i = 0; i < n; i++) {
            expectedFy[n - 1 - i] = fx[2 * i];
        }
        try (DeviceBuffer bx = h.upload(fx); DeviceBuffer by = h.upload(fy)) {
            Blas.scopy(h, n, bx, 2, by, -1);
            int[] got = new int[2 * n];
            by.download(got);
            assertArrayEquals(expectedFy, got, "scopy must copy bit patterns exactly" + where(name));
            int[] expectedFx = fx.clone();
            int[] expectedFy2 = got.clone();
            for (int i = 0; i < n; i++) {
                int t = expectedFx[2 * i];
                expectedFx[2 * i] = expectedFy2[n - 1 - i];
                expectedFy2[n - 1 - i] = t;
            }
            Blas.sswap(h, n, bx, 2, by, -1);
            int[] gotX = new int[2 * n];
            bx.download(gotX);
            by.download(got);
            assertArrayEquals(expectedFx, gotX, "sswap x bits" + where(name));
            assertArrayEquals(expectedFy2, got, "sswap y bits" + where(name));
        }
        // double: unit stride, y at an odd element offset
        long[] expectedDy = dy.clone();
        System.arraycopy(dx, 0, expectedDy, 1, n);
        try (DeviceBuffer bx = h.upload(dx); DeviceBuffer by = h.upload(dy)) {
            Blas.dcopy(h, n, bx, 1, by.slice(8, 8L * n), 1);
            long[] got = new long[2 * n];
            by.download(got);
            assertArrayEquals(expectedDy, got, "dcopy must copy bit patterns exactly" + where(name));
            // swap x[0..n) with y[n..2n)
            long[] expectedDx = dx.clone();
            long[] expectedDy2 = got.clone();
            for (int i = 0; i < n; i++) {
                expectedDx[i] = got[n + i];
                expectedDy2[n + i] = dx[i];
            }
            Blas.dswap(h, n, bx, 1, by.slice(8L * n, 8L * n), 1);
            long[] gotX = new long[2 * n];
            bx.download(gotX);
            by.download(got);
            assertArrayEquals(expectedDx, gotX, "dswap x bits" + where(name));
            assertArrayEquals(expectedDy2, got, "dswap y bits" + where(name));
        }
    }

    // ------------------------------------------------------------------------------ empty

    /** n <= 0: nothing changes, reductions give 0, device-result variants write +0. */
    @ParameterizedTest
    @EnumSource(Prec.class)
    void nonPositiveN_doesNothingAndReducesToZero(Prec p) {
        for (long n : new long[] {0, -1, -1000, Long.MIN_VALUE}) {
            for (long[] inc : new long[][] {{1, 1}, {-2, 3}}) {
                String name = p.prefix() + " n=" + n + " incx=" + inc[0] + " incy=" + inc[1];
                SplittableRandom rnd = random(name);
                Vec x = Vec.random(p, 8, 1, 0, rnd);
                Vec y = Vec.random(p, 8, 1, 0, rnd);
                try (DeviceBuffer bx = x.upload(h); DeviceBuffer by = y.upload(h)) {
                    p.scal(h, n, 2.0, bx, inc[0]);
                    p.axpy(h, n, 2.0, bx, inc[0], by, inc[1]);
                    p.copy(h, n, bx, inc[0], by, inc[1]);
                    p.swap(h, n, bx, inc[0], by, inc[1]);
                    assertSameArray(x.all, x.download(bx), p.prefix() + "scal/axpy/copy/swap with n=" + n + ": x", name);
                    assertSameArray(y.all, y.download(by), p.prefix() + "scal/axpy/copy/swap with n=" + n + ": y", name);
                    for (Reduction r : Reduction.values()) {
                        expectZero(p, r, n, bx, inc[0], by, inc[1], name);
                    }
                }
            }
        }
    }

    /** incx <= 0: scal changes nothing; nrm2, asum and iamax give 0 (device variants write +0). */
    @ParameterizedTest
    @EnumSource(Prec.class)
    void nonPositiveIncx_singleVectorOpsDoNothing(Prec p) {
        for (long inc : new long[] {0, -1, -3, Long.MIN_VALUE}) {
            for (long n : new long[] {1, 5}) {
                String name = p.prefix() + " n=" + n + " incx=" + inc;
                Vec x = Vec.random(p, 16, 1, 0, random(name));
                try (DeviceBuffer bx = x.upload(h)) {
                    p.scal(h, n, 3.0, bx, inc);
                    assertSameArray(x.all, x.download(bx), p.prefix() + "scal with incx=" + inc, name);
                    for (Reduction r : new Reduction[] {Reduction.NRM2, Reduction.ASUM, Reduction.IAMAX}) {
                        expectZero(p, r, n, bx, inc, null, 0, name);
                    }
                }
            }
        }
    }

    private static void expectZero(Prec p, Reduction r, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy, String name) {
        String what = r.name(p) + "(n=" + n + ", incx=" + incx + ")";
        double host = r.host(p, h, n, x, incx, y, incy);
        assertEquals(0L, Double.doubleToRawLongBits(host), what + " must return +0 but returned " + host + where(name));
        try (ResultSlot slot = new ResultSlot(h, p.resultBytes(r == Reduction.IAMAX))) {
            r.deviceCall(p, h, n, x, incx, y, incy, slot.view);
            long bits = r == Reduction.IAMAX ? slot.readLong(name) : slot.readBits(p, name);
            assertEquals(0L, bits, what + " with a device result must write 0 over the old contents (bits 0x" + Long.toHexString(bits) + ")" + where(name));
        }
    }

    // ------------------------------------------------------------------------------ helpers

    /** k distinct element positions in [0, n). */
    private static long[] distinctPositions(long n, int k, SplittableRandom rnd) {
        long[] out = new long[k];
        for (int i = 0; i < k; i++) {
            long candidate;
            boolean fresh;
            do {
                candidate = rnd.nextLong(n);
                fresh = true;
                for (int j = 0; j < i; j++) {
                    fresh &= out[j] != candidate;
                }
            } while (!fresh);
            out[i] = candidate;
        }
        return out;
    }
}
