package dev.cuhandle.junit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;

/** The decision of {@link GpuExtension} for each outcome, with a stubbed reason instead of the driver. */
class GpuExtensionTest {
    private static final String REASON = "CUDA driver library not found (libcuda.so.1)";

    @Test
    void aUsableGpuEnablesTheTest() {
        ConditionEvaluationResult result = GpuExtension.decide(null, false);
        assertFalse(result.isDisabled());
        assertEquals(Optional.of("a CUDA GPU is available"), result.getReason());
    }

    @Test
    void aUsableGpuEnablesTheTestWhenAGpuIsRequiredToo() {
        assertFalse(GpuExtension.decide(null, true).isDisabled());
    }

    @Test
    void noGpuSkipsTheTestWithTheReason() {
        ConditionEvaluationResult result = GpuExtension.decide(REASON, false);
        assertTrue(result.isDisabled());
        assertEquals(Optional.of("no usable CUDA GPU: " + REASON), result.getReason());
    }

    @Test
    void noGpuFailsTheTestWhenAGpuIsRequired() {
        AssertionError e = assertThrows(AssertionError.class, () -> GpuExtension.decide(REASON, true));
        assertEquals("-Dcuhandle.requireGpu=true but no CUDA GPU is usable: " + REASON, e.getMessage());
    }

    @Test
    void theStandInSkipsKernelTestsWithTheReason() {
        ConditionEvaluationResult result = GpuExtension.decide(GpuExtension.STAND_IN, false);
        assertTrue(result.isDisabled());
        assertEquals(Optional.of("no usable CUDA GPU: kernels do not execute on the CPU stand-in driver"), result.getReason());
    }

    @Test
    void deniedNativeAccessFailsEvenWhenSkippingIsAllowed() {
        // A build that forgot the flag must not pass by skipping every GPU test.
        String denied = "loading libcuhandle: the JVM denied native access: run java with --enable-native-access=ALL-UNNAMED";
        AssertionError e = assertThrows(AssertionError.class, () -> GpuExtension.decide(denied, false));
        assertTrue(e.getMessage().contains("--enable-native-access=ALL-UNNAMED"), e.getMessage());
    }
}
