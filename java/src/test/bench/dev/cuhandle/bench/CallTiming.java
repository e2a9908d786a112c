package dev.cuhandle.bench;

import java.util.Arrays;

/**
 * Timing of a short call in a loop, for the harnesses that time the handle's own costs (HandleBenchmark,
 * dev.cuhandle.CreateCloseParts): ns per call over a loop of calls, and the median of repeated loops; and the
 * median the benchmarks of this package report.
 */
public final class CallTiming {
    private CallTiming() {}

    /** One call of a timed loop. */
    public interface Body {
        /** Makes the call. */
        void run();
    }

    /**
     * ns per call of {@code calls} calls of {@code body}.
     *
     * @param calls how many calls the loop makes
     * @param body the call
     * @return the loop's time divided by {@code calls}
     */
    public static double nsPerCall(int calls, Body body) {
        long t0 = System.nanoTime();
        for (int i = 0; i < calls; i++) {
            body.run();
        }
        return (System.nanoTime() - t0) / (double) calls;
    }

    /**
     * The median over {@code repetitions} timed loops (after 2 untimed ones) of {@code calls} calls, in ns per call.
     *
     * @param calls how many calls each loop makes
     * @param repetitions how many loops are timed
     * @param body the call
     * @return the median loop's ns per call
     */
    public static double medianNsPerCall(int calls, int repetitions, Body body) {
        double[] ns = new double[repetitions];
        for (int run = -2; run < repetitions; run++) {
            double value = nsPerCall(calls, body);
            if (run >= 0) {
                ns[run] = value;
            }
        }
        return median(ns);
    }

    /**
     * The median of {@code values} (the upper one of an even count), which are left as they are.
     *
     * @param values the values, at least one
     * @return the median
     */
    public static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }
}
