package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;

/**
 * The CPU stand-in driver itself (tests/standin-driver) behaves as its README says, so that the GPU
 * tests that run on it in CI prove something. Runs only in the Maven {@code standin} execution.
 * Fault-injecting tests work in user contexts they destroy afterwards, so a sticky error never
 * reaches the primary contexts the other tests of this JVM use.
 */
@EnabledIf("dev.cuhandle.StandIn#active")
class StandInDriverTest {
    private static final long GIB = 1L << 30;

    @AfterEach
    void restoreDefaults() {
        StandIn.setWorkMillis(0);
        StandIn.failNextSync(0);
        StandIn.failNextAllocations(0);
        StandIn.failNextHostAllocations(0);
        GpuTestSupport.clearCurrent();
    }

    @Test
    void devicesHaveTheDocumentedPropertiesAndTheConfiguredCount() {
        String configured = System.getenv("CUHANDLE_STANDIN_DEVICES");
        assertEquals(configured == null ? 1 : Integer.parseInt(configured), Cuda.deviceCount());
        Device d = Cuda.device(0);
        assertEquals("cuhandle stand-in device 0", d.name());
        assertEquals(8 * GIB, d.totalMemory());
        assertEquals(9, d.attribute(75), "compute capability major");
        assertEquals(132, d.attribute(16), "multiprocessors");
        assertEquals(1024, d.attribute(1), "max threads per block");
        assertEquals(Integer.MAX_VALUE, d.maxGridDim(0));
        assertTrue(d.supportsMemoryPools());
        assertEquals(13000, Cuda.driverVersion(), "the standin execution's CUHANDLE_STANDIN_VERSION");
        assertEquals("", NativeApi.missingDriverFeatures(), "13.0 has every optional entry point a feature uses (the tests' probes aside)");
        CudaException e = assertThrows(CudaException.class, () -> StandIn.control(0x3FF, 0));
        assertEquals(CudaError.INVALID_VALUE, e.error(), "unknown control commands are refused");
    }

    @Test
    void userContextsGetUniqueIdsAndFollowTheThreadsStack() {
        long a = NativeTestApi.createContext(0);
        assertEquals(a, NativeTestApi.currentContext(), "cuCtxCreate pushes the new context");
        long b = NativeTestApi.createContext(0);
        try {
            assertEquals(b, NativeTestApi.currentContext());
            long idA = NativeTestApi.contextId(a);
            long idB = NativeTestApi.contextId(b);
            assertTrue(idA > 0 && idB > idA, "ids come from one increasing counter: " + idA + ", " + idB);
            NativeTestApi.setCurrent(0);
            assertEquals(a, NativeTestApi.currentContext(), "cuCtxSetCurrent(NULL) pops b, a is on top again");
            NativeTestApi.setCurrent(0);
            assertEquals(0L, NativeTestApi.currentContext());
        } finally {
            NativeTestApi.destroyContext(b);
        }
        NativeTestApi.destroyContext(a);
        CudaException id = assertThrows(CudaException.class, () -> NativeTestApi.contextId(a));
        assertEquals(CudaError.CONTEXT_IS_DESTROYED, id.error(), "a destroyed context stays inspectable and says so");
        CudaException push = assertThrows(CudaException.class, () -> NativeTestApi.setCurrent(a));
        assertEquals(CudaError.CONTEXT_IS_DESTROYED, push.error(), "stricter than the driver: a dead context cannot become current");
        assertEquals(0L, NativeTestApi.currentContext());
    }

    @Test
    void destroyingTheCurrentContextRemovesItFromThisThreadsStack() {
        long under = NativeTestApi.createContext(0);
        long top = NativeTestApi.createContext(0);
        NativeTestApi.destroyContext(top);
        assertEquals(under, NativeTestApi.currentContext());
        NativeTestApi.destroyContext(under);
        assertEquals(0L, NativeTestApi.currentContext());
    }

