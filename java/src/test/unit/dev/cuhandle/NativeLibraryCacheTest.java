package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 35: the per-user cache of libcuhandle (NativeLibraryCache). A start that finds its copy loads it without
 * extracting; the copy is kept to issue 26's guarantees (F1): only this user's own regular file of the recorded size,
 * in a folder only this user can write, is ever loaded; anything else is replaced or the start falls back to the
 * per-process temporary copy, saying why. Child JVMs, since the loader runs once per process.
 */
class NativeLibraryCacheTest {
    @TempDir
    Path tmp;

    private Path cache() {
        return tmp.resolve("cache");
    }

    private ChildJvm load(Path cacheFolder) throws IOException, InterruptedException {
        return ChildJvm.run(tmp, SecurityProbeMain.class, List.of("-D" + NativeLibraryCache.DIR_PROPERTY + "=" + cacheFolder, "-D" + NativeLoader.PATH_PROPERTY + "="),
                "load");
    }

    /** The one entry the cache folder should hold: libcuhandle-<the recorded SHA-256>.so. */
    private Path entry() {
        return cache().resolve("libcuhandle-" + NativeLibraryDigest.sha256() + ".so");
    }

    private static List<String> names(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().collect(Collectors.toList());
        }
    }

    private static void assertLoadedFromCache(ChildJvm child, Path entry, String how) {
        // The source is reported only for a library that loaded (else "not loaded: ..."); no GPU is needed.
        assertTrue(child.output.contains("source=class path resource /META-INF/native/linux-x86_64/libcuhandle.so (its per-user cached copy " + entry + ", " + how),
                child.output);
        assertFalse(child.output.contains("extracted to"), child.output);
    }

    private static void assertIsTheLibrary(Path entry) throws IOException {
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(entry, LinkOption.NOFOLLOW_LINKS)));
        assertTrue(Files.isRegularFile(entry, LinkOption.NOFOLLOW_LINKS), entry + " is a regular file");
        assertEquals(NativeLibraryDigest.size(), Files.size(entry));
    }

    @Test
    void theFirstStartWritesTheCopyAndTheNextLoadsItWithoutExtracting() throws Exception {
        ChildJvm first = load(cache());
        assertLoadedFromCache(first, entry(), "written now)");
        assertEquals(List.of(entry().getFileName().toString()), names(cache()), "one entry, no temporary file left");
        assertIsTheLibrary(entry());
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(cache())), "the folder is created private");
        Object identity = Files.readAttributes(entry(), "unix:ino").get("ino");

        ChildJvm second = load(cache());
        assertLoadedFromCache(second, entry(), "written by an earlier start)");
        assertEquals(identity, Files.readAttributes(entry(), "unix:ino").get("ino"), "the second start did not write it again");
    }

    /** An entry of the wrong size (a damaged copy) is deleted and written again, never loaded. */
    @Test
    void anEntryOfTheWrongSizeIsReplaced() throws Exception {
        Files.createDirectories(cache());
        Files.setPosixFilePermissions(cache(), PosixFilePermissions.fromString("rwx------"));
        Files.write(entry(), "not the library".getBytes(StandardCharsets.US_ASCII));
        Files.setPosixFilePermissions(entry(), PosixFilePermissions.fromString("rw-------"));
        ChildJvm child = load(cache());
        assertLoadedFromCache(child, entry(), "written now, replacing an entry that failed the checks: " + entry() + " has 15 bytes, not the library's "
                + NativeLibraryDigest.size());
        assertIsTheLibrary(entry());
    }

    /** An entry others may write (group or other write bit) is replaced by a private one. */
    @Test
    void anEntryOthersCanWriteIsReplaced() throws Exception {
        load(cache());
        Files.setPosixFilePermissions(entry(), PosixFilePermissions.fromString("rw-rw-rw-"));
        ChildJvm child = load(cache());
        assertLoadedFromCache(child, entry(), "written now, replacing an entry that failed the checks: " + entry() + " is writable by group or others (mode 666)");
        assertIsTheLibrary(entry());
    }

    /** A symbolic link in the entry's place (even to a genuine copy) is not followed: it is removed and a file written. */
    @Test
    void aSymbolicLinkInPlaceOfTheEntryIsReplacedAndItsTargetLeftAlone() throws Exception {
        load(cache());
        Path elsewhere = Files.move(entry(), tmp.resolve("elsewhere.so"));
        Files.createSymbolicLink(entry(), elsewhere);
        ChildJvm child = load(cache());
        assertLoadedFromCache(child, entry(), "written now, replacing an entry that failed the checks: " + entry() + " is not a regular file but a symbolic link");
        assertIsTheLibrary(entry());
        assertTrue(Files.isRegularFile(elsewhere, LinkOption.NOFOLLOW_LINKS), "the link's target is untouched");
    }

    /** An entry owned by another user is replaced (needs root to make one). */
    @Test
    void anEntryOwnedByAnotherUserIsReplaced() throws Exception {
        OtherUser.assumeAvailable("NativeLibraryCacheTest");
        load(cache());
        Process chown = new ProcessBuilder("chown", OtherUser.UID + "", entry().toString()).redirectErrorStream(true).start();
        assertEquals(0, chown.waitFor(), new String(chown.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
        ChildJvm child = load(cache());
        assertLoadedFromCache(child, entry(), "written now, replacing an entry that failed the checks: " + entry() + " is owned by user " + OtherUser.UID);
        assertEquals(Files.getOwner(tmp), Files.getOwner(entry(), LinkOption.NOFOLLOW_LINKS));
    }

    /** A cache folder the group may write is not used at all: the library is extracted, and the report says why. */
    @Test
    void aGroupWritableCacheFolderIsRefusedSayingWhy() throws Exception {
        Files.createDirectories(cache());
        Files.setPosixFilePermissions(cache(), PosixFilePermissions.fromString("rwxrwx---"));
        ChildJvm child = load(cache());
        assertTrue(child.output.contains("source=class path resource /META-INF/native/linux-x86_64/libcuhandle.so (extracted to "), child.output);
        assertTrue(child.output.contains("(not cached: the cache folder is refused: " + cache() + " is writable by group or others (mode 770);"
                + " a cache folder must be writable by its owner alone (chmod 700))"), child.output);
        assertEquals(List.of(), names(cache()), "nothing was written there");
    }

    /** -Dcuhandle.libraryCache=off: the temporary copy, as before the cache, and the report says so. */
    @Test
    void theCacheCanBeTurnedOff() throws Exception {
        ChildJvm child = ChildJvm.run(tmp, SecurityProbeMain.class, List.of(ChildJvm.NO_LIBRARY_CACHE, "-D" + NativeLibraryCache.DIR_PROPERTY + "=" + cache(),
                "-D" + NativeLoader.PATH_PROPERTY + "="), "load");
        assertTrue(child.output.contains("source=class path resource /META-INF/native/linux-x86_64/libcuhandle.so (extracted to "), child.output);
        assertTrue(child.output.contains("a temporary copy deleted once loaded) (not cached: -D" + NativeLibraryCache.MODE_PROPERTY + "=off)"), child.output);
        assertFalse(Files.exists(cache()), "no cache folder was made");
    }

    /** Starts racing to fill an empty cache all load the library; one complete entry remains and no temporary file. */
    @Test
    void concurrentStartsFillingTheCacheAllLoad() throws Exception {
        int starts = 4;
        ExecutorService pool = Executors.newFixedThreadPool(starts);
        try {
            List<Future<ChildJvm>> children = new ArrayList<>();
            for (int i = 0; i < starts; i++) {
                children.add(pool.submit(() -> load(cache())));
            }
            for (Future<ChildJvm> f : children) {
                ChildJvm child = f.get();
                assertTrue(child.output.contains("source=class path resource /META-INF/native/linux-x86_64/libcuhandle.so (its per-user cached copy " + entry()), child.output);
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(List.of(entry().getFileName().toString()), names(cache()));
        assertIsTheLibrary(entry());
    }

    /** Only a library from the digest class's own class path entry (JAR or folder) is cached under that digest. */
    @Test
    void onlyTheLibraryBesideTheDigestIsCached() throws Exception {
        String resource = "/META-INF/native/linux-x86_64/libcuhandle.so";
        java.security.CodeSource jar = new java.security.CodeSource(new java.net.URL("file:/a/cuhandle.jar"), (java.security.cert.Certificate[]) null);
        java.security.CodeSource folder = new java.security.CodeSource(new java.net.URL("file:/a/test-classes/"), (java.security.cert.Certificate[]) null);
        assertTrue(NativeLibraryCache.sameEntry(new java.net.URL("jar:file:/a/cuhandle.jar!" + resource), resource, jar));
        assertTrue(NativeLibraryCache.sameEntry(new java.net.URL("file:/a/test-classes" + resource), resource, folder));
        assertFalse(NativeLibraryCache.sameEntry(new java.net.URL("file:/a/test-classes" + resource), resource, jar), "another entry's library");
        assertFalse(NativeLibraryCache.sameEntry(new java.net.URL("jar:file:/a/other.jar!" + resource), resource, jar), "another JAR's library");
        assertFalse(NativeLibraryCache.sameEntry(new java.net.URL("jar:file:/a/cuhandle.jar!" + resource), resource, null), "no code source");
        // And the real class path: the tests' library is beside the tests' digest class.
        assertTrue(NativeLibraryCache.sameEntry(NativeLoader.class.getResource(resource), resource, NativeLibraryDigest.class.getProtectionDomain().getCodeSource()));
    }

    /** Older builds' entries beyond the kept number are deleted when a new one is written, so the folder stays small. */
    @Test
    void olderEntriesArePrunedWhenANewOneIsWritten() throws Exception {
        Files.createDirectories(cache());
        Files.setPosixFilePermissions(cache(), PosixFilePermissions.fromString("rwx------"));
        List<Path> old = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            Path p = Files.write(cache().resolve("libcuhandle-" + String.valueOf(i).repeat(64) + ".so"), new byte[] {1});
            Files.setLastModifiedTime(p, FileTime.fromMillis(1_000_000L * (i + 1)));
            old.add(p);
        }
        Path staleTemp = Files.write(cache().resolve("libcuhandle-" + "0".repeat(64) + ".abc.tmp"), new byte[] {1});
        Files.setLastModifiedTime(staleTemp, FileTime.fromMillis(1_000L));
        assertLoadedFromCache(load(cache()), entry(), "written now)");
        List<String> expected = new ArrayList<>();
        for (Path p : old.subList(4 - (NativeLibraryCache.KEPT_ENTRIES - 1), 4)) {
            expected.add(p.getFileName().toString());
        }
        expected.add(entry().getFileName().toString());
        expected.sort(null);
        assertEquals(expected, names(cache()), "the newest entries and this one are kept; the stale temporary file is gone");
    }
}
