package dev.cuhandle.bench;

import dev.cuhandle.Handle;
import dev.cuhandle.Kernel;
import dev.cuhandle.KernelLaunch;
import dev.cuhandle.Library;
import dev.cuhandle.NativeTestApi;
import dev.cuhandle.TestKernels;
import java.util.Arrays;

/**
 * The handle's own costs (issue: create+close <= 10 us with the primary context active; context
 * activation <= 100 ns per call): CSV lines {@code cuhandle,<what>,<n>,0,<median>,0} with the
 * median in µs (create/close, launches) or ns (per-call overheads), as named.
 */
public final class HandleBenchmark {
    private HandleBenchmark() {}

    interface Body {
        void run();
    }

    /** Median over 7 runs of {@code calls} calls, in ns per call. */
    private static double nsPerCall(int calls, Body body, Handle syncWith) {
        double[] ns = new double[7];
        for (int run = -2; run < ns.length; run++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < calls; i++) {
                body.run();
            }
            if (syncWith != null) {
                syncWith.synchronize();
            }
            if (run >= 0) {
                ns[run] = (System.nanoTime() - t0) / (double) calls;
            }
        }
        Arrays.sort(ns);
        return ns[ns.length / 2];
    }

    public static void main(String[] args) {
        NativeTestApi.setCurrent(0);
        try (Handle keepAlive = Handle.create(0)) { // keeps the primary context active, as the issue states
            double createClose = nsPerCall(10_000, () -> Handle.create(0).close(), null);
            System.out.printf("cuhandle,handle_create_close_us,10000,0,%.3f,0%n", createClose / 1e3);

            // Handle.stream() does only the handle protocol: enter/exit, JNI, context validation
            // (cuCtxGetId) and activation, then reads an atomic. The bare call is a JNI no-op.
            double bare = nsPerCall(1_000_000, () -> NativeTestApi.noop(1), null);
            double noneCurrent = nsPerCall(1_000_000, keepAlive::stream, null);
            keepAlive.makeCurrent();
            double alreadyCurrent = nsPerCall(1_000_000, keepAlive::stream, null);
            long user = NativeTestApi.createContext(0); // another context current: switch + restore
            double otherCurrent = nsPerCall(1_000_000, keepAlive::stream, null);
            System.out.printf("cuhandle,bare_jni_call_ns,1000000,0,%.1f,0%n", bare);
            System.out.printf("cuhandle,handle_call_ns_context_already_current,1000000,0,%.1f,0%n", alreadyCurrent);
            System.out.printf("cuhandle,handle_call_ns_no_context_current,1000000,0,%.1f,0%n", noneCurrent);
            System.out.printf("cuhandle,handle_call_ns_other_context_current,1000000,0,%.1f,0%n", otherCurrent);
            System.out.printf("cuhandle,activation_overhead_ns_over_bare_call,1000000,0,%.1f,0%n", otherCurrent - bare);
            NativeTestApi.destroyContext(user);
            NativeTestApi.setCurrent(0);

            try (Library lib = TestKernels.load()) {
                Kernel empty = lib.kernel("cuh_test_empty");
                KernelLaunch launch = empty.newLaunch().grid(1).block(1).argCount(0);
                double launchNone = nsPerCall(200_000, () -> launch.launch(keepAlive), keepAlive);
                keepAlive.makeCurrent();
                double launchCurrent = nsPerCall(200_000, () -> launch.launch(keepAlive), keepAlive);
                NativeTestApi.setCurrent(0);
                System.out.printf("cuhandle,launch_empty_us_context_current,200000,0,%.3f,0%n", launchCurrent / 1e3);
                System.out.printf("cuhandle,launch_empty_us_no_context_current,200000,0,%.3f,0%n", launchNone / 1e3);
            }
        }
    }
}
