package dev.cuhandle;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * Counts calls in flight on a native object and closes it only when none is (rule H6), in the
 * manner of {@code java.lang.foreign.Arena}: one atomic add to enter, one to leave.
 */
final class Lifetime {
    private static final int CLOSED = 1 << 30;
    private final AtomicInteger state = new AtomicInteger();

    /** Registers a call; throws if closed. Pair with {@link #exit()} in a finally block. */
    void enter(String what) {
        if ((state.getAndIncrement() & CLOSED) != 0) {
            state.getAndDecrement();
            throw new IllegalStateException(what + " is closed");
        }
    }

    void exit() {
        state.getAndDecrement();
    }

    /**
     * Waits until at most {@code calls} calls are in flight (the caller's own included), for an
     * operation that must not overlap calls that entered before it (graph capture).
     */
    void awaitCallsAtMost(int calls) {
        for (int spins = 0; (state.get() & ~CLOSED) > calls; spins++) {
            if (spins < 1000) {
                Thread.onSpinWait();
            } else {
                LockSupport.parkNanos(50_000);
            }
        }
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
        for (int spins = 0; (state.get() & ~CLOSED) != 0; spins++) {
            if (spins < 1000) {
                Thread.onSpinWait();
            } else {
                LockSupport.parkNanos(50_000);
            }
        }
        return true;
    }
}
