package dev.cuhandle;

import java.lang.ref.WeakReference;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Counts calls in flight on a native object and closes it only when none is (rule H6), in the
 * manner of {@code java.lang.foreign.Arena}. The waits park ({@link Parking}, rule W1), also on an
 * interrupted thread; the last call to leave a closed object unparks the thread that closes it.
 *
 * <p>Two counts, whose sum is the calls in flight (issue 35, docs/performance-notes.md, "Activation"):
 * <ul>
 * <li>the <b>owner's</b>: the thread that made the object (a handle or buffer is mostly used by the thread
 * that made it) counts its calls in this object's own value (it extends {@link AtomicInteger}), which
 * only that thread writes. It enters with a volatile store (one fence) and leaves with a release store
 * ({@code lazySet}: no fence), where an atomic add each way took two locked instructions per call;</li>
 * <li>the <b>others'</b>: every other thread enters and leaves with an atomic add on {@link #others}, which
 * also holds the {@link #CLOSED} bit.</li>
 * </ul>
 * A call may leave on another thread than the one it entered on (an asynchronous copy releases its
 * buffers on the thread that completes its future): it leaves from that thread's count, so one count may
 * drift up and the other down while their sum stays right. The owner's count wraps as an {@code int}
 * and the sum is taken as one, and the others' count is kept {@link #BIAS}ed so that no drift reaches
 * the {@code CLOSED} bit.
 *
 * <p>Why a close cannot miss a call (Dekker's algorithm: all the accesses below are volatile, so they
 * fall in one order): the owner writes its count, then reads {@code CLOSED}; a close sets {@code CLOSED},
 * then reads the count. Whichever comes second sees the other's write: the close waits for the call, or
 * the call sees {@code CLOSED}, leaves and throws. An owner's release store may reach a close that
 * already looked, and the owner may not see {@code CLOSED} in time to unpark it: the close's wait then
 * ends at its next look ({@link Parking}'s parks last at most 1 ms).
 */
@SuppressWarnings("serial") // never serialised: package-private, and held only by NativeObject
final class Lifetime extends AtomicInteger {
    /** In {@link #others}: set once, by the close. */
    private static final long CLOSED = 1L << 62;
    /** The others' count starts here: a drift of 2^61 calls either way never reaches {@link #CLOSED} or the sign. */
    private static final long BIAS = 1L << 61;
    /**
     * What a parked waiter names as its blocker ({@code LockSupport.getBlocker}): a string, not this object, which
     * is an {@code AtomicInteger} whose {@code set} would corrupt the count of whoever got hold of it.
     */
    private static final String BLOCKER = "cuhandle: calls in flight on a native object";
    /**
     * Each thread's weak reference to itself, made once per thread that makes objects: an object holds its
     * owner only weakly. A strong reference would leak: the cleaner holds the object's lifetime, a finished
     * thread would stay reachable through it, and a thread that reaches the object (a field of a {@code Thread}
     * subclass, or the task a finished thread keeps on JDK 25) would keep the object from ever being cleaned.
     * A subclass, not {@code withInitial}: no lambda to bootstrap on the cold start's path.
     */
    private static final ThreadLocal<WeakReference<Thread>> SELF = new ThreadLocal<>() {
        @Override
        protected WeakReference<Thread> initialValue() {
            return new WeakReference<>(Thread.currentThread());
        }
    };
    /**
     * The thread that made the object (cleared once that thread is gone: nobody is the owner then); only it
     * writes this object's own value (its count).
     */
    private final WeakReference<Thread> owner = SELF.get();
    /** The other threads' calls plus {@link #BIAS}, and {@link #CLOSED}. */
    private final AtomicLong others = new AtomicLong(BIAS);
    /** The thread waiting in {@link #close()} for the calls in flight, or null. */
    private volatile Thread closer;

    /** Registers a call; throws if closed. Pair with {@link #exit()} in a finally block. */
    void enter(String what) {
        long state;
        if (onOwnerThread()) {
            set(get() + 1); // a volatile store: ordered before the read of CLOSED below (see the class comment)
            state = others.get();
        } else {
            state = others.getAndIncrement();
        }
        if ((state & CLOSED) != 0) {
            exit(); // as a call that leaves: a closer that saw this count is woken
            throw new IllegalStateException(closedMessage(what)); // built only here: entering allocates nothing
        }
    }

    private boolean onOwnerThread() {
        return owner.get() == Thread.currentThread();
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
        long state;
        if (onOwnerThread()) {
            lazySet(get() - 1); // a release store: the call's work is visible to the closer that reads it
            state = others.get();
        } else {
            state = others.decrementAndGet();
        }
        if ((state & CLOSED) != 0 && inFlight(state) == 0) {
            // The last call out of a closed object: its closer may be parked waiting for this.
            Thread waiting = closer;
            if (waiting != null) {
                LockSupport.unpark(waiting);
            }
        }
    }

    /**
     * The calls in flight, from {@code state} read from {@link #others} and the owner's count: for an exit, which
     * only decides whether to wake a closer (whose park ends its wait anyway).
     */
    private int inFlight(long state) {
        return get() + (int) ((state & ~CLOSED) - BIAS);
    }

    /**
     * The calls in flight, exactly: the owner's count read between two equal reads of {@link #others}. A call
     * that entered on one count and left on the other in between (an asynchronous copy) changes the others'
     * count, so with one read of each the sum could miss it; a close and a capture wait on this sum.
     */
    private int inFlight() {
        long before;
        long after = others.get();
        int owners;
        do {
            before = after;
            owners = get();
            after = others.get();
        } while (after != before);
        return owners + (int) ((after & ~CLOSED) - BIAS);
    }

    /**
     * Waits until at most {@code calls} calls are in flight (the caller's own included), for an
     * operation that must not overlap calls that entered before it (graph capture), and for a close.
     */
    void awaitCallsAtMost(int calls) {
        if (inFlight() > calls) { // checked first: the common case makes no lambda
            Parking.until(() -> inFlight() <= calls, BLOCKER);
        }
    }

    boolean isClosed() {
        return (others.get() & CLOSED) != 0;
    }

    /**
     * Marks closed (later calls throw) and waits for calls in flight to leave. Returns true for
     * the one call that closed it; idempotent.
     */
    boolean close() {
        long s;
        do {
            s = others.get();
            if ((s & CLOSED) != 0) {
                return false;
            }
        } while (!others.compareAndSet(s, s | CLOSED));
        if (inFlight() == 0) {
            return true; // no call in flight, the common case: nothing to wait for, nothing allocated
        }
        closer = Thread.currentThread();
        try {
            awaitCallsAtMost(0);
        } finally {
            closer = null;
        }
        return true;
    }
}
