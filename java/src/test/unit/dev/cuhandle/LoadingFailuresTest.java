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
        assertTrue(source.startsWith("class path resource /META-INF/native/linux-x86_64/libcuhandle.so (extracted to ")
                || source.startsWith("class path resource /META-INF/native/linux-x86_64/libcuhandle.so (its per-user cached copy ")
                || source.contains("-Dcuhandle.library.path"), source);
        if (source.contains("extracted to ")) {
            String rest = source.substring(source.indexOf("extracted to ") + "extracted to ".length());
            Path file = Path.of(rest.substring(0, rest.indexOf(", a temporary copy deleted once loaded")));
            assertTrue(!Files.exists(file), "the extracted copy is unlinked after loading, as the report says: " + file);
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
        ChildJvm child = ChildJvm.run(tmp, ProbeMain.class, ChildJvm.NO_LIBRARY_CACHE, "-D" + NativeLoader.TMPDIR_PROPERTY + "=" + dir, "-D" + NativeLoader.PATH_PROPERTY + "=");
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
        assertTrue(child.output.contains("error=FILE_NOT_FOUND"), child.output);
        assertTrue(child.output.contains(missing.toString()) && child.output.contains("libcuda was not found"), child.output);
    }

    /** Issue 9 (9): the dynamic linker's reason is kept, and the code says the file exists but would not load. */
    @Test
    void aFileThatExistsButCannotLoadKeepsTheLinkersReason() throws Exception {
        Path fake = tmp.resolve("libcuda.so.1");
        Files.write(fake, new byte[] {1, 2, 3});
        ChildJvm child = ChildJvm.run(tmp, ProbeMain.class, "-D" + Native.DRIVER_PROPERTY + "=" + fake);
        assertTrue(child.output.contains("error=SHARED_OBJECT_INIT_FAILED") && child.output.contains(fake.toString()), child.output);
        assertTrue(child.output.contains("exists but could not be loaded") && child.output.contains("too short"), child.output);
    }

    /** A shared library that loads anywhere but is neither a CUDA driver nor a libcuhandle. */
    private static Path libc() throws java.io.IOException {
        try (var files = Files.list(Path.of("/lib/x86_64-linux-gnu"))) {
            Path libc = files.filter(p -> p.getFileName().toString().startsWith("libc.so.")).findFirst().orElse(null);
            org.junit.jupiter.api.Assumptions.assumeTrue(libc != null, "no /lib/x86_64-linux-gnu/libc.so.* on this machine");
            return libc;
        }
    }

    /** Issue 9 (9): a library that loads but is no driver is named by the entry point it lacks, not called "older than 12.0" alone. */
    @Test
    void aLibraryThatIsNoDriverIsRefusedByTheMissingEntryPoint() throws Exception {
        Path libc = libc();
        ChildJvm child = ChildJvm.run(tmp, ProbeMain.class, "-D" + Native.DRIVER_PROPERTY + "=" + libc);
        assertTrue(child.output.contains("error=SHARED_OBJECT_SYMBOL_NOT_FOUND"), child.output);
        assertTrue(child.output.contains("lacks the driver entry point cuInit") && child.output.contains("not an NVIDIA CUDA driver library"), child.output);
    }

    /**
     * Issue 9 (9), H12: a libcuhandle of another version (here: a library that is no libcuhandle at
     * all) makes Cuda.isAvailable() answer false with the reason, never throw UnsatisfiedLinkError.
     */
    @Test
    void aMismatchedNativeLibraryIsReportedNotThrownAsALinkageError() throws Exception {
        Path libc = libc();
        ChildJvm child = ChildJvm.run(tmp, ProbeMain.class, "-D" + NativeLoader.PATH_PROPERTY + "=" + libc);
        assertEquals(0, child.exitCode, child.output);
        assertTrue(child.output.contains("available=false") && child.output.contains("exception=CudaException"), child.output);
        assertTrue(child.output.contains("registered no cuhandle native methods") && !child.output.contains("unexpected="), child.output);
    }

    /** Issue 9 (10), issue 26 (2): the library is written through the channel of the owner-only exclusive create, never reopened. */
    @Test
    void extractionKeepsTheOwnerOnlyPermissionsOfTheTemporaryFile() throws Exception {
        NativeExtraction.Extracted e = NativeExtraction.extract(new java.io.ByteArrayInputStream(new byte[] {1, 2, 3, 4}), tmp);
        assertEquals(java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"), Files.getPosixFilePermissions(e.file));
        assertEquals(4, Files.size(e.file));
        e.verifyUnchanged(); // the same file (inode) as created, not a replacement
    }

    /** Issue 13 (5): the extraction file is made without SecureRandom, but still new, empty and owner-only. */
    @Test
    void theExtractionFileIsANewEmptyOwnerOnlyFileWithAFreshName() throws Exception {
        java.util.Set<Path> seen = new java.util.HashSet<>();
        for (int i = 0; i < 100; i++) {
            Path file = NativeExtraction.extract(new java.io.ByteArrayInputStream(new byte[0]), tmp).file;
            assertEquals(tmp, file.getParent());
            assertTrue(file.getFileName().toString().matches("libcuhandle-[0-9a-z]+\\.so"), file.toString());
            assertTrue(seen.add(file), "a name given twice: " + file);
            assertTrue(Files.isRegularFile(file, java.nio.file.LinkOption.NOFOLLOW_LINKS), file.toString());
            assertEquals(0, Files.size(file));
            assertEquals(java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"), Files.getPosixFilePermissions(file));
        }
    }
}
