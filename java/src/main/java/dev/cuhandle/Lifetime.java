package dev.cuhandle;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * Counts calls in flight on a native object and closes it only when none is (rule H6), in the
 * manner of {@code java.lang.foreign.Arena}: one atomic add to enter, one to leave. The waits park
 * ({@link Parking}, rule W1), also on an interrupted thread; the last call to leave a closed object
 * unparks the thread that closes it.
 *
 * <p>The count is the object itself (it extends {@link AtomicInteger}) rather than a field of it: one object and one
 * load fewer on every call's enter and exit and on every create (docs/performance-notes.md, issue 35).
 */
@SuppressWarnings("serial") // never serialised: package-private, and held only by NativeObject
final class Lifetime extends AtomicInteger {
    private static final int CLOSED = 1 << 30;
    /**
     * What a parked waiter names as its blocker ({@code LockSupport.getBlocker}): a string, not this object, which
     * is an {@code AtomicInteger} whose {@code set} would corrupt the count of whoever got hold of it.
     */
    private static final String BLOCKER = "cuhandle: calls in flight on a native object";
    /** The thread waiting in {@link #close()} for the calls in flight, or null. */
    private volatile Thread closer;

    /** Registers a call; throws if closed. Pair with {@link #exit()} in a finally block. */
    void enter(String what) {
        if ((getAndIncrement() & CLOSED) != 0) {
            exit(); // as a call that leaves: a closer that saw this count is woken
            throw new IllegalStateException(closedMessage(what)); // built only here: entering allocates nothing
        }
    }

    /**
     * "{@code what} is closed", with what closed it and what to do instead: a use after close is a scoping
     * mistake (the object escaped its try-with-resources block, or a handle's tracked objects were closed when
     * its unit of work ended), so the message names the closes that apply to this kind of object.
     */
    static String closedMessage(String what) {
        String closedBy;
        String instead;
        if (what.startsWith("variable ")) {
            closedBy = "its library's close(), which closes the views of the library's variables";
            instead = "look the variable up again on an open library";
        } else if (what.equals("Handle")) {
            closedBy = "its close()";
            instead = "use it only inside its try-with-resources block, or create a new one (Handle.create())";
        } else if (what.equals("Library")) {
            closedBy = "its close()";
            instead = "keep it open while its kernels and variables are in use (a library is usually loaded once and kept), or load it again";
        } else if (what.endsWith("DeviceBuffer")) {
            closedBy = "its close() or by its handle's closeTrackedResources() (a slice is closed with the buffer it was sliced from)";
            instead = "use it only inside its try-with-resources block, or allocate or upload a new one";
        } else if (what.equals("HostRegistration")) {
            closedBy = "its close()";
            instead = "use it only inside its try-with-resources block, or register the memory again";
        } else { // Event, Graph, HostBuffer: tracked by their handle too
            closedBy = "its close() or by its handle's closeTrackedResources()";
            instead = "use it only inside its try-with-resources block, or make a new one";
        }
        return what + " is closed: it was closed by " + closedBy + "; " + instead;
    }

    void exit() {
        if (decrementAndGet() == CLOSED) {
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
        if ((get() & ~CLOSED) > calls) { // checked first: the common case makes no lambda
            Parking.until(() -> (get() & ~CLOSED) <= calls, BLOCKER);
        }
    }

    boolean isClosed() {
        return (get() & CLOSED) != 0;
    }

    /**
     * Marks closed (later calls throw) and waits for calls in flight to leave. Returns true for
     * the one call that closed it; idempotent.
     */
    boolean close() {
        int s;
        do {
            s = get();
            if ((s & CLOSED) != 0) {
                return false;
            }
        } while (!compareAndSet(s, s | CLOSED));
        if ((get() & ~CLOSED) == 0) {
            return true; // no call in flight, the common case: nothing to wait for, nothing allocated
        }
        closer = Thread.currentThread();
        try {
            Parking.until(() -> (get() & ~CLOSED) == 0, BLOCKER);
        } finally {
            closer = null;
        }
        return true;
    }
}
