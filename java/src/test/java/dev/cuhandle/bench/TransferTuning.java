package dev.cuhandle.bench;

import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.Handle;
import java.util.Arrays;

/**
 * Sweeps the array copy pipeline's settings (the {@code cuhandle.transfer.*} properties, which every
 * copy reads) for {@code float[]} copies, so that the defaults can be chosen on the GPU host: for each
 * size, every combination of threads, largest chunk and depth, both directions, as CSV rows
 * {@code cuhandle,transfer_tune,<h2d|d2h>_t<threads>_c<chunk KiB>_d<depth>,<bytes>,<GB/s>,GB/s}.
 * The rows with 1 thread against those with more, size by size, show where splitting a copy over
 * threads starts to pay (the crossover that {@code cuhandle.transfer.bytesPerThread} sets); each
 * configuration copies its size as one range per thread ({@code bytesPerThread} = size / threads).
 * Arguments: {@code threads=1,2,4 chunks=1,4 depths=2,3 sizes=65536,...} (chunks in MiB) to narrow the
 * sweep. Run with {@code .gpu-bundle/run-class dev.cuhandle.bench.TransferTuning}.
 */
public final class TransferTuning {
    private TransferTuning() {}

    public static void main(String[] args) {
        BenchSupport.requireGpu("TransferTuning");
        int[] threads = {1, 2, 3, 4, 6, 8};
        int[] chunksMiB = {1, 2, 4, 8};
        int[] depths = {2, 3};
        long[] sizes = {256L << 10, 1L << 20, 4L << 20, 16L << 20, 64L << 20, 1L << 30};
        for (String arg : args) {
            String[] kv = arg.split("=", 2);
            int[] values = kv.length == 2 ? Arrays.stream(kv[1].split(",")).mapToInt(Integer::parseInt).toArray() : new int[0];
            switch (kv[0]) {
                case "threads": threads = values; break;
                case "chunks": chunksMiB = values; break;
                case "depths": depths = values; break;
                case "sizes": sizes = Arrays.stream(kv[1].split(",")).mapToLong(Long::parseLong).toArray(); break;
                default: throw new IllegalArgumentException("unknown argument " + arg + "; expected threads=, chunks=, depths= or sizes=");
            }
        }
        try (Handle h = Handle.create(0)) {
            for (long bytes : sizes) {
                int n = (int) (bytes / 4);
                float[] array = new float[n];
                Arrays.fill(array, 1.5f);
                try (DeviceBuffer buffer = h.allocate(bytes)) {
                    for (int t : threads) {
                        for (int c : chunksMiB) {
                            for (int depth : depths) {
                                System.setProperty("cuhandle.transfer.threads", String.valueOf(t));
                                System.setProperty("cuhandle.transfer.bytesPerThread", String.valueOf(Math.max(1, bytes / t)));
                                System.setProperty("cuhandle.transfer.chunkBytes", String.valueOf((long) c << 20));
                                System.setProperty("cuhandle.transfer.depth", String.valueOf(depth));
                                System.setProperty("cuhandle.transfer.idleSlots", String.valueOf(t * depth)); // no slot freed between copies
                                int batch = TransferBenchmark.batchFor(bytes);
                                TransferBenchmark.medianNs(() -> h.copyToDevice(array, 0, buffer, n), 2); // warm the slots of this size
                                double up = bytes / TransferBenchmark.medianNs(() -> {
                                    h.copyToDevice(array, 0, buffer, n);
                                    h.synchronize();
                                }, batch);
                                double down = bytes / TransferBenchmark.medianNs(() -> h.copyToHost(buffer, array, 0, n), batch);
                                String config = "_t" + t + "_c" + (c << 10) + "_d" + depth;
                                System.out.printf("cuhandle,transfer_tune,h2d%s,%d,%.3f,GB/s%n", config, bytes, up);
                                System.out.printf("cuhandle,transfer_tune,d2h%s,%d,%.3f,GB/s%n", config, bytes, down);
                            }
                        }
                    }
                }
            }
        }
    }
}
