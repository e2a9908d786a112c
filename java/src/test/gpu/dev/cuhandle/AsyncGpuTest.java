package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Rule A1: pinned {@link HostBuffer}s, asynchronous copies, {@link Handle#whenDone()} futures,
 * {@link Event#query()} and {@link Handle#waitFor(Event)}. Results are checked against the data
 * that went in (CPU reference: the identity, or {@code +1} after the add-one kernel).
 */
@GpuTest
@StandInCapable // the stand-in queues host functions, events and copies in simulated time
class AsyncGpuTest extends KernelGpuTestBase {

    /** What the add-one kernel adds: kernels do not execute on the CPU stand-in driver, copies do. */
    private static float addOneEffect() {
        return StandIn.active() ? 0f : 1f;
    }

    /** Keeps {@code h}'s stream busy for about {@code millis} ms (a spin kernel; simulated time on the stand-in). */
    private static void occupy(Handle h, int millis) {
        EventGpuTest.spinCycles(h, SPIN_CYCLES_10MS * millis / 10);
    }

    @Test
    void a1_pinnedUploadKernelDownload_matchesTheCpuReference() throws Exception {
        Random random = freshRandom("a1 pinned round trip");
        int n = 1 << 20;
        float[] xs = randomFloats(random, n);
        float[] got = new float[n];
        try (Handle h = Handle.create(0); HostBuffer host = h.allocateHost(4L * n); DeviceBuffer d = h.allocate(4L * n)) {
            host.put(0, xs, 0, n);
            CompletableFuture<Void> up = h.uploadAsync(host, d);
            launchAddOne(h, d, n);
            CompletableFuture<Void> down = h.downloadAsync(d, host);
            down.get(30, TimeUnit.SECONDS);
            // Futures complete on dispatch threads: in any order, but each only after its own work.
            up.get(10, TimeUnit.SECONDS);
            host.get(0, got, 0, n);
        }
        for (int i = 0; i < n; i++) {
            if (got[i] != xs[i] + addOneEffect()) {
                throw new AssertionError("element " + i + ": got " + got[i] + ", expected " + (xs[i] + addOneEffect()) + " (seed printed above)");
            }
        }
    }

    @Test
    void a1_rangedCopiesAndByteBufferViews_moveExactlyTheNamedBytes() throws Exception {
        Random random = freshRandom("a1 ranged copies");
        byte[] src = new byte[4096];
        random.nextBytes(src);
        try (Handle h = Handle.create(0); HostBuffer host = h.allocateHost(8192); DeviceBuffer d = h.allocate(4096)) {
            host.put(100, src, 0, 4096);
            h.uploadAsync(host, 100, d, 4096).get(30, TimeUnit.SECONDS);
            h.downloadAsync(d.slice(16, 1000), host, 5000, 1000).get(30, TimeUnit.SECONDS);
            byte[] back = new byte[1000];
            host.get(5000, back, 0, 1000);
            byte[] expected = java.util.Arrays.copyOfRange(src, 16, 1016);
            assertArrayEquals(expected, back);
            ByteBuffer view = host.asByteBuffer(5000, 1000);
            assertEquals(ByteOrder.nativeOrder(), view.order());
            assertEquals(expected[7], view.get(7));
            host.putFloat(0, 1.5f);
            host.putDouble(8, -2.25);
            host.putInt(16, 42);
            assertEquals(1.5f, host.getFloat(0));
            assertEquals(-2.25, host.getDouble(8));
            assertEquals(42, host.getInt(16));
            assertEquals(1.5f, host.asByteBuffer().getFloat(0), "views share the memory");
        }
    }

    @Test
    void a1_badArgumentsAreClearExceptions() {
        try (Handle h = Handle.create(0); HostBuffer host = h.allocateHost(64); DeviceBuffer d = h.allocate(32)) {
            assertThrows(IllegalArgumentException.class, () -> h.allocateHost(0));
            assertThrows(IllegalArgumentException.class, () -> h.allocateHost(-5));
            assertThrows(NullPointerException.class, () -> h.uploadAsync(null, d));
            assertThrows(NullPointerException.class, () -> h.downloadAsync(d, null));
            assertThrows(NullPointerException.class, () -> h.waitFor(null));
            IllegalArgumentException big = assertThrows(IllegalArgumentException.class, () -> h.uploadAsync(host, d));
            assertTrue(big.getMessage().contains("32 bytes"), big.getMessage());
            assertThrows(IllegalArgumentException.class, () -> h.uploadAsync(host, 40, d, 32));
            assertThrows(IllegalArgumentException.class, () -> h.downloadAsync(d, host, -1, 8));
            assertThrows(IllegalArgumentException.class, () -> h.downloadAsync(d, host, 0, -8));
            assertThrows(IllegalArgumentException.class, () -> host.getFloat(61));
            assertThrows(IllegalArgumentException.class, () -> host.asByteBuffer(60, 8));
            assertThrows(IndexOutOfBoundsException.class, () -> host.put(0, new float[4], 2, 4));
        }
    }

    /**
     * L1 for ByteBuffer views: closing (or cleaning) the HostBuffer never releases memory a view still reaches.
     * Released pinned memory goes to the context's cache and serves the next allocation of its size class, so
     * "not released" shows as "not handed out again": while the view is reachable, new buffers of the same
     * (unusual) size get other memory; once it is unreachable, the memory comes back.
     */
    @Test
    void a1_aByteBufferViewKeepsThePinnedMemoryAfterCloseUntilItIsUnreachable() throws Exception {
        int size = (3 << 20) + 12_345; // a 4 MiB size class no other test uses
        try (Handle h = Handle.create(0)) {
            long viewed = useAViewAfterClose(h, size);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            boolean reused = false;
            while (!reused && System.nanoTime() < deadline) {
                System.gc();
                Thread.sleep(10);
                try (HostBuffer again = h.allocateHost(size)) {
                    reused = again.address() == viewed;
                }
            }
            assertTrue(reused, "the memory is released (to the pinned cache) once the view is unreachable");
        }
    }

    /** The view lives only in this frame, so it is unreachable once this returns; returns the memory's address. */
    private static long useAViewAfterClose(Handle h, int size) {
        HostBuffer host = h.allocateHost(size);
        long address = host.address();
        ByteBuffer view = host.asByteBuffer();
        host.close();
        assertThrows(IllegalStateException.class, () -> host.getInt(0), "the buffer's own accessors are closed");
        for (int i = 0; i < 8; i++) {
            try (HostBuffer other = h.allocateHost(size)) {
                assertNotEquals(address, other.address(), "the view holds the pinned memory past close(): it is not handed out again");
                other.putInt(size - 4, 0x0BAD);
            }
        }
        view.putInt(size - 4, 0x5EED);
        assertEquals(0x5EED, view.getInt(size - 4), "the view still reaches live memory after close");
        return address;
    }

    @Test
    void a1_closedBuffersAndHandlesRefuseAsyncWork() {
        try (Handle h = Handle.create(0)) {
            HostBuffer host = h.allocateHost(64);
            DeviceBuffer d = h.allocate(64);
            host.close();
            host.close(); // idempotent
            assertTrue(host.isClosed());
            assertThrows(IllegalStateException.class, () -> h.uploadAsync(host, d));
            assertThrows(IllegalStateException.class, () -> host.getFloat(0));
            assertThrows(IllegalStateException.class, () -> host.asByteBuffer());
            try (HostBuffer other = h.allocateHost(64)) {
                d.close();
                assertThrows(IllegalStateException.class, () -> h.downloadAsync(d, other));
                assertFalse(other.isClosed(), "a refused copy leaves the host buffer usable");
                other.putInt(0, 7);
                assertEquals(7, other.getInt(0));
            }
        }
        Handle closed = Handle.create(0);
        closed.close();
        assertThrows(IllegalStateException.class, closed::whenDone);
        assertThrows(IllegalStateException.class, () -> closed.allocateHost(8));
    }

    @Test
    void a1_closingAHostBufferWaitsForTheCopyInFlight() throws Exception {
        QueuedWorkTurns.run(300, "closing a host buffer with a copy in flight", occupiedMs -> {
            try (Handle h = Handle.create(0); DeviceBuffer d = h.allocate(1 << 20)) {
                HostBuffer host = h.allocateHost(1 << 20);
                // Timed from before the work is queued: what close() must wait for ends occupiedMs after
                // this, however long queuing the copy took (docs/measurements.md).
                long queued = System.nanoTime();
                occupy(h, occupiedMs);
                CompletableFuture<Void> copy = h.downloadAsync(d, host);
                if (copy.isDone()) {
                    host.close();
                    return false;
                }
                long closing = System.nanoTime();
                host.close();
                long closed = System.nanoTime();
                long sinceQueuedMs = (closed - queued) / 1_000_000;
                assertTrue(sinceQueuedMs >= occupiedMs * 2L / 3, "close() should have waited for the copy queued behind " + occupiedMs
                        + " ms of work; it returned " + sinceQueuedMs + " ms after the work was queued (" + (closed - closing) / 1_000_000
                        + " ms in close())");
                // The buffers are released just before the future completes (so a continuation may close them).
                copy.get(30, TimeUnit.SECONDS);
                return true;
            }
        });
    }

    @Test
    void a1_whenDoneCompletesAfterTheQueuedWorkAndNotBefore() throws Exception {
        QueuedWorkTurns.run(200, "whenDone() behind queued work", occupiedMs -> {
            try (Handle h = Handle.create(0); Event e = h.createEvent()) {
                occupy(h, occupiedMs);
                e.record(h);
                CompletableFuture<Void> done = h.whenDone();
                boolean doneAtOnce = done.isDone();
                // Asked after isDone(): work still running now was running when isDone() answered.
                boolean stillQueued = !e.query();
                if (stillQueued) {
                    assertFalse(doneAtOnce, "whenDone() must return at once, before " + occupiedMs + " ms of queued work finished");
                }
                done.get(30, TimeUnit.SECONDS);
                assertTrue(e.query(), "the work before the future is done when it completes");
                return stillQueued;
            }
        });
    }

    @Test
    void a1_continuationsNeverRunOnTheCompletionThread() throws Exception {
        try (Handle h = Handle.create(0)) {
            occupy(h, 50);
            AtomicReference<String> thread = new AtomicReference<>();
            CompletableFuture<Void> after = h.whenDone().thenRun(() -> thread.set(Thread.currentThread().getName()));
            after.get(30, TimeUnit.SECONDS);
            assertNotEquals("cuhandle-completion", thread.get());
            // A continuation may call cuhandle (it runs on an ordinary thread), also the handle's own whenDone.
            h.whenDone().thenCompose(v -> h.whenDone()).get(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void a1_tenThousandOutstandingFuturesAllCompleteAndNothingLeaks() throws Exception {
        int count = 10_000;
        // In turns (QueuedWorkTurns): on a loaded CI machine creating 10,000 futures can outlast the first turn's
        // queued work, and then they were not outstanding at once, which is what this checks.
        QueuedWorkTurns.run(1000, "10,000 outstanding futures", occupiedMs -> {
            try (Handle h = Handle.create(0)) {
                occupy(h, occupiedMs);
                List<CompletableFuture<Void>> futures = new ArrayList<>(count);
                for (int i = 0; i < count; i++) {
                    futures.add(h.whenDone());
                }
                long notDone = futures.stream().filter(f -> !f.isDone()).count();
                CompletableFuture.allOf(futures.toArray(new CompletableFuture<?>[0])).get(60, TimeUnit.SECONDS);
                for (CompletableFuture<Void> f : futures) {
                    assertFalse(f.isCompletedExceptionally());
                }
                return notDone > count / 2; // most were outstanding while the work ran
            }
        });
        awaitNoOutstanding();
    }

    @Test
    void a1_closingAHandleCompletesItsOutstandingFutures() throws Exception {
        QueuedWorkTurns.run(200, "closing a handle with futures outstanding", occupiedMs -> {
            Handle h = Handle.create(0);
            DeviceBuffer d = h.allocate(4096);
            HostBuffer host = h.allocateHost(4096);
            List<CompletableFuture<Void>> futures = new ArrayList<>();
            try {
                occupy(h, occupiedMs);
                for (int i = 0; i < 100; i++) {
                    futures.add(h.whenDone());
                }
                futures.add(h.downloadAsync(d, host));
                // The download is the last of them: if it is pending, every one is when close() starts.
                boolean stillQueued = !futures.get(futures.size() - 1).isDone();
                h.close();
                for (CompletableFuture<Void> f : futures) {
                    assertTrue(f.isDone(), "close() returned with a future still pending: " + f);
                    assertFalse(f.isCompletedExceptionally(), f.toString());
                }
                return stillQueued;
            } finally {
                h.close();
                d.close(); // the download released it when its future settled
                host.close();
            }
        });
        awaitNoOutstanding();
    }

    @Test
    void a1_continuationsMayCloseTheBuffersOfTheirCopyAndTheHandle() throws Exception {
        Handle h = Handle.create(0);
        HostBuffer host = h.allocateHost(4096);
        DeviceBuffer d = h.allocate(4096);
        occupy(h, 50);
        CompletableFuture<Void> closed = h.downloadAsync(d, host).thenRun(() -> {
            host.close(); // released before the future completed: no wait for itself
            d.close();
            h.close();
        });
        closed.get(30, TimeUnit.SECONDS);
        assertTrue(host.isClosed() && d.isClosed() && h.isClosed());

        // A continuation run by close() itself (settled on the closing thread) may close again.
        Handle h2 = Handle.create(0);
        occupy(h2, 50);
        CompletableFuture<Void> inner = h2.whenDone().thenRun(h2::close);
        h2.close();
        inner.get(30, TimeUnit.SECONDS);
        assertTrue(h2.isClosed());
        awaitNoOutstanding();
    }

    @Test
    void a1_waitForOrdersOneHandlesWorkAfterAnothersWithoutAHostWait() throws Exception {
        Random random = freshRandom("a1 waitFor");
        int n = 1 << 16;
        float[] xs = randomFloats(random, n);
        QueuedWorkTurns.run(200, "waitFor() behind the producer's work", occupiedMs -> {
            try (Handle producer = Handle.create(0); Handle consumer = Handle.create(0); Event ready = producer.createEvent();
                    DeviceBuffer d = producer.allocate(4L * n); HostBuffer host = producer.allocateHost(4L * n)) {
                host.put(0, xs, 0, n);
                occupy(producer, occupiedMs);
                CompletableFuture<Void> up = producer.uploadAsync(host, d);
                launchAddOne(producer, d, n);
                ready.record(producer);
                long start = System.nanoTime();
                consumer.waitFor(ready);
                long waitedMs = (System.nanoTime() - start) / 1_000_000;
                launchAddOne(consumer, d, n);
                CompletableFuture<Void> consumed = consumer.whenDone();
                boolean consumedAtOnce = consumed.isDone();
                // Asked after isDone(): a producer still running now was running when isDone() answered.
                boolean stillQueued = !ready.query();
                if (stillQueued) {
                    assertTrue(waitedMs < occupiedMs, "waitFor() must not block the host; it took " + waitedMs + " ms");
                    assertFalse(consumedAtOnce, "the consumer's work waits for the producer's " + occupiedMs + " ms");
                }
                consumed.get(30, TimeUnit.SECONDS);
                assertTrue(ready.query(), "the consumer finished, so the event it waited for is done");
                up.get(10, TimeUnit.SECONDS);
                consumer.downloadAsync(d, host).get(30, TimeUnit.SECONDS);
                float[] got = new float[n];
                host.get(0, got, 0, n);
                for (int i = 0; i < n; i++) {
                    float expected = xs[i] + 2 * addOneEffect();
                    if (got[i] != expected) {
                        throw new AssertionError("element " + i + ": got " + got[i] + ", expected " + expected + " (both add-ones, in order)");
                    }
                }
                return stillQueued;
            }
        });
    }

    @Test
    void a1_aStickyFaultCompletesOutstandingFuturesExceptionally() throws Exception {
        assumeTrue(StandIn.active(), "injects a sticky error, which would end CUDA for this whole process on a GPU");
        long ctx = NativeTestApi.createContext(0); // a context of its own: the sticky error poisons it
        NativeTestApi.setCurrent(0);
        Handle h = Handle.wrap(ctx);
        try {
            occupy(h, 300);
            CompletableFuture<Void> pending = h.whenDone();
            StandIn.failNextSync(CudaError.ILLEGAL_ADDRESS.code());
            assertThrows(CudaException.class, h::synchronize);
            ExecutionException e = assertThrows(ExecutionException.class, () -> pending.get(30, TimeUnit.SECONDS));
            CudaException cause = assertInstanceOf(CudaException.class, e.getCause());
            assertTrue(cause.isSticky(), cause.toString());
            RuntimeException later = assertThrows(RuntimeException.class, () -> h.whenDone().join(),
                    "work queued after the fault fails too (marking it, or the future)");
            Throwable why = later instanceof CompletionException ? later.getCause() : later;
            assertInstanceOf(CudaException.class, why, later.toString());
        } finally {
            h.close();
            destroyQuietly(ctx);
        }
        awaitNoOutstanding();
    }

    @Test
    void a1_manyThreadsCopyingAndWaitingConcurrentlyNeitherDeadlockNorMixData() throws Exception {
        int threads = 8;
        CountDownLatch start = new CountDownLatch(1);
        List<CompletableFuture<Void>> all = new ArrayList<>();
        try (Handle h = Handle.create(0)) {
            for (int t = 0; t < threads; t++) {
                int seed = t;
                all.add(CompletableFuture.runAsync(() -> {
                    try {
                        start.await();
                        float[] xs = randomFloats(new Random(seed), 4096);
                        float[] got = new float[4096];
                        for (int round = 0; round < 20; round++) {
                            try (HostBuffer host = h.allocateHost(4 * 4096); DeviceBuffer d = h.allocate(4 * 4096)) {
                                host.put(0, xs, 0, xs.length);
                                h.uploadAsync(host, d).thenCompose(v -> h.downloadAsync(d, host)).join();
                                host.get(0, got, 0, got.length);
                                assertArrayEquals(xs, got, "thread seed " + seed + " round " + round);
                            }
                        }
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                }));
            }
            start.countDown();
            CompletableFuture.allOf(all.toArray(new CompletableFuture<?>[0])).get(120, TimeUnit.SECONDS);
        }
    }

    @Test
    void a1_aJoiningThreadMaySettleTheFutureItselfAndContinuationsRunOnlyOnOrdinaryThreads() throws Exception {
        String joiner = Thread.currentThread().getName();
        Set<String> ranOn = ConcurrentHashMap.newKeySet();
        int rounds = 50;
        try (Handle h = Handle.create(0)) {
            for (int round = 0; round < rounds; round++) {
                EventGpuTest.spinCycles(h, SPIN_CYCLES_10MS / 50); // ~0.2 ms: done within the joiner's 1 ms of polling
                CompletableFuture<Void> done = h.whenDone();
                CompletableFuture<Void> after = done.thenRun(() -> ranOn.add(Thread.currentThread().getName()));
                done.join();
                assertTrue(done.isDone() && !done.isCompletedExceptionally(), "round " + round + ": " + done);
                after.get(30, TimeUnit.SECONDS);
            }
        }
        for (String name : ranOn) {
            assertTrue(name.equals(joiner) || name.equals("cuhandle-completion-dispatch"),
                    "a continuation ran on '" + name + "': only the joining thread or a dispatch thread may run them");
        }
        if (!StandIn.active()) {
            // Polling the event finds a 1 ms kernel done before the host function's hand-offs do, at least once.
            assertTrue(ranOn.contains(joiner), "over " + rounds + " joins the joiner never settled a future itself: " + ranOn);
        }
        awaitNoOutstanding();
    }

    @Test
    void a1_anInterruptedGetStopsPollingAndThrows() throws Exception {
        try (Handle h = Handle.create(0)) {
            occupy(h, 200);
            CompletableFuture<Void> done = h.whenDone();
            Thread.currentThread().interrupt();
            try {
                long start = System.nanoTime();
                assertThrows(InterruptedException.class, done::get);
                assertTrue(System.nanoTime() - start < TimeUnit.MILLISECONDS.toNanos(100), "get() of an interrupted thread returns at once");
            } finally {
                Thread.interrupted();
            }
            done.get(30, TimeUnit.SECONDS);
            // A timeout shorter than the poll budget bounds the whole wait.
            occupy(h, 200);
            CompletableFuture<Void> later = h.whenDone();
            long start = System.nanoTime();
            assertThrows(TimeoutException.class, () -> later.get(200, TimeUnit.MICROSECONDS));
            assertTrue(System.nanoTime() - start < TimeUnit.MILLISECONDS.toNanos(100), "get(200 µs) waited too long");
            later.get(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void a1_aContinuationThatBlocksDoesNotHoldUpOtherFutures() throws Exception {
        CountDownLatch released = new CountDownLatch(1);
        try (Handle h = Handle.create(0)) {
            occupy(h, 20);
            CompletableFuture<Boolean> blocked = h.whenDone().thenApply(v -> {
                try {
                    return released.await(30, TimeUnit.SECONDS); // blocks until a later future's continuation runs
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            occupy(h, 20);
            CompletableFuture<Void> second = h.whenDone().thenRun(released::countDown);
            // Neither future is joined: both complete through the completion thread, not a polling joiner.
            second.get(30, TimeUnit.SECONDS);
            // The thread that waits for signals hands its role on before it runs a completion: at most one holds it.
            long leaders = Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().equals("cuhandle-completion")).count();
            assertTrue(leaders <= 1, leaders + " threads named cuhandle-completion: the lead is held by one thread at a time");
            assertTrue(blocked.get(30, TimeUnit.SECONDS), "the blocked continuation was released by the later one");
        }
        awaitNoOutstanding();
    }

    @Test
    void a1_joiningAFutureInsideACaptureLeavesTheCaptureIntact() throws Exception {
        try (Handle h = Handle.create(0); Handle other = Handle.create(0); DeviceBuffer b = h.allocate(64)) {
            occupy(other, 20);
            CompletableFuture<Void> earlier = other.whenDone();
            try (Graph g = h.capture(() -> {
                earlier.join(); // on the capturing thread: waits without querying events
                h.memset(b, 7);
            })) {
                assertTrue(earlier.isDone());
                g.launch(h);
                byte[] got = new byte[64];
                h.copyToHost(b, got, 0, got.length);
                for (int i = 0; i < got.length; i++) {
                    assertEquals(7, got[i], "byte " + i + " after replaying the captured memset");
                }
            }
        }
        awaitNoOutstanding();
    }

    private static void awaitNoOutstanding() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (Completions.outstanding() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(0, Completions.outstanding(), "futures left registered after their work finished (a leak)");
    }
}
