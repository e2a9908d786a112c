package dev.cuhandle;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * Counts calls in flight on a native object and closes it only when none is (rule H6), in the
 * manner of {@code java.lang.foreign.Arena}: one atomic add to enter, one to leave. The waits park
 * ({@link Parking}, rule W1), also on an interrupted thread; the last call to leave a closed object
 * unparks the thread that closes it.
 */
final class Lifetime {
    private static final int CLOSED = 1 << 30;
    private final AtomicInteger state = new AtomicInteger();
    /** The thread waiting in {@link #close()} for the calls in flight, or null. */
    private volatile Thread closer;

    /** Registers a call; throws if closed. Pair with {@link #exit()} in a finally block. */
    void enter(String what) {
        if ((state.getAndIncrement() & CLOSED) != 0) {
            exit(); // as a call that leaves: a closer that saw this count is woken
            throw new IllegalStateException(what + " is closed");
        }
    }

    void exit() {
        if (state.decrementAndGet() == CLOSED) {
            // The last call out of a closed object: its closer may be parked waiting for this.
            Thread waiting = closer;
            if (waiting != null) {
                LockSupport.unpark(waiting);
            }
        }
    }

    /**
     * Waits until at most {@code calls} calls are in flight (the caller's own included), for an
     * operation that must not overlap calls that entered before it (graph capture).
     */
    void awaitCallsAtMost(int calls) {
        Parking.until(() -> (state.get() & ~CLOSED) <= calls, this);
    }

    boolean isClosed() {
        return (state.get() & CLOSED) != 0;
    }

    /**
     * Marks closed (later calls throw) and waits for calls in flight to leave. Returns true for
     * the one call that closed it; idempotent.
     */
    boolean close() {
        int s;
        do {
            s = state.get();
            if ((s & CLOSED) != 0) {
                return false;
            }
        } while (!state.compareAndSet(s, s | CLOSED));
        closer = Thread.currentThread();
        try {
            Parking.until(() -> (state.get() & ~CLOSED) == 0, this);
        } finally {
            closer = null;
        }
        return true;
    }
}
