package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.junit.jupiter.api.Test;

/** The helper threads of large array copies: every part done once, helpers join, idle ones end. */
class RangeHelpersTest {
    /** Parts claimed one by one by whoever works on it, as TransferThreads' ranges are. */
    private static final class Parts implements RangeHelpers.Job {
        final int count;
        final AtomicInteger next = new AtomicInteger();
        final AtomicIntegerArray done;
        final AtomicInteger finished = new AtomicInteger();
        final java.util.function.IntConsumer each;

        Parts(int count, java.util.function.IntConsumer each) {
            this.count = count;
            this.done = new AtomicIntegerArray(count);
            this.each = each;
        }

        @Override
        public boolean hasWork() {
            return next.get() < count;
        }

        @Override
        public void work() {
            for (int i; (i = next.getAndIncrement()) < count; ) {
                each.accept(i);
                done.incrementAndGet(i);
                finished.incrementAndGet();
            }
        }

        void finishAsCaller(RangeHelpers helpers) {
            work();
            helpers.withdraw(this);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (finished.get() < count) {
                assertTrue(System.nanoTime() < deadline, "parts claimed by helpers never finished");
                Thread.onSpinWait();
            }
        }
    }

    @Test
    void helpersTakePartsWhileTheCallerWaitsForThem() throws Exception {
        RangeHelpers helpers = new RangeHelpers("test-helper", 4, TimeUnit.SECONDS.toNanos(30));
        CountDownLatch helperStarted = new CountDownLatch(1);
        Thread caller = Thread.currentThread();
        Parts job = new Parts(2, i -> {
            if (Thread.currentThread() == caller) {
                // The caller's own part waits until a helper took the other one: proves a helper joined.
                try {
                    assertTrue(helperStarted.await(30, TimeUnit.SECONDS), "no helper took a part within 30 s");
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
            } else {
                helperStarted.countDown();
            }
        });
        helpers.offer(job, 1);
        // Let the helper claim part 0 first or not: whichever part the caller gets, it waits for the other.
        job.finishAsCaller(helpers);
        assertEquals(1, job.done.get(0));
        assertEquals(1, job.done.get(1));
    }

    @Test
    void manyCallersAtOnceGetEveryPartDoneExactlyOnce() throws Exception {
        RangeHelpers helpers = new RangeHelpers("test-helper", 3, TimeUnit.SECONDS.toNanos(30));
        List<Thread> callers = new ArrayList<>();
        List<Parts> all = java.util.Collections.synchronizedList(new ArrayList<>());
        java.util.Set<Thread> helperThreads = java.util.concurrent.ConcurrentHashMap.newKeySet();
        java.util.Queue<Throwable> failures = new java.util.concurrent.ConcurrentLinkedQueue<>();
        List<Thread> callerThreads = java.util.Collections.synchronizedList(new ArrayList<>());
        for (int t = 0; t < 6; t++) {
            long seed = 1234L + t;
            Thread caller = new Thread(() -> {
                Random random = new Random(seed);
                for (int round = 0; round < 300; round++) {
                    Parts job = new Parts(1 + random.nextInt(12), i -> {
                        if (!callerThreads.contains(Thread.currentThread())) {
                            helperThreads.add(Thread.currentThread());
                        }
                    });
                    all.add(job);
                    helpers.offer(job, job.count - 1);
                    job.finishAsCaller(helpers);
                }
            });
            caller.setUncaughtExceptionHandler((thread, e) -> failures.add(e)); // finishAsCaller's timeout, say
            callerThreads.add(caller);
            callers.add(caller);
        }
        callers.forEach(Thread::start);
        for (Thread caller : callers) {
            caller.join(120_000);
            assertTrue(!caller.isAlive(), "a caller did not finish within 2 minutes");
        }
        assertTrue(failures.isEmpty(), "a caller failed: " + failures.peek());
        for (Parts job : all) {
            for (int i = 0; i < job.count; i++) {
                assertEquals(1, job.done.get(i), "part " + i + " of a job of " + job.count);
            }
        }
        // The keep-alive time (30 s) outlasts the test, so every helper that ever ran is counted.
        assertTrue(helperThreads.size() <= 3, "at most the bound of helpers ran parts: " + helperThreads.size());
        assertTrue(helpers.live() <= 3, "at most the bound of helpers alive: " + helpers.live());
    }

    @Test
    void anInterruptedHelperStillParks() throws Exception {
        RangeHelpers helpers = new RangeHelpers("test-helper", 1, TimeUnit.SECONDS.toNanos(30));
        AtomicInteger helperParts = new AtomicInteger();
        Thread[] helper = new Thread[1];
        Thread caller = Thread.currentThread();
        CountDownLatch taken = new CountDownLatch(1);
        Parts job = new Parts(2, i -> {
            if (Thread.currentThread() != caller) {
                helper[0] = Thread.currentThread();
                helperParts.incrementAndGet();
                Thread.currentThread().interrupt(); // as a stray interrupt would
                taken.countDown();
            } else {
                try {
                    assertTrue(taken.await(30, TimeUnit.SECONDS), "no helper took a part within 30 s");
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
            }
        });
        helpers.offer(job, 1);
        job.finishAsCaller(helpers);
        assertTrue(helperParts.get() >= 1, "the helper took a part (or both)");
        // After its spin (50 µs by default) the helper must be parked, not spinning on a set interrupt flag.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (helper[0].getState() != Thread.State.TIMED_WAITING && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertEquals(Thread.State.TIMED_WAITING, helper[0].getState(), "the helper parks after a job that left it interrupted");
        assertTrue(!helper[0].isInterrupted(), "the interrupt was cleared");
    }

    @Test
    void idleHelpersEndAfterTheKeepAliveTime() throws Exception {
        String before = System.getProperty(RangeHelpers.SPIN_MICROS);
        System.setProperty(RangeHelpers.SPIN_MICROS, "0");
        try {
            RangeHelpers helpers = new RangeHelpers("test-helper", 2, TimeUnit.MILLISECONDS.toNanos(50));
            Parts job = new Parts(3, i -> {});
            helpers.offer(job, 2);
            assertTrue(helpers.live() >= 1, "an offer with no helper alive starts one");
            job.finishAsCaller(helpers);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (helpers.live() > 0 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertEquals(0, helpers.live(), "helpers idle for the keep-alive time end");
            // And a later offer starts them again.
            Parts again = new Parts(3, i -> {});
            helpers.offer(again, 2);
            assertTrue(helpers.live() >= 1);
            again.finishAsCaller(helpers);
            assertEquals(3, again.finished.get());
        } finally {
            if (before == null) {
                System.clearProperty(RangeHelpers.SPIN_MICROS);
            } else {
                System.setProperty(RangeHelpers.SPIN_MICROS, before);
            }
        }
    }
}
