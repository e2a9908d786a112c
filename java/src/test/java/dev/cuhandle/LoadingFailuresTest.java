package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** H12 and the loader: failures become CudaExceptions that list what was tried, never crashes. Runs without a GPU. */
class LoadingFailuresTest {
    @TempDir
    Path tmp;

    @Test
    void theNativeLibraryIsExtractedFromTheClassPathAndDeletedAfterLoading() {
        assertTrue(Native.isLoaded(), Native.source());
        String source = Cuda.nativeLibrarySource();
        assertTrue(source.contains("extracted from /META-INF/native/linux-x86_64/libcuhandle.so") || source.contains("-Dcuhandle.library.path"), source);
        if (source.contains("extracted")) {
            Path file = Path.of(source.substring(0, source.indexOf(" (")));
            assertTrue(!Files.exists(file), "the extracted copy is unlinked after loading: " + file);
        }
    }

    @Test
    void aMissingLibraryOverrideGivesACudaExceptionListingThePathAndClassesStayUsable() throws Exception {
        Path missing = tmp.resolve("nowhere/libcuhandle.so");
        ChildJvm child = ChildJvm.run(tmp, ProbeMain.class, "-D" + NativeLoader.PATH_PROPERTY + "=" + missing);
        assertEquals(0, child.exitCode, child.output);
        assertTrue(child.output.contains("available=false"), child.output);
        assertTrue(child.output.contains("exception=CudaException"), child.output);
        assertTrue(child.output.contains(missing.toString()), "the message lists the path tried: " + child.output);
        assertTrue(child.output.contains("availableAgain=false"), "no NoClassDefFoundError on second use: " + child.output);
    }

    @Test
    void aCorruptLibraryGivesACudaExceptionListingThePath() throws Exception {
        Path corrupt = tmp.resolve("libcuhandle.so");
        Files.write(corrupt, "this is not an ELF file".getBytes());
        ChildJvm child = ChildJvm.run(tmp, ProbeMain.class, "-D" + NativeLoader.PATH_PROPERTY + "=" + corrupt);
        assertEquals(0, child.exitCode, child.output);
        assertTrue(child.output.contains("exception=CudaException") && child.output.contains(corrupt.toString()), child.output);
    }

    @Test
    void extractionGoesToTheConfiguredTemporaryDirectory() throws Exception {
        Path dir = Files.createDirectory(tmp.resolve("extract-here"));
        ChildJvm child = ChildJvm.run(tmp, ProbeMain.class, "-D" + NativeLoader.TMPDIR_PROPERTY + "=" + dir, "-D" + NativeLoader.PATH_PROPERTY + "=");
        assertEquals(0, child.exitCode, child.output);
        assertTrue(!child.output.contains("loading libcuhandle"), "the library loaded from the custom tmpdir: " + child.output);
        try (var files = Files.list(dir)) {
            assertEquals(0, files.count(), "the extracted file was removed after loading");
        }
    }

    @Test
    void aMissingDriverGivesACudaExceptionNamingThePathTriedAndNoCrash() throws Exception {
        Path missing = tmp.resolve("no/libcuda.so.1");
        ChildJvm child = ChildJvm.run(tmp, ProbeMain.class, "-D" + Native.DRIVER_PROPERTY + "=" + missing);
        assertEquals(0, child.exitCode, child.output);
        assertTrue(child.output.contains("available=false"), child.output);
        assertTrue(child.output.contains("error=NOT_FOUND"), child.output);
        assertTrue(child.output.contains(missing.toString()) && child.output.contains("libcuda was not found"), child.output);
    }

    @Test
    void aFileThatIsNoDriverIsRefusedByName() throws Exception {
        Path fake = tmp.resolve("libcuda.so.1");
        Files.write(fake, new byte[] {1, 2, 3});
        ChildJvm child = ChildJvm.run(tmp, ProbeMain.class, "-D" + Native.DRIVER_PROPERTY + "=" + fake);
        assertTrue(child.output.contains("error=NOT_FOUND") && child.output.contains(fake.toString()), child.output);
    }
}
