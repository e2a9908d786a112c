package dev.cuhandle;

import static dev.cuhandle.KernelLaunchArgumentsTest.assertContains;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;
import org.junit.jupiter.api.io.TempDir;

/**
 * A driver older than CUDA 12.0 (no context-independent loading) is refused when cuhandle loads it, with a
 * message naming its version and what to do (docs/handles.md, "Limits"). The stand-in reports CUDA 11.8
 * ({@code CUHANDLE_STANDIN_VERSION=11080}) in a child JVM, since the driver is loaded once per process.
 */
@EnabledIf("dev.cuhandle.StandIn#active")
class OldDriverTest {
    @Test
    void aCuda11DriverIsRefusedWithItsVersionAndTheFix(@TempDir Path dir) throws Exception {
        ChildJvm child = ChildJvm.run(dir, Map.of("CUHANDLE_STANDIN_VERSION", "11080"), OldDriverMain.class, List.of());
        assertEquals(0, child.exitCode, child.output);
        assertContains(child.output, "refused: dev.cuhandle.CudaException", "is a driver for CUDA 11.8",
                "cuhandle needs CUDA 12.0 or newer", "update the NVIDIA driver");
    }

    @Test
    void aCuda12DriverIsAccepted(@TempDir Path dir) throws Exception {
        ChildJvm child = ChildJvm.run(dir, Map.of("CUHANDLE_STANDIN_VERSION", "12000"), OldDriverMain.class, List.of());
        assertEquals(0, child.exitCode, child.output);
        assertContains(child.output, "accepted: ");
    }
}
