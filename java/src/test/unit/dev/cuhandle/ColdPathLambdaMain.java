package dev.cuhandle;

/**
 * {@link ColdPathLambdaTest}'s child: the first Handle.create and close of a process (with argument {@code first-calls}, and
 * the first calls on it in between), then a line saying so.
 */
public final class ColdPathLambdaMain {
    private ColdPathLambdaMain() {}

    /**
     * Creates and closes a handle on device 0.
     *
     * @param args {@code first-calls} to upload, allocate, run two BLAS calls, synchronize and download in between
     */
    public static void main(String[] args) {
        try (Handle h = Handle.create(0)) {
            if (args.length > 0 && args[0].equals("first-calls")) {
                try (DeviceBuffer x = h.upload(new float[] {1f, 2f, 3f, 4f}); DeviceBuffer y = h.allocate(16)) {
                    Blas.sscal(h, 4, 2f, x, 1);
                    Blas.scopy(h, 4, x, 1, y, 1);
                    h.synchronize();
                    y.download(new float[4]);
                }
            }
        }
        System.out.println("created and closed");
        // After the line above: Native.source() loads nothing ColdPathLambdaTest looks for (it is loaded already).
        System.out.println("library: " + Native.source());
    }
}
