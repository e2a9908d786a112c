package dev.cuhandle.bench;

import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.Handle;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.JCudaDriver;

/**
 * Issue 35's batch figures (rule T1): many small {@code float[]} to and from the device, 1,000 arrays of 4 KiB and
 * 10,000 of 256 B, as CSV rows {@code <impl>,batch,float_<h2d|d2h|roundtrip>_<count>,<bytes per array>,<microseconds>,us}
 * (the wall time of the whole batch until the data is in place), which {@code tests/bench/report.py} tabulates, then
 * {@code # ratio ...} notes: how many times longer another way takes than {@code uploadAll}/{@code downloadAll} (the
 * issue's goal: at least 2 over cuhandle's loop, 1.5 over JCuda's, to the device and back).
 *
 * <ul>
 *   <li>{@code cuhandle_all}: {@code h.uploadAll(arrays, buffers)} then {@code synchronize()};
 *       {@code h.downloadAll(buffers, arrays)} (which waits). On CUDA 12.8+ drivers each staging chunk's copies go
 *       in one {@code cuMemcpyBatchAsync} call;
 *   <li>{@code cuhandle_all_per_piece}: the same with {@code cuhandle.transfer.batchEntry=false}: one
 *       {@code cuMemcpyHtoDAsync}/{@code cuMemcpyDtoHAsync} per array from the shared staging chunk (what drivers
 *       before 12.8 get);
 *   <li>{@code cuhandle_loop}: {@code h.copyToDevice(array, 0, buffer, n)} per array then {@code synchronize()};
 *       {@code h.copyToHost(buffer, array, 0, n)} per array;
 *   <li>{@code jcuda_loop}: JCuda 12.6 per array, {@code cuMemcpyHtoD(dptr, Pointer.to(array), bytes)} then
 *       {@code cuCtxSynchronize()}; {@code cuMemcpyDtoH(Pointer.to(array), dptr, bytes)}, the primary context
 *       current.
 * </ul>
 *
 * <p>The ways take turns in one JVM: {@value #ROUNDS} rounds after a warm-up round, the first mover rotating; a round
 * times a few batches per way and keeps their median; the row is the median of the rounds. Every way's results are
 * checked once against the source arrays before timing. Run with
 * {@code .gpu-bundle/run-class dev.cuhandle.bench.BatchCopyBenchmark} (optional arguments: shapes as
 * {@code <count>x<bytes>}, for example {@code 1000x4096}).
 */
public final class BatchCopyBenchmark {
    private static final String[] DEFAULT_SHAPES = {"1000x4096", "10000x256"};
    private static final int ROUNDS = 7;
    private static final String[] DIRECTIONS = {"h2d", "d2h", "roundtrip"};

    private BatchCopyBenchmark() {}

    /** One way of moving a whole batch in one direction. */
    interface Way {
        void run(int direction);
    }

    public static void main(String[] args) {
        BenchSupport.requireGpu("BatchCopyBenchmark");
        String[] shapes = args.length == 0 ? DEFAULT_SHAPES : args;
        CUcontext jcudaPrimary = null;
        try {
            jcudaPrimary = BenchSupport.jcudaRetainPrimary();
        } catch (Throwable e) { // UnsatisfiedLinkError (no natives for this driver) or a CudaException
            System.out.println("# jcuda unavailable, only cuhandle measured: " + e);
        }
        try (Handle h = Handle.create(0)) {
            for (String shape : shapes) {
                String[] parts = shape.split("x");
                measure(h, Integer.parseInt(parts[0]), Integer.parseInt(parts[1]), jcudaPrimary);
            }
        }
    }

