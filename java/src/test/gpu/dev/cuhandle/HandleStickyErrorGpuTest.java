package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Rules H11 (errors carry code, name, description and operation; sticky errors poison the handles
 * of the affected context) and H12 (availability answers without throwing). The sticky fault
 * itself runs in a child JVM, because on the measured driver it breaks every context of the
 * process (see {@link HandleExitChild}).
 */
@GpuTest
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class HandleStickyErrorGpuTest extends HandleGpuTestBase {
    private final Random random = new Random(0x483BL);

    @StandInCapable
    @Test
    @Order(1)
    void h12_availabilityIsAnsweredWithoutThrowing() {
        assertTrue(Cuda.isAvailable(), "H12: Cuda.isAvailable() on a GPU machine");
        assertNull(Cuda.unavailableReason());
        assertTrue(Cuda.deviceCount() >= 1);
        assertTrue(Cuda.driverVersion() >= 12000, "driver version " + Cuda.driverVersion());
    }

    @StandInCapable
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

    /**
     * The sticky fault runs in a child JVM ({@link HandleExitChild} mode {@code sticky}): measured
     * on the H200 with driver 580, after CUDA_ERROR_ILLEGAL_ADDRESS in one user context every
     * context of the process fails (cuCtxCreate and cuDevicePrimaryCtxRetain return 700, and
     * cuDevicePrimaryCtxReset does not heal it), which would break every later test in this JVM.
     * The child checks the library's guarantees (every later call of a handle on the faulting
     * context fails with a sticky CudaException naming the original operation; other contexts work
     * correctly or fail with a CudaException; close never throws; no crash) and reports what the
     * driver did; this test echoes the observations and fails on any broken guarantee.
     */
    // Not @StandInCapable: its point is a real kernel fault (cuh_test_fault writing to address 16),
    // and the stand-in executes no kernel.
    @Test
    @Order(3)
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void h11_stickyFault_poisonsTheHandlesOfItsContext_othersWorkOrFailCleanly_noCrash(@TempDir Path dir) throws Exception {
        ChildRun run = runHandleExitChild(dir, "sticky");
        for (String line : run.linesStartingWith("[sticky-")) {
            System.out.println(line);
        }
        run.assertNoCrash("H11: a JVM that hit a sticky error");
        List<String> broken = run.linesStartingWith(HandleExitChild.CHECK_FAILED);
        if (!broken.isEmpty()) {
            fail("H11: " + broken.size() + " guarantee(s) broken after a sticky fault:\n  " + String.join("\n  ", broken) + run.context());
        }
        assertTrue(run.output.contains(HandleExitChild.STICKY_DONE), "the sticky scenario did not run to its end" + run.context());
        assertEquals(0, run.exitCode, "the child JVM's exit status" + run.context());
        assertEquals(0L, current(), "this JVM is untouched");
        // This JVM's contexts are unaffected by the other process's fault.
        try (Handle h = Handle.create(0)) {
            checkAddOne(h, random, 1000, 1, "this JVM's primary context after another process hit a sticky error");
        }
    }
}
