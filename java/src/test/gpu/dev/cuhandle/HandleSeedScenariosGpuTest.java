package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The seed scenarios of the project brief, end to end, with every result compared with the CPU.
 */
@GpuTest
@StandInCapable // contexts, threads and library lifetime; launches are counted
class HandleSeedScenariosGpuTest extends HandleGpuTestBase {

    /**
     * seed-000: create with no context current (binds the primary context, H2), create with a
     * current user context (binds it, H1), use both from another thread (H5), destroy (H6).
     */
    @Test
    void seed000_createWithNothingCurrent_createWithUserContext_callFromAnotherThread_destroy() throws Exception {
        Random random = new Random(0x5EED000L);
        long[] before = settledPrimaryState(0);
        long user = 0;
        Handle onPrimary = null;
        Handle onUser = null;
        try {
            assertEquals(0L, current());
            onPrimary = Handle.create();
            assertEquals(0L, current(), "H4: create with nothing current leaves nothing current");
            assertTrue(onPrimary.ownsPrimaryContext(), "H2: with nothing current the handle binds (and retains) the primary context");

            user = NativeTestApi.createContext(0); // current now
            onUser = Handle.create();
            assertEquals(hex(user), hex(current()), "H4: create with a user context current leaves it current");
            assertEquals(hex(user), hex(onUser.rawContext()), "H1: the handle binds the current user context");
            assertFalse(onUser.ownsPrimaryContext());
            assertNotEquals(onPrimary.contextId(), onUser.contextId());
            clearCurrent();

            int n = 100_000;
            float[] xp = randomFloats(random, n);
            float[] xu = randomFloats(random, n);
            Handle hp = onPrimary;
            Handle hu = onUser;
            LaunchCount launches = new LaunchCount();
            float[][] results = onFreshThread("seed000-other-thread", () -> {
                float[] outP = new float[n];
                float[] outU = new float[n];
                try (DeviceBuffer bp = hp.upload(xp); DeviceBuffer bu = hu.upload(xu)) {
                    addOne(hp, bp, n);
                    addOne(hu, bu, n);
                    addOne(hu, bu, n);
                    bp.download(outP);
                    bu.download(outU);
                }
                return new float[][] {outP, outU};
            });
            launches.assertAccepted(3, "seed-000: launches from another thread");
            assertExact(afterAddOnes(xp, 1), results[0], "seed-000: the primary-context handle used from another thread");
            assertExact(afterAddOnes(xu, 2), results[1], "seed-000: the user-context handle used from another thread");

            // And back on the creating thread, with nothing current.
            checkAddOne(onPrimary, random, 1000, 1, "seed-000: the primary handle on the creating thread");
            checkAddOne(onUser, random, 1000, 1, "seed-000: the user handle on the creating thread");

            onPrimary.close();
            onUser.close();
            assertTrue(onPrimary.isClosed() && onUser.isClosed());
            assertEquals(0L, current());
            NativeTestApi.destroyContext(user);
            user = 0;
            assertEquals(state(before), state(NativeTestApi.primaryState(0)), "seed-000: the primary context's state is as before");
        } finally {
            closeQuietly(onPrimary);
            closeQuietly(onUser);
            clearCurrent();
            destroyQuietly(user);
        }
    }

    /**
     * H10: a library's kernels are context-independent, so looking one up needs no current
     * context (the lookup queries parameter sizes with cuKernelGetParamInfo, rule K2).
     */
    @Test
    void h10_kernelLookupNeedsNoCurrentContext() throws Exception {
        try (Library lib = TestKernels.load()) {
            assertEquals(0L, current());
            String problem = null;
            try {
                Kernel k = lib.kernel("cuh_test_add_one");
                assertEquals("cuh_test_add_one", k.name());
                if (k.parameterCount() >= 0) {
                    assertEquals(2, k.parameterCount(), "cuh_test_add_one(float*, int)");
                    assertEquals(8, k.parameterSize(0));
                    assertEquals(4, k.parameterSize(1));
                }
            } catch (CudaException e) {
                problem = e.getMessage();
            }
            assertEquals(0L, current(), "H4: Library.kernel() leaves nothing current");
            if (problem != null) {
                throw new AssertionError("H10: Library.kernel() with no context current must work (kernels are context-independent), but: " + problem);
            }
            // And from a fresh thread, then launched on a handle.
            Kernel k = onFreshThread("h10-lookup", () -> lib.kernel("cuh_test_empty"));
            try (Handle h = Handle.create(0)) {
                h.launch(k, Dim3.of(1), Dim3.of(1), 0);
                h.synchronize();
            }
        }
    }

