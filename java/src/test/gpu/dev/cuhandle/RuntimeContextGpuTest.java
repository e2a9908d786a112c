package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CUDA runtime's side of contexts (docs/handles.md, "The runtime's side"), measured through
 * JCuda's runtime API: when the runtime creates or adopts a context, that runtime allocations
 * follow the current context, what {@code cudaDeviceReset} does to a cuhandle handle on the same
 * primary context, and a runtime user and cuhandle sharing one primary context. Each scenario runs
 * in a fresh child JVM ({@link RuntimeContextChild}): "before the first runtime call" needs a fresh
 * process, and {@code cudaDeviceReset} destroys the primary context of everything in the process.
 *
 * <p>Not {@link StandInCapable}: JCuda loads the real libcuda, not the stand-in.
 */
@GpuTest
class RuntimeContextGpuTest {

    private static void runChild(Path dir, String mode) throws Exception {
        ChildJvm child = ChildJvm.run(dir, RuntimeContextChild.class, List.of(), mode);
        String context = "\ncommand: " + String.join(" ", child.command) + "\n--- child output ---\n" + child.output + "--- end ---";
        assumeTrue(child.exitCode != RuntimeContextChild.NO_JCUDA, "JCuda's natives cannot load here" + context);
        for (String line : child.output.split("\\R")) {
            if (line.startsWith(RuntimeContextChild.OBSERVATION)) {
                System.out.println("[" + mode + "] " + line);
            }
        }
        if (!child.crashFiles.isEmpty() || child.output.contains("A fatal error has been detected")) {
            fail(mode + ": the child JVM crashed " + child.crashFiles + context);
        }
        StringBuilder broken = new StringBuilder();
        for (String line : child.output.split("\\R")) {
            if (line.startsWith(RuntimeContextChild.CHECK_FAILED)) {
                broken.append("\n  ").append(line.substring(RuntimeContextChild.CHECK_FAILED.length()));
            }
        }
        if (broken.length() > 0) {
            fail(mode + ": claims that did not hold:" + broken + context);
        }
        assertTrue(child.output.contains(RuntimeContextChild.DONE), mode + ": the scenario did not run to its end" + context);
        assertEquals(0, child.exitCode, mode + ": the child JVM's exit status" + context);
    }

    /**
     * CUDA 12+: {@code cudaSetDevice(0)} makes the primary context active and current on the
     * calling thread, so {@code Handle.create()} afterwards binds (and retains) the runtime's
     * primary context (H1) and leaves it current (H4).
     */
    @Test
    @Timeout(value = 150, unit = TimeUnit.SECONDS)
    void cudaSetDevice_initialisesThePrimaryContextAndMakesItCurrent_handleBindsIt(@TempDir Path dir) throws Exception {
        runChild(dir, "setDevice");
    }

    /** {@code cudaFree(0)} initialises the primary context and makes it current, on every thread that calls it. */
    @Test
    @Timeout(value = 150, unit = TimeUnit.SECONDS)
    void cudaFreeZero_makesThePrimaryContextCurrent_onEachThreadThatCallsIt(@TempDir Path dir) throws Exception {
        runChild(dir, "cudaFreeZero");
    }

    /**
     * Runtime calls work in whatever context is current: {@code cudaMalloc} with a user context
     * current allocates there (and cuhandle, binding the same current context, computes on that
     * memory); with nothing current the runtime uses the primary context and makes it current.
     */
    @Test
    @Timeout(value = 150, unit = TimeUnit.SECONDS)
    void runtimeAllocations_belongToTheCurrentContext(@TempDir Path dir) throws Exception {
        runChild(dir, "followsCurrent");
    }

    /**
     * A runtime user and cuhandle share one primary context: a buffer written by {@code cudaMemcpy}
     * is computed on and read by cuhandle, a cuhandle buffer is read by {@code cudaMemcpy}, the
     * runtime's context stays current, and closing the handle leaves the runtime working.
     */
    @Test
    @Timeout(value = 150, unit = TimeUnit.SECONDS)
    void runtimeAndCuhandleShareOnePrimaryContext(@TempDir Path dir) throws Exception {
        runChild(dir, "shared");
    }

    /**
     * {@code cudaDeviceReset} destroys the primary context under a cuhandle handle that retains it:
     * the handle's next call throws a {@link CudaException} saying the context was reset (H8), its
     * close succeeds, the runtime's next call re-creates the primary context (new id) and a new
     * handle works on it; the stale handle's release does not take the runtime's reference.
     */
    @Test
    @Timeout(value = 150, unit = TimeUnit.SECONDS)
    void cudaDeviceReset_underAHandle_failsCleanly_newHandleWorksWithTheRuntime(@TempDir Path dir) throws Exception {
        runChild(dir, "deviceReset");
    }
}
