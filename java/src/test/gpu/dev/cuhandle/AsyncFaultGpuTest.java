package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Rule A1 on a real fault: futures outstanding behind a kernel that faults complete exceptionally
 * with a sticky {@link CudaException} (the driver runs no host functions after a fault, so this
 * checks the completion thread's sweep), in a child JVM ({@link AsyncFaultChild}). Not
 * {@code @StandInCapable}: kernels do not execute there (AsyncGpuTest injects the fault instead).
 */
@GpuTest
class AsyncFaultGpuTest extends HandleGpuTestBase {
    @Test
    void a1_futuresBehindAFaultingKernelCompleteExceptionallyWithAStickyError(@TempDir Path dir) throws Exception {
        ChildRun run = new ChildRun(ChildJvm.run(dir, AsyncFaultChild.class, List.of()));
        run.assertNoCrash("A1: a JVM whose futures waited on a faulting kernel");
        List<String> lines = run.linesStartingWith(AsyncFaultChild.RESULT);
        lines.forEach(System.out::println);
        assertEquals(0, run.exitCode, "A1: the child reported a broken guarantee" + run.context());
    }
}
