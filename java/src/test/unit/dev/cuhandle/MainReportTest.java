package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The main job (java -jar): a report, then healthy (GPU) or a one-line reason and exit 1. */
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
            assertEquals(1, child.exitCode, child.output);
            assertTrue(child.lastLine().startsWith("cuhandle: NOT HEALTHY: self-test"), child.lastLine());
        } else if (Cuda.isAvailable()) {
            assertEquals(0, child.exitCode, child.output);
            assertEquals("cuhandle: healthy", child.lastLine());
            assertTrue(child.output.contains("all 1048576 elements match"), child.output);
        } else {
            assertEquals(1, child.exitCode, child.output);
            assertTrue(child.lastLine().startsWith("cuhandle: NOT HEALTHY: "), child.lastLine());
            assertTrue(child.lastLine().contains(Cuda.unavailableReason()), child.lastLine());
        }
    }

    @Test
    void withoutADriverTheReportSaysWhyAndExitsNonZero() throws Exception {
        ChildJvm child = ChildJvm.run(tmp, Main.class, "-D" + Native.DRIVER_PROPERTY + "=/nonexistent/libcuda.so.1");
        assertEquals(1, child.exitCode, child.output);
        assertTrue(child.lastLine().startsWith("cuhandle: NOT HEALTHY: ") && child.lastLine().contains("/nonexistent/libcuda.so.1"), child.lastLine());
    }
}
