package dev.cuhandle;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/** Counters shared by all workers of the soak, and the first failures in full. */
final class SoakStats {
    /** Failures printed and kept in full; later ones are only counted. */
    static final int FAILURES_SHOWN = 20;

    final LongAdder valid = new LongAdder();
    final LongAdder invalid = new LongAdder();
    final LongAdder expected = new LongAdder();
    final LongAdder unexpected = new LongAdder();
    final LongAdder notRefused = new LongAdder();
    final LongAdder mismatches = new LongAdder();
    final LongAdder leaked = new LongAdder();
    final ConcurrentHashMap<String, LongAdder> ops = new ConcurrentHashMap<>();
    final AtomicLong failures = new AtomicLong();
    final ConcurrentLinkedQueue<String> failureTexts = new ConcurrentLinkedQueue<>();

    void count(String op) {
        ops.computeIfAbsent(op, k -> new LongAdder()).increment();
    }

    void failure(String kind, String thread, String op, String message, Throwable t) {
        long k = failures.incrementAndGet();
        if (k <= FAILURES_SHOWN) {
            StringWriter w = new StringWriter();
            w.append("--- failure ").append(Long.toString(k)).append(" [").append(kind).append("] ").append(thread).append(" op ")
                    .append(op).append(": ").append(message).append('\n');
            if (t != null) {
                t.printStackTrace(new PrintWriter(w, true));
            }
            failureTexts.add(w.toString());
            System.out.println("[soak] FAILURE " + k + " [" + kind + "] " + thread + " " + op + ": " + message);
        }
    }
}
