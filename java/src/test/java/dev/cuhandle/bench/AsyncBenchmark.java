package dev.cuhandle.bench;

import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.Dim3;
import dev.cuhandle.Event;
import dev.cuhandle.Handle;
import dev.cuhandle.HostBuffer;
import dev.cuhandle.Kernel;
import dev.cuhandle.Library;
import dev.cuhandle.TestKernels;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Rule A1's figures (issue 12), as CSV lines {@code cuhandle,<what>,<n>,0,<median>,0}:
 * <ul>
 *   <li>1 GiB copies between a {@link HostBuffer} and a {@link DeviceBuffer} ({@code uploadAsync(...).join()},
 *       wall clock), in GB/s (1e9 bytes/s), to set beside {@code tests/bench/pinned_copy.cu}'s
 *       {@code cuMemcpyHtoDAsync}/{@code DtoHAsync} + {@code cuStreamSynchronize} from the same run (goal: >= 90%);
 *   <li>the same 1 GiB from and to a Java {@code float[]} (through the pinned staging pipeline; sizes and JCuda:
 *       {@link TransferBenchmark});
 *   <li>future latency: one spin kernel of about 100 µs, then either {@code synchronize()} (cuStreamSynchronize,
 *       which spins) or {@code whenDone().join()}; the medians of both round trips and their difference, which is
 *       what the future adds over the driver's own wait on the identical workload (goal: <= 50 µs), plus the GPU
 *       time of the kernel measured with events, so that {@code future - kernel} bounds the latency from above;
 *   <li>the latency breakdown: {@code join()} polls the marker's event itself (the fast path, above); the
 *       background path (host function, {@code cuhandle-completion}, a dispatch thread), which completes futures
 *       nobody joins, is measured on its own as the median time from {@code synchronize()} returning to a
 *       {@code thenApply} continuation's clock reading ({@code completion_path_after_synchronize_us});
 *   <li>10,000 outstanding futures: time to create them behind a spin and see all complete.
 * </ul>
 * Run with {@code .gpu-bundle/run-class dev.cuhandle.bench.AsyncBenchmark}.
 */
public final class AsyncBenchmark {
    private static final long GIB = 1L << 30;
    /** ~100 µs at the H200's ~1.98 GHz SM clock. */
    private static final long SPIN_CYCLES = 198_000;

    private AsyncBenchmark() {}

    interface Body {
        void run() throws Exception;
    }

    /** Median wall time of {@code runs} runs after {@code warmups}, in ns. */
    private static double medianNs(int warmups, int runs, Body body) throws Exception {
        double[] ns = new double[runs];
        for (int run = -warmups; run < runs; run++) {
            long t0 = System.nanoTime();
            body.run();
            long t = System.nanoTime() - t0;
            if (run >= 0) {
                ns[run] = t;
            }
        }
        Arrays.sort(ns);
        return ns[runs / 2];
    }

    private static void gbps(String what, double ns) {
        System.out.printf("cuhandle,%s,%d,0,%.2f,0%n", what, GIB, GIB / ns);
    }

    public static void main(String[] args) throws Exception {
        try (Handle h = Handle.create(0)) {
            copies(h);
            latency(h);
            manyFutures(h);
        }
    }

    private static void copies(Handle h) throws Exception {
        try (HostBuffer host = h.allocateHost(GIB); DeviceBuffer dev = h.allocate(GIB)) {
            for (long i = 0; i < GIB; i += 4096) {
                host.putInt(i, (int) i); // touch every page, as the C baseline's memset does
            }
            gbps("pinned_h2d_1gib_gbps", medianNs(2, 7, () -> h.uploadAsync(host, dev).join()));
            gbps("pinned_d2h_1gib_gbps", medianNs(2, 7, () -> h.downloadAsync(dev, host).join()));
            float[] array = new float[(int) (GIB / 4)];
            gbps("pageable_array_h2d_1gib_gbps", medianNs(1, 5, () -> h.copyToDevice(array, 0, dev, array.length)));
            gbps("pageable_array_d2h_1gib_gbps", medianNs(1, 5, () -> h.copyToHost(dev, array, 0, array.length)));
        }
    }

