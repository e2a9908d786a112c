package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The CPU reference of the BLAS GPU tests checked against hand-computed reference-BLAS results
 * (no GPU needed): if the reference were wrong, the GPU tests would test the wrong thing.
 */
class BlasReferenceTest {
    private static final double NAN = Double.NaN;
    private static final double INF = Double.POSITIVE_INFINITY;

    @Test
    void indexing_followsReferenceBlas() {
        assertEquals(0, BlasReference.span(0, 3));
        assertEquals(0, BlasReference.span(-4, 3));
        assertEquals(1, BlasReference.span(1, -7));
        assertEquals(10, BlasReference.span(4, -3));
        assertEquals(1, BlasReference.span(4, 0));
        // inc = -3, n = 4: element 0 is the last in memory
        assertEquals(9 + 2, BlasReference.index(2, 0, 4, -3));
        assertEquals(0 + 2, BlasReference.index(2, 3, 4, -3));
        assertEquals(6, BlasReference.index(0, 3, 4, 2));
        assertEquals(5, BlasReference.index(5, 3, 4, 0));
    }

    @Test
    void elementwise_withNegativeIncrements() {
        double[] x = {1, 2, 3, 4, 5};
        BlasReference.scal(false, 3, 2, x, 0, 2);
        assertArrayEquals(new double[] {2, 2, 6, 4, 10}, x);
        BlasReference.scal(false, 3, 2, x, 0, -1); // incx <= 0: nothing
        assertArrayEquals(new double[] {2, 2, 6, 4, 10}, x);

        double[] a = {1, 2, 3};
        double[] y = {10, 20, 30, 40, 50};
        // y element i at (3-1-i)*2: y[4] += 2*a[0], y[2] += 2*a[1], y[0] += 2*a[2]
        BlasReference.axpy(false, 3, 2, a, 0, 1, y, 0, -2);
        assertArrayEquals(new double[] {16, 20, 34, 40, 52}, y);
        BlasReference.axpy(false, 3, 0, new double[] {NAN, NAN, NAN}, 0, 1, y, 0, 1); // alpha = 0: untouched
        assertArrayEquals(new double[] {16, 20, 34, 40, 52}, y);

        double[] c = new double[4];
        BlasReference.copy(4, new double[] {7}, 0, 0, c, 0, 1); // incx = 0 broadcasts
        assertArrayEquals(new double[] {7, 7, 7, 7}, c);
        double[] s1 = {1, 2, 3};
        double[] s2 = {4, 5, 6};
        BlasReference.swap(3, s1, 0, -1, s2, 0, 1);
        assertArrayEquals(new double[] {6, 5, 4}, s1);
        assertArrayEquals(new double[] {3, 2, 1}, s2);
    }

    @Test
    void scal_single_roundsLikeFloat() {
        float a = 1.1f;
        float v = 3.3f;
        double[] x = {v};
        BlasReference.scal(true, 1, a, x, 0, 1);
        assertEquals((double) (a * v), x[0]);
    }

    @Test
    void axpyAccepts_fusedWithinOneUlp() {
        float a = 1.1f;
        float x = 3.3f;
        float y = -3.63f;
        float fused = Math.fma(a, x, y);
        assertTrue(BlasReference.axpyAccepts(true, a, x, y, fused));
        assertTrue(BlasReference.axpyAccepts(true, a, x, y, Math.nextUp(fused)));
        assertFalse(BlasReference.axpyAccepts(true, a, x, y, Math.nextUp(Math.nextUp(Math.nextUp(fused)))));
        double da = 0.1;
        double dx = 3.0;
        double dy = -0.3;
        assertTrue(BlasReference.axpyAccepts(false, da, dx, dy, Math.fma(da, dx, dy)));
        assertTrue(BlasReference.axpyAccepts(false, da, dx, dy, da * dx + dy));
        assertFalse(BlasReference.axpyAccepts(false, da, dx, dy, Math.nextUp(Math.nextUp(Math.max(Math.fma(da, dx, dy), da * dx + dy)))));
    }

