package dev.cuhandle;

import dev.cuhandle.bench.BenchSupport;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.CUstream;
import jcuda.driver.JCudaDriver;

/**
 * Launch overhead of cuhandle against JCuda 12.6's {@code cuLaunchKernel}, in one JVM, on the same
 * empty kernels (hand-written PTX, below) with 0, 1, 3 and 6 parameters, grid 1, block 32. Both sides
 * reuse their argument block (cuhandle a {@link KernelLaunch}, rule K1; JCuda one {@code Pointer} of
 * pointers), as a tuned loop of either would.
 *
 * <p>Prints CSV rows {@code impl,group,name,n,value,unit} (tests/bench/report.py's input):
 * <ul>
 *   <li>{@code <impl>,launch,args<k>,1,<us per launch>,us}: the median of 7 runs of 50,000 asynchronous
 *       launches and one synchronize, after every implementation and argument count was warmed up; the
 *       implementations take turns run by run, who goes first rotating. impl is
 *       {@code cuhandle} (a thread with no context current, which each call leaves so),
 *       {@code cuhandle_ctx_current} (the handle's context already current) or {@code jcuda} (the primary
 *       context made current once per thread, as JCuda requires);</li>
 *   <li>{@code <impl>,launch_threads,threads<t>,<t>,<launches per s>,launches/s}: t = 1, 4, 8, 16 threads,
 *       each with its own handle (cuhandle) or its own stream and the primary context current (JCuda),
 *       launching the empty kernel for about 300 ms then synchronizing; median of 5 runs, cuhandle and
 *       JCuda taking turns.</li>
 * </ul>
 * Without JCuda's natives (JCuda does not load on this driver) only cuhandle's rows are printed, with a
 * {@code #} line saying why. Usage: {@code LaunchBenchmark [launches per run, default 50000]}.
 */
public final class LaunchBenchmark {
    /** Four empty kernels; PTX ISA 7.0 for sm_70 so that every driver of CUDA 11+ JIT-compiles it. */
    static final String PTX = ".version 7.0\n.target sm_70\n.address_size 64\n"
            + ".visible .entry bench_args0()\n{\n\tret;\n}\n"
            + ".visible .entry bench_args1(.param .u64 p0)\n{\n\tret;\n}\n"
            + ".visible .entry bench_args3(.param .u64 p0, .param .u32 p1, .param .f32 p2)\n{\n\tret;\n}\n"
            + ".visible .entry bench_args6(.param .u64 p0, .param .u64 p1, .param .u32 p2, .param .u64 p3, .param .f32 p4,"
            + " .param .f64 p5)\n{\n\tret;\n}\n";
    static final int[] ARG_COUNTS = {0, 1, 3, 6};
    static final int[] THREAD_COUNTS = {1, 4, 8, 16};
    private static final int RUNS = 7;
    private static final int THROUGHPUT_RUNS = 5;
    /** Launches per implementation and argument count before anything is timed. */
    private static final int WARM_UP_LAUNCHES = 30_000;
    private static final long THROUGHPUT_NANOS = 300_000_000L;

    private LaunchBenchmark() {}

    /** One implementation's launch loop on the calling thread: {@code launches} launches and one synchronize. */
    interface Launcher extends AutoCloseable {
        void launchAndSync(int launches);

        /** Launches until {@code deadline} (System.nanoTime), synchronizes, returns the count. */
        default long launchUntil(long deadline) {
            long count = 0;
            do {
                for (int i = 0; i < 256; i++) {
                    launchOnce();
                }
                count += 256;
            } while (System.nanoTime() < deadline);
            launchAndSync(0);
            return count;
        }

        void launchOnce();

        @Override
        void close();
    }

    /** Makes a launcher bound to the calling thread (JCuda's context is per thread). */
    interface LauncherFactory {
        Launcher onThisThread(int argCount);
    }

