package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

@GpuTest
class DeviceGpuTest {
    @StandInCapable
    @Test
    void devicesAndTheirPropertiesAreReported() {
        int count = Cuda.deviceCount();
        assertTrue(count >= 1);
        for (int d = 0; d < count; d++) {
            Device device = Cuda.device(d);
            System.out.println("[device] " + device);
            assertEquals(d, device.ordinal());
            assertTrue(!device.name().isBlank());
            assertTrue(device.computeCapabilityMajor() >= 7, device.computeCapability());
            assertTrue(device.multiprocessorCount() > 0);
            assertTrue(device.totalMemory() > (1L << 30));
            assertTrue(device.maxThreadsPerBlock() >= 1024);
            assertTrue(device.maxGridDim(0) >= 65535 && device.maxBlockDim(0) >= 1024);
            assertEquals(device.multiprocessorCount(), device.attribute(16), "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT");
            if (device.name().contains("H200")) {
                assertEquals(132, device.multiprocessorCount());
                assertEquals("9.0", device.computeCapability());
            }
        }
        assertTrue(Cuda.driverVersion() >= 12000);
        assertTrue(Cuda.driverPath().contains("libcuda"), Cuda.driverPath());
    }

    /** On a GPU this proves that a real driver refuses the identity attribute; on the stand-in, that it answers. */
    @StandInCapable
    @Test
    void theStandInIsRecognisedByItsAnswerAndARealDriverIsNot() {
        assertEquals(StandIn.active(), Cuda.isStandIn(), Cuda.driverPath());
    }

    @Test
    void theSelfTestLaunchesTheEmbeddedFatbinAndMatchesTheCpu() {
        assertNull(Main.selfTest());
    }
}
