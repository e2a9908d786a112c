package dev.cuhandle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cuhandle.Cuda;
import dev.cuhandle.CudaException;
import dev.cuhandle.Dim3;
import dev.cuhandle.Handle;
import dev.cuhandle.Kernel;
import dev.cuhandle.StandIn;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.spark.TaskKilledException;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * GpuTask's waits outside Spark: an interrupt ends a wait for long GPU work at once, the flag
 * stays set, and closing the handle afterwards still waits for the work; GPU failures keep their
 * type and code. (Inside a task the kill mark ends them too: CancellationTest.)
 */
class CancellableWaitTest {
    private static final int WORK_MILLIS = 1500;

    @BeforeAll
    static void standIn() {
        TestSpark.requireStandIn();
    }

    @Test
    void anInterruptEndsTheWaitAndCloseStillWaitsForTheWork() throws Exception {
        Kernel kernel = GpuLibraries.resource(CancellableWaitTest.class, "/kernels/score_rows.fatbin").kernel("score_rows");
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        long[] times = new long[3]; // launched, wait ended, close returned
        boolean[] flagAfter = new boolean[1];
        long[] currentAfter = new long[1];
        int previous = StandIn.setWorkMillis(WORK_MILLIS);
        Thread waiter;
        try {
            waiter = new Thread(() -> {
                Handle h = Handle.create(0);
                try {
                    times[0] = System.nanoTime();
                    h.launch(kernel, Dim3.of(1), Dim3.of(32), 0, 0L, 0L, 0L, 1, 64); // kernels do not run on the stand-in
                    GpuTask.synchronize(h);
                } catch (Throwable t) {
                    thrown.set(t);
                } finally {
                    times[1] = System.nanoTime();
                    flagAfter[0] = Thread.currentThread().isInterrupted();
                    h.close();
                    times[2] = System.nanoTime();
                    currentAfter[0] = Cuda.currentContext();
                }
            }, "waits-for-the-gpu");
            waiter.start();
            Thread.sleep(200);
            waiter.interrupt();
            waiter.join(TimeUnit.SECONDS.toMillis(10));
        } finally {
            StandIn.setWorkMillis(previous);
        }
        assertTrue(!waiter.isAlive(), "the waiting thread did not end");
        assertTrue(thrown.get() instanceof TaskKilledException, "the wait ended with " + thrown.get());
        assertEquals(CancellableWait.INTERRUPTED, ((TaskKilledException) thrown.get()).reason());
        assertTrue(thrown.get().getCause() instanceof InterruptedException);
        assertTrue(flagAfter[0], "the interrupt flag stays set for the task's later interruptible calls");
        long waited = times[1] - times[0];
        assertTrue(waited < TimeUnit.MILLISECONDS.toNanos(WORK_MILLIS / 2), "the interrupted wait lasted " + waited / 1_000_000 + " ms");
        assertTrue(times[2] - times[0] >= TimeUnit.MILLISECONDS.toNanos(WORK_MILLIS), "close returned "
                + (times[2] - times[0]) / 1_000_000 + " ms after the launch, before the work's " + WORK_MILLIS + " ms were over");
        assertEquals(0, currentAfter[0], "nothing current on the thread after the handle closed");
        assertEquals(0, StandIn.primaryRetains(0));
    }

    @Test
    void anAlreadyInterruptedThreadDoesNotWaitAtAll() {
        try (Handle h = Handle.create(0)) {
            Thread.currentThread().interrupt();
            try {
                assertThrows(TaskKilledException.class, () -> GpuTask.synchronize(h));
                assertTrue(Thread.currentThread().isInterrupted());
            } finally {
                Thread.interrupted();
            }
        }
    }

    @Test
    void aGpuFailureKeepsItsCodeAndCauseAndOtherValuesPassThrough() {
        CudaException onGpu = new CudaException(700, "cuStreamSynchronize", "CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access");
        CudaException e = assertThrows(CudaException.class, () -> GpuTask.await(CompletableFuture.failedFuture(onGpu)));
        assertEquals(700, e.code());
        assertSame(onGpu, e.getCause());
        assertTrue(e.getMessage().contains("illegal memory access"), e.getMessage());
        assertEquals("answer", GpuTask.await(CompletableFuture.completedFuture("answer")));
        IllegalStateException other = new IllegalStateException("closed");
        assertSame(other, assertThrows(IllegalStateException.class, () -> GpuTask.await(CompletableFuture.failedFuture(other))));
    }
}
