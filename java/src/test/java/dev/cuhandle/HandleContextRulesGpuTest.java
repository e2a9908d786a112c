package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Which context a handle binds to (rules H1, H2, H3 of docs/design.md), checked against the driver's
 * own answers ({@code cuDevicePrimaryCtxRetain}, {@code cuCtxGetId}) through {@link NativeTestApi}.
 */
@GpuTest
@StandInCapable // context binding and retains are the driver object model; the stand-in has two devices
class HandleContextRulesGpuTest extends HandleGpuTestBase {
    private final Random random = new Random(0x4831L);

    // ------------------------------------------------------------------ H1

    @Test
    void h1_primaryContextCurrent_boundAndRetained() {
        long[] before = settledPrimaryState(0);
        long primary = NativeTestApi.retainPrimary(0);
        boolean testRetainHeld = true;
        Handle h = null;
        try {
            NativeTestApi.setCurrent(primary);
            h = Handle.create();
            assertEquals(hex(primary), hex(current()), "H4: Handle.create() must leave the primary context current");
            assertEquals(hex(primary), hex(h.rawContext()), "H1: a handle created while the primary context is current binds to it");
            assertTrue(h.ownsPrimaryContext(), "H1: a handle bound to a primary context retains it (ownsPrimaryContext)");
            assertEquals(NativeTestApi.contextId(primary), h.contextId(), "H1: the handle records the context's cuCtxGetId");
            assertEquals(0, h.device().ordinal());

            // Drop the test's own retain: the handle's retain must keep the primary context alive.
            clearCurrent();
            NativeTestApi.releasePrimary(0);
            testRetainHeld = false;
            assertEquals(1L, NativeTestApi.primaryState(0)[1],
                    "H1: with the test's retain released, the handle's retain must keep the primary context active");
            h.validate();
            checkAddOne(h, random, 4096, 3, "H1: work on the retained primary context");
            h.close();
            h = null;
            if (before[1] == 0) {
                assertEquals(0L, NativeTestApi.primaryState(0)[1],
                        "H1/H6: the primary context was inactive before the test; after the handle released its retain (exactly once) it must be inactive again");
            } else {
                System.out.println("[h1] the primary context was already active before the test " + state(before)
                        + " (another retain exists); the exactly-once release is only checked when it starts inactive");
            }
            assertEquals(state(before), state(NativeTestApi.primaryState(0)), "H1: the primary context's state after the handle closed");
        } finally {
            closeQuietly(h);
            clearCurrent();
            if (testRetainHeld) {
                NativeTestApi.releasePrimary(0);
            }
        }
    }

    @Test
    void h1_userContextCurrent_boundNotOwned() {
        long user = newUserContext(0);
        try {
            NativeTestApi.setCurrent(user);
            Handle h = Handle.create();
            try {
                assertEquals(hex(user), hex(current()), "H4: Handle.create() must leave the user context current");
                assertEquals(hex(user), hex(h.rawContext()), "H1: a handle created while a user context is current binds to it");
                assertFalse(h.ownsPrimaryContext(), "H1: a non-primary context is not owned by the handle");
                assertEquals(NativeTestApi.contextId(user), h.contextId(), "H1: the handle records the user context's id");
                clearCurrent();
                checkAddOne(h, random, 5000, 2, "H1: work on the bound user context (called with nothing current)");
            } finally {
                h.close();
            }
            // Closing a borrowed-context handle must not destroy the context: it is the caller's.
            long idAfterClose = NativeTestApi.contextId(user);
            assertTrue(idAfterClose != 0, "the user context must still be alive after the handle closed");
            try (Handle again = Handle.wrap(user)) {
                checkAddOne(again, random, 100, 1, "H1: the user context still works after a handle on it closed");
            }
        } finally {
            clearCurrent();
            destroyQuietly(user);
        }
    }

    // ------------------------------------------------------------------ H2

