package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * CUDA graphs of handle calls ({@link Handle#capture(Runnable)}, {@link Graph}): replays give the
 * results of the same calls made directly and of a CPU reference; calls that cannot be captured are
 * refused by name; a failed capture leaves the handle usable; graphs keep what they use alive. On
 * the CPU stand-in driver copies and memsets execute on replay and launches are counted.
 */
@GpuTest
@StandInCapable // the stand-in records captured copies, memsets and launches and replays them
class GraphGpuTest extends KernelGpuTestBase {
    private static final int N = 4096;

    private static float[] integerFloats(Random random, int n) {
        float[] values = new float[n];
        for (int i = 0; i < n; i++) {
            values[i] = random.nextInt(2001) - 1000; // integers: every sum below is exact in float
        }
        return values;
    }

    private static float[] download(DeviceBuffer b, int n) {
        float[] values = new float[n];
        b.download(values);
        return values;
    }

    /** Copies and memsets: a replay gives what the direct calls give, and reads its inputs when it runs. */
    @Test
    void copyAndMemsetGraphReplaysLikeTheDirectCalls() {
        long seed = System.nanoTime();
        Random random = new Random(seed);
        try (Handle h = Handle.create(0); DeviceBuffer a = h.allocate(4L * N); DeviceBuffer b = h.allocate(4L * N);
                DeviceBuffer c = h.allocate(4L * N)) {
            h.memset(c, 0x11);
            Runnable calls = () -> {
                h.copy(a, b);
                h.memset(c.slice(0, 4L * N / 2), 0);
                h.copy(b.slice(4L * N / 2, 4L * N / 2), c.slice(4L * N / 2, 4L * N / 2));
            };
            float[] input = integerFloats(random, N);
            a.upload(input);
            calls.run();
            float[] directB = download(b, N);
            float[] directC = download(c, N);
            h.memset(b, 0x22);
            h.memset(c, 0x11);
            float[] before = download(c, N);
            try (Graph g = h.capture(calls)) {
                assertEquals(3, g.nodeCount(), "nodes of a capture of 3 calls");
                assertArrayEquals(before, download(c, N), "capturing must not run the calls");
                g.launch(h);
                assertArrayEquals(directB, download(b, N), "b after one replay (seed " + seed + ")");
                assertArrayEquals(directC, download(c, N), "c after one replay (seed " + seed + ")");
                for (int round = 0; round < 20; round++) {
                    float[] fresh = integerFloats(random, N);
                    a.upload(fresh);
                    g.launch(h);
                    float[] expectedC = new float[N];
                    System.arraycopy(fresh, N / 2, expectedC, N / 2, N / 2); // first half zeroed
                    assertArrayEquals(fresh, download(b, N), "b after replay " + round + " (seed " + seed + ")");
                    assertArrayEquals(expectedC, download(c, N), "c after replay " + round + " (seed " + seed + ")");
                }
            }
        }
    }

    /** 100 saxpy-like kernel launches: one replay adds what 100 direct launches add (CPU reference on the GPU). */
    @Test
    void hundredLaunchesReplayLikeDirectLaunches() {
        long seed = System.nanoTime();
        float[] input = integerFloats(new Random(seed), N);
        try (Handle h = Handle.create(0); DeviceBuffer x = h.allocate(4L * N)) {
            Kernel addOne = addOne();
            h.launch(addOne, Dim3.of(1), Dim3.of(1), 0, x, 0); // loads the kernel in this context before the capture (n = 0: no effect)
            x.upload(input);
            h.synchronize();
            int launchesBefore = StandIn.active() ? StandIn.launches() : 0;
            try (Graph g = h.capture(() -> {
                for (int i = 0; i < 100; i++) {
                    h.launch(addOne, Dim3.of(16), Dim3.of(BLOCK), 0, x, N);
                }
            })) {
                assertEquals(100, g.nodeCount());
                if (StandIn.active()) {
                    assertEquals(launchesBefore, StandIn.launches(), "capturing must not launch");
                }
                for (int replay = 1; replay <= 5; replay++) {
                    g.launch(h);
                }
                h.synchronize();
                if (StandIn.active()) {
                    assertEquals(launchesBefore + 500, StandIn.launches(), "5 replays of 100 launches");
                    return;
                }
                float[] expected = input.clone();
                for (int i = 0; i < N; i++) {
                    expected[i] += 500;
                }
                assertArrayEquals(expected, download(x, N), "after 5 replays of 100 add_one launches (seed " + seed + ")");
                for (int i = 0; i < 100; i++) {
                    h.launch(addOne, Dim3.of(16), Dim3.of(BLOCK), 0, x, N);
                }
                for (int i = 0; i < N; i++) {
                    expected[i] += 100;
                }
                assertArrayEquals(expected, download(x, N), "100 direct launches after the replays (seed " + seed + ")");
            }
        }
    }

    /**
     * Every call that waits for the GPU or frees memory is refused by name, the close of every kind of native object
     * included (each class applies the rule itself: the lifecycle base knows nothing of captures); the capture ends
     * and the handle works.
     */
    @Test
    void callsThatCannotBeCapturedAreRefusedAndTheHandleStaysUsable() {
        try (Handle h = Handle.create(0); DeviceBuffer b = h.allocate(64); DeviceBuffer victim = h.allocate(64); Event e = h.createEvent();
                HostBuffer host = h.allocateHost(64); Library lib = TestKernels.loadPtx();
                HostRegistration registration = HostRegistration.register(h, ByteBuffer.allocateDirect(4096));
                Graph graph = h.capture(() -> h.memset(b, 2))) {
            Map<String, Consumer<Handle>> refused = new LinkedHashMap<>();
            refused.put("Handle.synchronize", Handle::synchronize);
            refused.put("Handle.setStream", x -> x.setStream(0));
            refused.put("Handle.resetStream", Handle::resetStream);
            refused.put("Handle.allocate", x -> x.allocate(64));
            refused.put("Java array to the device", x -> b.upload(new float[4]));
            refused.put("device to a Java array", x -> b.download(new float[4]));
            refused.put("device to a ByteBuffer", x -> x.copyToHost(b, ByteBuffer.allocateDirect(16), 0, 16));
            refused.put("Blas.dot", x -> Blas.sdot(x, 4, b, 1, b, 1));
            refused.put("Blas.asum", x -> Blas.dasum(x, 4, b, 1));
            refused.put("Event.synchronize", x -> e.synchronize());
            refused.put("DeviceBuffer.close", x -> victim.close());
            refused.put("Event.close", x -> e.close());
            refused.put("HostBuffer.close", x -> host.close());
            refused.put("Library.close", x -> lib.close());
            refused.put("HostRegistration.close", x -> registration.close());
            refused.put("Graph.close", x -> graph.close());
            refused.put("Handle.close", Handle::close);
            for (Map.Entry<String, Consumer<Handle>> entry : refused.entrySet()) {
                IllegalStateException thrown = assertThrows(IllegalStateException.class, () -> h.capture(() -> {
                    h.memset(b, 1);
                    entry.getValue().accept(h);
                }), entry.getKey());
                assertTrue(thrown.getMessage().contains(entry.getKey()) && thrown.getMessage().contains("captures a graph"),
                        entry.getKey() + ": " + thrown.getMessage());
                assertUsable(h, b);
            }
            for (NativeResource resource : new NativeResource[] {victim, e, host, lib, registration, graph, h}) {
                assertTrue(!resource.isClosed(), resource + ": a refused close must not close");
            }
        }
    }

    /** A failure thrown by the captured code propagates unchanged; nothing recorded survives. */
    @Test
    void anExceptionInTheCapturedCodeEndsTheCaptureAndPropagates() {
        int graphsBefore = StandIn.active() ? StandIn.liveGraphs() : 0;
        try (Handle h = Handle.create(0); DeviceBuffer b = h.allocate(64)) {
            RuntimeException failure = new RuntimeException("user failure");
            RuntimeException thrown = assertThrows(RuntimeException.class, () -> h.capture(() -> {
                h.memset(b, 1);
                throw failure;
            }));
            assertSame(failure, thrown);
            assertUsable(h, b);
            // A failure of cuhandle itself inside the capture: a buffer of the wrong size.
            assertThrows(IllegalArgumentException.class, () -> h.capture(() -> h.copy(b, b.slice(0, 8))));
            assertUsable(h, b);
            if (StandIn.active()) {
                assertEquals(graphsBefore, StandIn.liveGraphs(), "partial graphs of failed captures must be destroyed");
            }
        }
    }

    /** Work of another handle, even one on the very same stream, is not captured; it runs at once. */
    @Test
    void anotherHandleOnTheSameStreamIsNotCaptured() {
        try (Handle h = Handle.create(0); Handle other = Handle.create(0); DeviceBuffer mine = h.allocate(64);
                DeviceBuffer theirs = h.allocate(64)) {
            other.setStream(h.stream());
            h.memset(mine, 0);
            h.memset(theirs, 0);
            try (Graph g = h.capture(() -> {
                h.memset(mine, 5);
                other.memset(theirs, 7);
            })) {
                assertEquals(1, g.nodeCount(), "only the capturing handle's call is recorded");
                byte[] got = new byte[64];
                other.copyToHost(theirs, got, 0, 64);
                assertEquals(7, got[0], "the other handle's memset ran at once");
                h.copyToHost(mine, got, 0, 64);
                assertEquals(0, got[0], "the captured memset did not run");
                g.launch(other);
                other.copyToHost(mine, got, 0, 64);
                assertEquals(5, got[63], "the replay on the other handle ran the memset");
            }
        }
    }

    /** Calls on a capturing handle from another thread are refused; the capture itself succeeds. */
    @Test
    void callsFromAnotherThreadAreRefusedDuringCapture() throws Exception {
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (Handle h = Handle.create(0); DeviceBuffer b = h.allocate(64)) {
            try (Graph g = h.capture(() -> {
                h.memset(b, 3);
                Future<?> f = pool.submit(() -> h.memset(b, 4));
                Exception e = assertThrows(Exception.class, () -> f.get(10, TimeUnit.SECONDS));
                assertTrue(e.getCause() instanceof IllegalStateException && e.getCause().getMessage().contains("capturing a graph on thread"),
                        String.valueOf(e.getCause()));
            })) {
                assertEquals(1, g.nodeCount());
            }
            pool.submit(() -> h.memset(b, 4)).get(10, TimeUnit.SECONDS); // usable from other threads again
            assertThrows(IllegalStateException.class, () -> h.capture(() -> h.capture(() -> { })), "nested capture");
            assertUsable(h, b);
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * A refused call from another thread adds nothing to the graph (Capture.used is the capturing thread's alone):
     * Event.record names its event before it enters the handle, and the event it could not record must not be
     * one the replay requires open.
     */
    @Test
    void aRefusedRecordFromAnotherThreadLeavesItsEventOutOfTheGraph() throws Exception {
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (Handle h = Handle.create(0); DeviceBuffer b = h.allocate(64)) {
            Event other = h.createEvent();
            try (Graph g = h.capture(() -> {
                h.memset(b, 3);
                Future<?> f = pool.submit(() -> other.record(h));
                Exception e = assertThrows(Exception.class, () -> f.get(10, TimeUnit.SECONDS));
                assertTrue(e.getCause() instanceof IllegalStateException && e.getCause().getMessage().contains("capturing a graph on thread"),
                        String.valueOf(e.getCause()));
            })) {
                other.close();
                g.launch(h); // the graph used no event: the closed one is no reason to refuse the replay
                assertUsable(h, b);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /** Graph lifetime: closed buffers, libraries-free handles and closed graphs are refused on replay; close is idempotent. */
    @Test
    void replayRefusesClosedResourcesAndClosedGraphs() {
        int graphsBefore = StandIn.active() ? StandIn.liveGraphs() : 0;
        int execsBefore = StandIn.active() ? StandIn.liveGraphExecs() : 0;
        try (Handle h = Handle.create(0); Handle replayer = Handle.create(0)) {
            DeviceBuffer b = h.allocate(64);
            Graph g = h.capture(() -> h.memset(b.slice(0, 32), 9));
            g.launch(replayer);
            b.close();
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> g.launch(h));
            assertTrue(e.getMessage().contains("DeviceBuffer that was closed after the capture"), e.getMessage());
            g.close();
            g.close();
            assertTrue(g.isClosed());
            assertThrows(IllegalStateException.class, () -> g.launch(h));
            if (StandIn.active()) {
                assertEquals(graphsBefore, StandIn.liveGraphs(), "graph templates after close");
                assertEquals(execsBefore, StandIn.liveGraphExecs(), "executable graphs after close");
            }
            DeviceBuffer c = replayer.allocate(64);
            Graph g2 = h.capture(() -> h.memset(c, 1));
            h.close();
            assertThrows(IllegalStateException.class, () -> g2.launch(replayer), "the capturing handle is closed");
            g2.close();
            c.close();
        }
    }

    /** A library closed after the capture makes the replay an IllegalStateException, not a launch of an unloaded kernel. */
    @Test
    void replayRefusesAClosedLibrary() {
        try (Handle h = Handle.create(0); DeviceBuffer x = h.allocate(4L * N)) {
            Library lib = TestKernels.loadPtx();
            Kernel addOne = lookUpInPrimaryContext(lib, "cuh_test_add_one");
            h.memset(x, 0);
            h.launch(addOne, Dim3.of(1), Dim3.of(1), 0, x, 0); // loads the kernel before the capture
            try (Graph g = h.capture(() -> h.launch(addOne, Dim3.of(16), Dim3.of(BLOCK), 0, x, N))) {
                g.launch(h);
                h.synchronize();
                lib.close();
                IllegalStateException e = assertThrows(IllegalStateException.class, () -> g.launch(h));
                assertTrue(e.getMessage().contains("Library that was closed after the capture"), e.getMessage());
            } finally {
                lib.close();
            }
        }
    }

    /** A graph replays only in its own context. */
    @Test
    void replayOnAHandleOfAnotherContextIsRefused() {
        long ctx = newUserContext(0);
        try (Handle h = Handle.create(0); Handle foreign = Handle.wrap(ctx); DeviceBuffer b = h.allocate(64); Graph g = h.capture(() -> h.memset(b, 1))) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> g.launch(foreign));
            assertTrue(e.getMessage().contains("own context"), e.getMessage());
            g.launch(h);
        } finally {
            destroyQuietly(ctx);
        }
    }

    /** Replays many times stay correct and an empty capture is a graph of no nodes. */
    @Test
    void manyReplaysAndAnEmptyGraph() {
        try (Handle h = Handle.create(0); DeviceBuffer b = h.allocate(4L * N); DeviceBuffer c = h.allocate(4L * N)) {
            try (Graph empty = h.capture(() -> { })) {
                assertEquals(0, empty.nodeCount());
                empty.launch(h);
            }
            long seed = System.nanoTime();
            float[] input = integerFloats(new Random(seed), N);
            b.upload(input);
            try (Graph g = h.capture(() -> h.copy(b, c))) {
                for (int i = 0; i < 1000; i++) {
                    h.memset(c, 0);
                    g.launch(h);
                }
                assertArrayEquals(input, download(c, N), "after 1000 replays (seed " + seed + ")");
            }
        }
    }

    private static void assertUsable(Handle h, DeviceBuffer b) {
        h.memset(b, 2);
        h.synchronize();
        byte[] got = new byte[(int) b.byteLength()];
        h.copyToHost(b, got, 0, got.length);
        assertEquals(2, got[got.length - 1], "the handle works after the failed capture");
    }
}
