package dev.cuhandle;

/**
 * A grid or block size.
 *
 * <pre>{@code
 * // a 16 x 16 block per tile of the image, enough tiles to cover it
 * h.launch(blur, Dim3.of((width + 15) / 16, (height + 15) / 16), Dim3.of(16, 16), 0, in, out, width, height);
 * }</pre>
 */
public final class Dim3 {
    /**
     * Extent in x (threads for a block, blocks for a grid).
     */
    public final int x;
    /**
     * Extent in y; 1 when not given.
     */
    public final int y;
    /**
     * Extent in z; 1 when not given.
     */
    public final int z;

    private Dim3(int x, int y, int z) {
        this.x = x;
        this.y = y;
        this.z = z;
    }

    /**
     * A one-dimensional size {@code (x, 1, 1)}. Values are not checked here; a launch checks them against the
     * device's limits.
     *
     * @param x extent in x
     * @return the size
     */
    public static Dim3 of(int x) {
        return new Dim3(x, 1, 1);
    }

    /**
     * A two-dimensional size {@code (x, y, 1)}.
     *
     * @param x extent in x
     * @param y extent in y
     * @return the size
     */
    public static Dim3 of(int x, int y) {
        return new Dim3(x, y, 1);
    }

    /**
     * A three-dimensional size {@code (x, y, z)}.
     *
     * @param x extent in x
     * @param y extent in y
     * @param z extent in z
     * @return the size
     */
    public static Dim3 of(int x, int y, int z) {
        return new Dim3(x, y, z);
    }

    @Override
    public String toString() {
        return "(" + x + ", " + y + ", " + z + ")";
    }
}
