package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** How {@link TransferPlan} splits copies by size, and that its properties are honoured and clamped. */
class TransferPlanTest {
    private static final long MIB = 1L << 20;

    @Test
    void smallCopiesRunInOneChunkOnOneThread() {
        try (TransferProperties p = TransferProperties.set(Map.of(TransferPlan.THREADS, 4))) {
            TransferPlan plan = TransferPlan.of(64 << 10, 4);
            assertEquals(1, plan.threads);
            assertTrue(plan.chunkBytes >= 64 << 10, plan.toString());
            assertEquals(4 * MIB, plan.slotBytes, "slots are the largest chunk, whatever this copy's size");
        }
    }

    @Test
    void largeCopiesUseEveryThreadAndChunksOfAQuarterRangeUpToTheLargestChunk() {
        try (TransferProperties p = TransferProperties.set(Map.of(TransferPlan.THREADS, 4))) {
            TransferPlan mid = TransferPlan.of(4 * MIB, 4);
            assertEquals(4, mid.threads, mid.toString());
            assertEquals(MIB, mid.rangeBytes);
            assertEquals(MIB, mid.chunkBytes, "a quarter range would be below the smallest chunk of 1 MiB: one chunk per range");
            assertTrue(mid.criticalCopy, "chunks are copied with memcpy in a critical region by default");
            TransferPlan sixteen = TransferPlan.of(16 * MIB, 4);
            assertEquals(4 * MIB, sixteen.rangeBytes);
            assertEquals(MIB, sixteen.chunkBytes, "a quarter of a 4 MiB range");
            TransferPlan big = TransferPlan.of(1L << 30, 8);
            assertEquals(4, big.threads);
            assertEquals(256 * MIB, big.rangeBytes);
            assertEquals(4 * MIB, big.chunkBytes);
        }
    }

    @Test
    void rangesAreWholeElementsAndCoverTheCopy() {
        try (TransferProperties p = TransferProperties.set(Map.of(TransferPlan.THREADS, 3, TransferPlan.BYTES_PER_THREAD, 8))) {
            for (long elements : new long[] {1, 2, 3, 10, 1001, 1L << 28}) {
                for (int size : new int[] {1, 2, 4, 8}) {
                    TransferPlan plan = TransferPlan.of(elements * size, size);
                    assertEquals(0, plan.rangeBytes % size, plan.toString());
                    assertTrue(plan.rangeBytes * plan.threads >= elements * size, plan.toString());
                    assertTrue(plan.rangeBytes * (plan.threads - 1) < elements * size, "no empty range: " + plan);
                    assertEquals(0, plan.chunkBytes % 4096, plan.toString());
                }
            }
        }
    }

    @Test
    void propertiesAreClampedAndNonsenseIsIgnored() {
        try (TransferProperties p = TransferProperties.set(Map.of(TransferPlan.THREADS, "many", TransferPlan.DEPTH, 0, TransferPlan.CHUNK_BYTES, 100,
                TransferPlan.IDLE_SLOTS, -5))) {
            TransferPlan plan = TransferPlan.of(64 * MIB, 4);
            assertEquals(Math.min(8, Runtime.getRuntime().availableProcessors()), plan.threads, "not a number: the default of up to 8 threads, one per core");
            assertEquals(1, plan.depth, "clamped to 1");
            assertEquals(4096, plan.chunkBytes, "at least one 4 KiB page");
            assertEquals(0, plan.idleSlots);
        }
        try (TransferProperties p = TransferProperties.set(Map.of(TransferPlan.CRITICAL_COPY, "no"))) {
            assertTrue(!TransferPlan.of(64 * MIB, 4).criticalCopy, "anything but true turns critical copies off");
        }
    }
}