    @Test
    void aPrimaryContextKeepsItsPointerAndGetsANewIdWhenReactivatedOrReset() {
        int device = Cuda.deviceCount() - 1; // the last device: the other tests mostly use device 0
        int before = StandIn.primaryRetains(device);
        long p = NativeTestApi.retainPrimary(device);
        long id = NativeTestApi.contextId(p);
        assertEquals(before + 1, StandIn.primaryRetains(device));
        assertEquals(p, NativeTestApi.retainPrimary(device), "one primary context per device");
        assertEquals(before + 2, StandIn.primaryRetains(device));
        NativeTestApi.resetPrimary(device);
        long afterReset = NativeTestApi.contextId(p);
        assertNotEquals(id, afterReset, "a reset gives the primary context a new id");
        assertEquals(1L, NativeTestApi.primaryState(device)[1], "still retained, so still active");
        NativeTestApi.releasePrimary(device);
        NativeTestApi.releasePrimary(device);
        assertEquals(before, StandIn.primaryRetains(device));
        if (before == 0) {
            assertEquals(0L, NativeTestApi.primaryState(device)[1], "released to 0: inactive");
            CudaException e = assertThrows(CudaException.class, () -> NativeTestApi.contextId(p));
            assertEquals(CudaError.CONTEXT_IS_DESTROYED, e.error());
            assertEquals(p, NativeTestApi.retainPrimary(device), "reactivated at the same address");
            try {
                assertNotEquals(afterReset, NativeTestApi.contextId(p), "with a new id");
            } finally {
                NativeTestApi.releasePrimary(device);
            }
        }
    }

    @Test
    void copiesRoundTripAndDeviceRangesMustLieInsideOneAllocation() {
        long ctx = GpuTestSupport.newUserContext(0);
        try (Handle h = Handle.wrap(ctx)) {
            float[] values = {1.5f, -2f, Float.NaN, 1e30f};
            try (DeviceBuffer b = h.upload(values)) {
                float[] back = new float[values.length];
                b.download(back);
                assertArrayEquals(values, back);
            }
            // cuhandle checks its own buffers' ranges; a wrapped pointer with a size the caller got
            // wrong reaches the driver, which must refuse a range past the allocation.
            NativeTestApi.setCurrent(ctx);
            long raw = NativeTestApi.memAlloc(256);
            NativeTestApi.setCurrent(0);
            int outOfBounds = StandIn.outOfBounds();
            try (DeviceBuffer tooLong = h.wrapPointer(raw, 512)) {
                CudaException e = assertThrows(CudaException.class, () -> tooLong.upload(new byte[512]));
                assertEquals(CudaError.INVALID_VALUE, e.error(), e.getMessage());
                tooLong.slice(0, 256).upload(new byte[256]); // the part inside the allocation is fine
            }
            assertEquals(outOfBounds + 1, StandIn.outOfBounds());
            NativeTestApi.setCurrent(ctx);
            NativeTestApi.memFree(raw);
            CudaException twice = assertThrows(CudaException.class, () -> NativeTestApi.memFree(raw));
            assertEquals(CudaError.INVALID_VALUE, twice.error(), "a second free of the same pointer");
        } finally {
            GpuTestSupport.clearCurrent();
            NativeTestApi.destroyContext(ctx);
        }
    }

