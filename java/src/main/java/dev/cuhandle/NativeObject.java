package dev.cuhandle;

import java.lang.ref.Cleaner;
import java.util.concurrent.ThreadFactory;
import java.util.function.LongConsumer;

/**
 * A pointer to a native object plus its liveness: calls enter and exit, {@link #close()} waits for
 * them and frees once, and a {@link Cleaner} frees objects that became unreachable unclosed,
 * logging a warning (rule H7; creation stack with {@code -Dcuhandle.debugLeaks=true}). The free
 * action captures only this object, never the public wrapper, so the wrapper can become
 * unreachable.
 *
 * <p>Cleaning is closing (rule L2): the cleaner's action goes through the same protocol as
 * {@link #close()}, marking the object closed and waiting for calls in flight before it frees.
 * The public wrappers also keep themselves reachable ({@code Reference.reachabilityFence}) until
 * each native call made on their behalf has returned, so the cleaner can never run during one.
 *
 * <p>Every {@link #close()} returns only when the release is complete (rule L5), also the ones
 * that lose the race to a concurrent close.
 */
final class NativeObject implements Runnable {
    static final String DEBUG_LEAKS_PROPERTY = "cuhandle.debugLeaks";
    /** The cleaner, on a daemon thread; its factory a class, not a lambda (see {@code Cuda.SELECTED}: issue 35's cold start). */
    private static final Cleaner CLEANER = Cleaner.create(new ThreadFactory() {
        @Override
        public Thread newThread(Runnable r) {
            Thread t = new Thread(r, "cuhandle-cleaner");
            t.setDaemon(true);
            return t;
        }
    });

    /**
     * Initialises this class (the cleaner and its thread) ahead of the first native object: a process's first
     * {@code Handle.create} calls it before its native call, while the driver initialises on {@link DriverStart}'s
     * thread, instead of after it (issue 35's cold start). Later calls return at once.
     */
    static void initialise() {
        // The call itself initialises the class; nothing else to do.
    }

    private final Lifetime lifetime = new Lifetime();
    private final String what;
    private final LongConsumer free;
    private final Throwable origin;
    private final long pointer;
    /**
     * Set by the {@link #close()} that closed the lifetime, just before it runs the free action itself
     * ({@code cleanable.clean()}); read only by that action. Not volatile: it is read on the thread that wrote it,
     * or, by the cleaner thread, when no close ever ran (the owner is reachable throughout a close, so the cleaner
     * cannot take it then) and it is still false. Each volatile write is a full fence on x86, a few of which were
     * a measurable part of a create + close (docs/performance-notes.md).
     */
    private boolean closedExplicitly;
    /** Set once the free action has finished; later closers wait for it. */
    private volatile boolean released;
    /**
     * The thread running the free action, so that a close from inside it fails instead of waiting for itself. Not
     * volatile, as {@link #closedExplicitly}: the only reader that acts on it is the thread that wrote it (a close
     * from inside the action), and no other thread can read a stale value equal to itself.
     */
    private Thread releasing;
    /**
     * Threads in {@link #awaitReleased()}: the release notifies only when there are any, so the
     * common close (no concurrent closer) takes no monitor. Both sides write their volatile before
     * reading the other's, so a waiter that the release does not see sees {@code released}.
     */
    private volatile int waiters;
    private Cleaner.Cleanable cleanable;
    private boolean warnIfLeaked;

    private NativeObject(long pointer, String what, LongConsumer free) {
        this.pointer = pointer;
        this.what = what;
        this.free = free;
        this.origin = Boolean.getBoolean(DEBUG_LEAKS_PROPERTY) ? new Throwable(what + " created here") : null;
    }

    /**
     * Wraps {@code pointer}; {@code free} releases it exactly once. Call it last in the owner's
     * constructor, once nothing can fail any more, so that a failing constructor never leaves the
     * pointer to the cleaner (use {@link #freeNow} on failure instead).
     */
    static NativeObject register(Object owner, long pointer, String what, LongConsumer free) {
        return register(owner, pointer, what, free, true);
    }