    /** Runs the benchmark; prints CSV rows on stdout. */
    public static void main(String[] args) throws Exception {
        BenchSupport.requireGpu("LaunchBenchmark");
        int launches = args.length > 0 ? Integer.parseInt(args[0]) : 50_000;
        Device device = Cuda.device(0);
        System.out.println("# launch overhead on " + device.name() + ": cuhandle " + Cuda.nativeLibrarySource());
        try (Library lib = Library.load(PTX.getBytes(StandardCharsets.US_ASCII)); Handle keepAlive = Handle.create(0)) {
            List<String> names = new ArrayList<>();
            List<LauncherFactory> factories = new ArrayList<>();
            names.add("cuhandle");
            factories.add(argCount -> new CuhandleLauncher(lib, argCount, false));
            names.add("cuhandle_ctx_current");
            factories.add(argCount -> new CuhandleLauncher(lib, argCount, true));
            String jcudaMissing = JCudaLauncher.unavailableReason();
            if (jcudaMissing == null) {
                names.add("jcuda");
                factories.add(JCudaLauncher::new);
            } else {
                System.out.println("# jcuda unavailable, only cuhandle measured: " + jcudaMissing);
            }
            // Every launch path warmed up (JIT-compiled) before the first timed run: otherwise the
            // first argument count measured pays for it, and the implementation measured first most.
            for (int argCount : ARG_COUNTS) {
                for (int impl = 0; impl < names.size(); impl++) {
                    LauncherFactory factory = factories.get(impl);
                    orNaN(names.get(impl), () -> onNewThread(factory, argCount, WARM_UP_LAUNCHES));
                }
            }
            for (int argCount : ARG_COUNTS) {
                double[][] us = new double[names.size()][RUNS];
                for (int run = 0; run < RUNS; run++) {
                    for (int turn = 0; turn < names.size(); turn++) {
                        // The order rotates run by run, so no implementation always goes first.
                        int impl = (turn + run) % names.size();
                        LauncherFactory factory = factories.get(impl);
                        us[impl][run] = orNaN(names.get(impl), () -> onNewThread(factory, argCount, launches));
                    }
                }
                for (int impl = 0; impl < names.size(); impl++) {
                    double median = median(us[impl]);
                    if (!Double.isNaN(median)) {
                        System.out.printf("%s,launch,args%d,1,%.4f,us%n", names.get(impl), argCount, median);
                    }
                }
            }
            List<Integer> throughputImpls = new ArrayList<>();
            for (int impl = 0; impl < names.size(); impl++) {
                if (!names.get(impl).equals("cuhandle_ctx_current")) {
                    throughputImpls.add(impl);
                }
            }
            for (int threads : THREAD_COUNTS) {
                // The implementations take turns run by run (rotating who goes first), so that drift
                // of the host over seconds hits them alike.
                double[][] perSecond = new double[names.size()][THROUGHPUT_RUNS];
                for (int run = 0; run < THROUGHPUT_RUNS; run++) {
                    for (int turn = 0; turn < throughputImpls.size(); turn++) {
                        int impl = throughputImpls.get((turn + run) % throughputImpls.size());
                        LauncherFactory factory = factories.get(impl);
                        perSecond[impl][run] = orNaN(names.get(impl), () -> throughput(factory, threads));
                    }
                }
                for (int impl : throughputImpls) {
                    double median = median(perSecond[impl]);
                    if (!Double.isNaN(median)) {
                        System.out.printf("%s,launch_threads,threads%d,%d,%.0f,launches/s%n", names.get(impl), threads, threads, median);
                    }
                }
            }
        }
    }

    /** One measurement; a failure is a {@code #} line and NaN, so one side's failure keeps the other's rows. */
    private static double orNaN(String impl, Callable<Double> measurement) {
        try {
            return measurement.call();
        } catch (Exception e) {
            System.out.println("# " + impl + " measurement failed: " + (e.getCause() != null ? e.getCause() : e));
            return Double.NaN;
        }
    }

    /** The median; NaN if any value is NaN (a failed run). */
    static double median(double[] values) {
        if (Arrays.stream(values).anyMatch(Double::isNaN)) {
            return Double.NaN;
        }
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }

    /** µs per launch of one run on a fresh thread, after 1,000 launches that are not timed. */
    private static double onNewThread(LauncherFactory factory, int argCount, int launches) throws Exception {
        double[] result = new double[1];
        Throwable[] failure = new Throwable[1];
        Thread t = new Thread(() -> {
            try (Launcher l = factory.onThisThread(argCount)) {
                l.launchAndSync(1000);
                long t0 = System.nanoTime();
                l.launchAndSync(launches);
                result[0] = (System.nanoTime() - t0) / 1e3 / launches;
            } catch (Throwable e) {
                failure[0] = e;
            }
        });
        t.start();
        t.join();
        if (failure[0] != null) {
            throw new IllegalStateException("launch benchmark thread failed", failure[0]);
        }
        return result[0];
    }

