package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.ref.WeakReference;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;

/**
 * Regression tests of issue 9's defects at the native boundary, one per defect (the number in
 * each test's comment). They need no kernel results, so they run in CI on the CPU stand-in driver
 * as well as on a GPU; the few that steer the stand-in (simulated GPU time, injected faults,
 * its allocation counters) are skipped on a real GPU, where {@link MemoryOrderGpuTest} and the
 * other GPU tests cover the same rule with real kernels.
 */
@GpuTest
@StandInCapable
class BoundaryRegressionGpuTest {
    private static final Random RANDOM = new Random(9);

    private static float[] randomFloats(int n) {
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = RANDOM.nextFloat() * 200f - 100f;
        }
        return x;
    }

    /** Runs the garbage collector until {@code done} holds (bounded); the Cleaner runs in between. */
    private static boolean gcUntil(java.util.function.BooleanSupplier done, long timeoutMillis) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMillis;
        while (!done.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                return false;
            }
            System.gc();
            Thread.sleep(20);
        }
        return true;
    }

    // ------------------------------------------------------------------------------------- (1)

    /** (1) A slice used to let its parent be cleaned: the next download read freed memory. */
    @Test
    void aSliceKeepsItsParentAliveWhileItIsUsed() throws InterruptedException {
        try (Handle h = Handle.create()) {
            float[] data = randomFloats(64);
            DeviceBuffer view = h.upload(data).slice(16, 16); // the parent is reachable only through the view
            for (int i = 0; i < 10; i++) {
                System.gc();
                Thread.sleep(20);
            }
            float[] out = new float[4];
            view.download(out);
            assertArrayEquals(Arrays.copyOfRange(data, 4, 8), out);
            assertFalse(view.isClosed());
            DeviceBuffer viewOfView = view.slice(4, 8);
            float[] two = new float[2];
            viewOfView.download(two);
            assertArrayEquals(Arrays.copyOfRange(data, 5, 7), two);
        }
    }

    // ------------------------------------------------------------------------------------- (2)

    /**
     * (2) A buffer of handle A used by handle B was freed ordered on A's stream only: the memory
     * went back while B's kernel still used it. The stand-in simulates B's kernel taking 300 ms
     * and counts frees of memory that queued work still references. The free is now ordered (on
     * the GPU) after B's work too, and close() itself waits for nothing (rule L3).
     */
    @Test
    void closingABufferOrdersItsFreeAfterWorkOfEveryHandleThatUsedIt() {
        assumeTrue(StandIn.active(), "steers the stand-in's simulated GPU time; MemoryOrderGpuTest covers the GPU");
        try (Handle a = Handle.create(); Handle b = Handle.create(); Library lib = TestKernels.load()) {
            Kernel addOne = lib.kernel("cuh_test_add_one");
            DeviceBuffer x = a.upload(randomFloats(1024));
            int before = StandIn.useAfterFrees();
            int previous = StandIn.setWorkMillis(300);
            long start;
            try {
                b.launch(addOne, Dim3.of(4), Dim3.of(256), 0, x, 1024);
                start = System.nanoTime();
                x.close();
            } finally {
                StandIn.setWorkMillis(previous);
            }
            long waitedMillis = (System.nanoTime() - start) / 1_000_000;
            assertTrue(waitedMillis < 200, "close() waited " + waitedMillis + " ms for B's 300 ms of work; a free is stream-ordered");
            b.synchronize();
            a.synchronize();
            assertEquals(before, StandIn.useAfterFrees(), "memory was freed while handle B's kernel still used it");
        }
    }

    // ------------------------------------------------------------------------------------- (3)

    /** (3) Only the offset inside a buffer was checked; a misaligned raw pointer reached the kernel (a sticky fault). */
    @Test
    void blasChecksTheAbsoluteAlignmentOfEveryOperandAndResult() {
        try (Handle h = Handle.create(); DeviceBuffer base = h.allocate(256)) {
            DeviceBuffer odd = h.wrapPointer(base.address() + 2, 64);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Blas.sscal(h, 4, 2f, odd, 1));
            assertTrue(e.getMessage().contains("device address 0x" + Long.toHexString(base.address() + 2)) && e.getMessage().contains("4-byte"), e.getMessage());
            DeviceBuffer fourAligned = h.wrapPointer(base.address() + 4, 64);
            e = assertThrows(IllegalArgumentException.class, () -> Blas.dscal(h, 2, 2.0, fourAligned, 1));
            assertTrue(e.getMessage().contains("8-byte"), e.getMessage());
            DeviceBuffer x = base.slice(0, 64);
            DeviceBuffer badResult = h.wrapPointer(base.address() + 132, 8);
            e = assertThrows(IllegalArgumentException.class, () -> Blas.ddot(h, 2, x, 1, x, 1, badResult));
            assertTrue(e.getMessage().startsWith("the result starts at device address"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> Blas.isamax(h, 2, x, 1, fourAligned));
            assertTrue(e.getMessage().contains("8-byte"), "iamax writes a 64-bit index: " + e.getMessage());
        }
    }

    // ------------------------------------------------------------------------------------- (4, 5)

    /** (4) CU_STREAM_PER_THREAD gave wrong reductions from several threads; (5) garbage raw streams crashed. */
    @Test
    void streamValuesThatCannotBeOrderedOrCannotBeStreamsAreRefused() {
        try (Handle h = Handle.create()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> h.setStream(2));
            assertTrue(e.getMessage().contains("CU_STREAM_PER_THREAD"), e.getMessage());
            for (long bad : new long[] {-1, 3, 4095, 0x7f00_0000_1004L}) {
                e = assertThrows(IllegalArgumentException.class, () -> h.setStream(bad), "setStream(" + bad + ")");
                assertTrue(e.getMessage().contains("CUstream"), e.getMessage());
            }
            h.setStream(0); // the legacy default stream stays allowed
            h.setStream(1);
            h.resetStream();
            for (long bad : new long[] {-8, 16}) {
                e = assertThrows(IllegalArgumentException.class, () -> h.wrapPointer(bad, 4), "wrapPointer(" + bad + ")");
                assertTrue(e.getMessage().contains("device pointer"), e.getMessage());
            }
            assertEquals(0, h.wrapPointer(0, 0).byteLength(), "an empty view of nothing is fine");
        }
    }

    // ------------------------------------------------------------------------------------- (7)

    /**
     * (7) A System.Logger handler that closed the handle on the sticky-error record ran inside the
     * failing call and waited for that call for ever. Now records are published on the logging
     * thread after the call: the close completes.
     */
    @Test
    void aLogHandlerThatClosesTheHandleOnAnErrorRecordNeitherHangsNorCrashes() throws Exception {
        assumeTrue(StandIn.active(), "injects a sticky error, which would end CUDA for this whole process on a GPU");
        long ctx = NativeTestApi.createContext(0); // a context of its own: the sticky error poisons it
        NativeTestApi.setCurrent(0);
        Logger jul = Logger.getLogger("dev.cuhandle");
        Handle h = Handle.wrap(ctx);
        CountDownLatch closed = new CountDownLatch(1);
        List<Throwable> handlerFailures = new CopyOnWriteArrayList<>();
        Handler closer = new Handler() {
            @Override
            public void publish(LogRecord record) {
                if (record.getLevel() == Level.SEVERE && record.getMessage() != null && record.getMessage().contains("sticky error")) {
                    try {
                        h.close();
                        closed.countDown();
                    } catch (Throwable t) {
                        handlerFailures.add(t);
                    }
                }
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        jul.addHandler(closer);
        try {
            try (DeviceBuffer x = h.allocate(64)) {
                h.memset(x, 0);
                StandIn.failNextSync(CudaError.ILLEGAL_ADDRESS.code());
                CudaException e = assertThrows(CudaException.class, h::synchronize);
                assertTrue(e.isSticky(), e.toString());
            } catch (IllegalStateException alreadyClosedByTheHandler) {
                // x.close() may find the handle's context poisoned or run after the handler; both are fine
            }
            assertTrue(closed.await(10, TimeUnit.SECONDS), "the handler's close() did not complete: " + handlerFailures);
            assertTrue(h.isClosed());
            assertTrue(handlerFailures.isEmpty(), handlerFailures.toString());
        } finally {
            jul.removeHandler(closer);
            h.close();
            NativeTestApi.destroyContext(ctx);
            NativeTestApi.setCurrent(0);
        }
    }

    // ------------------------------------------------------------------------------------- (8)

    /** (8) The thread's reusable launch object kept the last kernel, and so its library, reachable for the thread's life. */
    @Test
    void aLaunchDoesNotKeepTheKernelOrItsLibraryReachable() throws InterruptedException {
        try (Handle h = Handle.create(); DeviceBuffer x = h.upload(new float[256])) {
            Library lib = TestKernels.load();
            h.launch(lib.kernel("cuh_test_add_one"), Dim3.of(1), Dim3.of(256), 0, x, 256);
            h.synchronize();
            WeakReference<Library> weak = new WeakReference<>(lib);
            lib = null; // deliberately not closed: the cleaner must be able to unload it
            assertTrue(gcUntil(() -> weak.get() == null, 10_000), "the library stayed reachable after its last launch");
        }
    }

    /** (8) A failing workspace setup leaked its device allocation. */
    @Test
    void aFailedReductionWorkspaceSetupFreesWhatItAllocated() {
        assumeTrue(StandIn.active(), "injects an allocation failure into the stand-in");
        try (Handle h = Handle.create(); DeviceBuffer x = h.upload(randomFloats(64))) {
            int before = StandIn.liveAllocations();
            StandIn.failNextHostAllocations(2); // the first failure is absorbed: the pinned cache is trimmed and asked again
            CudaException e = assertThrows(CudaException.class, () -> Blas.sasum(h, 64, x, 1));
            assertEquals(CudaError.OUT_OF_MEMORY, e.error(), e.toString());
            assertEquals(before, StandIn.liveAllocations(), "the workspace's device memory must be freed when its setup fails");
            Blas.sasum(h, 64, x, 1); // and the next reduction sets it up again
            assertEquals(before + 1, StandIn.liveAllocations(), "one workspace");
        }
    }

    /**
     * (8) 100,000 leaked handles with small buffers left 1.9 GB of device memory reserved (pool
     * memory that the context kept). Here two waves of 2,000 leaked handles with 8 KiB each: once
     * cleaned, the pool and pinned memory are back, and the second wave costs nothing more than the
     * first. (Each handle alive at once has a stream of its own (rule H9), and the driver keeps a
     * stream's memory while the context lives, so the first wave's streams stay, to be reused.)
     */
    @Test
    void leakedHandlesAndBuffersGiveTheirMemoryBackOnceCleaned() throws InterruptedException {
        // 8,000 leak warnings (one per cleaned object, as H7 wants) would only flood the log here.
        Logger jul = Logger.getLogger("dev.cuhandle");
        Level level = jul.getLevel();
        jul.setLevel(Level.SEVERE);
        try {
            leakAndWaitForTheMemory();
        } finally {
            jul.setLevel(level);
        }
    }

    private static void leakAndWaitForTheMemory() throws InterruptedException {
        try (Handle anchor = Handle.create()) { // keeps the primary context alive throughout
            int allocationsBefore = StandIn.active() ? StandIn.liveAllocations() : 0;
            long[] freeAfterWave = new long[2];
            for (int wave = 0; wave < 2; wave++) {
                leakHandles(2_000);
                anchor.synchronize();
                if (StandIn.active()) {
                    assertTrue(gcUntil(() -> StandIn.liveAllocations() <= allocationsBefore, 60_000),
                            "allocations still live after cleaning: " + StandIn.liveAllocations() + " (before: " + allocationsBefore + ")");
                }
                long settled = settledFreeMemory(anchor);
                freeAfterWave[wave] = settled;
            }
            long slack = 64L << 20;
            assertTrue(freeAfterWave[1] >= freeAfterWave[0] - slack, "device memory free after the first wave " + (freeAfterWave[0] >> 20)
                    + " MiB, after the second " + (freeAfterWave[1] >> 20) + " MiB: cleaned handles and buffers must give their memory back");
        }
    }

    /** Free device memory once the cleaner has run and stopped changing it (GC rounds until two readings agree within 1 MiB). */
    private static long settledFreeMemory(Handle anchor) throws InterruptedException {
        long previous = -1;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            System.gc();
            Thread.sleep(200);
            long now = anchor.freeMemory();
            if (previous >= 0 && Math.abs(now - previous) < (1L << 20)) {
                return now;
            }
            previous = now;
        }
        return anchor.freeMemory();
    }

    /**
     * (8) The leak above in the driver's terms: every handle used to create (and, closed or
     * cleaned, destroy) a stream of its own, and the driver keeps each destroyed stream's device
     * memory cached (about 560 KiB on the H200) for as long as the context lives. A handle now
     * leases a stream of its own and gives it back when closed: however many handles come and go,
     * the context holds only as many streams as handles were alive at once (rule H9).
     */
    @Test
    void closedHandlesLendTheirStreamsSoStreamsAreBoundedByHandlesAliveAtOnce() {
        assumeTrue(StandIn.active(), "counts the stand-in's live streams");
        long ctx = NativeTestApi.createContext(0);
        NativeTestApi.setCurrent(0);
        try {
            int before = StandIn.liveStreams();
            java.util.Set<Long> streams = new java.util.HashSet<>();
            for (int i = 0; i < 200; i++) {
                try (Handle h = Handle.wrap(ctx)) {
                    streams.add(h.stream());
                }
            }
            assertEquals(1, streams.size(), "handles one after another reuse one stream");
            assertEquals(before + 1, StandIn.liveStreams(), "no stream per handle");
            for (int round = 0; round < 3; round++) {
                List<Handle> alive = new java.util.ArrayList<>();
                java.util.Set<Long> distinct = new java.util.HashSet<>();
                for (int i = 0; i < 64; i++) {
                    alive.add(Handle.wrap(ctx));
                    distinct.add(alive.get(i).stream());
                }
                assertEquals(64, distinct.size(), "64 live handles run on 64 streams of their own");
                assertEquals(before + 64, StandIn.liveStreams(), "round " + round + ": streams are bounded by the handles alive at once");
                alive.forEach(Handle::close);
            }
        } finally {
            NativeTestApi.destroyContext(ctx);
            NativeTestApi.setCurrent(0);
        }
    }

    private static void leakHandles(int count) {
        for (int i = 0; i < count; i++) {
            Handle h = Handle.create();
            DeviceBuffer b = h.allocate(4096 + (i % 2) * 4096);
            h.memset(b, 1);
            Blas.sasum(h, 16, b, 1); // sets up the reduction workspace too
        }
    }

    // ------------------------------------------------------------------------------------- (9)

    /** (9) Quick returns (n <= 0, alpha == 0) succeeded on a destroyed context; H8 says every call fails. */
    @Test
    void quickReturnsStillFailOnADestroyedContext() {
        long ctx = NativeTestApi.createContext(0);
        NativeTestApi.setCurrent(0);
        Handle h = Handle.wrap(ctx);
        try {
            DeviceBuffer x = h.allocate(64);
            DeviceBuffer y = h.allocate(64);
            NativeTestApi.destroyContext(ctx);
            ctx = 0;
            assertThrows(CudaException.class, () -> Blas.sscal(h, 0, 2f, x, 1), "sscal n=0");
            assertThrows(CudaException.class, () -> Blas.sscal(h, 4, 2f, x, -1), "sscal incx<0");
            assertThrows(CudaException.class, () -> Blas.saxpy(h, 0, 2f, x, 1, y, 1), "saxpy n=0");
            assertThrows(CudaException.class, () -> Blas.saxpy(h, 4, 0f, x, 1, y, 1), "saxpy alpha=0");
            assertThrows(CudaException.class, () -> Blas.scopy(h, 0, x, 1, y, 1), "scopy n=0");
            assertThrows(CudaException.class, () -> Blas.sdot(h, 0, x, 1, y, 1), "sdot n=0");
            x.close(); // closing still succeeds and frees nothing twice (H8)
            y.close();
        } finally {
            h.close();
            if (ctx != 0) {
                NativeTestApi.destroyContext(ctx);
            }
            NativeTestApi.setCurrent(0);
        }
    }

    /** (9) maxBlockDim(3) returned a grid limit and maxGridDim(-1) a block limit. */
    @Test
    void deviceLimitsRefuseDimensionsOtherThanXYZ() {
        Device d = Cuda.device(0);
        for (int bad : new int[] {-1, 3, 100}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> d.maxBlockDim(bad));
            assertTrue(e.getMessage().contains("dimension " + bad), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> d.maxGridDim(bad));
        }
        assertTrue(d.maxBlockDim(2) > 0 && d.maxGridDim(0) > 0);
    }

    // ------------------------------------------------------------------------------------- (10)

    /** (10) A copy between overlapping slices of one buffer was handed to the driver, which leaves it undefined. */
    @Test
    void copiesBetweenOverlappingRangesOfOneBufferAreRefused() {
        try (Handle h = Handle.create()) {
            float[] data = randomFloats(16);
            try (DeviceBuffer b = h.upload(data)) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> h.copy(b.slice(0, 32), b.slice(16, 32)));
                assertTrue(e.getMessage().contains("overlap"), e.getMessage());
                h.copy(b.slice(0, 16), b.slice(0, 16)); // the same range: nothing to move
                h.copy(b.slice(0, 16), b.slice(16, 16)); // adjacent ranges do not overlap
                float[] out = new float[16];
                b.download(out);
                float[] expected = data.clone();
                System.arraycopy(data, 0, expected, 4, 4);
                assertArrayEquals(expected, out);
            }
        }
    }

    /**
     * (10) Buffer arguments of a launch were only checked with isClosed(), not held: a concurrent
     * close could free them between the check and the launch. Now close() waits for the launch
     * and then for the work it queued; every launch either runs on live memory or is refused.
     */
    @Test
    void aBufferClosedDuringLaunchesIsNeverUsedAfterItsFree() throws Exception {
        assumeTrue(StandIn.active(), "counts uses after free in the stand-in");
        try (Handle h = Handle.create(); Library lib = TestKernels.load()) {
            Kernel addOne = lib.kernel("cuh_test_add_one");
            DeviceBuffer x = h.upload(new float[256]);
            int before = StandIn.useAfterFrees();
            int previous = StandIn.setWorkMillis(2);
            List<Throwable> unexpected = new CopyOnWriteArrayList<>();
            Thread launcher = new Thread(() -> {
                KernelLaunch launch = addOne.newLaunch().grid(1).block(256).arg(0, x).arg(1, 256);
                for (int i = 0; i < 500; i++) {
                    try {
                        launch.launch(h);
                    } catch (IllegalStateException closed) {
                        return; // refused: the buffer is closed
                    } catch (Throwable t) {
                        unexpected.add(t);
                        return;
                    }
                }
            });
            try {
                launcher.start();
                Thread.sleep(30);
                x.close();
                launcher.join(30_000);
            } finally {
                StandIn.setWorkMillis(previous);
            }
            assertTrue(unexpected.isEmpty(), unexpected.toString());
            assertEquals(before, StandIn.useAfterFrees(), "a launch used the buffer after its free");
        }
    }
}
