package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;
import org.junit.jupiter.api.io.TempDir;

/**
 * The first {@code Handle.create} of a process runs no lambda or method reference of cuhandle's (issue 35's cold
 * start): the first one of a JVM sets up {@code java.lang.invoke} on the calling thread, about 15 ms in a fresh JVM,
 * so the classes on that path use named classes instead. A child JVM on the stand-in creates and closes a handle with
 * {@code -Xlog:class+load} (and, in a second child, makes the first calls a program makes after it); no
 * {@code dev.cuhandle...$$Lambda} class may be loaded. (The JDK's own lambdas, e.g. of
 * the System.Logger set-up on cuhandle's background thread, are not this test's business.)
 */
@EnabledIf("dev.cuhandle.StandIn#active")
class ColdPathLambdaTest {
    @Test
    void theFirstHandleCreateLoadsNoLambdaOfCuhandles(@TempDir Path dir) throws Exception {
        assertNoLambdas(dir);
    }

    /** The same for a process's first calls after it: upload, allocate, BLAS calls, synchronize, download, closes. */
    @Test
    void theFirstCallsOnAHandleLoadNoLambdaOfCuhandles(@TempDir Path dir) throws Exception {
        assertNoLambdas(dir, "first-calls");
    }

    /**
     * A process's first {@code Handle.create} (its library cached by an earlier start) loads none of the classes it
     * does not run: verifying Handle loaded DeviceBuffer, HostBuffer, Event and Graph, and verifying the loader loaded
     * the extraction's classes, a fraction of a millisecond each in a fresh JVM (issue 35's cold start).
     */
    @Test
    void theFirstHandleCreateLoadsNoClassItDoesNotRun(@TempDir Path dir) throws Exception {
        // The bundled library through the cache (an inherited -Dcuhandle.library.path would bypass it).
        List<String> options = List.of("-D" + StandIn.PROPERTY + "=true", "-D" + NativeLibraryCache.DIR_PROPERTY + "=" + dir.resolve("cache"),
                "-D" + NativeLoader.PATH_PROPERTY + "=", "-Xlog:class+load=info:stdout");
        ChildJvm filling = ChildJvm.run(dir, ColdPathLambdaMain.class, options);
        assertEquals(0, filling.exitCode, filling.output);
        ChildJvm child = ChildJvm.run(dir, ColdPathLambdaMain.class, options);
        assertEquals(0, child.exitCode, child.output);
        assertTrue(child.output.contains("dev.cuhandle.Handle ") && child.output.contains("dev.cuhandle.NativeLibraryCache "),
                "the class-load log lists the loader's and Handle's classes: " + child.output);
        assertTrue(child.output.contains("written by an earlier start"), "the second child loaded the copy the first one cached: " + child.output);
        List<String> loaded = new ArrayList<>();
        for (String unused : new String[] {"DeviceBuffer", "HostBuffer", "Event", "Graph", "NativeExtraction", "NativeExtraction$ExtractionFailure",
                "NativeExtraction$Load", "NativeExtraction$1"}) {
            if (child.output.contains("dev.cuhandle." + unused + " ")) {
                loaded.add(unused);
            }
        }
        assertTrue(loaded.isEmpty(), "the first Handle.create loaded classes it does not run: " + loaded + "\n" + child.output);
    }

    private static void assertNoLambdas(Path dir, String... args) throws Exception {
        ChildJvm child = ChildJvm.run(dir, ColdPathLambdaMain.class, List.of("-D" + StandIn.PROPERTY + "=true", "-Xlog:class+load=info:stdout"),
                args);
        assertEquals(0, child.exitCode, child.output);
        assertTrue(child.output.contains("dev.cuhandle.Handle "), "the class-load log lists cuhandle's classes: " + child.output);
        assertTrue(child.output.contains("created and closed"), child.output);
        List<String> lambdas = new ArrayList<>();
        for (String line : child.output.split("\n")) {
            if (line.contains("dev.cuhandle.") && line.contains("$$Lambda")) {
                lambdas.add(line.trim());
            }
        }
        assertTrue(lambdas.isEmpty(), "lambdas or method references of cuhandle on the first Handle.create's path (use a named class): " + lambdas);
    }
}
