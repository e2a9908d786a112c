package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Rule H8: a handle whose context was destroyed or reset fails every later call with a
 * {@link CudaException} (validated before anything is pushed, so never a crash), and its close()
 * still succeeds and frees nothing twice. H1's "if it dies every later call fails" is the same.
 */
@GpuTest
@StandInCapable // destroyed and reset contexts are modelled by the stand-in
class HandleDeadContextGpuTest extends HandleGpuTestBase {
    /** New contexts created after destroying one, at most, until one gets its address. */
    private static final int ADDRESS_REUSE_ATTEMPTS = 8;
    private final Random random = new Random(0x4838L);

    interface Call {
        void run() throws Exception;
    }

    /**
     * Runs every kind of handle call and requires each to throw a CudaException; returns them.
     * {@code buffer} is a buffer of {@code h}.
     */
    private static List<CudaException> everyCallFails(String why, Handle h, DeviceBuffer buffer) {
        List<String> wrong = new ArrayList<>();
        List<CudaException> thrown = new ArrayList<>();
        Object[][] calls = {
            {"validate()", (Call) h::validate},
            {"synchronize()", (Call) h::synchronize},
            {"stream()", (Call) h::stream},
            {"allocate(64)", (Call) () -> h.allocate(64).close()},
            {"upload(float[])", (Call) () -> h.upload(new float[8]).close()},
            {"copyToHost()", (Call) () -> h.copyToHost(buffer, new float[4], 0, 4)},
            {"copyToDevice()", (Call) () -> h.copyToDevice(new float[4], 0, buffer, 4)},
            {"memset()", (Call) () -> h.memset(buffer, 0)},
            {"launch()", (Call) () -> addOne(h, buffer, 4)},
            {"createEvent()", (Call) () -> h.createEvent().close()},
            {"setStream(0)", (Call) () -> h.setStream(0)},
            {"resetStream()", (Call) h::resetStream},
            {"makeCurrent()", (Call) h::makeCurrent},
        };
        for (Object[] c : calls) {
            String name = (String) c[0];
            long before = current();
            try {
                ((Call) c[1]).run();
                wrong.add(name + " returned normally");
            } catch (CudaException e) {
                thrown.add(e);
            } catch (Throwable t) {
                wrong.add(name + " threw " + t + " instead of a CudaException");
            }
            if (current() != before) {
                wrong.add(name + " changed the current context from " + hex(before) + " to " + hex(current()));
                makeOnlyCurrent(before);
            }
        }
        if (!wrong.isEmpty()) {
            fail("H8 (" + why + "): every call must fail with a CudaException:\n  " + String.join("\n  ", wrong));
        }
        return thrown;
    }

    @Test
    void h8_userContextDestroyedUnderAHandle_callsFailWithCudaException_closeSucceeds() {
        long user = newUserContext(0);
        boolean destroyed = false;
        Handle h = null;
        DeviceBuffer buffer = null;
        try {
            h = Handle.wrap(user);
            buffer = h.upload(randomFloats(random, 1024));
            addOne(h, buffer, 1024);
            h.synchronize(); // the handle now owns a stream in the context

            NativeTestApi.destroyContext(user);
            destroyed = true;

            List<CudaException> errors = everyCallFails("user context destroyed", h, buffer);
            for (CudaException e : errors) {
                assertTrue(e.error() == CudaError.CONTEXT_IS_DESTROYED || e.error() == CudaError.INVALID_CONTEXT,
                        "H8: a destroyed context is reported as CONTEXT_IS_DESTROYED (or INVALID_CONTEXT), got " + e.error() + ": " + e.getMessage());
                assertTrue(e.getMessage().contains("destroyed"), "H8: the message says the context was destroyed: " + e.getMessage());
            }
            System.out.println("[h8] after cuCtxDestroy: " + errors.get(0).getMessage());

            // Wrapping the dead pointer fails the same way.
            try {
                Handle.wrap(user).close();
                fail("H8: Handle.wrap of a destroyed context must throw");
            } catch (CudaException expected) {
                System.out.println("[h8] Handle.wrap(destroyed): " + expected.getMessage());
            }

            DeviceBuffer b = buffer;
            assertDoesNotThrow(b::close, "H8: closing a buffer of a destroyed context must not throw");
            Handle dead = h;
            assertDoesNotThrow(dead::close, "H8: close() of a handle whose context was destroyed must succeed");
            assertDoesNotThrow(dead::close, "H8: ... and stay idempotent");
            assertEquals(0L, current());
            // Other handles are fine.
            try (Handle fine = Handle.create(0)) {
                checkAddOne(fine, random, 1000, 1, "a primary handle after a user context died");
            }
        } finally {
            closeQuietly(buffer);
            closeQuietly(h);
            clearCurrent();
            if (!destroyed) {
                destroyQuietly(user);
            }
        }
    }

