package dev.cuhandle;

import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * The waits of the lifetime code (rule W1 of docs/design.md: no wait spins). A wait spins briefly, for
 * the common case of a call that leaves within microseconds, then parks for growing intervals (up to
 * {@link #MAX_PARK_NANOS}) or until another thread unparks it. A set interrupt flag makes
 * {@code LockSupport.park} return at once, so a wait that only parked would spin on an interrupted
 * thread (a cancelled Spark task closing its buffers burned a whole core this way): the flag is
 * cleared before each park and set again before the wait returns. These waits are bounded by calls
 * that are already running, so they are not cancellable: an interrupt is kept, never lost.
 */
final class Parking {
    /** Spins before the first park: a few microseconds, the length of a short native call. */
    static final int SPINS = 1000;
    /** The first park; each later one is twice as long, up to {@link #MAX_PARK_NANOS}. */
    static final long MIN_PARK_NANOS = 50_000;
    /** The longest park: a wait that nobody unparks notices its condition within this (1 ms). */
    static final long MAX_PARK_NANOS = 1_000_000;

    private Parking() {}

    /**
     * Returns once {@code done} is true: spins, then parks (with {@code blocker} as the parking object
     * thread dumps show) until unparked or the interval ends, and looks again.
     */
    static void until(BooleanSupplier done, Object blocker) {
        if (done.getAsBoolean()) {
            return;
        }
        for (int spins = 0; spins < SPINS; spins++) {
            Thread.onSpinWait();
            if (done.getAsBoolean()) {
                return;
            }
        }
        boolean interrupted = false;
        long park = MIN_PARK_NANOS;
        while (!done.getAsBoolean()) {
            interrupted |= Thread.interrupted();
            LockSupport.parkNanos(blocker, park);
            park = Math.min(2 * park, MAX_PARK_NANOS);
        }
        if (interrupted || Thread.interrupted()) {
            Thread.currentThread().interrupt();
        }
    }
}
