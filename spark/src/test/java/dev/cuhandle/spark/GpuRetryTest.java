package dev.cuhandle.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cuhandle.CudaError;
import dev.cuhandle.CudaException;
import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.Handle;
import dev.cuhandle.StandIn;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.apache.spark.TaskKilledException;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * GpuRetry.run: an out-of-memory error, injected or from the stand-in driver, becomes a retry that
 * succeeds; when every attempt runs out of memory the last error is thrown saying how many attempts
 * were made; other exceptions pass at once; the wait between attempts ends at another task's
 * release, at its bound, or at an interrupt. The split form: {@link Split}.
 */
class GpuRetryTest {
    private Handle handle;

    @BeforeAll
    static void standIn() {
        TestSpark.requireStandIn();
    }

    @BeforeEach
    void createHandle() {
        handle = Handle.create(0);
    }

    @AfterEach
    void closeHandle() {
        StandIn.failNextAllocations(0);
        handle.close();
    }

    /** A CudaException as an allocation that ran out of memory throws it. */
    static CudaException outOfMemory() {
        return new CudaException(CudaError.OUT_OF_MEMORY.code(), "cuMemAllocFromPoolAsync",
                "CUDA_ERROR_OUT_OF_MEMORY (2): out of memory (injected by the test)");
    }

    /** Work that throws {@link #outOfMemory()} on its first {@code failures} attempts, then returns the attempt number. */
    static Supplier<Integer> failingFirst(int failures, AtomicInteger attempts) {
        return () -> {
            int attempt = attempts.incrementAndGet();
            if (attempt <= failures) {
                throw outOfMemory();
            }
            return attempt;
        };
    }

    @Test
    void anInjectedOutOfMemoryErrorBecomesARetryThatSucceeds() {
        AtomicInteger attempts = new AtomicInteger();
        assertEquals(3, GpuRetry.run(handle, failingFirst(2, attempts)), "the third attempt's result");
        assertEquals(3, attempts.get());
    }

    @Test
    void aRealOutOfMemoryErrorOfTheDriverBecomesARetryThatSucceeds() {
        long[] values = {7, 8, 9};
        int liveBefore = StandIn.liveAllocations();
        AtomicInteger attempts = new AtomicInteger();
        AtomicReference<CudaException> firstError = new AtomicReference<>();
        // The allocation trims the pool and tries once more itself (rule M1 of docs/design.md): two
        // failures of the stand-in's allocations on this thread make one OUT_OF_MEMORY for GpuRetry.
        StandIn.failNextAllocations(2);
        long[] back = GpuRetry.run(handle, () -> {
            attempts.incrementAndGet();
            try (DeviceBuffer d = handle.upload(values)) {
                long[] out = new long[values.length];
                d.download(out);
                return out;
            } catch (CudaException e) {
                firstError.compareAndSet(null, e);
                throw e;
            }
        });
        assertArrayEquals(values, back);
        assertEquals(2, attempts.get());
        assertEquals(CudaError.OUT_OF_MEMORY, firstError.get().error(), "the driver's error: " + firstError.get());
        handle.synchronize();
        assertEquals(liveBefore, StandIn.liveAllocations(), "nothing of either attempt is left allocated");
    }

    @Test
    void whenEveryAttemptRunsOutOfMemoryTheLastErrorIsThrownSayingHowManyAttempts() {
        List<CudaException> thrown = new ArrayList<>();
        CudaException e = assertThrows(CudaException.class, () -> GpuRetry.run(handle, 3, () -> {
            CudaException oom = outOfMemory();
            thrown.add(oom);
            throw oom;
        }));
        assertEquals(3, thrown.size(), "three attempts");
        assertEquals(CudaError.OUT_OF_MEMORY, e.error());
        assertEquals("cuMemAllocFromPoolAsync", e.operation());
        assertSame(thrown.get(2), e.getCause(), "the last attempt's error is the cause");
        assertTrue(e.getMessage().startsWith("cuMemAllocFromPoolAsync failed: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory (injected by the test); "
                + "out of memory on all 3 attempts that GpuRetry made"), e.getMessage());

        StandIn.failNextAllocations(1000);
        CudaException real = assertThrows(CudaException.class, () -> GpuRetry.run(handle, 1, () -> handle.allocate(1024)));
        assertEquals(CudaError.OUT_OF_MEMORY, real.error());
        assertTrue(real.getMessage().contains("bytes free") && real.getMessage().contains("out of memory on all 1 attempt that GpuRetry made"),
                real.getMessage());
    }

    @Test
    void otherExceptionsPassAtOnceAndUnchanged() {
        AtomicInteger attempts = new AtomicInteger();
        CudaException illegalAddress = new CudaException(700, "cuStreamSynchronize", "CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access");
        assertSame(illegalAddress, assertThrows(CudaException.class, () -> GpuRetry.run(handle, () -> {
            attempts.incrementAndGet();
            throw illegalAddress;
        })));
        IllegalArgumentException bad = new IllegalArgumentException("not a GPU problem");
        assertSame(bad, assertThrows(IllegalArgumentException.class, () -> GpuRetry.run(handle, () -> {
            attempts.incrementAndGet();
            throw bad;
        })));
        assertEquals(2, attempts.get(), "one attempt each");
        assertThrows(IllegalArgumentException.class, () -> GpuRetry.run(handle, 0, () -> 1));
        assertThrows(NullPointerException.class, () -> GpuRetry.run(null, () -> 1));
        assertThrows(NullPointerException.class, () -> GpuRetry.run(handle, null));
    }

