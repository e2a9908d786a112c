package dev.cuhandle.bench;

import static dev.cuhandle.bench.CallTiming.medianNsPerCall;
import static dev.cuhandle.bench.CallTiming.nsPerCall;

import dev.cuhandle.Handle;
import dev.cuhandle.NativeTestApi;
import java.util.Arrays;

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

    private static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
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
            double[] overhead = new double[ROUNDS];
            double[] overheadNone = new double[ROUNDS];
            double[] enterExit = new double[ROUNDS];
            double[] overheadWithoutEnter = new double[ROUNDS];
            double[] overDriverCalls = new double[ROUNDS];
            double[] overDriverCallsWithoutEnter = new double[ROUNDS];
            for (int round = 0; round < ROUNDS; round++) {
                overDriverCalls[round] = ns[3][round] - ns[6][round];
                overDriverCallsWithoutEnter[round] = ns[5][round] - ns[6][round];
                overhead[round] = ns[3][round] - ns[0][round];
                overheadNone[round] = ns[2][round] - ns[0][round];
                enterExit[round] = ns[3][round] - ns[5][round];
                overheadWithoutEnter[round] = ns[5][round] - ns[0][round];
            }
            double bare = median(ns[0]);
            double alreadyCurrent = median(ns[1]);
            double noneCurrent = median(ns[2]);
            double otherCurrent = median(ns[3]);
            row("bare_jni_call", run, bare, "ns");
            row("bare_jni_call_with_env", run, median(ns[4]), "ns");
            row("call_context_already_current", run, alreadyCurrent, "ns");
            row("call_no_context_current", run, noneCurrent, "ns");
            row("call_other_context_current", run, otherCurrent, "ns");
            row("activation_overhead", run, median(overhead), "ns");
            row("activation_overhead_no_context_current", run, median(overheadNone), "ns");
            // The same call without the Java handle's enter/exit (H6, L2), and so that protocol's own price.
            row("call_other_context_current_without_enter_exit", run, median(ns[5]), "ns");
            row("handle_enter_exit", run, median(enterExit), "ns");
            row("activation_overhead_without_enter_exit", run, median(overheadWithoutEnter), "ns");
            // The same, set against the driver calls timed in these rounds rather than in the C process before.
            row("activation_driver_calls_jni", run, median(ns[6]), "ns");
            row("activation_over_driver_calls_same_rounds", run, median(overDriverCalls), "ns");
            row("activation_over_driver_calls_without_enter_exit", run, median(overDriverCallsWithoutEnter), "ns");

            // Create + close split (issue 35): its native calls alone, and the whole again, by which time the JIT has
            // compiled it (create_close above is timed from the JVM's first creates). Timed last, so that the rows
            // above run as they did before these were added.
            row("create_close_native_only", run, medianNsPerCall(100_000, REPETITIONS, () -> NativeTestApi.createAndDestroyNatively(0)) / 1e3, "us");
            row("create_close_after_warmup", run, medianNsPerCall(100_000, REPETITIONS, () -> Handle.create(0).close()) / 1e3, "us");
        }
    }
}