    /**
     * {@link #register} for objects that own nothing worth a warning when they are not closed (views
     * of a library's variables: the library owns the memory and closes them with itself).
     */
    static NativeObject registerQuiet(Object owner, long pointer, String what, LongConsumer free) {
        return register(owner, pointer, what, free, false);
    }

    private static NativeObject register(Object owner, long pointer, String what, LongConsumer free, boolean warnIfLeaked) {
        NativeObject object = new NativeObject(pointer, what, free);
        object.warnIfLeaked = warnIfLeaked;
        object.cleanable = CLEANER.register(owner, object);
        return object;
    }

    /**
     * Runs {@code action} on the cleaner thread once {@code referent} is unreachable (for views that hold
     * their owner's memory, which has no close of its own). {@code action} must not reach {@code referent}.
     */
    static void onUnreachable(Object referent, Runnable action) {
        CLEANER.register(referent, () -> {
            try {
                action.run();
            } catch (RuntimeException e) {
                NativeLog.logger().log(System.Logger.Level.WARNING, "releasing memory behind a view failed", e);
            }
        });
    }

    /** Releases a pointer that was never registered (an owner's constructor failed), keeping {@code failure} primary. */
    static void freeNow(long pointer, LongConsumer free, Throwable failure) {
        try {
            free.accept(pointer);
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
        }
    }

    /** Enters a call and returns the pointer; pair with {@link #exit()} in a finally block. */
    long enter() {
        lifetime.enter(what);
        return pointer;
    }

    void exit() {
        lifetime.exit();
    }

    /** The pointer without entering: only for an owner that holds the object open otherwise. */
    long pointer() {
        return pointer;
    }

    /** See {@link Lifetime#awaitCallsAtMost(int)}. */
    void awaitCallsAtMost(int calls) {
        lifetime.awaitCallsAtMost(calls);
    }

    boolean isClosed() {
        return lifetime.isClosed();
    }

    String what() {
        return what;
    }

    /**
     * Closes: waits for calls in flight, then frees. Idempotent; returns when the release is done. The owner must
     * stay reachable until this returns ({@code NativeResource.closeNative} fences it): otherwise the cleaner may
     * take the release, and this would return before it is done, with a leak warning.
     */
    void close() {
        if (lifetime.close()) {
            closedExplicitly = true;
            cleanable.clean();
        } else {
            awaitReleased();
        }
    }

    private void awaitReleased() {
        if (released) {
            return;
        }
        if (releasing == Thread.currentThread()) {
            throw new IllegalStateException(what + " is being released by this thread; close() from inside its own release cannot wait for itself");
        }
        boolean interrupted = false;
        synchronized (this) {
            waiters++; // under the monitor: waiters only change here
            try {
                while (!released) {
                    try {
                        wait();
                    } catch (InterruptedException e) {
                        interrupted = true; // the release is bounded: finish waiting, keep the flag
                    }
                }
            } finally {
                waiters--;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** The cleaning action: runs once, from {@link #close()} or from the cleaner thread. */
    @Override
    public void run() {
        releasing = Thread.currentThread();
        try {
            if (!closedExplicitly) {
                // The owner became unreachable. Close through the same protocol as close(): no
                // call can be in flight (the wrappers fence themselves), but if one were, freeing
                // now would pull the memory from under it.
                lifetime.close();
            }
            if (!closedExplicitly && warnIfLeaked) {
                String message = what + " was not closed and became unreachable; cuhandle released it. Close it (try-with-resources)"
                        + (origin == null ? " or run with -D" + DEBUG_LEAKS_PROPERTY + "=true to see where it was created" : "");
                NativeLog.logger().log(System.Logger.Level.WARNING, message, origin);
            }
            free.accept(pointer);
        } catch (RuntimeException e) {
            NativeLog.logger().log(System.Logger.Level.WARNING, "releasing " + what + " failed", e);
        } finally {
            releasing = null;
            released = true;
            if (waiters > 0) {
                synchronized (this) {
                    notifyAll();
                }
            }
        }
    }
}
