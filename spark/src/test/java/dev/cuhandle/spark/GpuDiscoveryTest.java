package dev.cuhandle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The discovery script prints Spark's resource JSON for the devices cuhandle sees, or fails with the reason. */
class GpuDiscoveryTest {
    @BeforeAll
    static void standIn() {
        TestSpark.requireStandIn();
    }

    @Test
    void theJsonListsDeviceOrdinals() {
        assertEquals("{\"name\":\"gpu\",\"addresses\":[\"0\",\"1\",\"2\"]}", GpuDiscovery.json("gpu", 3));
        assertEquals("{\"name\":\"gpu\",\"addresses\":[]}", GpuDiscovery.json("gpu", 0));
    }

    @Test
    void theScriptPrintsTheStandInsTwoDevices(@TempDir Path temp) throws Exception {
        Result r = run(GpuAddressesTest.discoveryScript(temp), "2");
        assertEquals(0, r.exit, r.stderr);
        assertEquals("{\"name\":\"gpu\",\"addresses\":[\"0\",\"1\"]}", r.stdout.strip());
    }

    @Test
    void withoutDevicesTheScriptFailsWithTheReason(@TempDir Path temp) throws Exception {
        Result r = run(GpuAddressesTest.discoveryScript(temp), "0");
        assertEquals(1, r.exit, "exit code; stdout: " + r.stdout);
        assertEquals("", r.stdout, "nothing Spark could take for JSON");
        assertTrue(r.stderr.contains("cuhandle GPU discovery: CUDA is not usable") && r.stderr.contains("NO_DEVICE"), r.stderr);
    }

    private static final class Result {
        int exit;
        String stdout;
        String stderr;
    }

    private static Result run(Path script, String devices) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(List.of(script.toString()));
        pb.environment().put("CUHANDLE_STANDIN_DEVICES", devices);
        Process p = pb.start();
        p.getOutputStream().close();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("the discovery script did not finish in 60 s");
        }
        Result r = new Result();
        r.exit = p.exitValue();
        r.stdout = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        r.stderr = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        return r;
    }
}
