package dev.cuhandle.bench;

import dev.cuhandle.Handle;
import dev.cuhandle.NativeTestApi;
import java.util.Arrays;

/**
 * The handle's own costs (issue: create+close <= 10 us with the primary context active; context
 * activation <= 100 ns per call over a bare JNI call). Prints CSV rows
 * {@code cuhandle,handle,<what>,<run>,<median>,<unit>} (tests/bench/report.py's input), the median over
 * 7 timed repetitions; {@code run} is the first argument (default 1), so that tests/bench/run-all.sh can
 * run this in several fresh JVMs and report.py the spread between them. Launch costs are
 * dev.cuhandle.LaunchBenchmark's.
 */
public final class HandleBenchmark {
    private HandleBenchmark() {}

    interface Body {
        void run();
    }

    /** Median over 7 runs (after 2 warm-up runs) of {@code calls} calls, in ns per call. */
    private static double nsPerCall(int calls, Body body) {
        double[] ns = new double[7];
        for (int run = -2; run < ns.length; run++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < calls; i++) {
                body.run();
            }
            if (run >= 0) {
                ns[run] = (System.nanoTime() - t0) / (double) calls;
            }
        }
        Arrays.sort(ns);
        return ns[ns.length / 2];
    }

    private static void row(String what, int run, double value, String unit) {
        System.out.printf("cuhandle,handle,%s,%d,%.3f,%s%n", what, run, value, unit);
    }

    /** Runs the measurements; prints CSV rows on stdout. */
    public static void main(String[] args) {
        BenchSupport.requireGpu("HandleBenchmark");
        int run = args.length > 0 ? Integer.parseInt(args[0]) : 1;
        NativeTestApi.setCurrent(0);
        try (Handle keepAlive = Handle.create(0)) { // keeps the primary context active, as the issue states
            row("create_close", run, nsPerCall(10_000, () -> Handle.create(0).close()) / 1e3, "us");

            // Handle.stream() does only the handle protocol: enter/exit, JNI, context validation
            // (cuCtxGetId) and activation, then reads an atomic. The bare call is a JNI no-op.
            double bare = nsPerCall(1_000_000, () -> NativeTestApi.noop(1));
            double noneCurrent = nsPerCall(1_000_000, keepAlive::stream);
            keepAlive.makeCurrent();
            double alreadyCurrent = nsPerCall(1_000_000, keepAlive::stream);
            long user = NativeTestApi.createContext(0); // another context current: switch + restore
            double otherCurrent = nsPerCall(1_000_000, keepAlive::stream);
            NativeTestApi.destroyContext(user);
            NativeTestApi.setCurrent(0);
            row("bare_jni_call", run, bare, "ns");
            row("call_context_already_current", run, alreadyCurrent, "ns");
            row("call_no_context_current", run, noneCurrent, "ns");
            row("call_other_context_current", run, otherCurrent, "ns");
            row("activation_overhead", run, otherCurrent - bare, "ns");
            row("activation_overhead_no_context_current", run, noneCurrent - bare, "ns");
        }
    }
}
