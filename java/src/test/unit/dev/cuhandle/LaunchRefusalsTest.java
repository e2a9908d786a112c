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
 * Cooperative launches and clusters are refused with a clear exception on devices that cannot run them (issue
 * 11 item 4). Device properties are read once per process, so a child JVM runs on a stand-in device configured as
 * an Ampere without cooperative launch ({@code CUHANDLE_STANDIN_CC=80}, {@code CUHANDLE_STANDIN_COOPERATIVE=0}).
 */
@EnabledIf("dev.cuhandle.StandIn#active")
class LaunchRefusalsTest {
    @Test
    void cooperativeAndClusterLaunchesAreRefusedWhereTheDeviceCannot(@TempDir Path dir) throws Exception {
        ChildJvm child = ChildJvm.run(dir, Map.of("CUHANDLE_STANDIN_CC", "80", "CUHANDLE_STANDIN_COOPERATIVE", "0"), LaunchRefusalsMain.class, List.of());
        assertEquals(0, child.exitCode, child.output);
        assertContains(child.output, "cooperative: java.lang.UnsupportedOperationException: cooperative launch of kernel 'cuh_test_cluster_neighbour' refused",
                "CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH is 0");
        assertContains(child.output, "cluster: java.lang.UnsupportedOperationException: cluster launch of kernel 'cuh_test_cluster_neighbour' refused",
                "compute capability 8.0", "9.0 or newer");
        assertContains(child.output, "plain: launched");
    }
}
