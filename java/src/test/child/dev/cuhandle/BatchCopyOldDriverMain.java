package dev.cuhandle;

import java.util.Arrays;
import java.util.Random;

/**
 * Child JVM of {@link BatchCopyOldDriverTest}: on a stand-in driver of the CUDA version its environment sets, uploads
 * and downloads a batch of random {@code float[]} (lengths 0 to 999, seed from the first argument) and prints
 * {@code exact: <true|false> batch calls: <cuMemcpyBatchAsync calls the stand-in counted>}.
 */
public final class BatchCopyOldDriverMain {
    private BatchCopyOldDriverMain() {}

    public static void main(String[] args) {
        Random r = new Random(Long.parseLong(args[0]));
        int count = 200;
        float[][] src = new float[count][];
        float[][] back = new float[count][];
        DeviceBuffer[] buffers = new DeviceBuffer[count];
        try (Handle h = Handle.create(0)) {
            for (int i = 0; i < count; i++) {
                src[i] = new float[r.nextInt(1000)];
                for (int k = 0; k < src[i].length; k++) {
                    src[i][k] = r.nextFloat();
                }
                back[i] = new float[src[i].length];
                buffers[i] = h.allocate(4L * src[i].length + 4);
            }
            StandIn.resetCounters();
            h.uploadAll(src, buffers);
            h.downloadAll(buffers, back);
            boolean exact = true;
            for (int i = 0; i < count; i++) {
                exact &= Arrays.equals(src[i], back[i]);
            }
            System.out.println("exact: " + exact + " batch calls: " + StandIn.batchCopies());
            for (DeviceBuffer b : buffers) {
                b.close();
            }
        }
    }
}
