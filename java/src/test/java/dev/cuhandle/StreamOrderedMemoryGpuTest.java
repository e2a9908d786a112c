package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Rules L3 (memory order, in stream order), H9 (a stream of its own per live handle), M1 (the
 * memory pool) and C1 (captures refuse by name; nothing another thread does breaks them), of
 * docs/design.md.
 *
 * <p>On the CPU stand-in driver kernels do not run, but streams, events and simulated work time do:
 * a launch keeps its stream, and the allocations its arguments point into, busy for the simulated
 * time, and a stream-ordered free reached while another stream still uses the memory counts as a
 * use-after-free (and poisons the context). The GPU runs the same tests with real kernels.
 */
@GpuTest
class StreamOrderedMemoryGpuTest extends HandleGpuTestBase {
    private static final int MIB = 1 << 20;

    /** Closing a buffer never waits for another handle's work that did not touch it. */
    @Test
    @StandInCapable
    void l3_allocateAndCloseNextToAnotherHandlesLongWorkDoesNotWaitForIt() throws Exception {
        try (Handle busy = Handle.create(0); Handle churn = Handle.create(0)) {
            spin(busy, 3.0);
            CompletableFuture<Void> longWork = busy.whenDone();
            int rounds = onFreshThread("churn", () -> {
                int done = 0;
                for (; done < 200 && !longWork.isDone(); done++) {
                    try (DeviceBuffer temp = churn.allocate(MIB)) {
                        churn.memset(temp, done & 0xFF);
                    }
                }
                return done;
            });
            assertEquals(200, rounds, "every round of allocate + memset + close finished while the other handle's 3 s of work still ran");
            assertFalse(longWork.isDone(), "the other handle's work is still running: no close waited for it");
            busy.synchronize();
        }
    }

    /**
     * L3: memory another handle's queued kernel still reads is not handed out again before the read. The
     * buffer belongs to {@code owner} and is read late (after a spin) by {@code reader}'s kernel; {@code owner}
     * closes it right after the launch and then allocates and overwrites buffers of the same size. Every
     * late read must see the original data.
     */
    @Test
    @StandInCapable
    void l3_memoryReadLateByAnotherHandleIsNotReusedBeforeTheRead() throws Exception {
        int n = 1 << 18;
        Random random = new Random(19);
        int useAfterFrees = StandIn.active() ? StandIn.useAfterFrees() : 0;
        try (Handle owner = Handle.create(0); Handle reader = Handle.create(0)) {
            for (int round = 0; round < (StandIn.active() ? 3 : 20); round++) {
                closeUnderALateRead(owner, reader, randomFloats(random, n), 50, "round " + round);
                owner.synchronize();
            }
        }
        if (StandIn.active()) {
            assertEquals(useAfterFrees, StandIn.useAfterFrees(), "no free reached its stream while another stream still used the memory");
        }
    }

    /** L3 across a user stream (setStream) and across the legacy stream: the free waits for their work too. */
    @Test
    @StandInCapable
    void l3_usesOnUserAndLegacyStreamsAreWaitedFor() throws Exception {
        int n = 1 << 16;
        int useAfterFrees = StandIn.active() ? StandIn.useAfterFrees() : 0;
        try (Handle owner = Handle.create(0); Handle user = Handle.create(0); Handle legacy = Handle.create(0)) {
            user.makeCurrent();
            long stream = NativeTestApi.streamCreate();
            makeOnlyCurrent(0);
            try {
                user.setStream(stream);
                legacy.setStream(0);
                closeUnderALateRead(owner, user, randomFloats(new Random(1), n), 20, "user stream");
                closeUnderALateRead(owner, legacy, randomFloats(new Random(2), n), 20, "legacy stream");
                user.resetStream();
            } finally {
                NativeTestApi.streamDestroy(stream);
            }
        }
        if (StandIn.active()) {
            assertEquals(useAfterFrees, StandIn.useAfterFrees(), "no free reached its stream while another stream still used the memory");
        }
    }