    private static void measure(Handle h, int count, int bytes, CUcontext jcudaPrimary) {
        int n = bytes / 4;
        String shape = count + "x" + bytes;
        Random random = new Random(count * 31L + bytes);
        float[][] src = new float[count][n];
        float[][] dst = new float[count][n];
        for (float[] a : src) {
            for (int i = 0; i < n; i++) {
                a[i] = random.nextFloat();
            }
        }
        DeviceBuffer[] buffers = new DeviceBuffer[count];
        JCudaBatch jcuda = null;
        try {
            for (int i = 0; i < count; i++) {
                buffers[i] = h.allocate(bytes);
            }
            List<String> names = new ArrayList<>(List.of("cuhandle_all", "cuhandle_all_per_piece", "cuhandle_loop"));
            List<Way> ways = new ArrayList<>();
            ways.add(d -> all(h, src, dst, buffers, d, true));
            ways.add(d -> all(h, src, dst, buffers, d, false));
            ways.add(d -> loop(h, src, dst, buffers, d));
            if (jcudaPrimary != null) {
                jcuda = new JCudaBatch(jcudaPrimary, count, bytes);
                JCudaBatch j = jcuda;
                names.add("jcuda_loop");
                ways.add(d -> j.run(src, dst, d));
            }
            for (int w = 0; w < ways.size(); w++) {
                check(ways.get(w), names.get(w), src, dst);
            }
            int reps = count * (long) bytes >= (1 << 20) && count <= 2000 ? 9 : 5;
            for (int direction = 0; direction < DIRECTIONS.length; direction++) {
                int d = direction;
                double[][] rounds = new double[ways.size()][ROUNDS];
                for (int round = -1; round < ROUNDS; round++) {
                    for (int k = 0; k < ways.size(); k++) {
                        int way = Math.floorMod(round + k, ways.size()); // the first mover rotates
                        double us = TransferBenchmark.medianNs(() -> ways.get(way).run(d), reps) / 1e3;
                        if (round >= 0) {
                            rounds[way][round] = us;
                        }
                    }
                }
                double[] medians = new double[ways.size()];
                for (int w = 0; w < ways.size(); w++) {
                    Arrays.sort(rounds[w]);
                    medians[w] = rounds[w][ROUNDS / 2];
                    System.out.printf("%s,batch,float_%s_%d,%d,%.1f,us%n", names.get(w), DIRECTIONS[direction], count, bytes, medians[w]);
                }
                for (int w = 1; w < ways.size(); w++) {
                    System.out.printf("# ratio %s / cuhandle_all, float_%s, %s: %.2f%n", names.get(w), DIRECTIONS[direction], shape, medians[w] / medians[0]);
                }
            }
        } finally {
            if (jcuda != null) {
                jcuda.close();
            }
            for (DeviceBuffer b : buffers) {
                if (b != null) {
                    b.close();
                }
            }
        }
    }

    /** Uploads, downloads into cleared arrays and compares exactly; a wrong result stops the benchmark. */
    private static void check(Way way, String name, float[][] src, float[][] dst) {
        way.run(0);
        for (float[] a : dst) {
            Arrays.fill(a, -1f);
        }
        way.run(1);
        for (int i = 0; i < src.length; i++) {
            if (!Arrays.equals(src[i], dst[i])) {
                throw new AssertionError(name + ": array " + i + " came back different");
            }
        }
        System.out.println("# " + name + ": " + src.length + " arrays came back exact");
    }

    private static void all(Handle h, float[][] src, float[][] dst, DeviceBuffer[] buffers, int direction, boolean batchEntry) {
        System.setProperty("cuhandle.transfer.batchEntry", String.valueOf(batchEntry));
        try {
            if (direction != 1) {
                h.uploadAll(src, buffers);
                h.synchronize();
            }
            if (direction != 0) {
                h.downloadAll(buffers, dst);
            }
        } finally {
            System.clearProperty("cuhandle.transfer.batchEntry");
        }
    }

    private static void loop(Handle h, float[][] src, float[][] dst, DeviceBuffer[] buffers, int direction) {
        if (direction != 1) {
            for (int i = 0; i < src.length; i++) {
                h.copyToDevice(src[i], 0, buffers[i], src[i].length);
            }
            h.synchronize();
        }
        if (direction != 0) {
            for (int i = 0; i < dst.length; i++) {
                h.copyToHost(buffers[i], dst[i], 0, dst[i].length);
            }
        }
    }

    /** JCuda's per-array copies: device memory of its own, the primary context current on the calling thread. */
    static final class JCudaBatch {
        private final CUdeviceptr[] memory;
        private final long bytes;

        JCudaBatch(CUcontext primary, int count, long bytes) {
            this.bytes = bytes;
            this.memory = new CUdeviceptr[count];
            JCudaDriver.cuCtxSetCurrent(primary); // cuhandle leaves it current (rule H4)
            for (int i = 0; i < count; i++) {
                memory[i] = new CUdeviceptr();
                JCudaDriver.cuMemAlloc(memory[i], bytes);
            }
        }

        void run(float[][] src, float[][] dst, int direction) {
            if (direction != 1) {
                for (int i = 0; i < memory.length; i++) {
                    JCudaDriver.cuMemcpyHtoD(memory[i], Pointer.to(src[i]), bytes);
                }
                JCudaDriver.cuCtxSynchronize();
            }
            if (direction != 0) {
                for (int i = 0; i < memory.length; i++) {
                    JCudaDriver.cuMemcpyDtoH(Pointer.to(dst[i]), memory[i], bytes);
                }
            }
        }

        void close() {
            for (CUdeviceptr m : memory) {
                if (m != null) {
                    JCudaDriver.cuMemFree(m);
                }
            }
        }
    }
}
