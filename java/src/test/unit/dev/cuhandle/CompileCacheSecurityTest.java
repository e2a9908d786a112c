package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 26 (1) and (3): the NVRTC disk cache is code this process runs, so it is used only from a folder no other
 * user can write to, each entry must be this user's own file, and it is bounded (size before reading, a byte cap,
 * stale temporary files removed). The multi-user cases act as a second user (uid 65534) through {@link OtherUser}
 * and skip, with the reason, where the tests cannot switch users (not root).
 */
class CompileCacheSecurityTest {
    private static final AtomicInteger UNIQUE = new AtomicInteger();
    private static final String SCALE = "extern \"C\" __global__ void scale(float* x, float a) { x[threadIdx.x] *= a; }\n";

    @TempDir
    Path tmp;
    private String savedDir;
    private String savedMax;
    private final List<Path> sharedFolders = new ArrayList<>();

    @BeforeEach
    void saveProperties() {
        savedDir = System.getProperty(DiskImageCache.DIR_PROPERTY);
        savedMax = System.getProperty(DiskImageCache.MAX_BYTES_PROPERTY);
        System.clearProperty(DiskImageCache.DIR_PROPERTY);
        System.clearProperty(DiskImageCache.MAX_BYTES_PROPERTY);
    }

    @AfterEach
    void restoreProperties() {
        restore(DiskImageCache.DIR_PROPERTY, savedDir);
        restore(DiskImageCache.MAX_BYTES_PROPERTY, savedMax);
        sharedFolders.forEach(OtherUser::deleteTree);
    }

    private static void restore(String property, String value) {
        if (value == null) {
            System.clearProperty(property);
        } else {
            System.setProperty(property, value);
        }
    }

    private static String unique(String source) {
        return "// cache security test " + UNIQUE.incrementAndGet() + " of " + ProcessHandle.current().pid() + " at " + System.nanoTime() + "\n" + source;
    }

    /** Skips the calling test where NVRTC is absent, but fails on a machine that builds cuhandle ({@code cuhandle.requireNvrtc}). */
    static void needNvrtc() {
        try {
            RuntimeCompiler.nvrtc();
        } catch (CudaException e) {
            assertFalse(Boolean.getBoolean("cuhandle.requireNvrtc"), "NVRTC must be found on a machine that builds cuhandle: " + e.getMessage());
            assumeTrue(false, "NVRTC is not installed: " + e.getMessage());
        }
    }

    private static void needOtherUser() {
        OtherUser.assumeAvailable("CompileCacheSecurityTest");
    }

    private static String key(int i) {
        return String.format("%064x", i);
    }

    private static byte[] entryBytes(byte[] image) throws Exception {
        return ByteBuffer.allocate(32 + image.length).put(MessageDigest.getInstance("SHA-256").digest(image)).put(image).array();
    }

