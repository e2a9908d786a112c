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
 * SM partitions degrade clearly (rule P1): on a driver before CUDA 12.4 (the stand-in reports 12.3 in a child JVM,
 * since the driver is loaded once per process) {@link Device#smPartitionSupport()} says why, and
 * {@link Device#splitSms(int)} throws {@link CudaError#NOT_SUPPORTED} naming the version green contexts need and the
 * driver's; on 12.4 the split works.
 */
@EnabledIf("dev.cuhandle.StandIn#active")
class SmPartitionOldDriverTest {
    @Test
    void aCuda12_3DriverIsRefusedNamingTheVersionPartitionsNeed(@TempDir Path dir) throws Exception {
        String output = on(dir, "12030");
        assertContains(output, "support: ", "CUDA 12.4", "CUDA 12.3");
        assertContains(output, "split: CudaException NOT_SUPPORTED", "SM partitions need green contexts", "update the NVIDIA driver");
    }

    @Test
    void aCuda12_4DriverSplits(@TempDir Path dir) throws Exception {
        assertContains(on(dir, "12040"), "support: \n", "split: SmPartitions[device 0: 132 SMs = 64 + 64 + 4 left over");
    }

    /** The child's output on a stand-in of CUDA {@code version}, checked to have exited normally. */
    private static String on(Path dir, String version) throws Exception {
        ChildJvm child = ChildJvm.run(dir, Map.of("CUHANDLE_STANDIN_VERSION", version), SmPartitionOldDriverMain.class,
                List.of("-D" + StandIn.PROPERTY + "=true"));
        assertEquals(0, child.exitCode, child.output);
        return child.output;
    }
}
