package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;

/**
 * The CPU stand-in's green contexts (tests/standin-driver/green.c) behave as its README says, so that
 * the SM-partition tests that run on it in CI prove something: splits round up to the granularity,
 * each green context retains the primary context and has its own {@code CUcontext}, its streams and
 * launches are counted, a second thread making it current is counted as a violation, and destroying
 * it detaches its streams ({@code CUDA_ERROR_STREAM_DETACHED}, 917). Runs only in the Maven
 * {@code standin} execution (CUDA 13.0, 132 SMs).
 */
@EnabledIf("dev.cuhandle.StandIn#active")
class StandInGreenContextTest {
    private static final int STREAM_DETACHED = 917;

    @AfterEach
    void clear() {
        GpuTestSupport.clearCurrent();
    }

    @Test
    void splitsRoundUpToMultiplesOf8_retainThePrimaryContext_andOverlapsAreReported() {
        int retains = StandIn.primaryRetains(0);
        int live = StandIn.liveGreenContexts();
        long[] a = GreenContextTestApi.create(0, 60);
        long[] b = GreenContextTestApi.create(0, 0);
        long idA = NativeTestApi.contextId(a[GreenContextTestApi.CONTEXT]);
        long idB = NativeTestApi.contextId(b[GreenContextTestApi.CONTEXT]);
        try {
            assertEquals(132, a[GreenContextTestApi.DEVICE_SMS], "the device's SMs (an H200's)");
            assertEquals(64, a[GreenContextTestApi.SMS], "60 SMs are rounded up to a multiple of 8");
            assertEquals(8, b[GreenContextTestApi.SMS], "minCount 0 is the smallest group: 8 SMs");
            assertNotEquals(idA, idB, "each green context has a CUcontext of its own");
            assertEquals(64, StandIn.greenSms(idA));
            assertEquals(0, StandIn.greenFirstSm(idA), "a split takes the lowest SMs first");
            assertEquals(8, StandIn.greenSharedSms(idA), "both were split from the whole device, so they share SMs 0-7");
            assertEquals(8, StandIn.greenSharedSms(idB));
            assertEquals(live + 2, StandIn.liveGreenContexts());
            assertEquals(retains + 2, StandIn.primaryRetains(0), "a green context retains the primary context (NVIDIA documents it)");
            assertEquals(0L, NativeTestApi.currentContext(), "creating a green context makes nothing current");
        } finally {
            GreenContextTestApi.destroy(a[GreenContextTestApi.GREEN]);
            GreenContextTestApi.destroy(b[GreenContextTestApi.GREEN]);
        }
        assertFalse(StandIn.greenAlive(idA));
        assertEquals(0, StandIn.greenSharedSms(idB), "a destroyed green context shares nothing");
        assertEquals(live, StandIn.liveGreenContexts());
        assertEquals(retains, StandIn.primaryRetains(0), "destroying them released the primary context");
        CudaException again = assertThrows(CudaException.class, () -> GreenContextTestApi.destroy(a[GreenContextTestApi.GREEN]));
        assertEquals(CudaError.CONTEXT_IS_DESTROYED, again.error(), "a second destroy is refused");
        CudaException id = assertThrows(CudaException.class, () -> NativeTestApi.contextId(a[GreenContextTestApi.CONTEXT]));
        assertEquals(CudaError.CONTEXT_IS_DESTROYED, id.error(), "its CUcontext went with it");
    }

    @Test
    void aHandleOnAGreenContextRunsOnItsStreamAndItsLaunchesAreCounted() {
        long[] green = GreenContextTestApi.create(0, 64);
        long ctx = green[GreenContextTestApi.CONTEXT];
        long id = NativeTestApi.contextId(ctx);
        try (Handle h = Handle.wrap(ctx); Library lib = TestKernels.load(); DeviceBuffer x = h.allocate(1024)) {
            assertEquals(green[GreenContextTestApi.GREEN], GreenContextTestApi.greenContextOfStream(h.stream()),
                    "a stream made with the green CUcontext current belongs to the green context");
            assertEquals(1, StandIn.greenStreams(id), "the handle's stream");
            h.launch(lib.kernel("cuh_test_add_one"), Dim3.of(1), Dim3.of(256), 0, x, 256);
            h.launch(lib.kernel("cuh_test_add_one"), Dim3.of(1), Dim3.of(256), 0, x, 256);
            h.synchronize();
            assertEquals(2, StandIn.greenLaunches(id));
            assertArrayEquals(new int[] {0, 64}, StandIn.lastLaunchSms(), "the last launch could use the green context's SMs 0-63");
        } finally {
            GreenContextTestApi.destroy(green[GreenContextTestApi.GREEN]);
        }
        assertEquals(2, StandIn.greenLaunches(id), "a destroyed green context's counts stay readable");
    }

    @Test
    void aGreenContextMadeCurrentOnASecondThreadIsCountedAsAViolation() throws Exception {
        long[] green = GreenContextTestApi.create(0, 8);
        long ctx = green[GreenContextTestApi.CONTEXT];
        int before = StandIn.greenCurrentViolations();
        try {
            NativeTestApi.setCurrent(ctx);
            NativeTestApi.setCurrent(ctx);
            assertEquals(before, StandIn.greenCurrentViolations(), "current again on the same thread is no violation");
            CountDownLatch holding = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread other = new Thread(() -> {
                try {
                    NativeTestApi.setCurrent(ctx);
                    holding.countDown();
                    release.await();
                    GpuTestSupport.clearCurrent();
                } catch (Throwable t) {
                    failure.set(t);
                    holding.countDown();
                }
            }, "second-holder");
            other.start();
            assertTrue(holding.await(10, TimeUnit.SECONDS));
            assertEquals(before + 1, StandIn.greenCurrentViolations(), "the second thread made it current while this one had it");
            release.countDown();
            other.join(10_000);
            assertEquals(null, failure.get());
            GpuTestSupport.clearCurrent();
            NativeTestApi.setCurrent(ctx);
            assertEquals(before + 1, StandIn.greenCurrentViolations(), "once the other thread let go, this one may take it");
        } finally {
            GpuTestSupport.clearCurrent();
            GreenContextTestApi.destroy(green[GreenContextTestApi.GREEN]);
        }
    }

    @Test
    void destroyingAGreenContextDetachesTheStreamsItStillHas() {
        long[] green = GreenContextTestApi.create(0, 8);
        NativeTestApi.setCurrent(green[GreenContextTestApi.CONTEXT]);
        long stream = NativeTestApi.streamCreate();
        GpuTestSupport.clearCurrent();
        int calls = StandIn.detachedStreamCalls();
        int detached = StandIn.detachedStreams();
        GreenContextTestApi.destroy(green[GreenContextTestApi.GREEN]);
        assertEquals(detached + 1, StandIn.detachedStreams(), "the stream is detached, not destroyed (NVIDIA documents it)");
        CudaException e = assertThrows(CudaException.class, () -> GreenContextTestApi.greenContextOfStream(stream));
        assertEquals(STREAM_DETACHED, e.code(), e.getMessage());
        assertEquals(calls + 1, StandIn.detachedStreamCalls());
        // Below CUDA 13.1 a detached stream cannot even be destroyed: it stays a leak for this JVM.
        CudaException destroy = assertThrows(CudaException.class, () -> NativeTestApi.streamDestroy(stream));
        assertEquals(STREAM_DETACHED, destroy.code(), destroy.getMessage());
    }
}