    @Test
    void theWaitBetweenAttemptsEndsWhenAnotherTaskReleasesItsPermit() throws Exception {
        GpuAdmission.Permit otherTask = GpuAdmission.acquire(0, 2, false, () -> false);
        long[] attemptAt = new long[2];
        AtomicLong releasedAt = new AtomicLong();
        AtomicInteger attempts = new AtomicInteger();
        // A first wait of 30 s: only the release can end it within the test's bounds.
        GpuRetry retry = GpuRetry.withWaits(handle, 2, TimeUnit.SECONDS.toNanos(30));
        Integer result = retry.retrying(() -> {
            int attempt = attempts.incrementAndGet();
            attemptAt[attempt - 1] = System.nanoTime();
            if (attempt == 1) {
                CompletableFuture.runAsync(() -> {
                    sleep(300);
                    releasedAt.set(System.nanoTime());
                    otherTask.release();
                });
                throw outOfMemory();
            }
            return attempt;
        });
        assertEquals(2, result);
        long afterRelease = attemptAt[1] - releasedAt.get();
        assertTrue(afterRelease >= 0 && afterRelease < TimeUnit.SECONDS.toNanos(1),
                "the second attempt came " + afterRelease / 1_000_000 + " ms after the other task's release");
    }

    @Test
    void withoutAReleaseTheWaitBetweenAttemptsIsBounded() {
        long[] attemptAt = new long[2];
        AtomicInteger attempts = new AtomicInteger();
        GpuRetry retry = GpuRetry.withWaits(handle, 2, TimeUnit.MILLISECONDS.toNanos(300));
        retry.retrying(() -> {
            int attempt = attempts.incrementAndGet();
            attemptAt[attempt - 1] = System.nanoTime();
            if (attempt == 1) {
                throw outOfMemory();
            }
            return attempt;
        });
        long between = attemptAt[1] - attemptAt[0];
        assertTrue(between >= TimeUnit.MILLISECONDS.toNanos(300) && between < TimeUnit.SECONDS.toNanos(2),
                "the second attempt came " + between / 1_000_000 + " ms after the first");
    }

    @Test
    void anInterruptEndsTheWaitBetweenAttempts() throws Exception {
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        boolean[] flagAfter = new boolean[1];
        long[] endedAt = new long[1];
        CudaException oom = outOfMemory();
        Thread retrying = new Thread(() -> {
            try {
                GpuRetry.withWaits(handle, 2, TimeUnit.SECONDS.toNanos(30)).retrying(() -> {
                    throw oom;
                });
            } catch (Throwable t) {
                thrown.set(t);
            } finally {
                endedAt[0] = System.nanoTime();
                flagAfter[0] = Thread.currentThread().isInterrupted();
            }
        }, "retries after running out of memory");
        retrying.start();
        Thread.sleep(300);
        long interrupted = System.nanoTime();
        retrying.interrupt();
        retrying.join(TimeUnit.SECONDS.toMillis(10));
        assertTrue(thrown.get() instanceof TaskKilledException, "the wait ended with " + thrown.get());
        assertTrue(endedAt[0] - interrupted < TimeUnit.SECONDS.toNanos(1), "ended " + (endedAt[0] - interrupted) / 1_000_000 + " ms after the interrupt");
        assertTrue(flagAfter[0], "the interrupt flag stays set");
        assertSame(oom, thrown.get().getSuppressed()[0], "the out-of-memory error travels along");
    }

    @Test
    void tasksWhoseFirstAllocationRunsOutOfMemorySucceedWithTheRetry() {
        JavaSparkContext sc = TestSpark.start("local[2]");
        try {
            List<String> results = sc.parallelize(List.of(0, 1, 2, 3), 4).mapPartitions(GpuRetryTest::allocateAfterAnOutOfMemoryError).collect();
            assertEquals(List.of("partition 0: 2 attempts", "partition 1: 2 attempts", "partition 2: 2 attempts", "partition 3: 2 attempts"), results);
            assertEquals(0, GpuTask.openHandles());
        } finally {
            sc.stop();
        }
    }

