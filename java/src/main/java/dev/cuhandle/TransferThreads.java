package dev.cuhandle;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * The threads behind array copies (rule T1): helpers that copy ranges of a large array while the
 * calling thread copies others, and the threads that run asynchronous array copies.
 *
 * <p><b>Why Java threads calling native code per range</b>, rather than native threads attached to
 * the JVM: a JNI region copy needs the calling thread's {@code JNIEnv} and a reference to the array
 * valid on that thread. A Java thread that calls {@code NativeApi.arrayCopy} with the array as an
 * argument has both for free; a native thread would have to attach itself to the JVM, be handed a
 * global reference, delete it and detach again, and a pool of attached native threads would keep
 * running (and keep the library's class loader alive) after the application stopped using
 * cuhandle. Dispatching a range to a parked thread costs a wake-up (tens of microseconds), which
 * is why a range must be large ({@link TransferPlan#BYTES_PER_THREAD}) before another thread takes
 * part, and why the helpers spin a little before they park ({@link RangeHelpers}).
 *
 * <p><b>The caller never waits for a range that has not started.</b> Ranges are claimed, not
 * assigned: the caller and every helper take the next unclaimed range until none is left, so a
 * helper that wakes late (or not at all, the pool being busy with other copies) only means the
 * caller copies more ranges itself. The caller then waits only for ranges that helpers are in the
 * middle of, which it must: they use the native handle and buffer that the caller keeps entered.
 */
final class TransferThreads {
    /** How long a helper or an asynchronous-copy thread stays without work before it ends. */
    private static final long KEEP_ALIVE_SECONDS = 30;
    /**
     * How long the caller spins, before it parks, while the last ranges finish on helpers: a range
     * takes tens of microseconds, and a parked caller would add a wake-up of as much.
     */
    private static final long CALLER_SPIN_NANOS = 1_000_000;

    /** Helpers for the ranges of large copies: a bounded pool, since the caller copies whatever they do not. */
    private static final RangeHelpers HELPERS = new RangeHelpers("cuhandle-transfer-helper", Math.max(2, Runtime.getRuntime().availableProcessors()),
            TimeUnit.SECONDS.toNanos(KEEP_ALIVE_SECONDS));
    /**
     * Runs asynchronous array copies, each on one thread for its duration (it waits for the GPU
     * between chunks). At most this many run at once; later ones queue.
     */
    static final int ASYNC_THREADS = 32;
    private static final ThreadPoolExecutor ASYNC = pool("cuhandle-transfer-async", ASYNC_THREADS);

    private TransferThreads() {}

    private static ThreadPoolExecutor pool(String name, int threads) {
        AtomicInteger count = new AtomicInteger();
        ThreadPoolExecutor pool = new ThreadPoolExecutor(threads, threads, KEEP_ALIVE_SECONDS, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
            Thread t = new Thread(r, name + "-" + count.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        pool.allowCoreThreadTimeOut(true); // an application that stops copying keeps no threads
        return pool;
    }

    /** One range of a copy: copies range {@code index}. */
    interface Range {
        void copy(int index);
    }

    /**
     * Copies ranges {@code 0 .. count - 1}, on this thread and up to {@code count - 1} helpers,
     * and returns when all are done. Throws the first failure (others suppressed) after every
     * started range has finished; no range starts after one failed.
     */
    static void copyRanges(int count, Range range) {
        Ranges job = new Ranges(count, range, Thread.currentThread());
        try {
            HELPERS.offer(job, count - 1);
            job.work();
        } finally {
            // Also after a throw above (an offer that ran out of memory): no range starts any more,
            // and the ranges helpers are in the middle of end before the caller releases the native
            // objects they use.
            job.skipUnclaimed();
            HELPERS.withdraw(job);
            job.awaitFinished();
        }
        Throwable failure = job.failure.get();
        if (failure instanceof RuntimeException) {
            throw (RuntimeException) failure;
        }
        if (failure instanceof Error) {
            throw (Error) failure;
        }
    }

    /** Runs {@code copy} on an asynchronous-copy thread. */
    static void async(Runnable copy) {
        ASYNC.execute(copy);
    }

    /**
     * Runs {@code copy} on an asynchronous-copy thread, then {@code exit} (which leaves what the copy entered), and
     * returns a future completed after both, exceptionally with what {@code copy} threw. If the copy cannot be
     * started, {@code exit} runs at once and the failure is thrown.
     */
    static CompletableFuture<Void> future(Runnable copy, Runnable exit) {
        CompletableFuture<Void> result = new CompletableFuture<>();
        Runnable task = () -> {
            Throwable failure = null;
            try {
                copy.run();
            } catch (Throwable t) {
                failure = t;
            } finally {
                exit.run();
            }
            if (failure == null) {
                result.complete(null);
            } else {
                result.completeExceptionally(failure);
            }
        };
        try {
            async(task);
        } catch (RuntimeException | Error e) {
            exit.run();
            throw e;
        }
        return result;
    }

    /** The shared state of one split copy. */
    private static final class Ranges implements RangeHelpers.Job {
        private final int count;
        private final Range range;
        private final Thread caller;
        private final AtomicInteger next = new AtomicInteger();
        /** Ranges not yet finished (or skipped after a failure). */
        private final AtomicInteger unfinished;
        final AtomicReference<Throwable> failure = new AtomicReference<>();

        Ranges(int count, Range range, Thread caller) {
            this.count = count;
            this.range = range;
            this.caller = caller;
            this.unfinished = new AtomicInteger(count);
        }

        @Override
        public boolean hasWork() {
            return next.get() < count;
        }

        /** Claims and copies ranges until none is left. */
        @Override
        public void work() {
            for (int i; (i = next.getAndIncrement()) < count; ) {
                try {
                    if (failure.get() == null) {
                        range.copy(i);
                    }
                } catch (Throwable t) {
                    recordFailure(t);
                } finally {
                    if (unfinished.decrementAndGet() == 0) {
                        LockSupport.unpark(caller);
                    }
                }
            }
        }

        /**
         * Keeps the first failure; later ones are added to it as suppressed. Never throws, so that
         * every claimed range is counted as finished: the same exception thrown by two ranges
         * (the JVM's preallocated {@code OutOfMemoryError}, say) cannot suppress itself, and a
         * suppressed list that cannot grow is not worth more than the first failure.
         */
        private void recordFailure(Throwable t) {
            if (failure.compareAndSet(null, t)) {
                return;
            }
            Throwable first = failure.get();
            if (first != t) {
                try {
                    first.addSuppressed(t);
                } catch (Throwable ignored) {
                    // out of memory for the list: the caller still gets the first failure
                }
            }
        }

        /** Claims every range nobody started and counts it as finished without copying it. */
        void skipUnclaimed() {
            while (next.getAndIncrement() < count) {
                unfinished.decrementAndGet();
            }
        }

        /**
         * Waits, without giving up on interrupt, until every range is finished: the helpers use
         * native objects that the caller releases as soon as this returns.
         */
        void awaitFinished() {
            boolean interrupted = false;
            long spinEnd = System.nanoTime() + CALLER_SPIN_NANOS;
            while (unfinished.get() > 0) {
                if (System.nanoTime() - spinEnd < 0) {
                    Thread.onSpinWait();
                } else {
                    LockSupport.park(this);
                    interrupted |= Thread.interrupted();
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
