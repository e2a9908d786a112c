package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Rule W1 of docs/design.md (no wait spins, also on an interrupted thread), the waits a {@link WaitCancellation}
 * ends, and {@link Handle#trackResources()}. Issue 33: an interrupted thread that closed a buffer or handle with a
 * copy in flight spun in {@code Lifetime.close} (951 ms of CPU in 953 ms), and {@code synchronize()} or a blocking
 * download could not be ended. Work lasts about a second: a spin kernel on a GPU, simulated time on the stand-in.
 */
@GpuTest
@StandInCapable // the spins occupy the stream in simulated time, so the waits are real there too
class WaitsGpuTest extends KernelGpuTestBase {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    /** About one second of GPU work. */
    private static final long SECOND = 100 * SPIN_CYCLES_10MS;

    /** CPU time and wall time of {@code action} on this thread, in nanoseconds. */
    private static long[] cpuAndWall(Runnable action) {
        long cpu = THREADS.getCurrentThreadCpuTime();
        long wall = System.nanoTime();
        action.run();
        return new long[] {THREADS.getCurrentThreadCpuTime() - cpu, System.nanoTime() - wall};
    }

    private static void assertParked(long[] cpuAndWall, String what) {
        long cpuMs = cpuAndWall[0] / 1_000_000;
        long wallMs = cpuAndWall[1] / 1_000_000;
        System.out.println("[waits] " + what + ": " + cpuMs + " ms of CPU in " + wallMs + " ms");
        assertTrue(wallMs >= 300, what + " returned after " + wallMs + " ms: it did not wait for the work in flight");
        assertTrue(cpuAndWall[0] < cpuAndWall[1] / 10, what + " used " + cpuMs + " ms of CPU in " + wallMs + " ms: it spun");
    }

    @Test
    void w1_anInterruptedCloseOfABufferWithACopyInFlightParksAndKeepsTheFlag() {
        try (Handle h = Handle.create(0)) {
            DeviceBuffer x = h.allocate(4096);
            EventGpuTest.spinCycles(h, SECOND);
            CompletableFuture<Void> copy = h.downloadAsync(x, new float[1024], 0, 1024); // keeps x entered until it is done
            Thread.currentThread().interrupt();
            long[] used = cpuAndWall(x::close);
            assertTrue(Thread.interrupted(), "the interrupt flag is kept");
            assertTrue(x.isClosed());
            // The copy held it open until its last chunk was done; its future completes just after (ArrayTransfers.copyAsync).
            assertDoesNotThrow(() -> copy.get(10, TimeUnit.SECONDS), "the copy in flight completes normally");
            assertParked(used, "an interrupted DeviceBuffer.close() with a copy in flight");
        }
    }

    @Test
    void w1_anInterruptedCloseOfAHandleWithACopyInFlightParksAndKeepsTheFlag() {
        Handle h = Handle.create(0);
        try (DeviceBuffer x = h.allocate(4096)) {
            EventGpuTest.spinCycles(h, SECOND);
            CompletableFuture<Void> copy = h.downloadAsync(x, new float[1024], 0, 1024);
            Thread.currentThread().interrupt();
            long[] used = cpuAndWall(h::close);
            assertTrue(Thread.interrupted(), "the interrupt flag is kept");
            assertTrue(h.isClosed());
            // The copy held it open until its last chunk was done; its future completes just after (ArrayTransfers.copyAsync).
            assertDoesNotThrow(() -> copy.get(10, TimeUnit.SECONDS), "the copy in flight completes normally");
            assertParked(used, "an interrupted Handle.close() with a copy in flight");
        } finally {
            h.close();
        }
    }

    @Test
    void w1_aCancellableSynchronizeEndsAtOnceWhenItsThreadIsInterruptedAndTheCloseStillWaitsForTheWork() throws Exception {
        Handle h = Handle.create(0);
        h.setWaitCancellation(WaitCancellation.onInterrupt());
        EventGpuTest.spinCycles(h, 2 * SECOND);
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        AtomicLong waiterCpu = new AtomicLong();
        AtomicBoolean flagKept = new AtomicBoolean();
        CountDownLatch waiting = new CountDownLatch(1);
        Thread waiter = new Thread(() -> {
            long cpu = THREADS.getCurrentThreadCpuTime();
            waiting.countDown();
            try {
                h.synchronize();
            } catch (Throwable t) {
                thrown.set(t);
            }
            waiterCpu.set(THREADS.getCurrentThreadCpuTime() - cpu);
            flagKept.set(Thread.currentThread().isInterrupted());
        });
        waiter.start();
        assertTrue(waiting.await(10, TimeUnit.SECONDS));
        Thread.sleep(300);
        long interrupted = System.nanoTime();
        waiter.interrupt();
        waiter.join(10_000);
        long endedMs = (System.nanoTime() - interrupted) / 1_000_000;
        assertTrue(thrown.get() instanceof CancellationException, "synchronize() ended with " + thrown.get());
        assertTrue(endedMs < 1000, "synchronize() ended " + endedMs + " ms after the interrupt");
        assertTrue(flagKept.get(), "the waiter's interrupt flag is kept");
        assertTrue(waiterCpu.get() < TimeUnit.MILLISECONDS.toNanos(100), "the waiter used " + waiterCpu.get() / 1_000_000 + " ms of CPU in about 300 ms");
        assertParked(cpuAndWall(h::close), "Handle.close() of a handle whose waits are cancellable, after the cancelled wait");
    }

    @Test
    void w1_aCancellationCheckEndsABlockingDownloadWithoutAnInterrupt() throws Exception {
        AtomicBoolean cancelled = new AtomicBoolean();
        try (Handle h = Handle.create(0); DeviceBuffer x = h.allocate(4096)) {
            h.setWaitCancellation(interrupted -> cancelled.get() ? new IllegalStateException("cancelled by the test") : null);
            EventGpuTest.spinCycles(h, 2 * SECOND);
            AtomicReference<Throwable> thrown = new AtomicReference<>();
            Thread waiter = new Thread(() -> {
                try {
                    x.download(new float[1024]);
                } catch (Throwable t) {
                    thrown.set(t);
                }
            });
            waiter.start();
            Thread.sleep(300);
            long cancel = System.nanoTime();
            cancelled.set(true);
            waiter.join(10_000);
            long endedMs = (System.nanoTime() - cancel) / 1_000_000;
            assertTrue(thrown.get() instanceof IllegalStateException && "cancelled by the test".equals(thrown.get().getMessage()), String.valueOf(thrown.get()));
            assertTrue(endedMs < 500, "the download ended " + endedMs + " ms after the check said so (it polls every " + WaitCancellation.POLL_MILLIS + " ms)");
            assertThrows(IllegalStateException.class, h::synchronize, "a wait that starts cancelled ends at once");
            cancelled.set(false);
            h.setWaitCancellation(null);
            h.synchronize();
            float[] back = new float[1024];
            x.download(back); // with no cancellation the handle works as before
        }
    }

    @Test
    void trackedResourcesStillOpenAreClosedInOneCall() {
        int liveBefore = StandIn.active() ? StandIn.liveAllocations() : -1;
        try (Handle h = Handle.create(0)) {
            DeviceBuffer untracked = h.allocate(256);
            assertEquals(0, h.closeTrackedResources(), "nothing is tracked before trackResources()");
            h.trackResources();
            List<DeviceBuffer> buffers = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                buffers.add(h.allocate(1024));
            }
            for (int i = 0; i < 195; i++) {
                buffers.get(i).close(); // pruned as the list grows
            }
            DeviceBuffer uploaded = h.upload(new float[] {1, 2, 3});
            HostBuffer pinned = h.allocateHost(4096);
            Event event = h.createEvent();
            assertEquals(5 + 3, h.closeTrackedResources(), "the five buffers left open, the upload, the pinned buffer and the event");
            assertTrue(uploaded.isClosed() && pinned.isClosed() && event.isClosed() && buffers.get(199).isClosed());
            assertFalse(untracked.isClosed(), "made before tracking: not the tracker's");
            assertEquals(0, h.closeTrackedResources());
            untracked.close();
        }
        if (liveBefore >= 0) {
            assertEquals(liveBefore, StandIn.liveAllocations(), "allocations left");
        }
    }
}
