package dev.cuhandle;

import dev.cuhandle.bench.BenchSupport;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.JCudaDriver;

/**
 * Where the time of one array upload goes (issue 24's 4 MiB case): the copy that
 * {@code Handle.copyToDevice(float[]) + synchronize()} runs, taken apart. Each way below runs
 * {@value #ROUNDS} copies, in turns with the others, and prints medians in microseconds:
 *
 * <ul>
 *   <li>{@code default}: the ranges through {@link TransferThreads#copyRanges}, exactly as
 *       {@code ArrayTransfers} runs them, each range timed where it runs: when it started after the
 *       copy began, how long it took, and whether the calling thread or a helper ran it; then the
 *       wait for the stream;
 *   <li>{@code serial}: the same ranges one after another on the calling thread (no helper: what
 *       one range costs without others beside it);
 *   <li>{@code hot}: the same ranges on helpers that spin instead of parking (no wake-up: the
 *       ceiling of any dispatch);
 *   <li>{@code one-call}: the whole array in one native call, chunked and double-buffered on the
 *       calling thread;
 *   <li>{@code tiny}: a range of 4 KiB and the wait (the fixed cost of a range and a synchronize);
 *   <li>{@code arraycopy}: {@code System.arraycopy} of one range's bytes and of the whole array
 *       (the host's copy speed, heap to heap);
 *   <li>{@code jcuda}: JCuda's {@code cuMemcpyHtoD(Pointer.to(array))} and {@code cuCtxSynchronize()}.
 * </ul>
 *
 * Arguments: the size in bytes (default 4 MiB). Run with
 * {@code .gpu-bundle/run-class dev.cuhandle.TransferTimeline [bytes]}.
 */
public final class TransferTimeline {
    private static final int ROUNDS = 301;

    private TransferTimeline() {}

    /** Timings of one copy, in ns from its start. */
    private static final class Trace {
        final long[] start;
        final long[] end;
        final boolean[] onCaller;
        long rangesDone;
        long synced;

        Trace(int ranges) {
            start = new long[ranges];
            end = new long[ranges];
            onCaller = new boolean[ranges];
        }
    }

    public static void main(String[] args) throws Exception {
        BenchSupport.requireGpu("TransferTimeline");
        long bytes = args.length > 0 ? Long.parseLong(args[0]) : 4L << 20;
        int n = (int) (bytes / 4);
        float[] array = new float[n];
        Random random = new Random(1);
        for (int i = 0; i < n; i++) {
            array[i] = random.nextFloat();
        }
        TransferPlan plan = TransferPlan.of(bytes, 4);
        System.out.println("# " + bytes + " bytes, " + plan + ", " + Runtime.getRuntime().availableProcessors() + " processors");
        CUcontext primary = BenchSupport.jcudaRetainPrimary();
        try (Handle handle = Handle.create(0); DeviceBuffer buffer = handle.allocate(bytes); HotHelpers hot = new HotHelpers(plan.threads - 1)) {
            JCudaDriver.cuCtxSetCurrent(primary);
            CUdeviceptr jcudaMemory = new CUdeviceptr();
            JCudaDriver.cuMemAlloc(jcudaMemory, bytes);
            Pointer host = Pointer.to(array);
            float[] target = new float[n];
            String[] ways = {"default", "serial", "hot", "one-call", "tiny", "arraycopy-range", "arraycopy-all", "jcuda"};
            List<List<Trace>> traces = new ArrayList<>();
            long[][] totals = new long[ways.length][ROUNDS];
            for (int w = 0; w < ways.length; w++) {
                traces.add(new ArrayList<>());
            }
            for (int round = -20; round < ROUNDS; round++) { // 20 rounds of warm-up
                for (int k = 0; k < ways.length; k++) {
                    int w = Math.floorMod(round, 2) == 0 ? k : ways.length - 1 - k; // the first mover alternates
                    Trace trace = new Trace(plan.threads);
                    long t0 = System.nanoTime();
                    switch (ways[w]) {
                        case "default": ranges(handle, buffer, array, plan, trace, t0, Dispatch.HELPERS, hot); break;
                        case "serial": ranges(handle, buffer, array, plan, trace, t0, Dispatch.SERIAL, hot); break;
                        case "hot": ranges(handle, buffer, array, plan, trace, t0, Dispatch.HOT, hot); break;
                        case "one-call": oneCall(handle, buffer, array, bytes, plan); break;
                        case "tiny": oneCall(handle, buffer, array, 4096, plan); break;
                        case "arraycopy-range": System.arraycopy(array, 0, target, 0, (int) (plan.rangeBytes / 4)); break;
                        case "arraycopy-all": System.arraycopy(array, 0, target, 0, n); break;
                        case "jcuda":
                            JCudaDriver.cuMemcpyHtoD(jcudaMemory, host, bytes);
                            JCudaDriver.cuCtxSynchronize();
                            break;
                        default: throw new IllegalStateException(ways[w]);
                    }
                    long total = System.nanoTime() - t0;
                    if (round >= 0) {
                        totals[w][round] = total;
                        traces.get(w).add(trace);
                    }
                }
            }
            JCudaDriver.cuMemFree(jcudaMemory);
            for (int w = 0; w < ways.length; w++) {
                System.out.printf("%-16s total %8.1f us  (%.2f GB/s of %d bytes)%n", ways[w], median(totals[w]) / 1e3, bytes / median(totals[w]), bytes);
            }
            for (int w = 0; w < 3; w++) {
                describe(ways[w], traces.get(w), plan.threads);
            }
        }
    }

