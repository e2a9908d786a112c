package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Conditional graph nodes ({@link Handle#whileLoop}, {@link Handle#ifThen}, CUDA 12.4+): on the GPU a loop runs until a
 * device counter reaches k, a loop on a float residual stops when it is below the threshold, the iteration guard
 * holds, and an IF runs its body only where its flag is set. On the CPU stand-in (which adds the nodes and captures
 * the bodies, but whose kernels do not run, so a WHILE body runs once per replay and an IF body never) the API, the
 * graph's shape and the refusals.
 */
@GpuTest
@StandInCapable // the stand-in models conditional handles, conditional nodes and body captures
class GraphConditionalGpuTest extends KernelGpuTestBase {
    private static Kernel countTo() {
        return kernel("cuh_test_count_to");
    }

    private static Kernel halve() {
        return kernel("cuh_test_halve");
    }

    private static int intAt(DeviceBuffer b) {
        int[] v = new int[1];
        b.slice(0, 4).download(v);
        return v[0];
    }

    /** Skips where the driver has no conditional nodes; the refusal is checked by {@link #anOldDriverIsRefusedWithTheVersionItNeeds}. */
    private static void assumeConditionalNodes() {
        Assumptions.assumeTrue(Cuda.driverVersion() >= 12040, "conditional nodes need a CUDA 12.4+ driver; this one is " + Cuda.driverVersion());
    }

    @Test
    void aWhileLoopRunsUntilADeviceCounterReachesK() {
        assumeConditionalNodes();
        int k = 5 + freshRandom("k").nextInt(60);
        try (Handle h = Handle.create(0); DeviceBuffer counter = h.allocate(4); DeviceBuffer go = h.allocate(4);
                DeviceBuffer iterations = h.allocate(4)) {
            int launchesBefore = StandIn.active() ? StandIn.launches() : 0;
            try (Graph g = h.capture(() -> {
                h.memset(counter, 0);
                h.whileLoop(1000, iterations, loop -> {
                    h.launch(countTo(), Dim3.of(1), Dim3.of(1), 0, counter, go, k);
                    loop.continueWhile(GraphCondition.nonZero(go));
                });
            })) {
                assertEquals(4, g.nodeCount(), "the counter's memset, the iteration count's memset, the setter that starts the condition at 1 and the WHILE node");
                for (int replay = 0; replay < 3; replay++) {
                    g.launch(h);
                    h.synchronize();
                    if (StandIn.active()) {
                        // kernels do not run: the body runs once; the starting setter, the body's launch and its setter are counted
                        assertEquals(launchesBefore + 3 * (replay + 1), StandIn.launches(), "starting setter, body and setter launches per replay");
                    } else {
                        assertEquals(k, intAt(counter), "the counter after replay " + replay);
                        assertEquals(k, intAt(iterations), "iterations of replay " + replay);
                    }
                }
            }
        }
    }

    @Test
    void theIterationLimitStopsALoopWhoseConditionHolds() {
        assumeConditionalNodes();
        try (Handle h = Handle.create(0); DeviceBuffer counter = h.allocate(4); DeviceBuffer go = h.allocate(4);
                DeviceBuffer iterations = h.allocate(4)) {
            try (Graph g = h.capture(() -> {
                h.memset(counter, 0);
                h.whileLoop(7, iterations, loop -> {
                    h.launch(countTo(), Dim3.of(1), Dim3.of(1), 0, counter, go, 1_000_000);
                    loop.continueWhile(GraphCondition.nonZero(go));
                });
            })) {
                g.launch(h);
                h.synchronize();
                if (!StandIn.active()) {
                    assertEquals(7, intAt(counter), "the loop stops at its maximum");
                    assertEquals(7, intAt(iterations));
                }
            }
            try (Graph counted = h.capture(() -> {
                h.memset(counter, 0);
                h.whileLoop(9, iterations, loop -> h.launch(countTo(), Dim3.of(1), Dim3.of(1), 0, counter, go, 1));
            })) {
                counted.launch(h);
                h.synchronize();
                if (!StandIn.active()) {
                    assertEquals(9, intAt(counter), "without a condition a loop runs its maximum");
                }
            }
        }
    }

    /** A float residual halved each iteration: the loop stops at the first value at most the threshold (CPU reference). */
    @Test
    void aLoopOnAFloatResidualStopsBelowTheThreshold() {
        assumeConditionalNodes();
        Random random = freshRandom("residual");
        float start = 1 + random.nextInt(1000);
        float threshold = 1e-3f * (1 + random.nextInt(100));
        int expected = 0;
        for (float r = start; ; ) {
            r *= 0.5f;
            expected++;
            if (!(r > threshold)) {
                break;
            }
        }
        try (Handle h = Handle.create(0); DeviceBuffer residual = h.upload(new float[] {start}); DeviceBuffer iterations = h.allocate(4)) {
            try (Graph g = h.capture(() -> h.whileLoop(500, iterations, loop -> {
                h.launch(halve(), Dim3.of(1), Dim3.of(1), 0, residual);
                loop.continueWhile(GraphCondition.floatAbove(residual, threshold));
            }))) {
                g.launch(h);
                h.synchronize();
                if (!StandIn.active()) {
                    assertEquals(expected, intAt(iterations), "iterations from " + start + " to at most " + threshold);
                    float[] r = new float[1];
                    residual.download(r);
                    assertTrue(r[0] <= threshold && r[0] * 2 > threshold, "the residual stops at " + r[0]);
                }
            }
        }
    }

    /**
     * thenZero: the body raises a float, a double and an int by one while a device count is below k; a loop on one of
     * them that zeroes it after each read stops at iteration k with the value 0, and the same loop without the zeroing
     * (the value stays above) runs to its limit.
     */
    @Test
    void aConditionThatZeroesItsValueStartsEachIterationFromZero() {
        assumeConditionalNodes();
        int k = 3 + freshRandom("k").nextInt(20);
        int limit = 40;
        try (Handle h = Handle.create(0); DeviceBuffer counter = h.allocate(4); DeviceBuffer f = h.allocate(4); DeviceBuffer d = h.allocate(8);
                DeviceBuffer i = h.allocate(4); DeviceBuffer iterations = h.allocate(4)) {
            GraphCondition[] plain = {GraphCondition.floatAbove(f, 0.5f), GraphCondition.doubleAbove(d, 0.5), GraphCondition.nonZero(i)};
            for (GraphCondition condition : plain) {
                for (boolean zeroes : new boolean[] {true, false}) {
                    GraphCondition when = zeroes ? condition.thenZero() : condition;
                    try (Graph g = h.capture(() -> {
                        h.memset(counter, 0);
                        h.memset(f, 0);
                        h.memset(d, 0);
                        h.memset(i, 0);
                        h.whileLoop(limit, iterations, loop -> {
                            h.launch(kernel("cuh_test_raise_until"), Dim3.of(1), Dim3.of(1), 0, counter, f, d, i, k);
                            loop.continueWhile(when);
                        });
                    })) {
                        g.launch(h);
                        h.synchronize();
                        if (!StandIn.active()) {
                            assertEquals(zeroes ? k : limit, intAt(iterations), when + " with k = " + k);
                            if (zeroes) {
                                byte[] value = new byte[(int) when.value.byteLength()];
                                when.value.download(value);
                                assertArrayEquals(new byte[value.length], value, when + ": the value is zero after the loop");
                            }
                        }
                    }
                }
            }
            assertEquals("GraphCondition[float > 0.5, then zeroed]", plain[0].thenZero().toString());
        }
    }

    @Test
    void anIfRunsItsBodyOnlyWhereItsFlagIsSet() {
        assumeConditionalNodes();
        long seed = System.nanoTime();
        float[] input = randomFloats(new Random(seed), 1024);
        try (Handle h = Handle.create(0); DeviceBuffer x = h.upload(input); DeviceBuffer flag = h.allocate(4)) {
            try (Graph g = h.capture(() -> h.ifThen(GraphCondition.nonZero(flag), () -> launchAddOne(h, x, 1024)))) {
                assertEquals(2, g.nodeCount(), "the setter and the IF node");
                h.memset(flag, 0);
                g.launch(h);
                h.memset(flag, 1);
                g.launch(h);
                g.launch(h);
                h.synchronize();
                if (!StandIn.active()) {
                    float[] out = new float[1024];
                    x.download(out);
                    assertArrayEquals(plusOne(plusOne(input, 0, 1024), 0, 1024), out, "two of three replays ran the body (seed " + seed + ")");
                }
            }
        }
    }

    /** Loops nest: an inner loop of 3 inside an outer of 4 counts 12. */
    @Test
    void loopsNest() {
        assumeConditionalNodes();
        try (Handle h = Handle.create(0); DeviceBuffer counter = h.allocate(4); DeviceBuffer go = h.allocate(4);
                DeviceBuffer outer = h.allocate(4); DeviceBuffer inner = h.allocate(4)) {
            try (Graph g = h.capture(() -> {
                h.memset(counter, 0);
                h.whileLoop(4, outer, o -> h.whileLoop(3, inner, i -> h.launch(countTo(), Dim3.of(1), Dim3.of(1), 0, counter, go, 0)));
            })) {
                g.launch(h);
                h.synchronize();
                if (!StandIn.active()) {
                    assertEquals(12, intAt(counter));
                    assertEquals(4, intAt(outer));
                    assertEquals(3, intAt(inner));
                }
            }
        }
    }

    @Test
    void misuseIsRefusedAndAFailedBodyLeavesTheHandleUsable() {
        assumeConditionalNodes();
        try (Handle h = Handle.create(0); DeviceBuffer counter = h.allocate(4); DeviceBuffer go = h.allocate(4); DeviceBuffer small = h.allocate(2);
                DeviceBuffer iterations = h.allocate(4)) {
            IllegalStateException outside = assertThrows(IllegalStateException.class, () -> h.whileLoop(3, iterations, loop -> { }));
            assertContains(outside.getMessage(), "Handle.whileLoop", "inside Handle.capture");
            assertThrows(IllegalStateException.class, () -> h.ifThen(GraphCondition.nonZero(go), () -> { }));
            IllegalArgumentException zero = assertThrows(IllegalArgumentException.class, () -> h.whileLoop(0, iterations, loop -> { }));
            assertContains(zero.getMessage(), "maxIterations is 0");
            IllegalArgumentException tiny = assertThrows(IllegalArgumentException.class, () -> h.whileLoop(3, small, loop -> { }));
            assertContains(tiny.getMessage(), "4 bytes", "2 bytes");
            assertThrows(NullPointerException.class, () -> h.whileLoop(3, iterations, null));
            assertThrows(NullPointerException.class, () -> h.ifThen(null, () -> { }));
            IllegalArgumentException shortValue = assertThrows(IllegalArgumentException.class, () -> GraphCondition.doubleAbove(counter, 1e-9));
            assertContains(shortValue.getMessage(), "a double (8 bytes)", "4 bytes");
            IllegalStateException named = assertThrows(IllegalStateException.class, () -> h.capture(() -> h.whileLoop(3, iterations, loop -> {
                h.launch(countTo(), Dim3.of(1), Dim3.of(1), 0, counter, go, 2);
                h.capturedLaunch();
            })));
            assertContains(named.getMessage(), "not of a conditional body");
            int graphsBefore = StandIn.active() ? StandIn.liveGraphs() : 0;
            RuntimeException failure = new RuntimeException("user failure in a loop body");
            assertSame(failure, assertThrows(RuntimeException.class, () -> h.capture(() -> h.whileLoop(3, iterations, loop -> {
                h.launch(countTo(), Dim3.of(1), Dim3.of(1), 0, counter, go, 2);
                throw failure;
            }))));
            IllegalStateException refused = assertThrows(IllegalStateException.class, () -> h.capture(() -> h.ifThen(GraphCondition.nonZero(go),
                    h::synchronize)));
            assertContains(refused.getMessage(), "Handle.synchronize", "captures a graph");
            if (StandIn.active()) {
                assertEquals(graphsBefore, StandIn.liveGraphs(), "failed captures leave no graphs");
            }
            h.memset(counter, 0); // the handle works: its calls run on its own stream again
            h.launch(countTo(), Dim3.of(1), Dim3.of(1), 0, counter, go, 2);
            h.synchronize();
            if (!StandIn.active()) {
                assertEquals(1, intAt(counter));
            }
            try (Graph g = h.capture(() -> h.whileLoop(2, iterations, loop -> h.memset(go, 0)))) {
                g.launch(h); // a capture after the failures works
                h.synchronize();
            }
        }
    }

    /** Where the driver predates CUDA 12.4 the loop is refused with a CudaException naming the version needed. */
    @Test
    void anOldDriverIsRefusedWithTheVersionItNeeds() {
        Assumptions.assumeTrue(Cuda.driverVersion() < 12040, "this driver has conditional nodes (checked by the other tests)");
        try (Handle h = Handle.create(0); DeviceBuffer iterations = h.allocate(4)) {
            CudaException e = assertThrows(CudaException.class, () -> h.capture(() -> h.whileLoop(3, iterations, loop -> { })));
            assertEquals(CudaError.NOT_SUPPORTED, e.error());
            assertContains(e.getMessage(), "12.4");
        }
    }
}