    /**
     * H9: no two live handles share a stream, and closed handles' streams are reused, never destroyed, while
     * their context lives (here a handle kept open keeps the primary context retained).
     */
    @Test
    @StandInCapable
    void h9_liveHandlesNeverShareAStreamAndClosedOnesLendTheirsToLaterHandles() {
        try (Handle keeper = Handle.create(0)) {
            Set<Long> streams = streamsOf200Handles(true);
            int liveStreams = StandIn.active() ? StandIn.liveStreams() : -1;
            Set<Long> again = streamsOf200Handles(false);
            assertEquals(streams, again, "200 new handles reuse the 200 streams of closed ones");
            if (StandIn.active()) {
                assertEquals(liveStreams, StandIn.liveStreams(), "no stream was created or destroyed for the new handles");
            }
            assertFalse(keeper.isClosed());
        }
    }

    /** The streams of 200 handles alive at once (closed afterwards); with {@code distinct}, checks no two share one. */
    private static Set<Long> streamsOf200Handles(boolean distinct) {
        List<Handle> handles = new ArrayList<>();
        Set<Long> streams = new HashSet<>();
        try {
            for (int i = 0; i < 200; i++) {
                Handle h = Handle.create(0);
                handles.add(h);
                boolean added = streams.add(h.stream());
                if (distinct) {
                    assertTrue(added, "handle " + i + " got a stream another live handle has");
                }
            }
        } finally {
            handles.forEach(Handle::close);
        }
        return streams;
    }

    /**
     * H9: a tiny launch + synchronize on any of 200 live handles never waits for a long kernel on another one.
     * Nothing is queued behind the long kernel (an event or host function after it would hold up the
     * hardware queue it shares with other streams: the driver multiplexes streams onto
     * {@code CUDA_DEVICE_MAX_CONNECTIONS} queues), so the only thing that could make the others wait is a
     * shared stream: the 199 rounds must end well before the 3 s kernel can.
     */
    @Test
    @StandInCapable
    void h9_smallWorkOnAnyOfManyHandlesDoesNotWaitForALongKernelOnAnother() throws Exception {
        List<Handle> handles = new ArrayList<>();
        try {
            for (int i = 0; i < 200; i++) {
                handles.add(Handle.create(0));
                handles.get(i).stream();
            }
            Handle busy = handles.get(0);
            // Load the empty kernel into the context first: with lazy module loading (the default) a
            // kernel's first launch in a context may wait for the whole context ("Lazy Loading",
            // concurrent execution), which would wait for the long kernel whatever the streams.
            handles.get(1).launch(emptyKernel(), Dim3.of(1), Dim3.of(1), 0);
            handles.get(1).synchronize();
            long start = System.nanoTime();
            spin(busy, 3.0);
            int done = onFreshThread("small-work", () -> {
                int count = 0;
                for (Handle h : handles.subList(1, handles.size())) {
                    h.launch(emptyKernel(), Dim3.of(1), Dim3.of(1), 0);
                    h.synchronize();
                    count++;
                }
                for (Handle h : handles.subList(1, handles.size())) {
                    h.close(); // closing waits for its own stream only
                }
                return count;
            });
            long millis = (System.nanoTime() - start) / 1_000_000;
            assertEquals(199, done);
            assertTrue(millis < 2000, "199 launches, synchronizes and closes took " + millis + " ms next to a 3 s kernel: one waited for it");
            busy.synchronize();
            assertTrue((System.nanoTime() - start) / 1_000_000 >= 2500, "the long kernel did run for its time");
        } finally {
            handles.forEach(Handle::close);
        }
    }

