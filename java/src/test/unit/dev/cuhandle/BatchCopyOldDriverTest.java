package dev.cuhandle;

import static dev.cuhandle.KernelLaunchArgumentsTest.assertContains;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;
import org.junit.jupiter.api.io.TempDir;

/**
 * Batches of arrays ({@link Handle#uploadAll(float[][], DeviceBuffer[])}) on drivers with and without
 * {@code cuMemcpyBatchAsync}: the stand-in reports CUDA 12.6 (no batch entry point: one copy per array piece) or
 * 12.8 (the entry point, through {@code cuGetProcAddress}) in a child JVM, since the driver is loaded once per
 * process. Either way the arrays come back exact; the stand-in's count of batch calls shows which path ran.
 */
@EnabledIf("dev.cuhandle.StandIn#active")
class BatchCopyOldDriverTest {
    @Test
    void aCuda12_6DriverCopiesPieceByPiece(@TempDir Path dir) throws Exception {
        assertContains(batchOn(dir, "12060"), "exact: true batch calls: 0");
    }

    @Test
    void aCuda12_8DriverTakesTheBatchEntryPoint(@TempDir Path dir) throws Exception {
        String output = batchOn(dir, "12080");
        assertContains(output, "exact: true batch calls: ");
        Matcher calls = Pattern.compile("batch calls: (\\d+)").matcher(output);
        assertTrue(calls.find() && Integer.parseInt(calls.group(1)) > 0, "the 12.8 stand-in counted no batch call: " + output);
    }

    /** The child's output on a stand-in of CUDA {@code version}, checked to have exited normally. */
    private static String batchOn(Path dir, String version) throws Exception {
        ChildJvm child = ChildJvm.run(dir, Map.of("CUHANDLE_STANDIN_VERSION", version), BatchCopyOldDriverMain.class,
                List.of("-D" + StandIn.PROPERTY + "=true"), String.valueOf(System.nanoTime()));
        assertEquals(0, child.exitCode, child.output);
        return child.output;
    }
}