    /**
     * The pointer alone is no identity: on a GPU a context created after another was destroyed gets
     * its address (within {@value #ADDRESS_REUSE_ATTEMPTS} creations, when the driver does; the test aborts
     * with that reason, after its other checks, when none did), and the old context's handle still fails with a CudaException because the id differs, while the new context works.
     * Relies on cuCtxGetId answering for a destroyed context, which NVIDIA leaves undefined
     * (cuCtxDestroy): measured on driver 580 only.
     */
    @Test
    void h8_destroyedContextWhoseAddressIsReused_stillFails() {
        long a = newUserContext(0);
        long b = 0;
        boolean aDestroyed = false;
        Handle ha = null;
        DeviceBuffer bufferA = null;
        try {
            ha = Handle.wrap(a);
            long idA = ha.contextId();
            bufferA = ha.upload(randomFloats(random, 256));
            addOne(ha, bufferA, 256);
            ha.synchronize();

            NativeTestApi.destroyContext(a);
            aDestroyed = true;
            // New contexts until one gets A's address (the others stay alive meanwhile, so that they
            // cannot take it again); B is that one, or on the stand-in, which never reuses a context's
            // address, the first.
            List<Long> created = new ArrayList<>();
            long reusing = 0;
            while (created.size() < ADDRESS_REUSE_ATTEMPTS && reusing == 0) {
                long c = newUserContext(0);
                created.add(c);
                if (c == a) {
                    reusing = c;
                }
            }
            b = reusing != 0 ? reusing : created.get(0);
            for (long c : created) {
                if (c != b) {
                    destroyQuietly(c);
                }
            }
            long idB = NativeTestApi.contextId(b);
            assertNotEquals(idA, idB, "context ids are unique per process");
            System.out.println("[h8] context A " + hex(a) + " (id " + idA + ") destroyed; " + (reusing != 0
                    ? "new context " + created.size() + " of " + created.size() + " REUSES A's address (id " + idB + ")"
                    : "none of " + created.size() + " new contexts reused A's address; B " + hex(b) + " (id " + idB + ")"));

            List<CudaException> errors = everyCallFails(a == b ? "destroyed, address reused by another context" : "destroyed, another context created",
                    ha, bufferA);
            System.out.println("[h8] A's handle: " + errors.get(0).getMessage());
            if (a == b) {
                assertTrue(errors.get(0).getMessage().contains("another context") || errors.get(0).getMessage().contains("destroyed"),
                        errors.get(0).getMessage());
            }

            // B is a healthy, separate context.
            try (Handle hb = Handle.wrap(b)) {
                assertEquals(idB, hb.contextId());
                checkAddOne(hb, random, 4096, 2, "H8: the new context B");
                // A's buffer must not be usable with B's handle even if the address matches (K3).
                DeviceBuffer stale = bufferA;
                try {
                    hb.copyToHost(stale, new float[4], 0, 4);
                    fail("a buffer of the destroyed context A must not be usable with B's handle");
                } catch (IllegalArgumentException expected) {
                    // fine: different context id
                }
            }

            DeviceBuffer stale = bufferA;
            Handle dead = ha;
            assertDoesNotThrow(stale::close, "H8: closing A's buffer");
            assertDoesNotThrow(dead::close, "H8: close() of A's handle must succeed and free nothing in B");
            // B must be unharmed by closing A's handle (which must not have freed B's resources).
            try (Handle hb = Handle.wrap(b)) {
                checkAddOne(hb, random, 4096, 1, "H8: context B after A's handle closed");
            }
            // Whether the driver hands A's address to a new context depends on what the process did
            // before (the whole suite: the first new context did; this class alone: none of eight did),
            // so a run without reuse checked only the other case: say so instead of passing.
            assumeTrue(StandIn.active() || reusing != 0, "none of " + created.size() + " new contexts reused the destroyed context's address, so the "
                    + "reused-address case of H8 did not arise in this process (the destroyed-context checks above ran and passed)");
        } finally {
            closeQuietly(bufferA);
            closeQuietly(ha);
            clearCurrent();
            if (!aDestroyed) {
                destroyQuietly(a);
            }
            destroyQuietly(b);
        }
    }