    @Test
    void liveAllocationsStreamsAndEventsAreCountedAndReleasedWithTheirContext() {
        int allocations = StandIn.liveAllocations();
        int kib = StandIn.liveKiB();
        int streams = StandIn.liveStreams();
        int events = StandIn.liveEvents();
        long ctx = GpuTestSupport.newUserContext(0);
        try (Handle h = Handle.wrap(ctx)) {
            DeviceBuffer b = h.allocate(3000);
            h.stream(); // the handle's own stream is created on first use
            Event e = h.createEvent();
            assertEquals(allocations + 1, StandIn.liveAllocations());
            assertEquals(kib + 3, StandIn.liveKiB(), "3000 bytes round up to 3 KiB");
            assertEquals(streams + 1, StandIn.liveStreams(), "the handle's stream, created on first use");
            assertEquals(events + 1, StandIn.liveEvents());
            e.close();
            b.close();
        }
        assertEquals(allocations, StandIn.liveAllocations());
        assertEquals(streams + 1, StandIn.liveStreams(), "the handle's stream stays in its context's pool for the next handle");
        assertEquals(events, StandIn.liveEvents());
        NativeTestApi.setCurrent(ctx);
        NativeTestApi.memAlloc(1024); // left for the context to take with it
        NativeTestApi.streamCreate();
        GpuTestSupport.clearCurrent();
        assertEquals(allocations + 1, StandIn.liveAllocations());
        NativeTestApi.destroyContext(ctx);
        assertEquals(allocations, StandIn.liveAllocations(), "a destroyed context's memory goes with it");
        assertEquals(streams, StandIn.liveStreams(), "and its streams, the pool's among them");
    }

    @Test
    void aSimulatedLaunchOf200MillisecondsMakesSynchronizeWaitThatLong() {
        long ctx = GpuTestSupport.newUserContext(0);
        try (Handle h = Handle.wrap(ctx); Library lib = TestKernels.load()) {
            Kernel empty = lib.kernel("cuh_test_empty");
            int launches = StandIn.launches();
            try (Event start = h.createEvent(); Event end = h.createEvent()) {
                StandIn.setWorkMillis(200);
                start.record(h);
                long t0 = System.nanoTime();
                h.launch(empty, Dim3.of(1), Dim3.of(1), 0);
                end.record(h);
                long queued = System.nanoTime() - t0;
                h.synchronize();
                long waited = System.nanoTime() - t0;
                assertTrue(queued < 150_000_000L, "launching does not wait: " + queued / 1e6 + " ms");
                assertTrue(waited >= 195_000_000L && waited < 2_000_000_000L, "synchronize waited " + waited / 1e6 + " ms");
                float ms = end.elapsedSince(start);
                assertTrue(ms >= 195f && ms < 2000f, "events measure the simulated kernel: " + ms + " ms");
            }
            assertEquals(launches + 1, StandIn.launches());
        } finally {
            NativeTestApi.destroyContext(ctx);
        }
    }

    @Test
    void ptxParametersAreParsedAndCheckedAtLaunch() {
        long ctx = GpuTestSupport.newUserContext(0);
        try (Handle h = Handle.wrap(ctx); Library lib = TestKernels.loadPtx(); DeviceBuffer out = h.allocate(64)) {
            assertTrue(lib.kernelNames().contains("cuh_test_params"), lib.kernelNames().toString());
            Kernel k = lib.kernel("cuh_test_params");
            // long long*, int, long long, float, double, short, signed char, float*
            h.launch(k, Dim3.of(1), Dim3.of(1), 0, out, 1, 2L, 3f, 4d, (short) 5, (byte) 6, out);
            int[] expected = {8, 4, 8, 4, 8, 2, 1, 8};
            assertEquals(expected.length, k.parameterCount());
            for (int i = 0; i < expected.length; i++) {
                assertEquals(expected[i], k.parameterSize(i), "parameter " + i);
            }
            IllegalArgumentException missing = assertThrows(IllegalArgumentException.class, () -> lib.kernel("no_such_kernel"));
            assertTrue(missing.getMessage().contains("cuh_test_add_one"), "unknown names list the PTX's kernels: " + missing.getMessage());
        } finally {
            NativeTestApi.destroyContext(ctx);
        }
    }

