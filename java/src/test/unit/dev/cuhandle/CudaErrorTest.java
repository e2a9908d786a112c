package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class CudaErrorTest {
    @Test
    void everyCodeRoundTripsAndNamesAreUnique() {
        Set<Integer> codes = new HashSet<>();
        Set<String> names = new HashSet<>();
        for (CudaError e : CudaError.values()) {
            assertTrue(codes.add(e.code()), "duplicate code " + e.code());
            assertTrue(names.add(e.cName()), "duplicate name " + e.cName());
            assertSame(e, CudaError.fromCode(e.code()));
            assertEquals(e.cName(), CudaError.nameOf(e.code()));
            assertTrue(e.cName().equals("CUDA_SUCCESS") || e.cName().equals("CUDA_ERROR_" + e.name()), e.cName());
            assertTrue(!e.description().isEmpty(), e.name());
        }
        assertEquals(101, CudaError.values().length, "CUDA 13.0's cuda.h has 101 CUresult values");
        assertNull(CudaError.fromCode(12345));
        assertNull(CudaError.fromCode(-1));
        assertTrue(CudaError.nameOf(12345).contains("12345"));
        assertEquals(100, CudaError.NO_DEVICE.code());
        assertEquals(700, CudaError.ILLEGAL_ADDRESS.code());
    }

    @Test
    void javaAndRustAgreeOnWhichErrorsAreSticky() {
        Native.ensureLoaded();
        Set<Integer> rust = Arrays.stream(NativeApi.stickyCodes()).boxed().collect(Collectors.toSet());
        Set<Integer> java = Arrays.stream(CudaError.values()).filter(CudaError::isSticky).map(CudaError::code).collect(Collectors.toSet());
        assertEquals(java, rust);
        assertTrue(new CudaException(700, "cuStreamSynchronize", "x").isSticky());
        assertTrue(!new CudaException(2, "cuMemAlloc", "x").isSticky());
    }

    @Test
    void aCudaExceptionCarriesCodeOperationAndMessage() {
        CudaException e = new CudaException(100, "cuInit", "CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected");
        assertEquals(100, e.code());
        assertEquals(CudaError.NO_DEVICE, e.error());
        assertEquals("cuInit", e.operation());
        assertEquals("cuInit failed: CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected", e.getMessage());
        assertNull(new CudaException(4242, "x", "y").error());
        assertEquals("", e.driverLog(), "no driver log given");
    }

    @Test
    void theDriversLogIsInTheMessageAndSurvivesARethrow() {
        CudaException e = new CudaException(1, "cuLaunchKernel", "CUDA_ERROR_INVALID_VALUE (1): invalid argument",
                "cuLaunchKernel: the block dimension 2048 exceeds 1024");
        assertEquals("cuLaunchKernel: the block dimension 2048 exceeds 1024", e.driverLog());
        assertEquals("cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE (1): invalid argument; the driver's log: "
                + "cuLaunchKernel: the block dimension 2048 exceeds 1024", e.getMessage());
        CudaException again = e.rethrown();
        assertEquals(e.getMessage(), again.getMessage());
        assertEquals(e.driverLog(), again.driverLog());
        assertSame(e, again.getCause());
        CudaException outer = e.within("waiting for GPU work");
        assertEquals("waiting for GPU work", outer.operation());
        assertEquals(e.driverLog(), outer.driverLog(), "a wrapper keeps the driver's log");
        assertEquals("waiting for GPU work failed: cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE (1): invalid argument; "
                + "the driver's log: cuLaunchKernel: the block dimension 2048 exceeds 1024", outer.getMessage(), "the log once, at the end");
        assertSame(e, outer.getCause());
        assertEquals(e.code(), outer.code());
    }
}