    /** C1: a capture on one thread survives other threads allocating and freeing, and the cleaner freeing leaks. */
    @Test
    @StandInCapable
    void c1_capturesSurviveFreesOnOtherThreadsAndTheCleaner() throws Exception {
        int captures = StandIn.active() ? 200 : 1000;
        try (Handle capturing = Handle.create(0); DeviceBuffer x = capturing.allocate(4L * 1024)) {
            AtomicBoolean stop = new AtomicBoolean();
            AtomicInteger frees = new AtomicInteger();
            List<Thread> churners = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                int seed = t;
                Thread churner = new Thread(() -> {
                    try (Handle h = Handle.create(0)) {
                        Random random = new Random(seed);
                        while (!stop.get()) {
                            DeviceBuffer temp = h.allocate(1 + random.nextInt(MIB));
                            if (random.nextInt(8) == 0) {
                                continue; // leaked: the cleaner frees it
                            }
                            temp.close();
                            frees.incrementAndGet();
                            if (random.nextInt(64) == 0) {
                                System.gc();
                            }
                        }
                    }
                }, "churn-" + t);
                churner.start();
                churners.add(churner);
            }
            try {
                for (int i = 0; i < captures; i++) {
                    try (Graph g = capturing.capture(() -> {
                        for (int k = 0; k < 100; k++) {
                            capturing.memset(x, k & 0xFF);
                        }
                    })) {
                        assertEquals(100, g.nodeCount(), "capture " + i);
                    }
                }
            } finally {
                stop.set(true);
                for (Thread churner : churners) {
                    churner.join();
                }
            }
            assertTrue(frees.get() > 0, "the other threads freed memory meanwhile");
        }
    }

    /** C1: calls that cannot be recorded are refused by name before the driver sees them, and the capture goes on. */
    @Test
    @StandInCapable
    void c1_callsThatCannotBeRecordedAreRefusedByNameAndTheCaptureGoesOn() {
        try (Handle h = Handle.create(0); DeviceBuffer x = h.allocate(256); HostBuffer host = h.allocateHost(256); Event event = h.createEvent()) {
            List<String> refused = new ArrayList<>();
            try (Graph g = h.capture(() -> {
                h.memset(x, 1);
                expectRefusal(refused, "HostBuffer.close", host::close);
                expectRefusal(refused, "Handle.whenDone", h::whenDone);
                expectRefusal(refused, "Event.query", event::query);
                expectRefusal(refused, "Event.close", event::close);
                expectRefusal(refused, "Handle.allocateHost", () -> h.allocateHost(16));
                expectRefusal(refused, "Handle.trimMemory", h::trimMemory);
                expectRefusal(refused, "Handle.allocate", () -> h.allocate(16));
                expectRefusal(refused, "DeviceBuffer.close", x::close);
                h.memset(x, 2);
            })) {
                assertEquals(2, g.nodeCount(), "both memsets were recorded around the refusals");
                g.launch(h);
                h.synchronize();
            }
            assertEquals(8, refused.size(), String.valueOf(refused));
            assertFalse(host.isClosed() || x.isClosed() || event.isClosed(), "refused closes closed nothing");
            byte[] back = new byte[256];
            x.download(back, 0, 256);
            if (!StandIn.active()) {
                assertEquals(2, back[255], "the replay ran both memsets");
            }
        }
    }

    private static void expectRefusal(List<String> refused, String name, Runnable call) {
        IllegalStateException e = assertThrows(IllegalStateException.class, call::run, name);
        assertTrue(e.getMessage().startsWith(name), "the refusal names " + name + ": " + e.getMessage());
        assertTrue(e.getMessage().contains("captures a graph"), e.getMessage());
        refused.add(name);
    }

    /** L7: a graph keeps what it recorded; a replay after one of its host buffers or events was closed is refused. */
    @Test
    @StandInCapable
    void l7_aReplayAfterARecordedHostBufferOrEventWasClosedIsRefused() {
        try (Handle h = Handle.create(0); DeviceBuffer x = h.allocate(1024)) {
            h.memset(x, 3);
            HostBuffer host = h.allocateHost(1024);
            Event event = h.createEvent();
            try (Graph g = h.capture(() -> {
                CompletableFuture<Void> recorded = h.downloadAsync(x, host);
                assertTrue(recorded.isDone(), "a copy recorded in a capture has nothing to wait for");
                event.record(h);
            })) {
                g.launch(h);
                h.synchronize();
                if (!StandIn.active()) {
                    assertEquals(0x03030303, host.getInt(1020), "the replay downloaded into the host buffer");
                }
                host.close();
                IllegalStateException hostClosed = assertThrows(IllegalStateException.class, () -> g.launch(h));
                assertTrue(hostClosed.getMessage().contains("HostBuffer"), hostClosed.getMessage());
            }
            try (Graph g = h.capture(() -> event.record(h))) {
                event.close();
                IllegalStateException eventClosed = assertThrows(IllegalStateException.class, () -> g.launch(h));
                assertTrue(eventClosed.getMessage().contains("Event"), eventClosed.getMessage());
            }
        }
    }

    /** L7 + L3: device memory closed while replays that use it are queued is freed only after them. */
    @Test
    @StandInCapable
    void l7_memoryClosedWhileReplaysAreQueuedIsReusedOnlyAfterThem() throws Exception {
        int n = 1 << 16;
        int useAfterFrees = StandIn.active() ? StandIn.useAfterFrees() : 0;
        float[] data = randomFloats(new Random(7), n);
        try (Handle owner = Handle.create(0); Handle replayer = Handle.create(0); DeviceBuffer out = replayer.allocate(4L * n)) {
            DeviceBuffer x = owner.upload(data);
            owner.synchronize();
            try (Graph g = replayer.capture(() -> lateCopy(replayer, x, out, n, 0.03))) {
                replayer.memset(out, 0);
                g.launch(replayer);
                x.close();
                for (int i = 0; i < 20; i++) {
                    try (DeviceBuffer reused = owner.allocate(4L * n)) {
                        owner.memset(reused, 0x7F);
                    }
                }
                float[] seen = new float[n];
                out.download(seen);
                if (!StandIn.active()) {
                    assertExact(data, seen, "a replay queued before its buffer was closed");
                }
                assertThrows(IllegalStateException.class, () -> g.launch(replayer), "a replay after the close is refused");
            }
        }
        if (StandIn.active()) {
            assertEquals(useAfterFrees, StandIn.useAfterFrees(), "the free waited for the queued replay");
        }
    }

    /**
     * M1: freed memory stays in the pool for reuse; trimMemory gives it back; the statistics say so. In a
     * context of its own, so that no other test's objects share the pool.
     */
    @Test
    @StandInCapable
    void m1_memoryStatsShowThePoolAndTrimMemoryGivesItBack() {
        long ctx = GpuTestSupport.newUserContext(0);
        try (Handle h = Handle.wrap(ctx)) {
            long freeBefore = h.freeMemory();
            DeviceBuffer big = h.allocate(64L * MIB);
            MemoryStats inUse = h.memoryStats();
            assertTrue(inUse.streamOrdered(), "devices with memory pools allocate in stream order: " + inUse);
            assertTrue(inUse.poolBytesInUse() >= 64L * MIB, inUse.toString());
            big.close();
            h.synchronize(); // the free has run
            MemoryStats cached = h.memoryStats();
            assertEquals(0, cached.poolBytesInUse(), cached.toString());
            assertTrue(cached.poolBytesReserved() >= 64L * MIB, "freed memory is kept for reuse: " + cached);
            try (HostBuffer host = h.allocateHost(3 * MIB)) {
                host.putInt(0, 1);
            }
            assertTrue(h.memoryStats().pinnedBytesCached() >= 3L * MIB, "a closed host buffer's memory is cached");
            h.trimMemory();
            MemoryStats trimmed = h.memoryStats();
            assertEquals(0, trimmed.poolBytesReserved(), trimmed.toString());
            assertEquals(0, trimmed.pinnedBytesCached(), trimmed.toString());
            assertTrue(h.freeMemory() >= freeBefore - 8L * MIB, "device memory is back: " + h.freeMemory() + " free, " + freeBefore + " before");
        } finally {
            NativeTestApi.destroyContext(ctx);
        }
    }

    /** M1: an allocation that runs out of memory trims the pool and tries once more. */
    @Test
    @StandInCapable
    void m1_outOfMemoryTrimsThePoolAndRetriesOnce() {
        assumeTrue(StandIn.active(), "out of memory is injected by the stand-in driver");
        long ctx = GpuTestSupport.newUserContext(0);
        try (Handle h = Handle.wrap(ctx)) {
            h.allocate(16L * MIB).close();
            h.synchronize();
            assertTrue(h.memoryStats().poolBytesReserved() >= 16L * MIB);
            StandIn.failNextAllocations(1);
            h.allocate(MIB).close();
            h.synchronize();
            assertTrue(h.memoryStats().poolBytesReserved() < 16L * MIB, "the retry came after a trim: " + h.memoryStats());
        } finally {
            NativeTestApi.destroyContext(ctx);
        }
    }

    /** M1: the pool goes away with the last cuhandle object of its context, so a released context keeps nothing of ours. */
    @Test
    @StandInCapable
    void m1_theLastObjectOfAContextTakesItsPoolAlong() {
        assumeTrue(StandIn.active(), "counts the stand-in driver's memory pools");
        long ctx = GpuTestSupport.newUserContext(0);
        try {
            int pools = StandIn.livePools();
            DeviceBuffer kept;
            try (Handle h = Handle.wrap(ctx)) {
                kept = h.allocate(MIB);
                assertEquals(pools + 1, StandIn.livePools());
            }
            assertEquals(pools + 1, StandIn.livePools(), "a buffer still open keeps the pool");
            kept.close();
            assertEquals(pools, StandIn.livePools(), "the last allocation took the pool along");
        } finally {
            NativeTestApi.destroyContext(ctx);
        }
    }

    /**
     * Uploads {@code data} with {@code owner}, has {@code reader} copy it after a 30 ms wait, closes it from
     * {@code owner} right after that launch, then allocates and overwrites buffers of its size {@code reuses}
     * times: the late copy must still see {@code data} (on the stand-in, which runs no kernel, the
     * use-after-free counter checks the same).
     */
    private static void closeUnderALateRead(Handle owner, Handle reader, float[] data, int reuses, String what) {
        int n = data.length;
        DeviceBuffer x = owner.upload(data);
        owner.synchronize();
        try (DeviceBuffer out = reader.allocate(4L * n)) {
            lateCopy(reader, x, out, n, 0.03);
            x.close();
            for (int i = 0; i < reuses; i++) {
                try (DeviceBuffer reused = owner.allocate(4L * n)) {
                    owner.memset(reused, 0x7F);
                }
            }
            float[] seen = new float[n];
            out.download(seen);
            if (!StandIn.active()) {
                assertExact(data, seen, what + ": the late read of a buffer closed under it");
            }
        }
    }

    /** Waits {@code seconds}, then copies {@code x} to {@code out} on {@code h}'s stream (the stand-in: simulated work). */
    static void lateCopy(Handle h, DeviceBuffer x, DeviceBuffer out, int n, double seconds) {
        long cycles = (long) (seconds * SPIN_CYCLES_PER_SECOND);
        Kernel late = kernels().kernel("cuh_test_late_copy");
        if (!StandIn.active()) {
            h.launch(late, gridFor(n), Dim3.of(BLOCK), 0, x, out, n, cycles);
            return;
        }
        int previous = StandIn.setWorkMillis((int) Math.max(1, Math.round(seconds * 1000)));
        try {
            h.launch(late, gridFor(n), Dim3.of(BLOCK), 0, x, out, n, cycles);
        } finally {
            StandIn.setWorkMillis(previous);
        }
    }
}
