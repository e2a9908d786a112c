package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Rules H11 (errors carry code, name, description and operation; sticky errors poison only the
 * affected context) and H12 (availability answers without throwing), and what a sticky fault in
 * one user context does to the other contexts of the same device.
 *
 * <p>The sticky fault is provoked in a user context B of its own. Whether the driver lets other
 * contexts on the device go on is the driver's business: the test prints what it observed
 * ({@code [sticky-observation]}) and asserts only that other contexts either work correctly or fail
 * with a {@link CudaException}. It destroys B and, if the primary context is broken afterwards,
 * resets it so that later test classes in this JVM can go on.
 */
@GpuTest
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class HandleStickyErrorGpuTest extends HandleGpuTestBase {
    private static final String OBSERVATION = "[sticky-observation] ";
    private final Random random = new Random(0x483BL);

    @Test
    @Order(1)
    void h12_availabilityIsAnsweredWithoutThrowing() {
        assertTrue(Cuda.isAvailable(), "H12: Cuda.isAvailable() on a GPU machine");
        assertNull(Cuda.unavailableReason());
        assertTrue(Cuda.deviceCount() >= 1);
        assertTrue(Cuda.driverVersion() >= 12000, "driver version " + Cuda.driverVersion());
    }

    @Test
    @Order(2)
    void h11_codesAndNamesInExceptions() {
        CudaException bad = assertThrows(CudaException.class, () -> Handle.create(99), "H11: Handle.create(99)");
        assertEquals(CudaError.INVALID_DEVICE, bad.error(), bad.getMessage());
        assertEquals(101, bad.code());
        assertTrue(bad.getMessage().contains("CUDA_ERROR_INVALID_DEVICE"), "H11: the message names the error: " + bad.getMessage());
        assertTrue(bad.getMessage().contains("99"), "the message names the device asked for: " + bad.getMessage());
        assertNotNull(bad.operation());
        assertFalse(bad.operation().isEmpty());
        assertFalse(bad.isSticky());

        CudaException negative = assertThrows(CudaException.class, () -> Handle.create(-1));
        assertEquals(CudaError.INVALID_DEVICE, negative.error(), negative.getMessage());
        assertEquals(0L, current(), "H4: failed creates leave nothing current");

        // A failure reported by the driver itself carries the driver's name and description.
        try (Handle h = Handle.create(0)) {
            CudaException oom = assertThrows(CudaException.class, () -> h.allocate(1L << 50), "H11: allocating 1 PiB");
            assertNotNull(oom.error(), "a known CUresult: " + oom.getMessage());
            assertTrue(oom.getMessage().contains(oom.error().cName()), "H11: the message names " + oom.error().cName() + ": " + oom.getMessage());
            assertTrue(oom.getMessage().contains(String.valueOf(oom.code())), "H11: the message has the numeric code: " + oom.getMessage());
            assertTrue(oom.operation().startsWith("cuMemAlloc"), "H11: the operation is the driver call: " + oom.operation());
            assertFalse(oom.isSticky(), "running out of memory is not sticky");
            System.out.println("[h11] " + oom.getMessage());
            checkAddOne(h, random, 1000, 1, "H11: the handle still works after a non-sticky error");
        }
    }

    @Test
    @Order(3)
    void h11_stickyFaultPoisonsOnlyTheHandlesOfItsContext() {
        Kernel fault = faultKernel();
        long b = 0;
        long c = 0;
        boolean bDestroyed = false;
        Handle hB = null;
        Handle hB2 = null;
        Handle hC = null;
        Handle hP = null;
        DeviceBuffer bufferB = null;
        Throwable failure = null;
        try {
            hP = Handle.create(0);
            c = newUserContext(0);
            hC = Handle.wrap(c);
            b = newUserContext(0);
            hB = Handle.wrap(b);
            hB2 = Handle.wrap(b);
            checkAddOne(hP, random, 1000, 1, "primary handle before the fault");
            checkAddOne(hC, random, 1000, 1, "context C before the fault");
            checkAddOne(hB, random, 1000, 1, "context B before the fault");
            bufferB = hB.upload(randomFloats(random, 256));
            hB.synchronize();

            // The fault: a store to address 16 in context B.
            CudaException first = null;
            try {
                hB.launch(fault.newLaunch().grid(1).block(1).argPointer(0, 16L));
                hB.synchronize();
            } catch (CudaException e) {
                first = e;
            }
            assertNotNull(first, "H11: a kernel that writes to address 16 must fail with a CudaException at launch or synchronize");
            System.out.println(OBSERVATION + "the fault in context B surfaced as: " + first.getMessage() + " (operation " + first.operation() + ")");
            assertEquals(CudaError.ILLEGAL_ADDRESS, first.error(), "H11: the fault's error: " + first.getMessage());
            assertTrue(first.isSticky(), "H11: ILLEGAL_ADDRESS is marked sticky");
            assertTrue(first.getMessage().contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "H11: the message names the error: " + first.getMessage());
            assertEquals(0L, current(), "H4 holds on the error path too");

            // Every later call of every handle on B fails, naming the sticky cause and the original operation.
            assertPoisoned(hB, bufferB, first, "the faulting handle");
            assertPoisoned(hB2, null, first, "a second handle on B created before the fault");
            Handle late = null;
            try {
                late = Handle.wrap(b);
                try {
                    late.validate();
                    fail("H11: a handle created on B after the sticky fault must fail on its first call");
                } catch (CudaException e) {
                    assertTrue(e.isSticky(), "a new handle on B reports the sticky error: " + e.getMessage());
                    System.out.println(OBSERVATION + "a handle created on B after the fault: wrap() succeeded, its first call failed: " + e.getMessage());
                }
            } catch (CudaException e) {
                System.out.println(OBSERVATION + "Handle.wrap(B) after the fault failed at once: " + e.getMessage());
            } finally {
                closeQuietly(late);
            }

            // Other contexts: the library must not poison them; the driver may or may not let them go on.
            observe("another user context C (existing handle)", hC);
            observe("the primary context (existing handle)", hP);
            observeNewUserContext("a user context created after the fault");

            // Closing everything on B succeeds; then B is destroyed.
            DeviceBuffer bb = bufferB;
            Handle b1 = hB;
            Handle b2 = hB2;
            assertDoesNotThrow(bb::close, "H11: closing a buffer of a poisoned context");
            assertDoesNotThrow(b1::close, "H11: closing a handle of a poisoned context");
            assertDoesNotThrow(b2::close, "H11: closing the second handle of a poisoned context");
            try {
                NativeTestApi.destroyContext(b);
                System.out.println(OBSERVATION + "cuCtxDestroy(B) succeeded");
            } catch (CudaException e) {
                System.out.println(OBSERVATION + "cuCtxDestroy(B) failed: " + e.getMessage());
            }
            bDestroyed = true;
            observe("context C after B was destroyed", hC);
            observe("the primary context after B was destroyed", hP);
        } catch (Throwable t) {
            failure = t;
            throw t;
        } finally {
            closeQuietly(bufferB);
            closeQuietly(hB);
            closeQuietly(hB2);
            closeQuietly(hC);
            closeQuietly(hP);
            clearCurrent();
            if (!bDestroyed) {
                destroyQuietly(b);
            }
            destroyQuietly(c);
            clearCurrent();
            String problem = restorePrimaryIfBroken();
            if (problem != null) {
                AssertionError broken = new AssertionError(problem);
                if (failure != null) {
                    failure.addSuppressed(broken);
                } else {
                    throw broken;
                }
            }
        }
    }

    /** Every call of {@code h} fails with a sticky CudaException that mentions the original failing operation. */
    private static void assertPoisoned(Handle h, DeviceBuffer buffer, CudaException first, String which) {
        List<String> wrong = new ArrayList<>();
        List<Object[]> calls = new ArrayList<>();
        calls.add(new Object[] {"validate()", (Runnable) h::validate});
        calls.add(new Object[] {"synchronize()", (Runnable) h::synchronize});
        calls.add(new Object[] {"stream()", (Runnable) h::stream});
        calls.add(new Object[] {"allocate(16)", (Runnable) () -> h.allocate(16).close()});
        calls.add(new Object[] {"launch(empty)", (Runnable) () -> h.launch(emptyKernel(), Dim3.of(1), Dim3.of(1), 0)});
        calls.add(new Object[] {"createEvent()", (Runnable) () -> h.createEvent().close()});
        calls.add(new Object[] {"setStream(0)", (Runnable) () -> h.setStream(0)});
        calls.add(new Object[] {"resetStream()", (Runnable) h::resetStream});
        calls.add(new Object[] {"makeCurrent()", (Runnable) h::makeCurrent});
        if (buffer != null) {
            calls.add(new Object[] {"copyToHost()", (Runnable) () -> h.copyToHost(buffer, new float[4], 0, 4)});
            calls.add(new Object[] {"memset()", (Runnable) () -> h.memset(buffer, 0)});
        }
        for (Object[] call : calls) {
            String name = (String) call[0];
            try {
                ((Runnable) call[1]).run();
                wrong.add(name + " returned normally");
            } catch (CudaException e) {
                if (!e.isSticky()) {
                    wrong.add(name + " threw a non-sticky CudaException: " + e.getMessage());
                } else if (e.error() != first.error()) {
                    wrong.add(name + " reported " + e.error() + " instead of the original " + first.error() + ": " + e.getMessage());
                } else if (!e.getMessage().contains(first.operation())) {
                    wrong.add(name + ": the message does not mention the original operation " + first.operation() + ": " + e.getMessage());
                }
            } catch (Throwable t) {
                wrong.add(name + " threw " + t + " instead of a CudaException");
            }
            if (current() != 0) {
                wrong.add(name + " left context " + hex(current()) + " current");
                clearCurrent();
            }
        }
        if (!wrong.isEmpty()) {
            fail("H11: every call of " + which + " must fail with the sticky cause:\n  " + String.join("\n  ", wrong));
        }
    }

    /** Work on {@code h}: either correct results or a CudaException (never wrong results, never a crash). */
    private void observe(String what, Handle h) {
        try {
            checkAddOne(h, random, 4096, 2, what);
            System.out.println(OBSERVATION + what + ": launch + synchronize WORKS, results correct");
        } catch (CudaException e) {
            System.out.println(OBSERVATION + what + ": FAILS with " + e.error() + " (sticky=" + e.isSticky() + "): " + e.getMessage());
        }
        assertEquals(0L, current(), "H4 after work on " + what);
    }

    private void observeNewUserContext(String what) {
        long d = 0;
        try {
            d = newUserContext(0);
            try (Handle h = Handle.wrap(d)) {
                observe(what, h);
            }
        } catch (CudaException e) {
            System.out.println(OBSERVATION + what + ": creating it FAILS: " + e.getMessage());
        } finally {
            clearCurrent();
            destroyQuietly(d);
        }
    }

    /**
     * If the primary context no longer works, resets it; returns null when it works (again), else
     * what is still wrong.
     */
    private String restorePrimaryIfBroken() {
        String broken = primaryProblem();
        if (broken == null) {
            System.out.println(OBSERVATION + "the primary context works after the test; no reset needed");
            return null;
        }
        System.out.println(OBSERVATION + "the primary context is broken after the sticky fault (" + broken + "); resetting it");
        try {
            NativeTestApi.resetPrimary(0);
        } catch (RuntimeException e) {
            return "cuDevicePrimaryCtxReset failed: " + e;
        }
        String still = primaryProblem();
        if (still != null) {
            return "the primary context still fails after cuDevicePrimaryCtxReset: " + still + "; later GPU tests in this JVM will fail too";
        }
        System.out.println(OBSERVATION + "after cuDevicePrimaryCtxReset the primary context works again");
        return null;
    }

    private String primaryProblem() {
        try (Handle h = Handle.create(0)) {
            checkAddOne(h, random, 1000, 1, "primary health check");
            return null;
        } catch (CudaException | AssertionError e) {
            return e.toString();
        } finally {
            clearCurrent();
        }
    }
}