    @Test
    void h2_freshThreadWithNothingCurrent_bindsDevice0Primary() throws Exception {
        long[] seen = onFreshThread("h2-fresh", () -> {
            assertEquals(0, Cuda.getDevice(), "H2: a new thread's selected device is 0");
            try (Handle h = Handle.create()) {
                assertEquals(0L, current(), "H4: Handle.create() on a thread with nothing current leaves nothing current");
                long primary = NativeTestApi.retainPrimary(0);
                try {
                    checkAddOne(h, new Random(7), 1000, 1, "H2: work on the handle created on a fresh thread");
                    return new long[] {h.rawContext(), primary, h.ownsPrimaryContext() ? 1 : 0, h.device().ordinal(), h.contextId(),
                        NativeTestApi.contextId(primary)};
                } finally {
                    NativeTestApi.releasePrimary(0);
                }
            }
        });
        assertEquals(hex(seen[1]), hex(seen[0]), "H2: with nothing current, Handle.create() binds device 0's primary context");
        assertEquals(1L, seen[2], "H2: ... and retains it (ownsPrimaryContext)");
        assertEquals(0L, seen[3], "H2: device ordinal");
        assertEquals(seen[5], seen[4], "H2: context id of the handle and of the primary context");
    }

    @Test
    void h2_setDeviceRejectsDevicesThatDoNotExist() {
        int count = Cuda.deviceCount();
        CudaException negative = assertThrows(CudaException.class, () -> Cuda.setDevice(-1));
        assertEquals(CudaError.INVALID_DEVICE, negative.error(), "Cuda.setDevice(-1): " + negative.getMessage());
        CudaException past = assertThrows(CudaException.class, () -> Cuda.setDevice(count));
        assertEquals(CudaError.INVALID_DEVICE, past.error(), "Cuda.setDevice(" + count + "): " + past.getMessage());
        assertTrue(past.getMessage().contains("CUDA_ERROR_INVALID_DEVICE"), past.getMessage());
        assertEquals(0, Cuda.getDevice(), "a failed setDevice must not change the selected device");
        Cuda.setDevice(0);
        assertEquals(0, Cuda.getDevice());

        Assumptions.assumeTrue(count == 1, "this machine has " + count + " GPUs; Cuda.setDevice(1) is legal here");
        CudaException one = assertThrows(CudaException.class, () -> Cuda.setDevice(1), "H2: Cuda.setDevice(1) on a one-GPU machine");
        assertEquals(CudaError.INVALID_DEVICE, one.error(), one.getMessage());
        assertEquals(101, one.code());
    }

    @Test
    void h2_selectedDeviceIsHonouredOnAFreshThread() throws Exception {
        int count = Cuda.deviceCount();
        Assumptions.assumeTrue(count > 1, "needs two GPUs; this machine has " + count);
        long[] seen = onFreshThread("h2-device1", () -> {
            Cuda.setDevice(1);
            try (Handle h = Handle.create()) {
                long primary = NativeTestApi.retainPrimary(1);
                try {
                    checkAddOne(h, new Random(11), 1000, 1, "H2: work on device 1");
                    return new long[] {h.rawContext(), primary, h.device().ordinal()};
                } finally {
                    NativeTestApi.releasePrimary(1);
                }
            }
        });
        assertEquals(hex(seen[1]), hex(seen[0]), "H2: Handle.create() after Cuda.setDevice(1) binds device 1's primary context");
        assertEquals(1L, seen[2]);
    }

    // ------------------------------------------------------------------ H3

    @Test
    void h3_createDevice_bindsAndRetainsThePrimaryContext() {
        long primary = NativeTestApi.retainPrimary(0);
        long user = 0;
        try {
            try (Handle h = Handle.create(0)) {
                assertEquals(0L, current(), "H4: Handle.create(0) leaves nothing current");
                assertEquals(hex(primary), hex(h.rawContext()), "H3: Handle.create(0) binds device 0's primary context");
                assertTrue(h.ownsPrimaryContext(), "H3: ... retained");
                checkAddOne(h, random, 777, 2, "H3: work on Handle.create(0)");
            }
            // Explicit device wins over a current user context, which stays current.
            user = newUserContext(0);
            NativeTestApi.setCurrent(user);
            try (Handle h = Handle.create(0)) {
                assertEquals(hex(user), hex(current()), "H4: Handle.create(0) leaves the caller's user context current");
                assertEquals(hex(primary), hex(h.rawContext()), "H3: Handle.create(0) binds the primary context even when a user context is current");
                assertNotEquals(hex(user), hex(h.rawContext()));
                assertTrue(h.ownsPrimaryContext());
                checkAddOne(h, random, 333, 1, "H3: work on Handle.create(0) called with a user context current");
                assertEquals(hex(user), hex(current()), "H4: the user context is still current after the work");
            }
        } finally {
            clearCurrent();
            destroyQuietly(user);
            NativeTestApi.releasePrimary(0);
        }
    }

