package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Graphs that change without a new capture ({@link Handle#capturedLaunch()}, {@link Graph#update(GraphNode)}): replays
 * after changing a scalar, a buffer and the grid give what a CPU reference gives; wrong indexes, types, sizes, contexts,
 * nodes of other graphs and closed graphs are refused with clear exceptions; the graph keeps a buffer an update brings
 * in (L7) and lets go of the one it replaced. On the CPU stand-in the replayed launch's argument bytes are read back.
 */
@GpuTest
@StandInCapable // the stand-in records launch arguments, changes them (cuGraphExecKernelNodeSetParams) and shows the last replayed
class GraphUpdateGpuTest extends KernelGpuTestBase {
    private static final int N = 4096;

    private static Kernel axpy() {
        return kernel("cuh_test_axpy");
    }

    private static float[] integerFloats(Random random, int n) {
        float[] values = new float[n];
        for (int i = 0; i < n; i++) {
            values[i] = random.nextInt(201) - 100; // small integers: every sum below is exact in float
        }
        return values;
    }

    private static float[] download(DeviceBuffer b) {
        float[] values = new float[(int) (b.byteLength() / 4)];
        b.download(values);
        return values;
    }

    /** {@code y += a * x}, the CPU reference of one replay of the axpy graph. */
    private static void axpyOnCpu(float[] y, float a, float[] x) {
        for (int i = 0; i < y.length; i++) {
            y[i] += a * x[i];
        }
    }

    /** On the stand-in: the replayed launch's float argument at byte offset {@code offset} of the kernel's parameters. */
    private static float lastReplayedFloat(int offset) {
        return Float.intBitsToFloat(StandIn.control(16, offset));
    }

    private static long lastReplayedLong(int offset) {
        return (StandIn.control(16, offset) & 0xFFFFFFFFL) | ((long) StandIn.control(16, offset + 4) << 32);
    }

    /** A graph of one named axpy launch, y += a * x, on {@code h}; {@code node[0]} receives its node. */
    private static Graph captureAxpy(Handle h, DeviceBuffer y, DeviceBuffer x, float a, GraphNode[] node) {
        return h.capture(() -> {
            h.launch(axpy(), Dim3.of(8), Dim3.of(BLOCK), 0, y, x, a, N);
            node[0] = h.capturedLaunch();
        });
    }

    @Test
    void replaysAfterChangingAScalarAndABufferMatchTheCpu() {
        long seed = System.nanoTime();
        Random random = new Random(seed);
        float[] x1 = integerFloats(random, N);
        float[] x2 = integerFloats(random, N);
        float[] y = integerFloats(random, N);
        try (Handle h = Handle.create(0); DeviceBuffer dy = h.upload(y); DeviceBuffer dx1 = h.upload(x1); DeviceBuffer dx2 = h.upload(x2)) {
            GraphNode[] node = new GraphNode[1];
            try (Graph g = captureAxpy(h, dy, dx1, 2f, node)) {
                assertEquals(axpy().name(), node[0].kernel().name());
                float[] expected = y.clone();
                g.launch(h);
                axpyOnCpu(expected, 2f, x1);
                if (StandIn.active()) {
                    assertEquals(2f, lastReplayedFloat(16), "a as captured");
                    assertEquals(dx1.address(), lastReplayedLong(8), "x as captured");
                }
                for (int round = 0; round < 6; round++) {
                    float a = random.nextInt(7) - 3;
                    boolean second = round % 2 == 0;
                    g.update(node[0]).arg(2, a).arg(1, second ? dx2 : dx1);
                    g.launch(h);
                    g.launch(h); // a replay with nothing pending keeps the changed values
                    axpyOnCpu(expected, a, second ? x2 : x1);
                    axpyOnCpu(expected, a, second ? x2 : x1);
                    if (StandIn.active()) {
                        assertEquals(a, lastReplayedFloat(16), "a after update " + round);
                        assertEquals((second ? dx2 : dx1).address(), lastReplayedLong(8), "x after update " + round);
                        assertEquals(N, StandIn.control(16, 20), "n unchanged");
                    }
                }
                if (!StandIn.active()) {
                    assertArrayEquals(expected, download(dy), "y after replays with changed a and x (seed " + seed + ")");
                }
            }
        }
    }

    /** A change of the grid applies too; one the device refuses fails the replay and stays pending until corrected. */
    @Test
    void gridChangesApplyAndARefusedOneStaysPendingUntilCorrected() {
        long seed = System.nanoTime();
        Random random = new Random(seed);
        float[] x = integerFloats(random, N);
        float[] y = integerFloats(random, N);
        try (Handle h = Handle.create(0); DeviceBuffer dy = h.upload(y); DeviceBuffer dx = h.upload(x)) {
            GraphNode[] node = new GraphNode[1];
            try (Graph g = captureAxpy(h, dy, dx, 1f, node)) {
                int tooLarge = h.device().maxGridDim(1) + 1;
                g.update(node[0]).arg(2, 3f).grid(1, tooLarge, 1);
                IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, () -> g.launch(h));
                assertTrue(refused.getMessage().contains("grid") && refused.getMessage().contains("cuh_test_axpy"), refused.getMessage());
                assertThrows(IllegalArgumentException.class, () -> g.launch(h), "the refused change stays pending");
                g.update(node[0]).grid(3).block(64);
                g.launch(h);
                float[] expected = y.clone();
                axpyOnCpu(expected, 3f, x); // the grid-stride kernel gives the same result for any grid
                if (StandIn.active()) {
                    assertEquals(3f, lastReplayedFloat(16));
                } else {
                    assertArrayEquals(expected, download(dy), "y after a replay with a changed grid (seed " + seed + ")");
                }
            }
        }
    }

    /** K2 for updates: wrong index, type and size are IllegalArgumentExceptions that say what was expected. */
    @Test
    void wrongIndexTypeAndSizeAreRefused() {
        try (Handle h = Handle.create(0); DeviceBuffer y = h.allocate(4L * N); DeviceBuffer x = h.allocate(4L * N); DeviceBuffer small = h.allocate(4L * N - 4)) {
            GraphNode[] node = new GraphNode[1];
            try (Graph g = captureAxpy(h, y, x, 1f, node)) {
                GraphUpdate update = g.update(node[0]);
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> update.arg(4, 1));
                assertContains(e.getMessage(), "captured with 4 arguments", "index 4", "[0, 4)");
                e = assertThrows(IllegalArgumentException.class, () -> update.arg(-1, 1f));
                assertContains(e.getMessage(), "index -1");
                e = assertThrows(IllegalArgumentException.class, () -> update.arg(2, 1.0));
                assertContains(e.getMessage(), "argument 2", "captured as a float", "not a double");
                e = assertThrows(IllegalArgumentException.class, () -> update.arg(3, 5L));
                assertContains(e.getMessage(), "captured as an int", "not a long");
                e = assertThrows(IllegalArgumentException.class, () -> update.arg(2, x));
                assertContains(e.getMessage(), "captured as a float", "not a DeviceBuffer");
                e = assertThrows(IllegalArgumentException.class, () -> update.arg(0, 7f));
                assertContains(e.getMessage(), "captured as a DeviceBuffer");
                e = assertThrows(IllegalArgumentException.class, () -> update.arg(1, small));
                assertContains(e.getMessage(), (4L * N) + " bytes", (4L * N - 4) + " bytes", "at least");
                e = assertThrows(IllegalArgumentException.class, () -> update.grid(0));
                assertContains(e.getMessage(), "grid (0, 1, 1)");
                e = assertThrows(IllegalArgumentException.class, () -> update.block(1, 0, 1));
                assertContains(e.getMessage(), "block (1, 0, 1)");
                assertThrows(NullPointerException.class, () -> update.arg(1, (DeviceBuffer) null));
                update.arg(1, x.slice(0, 4L * N)); // a view of the full size is fine
                g.launch(h);
                h.synchronize();
            }
        }
    }

    /** A node of another graph, of a failed capture, a closed graph, and capturedLaunch where there is no launch to name. */
    @Test
    void nodesOfOtherGraphsClosedGraphsAndMisplacedNamingAreRefused() {
        try (Handle h = Handle.create(0); DeviceBuffer y = h.allocate(4L * N); DeviceBuffer x = h.allocate(4L * N)) {
            GraphNode[] first = new GraphNode[1];
            GraphNode[] second = new GraphNode[1];
            try (Graph g1 = captureAxpy(h, y, x, 1f, first); Graph g2 = captureAxpy(h, y, x, 1f, second)) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> g1.update(second[0]));
                assertContains(e.getMessage(), "belongs to another graph");
                assertThrows(NullPointerException.class, () -> g1.update(null));
                g2.close();
                IllegalStateException closed = assertThrows(IllegalStateException.class, () -> g2.update(second[0]));
                assertContains(closed.getMessage(), "closed");
                GraphUpdate pending = g1.update(first[0]);
                g1.close();
                assertThrows(IllegalStateException.class, () -> pending.arg(2, 2f), "an update of a graph closed since");
            }
            GraphNode[] orphan = new GraphNode[1];
            RuntimeException failure = new RuntimeException("user failure");
            assertSame(failure, assertThrows(RuntimeException.class, () -> h.capture(() -> {
                h.launch(axpy(), Dim3.of(1), Dim3.of(BLOCK), 0, y, x, 1f, N);
                orphan[0] = h.capturedLaunch();
                throw failure;
            })));
            try (Graph g = captureAxpy(h, y, x, 1f, new GraphNode[1])) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> g.update(orphan[0]));
                assertContains(e.getMessage(), "belongs to no graph", "capture failed");
            }
            IllegalStateException outside = assertThrows(IllegalStateException.class, h::capturedLaunch);
            assertContains(outside.getMessage(), "Handle.capturedLaunch", "none running");
            IllegalStateException none = assertThrows(IllegalStateException.class, () -> h.capture(() -> {
                h.memset(y, 0);
                h.capturedLaunch();
            }));
            assertContains(none.getMessage(), "no kernel launch");
            IllegalStateException later = assertThrows(IllegalStateException.class, () -> h.capture(() -> {
                h.launch(axpy(), Dim3.of(1), Dim3.of(BLOCK), 0, y, x, 1f, N);
                h.memset(y, 0);
                h.capturedLaunch();
            }));
            assertContains(later.getMessage(), "another call on the handle followed the last launch");
            try (Handle other = Handle.create(0)) {
                IllegalStateException reused = assertThrows(IllegalStateException.class, () -> h.capture(() -> {
                    h.launch(axpy(), Dim3.of(1), Dim3.of(BLOCK), 0, y, x, 1f, N);
                    other.launch(empty(), Dim3.of(1), Dim3.of(1), 0); // the thread's launch object, run at once on another handle
                    h.capturedLaunch();
                }));
                assertContains(reused.getMessage(), "launched again or changed");
                other.synchronize();
            }
            IllegalStateException changed = assertThrows(IllegalStateException.class, () -> h.capture(() -> {
                KernelLaunch launch = axpy().newLaunch().grid(2).block(BLOCK).arg(0, y).arg(1, x).arg(2, 1f).arg(3, N);
                launch.launch(h);
                launch.arg(2, 5f); // the node has 1f: naming it now would copy 5f
                h.capturedLaunch();
            }));
            assertContains(changed.getMessage(), "launched again or changed");
            GraphNode[] twice = new GraphNode[2];
            try (Graph g = h.capture(() -> {
                KernelLaunch launch = axpy().newLaunch().grid(2).block(BLOCK).arg(0, y).arg(1, x).arg(2, 1f).arg(3, N);
                launch.launch(h);
                twice[0] = h.capturedLaunch();
                twice[1] = h.capturedLaunch();
            })) {
                assertSame(twice[0], twice[1], "named twice with no call between: the same node");
                g.update(twice[0]).arg(2, 2f);
                g.launch(h);
                h.synchronize();
            }
        }
    }

    /** L7: the graph keeps a buffer an update brought in (closing it refuses the replay) and lets go of the one it replaced. */
    @Test
    void theGraphKeepsTheBufferAnUpdateBringsAndReleasesTheReplacedOne() {
        long seed = System.nanoTime();
        Random random = new Random(seed);
        float[] x2 = integerFloats(random, N);
        float[] y = integerFloats(random, N);
        try (Handle h = Handle.create(0); DeviceBuffer dy = h.upload(y)) {
            DeviceBuffer dx1 = h.allocate(4L * N);
            DeviceBuffer dx2 = h.upload(x2);
            GraphNode[] node = new GraphNode[1];
            try (Graph g = captureAxpy(h, dy, dx1, 1f, node)) {
                g.update(node[0]).arg(1, dx2);
                g.launch(h);
                dx1.close(); // replaced everywhere: the graph no longer uses it
                g.launch(h);
                float[] expected = y.clone();
                axpyOnCpu(expected, 1f, x2);
                axpyOnCpu(expected, 1f, x2);
                if (!StandIn.active()) {
                    assertArrayEquals(expected, download(dy), "y after replays with the new x (seed " + seed + ")");
                }
                dx2.close();
                IllegalStateException e = assertThrows(IllegalStateException.class, () -> g.launch(h));
                assertContains(e.getMessage(), "DeviceBuffer that was closed");
                try (DeviceBuffer dx3 = h.upload(x2)) {
                    assertThrows(IllegalStateException.class, () -> g.update(node[0]).arg(1, dx2), "a closed buffer cannot come in");
                    g.update(node[0]).arg(1, dx3);
                    g.launch(h); // the closed dx2 left the graph with the change
                    h.synchronize();
                }
            }
        }
    }

    /** A buffer that other recorded calls still use stays in the graph after an update replaced it in one node. */
    @Test
    void aReplacedBufferThatOtherCallsUseStaysKept() {
        try (Handle h = Handle.create(0); DeviceBuffer dy = h.allocate(4L * N); DeviceBuffer dx2 = h.allocate(4L * N)) {
            DeviceBuffer dx1 = h.allocate(4L * N);
            GraphNode[] node = new GraphNode[1];
            try (Graph g = h.capture(() -> {
                h.launch(axpy(), Dim3.of(8), Dim3.of(BLOCK), 0, dy, dx1, 1f, N);
                node[0] = h.capturedLaunch();
                h.memset(dx1, 0); // another recorded use of dx1
            })) {
                g.update(node[0]).arg(1, dx2);
                g.launch(h);
                dx1.close();
                IllegalStateException e = assertThrows(IllegalStateException.class, () -> g.launch(h));
                assertContains(e.getMessage(), "DeviceBuffer that was closed");
                assertFalse(dx2.isClosed());
            }
        }
    }

    /** An update with a buffer of another context is refused, naming both contexts. */
    @Test
    void aBufferOfAnotherContextIsRefused() {
        long ctx = NativeTestApi.createContext(0);
        try {
            try (Handle user = Handle.create(); Handle h = Handle.create(0); DeviceBuffer other = user.allocate(4L * N);
                    DeviceBuffer y = h.allocate(4L * N); DeviceBuffer x = h.allocate(4L * N)) {
                clearCurrent();
                GraphNode[] node = new GraphNode[1];
                try (Graph g = captureAxpy(h, y, x, 1f, node)) {
                    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> g.update(node[0]).arg(1, other));
                    assertContains(e.getMessage(), "context id " + user.contextId(), "context id " + h.contextId());
                }
            }
        } finally {
            destroyQuietly(ctx);
        }
    }
}