    /** Launches per second of {@code threads} threads, each with its own launcher, started together. */
    private static double throughput(LauncherFactory factory, int threads) throws Exception {
        CyclicBarrier ready = new CyclicBarrier(threads + 1);
        CyclicBarrier done = new CyclicBarrier(threads + 1);
        long[] counts = new long[threads];
        long[] deadline = new long[1];
        Throwable[] failure = new Throwable[threads];
        List<Thread> all = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            int index = i;
            Thread t = new Thread(() -> {
                try (Launcher l = factory.onThisThread(0)) {
                    l.launchAndSync(2000); // warm-up
                    ready.await();
                    ready.await(); // main has set the deadline
                    counts[index] = l.launchUntil(deadline[0]);
                } catch (Throwable e) {
                    failure[index] = e;
                    ready.reset();
                } finally {
                    try {
                        done.await();
                    } catch (Exception ignored) {
                        // a failure is reported below
                    }
                }
            });
            t.setDaemon(true); // a failed run must not keep the JVM alive on a barrier
            t.start();
            all.add(t);
        }
        ready.await();
        long t0 = System.nanoTime();
        deadline[0] = t0 + THROUGHPUT_NANOS;
        ready.await();
        done.await();
        long elapsed = System.nanoTime() - t0;
        for (Thread t : all) {
            t.join();
        }
        for (Throwable f : failure) {
            if (f != null) {
                throw new IllegalStateException("launch throughput thread failed", f);
            }
        }
        return Arrays.stream(counts).sum() / (elapsed / 1e9);
    }

    /** cuhandle: its own handle (and stream) per thread, a reusable {@link KernelLaunch}. */
    static final class CuhandleLauncher implements Launcher {
        private final Handle handle = Handle.create(0);
        private final DeviceBuffer buffer;
        private final KernelLaunch launch;

        CuhandleLauncher(Library lib, int argCount, boolean makeCurrent) {
            buffer = handle.allocate(256);
            launch = lib.kernel("bench_args" + argCount).newLaunch().grid(1).block(32).argCount(argCount);
            if (argCount == 1) {
                launch.arg(0, buffer);
            } else if (argCount == 3) {
                launch.arg(0, buffer).arg(1, 7).arg(2, 1.5f);
            } else if (argCount == 6) {
                launch.arg(0, buffer).arg(1, buffer).arg(2, 7).arg(3, 11L).arg(4, 1.5f).arg(5, 2.5);
            }
            if (makeCurrent) {
                handle.makeCurrent();
            }
        }

        @Override
        public void launchOnce() {
            launch.launch(handle);
        }

        @Override
        public void launchAndSync(int launches) {
            for (int i = 0; i < launches; i++) {
                launch.launch(handle);
            }
            handle.synchronize();
        }

        @Override
        public void close() {
            buffer.close();
            handle.close();
        }
    }

    /** JCuda: the primary context current on this thread, its own stream, one reused parameter block. */
    static final class JCudaLauncher implements Launcher {
        private static CUcontext primary;
        private static CUfunction[] functions;
        private final CUstream stream = new CUstream();
        private final CUdeviceptr buffer = new CUdeviceptr();
        private final CUfunction function;
        private final Pointer params;

        /** Loads JCuda, retains the primary context and loads the PTX; null if that worked, else why not. */
        static synchronized String unavailableReason() {
            try {
                primary = BenchSupport.jcudaRetainPrimary();
                JCudaDriver.cuCtxSetCurrent(primary);
                CUmodule module = new CUmodule();
                JCudaDriver.cuModuleLoadData(module, (PTX + "\0").getBytes(StandardCharsets.US_ASCII)); // NUL-terminated text
                functions = new CUfunction[7];
                for (int k : ARG_COUNTS) {
                    functions[k] = new CUfunction();
                    JCudaDriver.cuModuleGetFunction(functions[k], module, "bench_args" + k);
                }
                JCudaDriver.cuCtxSetCurrent(new CUcontext()); // NULL: nothing current
                return null;
            } catch (Throwable e) { // UnsatisfiedLinkError (no natives for this driver) or a CudaException
                return e.toString();
            }
        }

        JCudaLauncher(int argCount) {
            JCudaDriver.cuCtxSetCurrent(primary);
            JCudaDriver.cuStreamCreate(stream, 0);
            JCudaDriver.cuMemAlloc(buffer, 256);
            function = functions[argCount];
            if (argCount == 0) {
                params = null;
            } else if (argCount == 1) {
                params = Pointer.to(Pointer.to(buffer));
            } else if (argCount == 3) {
                params = Pointer.to(Pointer.to(buffer), Pointer.to(new int[] {7}), Pointer.to(new float[] {1.5f}));
            } else {
                params = Pointer.to(Pointer.to(buffer), Pointer.to(buffer), Pointer.to(new int[] {7}), Pointer.to(new long[] {11L}),
                        Pointer.to(new float[] {1.5f}), Pointer.to(new double[] {2.5}));
            }
        }

        @Override
        public void launchOnce() {
            JCudaDriver.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, stream, params, null);
        }

        @Override
        public void launchAndSync(int launches) {
            for (int i = 0; i < launches; i++) {
                JCudaDriver.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, stream, params, null);
            }
            JCudaDriver.cuStreamSynchronize(stream);
        }

        @Override
        public void close() {
            JCudaDriver.cuMemFree(buffer);
            JCudaDriver.cuStreamDestroy(stream);
            JCudaDriver.cuCtxSetCurrent(new CUcontext()); // NULL: nothing current
        }
    }
}
