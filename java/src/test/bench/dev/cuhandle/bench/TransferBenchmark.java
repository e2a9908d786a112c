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
 * Issue 24's figures (rule T1): {@code float[]} and {@code double[]} to and from the device at
 * 64 KiB, 4 MiB, 64 MiB and 1 GiB, cuhandle against JCuda 12.6 in one JVM, as CSV rows
 * {@code <impl>,transfer,<type>_<h2d|d2h>,<bytes>,<GB/s>,GB/s} (GB = 1e9 bytes), which
 * {@code tests/bench/report.py} sets beside the C pageable and pinned figures of
 * {@code tests/bench/transfer_copy.cu} from the same run.
 *
 * <ul>
 *   <li>cuhandle: {@code Handle.copyToDevice(array, 0, buffer, n)} then {@code synchronize()}, and
 *       {@code copyToHost(buffer, array, 0, n)} (which waits);
 *   <li>JCuda: {@code cuMemcpyHtoD(dptr, Pointer.to(array), bytes)} then {@code cuCtxSynchronize()}, and
 *       {@code cuMemcpyDtoH(Pointer.to(array), dptr, bytes)}, with the primary context current, as a
 *       JCuda user writes them (JCuda pins the array with a JNI critical region for the call).
 * </ul>
 *
 * <p>Both sides are timed until the data is in place (the synchronize after an upload included).
 * The two take turns: {@value #ROUNDS} rounds after a warm-up round, the first mover alternating;
 * a round times a batch of copies per side (more for small sizes) and keeps the batch's median; the
 * row is the median of the rounds. Arguments: sizes in bytes (default the four above), and
 * {@code cuhandle.transfer.<name>=<value>} to run with other pipeline settings (see
 * {@code TransferTuning}), for example {@code cuhandle.transfer.threads=8}.
 * Run with {@code .gpu-bundle/run-class dev.cuhandle.bench.TransferBenchmark}.
 */
public final class TransferBenchmark {
    static final long[] DEFAULT_SIZES = {64L << 10, 4L << 20, 64L << 20, 1L << 30};
    private static final int ROUNDS = 7;

    private TransferBenchmark() {}

    /** One timed copy. */
    interface Copy {
        void run();
    }

    public static void main(String[] args) {
        BenchSupport.requireGpu("TransferBenchmark");
        for (String arg : args) {
            if (arg.startsWith("cuhandle.transfer.") && arg.contains("=")) {
                System.setProperty(arg.substring(0, arg.indexOf('=')), arg.substring(arg.indexOf('=') + 1));
                System.out.println("# " + arg);
            }
        }
        long[] given = Arrays.stream(args).filter(a -> !a.contains("=")).mapToLong(Long::parseLong).toArray();
        long[] sizes = given.length == 0 ? DEFAULT_SIZES : given;
        String jcudaMissing = JCudaSide.unavailableReason();
        if (jcudaMissing != null) {
            System.out.println("# jcuda unavailable, only cuhandle measured: " + jcudaMissing);
        }
        try (Handle h = Handle.create(0)) {
            for (long bytes : sizes) {
                for (String type : new String[] {"float", "double"}) {
                    measure(h, type, bytes, jcudaMissing == null);
                }
            }
        }
    }

    private static void measure(Handle h, String type, long bytes, boolean withJCuda) {
        boolean isFloat = type.equals("float");
        int n = (int) (bytes / (isFloat ? 4 : 8));
        Object array = isFloat ? new float[n] : new double[n];
        Random random = new Random(bytes);
        for (int i = 0; i < n; i++) { // every page touched, as the C baselines' memset does
            if (isFloat) {
                ((float[]) array)[i] = random.nextFloat();
            } else {
                ((double[]) array)[i] = random.nextDouble();
            }
        }
        int batch = batchFor(bytes);
        try (DeviceBuffer buffer = h.allocate(bytes)) {
            JCudaSide jcuda = withJCuda ? new JCudaSide(bytes) : null;
            try {
                Pointer host = withJCuda ? (isFloat ? Pointer.to((float[]) array) : Pointer.to((double[]) array)) : null;
                Copy ourUp = isFloat ? () -> {
                    h.copyToDevice((float[]) array, 0, buffer, n);
                    h.synchronize();
                } : () -> {
                    h.copyToDevice((double[]) array, 0, buffer, n);
                    h.synchronize();
                };
                Copy ourDown = isFloat ? () -> h.copyToHost(buffer, (float[]) array, 0, n) : () -> h.copyToHost(buffer, (double[]) array, 0, n);
                List<String> impls = new ArrayList<>(List.of("cuhandle"));
                List<Copy[]> copies = new ArrayList<>();
                copies.add(new Copy[] {ourUp, ourDown});
                if (jcuda != null) {
                    impls.add("jcuda");
                    copies.add(new Copy[] {() -> jcuda.upload(host), () -> jcuda.download(host)});
                }
                for (int direction = 0; direction < 2; direction++) {
                    double[][] rounds = new double[impls.size()][ROUNDS];
                    for (int round = -1; round < ROUNDS; round++) {
                        for (int k = 0; k < impls.size(); k++) {
                            int impl = Math.floorMod(round, 2) == 0 ? k : impls.size() - 1 - k; // the first mover alternates
                            double gbps = bytes / medianNs(copies.get(impl)[direction], batch);
                            if (round >= 0) {
                                rounds[impl][round] = gbps;
                            }
                        }
                    }
                    for (int impl = 0; impl < impls.size(); impl++) {
                        Arrays.sort(rounds[impl]);
                        System.out.printf("%s,transfer,%s_%s,%d,%.3f,GB/s%n", impls.get(impl), type, direction == 0 ? "h2d" : "d2h", bytes, rounds[impl][ROUNDS / 2]);
                    }
                }
            } finally {
                if (jcuda != null) {
                    jcuda.close();
                }
            }
        }
    }

    /** Copies per round: enough for a stable median where one copy is short. */
    static int batchFor(long bytes) {
        return bytes <= 1L << 20 ? 101 : bytes <= 16L << 20 ? 21 : bytes <= 256L << 20 ? 7 : 3;
    }

    /** Median wall time of {@code count} runs, in ns. */
    static double medianNs(Copy copy, int count) {
        long[] ns = new long[count];
        for (int i = 0; i < count; i++) {
            long t0 = System.nanoTime();
            copy.run();
            ns[i] = System.nanoTime() - t0;
        }
        Arrays.sort(ns);
        return ns[count / 2];
    }

    /** JCuda's copies: device memory of its own, the primary context current on the calling thread. */
    static final class JCudaSide {
        private static CUcontext primary;
        private final CUdeviceptr memory = new CUdeviceptr();
        private final long bytes;

        /** Loads JCuda and retains the primary context; null if that worked, else why not. */
        static synchronized String unavailableReason() {
            try {
                primary = BenchSupport.jcudaRetainPrimary();
                return null;
            } catch (Throwable e) { // UnsatisfiedLinkError (no natives for this driver) or a CudaException
                return e.toString();
            }
        }

        JCudaSide(long bytes) {
            this.bytes = bytes;
            JCudaDriver.cuCtxSetCurrent(primary); // cuhandle leaves it current (rule H4)
            JCudaDriver.cuMemAlloc(memory, bytes);
        }

        void upload(Pointer host) {
            JCudaDriver.cuMemcpyHtoD(memory, host, bytes);
            JCudaDriver.cuCtxSynchronize();
        }

        void download(Pointer host) {
            JCudaDriver.cuMemcpyDtoH(host, memory, bytes);
        }

        void close() {
            JCudaDriver.cuMemFree(memory);
        }
    }
}
