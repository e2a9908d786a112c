package dev.cuhandle;

import static dev.cuhandle.KernelLaunchArgumentsTest.assertContains;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;
import org.junit.jupiter.api.io.TempDir;

/**
 * The driver's initialisation starts on a thread of its own when the process's first call needs it
 * ({@link DriverStart}, issue 35's cold start), on the stand-in in child JVMs: the driver is initialised once
 * per process.
 */
@EnabledIf("dev.cuhandle.StandIn#active")
class DriverStartTest {
    private static final List<String> STAND_IN = List.of("-D" + StandIn.PROPERTY + "=true");

    /**
     * Which thread gets to {@code cuInit} first is up to the scheduler (the caller finishes configuring the library
     * meanwhile, about a millisecond), so of three fresh processes at least one must have had the driver
     * initialised by the start thread; with the stand-in's first {@code cuInit} taking 200 ms, the caller then
     * waits for that initialisation and its handle works.
     */
    @Test
    void theFirstHandleCreateHasTheDriverInitialisedOnAThreadOfItsOwn(@TempDir Path dir) throws Exception {
        List<String> outputs = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            ChildJvm child = ChildJvm.run(dir, Map.of("CUHANDLE_STANDIN_INIT_MS", "200"), DriverStartMain.class, STAND_IN, "create");
            assertEquals(0, child.exitCode, child.output);
            assertContains(child.output, "stream: ");
            outputs.add(child.output);
            if (child.output.contains("caller initialised: 0")) {
                return;
            }
            assertContains(child.output, "caller initialised: 1");
        }
        throw new AssertionError("in three processes the caller of the first Handle.create initialised the driver itself:\n" + outputs);
    }

    /** With the stand-in's first {@code cuInit} taking 500 ms, a start thread begun by mistake would still be alive. */
    @Test
    void aFirstCallThatNeedsNoInitialisedDriverStartsNothing(@TempDir Path dir) throws Exception {
        ChildJvm child = ChildJvm.run(dir, Map.of("CUHANDLE_STANDIN_INIT_MS", "500"), DriverStartMain.class, STAND_IN, "version-first");
        assertEquals(0, child.exitCode, child.output);
        assertContains(child.output, "start thread after driverVersion: false", "devices: ", "caller initialised: 1");
    }

    /**
     * A failed {@code cuInit} reaches the first {@code Handle.create} as before (whichever thread made it: the
     * start thread usually does), and the JVM, with the start thread not a daemon, still exits.
     */
    @Test
    void aFailedInitialisationIsThrownByTheFirstHandleCreate(@TempDir Path dir) throws Exception {
        ChildJvm child = ChildJvm.run(dir, Map.of("CUHANDLE_STANDIN_DEVICES", "0"), DriverStartMain.class, STAND_IN, "create");
        assertEquals(0, child.exitCode, child.output);
        assertContains(child.output, "failed: dev.cuhandle.CudaException", "CUDA_ERROR_NO_DEVICE");
        assertTrue(!child.output.contains("Exception in thread"), child.output);
    }
}