    @Test
    void dot_isNearlyExact_andPropagatesNonFinite() {
        double[] x = {1e16, 1, -1e16};
        double[] ones = {1, 1, 1};
        assertEquals(1.0, BlasReference.dot(3, x, 0, 1, ones, 0, 1)); // a plain double sum gives 0
        assertEquals(2e16 + 1, BlasReference.absDot(3, x, 0, 1, ones, 0, 1), 2);
        // 0.1*0.1 - round(0.1*0.1): the rounding error of the product, which the reference keeps
        double p = 0.1 * 0.1;
        double error = Math.fma(0.1, 0.1, -p);
        assertTrue(error != 0);
        assertEquals(error, BlasReference.dot(2, new double[] {0.1, -p}, 0, 1, new double[] {0.1, 1}, 0, 1));
        // x with increment -1 is read backwards: 3*4 + 2*5 + 1*6
        assertEquals(28.0, BlasReference.dot(3, new double[] {1, 2, 3}, 0, -1, new double[] {4, 5, 6}, 0, 1));
        assertTrue(Double.isNaN(BlasReference.dot(2, new double[] {NAN, 1}, 0, 1, ones, 0, 1)));
        assertEquals(INF, BlasReference.dot(2, new double[] {INF, 1}, 0, 1, ones, 0, 1));
        assertTrue(Double.isNaN(BlasReference.dot(2, new double[] {INF, -INF}, 0, 1, ones, 0, 1)));
        assertTrue(Double.isNaN(BlasReference.dot(1, new double[] {INF}, 0, 1, new double[] {0}, 0, 1)));
        assertEquals(0.0, BlasReference.dot(0, x, 0, 1, ones, 0, 1));
    }

    @Test
    void asumAndNrm2() {
        assertEquals(6.0, BlasReference.asum(3, new double[] {1, -2, 3}, 0, 1));
        assertEquals(0.0, BlasReference.asum(3, new double[] {1, -2, 3}, 0, -1));
        assertEquals(5.0, BlasReference.nrm2(2, new double[] {3, -4}, 0, 1));
        assertEquals(5e300, BlasReference.nrm2(2, new double[] {3e300, 4e300}, 0, 1), 1e286);
        assertEquals(5e-300, BlasReference.nrm2(2, new double[] {3e-300, -4e-300}, 0, 1), 1e-314);
        assertEquals(5e-320, BlasReference.nrm2(2, new double[] {3e-320, 4e-320}, 0, 1), 4 * Double.MIN_VALUE);
        assertEquals(0.0, BlasReference.nrm2(3, new double[] {0, 0, 0}, 0, 1));
        assertEquals(0.0, BlasReference.nrm2(2, new double[] {3, 4}, 0, 0));
        assertEquals(INF, BlasReference.nrm2(2, new double[] {-INF, 4}, 0, 1));
        assertTrue(Double.isNaN(BlasReference.nrm2(3, new double[] {INF, NAN, 1}, 0, 1)));
    }

    @Test
    void iamax_referenceBlasRules() {
        assertEquals(1, BlasReference.iamax(3, new double[] {NAN, 5, INF}, 0, 1));
        assertEquals(3, BlasReference.iamax(4, new double[] {1, NAN, 2, NAN}, 0, 1));
        assertEquals(1, BlasReference.iamax(3, new double[] {0.5, NAN, NAN}, 0, 1));
        assertEquals(2, BlasReference.iamax(4, new double[] {1, -3, 3, -3}, 0, 1));
        assertEquals(3, BlasReference.iamax(3, new double[] {1, 9, 5, 9, 9}, 0, 2)); // elements 1, 5, 9 (gaps ignored)
        assertEquals(2, BlasReference.iamax(3, new double[] {1, 9, -9, 9, 9}, 0, 2)); // elements 1, -9, 9: first of the ties
        assertEquals(0, BlasReference.iamax(0, new double[] {1}, 0, 1));
        assertEquals(0, BlasReference.iamax(2, new double[] {1, 2}, 0, 0));
    }

    @Test
    void tolerances_areTightForFloatAndScaleWithN() {
        // float results: a few float ulps relative, so one missing element among 2^20 (1e-6) is caught
        double ref = 1000;
        assertTrue(BlasReference.sumTolerance(true, 1 << 20, ref, ref) < 1e-6 * ref);
        assertTrue(BlasReference.nrm2Tolerance(true, 1 << 20, ref) < 1e-6 * ref);
        // double results: far below float precision at 2^20 elements
        assertTrue(BlasReference.sumTolerance(false, 1 << 20, ref, ref) < 1e-9 * ref);
        assertTrue(BlasReference.nrm2Tolerance(false, 1 << 20, ref) < 1e-9 * ref);
        assertTrue(BlasReference.close(NAN, NAN, 0));
        assertFalse(BlasReference.close(1, NAN, 1));
        assertFalse(BlasReference.close(INF, Double.MAX_VALUE, INF));
    }
}
