package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.Arrays;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Rule T1 at the largest arrays Java has: {@code Integer.MAX_VALUE - 8} elements of each type
 * (2 GiB of bytes to 16 GiB of doubles) to the device and back, checked element by element against
 * a formula (so no second array is needed), plus a short range at the very end of such an array
 * (offsets near 2^31, byte offsets past 2^32 for 8-byte types). A type runs only where the Java
 * heap and the device have room for it; otherwise the test is skipped saying how much was missing.
 */
@GpuTest
@StandInCapable
class ArrayTransferLargeGpuTest {
    /** The largest array length the JVM allocates everywhere (some reserve a few header words). */
    static final int LENGTH = Integer.MAX_VALUE - 8;
    private static final long SLACK = 256L << 20;

    @ParameterizedTest
    @EnumSource(ArrayTypes.class)
    void theLargestArrayOfEachTypeGoesThereAndBackExactly(ArrayTypes type) {
        long bytes = (long) LENGTH * type.bytes;
        Runtime rt = Runtime.getRuntime();
        System.gc();
        long freeHeap = rt.maxMemory() - (rt.totalMemory() - rt.freeMemory());
        assumeTrue(freeHeap >= bytes + SLACK, type + "[" + LENGTH + "] needs " + mib(bytes + SLACK) + " MiB of free Java heap; there are " + mib(freeHeap)
                + " MiB (-Xmx " + mib(rt.maxMemory()) + " MiB)");
        try (Handle h = Handle.create(0)) {
            long freeDevice = h.freeMemory();
            assumeTrue(freeDevice >= bytes + SLACK, type + "[" + LENGTH + "] needs " + mib(bytes + SLACK) + " MiB of device memory; "
                    + mib(freeDevice) + " MiB are free");
            if (StandIn.active()) { // its device memory is this machine's memory
                long freeRam = ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean()).getFreeMemorySize();
                assumeTrue(freeRam >= bytes + SLACK, type + "[" + LENGTH + "] on the stand-in needs " + mib(bytes + SLACK) + " MiB of free memory for its"
                        + " device side; the machine has " + mib(freeRam) + " MiB free");
            }
            Object array = type.allocate(LENGTH);
            fill(type, array);
            try (DeviceBuffer d = h.allocate(bytes)) {
                type.copyToDevice(h, array, 0, d, LENGTH);
                clear(type, array);
                type.copyToHost(h, d, array, 0, LENGTH);
                check(type, array, 0, LENGTH, "the whole array");

                // The last 1000 elements, to the start of the buffer and back into the array's end.
                int tail = 1000;
                type.copyToDevice(h, array, LENGTH - tail, d, tail);
                clear(type, array);
                type.copyToHost(h, d, array, LENGTH - tail, tail);
                check(type, array, LENGTH - tail, tail, "the last " + tail + " elements");
            }
        }
    }

    private static long mib(long bytes) {
        return bytes >> 20;
    }

    /** Element i's value: its low bits plus a scramble, so that a shifted or repeated range is caught. */
    private static long valueAt(long i) {
        return i * 0x9E3779B97F4A7C15L ^ (i >>> 7);
    }

    /** Writes {@link #valueAt} into every element (one loop per type, so that the JIT keeps it tight). */
    private static void fill(ArrayTypes type, Object array) {
        switch (type) {
            case BYTE: { byte[] a = (byte[]) array; for (int i = 0; i < a.length; i++) a[i] = (byte) valueAt(i); break; }
            case SHORT: { short[] a = (short[]) array; for (int i = 0; i < a.length; i++) a[i] = (short) valueAt(i); break; }
            case CHAR: { char[] a = (char[]) array; for (int i = 0; i < a.length; i++) a[i] = (char) valueAt(i); break; }
            case INT: { int[] a = (int[]) array; for (int i = 0; i < a.length; i++) a[i] = (int) valueAt(i); break; }
            case LONG: { long[] a = (long[]) array; for (int i = 0; i < a.length; i++) a[i] = valueAt(i); break; }
            case FLOAT: { float[] a = (float[]) array; for (int i = 0; i < a.length; i++) a[i] = Float.intBitsToFloat((int) valueAt(i)); break; }
            default: { double[] a = (double[]) array; for (int i = 0; i < a.length; i++) a[i] = Double.longBitsToDouble(valueAt(i)); break; }
        }
    }

    private static void clear(ArrayTypes type, Object array) {
        switch (type) {
            case BYTE: Arrays.fill((byte[]) array, (byte) 0); break;
            case SHORT: Arrays.fill((short[]) array, (short) 0); break;
            case CHAR: Arrays.fill((char[]) array, (char) 0); break;
            case INT: Arrays.fill((int[]) array, 0); break;
            case LONG: Arrays.fill((long[]) array, 0); break;
            case FLOAT: Arrays.fill((float[]) array, 0f); break;
            default: Arrays.fill((double[]) array, 0d); break;
        }
    }

    /** Fails at the first element of {@code [from, from + count)} that is not {@link #valueAt}. */
    private static void check(ArrayTypes type, Object array, int from, int count, String what) {
        int to = from + count;
        int i = from;
        switch (type) {
            case BYTE: { byte[] a = (byte[]) array; while (i < to && a[i] == (byte) valueAt(i)) i++; break; }
            case SHORT: { short[] a = (short[]) array; while (i < to && a[i] == (short) valueAt(i)) i++; break; }
            case CHAR: { char[] a = (char[]) array; while (i < to && a[i] == (char) valueAt(i)) i++; break; }
            case INT: { int[] a = (int[]) array; while (i < to && a[i] == (int) valueAt(i)) i++; break; }
            case LONG: { long[] a = (long[]) array; while (i < to && a[i] == valueAt(i)) i++; break; }
            case FLOAT: { float[] a = (float[]) array; while (i < to && Float.floatToRawIntBits(a[i]) == (int) valueAt(i)) i++; break; }
            default: { double[] a = (double[]) array; while (i < to && Double.doubleToRawLongBits(a[i]) == valueAt(i)) i++; break; }
        }
        if (i < to) {
            fail(type + "[" + LENGTH + "], " + what + ": element " + i + " holds bytes " + java.util.HexFormat.of().formatHex(type.bytesOf(array, i, 1))
                    + " (native order); expected the low " + 8 * type.bytes + " bits of 0x" + Long.toHexString(valueAt(i)));
        }
    }
}
