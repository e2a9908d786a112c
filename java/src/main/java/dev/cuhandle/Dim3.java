package dev.cuhandle;

/** A grid or block size. */
public final class Dim3 {
    public final int x;
    public final int y;
    public final int z;

    private Dim3(int x, int y, int z) {
        this.x = x;
        this.y = y;
        this.z = z;
    }

    public static Dim3 of(int x) {
        return new Dim3(x, 1, 1);
    }

    public static Dim3 of(int x, int y) {
        return new Dim3(x, y, 1);
    }

    public static Dim3 of(int x, int y, int z) {
        return new Dim3(x, y, z);
    }

    @Override
    public String toString() {
        return "(" + x + ", " + y + ", " + z + ")";
    }
}
