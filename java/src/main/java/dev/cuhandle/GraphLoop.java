package dev.cuhandle;

import java.util.Objects;

/**
 * The WHILE loop whose body {@link Handle#whileLoop(int, DeviceBuffer, java.util.function.Consumer)} is capturing:
 * the body says with {@link #continueWhile(GraphCondition)} what decides, on the GPU, whether it runs again. Without
 * a condition the loop runs its maximum number of iterations.
 *
 * <pre>{@code
 * h.whileLoop(500, iterations, loop -> {
 *     h.launch(step, grid, block, 0, x, residual, n);
 *     loop.continueWhile(GraphCondition.floatAbove(residual, 1e-6f));
 * });
 * }</pre>
 */
public final class GraphLoop {
    private final int maxIterations;
    private GraphCondition condition = GraphCondition.TRUE;

    GraphLoop(int maxIterations) {
        this.maxIterations = maxIterations;
    }

    /**
     * Makes the body run again while {@code condition} holds after it, checked on the GPU after each iteration
     * (the work the body recorded before the check is done), and at most the loop's maximum number of iterations
     * in all. The last call wins.
     *
     * @param condition what the loop goes on while
     * @return this loop
     * @throws NullPointerException if {@code condition} is {@code null}
     */
    public GraphLoop continueWhile(GraphCondition condition) {
        this.condition = Objects.requireNonNull(condition, "condition");
        return this;
    }

    /**
     * The most iterations one run of the loop makes.
     *
     * @return the maximum iteration count
     */
    public int maxIterations() {
        return maxIterations;
    }

    GraphCondition condition() {
        return condition;
    }

    @Override
    public String toString() {
        return "GraphLoop[at most " + maxIterations + " iterations, while " + condition + "]";
    }
}
