package dev.cuhandle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import org.apache.spark.TaskKilledException;
import org.junit.jupiter.api.Test;

/**
 * The permit waits through the seam that needs no running task: first come, first served; a
 * cancelled waiter gives its place to the next; an interrupted thread does not wait; a release
 * counts once. Admission is bookkeeping per device ordinal, so each test takes an ordinal of its own
 * (no device is touched) and the tests' counts stay apart.
 */
class AdmissionWaitTest {
    private static final BooleanSupplier NEVER_KILLED = () -> false;

    @Test
    void waitersAreAdmittedInTheOrderTheyCame() throws Exception {
        int device = 11;
        GpuAdmission.Permit held = GpuAdmission.acquire(device, 1, false, NEVER_KILLED);
        CompletableFuture<GpuAdmission.Permit> first = waitInTheBackground(device, 1, NEVER_KILLED);
        awaitWaiting(device, 1);
        CompletableFuture<GpuAdmission.Permit> second = waitInTheBackground(device, 1, NEVER_KILLED);
        awaitWaiting(device, 2);

        held.release();
        GpuAdmission.Permit firstPermit = first.get(10, TimeUnit.SECONDS);
        assertTrue(firstPermit.waitedNanos() > 0);
        Thread.sleep(100);
        assertFalse(second.isDone(), "the second waiter was admitted while the first held the only permit");
        assertEquals(1, GpuAdmission.holders(device));
        assertEquals(1, GpuAdmission.waiting(device));

        firstPermit.release();
        second.get(10, TimeUnit.SECONDS).release();
        assertEquals(0, GpuAdmission.holders(device));
        assertEquals(1, GpuAdmission.maxHolders(device), "never more than the one permit");
    }

    @Test
    void aKilledWaiterLeavesTheQueueAndTheNextIsAdmitted() throws Exception {
        int device = 12;
        GpuAdmission.Permit held = GpuAdmission.acquire(device, 1, false, NEVER_KILLED);
        AtomicBoolean killed = new AtomicBoolean();
        CompletableFuture<GpuAdmission.Permit> cancelled = waitInTheBackground(device, 1, killed::get);
        awaitWaiting(device, 1);
        CompletableFuture<GpuAdmission.Permit> next = waitInTheBackground(device, 1, NEVER_KILLED);
        awaitWaiting(device, 2);

        long kill = System.nanoTime();
        killed.set(true);
        Throwable thrown = assertThrows(Exception.class, () -> cancelled.get(10, TimeUnit.SECONDS)).getCause();
        long took = System.nanoTime() - kill;
        assertTrue(thrown instanceof TaskKilledException, String.valueOf(thrown));
        assertEquals("killed while waiting for a GPU permit on device " + device, ((TaskKilledException) thrown).reason());
        assertTrue(took < TimeUnit.MILLISECONDS.toNanos(500), "the kill mark ended the wait after " + took / 1_000_000 + " ms");
        assertEquals(1, GpuAdmission.waiting(device), "the killed waiter left the queue");

        held.release();
        next.get(10, TimeUnit.SECONDS).release();
        assertEquals(0, GpuAdmission.holders(device), "the killed waiter holds no permit");
    }

    @Test
    void anInterruptedThreadDoesNotWaitAndKeepsItsFlag() {
        int device = 13;
        GpuAdmission.Permit held = GpuAdmission.acquire(device, 1, false, NEVER_KILLED);
        Thread.currentThread().interrupt();
        try {
            TaskKilledException e = assertThrows(TaskKilledException.class, () -> GpuAdmission.acquire(device, 1, false, NEVER_KILLED));
            assertTrue(e.reason().startsWith("interrupted while waiting"), e.reason());
            assertTrue(Thread.currentThread().isInterrupted(), "the flag stays set");
            // Also where a permit is free: an interrupted task is on its way out.
            assertThrows(TaskKilledException.class, () -> GpuAdmission.acquire(device, 2, false, NEVER_KILLED));
        } finally {
            Thread.interrupted();
        }
        assertEquals(0, GpuAdmission.waiting(device));
        assertEquals(1, GpuAdmission.holders(device));
        held.release();
    }

    @Test
    void aPermitIsReleasedOnceHoweverOftenReleaseIsCalled() {
        int device = 14;
        GpuAdmission.Permit a = GpuAdmission.acquire(device, 2, false, NEVER_KILLED);
        GpuAdmission.Permit b = GpuAdmission.acquire(device, 2, false, NEVER_KILLED);
        assertEquals(2, GpuAdmission.holders(device));
        a.release();
        a.release();
        assertTrue(a.isReleased());
        assertEquals(1, GpuAdmission.holders(device), "the second release of a did not take b's permit");
        b.release();
        assertEquals(0, GpuAdmission.holders(device));
        assertThrows(IllegalArgumentException.class, () -> GpuAdmission.acquire(device, 0, false, NEVER_KILLED));
        assertThrows(IllegalArgumentException.class, () -> GpuAdmission.holders(-1));
    }

    private static CompletableFuture<GpuAdmission.Permit> waitInTheBackground(int device, int limit, BooleanSupplier killed) {
        CompletableFuture<GpuAdmission.Permit> permit = new CompletableFuture<>();
        Thread waiter = new Thread(() -> {
            try {
                permit.complete(GpuAdmission.acquire(device, limit, false, killed));
            } catch (Throwable t) {
                permit.completeExceptionally(t);
            }
        }, "waits for a permit on device " + device);
        waiter.setDaemon(true);
        waiter.start();
        return permit;
    }

    static void awaitWaiting(int device, int waiting) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (GpuAdmission.waiting(device) != waiting) {
            assertTrue(System.nanoTime() < deadline, GpuAdmission.waiting(device) + " waiting on device " + device + ", expected " + waiting);
            Thread.sleep(5);
        }
    }
}