    @Test
    void h3_wrap_bindsAnExistingContextWithoutOwningIt() {
        long user = newUserContext(0);
        try {
            try (Handle h = Handle.wrap(user)) {
                assertEquals(0L, current(), "H4: Handle.wrap leaves nothing current");
                assertEquals(hex(user), hex(h.rawContext()), "H3: wrap binds the given context");
                assertFalse(h.ownsPrimaryContext(), "H3: wrap does not own the context");
                assertEquals(NativeTestApi.contextId(user), h.contextId());
                checkAddOne(h, random, 2048, 4, "H3: work on a wrapped user context");
            }
            assertTrue(NativeTestApi.contextId(user) != 0, "H3: closing a wrapping handle leaves the context alive");

            // Wrapping the primary context borrows it too: the caller keeps it alive.
            long primary = NativeTestApi.retainPrimary(0);
            try (Handle h = Handle.wrap(primary)) {
                assertEquals(hex(primary), hex(h.rawContext()));
                assertFalse(h.ownsPrimaryContext(), "H3: Handle.wrap(primary) borrows, it does not retain");
                checkAddOne(h, random, 64, 1, "H3: work on a wrapped primary context");
            } finally {
                NativeTestApi.releasePrimary(0);
            }

            IllegalArgumentException nul = assertThrows(IllegalArgumentException.class, () -> Handle.wrap(0));
            assertTrue(nul.getMessage().contains("0"), nul.getMessage());
        } finally {
            clearCurrent();
            destroyQuietly(user);
        }
    }

    /**
     * One handle per device (the seed question's "one context per device on several devices"):
     * handles of device 0 and device 1 used alternately on one thread, with the other device's
     * primary context current, each compute on their own device and leave the caller's context
     * current (H3, H4). Needs two GPUs; runs on the two-device CPU stand-in in CI.
     */
    @Test
    void h3_oneHandlePerDevice_usedAlternatelyFromOneThread_eachWorksOnItsDevice() {
        int count = Cuda.deviceCount();
        Assumptions.assumeTrue(count > 1, "needs two GPUs; this machine has " + count);
        long primary0 = NativeTestApi.retainPrimary(0);
        long primary1 = NativeTestApi.retainPrimary(1);
        try (Handle h0 = Handle.create(0); Handle h1 = Handle.create(1)) {
            assertEquals(hex(primary0), hex(h0.rawContext()), "H3: Handle.create(0) binds device 0's primary context");
            assertEquals(hex(primary1), hex(h1.rawContext()), "H3: Handle.create(1) binds device 1's primary context");
            assertEquals(1, h1.device().ordinal());
            for (int round = 0; round < 3; round++) {
                makeOnlyCurrent(primary1);
                checkAddOne(h0, random, 4099, 2, "device 0's handle, device 1's primary context current, round " + round);
                assertEquals(hex(primary1), hex(current()), "H4: device 1's context is still current");
                makeOnlyCurrent(primary0);
                checkAddOne(h1, random, 4099, 2, "device 1's handle, device 0's primary context current, round " + round);
                assertEquals(hex(primary0), hex(current()), "H4: device 0's context is still current");
            }
            try (DeviceBuffer onDevice1 = h1.upload(new float[16])) {
                IllegalArgumentException wrongDevice = assertThrows(IllegalArgumentException.class,
                        () -> h0.launch(addOneKernel(), Dim3.of(1), Dim3.of(16), 0, onDevice1, 16),
                        "K3: a buffer of device 1 passed to device 0's handle");
                assertTrue(wrongDevice.getMessage().contains("context"), wrongDevice.getMessage());
            }
        } finally {
            clearCurrent();
            NativeTestApi.releasePrimary(1);
            NativeTestApi.releasePrimary(0);
        }
    }
}
