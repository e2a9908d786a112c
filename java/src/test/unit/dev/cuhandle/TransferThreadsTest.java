package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.junit.jupiter.api.Test;

/**
 * {@link TransferThreads#copyRanges}: the caller returns only once no range runs any more (the
 * ranges use native objects that the caller releases next), and failures come back to it.
 */
class TransferThreadsTest {
    @Test
    void everyRangeIsCopiedOnceAndNoneRunsAfterTheCallReturns() {
        for (int round = 0; round < 200; round++) {
            int count = 1 + round % 8;
            AtomicIntegerArray copied = new AtomicIntegerArray(count);
            AtomicInteger running = new AtomicInteger();
            TransferThreads.copyRanges(count, i -> {
                running.incrementAndGet();
                spinMicros(20 * (i + 1));
                copied.incrementAndGet(i);
                running.decrementAndGet();
            });
            assertEquals(0, running.get(), "a range still ran when copyRanges returned");
            for (int i = 0; i < count; i++) {
                assertEquals(1, copied.get(i), "range " + i + " of " + count);
            }
        }
    }

    @Test
    void theSameExceptionFromTwoRangesComesBackAfterEveryStartedRangeEnded() {
        // The JVM throws one preallocated OutOfMemoryError from many places; a throwable cannot
        // suppress itself, and that must not cut the caller's wait short.
        RuntimeException shared = new IllegalStateException("shared failure");
        for (int round = 0; round < 50; round++) {
            AtomicInteger running = new AtomicInteger();
            RuntimeException thrown = assertThrows(RuntimeException.class, () -> TransferThreads.copyRanges(8, i -> {
                running.incrementAndGet();
                try {
                    spinMicros(200);
                    throw shared;
                } finally {
                    running.decrementAndGet();
                }
            }));
            assertSame(shared, thrown);
            assertEquals(0, running.get(), "a range still ran when copyRanges threw");
            assertEquals(0, shared.getSuppressed().length, "a throwable never suppresses itself");
        }
    }

    @Test
    void noRangeStartsAfterOneFailedAndOthersAreSuppressed() {
        AtomicInteger started = new AtomicInteger();
        RuntimeException thrown = assertThrows(RuntimeException.class, () -> TransferThreads.copyRanges(64, i -> {
            started.incrementAndGet();
            spinMicros(100);
            throw new IllegalArgumentException("range " + i);
        }));
        // Ranges already running when the first failed may fail too; none that was claimed later runs.
        assertEquals(started.get(), 1 + thrown.getSuppressed().length, "every started range's failure is reported");
        assertEquals(true, started.get() < 64, "ranges claimed after the first failure were skipped, started " + started.get());
    }

    private static void spinMicros(long micros) {
        long end = System.nanoTime() + micros * 1000;
        while (System.nanoTime() < end) {
            Thread.onSpinWait();
        }
    }
}
