package dev.cuhandle;

import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * The helper threads that copy ranges of large array copies (rule T1), kept hot between copies.
 *
 * <p><b>Why not a {@code ThreadPoolExecutor}:</b> a range handed to one of its parked workers goes
 * through the executor's queue lock and a condition, and the worker wakes when the scheduler gets to
 * it. On the H200 host (docs/performance.md, "Range helpers woken directly") the executor's helpers
 * started the ranges of a 4 MiB upload 77-178 µs (medians) after the copy began, when one range of
 * 1 MiB takes about 95 µs, so the caller copied up to half the ranges itself and 4 MiB uploads ran
 * at 0.83-1.01 times JCuda's speed; with these helpers they started 39-76 µs in, and the uploads ran
 * at 1.02-1.82 times.
 *
 * <p>Here an offer unparks parked helpers directly, as many as the job can use less those spinning,
 * which find it themselves (when many callers offer at once, spinning helpers go to the oldest job
 * first and a later one may get fewer: its caller copies the rest). A helper that finished a range
 * spins for {@value #SPIN_MICROS} (default {@value #DEFAULT_SPIN_MICROS} µs) looking for the next
 * copy before it parks, as OpenMP's workers do, so copies that follow each other find their helpers
 * running. New helpers are started up to the pool's bound.
 *
 * <p>A helper parked for the keep-alive time without work ends (the constructor's; 30 s for
 * {@link TransferThreads}), so an application that stops copying keeps no threads. Nothing here is
 * needed for a copy to finish: its caller claims every range no helper took.
 */
final class RangeHelpers {
    /** System property: microseconds a helper looks for new work before it parks; 0 parks at once. */
    static final String SPIN_MICROS = "cuhandle.transfer.spinMicros";
    static final long DEFAULT_SPIN_MICROS = 50;
    private static final long MAX_SPIN_MICROS = 100_000;

    /** Work that helpers can take part in. */
    interface Job {
        /** Whether a part of the job is still unclaimed. */
        boolean hasWork();

        /** Claims and does parts until none is left; never throws. */
        void work();
    }

    private final String name;
    private final int max;
    private final long keepAliveNanos;
    private final ConcurrentLinkedQueue<Job> jobs = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedDeque<Helper> parked = new ConcurrentLinkedDeque<>();
    private final AtomicInteger live = new AtomicInteger();
    private final AtomicInteger spinning = new AtomicInteger();
    private final AtomicInteger started = new AtomicInteger();

    RangeHelpers(String name, int max, long keepAliveNanos) {
        this.name = name;
        this.max = max;
        this.keepAliveNanos = keepAliveNanos;
    }

    /** Helper threads alive now (for tests). */
    int live() {
        return live.get();
    }

    /** Offers {@code job} to up to {@code helpers} helpers; they join while it {@link Job#hasWork() has work}. */
    void offer(Job job, int helpers) {
        jobs.add(job);
        int wanted = helpers - spinning.get(); // spinning helpers find the job by themselves
        while (wanted > 0) {
            Helper idle = parked.pollFirst();
            if (idle == null) {
                break;
            }
            idle.wake();
            wanted--;
        }
        while (wanted > 0 && startHelper()) {
            wanted--;
        }
    }

    /** Takes {@code job} off the list once no part of it is unclaimed (its caller, after its own work). */
    void withdraw(Job job) {
        jobs.remove(job);
    }

    private boolean startHelper() {
        for (int now; (now = live.get()) < max; ) {
            if (live.compareAndSet(now, now + 1)) {
                try {
                    Thread t = new Thread(new Helper()::run, name + "-" + started.incrementAndGet());
                    t.setDaemon(true);
                    t.start();
                    return true;
                } catch (Throwable e) {
                    live.decrementAndGet(); // no thread (out of memory, or too many): the caller copies more itself
                    return false;
                }
            }
        }
        return false;
    }

    /** The oldest job with unclaimed parts; finished ones are dropped on the way. */
    private Job findJob() {
        for (Job job; (job = jobs.peek()) != null; ) {
            if (job.hasWork()) {
                return job;
            }
            jobs.remove(job);
        }
        return null;
    }

    private static long spinNanos() {
        return TimeUnit.MICROSECONDS.toNanos(TransferPlan.property(SPIN_MICROS, DEFAULT_SPIN_MICROS, 0, MAX_SPIN_MICROS));
    }

    private final class Helper {
        private volatile Thread thread;
        /** Set by {@link #wake}: an offer chose this helper, so it must look for work again. */
        private volatile boolean woken;

        void wake() {
            woken = true;
            LockSupport.unpark(thread);
        }

        void run() {
            thread = Thread.currentThread();
            try {
                for (Job job; (job = next()) != null; ) {
                    job.work();
                    // Nobody answers an interrupt here; left set, it would make every park below
                    // return at once and the helper spin until its keep-alive time ran out.
                    Thread.interrupted();
                }
            } finally {
                live.decrementAndGet();
            }
        }

        /** The next job, after spinning and then parking for it; null once idle for the keep-alive time. */
        private Job next() {
            Job job = spin();
            while (job == null) {
                woken = false;
                parked.addFirst(this);
                // The loop looks for a job again after registering, so that an offer made just
                // before is not missed: either it saw this helper parked (and wakes it) or the
                // first look below sees its job.
                long deadline = System.nanoTime() + keepAliveNanos;
                while (!woken && (job = findJob()) == null) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        if (parked.remove(this)) {
                            return null; // idle for the keep-alive time and nobody is waking it: end
                        }
                        break; // an offer took it off the list to wake it: look for that job
                    }
                    Thread.interrupted(); // as after a job: an interrupt must not turn the park into a spin
                    LockSupport.parkNanos(this, left);
                }
                parked.remove(this); // found a job, woken, or about to look again: no longer idle
                if (job == null) {
                    job = spin();
                }
            }
            return job;
        }

        private Job spin() {
            Job job = findJob();
            if (job != null) {
                return job;
            }
            long budget = spinNanos();
            if (budget == 0) {
                return null;
            }
            spinning.incrementAndGet();
            try {
                long end = System.nanoTime() + budget;
                while ((job = findJob()) == null && System.nanoTime() - end < 0) {
                    Thread.onSpinWait();
                }
                return job;
            } finally {
                spinning.decrementAndGet();
            }
        }
    }
}
