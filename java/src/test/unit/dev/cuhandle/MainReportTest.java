package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The main job (java -jar): a report, then healthy (GPU) or a one-line reason, the next steps and exit 1. */
class MainReportTest {
    @TempDir
    Path tmp;

    @Test
    void theReportRunsAndItsExitCodeMatchesTheMachine() throws Exception {
        ChildJvm child = ChildJvm.run(tmp, Main.class);
        assertTrue(child.output.contains("environment report") && child.output.contains("native library:"), child.output);
        if (StandIn.active()) {
            // The CPU stand-in driver reports its device, but kernels do not execute there, so the
            // self-test's saxpy cannot match and the job must say so rather than claim health.
            assertTrue(child.output.contains("cuhandle stand-in device 0"), child.output);
            assertTrue(child.output.contains("device memory: stream-ordered pool (cuMemAllocFromPoolAsync, cuMemFreeAsync), release threshold unlimited"),
                    "the report says how device memory is allocated (rule M1): " + child.output);
            assertEquals(1, child.exitCode, child.output);
            assertTrue(reason(child).startsWith("cuhandle: NOT HEALTHY: self-test"), child.output);
            assertEndsWithNextSteps(child, Diagnosis.SELF_TEST);
        } else if (Cuda.isAvailable()) {
            assertEquals(0, child.exitCode, child.output);
            assertEquals("cuhandle: healthy", child.lastLine());
            assertTrue(child.output.contains("all 1048576 elements match"), child.output);
        } else {
            assertEquals(1, child.exitCode, child.output);
            assertTrue(reason(child).contains(Cuda.unavailableReason()), child.output);
            if (Cuda.unavailableReason().contains("CUDA_ERROR_NO_DEVICE")) {
                // A driver library without a GPU (as the CUDA toolkit's packages install): the advice is
                // nvidia-smi and the GPU bundle, never an update of a driver that is new enough.
                assertEndsWithNextSteps(child, Diagnosis.NO_DEVICE);
                assertFalse(child.output.toLowerCase().contains("update the nvidia driver"), child.output);
            }
        }
    }

    @Test
    void withoutADriverTheReportSaysWhyAndExitsNonZero() throws Exception {
        ChildJvm child = ChildJvm.run(tmp, Main.class, "-D" + Native.DRIVER_PROPERTY + "=/nonexistent/libcuda.so.1");
        assertEquals(1, child.exitCode, child.output);
        assertTrue(reason(child).contains("/nonexistent/libcuda.so.1"), child.output);
        assertEndsWithNextSteps(child, Diagnosis.NO_DRIVER);
    }

    @Test
    void driverFailuresGetTheAdviceThatFitsThem() {
        assertEquals(Diagnosis.NO_DRIVER, Diagnosis.ofDriverFailure(new CudaException(CudaError.FILE_NOT_FOUND.code(), "loading", "libcuda was not found")));
        assertEquals(Diagnosis.NO_DEVICE, Diagnosis.ofDriverFailure(new CudaException(CudaError.NO_DEVICE.code(), "cuInit", "no device")));
        assertEquals(Diagnosis.OLD_DRIVER, Diagnosis.ofDriverFailure(new CudaException(CudaError.NOT_SUPPORTED.code(), "loading",
                "/usr/lib/libcuda.so.1 is a driver for CUDA 11.8; cuhandle needs CUDA 12.0 or newer: update the NVIDIA driver")));
        assertEquals(Diagnosis.DRIVER_ERROR, Diagnosis.ofDriverFailure(new CudaException(999_999, "cuInit", "a code this version does not know")));
        for (Diagnosis d : Diagnosis.values()) {
            boolean update = d.nextSteps().stream().anyMatch(s -> s.toLowerCase().contains("update the nvidia driver"));
            assertEquals(d == Diagnosis.OLD_DRIVER, update, d + " " + d.nextSteps());
            assertEquals(d != Diagnosis.SELF_TEST, d.nextSteps().contains(Diagnosis.GPU_BUNDLE), d + " " + d.nextSteps());
        }
        assertTrue(Diagnosis.NO_DEVICE.nextSteps().get(0).contains("nvidia-smi"), Diagnosis.NO_DEVICE.nextSteps().toString());
    }

    /** The reason line; the report's last lines are the next steps. */
    private static String reason(ChildJvm child) {
        return Arrays.stream(child.output.split("\\R")).filter(l -> l.startsWith(Main.NOT_HEALTHY)).findFirst()
                .orElseThrow(() -> new AssertionError("no '" + Main.NOT_HEALTHY + "' line in:\n" + child.output));
    }

    private static void assertEndsWithNextSteps(ChildJvm child, Diagnosis diagnosis) {
        List<String> lines = Arrays.asList(child.output.strip().split("\\R"));
        int at = lines.indexOf(reason(child));
        assertEquals("What to do next:", lines.get(at + 1), child.output);
        assertEquals(diagnosis.nextSteps().size(), lines.size() - at - 2, child.output);
        for (int i = 0; i < diagnosis.nextSteps().size(); i++) {
            assertEquals("  - " + diagnosis.nextSteps().get(i), lines.get(at + 2 + i), child.output);
        }
    }
}
