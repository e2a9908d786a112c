package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * From driver 13.0 a launch on the handle's own stream skips activating the handle's context
 * (launch.rs, after tests/bench/contextless_probe.cu on driver 580): the driver launches in the
 * stream's context whatever is current. These tests pin what that must keep: the launches compute
 * the right results (compared exactly with the CPU; which context ran them is shown by
 * {@link LaunchContextIdentityGpuTest}, since results cannot tell), the caller's current context,
 * nothing or another one, stays current (H4), and a destroyed context is still refused before the
 * driver sees the launch (H8). On the CPU stand-in (version 13000 in CI) they also check that the
 * launches really reached the driver without the handle's context current, i.e. that the fast path
 * ran.
 */
@GpuTest
@StandInCapable // the stand-in counts launches made without their stream's context current
class HandleLaunchWithoutActivationGpuTest extends HandleGpuTestBase {
    private static final int N = 1000;
    private static final int ROUNDS = 20;

    @Test
    void ownStream_nothingCurrent_runsInTheHandlesContext_andLeavesNothingCurrent() {
        makeOnlyCurrent(0);
        try (Handle h = Handle.create(0)) {
            launchAndCheck(h, 0L, new Random(0x6e6f6eL), "nothing current (seed 0x6e6f6e)");
        }
    }

    @Test
    void ownStream_otherContextCurrent_runsInTheHandlesContext_andTheOtherStaysCurrent() {
        withAnotherContextCurrent((h, user) -> launchAndCheck(h, user, new Random(0x6f746865L), "another context current (seed 0x6f746865)"));
    }

    @Test
    void ownStream_destroyedContext_isRefusedBeforeTheDriverLaunches() {
        long user = NativeTestApi.createContext(0);
        makeOnlyCurrent(0);
        try (Handle primary = Handle.create(0)) {
            Handle h = Handle.wrap(user);
            DeviceBuffer buffer = h.upload(new float[N]);
            addOne(h, buffer, N);
            h.synchronize(); // the own stream exists: the next launch would take the fast path
            NativeTestApi.destroyContext(user);
            primary.makeCurrent(); // another (live) context current while launching
            long callers = current();
            long before = StandIn.active() ? StandIn.launches() : 0;
            CudaException e = assertThrows(CudaException.class, () -> addOne(h, buffer, N), "H8: launch in a destroyed context");
            assertTrue(e.error() == CudaError.CONTEXT_IS_DESTROYED || e.error() == CudaError.INVALID_CONTEXT, "H8 error code: " + e.error());
            assertTrue(e.getMessage().contains("destroyed"), "H8 message: " + e.getMessage());
            if (StandIn.active()) {
                assertEquals(before, StandIn.launches(), "no launch reached the driver");
            }
            assertEquals(hex(callers), hex(current()), "H4: the caller's context stays current");
            buffer.close();
            h.close();
        } finally {
            clearCurrent();
        }
    }

    /** ROUNDS add-one launches on `h`'s own stream with `callersContext` current; checks data, H4, and the stand-in's counter. */
    private static void launchAndCheck(Handle h, long callersContext, Random random, String what) {
        float[] x = randomFloats(random, N);
        try (DeviceBuffer b = h.upload(x)) {
            h.synchronize(); // the own stream exists from here on
            assertEquals(hex(callersContext), hex(current()), what + ": the upload kept the caller's context (H4)");
            LaunchCount launches = new LaunchCount();
            int outsideBefore = StandIn.active() ? StandIn.launchesOutsideCurrentContext() : 0;
            for (int r = 0; r < ROUNDS; r++) {
                addOne(h, b, N);
                assertEquals(hex(callersContext), hex(current()), what + ": launch " + r + " kept the caller's context (H4)");
            }
            launches.assertAccepted(ROUNDS, what);
            if (StandIn.active() && Cuda.driverVersion() >= 13000) {
                assertEquals(ROUNDS, StandIn.launchesOutsideCurrentContext() - outsideBefore,
                        what + ": launches that reached the driver without the handle's context current (the fast path)");
            }
            float[] out = new float[N];
            b.download(out);
            assertExact(afterAddOnes(x, ROUNDS), out, what + ": buffer after " + ROUNDS + " launches");
            assertEquals(hex(callersContext), hex(current()), what + ": afterwards (H4)");
        }
    }
}