    /**
     * seed-003: one Library loaded once and used in two contexts (primary and user) with a handle
     * on each, results checked on both; then the library is closed (its kernels refuse to launch),
     * the handles closed, the user context destroyed, and the primary context's state is as before.
     */
    @Test
    void seed003_oneLibraryTwoContexts_resultsOnBoth_thenEverythingReleased() throws Exception {
        Random random = new Random(0x5EED003L);
        long[] before = settledPrimaryState(0);
        Library lib = TestKernels.load();
        long user = 0;
        Handle hp = null;
        Handle hu = null;
        try {
            Kernel addOne = lib.kernel("cuh_test_add_one");
            hp = Handle.create(0);
            user = newUserContext(0);
            hu = Handle.wrap(user);
            assertNotEquals(hp.contextId(), hu.contextId());

            int n = 50_000;
            float[] xp = randomFloats(random, n);
            float[] xu = randomFloats(random, n);
            try (DeviceBuffer bp = hp.upload(xp); DeviceBuffer bu = hu.upload(xu)) {
                LaunchCount launches = new LaunchCount();
                // Interleave launches of the same Kernel object in both contexts.
                for (int i = 0; i < 5; i++) {
                    hp.launch(addOne, gridFor(n), Dim3.of(BLOCK), 0, bp, n);
                    hu.launch(addOne, gridFor(n), Dim3.of(BLOCK), 0, bu, n);
                    hu.launch(addOne, gridFor(n), Dim3.of(BLOCK), 0, bu, n);
                }
                // And from another thread, with nothing current there.
                Handle p = hp;
                Handle u = hu;
                onFreshThread("seed003-thread", () -> {
                    p.launch(addOne, gridFor(n), Dim3.of(BLOCK), 0, bp, n);
                    u.launch(addOne, gridFor(n), Dim3.of(BLOCK), 0, bu, n);
                    return null;
                });
                float[] outP = new float[n];
                float[] outU = new float[n];
                bp.download(outP);
                bu.download(outU);
                launches.assertAccepted(17, "seed-003: launches in both contexts");
                assertExact(afterAddOnes(xp, 6), outP, "seed-003: the library's kernel in the primary context");
                assertExact(afterAddOnes(xu, 11), outU, "seed-003: the same kernel in the user context");

                // H10: a buffer of one context cannot be used with the other's handle (K3).
                Handle other = hu;
                assertThrows(IllegalArgumentException.class, () -> other.launch(addOne, gridFor(n), Dim3.of(BLOCK), 0, bp, n),
                        "K3: a buffer of the primary context launched on the user context's handle");

                hp.synchronize();
                hu.synchronize();
                lib.close();
                assertTrue(lib.isClosed(), "H10: Library.close() closes");
                lib.close(); // idempotent
                Handle closedLibOn = hp;
                assertThrows(IllegalStateException.class, () -> closedLibOn.launch(addOne, gridFor(n), Dim3.of(BLOCK), 0, bp, n),
                        "H10: a kernel of a closed library throws IllegalStateException");
                assertThrows(IllegalStateException.class, () -> lib.kernel("cuh_test_add_one"));
                // The handles themselves still work after the library is gone (other libraries launch fine).
                addOne(hp, bp, n);
                bp.download(outP);
                launches.assertAccepted(18, "seed-003: the refused launches never reached the driver; the last one did");
                assertExact(afterAddOnes(xp, 7), outP, "seed-003: the primary handle after the library was closed");
            }
            hp.close();
            hu.close();
            NativeTestApi.destroyContext(user);
            user = 0;
            assertEquals(0L, current());
            assertEquals(state(before), state(NativeTestApi.primaryState(0)),
                    "seed-003: the primary context's state after everything was released (nothing leaked a retain)");
        } finally {
            closeQuietly(lib);
            closeQuietly(hp);
            closeQuietly(hu);
            clearCurrent();
            destroyQuietly(user);
        }
    }
}
