package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.junit.jupiter.api.Test;

/** A driver library but no GPU (CI: Debian's toolkit libcuda): NO_DEVICE, clearly. */
class DriverWithoutDeviceTest {
    @Test
    void withADriverButNoDeviceEveryCudaOperationThrowsNoDevice() {
        int version;
        try {
            version = Cuda.driverVersion();
        } catch (CudaException e) {
            assumeTrue(false, "no driver library on this machine: " + e.getMessage());
            return;
        }
        assumeTrue(Cuda.unavailableReason() != null, "a GPU is present; the no-device path cannot be observed here");
        assertTrue(version >= 12000, "driver version " + version);
        CudaException e = assertThrows(CudaException.class, Cuda::deviceCount);
        assertEquals(CudaError.NO_DEVICE, e.error(), e.getMessage());
        assertEquals("cuInit", e.operation());
        assertTrue(e.getMessage().contains("CUDA_ERROR_NO_DEVICE"), e.getMessage());
        assertFalse(Cuda.isAvailable());
        assertFalse(Cuda.isStandIn(), "no device: not the stand-in, and no exception");
        CudaException handle = assertThrows(CudaException.class, Handle::create);
        assertEquals(CudaError.NO_DEVICE, handle.error());
    }
}
