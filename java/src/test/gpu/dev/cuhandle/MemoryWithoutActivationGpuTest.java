package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * From driver 13.0, {@code allocate}, {@code memset} and the stream-ordered free of a buffer used only
 * on the handle's own stream skip activating the handle's context (rust/src/core/driver/stream_context.rs,
 * after tests/bench/contextless_probe.cu on driver 580), as launches do. These tests pin what that
 * must keep: the bytes are right (compared with a CPU reference on fresh random data), the caller's
 * current context, nothing or another one, stays current (H4), and a destroyed context is refused
 * before the driver sees the call (H8). On the CPU stand-in (version 13000 in CI) they also check that
 * the calls reached the driver without the handle's context current, i.e. that the fast path ran.
 */
@GpuTest
@StandInCapable // the stand-in counts memory calls made without their stream's context current
class MemoryWithoutActivationGpuTest extends HandleGpuTestBase {
    private static final int ROUNDS = 25;

    @Test
    void nothingCurrent_allocateMemsetClose_rightBytes_andNothingBecomesCurrent() {
        makeOnlyCurrent(0);
        try (Handle h = Handle.create(0)) {
            churnAndCheck(h, 0L, new Random(0x616c6c6fL), "nothing current (seed 0x616c6c6f)");
        }
    }

    @Test
    void otherContextCurrent_allocateMemsetClose_rightBytes_andTheOtherStaysCurrent() {
        withAnotherContextCurrent((h, user) -> churnAndCheck(h, user, new Random(0x6f746872L), "another context current (seed 0x6f746872)"));
    }

    @Test
    void destroyedContext_allocateAndMemsetAreRefusedBeforeTheDriver() {
        long user = NativeTestApi.createContext(0);
        makeOnlyCurrent(0);
        try (Handle primary = Handle.create(0)) {
            Handle h = Handle.wrap(user);
            DeviceBuffer buffer = h.allocate(4096);
            h.memset(buffer, 1);
            h.synchronize(); // the pool and the own stream exist: the next calls would take the fast path
            NativeTestApi.destroyContext(user);
            primary.makeCurrent(); // another (live) context current meanwhile
            long callers = current();
            int outsideBefore = StandIn.active() ? StandIn.memoryCallsOutsideCurrentContext() : 0;
            CudaException a = assertThrows(CudaException.class, () -> h.allocate(4096), "H8: allocate in a destroyed context");
            CudaException m = assertThrows(CudaException.class, () -> h.memset(buffer, 2), "H8: memset in a destroyed context");
            for (CudaException e : new CudaException[] {a, m}) {
                assertTrue(e.error() == CudaError.CONTEXT_IS_DESTROYED || e.error() == CudaError.INVALID_CONTEXT, "H8 error code: " + e.error());
                assertTrue(e.getMessage().contains("destroyed"), "H8 message: " + e.getMessage());
            }
            buffer.close(); // its memory went with the context: nothing to free, no failure
            if (StandIn.active()) {
                assertEquals(outsideBefore, StandIn.memoryCallsOutsideCurrentContext(), "no call reached the driver");
            }
            assertEquals(hex(callers), hex(current()), "H4: the caller's context stays current");
            h.close();
        } finally {
            clearCurrent();
        }
    }

    /**
     * ROUNDS of allocate (random size) + memset (random byte) + download + close on {@code h} with
     * {@code callersContext} current; checks the bytes, H4 after every call, and the stand-in's count.
     */
    private static void churnAndCheck(Handle h, long callersContext, Random random, String what) {
        h.allocate(16).close(); // the first allocation makes the context's pool (activated)
        h.synchronize(); // the own stream exists from here on
        int outsideBefore = StandIn.active() ? StandIn.memoryCallsOutsideCurrentContext() : 0;
        for (int r = 0; r < ROUNDS; r++) {
            int bytes = 1 + random.nextInt(1 << 20);
            int value = random.nextInt(256);
            byte[] back = new byte[bytes];
            try (DeviceBuffer b = h.allocate(bytes)) {
                assertEquals(hex(callersContext), hex(current()), what + ": allocate " + r + " kept the caller's context (H4)");
                h.memset(b, value);
                assertEquals(hex(callersContext), hex(current()), what + ": memset " + r + " kept the caller's context (H4)");
                b.download(back);
            }
            assertEquals(hex(callersContext), hex(current()), what + ": close " + r + " kept the caller's context (H4)");
            byte[] expected = new byte[bytes];
            Arrays.fill(expected, (byte) value);
            assertArrayEquals(expected, back, what + ": round " + r + ", " + bytes + " bytes of " + value);
        }
        h.synchronize();
        if (StandIn.active() && Cuda.driverVersion() >= 13000) {
            // Three per round (allocate, memset, free); the download is activated (it waits on the host).
            assertEquals(3 * ROUNDS, StandIn.memoryCallsOutsideCurrentContext() - outsideBefore,
                    what + ": memory calls that reached the driver without the handle's context current (the fast path)");
        }
        assertEquals(hex(callersContext), hex(current()), what + ": afterwards (H4)");
    }
}
