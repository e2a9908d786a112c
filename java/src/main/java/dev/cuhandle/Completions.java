package dev.cuhandle;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The futures of {@link Handle#whenDone()} and the asynchronous copies (rule A1), and the
 * daemon thread, {@code cuhandle-completion}, that completes them (one pool thread at a time
 * plays that part, see {@link #lead}).
 *
 * <p>How a future completes: {@code markerRecord} queues an event and a host function on the
 * handle's stream. The host function runs on a driver thread, which must not call CUDA; it only
 * adds the marker's id to a native list and wakes this class's thread, which is blocked in
 * {@code markerAwait}. That thread asks the marker's event for the outcome (a fault of the stream
 * shows up there as a {@link CudaException}), releases what the work kept entered (the buffers of
 * a copy), hands its waiting role to another pool thread and only then completes the future, so
 * that user continuations ({@code thenApply} and friends) never run on the thread that waits for
 * signals, nor on a driver thread. The driver runs no host functions after a context fault, so the thread also sweeps the
 * outstanding markers every {@link #SWEEP_NANOS}: no future waits forever for a signal that
 * cannot come.
 *
 * <p>The claim of a pending entry ({@link Pending#settle}) is synchronised per entry: the
 * completion thread, a closing handle and a joining thread may all try, exactly one releases the
 * marker.
 *
 * <p><b>Latency, and why a joiner polls.</b> The path above costs several thread wake-ups after the
 * GPU finishes: the driver's host-function thread, this class's thread, a dispatch thread, and
 * finally the thread parked in {@code join()}, each a wake-up that {@code cuStreamSynchronize}
 * does not pay (docs/measurements.md). Two are removed without giving up a guarantee. The dispatch hop: the leader completes the future itself after handing its role on
 * (leader/followers), so the successor's wake-up runs in parallel instead of in front. The
 * host-function and completion hops, for a thread that is already waiting: a future that
 * someone joins ({@code join}, {@code get}) is a {@link WaitingFuture}, whose waiting thread first
 * polls the marker's event itself ({@code cuEventQuery}, non-blocking, under the entry's monitor
 * only for the query) for up to {@link #JOIN_SPIN_NANOS}, exactly as {@code cuStreamSynchronize}
 * spins in the driver's default scheduling mode, and settles the future on its own thread when the
 * event reports done; only then does it park and leave the rest to the completion thread. Weighed
 * and not taken: completing futures inline on a fixed {@code cuhandle-completion} thread (removes
 * the same hop as the hand-over, but a continuation that blocks, for instance by joining another
 * of these futures, would stall every completion; netty and grpc accept that and document it,
 * this library promised the opposite);
 * a spinning completion thread (a bounded spin only helps work that ends within the spin window
 * after the thread last woke, and an unbounded one burns a core per process while anything is
 * outstanding); a {@code cuEventSynchronize} on the completion thread (blocks it for one stream
 * while another stream's work finishes first).
 */
final class Completions {
    /** How often outstanding markers are checked without a signal (faulted or destroyed contexts). */
    static final long SWEEP_NANOS = TimeUnit.MILLISECONDS.toNanos(20);
    /**
     * How long a thread in {@code join()} or {@code get()} polls the marker's event before it
     * parks: long enough to cover short kernels and copies, whose latency matters most, and
     * bounded so that a thread waiting for long work does not burn its core for the whole wait.
     */
    static final long JOIN_SPIN_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    /** How long the thread blocks when nothing is outstanding. */
    private static final long IDLE_NANOS = TimeUnit.SECONDS.toNanos(1);

    private static final String THREAD_NAME = "cuhandle-completion";
    private static final String DISPATCH_NAME = "cuhandle-completion-dispatch";
    private static final ConcurrentHashMap<Long, Pending> PENDING = new ConcurrentHashMap<>();
    private static final AtomicLong IDS = new AtomicLong();
    /**
     * Runs the completions, and with them the continuations that are not {@code *Async}: a
     * cached pool of daemon threads, so that a continuation that blocks never holds up the next
     * completion.
     */
    private static final ExecutorService DISPATCH = Executors.newCachedThreadPool(new ThreadFactory() {
        // A class, not a lambda: a handle's first close initialises this class, and the first lambda of a JVM
        // costs milliseconds of java.lang.invoke set-up (ColdPathLambdaTest).
        @Override
        public Thread newThread(Runnable r) {
            Thread t = new Thread(r, DISPATCH_NAME);
            t.setDaemon(true);
            return t;
        }
    });
    /** Whether a pool thread holds the lead (waits for signals); guarded by the class's monitor. */
    private static boolean leading;
    /** When the leaders last swept; only the one leader at a time touches it. */
    private static volatile long lastSweep = System.nanoTime();

    private Completions() {}

    static final int RUNNING = 0;
    static final int DONE = 1;
    static final int FAILED = 2;

    /** Work that a future waits for, and what to release once it is done. */
    static final class Pending {
        final long id;
        final Handle handle;
        final WaitingFuture future = new WaitingFuture(this);
        private final Runnable release;
        private long marker;
        private volatile boolean signalled;

        Pending(long id, Handle handle, Runnable release) {
            this.id = id;
            this.handle = handle;
            this.release = release;
        }

        /**
         * Queries the marker and, if the work is done or failed, releases what the work held and
         * completes the future: inline on this thread when {@code batch} is null (then the marker
         * is released here too), else the completion and the marker go into {@code batch} for the
         * leader to run and release. Returns {@link #RUNNING}, {@link #DONE} (also when settled
         * before) or {@link #FAILED}.
         */
        int settle(Batch batch) {
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
            if (batch != null) {
                batch.completions.add(complete);
                batch.markers.add(settled);
            } else {
                complete.run();
                releaseMarker(settled);
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
                if (PENDING.remove(id, this)) {
                    handle.pendingFutures.decrementAndGet();
                }
            };
        }
    }

    /** Futures the leader settled in one round: their completions, and the markers to release after. */
    private static final class Batch {
        final List<Runnable> completions = new ArrayList<>();
        final List<Long> markers = new ArrayList<>();
    }

    private static void releaseMarker(long marker) {
        try {
            NativeApi.markerRelease(marker);
        } catch (RuntimeException e) {
            NativeLog.logger().log(System.Logger.Level.WARNING, "releasing a completion marker failed", e);
        }
    }

    /**
     * The future handed out for a marker. A thread that waits for it ({@link #join()},
     * {@link #get()}, {@link #get(long, TimeUnit)}) first polls the marker's event for up to
     * {@link #JOIN_SPIN_NANOS} and, once the work is done, settles the future itself: the waiter
     * learns of the GPU's finish without the hand-offs of the completion thread, and the
     * continuations then run on the waiting thread (an ordinary application thread). Futures made
     * from this one ({@code thenApply} and friends) are plain {@link CompletableFuture}s.
     */
    static final class WaitingFuture extends CompletableFuture<Void> {
        private final Pending pending;

        WaitingFuture(Pending pending) {
            this.pending = pending;
        }

        /**
         * Polls the marker until the work is done or failed (then this future is settled, here or
         * by another claimant), {@code budgetNanos} passed, or the thread is interrupted. Holds no
         * lock between polls; each poll is one non-blocking {@code cuEventQuery}.
         */
        private void pollBriefly(long budgetNanos) {
            // A capturing thread must not query events (thread-local capture mode: the driver
            // would refuse and invalidate the capture); it simply waits for the completion thread.
            if (isDone() || budgetNanos <= 0 || Capture.activeOnThisThread()) {
                return;
            }
            long start = System.nanoTime();
            while (pending.settle(null) == RUNNING) {
                if (System.nanoTime() - start >= budgetNanos || Thread.currentThread().isInterrupted()) {
                    return;
                }
                Thread.onSpinWait();
            }
        }

        /**
         * Waits as {@link CompletableFuture#join()} does, after polling the GPU briefly.
         *
         * @return {@code null} once the work is done
         * @throws java.util.concurrent.CompletionException if the work failed
         */
        @Override
        public Void join() {
            pollBriefly(JOIN_SPIN_NANOS);
            return super.join();
        }

        /**
         * Waits as {@link CompletableFuture#get()} does, after polling the GPU briefly.
         *
         * @return {@code null} once the work is done
         * @throws InterruptedException if the thread is interrupted while it waits
         * @throws ExecutionException if the work failed
         */
        @Override
        public Void get() throws InterruptedException, ExecutionException {
            pollBriefly(JOIN_SPIN_NANOS);
            return super.get();
        }

        /**
         * Waits as {@link CompletableFuture#get(long, TimeUnit)} does, after polling the GPU
         * briefly (never longer than the timeout).
         *
         * @param timeout how long to wait at most
         * @param unit the unit of {@code timeout}
         * @return {@code null} once the work is done
         * @throws InterruptedException if the thread is interrupted while it waits
         * @throws ExecutionException if the work failed
         * @throws TimeoutException if the work is not done within the timeout
         */
        @Override
        public Void get(long timeout, TimeUnit unit) throws InterruptedException, ExecutionException, TimeoutException {
            pollBriefly(Math.min(JOIN_SPIN_NANOS, unit.toNanos(timeout)));
            return super.get(timeout, unit);
        }

        /**
         * Dependent futures are plain ones: only the marker's own future can poll its event.
         *
         * @param <U> the type of the dependent future's value
         * @return a new incomplete plain future
         */
        @Override
        public <U> CompletableFuture<U> newIncompleteFuture() {
            return new CompletableFuture<>();
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
            handle.pendingFutures.incrementAndGet();
            PENDING.put(id, p);
            try {
                p.marker = NativeApi.markerRecord(h, id);
            } catch (RuntimeException | Error e) {
                PENDING.remove(id);
                handle.pendingFutures.decrementAndGet();
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
        // Most handles never made a future: skip the scan, whose cost follows the map's table, which
        // never shrinks: after many futures, an empty map still costs every close a long scan
        // (docs/measurements.md).
        if (handle.pendingFutures.get() == 0) {
            return;
        }
        for (Pending p : PENDING.values()) {
            if (p.handle == handle && p.settle(null) != RUNNING) {
                // Settled here or before by the completion leader, which hands the completion to
                // a thread at once (or runs it itself): a bounded wait that runs no user code.
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
        if (!leading) {
            leading = true;
            if (!handOver(List.of())) {
                leading = false;
                throw new IllegalStateException("cuhandle could not start its completion thread");
            }
        } else {
            NativeApi.markerWake(); // the leader may be idling with the long timeout: start sweeping
        }
    }

    /**
     * Ends leadership after an idle second with nothing outstanding, so that an application that
     * stops using futures (or a class loader that is dropped) is not held by a waiting thread.
     * Under the same lock as {@link #ensureThread()}: a future tracked meanwhile starts a new
     * leader.
     */
    private static synchronized boolean stopIfIdle() {
        if (!PENDING.isEmpty()) {
            return false;
        }
        leading = false;
        return true;
    }

    /**
     * The completion thread's loop (leader/followers). One pool thread at a time leads: it waits
     * for signals under the name {@code cuhandle-completion} and settles the futures whose work
     * is done. Once it has completions to run it first hands the lead to another pool thread
     * (with the markers of this round to release, work that is off the latency path),
     * dispatches all but the last completion to pool threads, renames itself back to
     * {@code cuhandle-completion-dispatch} and runs the last one itself. The wake-up of a dispatch
     * thread is thereby no longer between the GPU's finish and the future's completion, yet a
     * continuation that blocks only ever holds its own thread: the lead has moved on.
     */
    private static void lead(List<Long> toRelease) {
        toRelease.forEach(Completions::releaseMarker);
        Thread self = Thread.currentThread();
        while (true) {
            self.setName(THREAD_NAME);
            Batch batch;
            try {
                batch = awaitCompletions();
            } finally {
                self.setName(DISPATCH_NAME);
            }
            if (batch == null) {
                return; // idle: leadership ended
            }
            List<Runnable> completions = batch.completions;
            if (handOver(batch.markers)) {
                for (int i = 0; i < completions.size() - 1; i++) {
                    dispatch(completions.get(i));
                }
                completions.get(completions.size() - 1).run(); // user code: this thread no longer leads
                return;
            }
            // No thread for a successor: keep the lead and complete this round here.
            batch.markers.forEach(Completions::releaseMarker);
            completions.forEach(Runnable::run);
        }
    }

    /** Gives the lead to a pool thread, which first releases {@code markers}; false if no thread could be had. */
    private static boolean handOver(List<Long> markers) {
        try {
            DISPATCH.execute(() -> lead(markers));
            return true;
        } catch (RejectedExecutionException | OutOfMemoryError e) {
            NativeLog.logger().log(System.Logger.Level.WARNING, "the cuhandle completion thread could not hand over; completing inline", e);
            return false;
        }
    }

    private static void dispatch(Runnable completion) {
        try {
            DISPATCH.execute(completion);
        } catch (RejectedExecutionException | OutOfMemoryError e) {
            completion.run(); // never leave a future uncompleted
        }
    }

    /**
     * Waits for signals and sweeps until at least one future is settled (returns them, non-empty)
     * or leadership ends after an idle period (returns null).
     */
    private static Batch awaitCompletions() {
        while (true) {
            try {
                boolean idle = PENDING.isEmpty();
                long[] ids = NativeApi.markerAwait(idle ? IDLE_NANOS : SWEEP_NANOS);
                if (idle && ids.length == 0 && stopIfIdle()) {
                    return null;
                }
                Batch batch = new Batch();
                for (long id : ids) {
                    Pending p = PENDING.get(id);
                    if (p != null) {
                        p.signalled = true;
                        p.settle(batch);
                    }
                }
                long now = System.nanoTime();
                if (now - lastSweep >= SWEEP_NANOS) {
                    sweep(batch);
                    lastSweep = now;
                }
                if (!batch.completions.isEmpty()) {
                    return batch;
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
    private static void sweep(Batch batch) {
        Set<Handle> healthy = new HashSet<>();
        for (Pending p : PENDING.values()) {
            if (p.signalled || !healthy.contains(p.handle)) {
                try {
                    if (p.settle(batch) != FAILED) {
                        healthy.add(p.handle);
                    }
                } catch (RuntimeException e) {
                    NativeLog.logger().log(System.Logger.Level.WARNING, "settling a cuhandle future failed", e);
                }
            }
        }
    }

}