    @Test
    void fatbinKernelsTakeTheirParametersFromTheEmbeddedPtx() {
        long ctx = GpuTestSupport.newUserContext(0);
        try (Handle h = Handle.wrap(ctx); Library lib = TestKernels.load(); DeviceBuffer x = h.allocate(1024)) {
            Kernel addOne = lib.kernel("cuh_test_add_one");
            h.launch(addOne, Dim3.of(1), Dim3.of(256), 0, x, 256); // probes the sizes in the handle's context
            assertEquals(2, addOne.parameterCount());
            assertEquals(8, addOne.parameterSize(0));
            assertEquals(4, addOne.parameterSize(1));
            IllegalArgumentException wrong = assertThrows(IllegalArgumentException.class,
                    () -> h.launch(addOne, Dim3.of(1), Dim3.of(256), 0, x, 256L));
            assertTrue(wrong.getMessage().contains("parameter 1 is 4 bytes"), wrong.getMessage());
            assertTrue(wrong.getMessage().contains("the argument given is 8 bytes, a Java long: pass an int (2, not 2L) or cast ((int) x)"),
                    wrong.getMessage());
        } finally {
            NativeTestApi.destroyContext(ctx);
        }
    }

    @Test
    void freeingAfterTheWorkIsOrderedIsNoUseAfterFree() {
        long ctx = GpuTestSupport.newUserContext(0);
        try (Handle h = Handle.wrap(ctx); Library lib = TestKernels.loadPtx()) {
            Kernel addOne = lib.kernel("cuh_test_add_one");
            int before = StandIn.useAfterFrees();
            StandIn.setWorkMillis(100);
            DeviceBuffer x = h.allocate(1024);
            h.launch(addOne, Dim3.of(1), Dim3.of(256), 0, x, 256);
            x.close(); // same stream: the free runs after the launch
            h.synchronize();
            assertEquals(before, StandIn.useAfterFrees());
        } finally {
            NativeTestApi.destroyContext(ctx);
        }
    }

    @Test
    void injectedFaultsFailTheNextSynchronizeAndStickyOnesStick() {
        long ctx = GpuTestSupport.newUserContext(0);
        try (Handle h = Handle.wrap(ctx)) {
            h.stream(); // creates the handle's stream: synchronize has nothing to wait for before
            StandIn.failNextSync(1); // not sticky: one failure, then the context works
            CudaException once = assertThrows(CudaException.class, h::synchronize);
            assertEquals(CudaError.INVALID_VALUE, once.error());
            h.synchronize();

            // Stream-ordered memory (M1): out of memory trims the pool and tries once more, so one failure
            // is absorbed and two are an OUT_OF_MEMORY with the free memory in the message.
            StandIn.failNextAllocations(1);
            h.allocate(1024).close();
            StandIn.failNextAllocations(2);
            CudaException oom = assertThrows(CudaException.class, () -> h.allocate(1024));
            assertEquals(CudaError.OUT_OF_MEMORY, oom.error(), oom.getMessage());
            assertTrue(oom.getMessage().contains("bytes free"), oom.getMessage());
            h.allocate(1024).close();

            StandIn.failNextSync(719);
            CudaException sticky = assertThrows(CudaException.class, h::synchronize);
            assertEquals(CudaError.LAUNCH_FAILED, sticky.error());
            assertTrue(sticky.isSticky());
            CudaException after = assertThrows(CudaException.class, () -> h.allocate(16));
            assertEquals(CudaError.LAUNCH_FAILED, after.error(), "every later call in the context fails");
        } finally {
            NativeTestApi.destroyContext(ctx);
        }
    }

    @Test
    void pointersThatAreNoLiveObjectAreRefusedAndCounted() {
        int bad = StandIn.badHandles();
        CudaException ctx = assertThrows(CudaException.class, () -> Handle.wrap(0x1234_5678L));
        assertEquals(CudaError.INVALID_CONTEXT, ctx.error(), ctx.getMessage());
        CudaException stream = assertThrows(CudaException.class, () -> NativeTestApi.streamDestroy(0xdead_beefL));
        assertEquals(CudaError.INVALID_HANDLE, stream.error());
        assertEquals(bad + 2, StandIn.badHandles());
    }
}
