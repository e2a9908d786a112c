package dev.cuhandle;

import java.util.Objects;

/**
 * A condition that a graph decides on the GPU, from a value in device memory when the graph runs: whether an
 * {@link Handle#ifThen(GraphCondition, Runnable) IF} body runs, whether a
 * {@link Handle#whileLoop(int, DeviceBuffer, java.util.function.Consumer) WHILE} loop goes on
 * ({@link GraphLoop#continueWhile(GraphCondition)}). The value is read by a built-in kernel recorded into the graph,
 * after the work recorded before it, so a kernel of the body may compute it (a residual, a flag).
 *
 * <pre>{@code
 * GraphCondition.floatAbove(residual, 1e-6f)   // while the float at residual[0] > 1e-6
 * GraphCondition.nonZero(flag)                 // while the int at flag[0] != 0
 * GraphCondition.floatAbove(change, 1e-5f).thenZero()  // and zero change[0] for the next iteration
 * }</pre>
 *
 * <p>A NaN is above nothing: a loop on {@code floatAbove} or {@code doubleAbove} stops at a NaN residual.
 */
public final class GraphCondition {
    /** How the setter kernel reads the value: always true (a counted loop), an int, a float, a double. */
    static final int ALWAYS = 0;
    static final int NON_ZERO_INT = 1;
    static final int FLOAT_ABOVE = 2;
    static final int DOUBLE_ABOVE = 3;
    /** Added to the mode: the setter writes zero over the value after reading it ({@link #thenZero()}). */
    static final int ZERO_AFTER_READ = 16;

    /** The counted loop's condition: true, so that only the iteration limit stops it. */
    static final GraphCondition TRUE = new GraphCondition(ALWAYS, null, 0);

    final int mode;
    /** The buffer whose first element is read, or null for {@link #TRUE}. */
    final DeviceBuffer value;
    final double threshold;

    private GraphCondition(int mode, DeviceBuffer value, double threshold) {
        this.mode = mode;
        this.value = value;
        this.threshold = threshold;
    }

    private static DeviceBuffer checked(DeviceBuffer buffer, int bytes, String what) {
        Objects.requireNonNull(buffer, "buffer");
        if (buffer.byteLength() < bytes) {
            throw new IllegalArgumentException("the condition reads " + what + " (" + bytes + " bytes) at the buffer's start; the buffer has "
                    + buffer.byteLength() + " bytes");
        }
        return buffer;
    }

    /**
     * True while the {@code int} at the start of {@code flag} is not 0.
     *
     * @param flag a buffer of at least 4 bytes
     * @return the condition
     * @throws NullPointerException if {@code flag} is {@code null}
     * @throws IllegalArgumentException if {@code flag} has fewer than 4 bytes
     */
    public static GraphCondition nonZero(DeviceBuffer flag) {
        return new GraphCondition(NON_ZERO_INT, checked(flag, 4, "an int"), 0);
    }

    /**
     * True while the {@code float} at the start of {@code value} is greater than {@code threshold} (a NaN is not).
     *
     * @param value a buffer of at least 4 bytes
     * @param threshold the bound, e.g. a tolerance
     * @return the condition
     * @throws NullPointerException if {@code value} is {@code null}
     * @throws IllegalArgumentException if {@code value} has fewer than 4 bytes
     */
    public static GraphCondition floatAbove(DeviceBuffer value, float threshold) {
        return new GraphCondition(FLOAT_ABOVE, checked(value, 4, "a float"), threshold);
    }

    /**
     * True while the {@code double} at the start of {@code value} is greater than {@code threshold} (a NaN is not).
     *
     * @param value a buffer of at least 8 bytes
     * @param threshold the bound, e.g. a tolerance
     * @return the condition
     * @throws NullPointerException if {@code value} is {@code null}
     * @throws IllegalArgumentException if {@code value} has fewer than 8 bytes
     */
    public static GraphCondition doubleAbove(DeviceBuffer value, double threshold) {
        return new GraphCondition(DOUBLE_ABOVE, checked(value, 8, "a double"), threshold);
    }

    /**
     * The same condition, and after the built-in kernel has read the value it writes zero over it (4 bytes for an
     * {@code int} or {@code float}, 8 for a {@code double}). A loop body that raises the value with atomics (the
     * largest change of a sweep with {@code atomicMax}, a residual with {@code atomicAdd}) then starts every
     * iteration from zero without a memset of its own: one graph node fewer per iteration, about a microsecond on
     * an H200 (docs/guide/graphs.md). Zero the value once before the loop; the zero is written after the
     * decision, so the iteration that stops the loop leaves zero there too.
     *
     * @return a condition that reads the same value against the same threshold and then zeroes it
     */
    public GraphCondition thenZero() {
        return new GraphCondition(mode | ZERO_AFTER_READ, value, threshold);
    }

    /** Whether the setter zeroes the value after reading it. */
    boolean zeroesAfterRead() {
        return (mode & ZERO_AFTER_READ) != 0;
    }

    @Override
    public String toString() {
        String text = readText();
        return zeroesAfterRead() ? text.substring(0, text.length() - 1) + ", then zeroed]" : text;
    }

    private String readText() {
        switch (mode & ~ZERO_AFTER_READ) {
            case NON_ZERO_INT:
                return "GraphCondition[int != 0]";
            case FLOAT_ABOVE:
                return "GraphCondition[float > " + (float) threshold + "]";
            case DOUBLE_ABOVE:
                return "GraphCondition[double > " + threshold + "]";
            default:
                return "GraphCondition[true]";
        }
    }
}