    private static void latency(Handle h) throws Exception {
        try (Library lib = TestKernels.load(); Event start = h.createEvent(); Event end = h.createEvent()) {
            Kernel spin = lib.kernel("cuh_test_spin");
            Dim3 one = Dim3.of(1);
            int runs = 501;
            double kernelUs = 0;
            for (int i = 0; i < 20; i++) { // warm up both paths and the completion threads
                h.launch(spin, one, one, 0, SPIN_CYCLES);
                h.whenDone().join();
                h.launch(spin, one, one, 0, SPIN_CYCLES);
                h.synchronize();
            }
            start.record(h);
            h.launch(spin, one, one, 0, SPIN_CYCLES);
            end.record(h);
            end.synchronize();
            kernelUs = end.elapsedSince(start) * 1000.0;
            double sync = medianNs(0, runs, () -> {
                h.launch(spin, one, one, 0, SPIN_CYCLES);
                h.synchronize();
            });
            double future = medianNs(0, runs, () -> {
                h.launch(spin, one, one, 0, SPIN_CYCLES);
                h.whenDone().join();
            });
            double background = medianBackgroundCompletionNs(h, spin, runs);
            System.out.printf("cuhandle,spin_kernel_gpu_us,%d,0,%.1f,0%n", 1, kernelUs);
            System.out.printf("cuhandle,launch_then_synchronize_us,%d,0,%.1f,0%n", runs, sync / 1e3);
            System.out.printf("cuhandle,launch_then_whenDone_join_us,%d,0,%.1f,0%n", runs, future / 1e3);
            System.out.printf("cuhandle,future_latency_over_synchronize_us,%d,0,%.1f,0%n", runs, (future - sync) / 1e3);
            System.out.printf("cuhandle,future_latency_upper_bound_us,%d,0,%.1f,0%n", runs, future / 1e3 - kernelUs);
            System.out.printf("cuhandle,completion_path_after_synchronize_us,%d,0,%.1f,0%n", runs, background / 1e3);
        }
    }

    /**
     * Median time from {@code synchronize()} returning (the driver's spin saw the kernel finish) to a
     * continuation of an unjoined {@code whenDone()} future reading the clock: what the background completion
     * path (host function, completion thread, dispatch thread) adds for futures that nobody joins.
     */
    private static double medianBackgroundCompletionNs(Handle h, Kernel spin, int runs) {
        Dim3 one = Dim3.of(1);
        double[] ns = new double[runs];
        for (int run = -20; run < runs; run++) {
            h.launch(spin, one, one, 0, SPIN_CYCLES);
            CompletableFuture<Long> stamp = h.whenDone().thenApply(v -> System.nanoTime());
            h.synchronize();
            long synced = System.nanoTime();
            long completed = stamp.join(); // a derived future: it does not poll, the background path completes it
            if (run >= 0) {
                ns[run] = completed - synced;
            }
        }
        Arrays.sort(ns);
        return ns[runs / 2];
    }

    private static void manyFutures(Handle h) throws Exception {
        try (Library lib = TestKernels.load()) {
            Kernel spin = lib.kernel("cuh_test_spin");
            int count = 10_000;
            double ns = medianNs(1, 3, () -> {
                h.launch(spin, Dim3.of(1), Dim3.of(1), 0, SPIN_CYCLES * 100); // ~10 ms: they are all outstanding
                List<CompletableFuture<Void>> futures = new ArrayList<>(count);
                for (int i = 0; i < count; i++) {
                    futures.add(h.whenDone());
                }
                CompletableFuture.allOf(futures.toArray(new CompletableFuture<?>[0])).join();
            });
            System.out.printf("cuhandle,outstanding_futures_create_and_complete_ms,%d,0,%.1f,0%n", count, ns / 1e6);
        }
    }
}
