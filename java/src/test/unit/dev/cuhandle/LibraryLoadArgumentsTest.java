package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.UncheckedIOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Library loading arguments that are refused in Java before any native call, so these run
 * without a GPU (and without a driver): nulls, missing files and missing resources (and the leading '/'
 * a relative resource name lacks).
 */
class LibraryLoadArgumentsTest {
    @Test
    void aNullImageIsANullPointer() {
        NullPointerException e = assertThrows(NullPointerException.class, () -> Library.load((byte[]) null));
        assertTrue(String.valueOf(e.getMessage()).contains("image"), "names the argument: " + e.getMessage());
    }

    @Test
    void aNullPathIsANullPointer() {
        NullPointerException e = assertThrows(NullPointerException.class, () -> Library.load((Path) null));
        assertTrue(String.valueOf(e.getMessage()).contains("file"), "names the argument: " + e.getMessage());
    }

    @Test
    void aMissingFileIsAnUncheckedIoExceptionNamingIt(@TempDir Path dir) {
        Path missing = dir.resolve("no_such_module.fatbin");
        UncheckedIOException e = assertThrows(UncheckedIOException.class, () -> Library.load(missing));
        assertTrue(e.getMessage().contains(missing.toString()), "names the file: " + e.getMessage());
        assertTrue(e.getCause() instanceof NoSuchFileException, "cause: " + e.getCause());
    }

    @Test
    void aDirectoryIsAnUncheckedIoException(@TempDir Path dir) {
        assertThrows(UncheckedIOException.class, () -> Library.load(dir));
    }

    @Test
    void aMissingResourceIsAnIllegalArgumentNamingIt() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Library.loadResource(LibraryLoadArgumentsTest.class, "/kernels/no_such_module.fatbin"));
        assertTrue(e.getMessage().contains("/kernels/no_such_module.fatbin"), "names the resource: " + e.getMessage());
        assertTrue(e.getMessage().contains("not found"), e.getMessage());
    }

    @Test
    void aRelativeResourceIsLookedUpNextToTheAnchorClass() {
        // "kernels/x" relative to dev.cuhandle is dev/cuhandle/kernels/x: not there either, and the message says relative to what.
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Library.loadResource(LibraryLoadArgumentsTest.class, "no_such_module.ptx"));
        assertTrue(e.getMessage().contains(LibraryLoadArgumentsTest.class.getName()), e.getMessage());
    }

    @Test
    void aResourceNameMissingItsLeadingSlashSaysWhichNameExists() {
        // The test fatbin lies at the class path's root (/kernels/...); without the '/' it is looked up in dev/cuhandle/.
        String relative = TestKernels.FATBIN.substring(1);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Library.loadResource(LibraryLoadArgumentsTest.class, relative));
        assertTrue(e.getMessage().contains("did you mean " + TestKernels.FATBIN + "?"), e.getMessage());
        assertTrue(e.getMessage().contains("/dev/cuhandle/" + relative), "says where it looked: " + e.getMessage());
    }

    @Test
    void aMissingRelativeResourceSuggestsNothingWhenTheAbsoluteNameIsMissingToo() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Library.loadResource(LibraryLoadArgumentsTest.class, "kernels/no_such_module.fatbin"));
        assertTrue(!e.getMessage().contains("did you mean"), e.getMessage());
    }

    @Test
    void nullResourceArgumentsAreNullPointers() {
        assertThrows(NullPointerException.class, () -> Library.loadResource(null, TestKernels.FATBIN));
        assertThrows(NullPointerException.class, () -> Library.loadResource(LibraryLoadArgumentsTest.class, null));
    }
}
