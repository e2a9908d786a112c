package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Rule H4: no operation of the library changes which context is current on the caller's thread.
 * Every public operation of {@link Handle} (and of the objects it creates) is run from three
 * starting states — nothing current, the handle's own context current, another context current —
 * for a handle on the primary context and one on a user context; the current context is compared
 * after each operation. {@link Handle#makeCurrent()} is the documented exception.
 */
@GpuTest
@StandInCapable // the context stack is the driver object model; launches are counted
class HandleNonInvasiveGpuTest extends HandleGpuTestBase {
    private static final int N = 3000;

    interface Step {
        void run() throws Exception;
    }

    /** Runs steps one by one, comparing the current context after each; collects every violation. */
    private static final class Checker {
        final String scenario;
        final long expected;
        final List<String> violations = new ArrayList<>();
        int steps;

        Checker(String scenario, long expected) {
            this.scenario = scenario;
            this.expected = expected;
        }

        void step(String operation, Step body) {
            steps++;
            try {
                body.run();
            } catch (Throwable t) {
                violations.add(operation + " threw " + t);
                t.printStackTrace(System.out);
            }
            long now = current();
            if (now != expected) {
                violations.add(operation + ": current context was " + hex(expected) + " before and " + hex(now) + " after");
                makeOnlyCurrent(expected); // so that one violation does not hide the next ones
            }
        }

        void assertNone() {
            if (!violations.isEmpty()) {
                fail("H4 [" + scenario + "]: " + violations.size() + " of " + steps + " operations changed the caller's current context or failed:\n  "
                        + String.join("\n  ", violations));
            }
            System.out.println("[h4] " + scenario + ": " + steps + " operations left " + hex(expected) + " current");
        }
    }

    @Test
    void h4_primaryHandle_everyOperationRestoresTheCallersContext() {
        long primary = NativeTestApi.retainPrimary(0);
        long user = newUserContext(0);
        try {
            runScenario("primary handle, nothing current", () -> Handle.create(0), 0, primary);
            runScenario("primary handle, its own context current", () -> Handle.create(0), primary, primary);
            runScenario("primary handle, a user context current", () -> Handle.create(0), user, primary);
        } finally {
            clearCurrent();
            destroyQuietly(user);
            NativeTestApi.releasePrimary(0);
        }
    }

    @Test
    void h4_userContextHandle_everyOperationRestoresTheCallersContext() {
        long primary = NativeTestApi.retainPrimary(0);
        long user = newUserContext(0);
        long other = newUserContext(0);
        try {
            runScenario("user-context handle, nothing current", () -> Handle.wrap(user), 0, user);
            runScenario("user-context handle, its own context current", () -> Handle.wrap(user), user, user);
            runScenario("user-context handle, the primary context current", () -> Handle.wrap(user), primary, user);
            runScenario("user-context handle, another user context current", () -> Handle.wrap(user), other, user);
        } finally {
            clearCurrent();
            destroyQuietly(other);
            destroyQuietly(user);
            NativeTestApi.releasePrimary(0);
        }
    }

    interface HandleFactory {
        Handle create();
    }

    /**
     * Runs every operation with {@code start} current on this thread. The handle (from
     * {@code factory}) is bound to {@code handleContext}.
     */
    private void runScenario(String scenario, HandleFactory factory, long start, long handleContext) {
        Random random = new Random(scenario.hashCode());
        float[] x = randomFloats(random, N);
        float[] out = new float[N];
        // A raw stream of the handle's context, for setStream (made while that context is current).
        makeOnlyCurrent(handleContext);
        long rawStream = NativeTestApi.streamCreate();
        makeOnlyCurrent(start);

        Checker c = new Checker(scenario, start);
        LaunchCount launches = new LaunchCount();
        Handle[] h = new Handle[1];
        DeviceBuffer[] b = new DeviceBuffer[3];
        Event[] e = new Event[2];
        Library[] lib = new Library[1];
        Kernel[] k = new Kernel[1];
        try {
            c.step("creating the handle under test", () -> h[0] = factory.create());
            c.step("Handle.create()", () -> {
                try (Handle other = Handle.create()) {
                    long expectedContext = start != 0 ? start : primaryOf0();
                    assertEquals(hex(expectedContext), hex(other.rawContext()), "Handle.create() binds the current context, or the primary one");
                }
            });
            c.step("Handle.create(0) + close", () -> Handle.create(0).close());
            c.step("Handle.wrap(context) + close", () -> Handle.wrap(handleContext).close());
            c.step("validate()", () -> h[0].validate());
            c.step("stream()", () -> assertTrue(h[0].stream() != 0));
            c.step("synchronize() with nothing queued", () -> h[0].synchronize());
            c.step("allocate()", () -> b[0] = h[0].allocate(4L * N));
            c.step("upload(float[])", () -> b[1] = h[0].upload(x));
            c.step("upload(int[]) + close", () -> h[0].upload(new int[] {1, 2, 3}).close());
            c.step("copyToDevice(float[])", () -> h[0].copyToDevice(x, 0, b[0], N));
            c.step("memset()", () -> h[0].memset(b[0], 0));
            c.step("copy(device to device)", () -> h[0].copy(b[1], b[0]));
            c.step("launch(kernel, ..., args) varargs", () -> addOne(h[0], b[0], N));
            c.step("launch(KernelLaunch)", () -> h[0].launch(addOneKernel().newLaunch().grid(gridFor(N).x).block(BLOCK).arg(0, b[0]).arg(1, N)));
            c.step("copyToHost(float[])", () -> h[0].copyToHost(b[0], out, 0, N));
            c.step("DeviceBuffer.download(float[])", () -> b[0].download(out));
            c.step("copyToDevice/copyToHost(direct ByteBuffer)", () -> {
                ByteBuffer direct = ByteBuffer.allocateDirect(16).order(ByteOrder.nativeOrder());
                direct.putInt(0, 42);
                try (DeviceBuffer small = h[0].allocate(16)) {
                    h[0].copyToDevice(direct, 0, small, 16);
                    direct.putInt(0, 0);
                    h[0].copyToHost(small, direct, 0, 16);
                }
                assertEquals(42, direct.getInt(0));
            });
            c.step("createEvent() x2", () -> {
                e[0] = h[0].createEvent();
                e[1] = h[0].createEvent();
            });
            c.step("Event.record()", () -> {
                e[0].record(h[0]);
                spin(h[0], 0.002);
                e[1].record(h[0]);
            });
            c.step("Event.synchronize()", () -> e[1].synchronize());
            c.step("Event.elapsedSince()", () -> assertTrue(e[1].elapsedSince(e[0]) >= 0f));
            c.step("Event.close()", () -> {
                e[0].close();
                e[1].close();
            });
            c.step("setStream(raw CUstream)", () -> h[0].setStream(rawStream));
            c.step("launch on the raw stream", () -> addOne(h[0], b[1], N));
            c.step("resetStream()", () -> h[0].resetStream());
            c.step("setStream(0) (legacy default stream)", () -> h[0].setStream(0));
            c.step("resetStream() again", () -> h[0].resetStream());
            c.step("wrapPointer() + close", () -> h[0].wrapPointer(b[0].address(), 4L * N).close());
            c.step("slice() + close of the view", () -> b[0].slice(0, 16).close());
            c.step("Library.load()", () -> lib[0] = TestKernels.load());
            c.step("Library.kernel()", () -> k[0] = lib[0].kernel("cuh_test_empty"));
            c.step("Kernel.maxThreadsPerBlock()", () -> assertTrue(k[0].maxThreadsPerBlock(h[0].device().ordinal()) > 0));
            c.step("launch of a kernel without parameters", () -> h[0].launch(k[0], Dim3.of(1), Dim3.of(1), 0));
            c.step("synchronize() after work", () -> h[0].synchronize());
            c.step("Library.close()", () -> lib[0].close());
            c.step("Cuda.currentContext()", () -> assertEquals(hex(start), hex(Cuda.currentContext()), "Cuda.currentContext() agrees with the driver"));
            c.step("DeviceBuffer.close() (handle open)", () -> b[1].close());
            c.step("Handle.close() with a buffer still open", () -> h[0].close());
            c.step("Handle.close() again", () -> h[0].close());
            c.step("DeviceBuffer.close() after its handle closed", () -> b[0].close());
            c.assertNone();
            // +1 twice on b[0] (varargs and KernelLaunch), the spin, +1 on the raw stream, the empty kernel.
            launches.assertAccepted(5, "H4 [" + scenario + "]");
            // The data path ran too: memset 0, copy x, +1 twice (varargs and KernelLaunch).
            assertExact(afterAddOnes(x, 2), out, "H4 [" + scenario + "]: results of the operations");
        } finally {
            for (DeviceBuffer buffer : b) {
                closeQuietly(buffer);
            }
            closeQuietly(e[0]);
            closeQuietly(e[1]);
            closeQuietly(lib[0]);
            closeQuietly(h[0]);
            makeOnlyCurrent(handleContext);
            NativeTestApi.streamDestroy(rawStream);
            clearCurrent();
        }
        makeCurrentIsTheDocumentedException(scenario, factory, start, handleContext);
    }

    /** H4's escape hatch: makeCurrent() leaves the handle's context current (and only replaces the top). */
    private void makeCurrentIsTheDocumentedException(String scenario, HandleFactory factory, long start, long handleContext) {
        makeOnlyCurrent(start);
        try (Handle h = factory.create()) {
            assertEquals(hex(start), hex(current()), "H4 [" + scenario + "]: creating the handle");
            h.makeCurrent();
            assertEquals(hex(handleContext), hex(current()), "H4 [" + scenario + "]: makeCurrent() leaves the handle's context current");
            // The handle's context is now current: raw driver work goes there.
            assertEquals(hex(handleContext), hex(Cuda.currentContext()));
            makeOnlyCurrent(start);
        } finally {
            clearCurrent();
        }
    }

    private static long primaryOf0() {
        long p = NativeTestApi.retainPrimary(0);
        NativeTestApi.releasePrimary(0);
        return p;
    }

    /**
     * The driver's context stack below the top is left alone too: with two contexts pushed
     * (cuCtxCreate pushes), a series of operations on a primary handle leaves both, in order.
     */
    @Test
    void h4_contextStackBelowTheTopIsPreserved() throws Exception {
        // First learn how the driver's stack behaves on a scratch thread, so the test relies on
        // measured behaviour: cuCtxCreate pushes; cuCtxSetCurrent(NULL) pops one entry.
        boolean pushes = onFreshThread("h4-probe", () -> {
            long a = NativeTestApi.createContext(0);
            long b = NativeTestApi.createContext(0);
            try {
                boolean topIsB = current() == b;
                NativeTestApi.setCurrent(0);
                boolean thenA = current() == a;
                NativeTestApi.setCurrent(0);
                boolean thenNone = current() == 0;
                return topIsB && thenA && thenNone;
            } finally {
                clearCurrent();
                NativeTestApi.destroyContext(b);
                NativeTestApi.destroyContext(a);
            }
        });
        Assumptions.assumeTrue(pushes, "this driver's cuCtxCreate does not push onto a context stack as expected");

        String report = onFreshThread("h4-stack", () -> {
            long a = NativeTestApi.createContext(0);
            long b = NativeTestApi.createContext(0);
            try (Handle h = Handle.create(0)) {
                Random random = new Random(99);
                checkAddOne(h, random, 1000, 2, "H4 stack: work on the primary handle");
                try (Event ev = h.createEvent()) {
                    ev.record(h);
                    ev.synchronize();
                }
                h.synchronize();
                long top = current();
                NativeTestApi.setCurrent(0);
                long below = current();
                NativeTestApi.setCurrent(0);
                long bottom = current();
                if (top != b || below != a || bottom != 0) {
                    return "the stack was [" + hex(a) + ", " + hex(b) + "] (top last); after the operations the pops showed " + hex(top)
                            + ", then " + hex(below) + ", then " + hex(bottom);
                }
                return null;
            } finally {
                clearCurrent();
                NativeTestApi.destroyContext(b);
                NativeTestApi.destroyContext(a);
            }
        });
        if (report != null) {
            fail("H4: operations changed the context stack below its top: " + report);
        }
    }
}
