package dev.cuhandle.bench;

import static dev.cuhandle.bench.CallTiming.median;
import static dev.cuhandle.bench.CallTiming.medianNsPerCall;
import static dev.cuhandle.bench.CallTiming.nsPerCall;

import dev.cuhandle.Handle;
import dev.cuhandle.NativeTestApi;

/**
 * The handle's own costs (create+close <= 10 us with the primary context active; context activation
 * <= 60 ns per call over a bare JNI call, issue 13). Prints CSV rows
 * {@code cuhandle,handle,<what>,<run>,<median>,<unit>} (tests/bench/report.py's input): create+close the
 * median of 7 timed repetitions, the calls the median of 15 rounds in which they take turns
 * (tests/bench/activation_floor.c times the driver calls beneath them the same way). {@code run} is the
 * first argument (default 1), so that tests/bench/run-all.sh can run this in several fresh JVMs and
 * report.py the spread between them. Launch costs are dev.cuhandle.LaunchBenchmark's.
 */
public final class HandleBenchmark {
    private HandleBenchmark() {}

    /** Rounds of the call measurements; calls per measurement in a round. */
    private static final int ROUNDS = 15;
    private static final int ROUND_CALLS = 200_000;
    /** Timed repetitions of the create + close loops (CallTiming.medianNsPerCall). */
    private static final int REPETITIONS = 7;

    /** The median over the rounds of {@code a[round] - b[round]}: two calls set against each other round by round. */
    private static double medianDifference(double[] a, double[] b) {
        double[] differences = new double[a.length];
        for (int round = 0; round < a.length; round++) {
            differences[round] = a[round] - b[round];
        }
        return median(differences);
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
            row("create_close", run, medianNsPerCall(10_000, REPETITIONS, () -> Handle.create(0).close()) / 1e3, "us");

            // Handle.stream() does only the handle protocol: enter/exit, JNI, context validation
            // (cuCtxGetId) and activation, then reads an atomic. The bare call is a JNI no-op entered
            // as Handle.stream() is (entry_without_env!: no jni attach guard), so that the difference is
            // the activation alone; the no-op through entry! (with the guard, which the calls that need a
            // JNIEnv pay) is timed too, as bare_jni_call_with_env.
            // The seven take turns round by round and each overhead is the median of its per-round
            // differences, so drift of the host's speed over seconds (docs/measurements.md) hits a
            // call and the bare call it is set against alike.
            long user = NativeTestApi.createContext(0); // another context: switch + restore
            NativeTestApi.setCurrent(0);
            long pointer = NativeTestApi.pointerOf(keepAlive); // open until the end of this block
            // The driver calls beneath the activation, made from Rust in the same rounds (issue 35): the floor
            // the C process (activation_floor.c) times too, but in this JVM, at this JVM's speed, entered as
            // Handle.stream() is, so that the per-round difference is cuhandle's own share.
            long primary = NativeTestApi.retainPrimary(0); // the handle's context; released below
            long primaryId = NativeTestApi.contextId(primary);
            NativeTestApi.setCurrent(user);
            if (NativeTestApi.activationDriverCalls(primary, primaryId) != 2) {
                throw new AssertionError("the driver floor did not switch contexts with another context current");
            }
            NativeTestApi.setCurrent(0);
            double[][] ns = new double[7][ROUNDS];
            for (int round = -2; round < ROUNDS; round++) { // two warm-up rounds
                double bare = nsPerCall(ROUND_CALLS, () -> NativeTestApi.withoutEnv(0));
                double bareWithEnv = nsPerCall(ROUND_CALLS, () -> NativeTestApi.noop(1));
                double noneCurrent = nsPerCall(ROUND_CALLS, keepAlive::stream);
                keepAlive.makeCurrent();
                double alreadyCurrent = nsPerCall(ROUND_CALLS, keepAlive::stream);
                NativeTestApi.setCurrent(user);
                double otherCurrent = nsPerCall(ROUND_CALLS, keepAlive::stream);
                double otherCurrentWithoutEnter = nsPerCall(ROUND_CALLS, () -> NativeTestApi.handleStream(pointer));
                double driverCalls = nsPerCall(ROUND_CALLS, () -> NativeTestApi.activationDriverCalls(primary, primaryId));
                NativeTestApi.setCurrent(0);
                if (round >= 0) {
                    ns[0][round] = bare;
                    ns[1][round] = alreadyCurrent;
                    ns[2][round] = noneCurrent;
                    ns[3][round] = otherCurrent;
                    ns[4][round] = bareWithEnv;
                    ns[5][round] = otherCurrentWithoutEnter;
                    ns[6][round] = driverCalls;
                }
            }
            NativeTestApi.releasePrimary(0);
            NativeTestApi.destroyContext(user);
            NativeTestApi.setCurrent(0);
            row("bare_jni_call", run, median(ns[0]), "ns");
            row("bare_jni_call_with_env", run, median(ns[4]), "ns");
            row("call_context_already_current", run, median(ns[1]), "ns");
            row("call_no_context_current", run, median(ns[2]), "ns");
            row("call_other_context_current", run, median(ns[3]), "ns");
            row("activation_overhead", run, medianDifference(ns[3], ns[0]), "ns");
            row("activation_overhead_no_context_current", run, medianDifference(ns[2], ns[0]), "ns");
            // The same call without the Java handle's enter/exit (H6, L2), and so that protocol's own price.
            row("call_other_context_current_without_enter_exit", run, median(ns[5]), "ns");
            row("handle_enter_exit", run, medianDifference(ns[3], ns[5]), "ns");
            row("activation_overhead_without_enter_exit", run, medianDifference(ns[5], ns[0]), "ns");
            // The same, set against the driver calls timed in these rounds rather than in the C process before.
            row("activation_driver_calls_jni", run, median(ns[6]), "ns");
            row("activation_over_driver_calls_same_rounds", run, medianDifference(ns[3], ns[6]), "ns");
            row("activation_over_driver_calls_without_enter_exit", run, medianDifference(ns[5], ns[6]), "ns");

            // Create + close split (issue 35): its native calls alone, and the whole again, by which time the JIT has
            // compiled it (create_close above is timed from the JVM's first creates). Timed last, so that the rows
            // above run as they did before these were added.
            row("create_close_native_only", run, medianNsPerCall(100_000, REPETITIONS, () -> NativeTestApi.createAndDestroyNatively(0)) / 1e3, "us");
            row("create_close_after_warmup", run, medianNsPerCall(100_000, REPETITIONS, () -> Handle.create(0).close()) / 1e3, "us");
        }
    }
}
