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
}
