package dev.cuhandle;

import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The futures of {@link Handle#whenDone()} and the asynchronous copies (rule A1), and the one
 * daemon thread, {@code cuhandle-completion}, that completes them.
 *
 * <p>How a future completes: {@code markerRecord} queues an event and a host function on the
 * handle's stream. The host function runs on a driver thread, which must not call CUDA; it only
 * adds the marker's id to a native list and wakes this class's thread, which is blocked in
 * {@code markerAwait}. That thread asks the marker's event for the outcome (a fault of the stream
 * shows up there as a {@link CudaException}), releases what the work kept entered (the buffers of
 * a copy) and hands the completion of the future to a dispatch executor, so that user
 * continuations ({@code thenApply} and friends) never run on the completion thread or on a driver
 * thread. The driver runs no host functions after a context fault, so the thread also sweeps the
 * outstanding markers every {@link #SWEEP_NANOS}: no future waits forever for a signal that
 * cannot come.
 *
 * <p>The claim of a pending entry ({@link Pending#settle}) is synchronised per entry: the
 * completion thread and a closing handle may both try, exactly one releases the marker.
 */
final class Completions {
    /** How often outstanding markers are checked without a signal (faulted or destroyed contexts). */
    static final long SWEEP_NANOS = TimeUnit.MILLISECONDS.toNanos(20);
    /** How long the thread blocks when nothing is outstanding. */
    private static final long IDLE_NANOS = TimeUnit.SECONDS.toNanos(1);

    private static final ConcurrentHashMap<Long, Pending> PENDING = new ConcurrentHashMap<>();
    private static final AtomicLong IDS = new AtomicLong();
    /**
     * Runs the completions, and with them the continuations that are not {@code *Async}: a
     * cached pool of daemon threads, so that a continuation that blocks never holds up the next
     * completion.
     */
    private static final ExecutorService DISPATCH = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "cuhandle-completion-dispatch");
        t.setDaemon(true);
        return t;
    });
    private static Thread thread;

    private Completions() {}

    static final int RUNNING = 0;
    static final int DONE = 1;
    static final int FAILED = 2;

    /** Work that a future waits for, and what to release once it is done. */
    static final class Pending {
        final long id;
        final Handle handle;
        final CompletableFuture<Void> future = new CompletableFuture<>();
        private final Runnable release;
        private long marker;
        private volatile boolean signalled;

        Pending(long id, Handle handle, Runnable release) {
            this.id = id;
            this.handle = handle;
            this.release = release;
        }

        /**
         * Queries the marker and, if the work is done or failed, releases everything and
         * completes the future (inline on this thread, or through the dispatch executor).
         * Returns {@link #RUNNING}, {@link #DONE} (also when settled before) or {@link #FAILED}.
         */
        int settle(boolean inline) {
            long settled;
            Runnable complete;
            boolean failed;
            synchronized (this) { // one claimant releases; user code never runs under this monitor
                if (marker == 0) {
                    return DONE;
                }
                Throwable failure = null;
                try {
                    if (!NativeApi.markerQuery(marker)) {
                        return RUNNING;
                    }
                } catch (RuntimeException e) {
                    failure = e;
                }
                settled = marker;
                marker = 0;
                failed = failure != null;
                complete = finish(failure);
            }
            if (inline) {
                complete.run();
            } else {
                DISPATCH.execute(complete); // first: destroying the event is not on the latency path
            }
            try {
                NativeApi.markerRelease(settled);
            } catch (RuntimeException e) {
                NativeLog.logger().log(System.Logger.Level.WARNING, "releasing a completion marker failed", e);
            }
            return failed ? FAILED : DONE;
        }

        /** Releases what the work held and returns the completion of the future. */
        private Runnable finish(Throwable failure) {
            try {
                release.run();
            } catch (RuntimeException e) {
                failure = failure == null ? e : failure;
            }
            Throwable outcome = failure;
            // Unregistered only once the future holds its result, so that settleAll can wait for it.
            return () -> {
                if (outcome == null) {
                    future.complete(null);
                } else {
                    future.completeExceptionally(outcome);
                }
                PENDING.remove(id, this);
            };
        }
    }

    /**
     * Marks the end of the work queued so far on {@code handle}'s stream and returns the future of
     * it. {@code h} is the handle's entered pointer. {@code release} runs once the work is done or
     * failed, before the future completes; when marking fails it is not run and the caller keeps
     * the responsibility.
     */
    static CompletableFuture<Void> track(Handle handle, long h, Runnable release) {
        long id = IDS.incrementAndGet();
        Pending p = new Pending(id, handle, release);
        synchronized (p) {
            PENDING.put(id, p);
            try {
                p.marker = NativeApi.markerRecord(h, id);
            } catch (RuntimeException | Error e) {
                PENDING.remove(id);
                throw e;
            }
        }
        ensureThread();
        return p.future;
    }

    /**
     * Settles every future of {@code handle} whose work is done, on this thread (the handle was
     * just closed, so its stream has been synchronised): closing a handle never leaves its
     * futures waiting. Those still running (work on another stream) are left to the thread.
     */
    static void settleAll(Handle handle) {
        for (Pending p : PENDING.values()) {
            if (p.handle == handle && p.settle(true) != RUNNING) {
                // Settled here or before by the completion thread, whose dispatch sets the result
                // first thing: a bounded wait that runs no user code.
                while (!p.future.isDone()) {
                    Thread.onSpinWait();
                }
            }
        }
    }

    /** Number of outstanding futures (for tests). */
    static int outstanding() {
        return PENDING.size();
    }

    private static synchronized void ensureThread() {
        if (thread == null) {
            thread = new Thread(Completions::run, "cuhandle-completion");
            thread.setDaemon(true);
            thread.start();
        } else {
            NativeApi.markerWake(); // it may be idling with the long timeout: start sweeping
        }
    }

    /**
     * Ends the thread after an idle second with nothing outstanding, so that an application that
     * stops using futures (or a class loader that is dropped) is not held by it. Under the same
     * lock as {@link #ensureThread()}: a future tracked meanwhile starts a new thread.
     */
    private static synchronized boolean stopIfIdle() {
        if (!PENDING.isEmpty()) {
            return false;
        }
        thread = null;
        return true;
    }

    private static void run() {
        long lastSweep = System.nanoTime();
        while (true) {
            try {
                boolean idle = PENDING.isEmpty();
                long[] ids = NativeApi.markerAwait(idle ? IDLE_NANOS : SWEEP_NANOS);
                if (idle && ids.length == 0 && stopIfIdle()) {
                    return;
                }
                for (long id : ids) {
                    Pending p = PENDING.get(id);
                    if (p != null) {
                        p.signalled = true;
                        p.settle(false);
                    }
                }
                long now = System.nanoTime();
                if (now - lastSweep >= SWEEP_NANOS) {
                    sweep();
                    lastSweep = now;
                }
            } catch (RuntimeException | Error e) {
                NativeLog.logger().log(System.Logger.Level.WARNING, "the cuhandle completion thread caught an unexpected failure; continuing", e);
            }
        }
    }

    /**
     * Finds the futures no signal will complete: one query per handle tells whether its context
     * faulted or died (then every future of it is settled, exceptionally); signalled entries that
     * were not ready yet are queried again.
     */
    private static void sweep() {
        Set<Handle> healthy = new HashSet<>();
        for (Pending p : PENDING.values()) {
            if (p.signalled || !healthy.contains(p.handle)) {
                try {
                    if (p.settle(false) != FAILED) {
                        healthy.add(p.handle);
                    }
                } catch (RuntimeException e) {
                    NativeLog.logger().log(System.Logger.Level.WARNING, "settling a cuhandle future failed", e);
                }
            }
        }
    }

}
