package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Issue 10 (6): views and copies counted in elements, as BLAS arguments are, so that nobody has
 * to write {@code x.slice(4L * i, 4L * n)}; and sub-ranges of Java arrays copied by the buffer itself.
 */
@GpuTest
@StandInCapable
class BufferElementViewsGpuTest {
    private final Random random = new Random(10);

    @Test
    void elementViewsSeeTheElementsTheyName() {
        float[] f = new float[64];
        double[] d = new double[32];
        for (int i = 0; i < f.length; i++) {
            f[i] = random.nextFloat();
        }
        for (int i = 0; i < d.length; i++) {
            d[i] = random.nextDouble();
        }
        try (Handle h = Handle.create(); DeviceBuffer fb = h.upload(f); DeviceBuffer db = h.upload(d)) {
            DeviceBuffer fv = fb.sliceFloats(5, 10);
            assertEquals(40, fv.byteLength());
            assertEquals(fb.address() + 20, fv.address());
            float[] fo = new float[10];
            fv.download(fo);
            assertArrayEquals(Arrays.copyOfRange(f, 5, 15), fo);
            double[] dout = new double[3];
            db.sliceDoubles(7, 3).download(dout);
            assertArrayEquals(Arrays.copyOfRange(d, 7, 10), dout);
            assertEquals(fb.address() + 8 * 4, fb.sliceInts(8, 1).address());
            assertEquals(db.address() + 8 * 31, db.sliceLongs(31, 1).address());
            assertEquals(fb.address() + 4 * (5 + 2), fv.sliceFloats(2, 3).address(), "a view of a view counts from the view");
        }
    }

    @Test
    void elementRangesOutsideTheBufferAreRefusedInElements() {
        try (Handle h = Handle.create(); DeviceBuffer b = h.allocate(40)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> b.sliceFloats(8, 3));
            assertTrue(e.getMessage().contains("[8, 8+3)") && e.getMessage().contains("10 float elements (40 bytes)"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> b.sliceDoubles(0, 6), "40 bytes hold 5 doubles");
            assertThrows(IllegalArgumentException.class, () -> b.sliceInts(-1, 1));
            assertThrows(IllegalArgumentException.class, () -> b.sliceLongs(0, -1));
            assertThrows(IllegalArgumentException.class, () -> b.sliceFloats(Long.MAX_VALUE, 2), "no overflow");
            assertEquals(0, b.sliceFloats(10, 0).byteLength(), "an empty view at the end is fine");
        }
    }

    @Test
    void subRangesOfArraysGoToAndComeFromTheBuffer() {
        int[] src = new int[20];
        for (int i = 0; i < src.length; i++) {
            src[i] = random.nextInt();
        }
        try (Handle h = Handle.create(); DeviceBuffer b = h.allocate(4 * 8)) {
            b.upload(src, 6, 8);
            int[] dst = new int[12];
            b.download(dst, 3, 8);
            int[] expected = new int[12];
            System.arraycopy(src, 6, expected, 3, 8);
            assertArrayEquals(expected, dst);
            long[] longs = {1, 2, 3, 4};
            try (DeviceBuffer l = h.allocate(16)) {
                l.upload(longs, 2, 2);
                long[] back = new long[2];
                l.download(back, 0, 2);
                assertArrayEquals(new long[] {3, 4}, back);
            }
            byte[] bytes = {9, 8, 7};
            b.sliceInts(7, 1).upload(bytes, 1, 2);
            byte[] bb = new byte[2];
            b.sliceInts(7, 1).download(bb, 0, 2);
            assertArrayEquals(new byte[] {8, 7}, bb);
            assertThrows(IllegalArgumentException.class, () -> b.upload(src, 15, 8), "past the end of the array");
            assertThrows(IllegalArgumentException.class, () -> b.upload(new int[20], 0, 9), "more than the buffer holds");
            assertThrows(IllegalArgumentException.class, () -> b.download(new float[4], -1, 2));
            assertThrows(NullPointerException.class, () -> b.download((double[]) null, 0, 0));
        }
    }
}