    private enum Dispatch { HELPERS, SERIAL, HOT }

    /** ArrayTransfers.run for an upload, with each range timed. */
    private static void ranges(Handle handle, DeviceBuffer buffer, float[] array, TransferPlan plan, Trace trace, long t0, Dispatch dispatch, HotHelpers hot) {
        long h = handle.enter();
        long b = 0;
        Thread caller = Thread.currentThread();
        try {
            b = buffer.enterFor(handle);
            long entered = b;
            long stream = NativeApi.handleStream(h);
            long bytes = (long) array.length * 4;
            TransferThreads.Range range = i -> {
                trace.start[i] = System.nanoTime() - t0;
                trace.onCaller[i] = Thread.currentThread() == caller;
                long start = i * plan.rangeBytes;
                long len = Math.min(plan.rangeBytes, bytes - start);
                NativeApi.arrayCopy(h, entered, buffer.byteOffset() + start, array, 'F', start, len, true, stream, plan.chunkBytes, plan.depth, plan.slotBytes,
                        plan.idleSlots, false, plan.criticalCopy);
                trace.end[i] = System.nanoTime() - t0;
            };
            switch (dispatch) {
                case HELPERS: TransferThreads.copyRanges(plan.threads, range); break;
                case SERIAL: for (int i = 0; i < plan.threads; i++) { range.copy(i); } break;
                case HOT: hot.copyRanges(plan.threads, range); break;
                default: throw new IllegalStateException();
            }
            trace.rangesDone = System.nanoTime() - t0;
        } finally {
            DeviceBuffer.exit(buffer, b);
            handle.exit();
        }
        handle.synchronize();
        trace.synced = System.nanoTime() - t0;
    }

    /** The first {@code bytes} of the array in one native call on this thread, then the wait. */
    private static void oneCall(Handle handle, DeviceBuffer buffer, float[] array, long bytes, TransferPlan plan) {
        long h = handle.enter();
        long b = 0;
        try {
            b = buffer.enterFor(handle);
            // The plan's chunk: the pipeline cuts a shorter copy to one chunk of its own length.
            NativeApi.arrayCopy(h, b, buffer.byteOffset(), array, 'F', 0, bytes, true, -1, plan.chunkBytes, plan.depth, plan.slotBytes, plan.idleSlots,
                    false, plan.criticalCopy);
        } finally {
            DeviceBuffer.exit(buffer, b);
            handle.exit();
        }
        handle.synchronize();
    }

    private static void describe(String way, List<Trace> traces, int ranges) {
        int count = traces.size();
        long[] done = traces.stream().mapToLong(t -> t.rangesDone).toArray();
        long[] synced = traces.stream().mapToLong(t -> t.synced).toArray();
        long[] tail = traces.stream().mapToLong(t -> t.synced - t.rangesDone).toArray();
        System.out.printf("%s: ranges done at %.1f us, synchronized at %.1f us (the wait after the last range: %.1f us)%n", way, median(done) / 1e3,
                median(synced) / 1e3, median(tail) / 1e3);
        for (int i = 0; i < ranges; i++) {
            int index = i;
            long[] start = traces.stream().mapToLong(t -> t.start[index]).toArray();
            long[] took = traces.stream().mapToLong(t -> t.end[index] - t.start[index]).toArray();
            long onCaller = traces.stream().filter(t -> t.onCaller[index]).count();
            System.out.printf("  range %d: starts at %7.1f us (p90 %7.1f), takes %7.1f us (p10 %6.1f, p90 %7.1f), on the caller in %3d of %d%n", i,
                    median(start) / 1e3, percentile(start, 0.9) / 1e3, median(took) / 1e3, percentile(took, 0.1) / 1e3, percentile(took, 0.9) / 1e3,
                    onCaller, count);
        }
    }

    private static double median(long[] values) {
        return percentile(values, 0.5);
    }

    private static double percentile(long[] values, double p) {
        long[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[(int) Math.min(sorted.length - 1, Math.round(p * (sorted.length - 1)))];
    }

    /** Helpers that spin between jobs (never park): a copy's ranges without any wake-up. */
    private static final class HotHelpers implements AutoCloseable {
        private final List<Thread> threads = new ArrayList<>();
        private volatile boolean running = true;
        private volatile Job job;

        private static final class Job {
            final int count;
            final TransferThreads.Range range;
            final AtomicInteger next = new AtomicInteger();
            final AtomicInteger unfinished;

            Job(int count, TransferThreads.Range range) {
                this.count = count;
                this.range = range;
                this.unfinished = new AtomicInteger(count);
            }

            void work() {
                for (int i; (i = next.getAndIncrement()) < count; ) {
                    try {
                        range.copy(i);
                    } finally {
                        unfinished.decrementAndGet();
                    }
                }
            }
        }

        HotHelpers(int count) {
            for (int i = 0; i < count; i++) {
                Thread t = new Thread(() -> {
                    Job seen = null;
                    while (running) {
                        Job j = job;
                        if (j != null && j != seen) {
                            seen = j;
                            j.work();
                        } else {
                            Thread.onSpinWait();
                        }
                    }
                }, "hot-helper-" + i);
                t.setDaemon(true);
                t.start();
                threads.add(t);
            }
        }

        void copyRanges(int count, TransferThreads.Range range) {
            Job j = new Job(count, range);
            job = j;
            j.work();
            while (j.unfinished.get() > 0) {
                Thread.onSpinWait();
            }
        }

        @Override
        public void close() throws InterruptedException {
            running = false;
            for (Thread t : threads) {
                t.join();
            }
        }
    }
}