    /** The task thread's next allocation fails as a real one of the driver would (the pool's own retry included). */
    private static Iterator<String> allocateAfterAnOutOfMemoryError(Iterator<Integer> partition) {
        int p = partition.next();
        Handle h = GpuTask.handle();
        AtomicInteger attempts = new AtomicInteger();
        StandIn.failNextAllocations(2);
        long sum = GpuRetry.run(h, () -> {
            attempts.incrementAndGet();
            try (DeviceBuffer d = h.upload(new long[] {p, 1})) {
                long[] back = new long[2];
                GpuTask.synchronize(h);
                d.download(back);
                return back[0] + back[1];
            }
        });
        StandIn.failNextAllocations(0);
        if (sum != p + 1) {
            throw new IllegalStateException("partition " + p + ": the round trip gave " + sum);
        }
        return Collections.singletonList("partition " + p + ": " + attempts.get() + " attempts").iterator();
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * GpuRetry.split: a range that runs out of memory is run again as halves, down to the minimum size,
     * and their results are combined in order; a range too small to halve is retried and then fails
     * naming the range. The out-of-memory errors are injected: work on more elements than the test's
     * "memory" holds throws one.
     */
    @Nested
    class Split {
        /** Runs on ranges of at most {@code fits} elements, records every range it is given, and returns the sum of squares. */
        private static GpuRetry.RangeWork<Long> sumOfSquaresFitting(long fits, List<String> tried, List<String> ran) {
            return (from, to) -> {
                tried.add(from + "-" + to);
                if (to - from > fits) {
                    throw outOfMemory();
                }
                ran.add(from + "-" + to);
                long sum = 0;
                for (long i = from; i < to; i++) {
                    sum += i * i;
                }
                return sum;
            };
        }

        @Test
        void aRangeThatRunsOutOfMemoryIsHalvedUntilThePiecesFitAndTheResultsAreCombined() {
            List<String> tried = new ArrayList<>();
            List<String> ran = new ArrayList<>();
            List<String> combined = new ArrayList<>();
            long total = GpuRetry.split(handle, 0, 1000, 10, sumOfSquaresFitting(100, tried, ran), (lower, upper) -> {
                combined.add(lower + "+" + upper);
                return lower + upper;
            });

            assertEquals(999L * 1000 * 1999 / 6, total, "the sum of i*i for i below 1000");
            // 1000 -> 500 -> 250 -> 125 -> 62 or 63: 15 ranges ran out of memory, 16 fitted.
            assertEquals(16, ran.size(), String.valueOf(ran));
            assertEquals(15 + 16, tried.size(), String.valueOf(tried));
            assertEquals(15, combined.size(), "one combination per halved range");
            long next = 0;
            for (String range : ran) {
                long from = Long.parseLong(range.split("-")[0]);
                long to = Long.parseLong(range.split("-")[1]);
                assertEquals(next, from, "the ranges ran in order and without gaps: " + ran);
                assertTrue(to - from <= 100 && to - from >= 10, range);
                next = to;
            }
            assertEquals(1000, next, "the ranges cover the whole input");
        }

        @Test
        void aRangeThatFitsRunsOnceWithoutCombining() {
            List<String> tried = new ArrayList<>();
            List<String> ran = new ArrayList<>();
            long total = GpuRetry.split(handle, 5, 8, 1, sumOfSquaresFitting(100, tried, ran), (lower, upper) -> {
                throw new AssertionError("nothing to combine");
            });
            assertEquals(25 + 36 + 49, total);
            assertEquals(List.of("5-8"), tried);
        }

        @Test
        void aRangeTooSmallToHalveIsRetriedAndThenFailsNamingTheRange() {
            List<String> tried = new ArrayList<>();
            List<String> ran = new ArrayList<>();
            // Minimum 400: [0, 1000) halves into two of 500, which cannot halve again; nothing fits.
            GpuRetry retry = GpuRetry.withWaits(handle, 2, TimeUnit.MILLISECONDS.toNanos(1));
            CudaException e = assertThrows(CudaException.class,
                    () -> retry.splitting(0, 1000, 400, sumOfSquaresFitting(0, tried, ran), Long::sum));
            assertEquals(CudaError.OUT_OF_MEMORY, e.error());
            assertTrue(e.getMessage().contains("out of memory on all 2 attempts that GpuRetry made for range [0, 500)"), e.getMessage());
            assertEquals(List.of("0-1000", "0-500", "0-500"), tried, "the upper half never ran");
            assertTrue(ran.isEmpty());
        }

        @Test
        void otherExceptionsOfARangePassUnchanged() {
            IllegalStateException bad = new IllegalStateException("not a GPU problem");
            assertSame(bad, assertThrows(IllegalStateException.class, () -> GpuRetry.split(handle, 0, 100, 1, (from, to) -> {
                throw bad;
            }, Long::sum)));
        }

        @Test
        void badRangesAndSizesAreRefused() {
            GpuRetry.RangeWork<Long> work = (from, to) -> to - from;
            assertThrows(IllegalArgumentException.class, () -> GpuRetry.split(handle, -1, 10, 1, work, Long::sum));
            assertThrows(IllegalArgumentException.class, () -> GpuRetry.split(handle, 10, 10, 1, work, Long::sum));
            assertThrows(IllegalArgumentException.class, () -> GpuRetry.split(handle, 0, 10, 0, work, Long::sum));
            assertThrows(NullPointerException.class, () -> GpuRetry.split(handle, 0, 10, 1, work, null));
            assertThrows(NullPointerException.class, () -> GpuRetry.split(handle, 0, 10, 1, null, Long::sum));
        }
    }
}
