package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * The driver's own words in exceptions: where the driver keeps an error log (CUDA 12.9+, modelled by the CPU
 * stand-in, which logs "ENTRY POINT: CUDA_ERROR_NAME (code), reported by the CPU stand-in driver" for each
 * failure), a failed call's {@link CudaException} carries what the driver logged about it on the failing
 * thread, in {@link CudaException#driverLog()} and in its message; lines logged on another thread never
 * reach it. On a GPU the lines are the driver's own; the check there is that they are present and are the
 * message's, printed as {@code [driver-log]} lines for the GPU log.
 */
@GpuTest
class DriverLogGpuTest extends HandleGpuTestBase {

    private static void assumeTheDriverKeepsAnErrorLog() {
        assumeTrue(Cuda.driverVersion() >= 12090, "driver " + Cuda.driverVersion() + " keeps no error log (CUDA 12.9+)");
    }

    private static CudaException outOfMemory(Handle h) {
        return assertThrows(CudaException.class, () -> h.allocate(1L << 50), "allocating 1 PiB");
    }

    /** Page-locking 1 PiB: a second refusal the driver makes itself, of another entry point. (Not a made-up stream
     *  handle: the real driver dereferences one, which is undefined behaviour and crashed driver 580.) */
    private static CudaException hugePinned(Handle h) {
        return assertThrows(CudaException.class, () -> h.allocateHost(1L << 50), "page-locking 1 PiB");
    }

    private static void assertCarriesItsLog(CudaException e, String entryPoint) {
        System.out.println("[driver-log] " + e.operation() + " " + e.error() + ": " + e.driverLog());
        assertFalse(e.driverLog().isEmpty(), "the driver keeps an error log, so the exception carries its lines: " + e.getMessage());
        assertTrue(e.getMessage().endsWith("; the driver's log: " + e.driverLog()), e.getMessage());
        if (StandIn.active()) {
            assertTrue(e.driverLog().contains(entryPoint + ": CUDA_ERROR_") && e.driverLog().contains("(" + e.code() + ")"),
                    "the stand-in's line names the entry point and the code " + e.code() + ": " + e.driverLog());
        }
    }

    @Test
    @StandInCapable
    void aFailedCallCarriesWhatTheDriverLoggedAboutIt() {
        assumeTheDriverKeepsAnErrorLog();
        try (Handle h = Handle.create(0)) {
            CudaException oom = outOfMemory(h);
            assertEquals(CudaError.OUT_OF_MEMORY, oom.error(), oom.getMessage());
            assertCarriesItsLog(oom, "cuMemAllocFromPoolAsync");
            CudaException pinned = hugePinned(h);
            assertCarriesItsLog(pinned, "cuMemHostAlloc");
            assertFalse(pinned.driverLog().contains("cuMemAllocFromPoolAsync"), "the earlier failure's lines were taken by its own exception: "
                    + pinned.driverLog());
            // The handle is still fine: the failures were refusals, not faults.
            try (DeviceBuffer d = h.allocate(4096)) {
                h.memset(d, 7);
                h.synchronize();
            }
        }
    }

    @Test
    @StandInCapable
    void linesLoggedOnAnotherThreadNeverReachAnException() throws Exception {
        assumeTheDriverKeepsAnErrorLog();
        try (Handle h = Handle.create(0)) {
            ExecutorService two = Executors.newFixedThreadPool(2);
            try {
                CountDownLatch bothFailed = new CountDownLatch(2);
                // Each thread fails, then waits until the other has failed too, so both threads' lines are
                // logged before either exception's lines are looked at.
                Function<Supplier<CudaException>, Callable<CudaException>> failThenWait = failure -> () -> {
                    CudaException e = failure.get();
                    bothFailed.countDown();
                    bothFailed.await(30, TimeUnit.SECONDS);
                    return e;
                };
                Future<CudaException> oom = two.submit(failThenWait.apply(() -> outOfMemory(h)));
                Future<CudaException> pinned = two.submit(failThenWait.apply(() -> hugePinned(h)));
                CudaException oomFailure = oom.get(60, TimeUnit.SECONDS);
                CudaException pinnedFailure = pinned.get(60, TimeUnit.SECONDS);
                assertFalse(oomFailure.driverLog().isEmpty(), oomFailure.getMessage());
                assertFalse(pinnedFailure.driverLog().isEmpty(), pinnedFailure.getMessage());
                if (StandIn.active()) {
                    assertFalse(oomFailure.driverLog().contains("cuMemHostAlloc"), "the other thread's line: " + oomFailure.driverLog());
                    assertFalse(pinnedFailure.driverLog().contains("cuMemAllocFromPoolAsync"), "the other thread's line: " + pinnedFailure.driverLog());
                }
            } finally {
                two.shutdownNow();
            }
        }
    }

    @Test
    @StandInCapable
    void anExceptionFromAThreadWithoutDriverLinesHasAnEmptyLog() throws Exception {
        // An exception cuhandle raises itself, not the driver: nothing to attach, on any driver.
        CompletableFuture<CudaException> own = CompletableFuture.supplyAsync(
                () -> assertThrows(CudaException.class, () -> Cuda.setDevice(Cuda.deviceCount() + 7)));
        CudaException e = own.get(30, TimeUnit.SECONDS);
        assertEquals("", e.driverLog(), e.getMessage());
        assertFalse(e.getMessage().contains("the driver's log"), e.getMessage());
    }
}
