package dev.cuhandle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
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

    /**
     * Issue 38 (3): the script ran the {@code java} of an empty {@code PATH} entry (the working directory) and passed
     * relative class path elements on. Now a planted {@code java} there never runs, and a relative element is refused.
     */
    @Test
    void theScriptRunsNoJavaAndLoadsNoClassesFromTheWorkingDirectory(@TempDir Path temp) throws Exception {
        Path marker = temp.resolve("ran");
        Path planted = temp.resolve("java");
        java.nio.file.Files.writeString(planted, "#!/bin/sh\necho planted > '" + marker + "'\nexit 7\n");
        java.nio.file.Files.setPosixFilePermissions(planted, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        Path script = java.nio.file.Paths.get("bin", "cuhandle-gpu-discovery.sh").toAbsolutePath();
        String javaBin = java.nio.file.Paths.get(System.getProperty("java.home"), "bin").toString();
        Result ok = run(temp, Map.of("PATH", ":" + javaBin + ":/usr/bin:/bin", "CUHANDLE_CLASSPATH", GpuAddressesTest.discoveryClassPath(),
                "CUHANDLE_STANDIN_DEVICES", "2"), "/bin/sh", script.toString());
        assertEquals(0, ok.exit, ok.stderr);
        assertEquals("{\"name\":\"gpu\",\"addresses\":[\"0\",\"1\"]}", ok.stdout.strip());
        assertTrue(!java.nio.file.Files.exists(marker), "the java in the working directory ran");
        for (String cp : List.of("classes:" + GpuAddressesTest.discoveryClassPath(), GpuAddressesTest.discoveryClassPath() + "::/x.jar")) {
            Result refused = run(temp, Map.of("CUHANDLE_CLASSPATH", cp, "CUHANDLE_STANDIN_DEVICES", "2"), "/bin/sh", script.toString());
            assertEquals(1, refused.exit, refused.stdout);
            assertTrue(refused.stderr.contains("is not an absolute path (an empty or relative one would load classes from the working directory)"),
                    refused.stderr);
        }
    }

    private static final class Result {
        int exit;
        String stdout;
        String stderr;
    }

    private static Result run(Path script, String devices) throws IOException, InterruptedException {
        return run(null, Map.of("CUHANDLE_STANDIN_DEVICES", devices), script.toString());
    }

    private static Result run(Path workingDirectory, Map<String, String> environment, String... command) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(List.of(command));
        pb.environment().putAll(environment);
        if (workingDirectory != null) {
            pb.directory(workingDirectory.toFile());
        }
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
