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
        AtomicInteger onHelpers = new AtomicInteger();
        for (int t = 0; t < 6; t++) {
            long seed = 1234L + t;
            Thread caller = new Thread(() -> {
                Random random = new Random(seed);
                Thread self = Thread.currentThread();
                for (int round = 0; round < 300; round++) {
                    Parts job = new Parts(1 + random.nextInt(12), i -> {
                        if (Thread.currentThread() != self) {
                            onHelpers.incrementAndGet();
                        }
                    });
                    all.add(job);
                    helpers.offer(job, job.count - 1);
                    job.finishAsCaller(helpers);
                }
            });
            callers.add(caller);
            caller.start();
        }
        for (Thread caller : callers) {
            caller.join(120_000);
            assertTrue(!caller.isAlive(), "a caller did not finish within 2 minutes");
        }
        for (Parts job : all) {
            for (int i = 0; i < job.count; i++) {
                assertEquals(1, job.done.get(i), "part " + i + " of a job of " + job.count);
            }
        }
        assertTrue(helpers.live() <= 3, "at most the bound of helpers: " + helpers.live());
        System.out.println("parts done on helpers: " + onHelpers.get());
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
