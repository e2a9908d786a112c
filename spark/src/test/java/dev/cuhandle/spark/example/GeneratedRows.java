package dev.cuhandle.spark.example;

/**
 * The nearest-neighbour example's data, made where it is used: value {@code j} of row {@code r} is a
 * function of the seed, {@code r} and {@code j} alone (a SplitMix64 hash of a counter), so each task
 * generates its own rows without reading input or receiving data from the driver, any slice of the
 * rows can be generated on its own, and the CPU job, the GPU job and the tests see the same numbers.
 *
 * <p>Values lie in [-1, 1), multiples of 2<sup>-23</sup> (24 random bits each, exact in a float). Centred
 * values make every query's best rows its own: with values in [0, 1) the rows of largest norm would
 * top every query's list.
 */
final class GeneratedRows {
    /** SplitMix64's increment: consecutive counters land far apart before mixing. */
    private static final long GAMMA = 0x9E3779B97F4A7C15L;
    private static final float STEP = 0x1.0p-23f;

    private GeneratedRows() {}

    /**
     * Writes rows {@code firstRow} to {@code firstRow + rows - 1} of the data set {@code seed}, {@code dim}
     * values each, row after row into {@code dst} from {@code offset}.
     *
     * @throws IllegalArgumentException if {@code dim} is odd (each hash gives two values)
     */
    static void fill(float[] dst, int offset, long firstRow, int rows, int dim, long seed) {
        if (dim % 2 != 0) {
            throw new IllegalArgumentException("dim is " + dim + "; expected an even number");
        }
        long counter = mix(seed) + firstRow * dim * GAMMA;
        int n = rows * dim;
        for (int i = 0; i < n; i += 2) {
            long z = mix(counter + i * GAMMA);
            dst[offset + i] = (int) (z >>> 40) * STEP - 1f;
            dst[offset + i + 1] = ((int) z >>> 8) * STEP - 1f;
        }
    }

    /** SplitMix64's output function: every bit of the result depends on every bit of {@code z}. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
