package dev.cuhandle;

import java.lang.ref.Cleaner;
import java.util.function.LongConsumer;

/**
 * A pointer to a native object plus its liveness: calls enter and exit, {@link #close()} waits for
 * them and frees once, and a {@link Cleaner} frees objects that became unreachable unclosed,
 * logging a warning (rule H7; creation stack with {@code -Dcuhandle.debugLeaks=true}). The free
 * action captures only this object, never the public wrapper, so the wrapper can become
 * unreachable.
 */
final class NativeObject implements Runnable {
    static final String DEBUG_LEAKS_PROPERTY = "cuhandle.debugLeaks";
    private static final Cleaner CLEANER = Cleaner.create(r -> {
        Thread t = new Thread(r, "cuhandle-cleaner");
        t.setDaemon(true);
        return t;
    });

    private final Lifetime lifetime = new Lifetime();
    private final String what;
    private final LongConsumer free;
    private final Throwable origin;
    private final long pointer;
    private volatile boolean closedExplicitly;
    private Cleaner.Cleanable cleanable;

    private NativeObject(long pointer, String what, LongConsumer free) {
        this.pointer = pointer;
        this.what = what;
        this.free = free;
        this.origin = Boolean.getBoolean(DEBUG_LEAKS_PROPERTY) ? new Throwable(what + " created here") : null;
    }

    /** Wraps {@code pointer}; {@code free} releases it exactly once. */
    static NativeObject register(Object owner, long pointer, String what, LongConsumer free) {
        NativeObject object = new NativeObject(pointer, what, free);
        object.cleanable = CLEANER.register(owner, object);
        return object;
    }

    /** Enters a call and returns the pointer; pair with {@link #exit()} in a finally block. */
    long enter() {
        lifetime.enter(what);
        return pointer;
    }

    /** The pointer if open (and a call entered), else 0. */
    long tryEnter() {
        return lifetime.tryEnter() ? pointer : 0;
    }

    void exit() {
        lifetime.exit();
    }

    boolean isClosed() {
        return lifetime.isClosed();
    }

    String what() {
        return what;
    }

    /** Closes: waits for calls in flight, then frees. Idempotent. */
    void close() {
        if (lifetime.close()) {
            closedExplicitly = true;
            cleanable.clean();
        }
    }

    /** The cleaning action: runs once, from {@link #close()} or from the cleaner thread. */
    @Override
    public void run() {
        if (!closedExplicitly) {
            String message = what + " was not closed and became unreachable; cuhandle released it. Close it (try-with-resources)"
                    + (origin == null ? " or run with -D" + DEBUG_LEAKS_PROPERTY + "=true to see where it was created" : "");
            NativeLog.LOGGER.log(System.Logger.Level.WARNING, message, origin);
        }
        try {
            free.accept(pointer);
        } catch (RuntimeException e) {
            NativeLog.LOGGER.log(System.Logger.Level.WARNING, "releasing " + what + " failed", e);
        }
    }
}