    private static List<Path> files(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.sorted().collect(Collectors.toList());
        }
    }

    private static long entryBytesIn(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.toString().endsWith(".img")).mapToLong(p -> p.toFile().length()).sum();
        }
    }

    /**
     * The reproduction: another user makes {@code /tmp/cuhandle-cache...} (mode 0777), learns an entry's name
     * by compiling the same public source, and plants PTX with an extra {@code .entry pwned} (with a valid SHA-256).
     * The victim's compile must not use it: NVRTC runs, the image is the genuine one, one warning says why.
     */
    @Test
    void anotherUsersCacheFolderIsNeverUsedAndItsPlantedImageNeverLoads() throws Exception {
        needOtherUser();
        needNvrtc();
        String source = unique(SCALE);
        CompileOptions options = CompileOptions.defaults().architecture("compute_75");
        byte[] genuine = RuntimeCompiler.image(source, options, "compute_75"); // cache off: what NVRTC makes
        RuntimeCompiler.clearCache();
        String key = RuntimeCompiler.key(RuntimeCompiler.nvrtc()[0], "compute_75", options.programName(), source, options.headers(), options.nvrtcFlags());
        byte[] planted = (new String(genuine, StandardCharsets.US_ASCII) + "\n.visible .entry pwned()\n{\n\tret;\n}\n").getBytes(StandardCharsets.US_ASCII);

        Path staging = OtherUser.sharedFolder("cuhandle-plant-");
        sharedFolders.add(staging);
        Files.write(staging.resolve("entry"), entryBytes(planted));
        Files.setPosixFilePermissions(staging.resolve("entry"), PosixFilePermissions.fromString("rw-r--r--"));
        Path cache = OtherUser.newPathInTmp("cuhandle-cache-");
        sharedFolders.add(cache);
        Path plantedEntry = cache.resolve(key + ".img");
        OtherUser.must("mkdir -m 777 " + cache + " && cp " + staging.resolve("entry") + " " + plantedEntry + " && chmod 666 " + plantedEntry);

        System.setProperty(DiskImageCache.DIR_PROPERTY, cache.toString());
        long before = RuntimeCompiler.compileCount();
        try (LogCapture log = new LogCapture()) {
            for (int attempt = 0; attempt < 3; attempt++) {
                RuntimeCompiler.clearCache(); // as a new process: only the disk could have it
                byte[] image = RuntimeCompiler.image(source, options, "compute_75");
                assertFalse(new String(image, StandardCharsets.US_ASCII).contains("pwned"), "the planted image was loaded");
                assertArrayEquals(genuine, image);
            }
            assertEquals(before + 3, RuntimeCompiler.compileCount(), "NVRTC compiled every time: the planted entry was never used");
            List<String> warnings = log.warningsContaining(cache.toString());
            assertEquals(1, warnings.size(), "exactly one warning for the folder: " + warnings);
            assertTrue(warnings.get(0).contains("owned by user " + OtherUser.UID) && warnings.get(0).contains("compiling goes on without the disk cache"),
                    warnings.get(0));
        }
        assertEquals(List.of(plantedEntry), files(cache), "nothing was written into the other user's folder");
        if (Cuda.isAvailable()) {
            RuntimeCompiler.clearCache();
            try (Library lib = Library.compile(source, options)) {
                assertFalse(lib.kernelNames().contains("pwned"), "kernels: " + lib.kernelNames());
            }
        }
    }

    /**
     * A cache folder this user owns but others could write to (directly, through the group, or through a folder
     * above it that is not sticky) is as good as another user's: the cache is off there, with exactly one warning,
     * however often it is used. Needs no second user.
     */
    @Test
    void aFolderOthersCanWriteToTurnsTheCacheOffWithExactlyOneWarning() throws Exception {
        Path open = Files.createDirectory(tmp.resolve("open"));
        Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rwxrwxrwx"));
        Path group = Files.createDirectory(tmp.resolve("group"));
        Files.setPosixFilePermissions(group, PosixFilePermissions.fromString("rwxrwx---"));
        Path parent = Files.createDirectory(tmp.resolve("shared-parent"));
        Path below = Files.createDirectory(parent.resolve("mine"));
        Files.setPosixFilePermissions(below, PosixFilePermissions.fromString("rwx------"));
        Files.setPosixFilePermissions(parent, PosixFilePermissions.fromString("rwxrwxrwx"));
        String[][] cases = {{open.toString(), "is writable by group or others (mode 777)"}, {group.toString(), "is writable by group or others (mode 770)"},
            {below.toString(), parent + ", a folder above it, is writable by group or others without the sticky bit"}};
        byte[] image = ".version 7.0\n.target sm_75\n".getBytes(StandardCharsets.US_ASCII);
        for (String[] c : cases) {
            Path dir = Path.of(c[0]);
            Files.write(dir.resolve(key(1) + ".img"), entryBytes(image)); // a valid entry someone put there
            System.setProperty(DiskImageCache.DIR_PROPERTY, dir.toString());
            try (LogCapture log = new LogCapture()) {
                for (int i = 0; i < 5; i++) {
                    assertNull(DiskImageCache.get(key(1)), "a valid entry in " + dir + " was used");
                    DiskImageCache.put(key(2 + i), image);
                }
                List<String> warnings = log.warningsContaining(dir.toString());
                assertEquals(1, warnings.size(), dir + ": " + warnings);
                assertTrue(warnings.get(0).contains(c[1]), warnings.get(0));
            }
            assertEquals(List.of(dir.resolve(key(1) + ".img")), files(dir), "nothing written into " + dir);
        }
        // A private folder, also one reached through this user's own symbolic link, is used.
        Path mine = Files.createDirectory(tmp.resolve("mine"), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        Path link = Files.createSymbolicLink(tmp.resolve("link"), mine);
        System.setProperty(DiskImageCache.DIR_PROPERTY, link.toString());
        DiskImageCache.put(key(9), image);
        assertArrayEquals(image, DiskImageCache.get(key(9)));
        assertTrue(Files.isRegularFile(mine.resolve(key(9) + ".img")));
    }

    /** Each entry is checked too: a link, a file others can write, or (as root) another user's file is a miss. */
    @Test
    void entriesThatAreLinksWritableByOthersOrNotOwnedAreMisses() throws Exception {
        Path cache = Files.createDirectory(tmp.resolve("cache"), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        System.setProperty(DiskImageCache.DIR_PROPERTY, cache.toString());
        byte[] image = ".version 7.0\n.target sm_75\n// entry\n".getBytes(StandardCharsets.US_ASCII);
        Path elsewhere = Files.write(tmp.resolve("elsewhere.img"), entryBytes(image));
        Files.createSymbolicLink(cache.resolve(key(1) + ".img"), elsewhere);
        assertNull(DiskImageCache.get(key(1)), "an entry that is a symbolic link is not followed");
        DiskImageCache.put(key(2), image);
        Files.setPosixFilePermissions(cache.resolve(key(2) + ".img"), PosixFilePermissions.fromString("rw-rw-rw-"));
        assertNull(DiskImageCache.get(key(2)), "an entry others could rewrite is not used");
        assertFalse(Files.exists(cache.resolve(key(2) + ".img")), "and is deleted from this user's folder");
        DiskImageCache.put(key(3), image);
        assertArrayEquals(image, DiskImageCache.get(key(3)), "a sound entry is used");
        if (TrustedFolder.currentUid() == 0) {
            Files.setAttribute(cache.resolve(key(3) + ".img"), "unix:uid", OtherUser.UID);
            assertNull(DiskImageCache.get(key(3)), "an entry owned by another user is not used");
        }
    }

    /**
     * Issue 26 (3): a 1.5 GB (sparse) entry made {@code Library.compile} throw OutOfMemoryError, though the cache
     * must never make compiling fail. Reproduced in a JVM with a 256 MB heap: the size is checked before anything
     * is read, so the entry is a miss and NVRTC compiles.
     */
    @Test
    void aHugeSparseEntryIsACacheMissNotAnOutOfMemoryError() throws Exception {
        needNvrtc();
        Path cache = tmp.resolve("sparse-cache");
        ChildJvm child = ChildJvm.run(tmp, SecurityProbeMain.class, List.of("-Xmx256m"), "sparse", cache.toString());
        assertEquals(0, child.exitCode, child.output);
        assertTrue(child.output.contains("planted=" + SecurityProbeMain.SPARSE_BYTES), child.output);
        assertFalse(child.output.contains("unexpected="), child.output);
        assertTrue(child.output.contains("compiled=1") && child.output.contains("ptx=true"), "a miss, then NVRTC compiled: " + child.output);
        assertTrue(child.output.contains("is not used (it has " + SecurityProbeMain.SPARSE_BYTES + " bytes"), child.output);
        String entryNow = child.output.lines().filter(l -> l.startsWith("entryNow=")).findFirst().orElse("entryNow=?");
        long size = Long.parseLong(entryNow.substring("entryNow=".length()));
        assertTrue(size > 32 && size < 1 << 20, "the oversized file was replaced by the real entry: " + child.output);
    }

    /** Issue 26 (3): 10,000 distinct images stay under the cache's byte cap, and recent ones stay cached. */
    @Test
    void tenThousandDistinctEntriesStayUnderTheCap() throws Exception {
        Path cache = Files.createDirectory(tmp.resolve("bounded"), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        System.setProperty(DiskImageCache.DIR_PROPERTY, cache.toString());
        long cap = 1 << 20;
        System.setProperty(DiskImageCache.MAX_BYTES_PROPERTY, "1m");
        assertEquals(cap, DiskImageCache.maxBytes());
        Random random = new Random(26);
        long written = 0;
        byte[] last = null;
        for (int i = 0; i < 10_000; i++) {
            byte[] image = new byte[100 + random.nextInt(4000)];
            random.nextBytes(image);
            DiskImageCache.put(key(i), image);
            written += 32 + image.length;
            last = image;
            if (i % 1000 == 999) {
                long held = entryBytesIn(cache);
                assertTrue(held <= cap, "after " + (i + 1) + " entries the folder holds " + held + " bytes, over the cap of " + cap);
            }
        }
        assertTrue(written > 10 * cap, "the test wrote far more than the cap: " + written);
        assertTrue(entryBytesIn(cache) > cap / 2, "the cache still holds recent entries, not nothing");
        assertArrayEquals(last, DiskImageCache.get(key(9_999)), "the newest entry is there");
        assertNull(DiskImageCache.get(key(0)), "the oldest went first");
    }

    /**
     * Issue 26 (3): writers that died left {@code .tmp} files for ever (300 different defines left 300). A write
     * removes those older than {@link DiskCacheBudget#STALE_TEMP_MILLIS}, not fresh ones (another process may be
     * writing) and nothing not named as the cache names its files.
     */
    @Test
    void staleTemporaryFilesAreRemovedAndNothingElse() throws Exception {
        Path cache = Files.createDirectory(tmp.resolve("temps"), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        System.setProperty(DiskImageCache.DIR_PROPERTY, cache.toString());
        FileTime anHourAgo = FileTime.fromMillis(System.currentTimeMillis() - 3_600_000);
        for (int i = 0; i < 300; i++) {
            Path stale = Files.write(cache.resolve(key(i) + ".x" + i + ".tmp"), new byte[100]);
            Files.setLastModifiedTime(stale, anHourAgo);
        }
        Path fresh = Files.write(cache.resolve(key(1) + ".writing.tmp"), new byte[100]);
        Path notOurs = Files.write(cache.resolve("notes.tmp"), new byte[100]);
        Files.setLastModifiedTime(notOurs, anHourAgo);
        DiskImageCache.put(key(1000), new byte[] {1, 2, 3});
        assertEquals(List.of(cache.resolve(key(1) + ".writing.tmp"), cache.resolve(key(1000) + ".img"), notOurs).stream().sorted().collect(Collectors.toList()),
                files(cache));
        assertTrue(Files.exists(fresh));
    }

    @Test
    void theCapIsReadFromItsProperty() {
        System.setProperty(DiskImageCache.MAX_BYTES_PROPERTY, "512k");
        assertEquals(512L << 10, DiskImageCache.maxBytes());
        System.setProperty(DiskImageCache.MAX_BYTES_PROPERTY, "2G");
        assertEquals(2L << 30, DiskImageCache.maxBytes());
        System.setProperty(DiskImageCache.MAX_BYTES_PROPERTY, "1000");
        assertEquals(1000, DiskImageCache.maxBytes());
        System.clearProperty(DiskImageCache.MAX_BYTES_PROPERTY);
        assertEquals(DiskImageCache.DEFAULT_MAX_BYTES, DiskImageCache.maxBytes());
        try (LogCapture log = new LogCapture()) {
            System.setProperty(DiskImageCache.MAX_BYTES_PROPERTY, "lots");
            assertEquals(DiskImageCache.DEFAULT_MAX_BYTES, DiskImageCache.maxBytes());
            assertNotNull(log.warningsContaining("-Dcuhandle.compileCache.maxBytes=lots is not a positive number").stream().findFirst().orElse(null));
        }
    }
}
