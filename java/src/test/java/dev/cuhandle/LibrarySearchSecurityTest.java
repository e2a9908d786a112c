package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 26 (4): libcuda and libnvrtc were opened by bare name first, so an empty {@code LD_LIBRARY_PATH} entry
 * (which means the current folder) loaded a {@code ./libcuda.so.1} and ran its constructor; relative configured
 * paths were resolved against the working directory. Each case plants the attacker's library (whose constructor
 * writes a marker file) in a child JVM's working directory and checks it never runs.
 */
class LibrarySearchSecurityTest {
    @TempDir
    Path tmp;

    /** A working directory holding the planted library under each of {@code names}, and where its marker would go. */
    private Path workingDirectoryWith(AttackTools tools, String... names) throws Exception {
        Path work = Files.createDirectories(tmp.resolve("work"));
        for (String name : names) {
            Files.copy(tools.plantedLibrary, work.resolve(name));
        }
        return work;
    }

    private ChildJvm probe(Path work, Map<String, String> environment, String mode, String... options) throws Exception {
        Map<String, String> env = new java.util.HashMap<>(environment);
        env.put(AttackTools.MARKER_ENV, tmp.resolve("marker").toString());
        return ChildJvm.run(work, env, SecurityProbeMain.class, List.of(options), mode);
    }

    private void plantedCodeNeverRan(ChildJvm child) {
        assertFalse(Files.exists(tmp.resolve("marker")), "the planted library ran in the child JVM: " + child.output);
        assertFalse(child.output.contains("unexpected="), child.output);
    }

    @Test
    void anEmptyLdLibraryPathEntryDoesNotLoadTheDriverFromTheWorkingDirectory() throws Exception {
        try (AttackTools tools = AttackTools.build()) {
            Path work = workingDirectoryWith(tools, "libcuda.so.1", "libcuda.so");
            ChildJvm child = probe(work, Map.of("LD_LIBRARY_PATH", ":/nonexistent/cuhandle-test"), "load", "-D" + Native.DRIVER_PROPERTY + "=");
            plantedCodeNeverRan(child);
            assertTrue(child.output.contains("LD_LIBRARY_PATH has an empty entry that the dynamic linker resolves against the current folder"), child.output);
        }
    }

    @Test
    void anEmptyLdLibraryPathEntryDoesNotLoadNvrtcFromTheWorkingDirectory() throws Exception {
        try (AttackTools tools = AttackTools.build()) {
            Path work = workingDirectoryWith(tools, "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", "libnvrtc.so.11.2");
            ChildJvm child = probe(work, Map.of("LD_LIBRARY_PATH", "/nonexistent/cuhandle-test::"), "compile", "-D" + Native.NVRTC_PROPERTY + "=");
            plantedCodeNeverRan(child);
        }
    }

    @Test
    void relativeConfiguredPathsAreRefusedNotResolvedAgainstTheWorkingDirectory() throws Exception {
        try (AttackTools tools = AttackTools.build()) {
            Path work = workingDirectoryWith(tools, "libcuda.so.1", "libnvrtc.so");
            ChildJvm property = probe(work, Map.of(), "load", "-D" + Native.DRIVER_PROPERTY + "=./libcuda.so.1");
            plantedCodeNeverRan(property);
            assertTrue(property.output.contains("error=INVALID_VALUE")
                    && property.output.contains("-Dcuhandle.driver.path=./libcuda.so.1 is not an absolute path"), property.output);
            ChildJvm env = probe(work, Map.of("CUHANDLE_DRIVER_PATH", "./libcuda.so.1"), "load", "-D" + Native.DRIVER_PROPERTY + "=");
            plantedCodeNeverRan(env);
            assertTrue(env.output.contains("CUHANDLE_DRIVER_PATH=./libcuda.so.1 is not an absolute path"), env.output);
            ChildJvm nvrtc = probe(work, Map.of(), "compile", "-D" + Native.NVRTC_PROPERTY + "=./libnvrtc.so");
            plantedCodeNeverRan(nvrtc);
            assertTrue(nvrtc.output.contains("-Dcuhandle.nvrtc.path=./libnvrtc.so is not an absolute path"), nvrtc.output);
        }
    }
}