    @Test
    void h8_primaryContextResetUnderAHandle_callsFailSayingReset_closeSucceeds() {
        Handle h = Handle.create(0);
        DeviceBuffer buffer = null;
        try {
            long idBefore = h.contextId();
            long raw = h.rawContext();
            buffer = h.upload(randomFloats(random, 2048));
            addOne(h, buffer, 2048);
            h.synchronize();

            NativeTestApi.resetPrimary(0);

            List<CudaException> errors = everyCallFails("primary context reset", h, buffer);
            for (CudaException e : errors) {
                assertTrue(e.getMessage().contains("reset"), "H8: the message must say the primary context was reset: " + e.getMessage());
            }
            System.out.println("[h8] after cuDevicePrimaryCtxReset: " + errors.get(0).getMessage());

            DeviceBuffer b = buffer;
            assertDoesNotThrow(b::close, "H8: closing a buffer of a reset primary context must not throw");
            Handle stale = h;
            assertDoesNotThrow(stale::close, "H8: close() after a reset must succeed");
            assertDoesNotThrow(stale::close);
            assertEquals(0L, current());

            // A new handle binds the new primary context (same pointer, new id: primary_ptr_same_after_reset
            // in docs/runs/2026-11-29-anchors.txt) and works;
            // kernels loaded with cuLibraryLoadData still launch after the reset.
            try (Handle fresh = Handle.create(0)) {
                System.out.println("[h8] primary context before reset " + hex(raw) + " id " + idBefore + "; after: " + hex(fresh.rawContext())
                        + " id " + fresh.contextId());
                assertNotEquals(idBefore, fresh.contextId(), "the reset primary context has a new id");
                checkAddOne(fresh, random, 8192, 2, "H8: a new handle after the primary context was reset");
            }
        } finally {
            closeQuietly(buffer);
            closeQuietly(h);
            clearCurrent();
        }
    }

    /**
     * cudaDeviceReset leaves the destroyed primary context current on the calling thread (observed on
     * driver 580, RuntimeContextGpuTest). A kernel lookup there must not fail on that context: the
     * parameter sizes are asked for at the first launch, in the handle's live context.
     */
    @Test
    void h8_kernelLookupWithADestroyedContextCurrent_launchesInTheHandlesContext() {
        long user = newUserContext(0);
        boolean primaryRetained = false;
        try (Handle onUser = Handle.wrap(user)) {
            long primary = NativeTestApi.retainPrimary(0);
            primaryRetained = true;
            NativeTestApi.setCurrent(primary);
            NativeTestApi.resetPrimary(0);
            boolean destroyedIsCurrent = NativeTestApi.currentContext() == primary;
            System.out.println("[h8] after cuDevicePrimaryCtxReset the reset context is still current: " + destroyedIsCurrent);
            try (Library lib = TestKernels.load()) {
                Kernel addOne = assertDoesNotThrow(() -> lib.kernel("cuh_test_add_one"), "lookup with a destroyed context current");
                float[] x = randomFloats(random, 256);
                try (DeviceBuffer b = onUser.upload(x)) {
                    onUser.launch(addOne, Dim3.of(1), Dim3.of(256), 0, b, 256);
                    float[] out = new float[256];
                    b.download(out);
                    assertExact(afterAddOnes(x, 1), out, "a kernel looked up with a destroyed context current, launched on a user context");
                }
            }
        } finally {
            clearCurrent();
            destroyQuietly(user);
            if (primaryRetained) {
                // A reset keeps the retain count: without this release the primary context stays
                // retained for the rest of the JVM, and later tests that expect it to go inactive
                // when their handles are released (HandleLeakGpuTest) fail.
                NativeTestApi.releasePrimary(0);
            }
        }
    }

    @Test
    void h8_primaryReset_userContextHandleUnaffected_primaryHandleFailsOnEveryThread() throws Exception {
        // A user-context handle is unaffected by a primary reset.
        long user = newUserContext(0);
        try (Handle onUser = Handle.wrap(user); Handle onPrimary = Handle.create(0)) {
            checkAddOne(onUser, random, 512, 1, "before reset (user)");
            checkAddOne(onPrimary, random, 512, 1, "before reset (primary)");
            NativeTestApi.resetPrimary(0);
            checkAddOne(onUser, random, 4096, 2, "H8: a user-context handle after the primary context was reset");
            try {
                onPrimary.synchronize();
                fail("H8: the primary handle must fail after the reset");
            } catch (CudaException expected) {
                assertTrue(expected.getMessage().contains("reset"), expected.getMessage());
            }
            // A handle used from another thread fails the same way (no per-thread state).
            String fromThread = onFreshThread("h8-other-thread", () -> {
                try {
                    onPrimary.validate();
                    return "validate() returned normally";
                } catch (CudaException e) {
                    return null;
                }
            });
            if (fromThread != null) {
                fail("H8: from another thread: " + fromThread);
            }
        } finally {
            clearCurrent();
            destroyQuietly(user);
        }
    }
}
