package dev.cuhandle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.spark.TaskContext;
import org.apache.spark.TaskKilledException;
import org.apache.spark.api.java.JavaFutureAction;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.util.TaskCompletionListener;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A task waiting for a GPU permit ({@code spark.cuhandle.concurrentGpuTasks=1}, another task holds
 * it) ends within 1 s of {@code cancelJobGroup}, both when Spark interrupts its thread and when it
 * only sets the kill mark, and while it waits it parks: it uses less than 10% of a core (ThreadMXBean's
 * CPU time of the waiting thread over the time it waited). The holder ignores the cancel until the test
 * lets it go, as a task in long GPU work would, so the waiter cannot get the permit instead of ending.
 */
class AdmissionCancellationTest {
    private static final String GROUP = "waits-for-a-permit";
    /** How long the waiter waits before the cancel: long enough to measure its CPU time. */
    private static final long WAIT_MILLIS = 1500;

    /** What the waiting task saw when its wait ended. */
    private static final class WaitEnd {
        final Throwable thrown;
        final long endedAt;
        final long wallNanos;
        final long cpuNanos;
        final boolean interruptFlag;

        WaitEnd(Throwable thrown, long endedAt, long wallNanos, long cpuNanos, boolean interruptFlag) {
            this.thrown = thrown;
            this.endedAt = endedAt;
            this.wallNanos = wallNanos;
            this.cpuNanos = cpuNanos;
            this.interruptFlag = interruptFlag;
        }
    }

    private static final AtomicReference<WaitEnd> WAITER = new AtomicReference<>();
    private static volatile boolean holderMayEnd;

    @BeforeAll
    static void standIn() {
        TestSpark.requireStandIn();
    }

    @ParameterizedTest(name = "interruptOnCancel = {0}")
    @ValueSource(booleans = {true, false})
    void aTaskWaitingForAPermitEndsWithinOneSecondOfTheCancelAndParksWhileItWaits(boolean interruptOnCancel) throws Exception {
        WAITER.set(null);
        holderMayEnd = false;
        JavaSparkContext sc = TestSpark.start("local[2]", GpuAdmission.CONCURRENT_TASKS_KEY, "1");
        try {
            sc.setJobGroup(GROUP, "one task holds the only permit, the other waits for it", interruptOnCancel);
            JavaFutureAction<List<String>> job = sc.parallelize(List.of(0, 1), 2).mapPartitions(AdmissionCancellationTest::holdOrWait)
                    .collectAsync();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (GpuAdmission.holders(0) != 1 || GpuAdmission.waiting(0) != 1) {
                assertTrue(System.nanoTime() < deadline, "holders " + GpuAdmission.holders(0) + ", waiting " + GpuAdmission.waiting(0));
                Thread.sleep(10);
            }
            Thread.sleep(WAIT_MILLIS);
            long cancelled = System.nanoTime();
            sc.cancelJobGroup(GROUP);

            ExecutionException ended = assertThrows(ExecutionException.class, () -> job.get(10, TimeUnit.SECONDS));
            assertTrue(String.valueOf(ended.getCause().getMessage()).contains("cancel"), "the job ended by cancellation: " + ended.getCause());
            // Without an interrupt the job fails at the cancel, before its tasks have looked at their kill mark.
            while (WAITER.get() == null && System.nanoTime() < cancelled + TimeUnit.SECONDS.toNanos(5)) {
                Thread.sleep(5);
            }
            WaitEnd end = WAITER.get();
            assertNotNull(end, "the waiting task recorded the end of its wait");
            long took = end.endedAt - cancelled;
            assertTrue(took < TimeUnit.SECONDS.toNanos(1), "the wait ended " + took / 1_000_000 + " ms after the cancel");
            assertTrue(end.thrown instanceof TaskKilledException, "the wait ended with " + (end.thrown == null ? "a permit" : end.thrown));
            String reason = ((TaskKilledException) end.thrown).reason();
            if (interruptOnCancel) {
                assertTrue(reason.startsWith("interrupted while waiting for a GPU permit on device 0"), reason);
                assertTrue(end.interruptFlag, "the interrupt flag stays set for the task's later calls");
            } else {
                assertEquals("killed while waiting for a GPU permit on device 0", reason);
            }

            assertTrue(end.wallNanos >= TimeUnit.MILLISECONDS.toNanos(WAIT_MILLIS), "waited " + end.wallNanos / 1_000_000 + " ms");
            double share = (double) end.cpuNanos / end.wallNanos;
            assertTrue(share < 0.10, String.format("the waiting thread used %.1f%% of a core while it waited (%d ms CPU in %d ms)",
                    100 * share, end.cpuNanos / 1_000_000, end.wallNanos / 1_000_000));

            assertEquals(1, GpuAdmission.holders(0), "the holder kept its permit all along");
            holderMayEnd = true;
            while ((GpuAdmission.holders(0) != 0 || GpuAdmission.waiting(0) != 0) && System.nanoTime() < cancelled + TimeUnit.SECONDS.toNanos(5)) {
                Thread.sleep(10);
            }
            assertEquals(0, GpuAdmission.holders(0), "the killed holder's permit was released by its completion listener");
            assertEquals(0, GpuAdmission.waiting(0));
        } finally {
            holderMayEnd = true;
            sc.stop();
        }
    }

    /**
     * The first task to ask holds the permit until the test lets it go, then ends killed; the other waits for
     * the permit and records how the wait ended.
     */
    private static Iterator<String> holdOrWait(Iterator<Integer> ignored) {
        TaskContext task = TaskContext.get();
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long cpuStart = threads.getCurrentThreadCpuTime();
        long wallStart = System.nanoTime();
        GpuAdmission.Permit permit;
        try {
            permit = GpuAdmission.acquire(task, 0);
        } catch (RuntimeException e) {
            long now = System.nanoTime();
            WAITER.set(new WaitEnd(e, now, now - wallStart, threads.getCurrentThreadCpuTime() - cpuStart, Thread.currentThread().isInterrupted()));
            throw e;
        }
        task.addTaskCompletionListener((TaskCompletionListener) completed -> permit.release());
        if (permit.waitedNanos() > 0) {
            // The waiter was admitted instead of ending: recorded so that the test says so.
            WAITER.set(new WaitEnd(null, System.nanoTime(), permit.waitedNanos(), 0, Thread.currentThread().isInterrupted()));
        }
        boolean interrupted = false;
        while (!holderMayEnd && System.nanoTime() - wallStart < TimeUnit.SECONDS.toNanos(60)) {
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                interrupted = true; // held on to, as by a task in long GPU work, until the test lets go
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        task.killTaskIfInterrupted();
        return Collections.singletonList("the holder was never cancelled").iterator();
    }
}
