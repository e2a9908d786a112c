package dev.cuhandle.spark;

import java.util.ArrayDeque;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;
import org.apache.spark.TaskKilledException;

/**
 * The admission permits of one GPU device in this JVM: how many tasks hold the device, who waits
 * for it in arrival order, how often a holder has released it, and how long tasks have waited.
 *
 * <p>Every wait here parks ({@link LockSupport#parkNanos}, rule W1 of docs/design.md); each release and each change of the
 * queue unparks the waiters, and a waiter wakes at the latest every
 * {@link dev.cuhandle.WaitCancellation#POLL_MILLIS} ms to look at the Spark task's kill mark, which nothing
 * signals. No wait spins: before each park the waiter looks at its interrupt flag and ends with a
 * {@link TaskKilledException} if it is set (a park returns at once while it is), so a thread whose
 * flag is set does not wait at all.
 *
 * <p>Why parks and not {@code Condition.awaitNanos}: an interruptible wait consumes the interrupt
 * flag, which then has to be set again, and on Spark's task threads
 * ({@code org.apache.spark.util.UninterruptibleThread}, Spark 4.1) a thread's interrupt of itself is
 * dropped while Spark's own interrupt of it is still in progress; the task would then go on with its
 * flag clear. A park leaves the flag as it is.
 *
 * <p>First come, first served: a task that polls its kill mark leaves its place only when it is
 * cancelled, so a stream of newcomers cannot starve one that waits. The limit comes with each
 * request rather than being fixed here, because each new SparkContext in the JVM reads its own
 * configuration.
 */
final class DevicePermits {
    private static final String PERMIT = "a GPU permit";
    private static final long KILL_CHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(dev.cuhandle.WaitCancellation.POLL_MILLIS);

    private final int device;
    private final ReentrantLock lock = new ReentrantLock();
    /** The threads waiting for a permit, oldest first (a thread waits for one thing at a time). */
    private final ArrayDeque<Thread> queue = new ArrayDeque<>();
    /** The threads waiting for a release ({@link #awaitRelease}). */
    private final Set<Thread> awaitingRelease = new HashSet<>();
    private int holders;
    private int maxHolders;
    private long releases;
    private long waits;
    private long waitedNanos;

    DevicePermits(int device) {
        this.device = device;
    }

    /**
     * Takes a permit: at once when nobody queues before this request and fewer than {@code limit} hold
     * one, or when {@code mustNotWait} (a barrier task, which would deadlock its stage by waiting);
     * otherwise after the requests before it, once a holder has released.
     *
     * @param limit the most holders this request admits, at least 1
     * @param mustNotWait take a permit at once even beyond {@code limit}
     * @param killed whether the Spark task was killed; looked at every 20 ms while waiting
     * @return the nanoseconds this request waited, 0 if it did not
     * @throws TaskKilledException if the thread is interrupted (the flag stays set) or {@code killed} becomes
     *     true, before or while it waits; no permit is then held
     */
    long acquire(int limit, boolean mustNotWait, BooleanSupplier killed) {
        refuseIfCancelled(killed, PERMIT);
        Thread me = Thread.currentThread();
        lock.lock();
        try {
            if (mustNotWait || (queue.isEmpty() && holders < limit)) {
                hold();
                return 0;
            }
            queue.addLast(me);
            long start = System.nanoTime();
            try {
                awaitUntil(() -> queue.peekFirst() == me && holders < limit, Long.MAX_VALUE, killed, PERMIT);
                hold();
                return System.nanoTime() - start;
            } finally {
                // Admitted: another permit may be free for the next request too. Cancelled: the request
                // behind this one may now be first. Either way the others look again.
                queue.remove(me);
                wakeWaiters();
                waits++;
                waitedNanos += System.nanoTime() - start;
            }
        } finally {
            lock.unlock();
        }
    }

    /** Gives a permit back; called once per {@link #acquire} that returned. */
    void release() {
        lock.lock();
        try {
            if (holders == 0) {
                throw new IllegalStateException("device " + device + ": a permit was released that was never taken");
            }
            holders--;
            releases++;
            wakeWaiters();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Waits until a permit of this device has been released since {@link #releases()} returned {@code seen},
     * or {@code timeoutNanos} have passed.
     *
     * @return true if a release came, false at the timeout
     * @throws TaskKilledException if the thread is interrupted (the flag stays set) or {@code killed} becomes
     *     true, before or while it waits
     */
    boolean awaitRelease(long seen, long timeoutNanos, BooleanSupplier killed) {
        long deadline = System.nanoTime() + Math.max(0, timeoutNanos);
        Thread me = Thread.currentThread();
        lock.lock();
        try {
            awaitingRelease.add(me);
            return awaitUntil(() -> releases != seen, deadline, killed, "another task's GPU permit");
        } finally {
            awaitingRelease.remove(me);
            lock.unlock();
        }
    }

    /**
     * Parks until {@code ready} or {@code deadline} (a {@link System#nanoTime()} value, {@link Long#MAX_VALUE}
     * for none); true if ready. Called with the lock held, which it gives up while parked; the caller has
     * made itself known to {@link #wakeWaiters()}.
     */
    private boolean awaitUntil(BooleanSupplier ready, long deadline, BooleanSupplier killed, String what) {
        while (true) {
            // Cancellation first, also at a wake-up that a release caused: a cancelled task takes no permit.
            refuseIfCancelled(killed, what);
            if (ready.getAsBoolean()) {
                return true;
            }
            long left = deadline == Long.MAX_VALUE ? KILL_CHECK_NANOS : deadline - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            lock.unlock();
            try {
                // An unpark that came before this park makes it return at once, so no wake-up is lost.
                LockSupport.parkNanos(this, Math.min(left, KILL_CHECK_NANOS));
            } finally {
                lock.lock();
            }
        }
    }

    /** Unparks every waiter, to look again whether what it waits for has come; called with the lock held. */
    private void wakeWaiters() {
        queue.forEach(LockSupport::unpark);
        awaitingRelease.forEach(LockSupport::unpark);
    }

    /**
     * Throws if the thread's interrupt flag is set (it stays set) or the task was killed: a thread whose flag
     * is set would return from every park at once, so it must not wait at all.
     */
    private void refuseIfCancelled(BooleanSupplier killed, String what) {
        if (Thread.currentThread().isInterrupted()) {
            throw new TaskKilledException("interrupted while waiting for " + what + " on device " + device
                    + " (Spark cancels a task by interrupting its thread)");
        }
        if (killed.getAsBoolean()) {
            throw new TaskKilledException("killed while waiting for " + what + " on device " + device);
        }
    }

    private void hold() {
        holders++;
        maxHolders = Math.max(maxHolders, holders);
    }

    /** Tasks holding a permit now. */
    int holders() {
        return (int) read(() -> holders);
    }

    /** The most tasks that have held a permit at once. */
    int maxHolders() {
        return (int) read(() -> maxHolders);
    }

    /** Requests waiting for a permit now. */
    int waiting() {
        return (int) read(queue::size);
    }

    /** Releases so far; {@link #awaitRelease} waits for this to change. */
    long releases() {
        return read(() -> releases);
    }

    /** Requests that had to wait, cancelled ones included. */
    long waits() {
        return read(() -> waits);
    }

    /** Nanoseconds requests have waited in all, cancelled ones included. */
    long waitedNanos() {
        return read(() -> waitedNanos);
    }

    private long read(LongSupplier field) {
        lock.lock();
        try {
            return field.getAsLong();
        } finally {
            lock.unlock();
        }
    }
}
