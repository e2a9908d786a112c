package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 38 (docs/design.md, rule F1): a folder checked for trust is used through the path the check resolved, never
 * looked up again by its name; no library is found through the working directory. The races are run as the issue
 * reproduced them, with another local user (uid 65534) exchanging a folder of its own and a link to a trusted folder
 * in a tight loop ({@code race_swap.c}); they need root to act as that user and skip with the reason elsewhere.
 */
class CheckThenUseSecurityTest {
    /** Runs of each race: the attacker won 4 of 100 extraction starts and one cache read in 20. */
    private static final int RACE_RUNS = 200;

    @TempDir
    Path tmp;

    private static void needOtherUser() {
        OtherUser.assumeAvailable("CheckThenUseSecurityTest");
    }

    /** Starts a tool as the other user and waits for its first line (it is running then). */
    private static Process startAttacker(String command, String firstLine) throws IOException {
        Process p = OtherUser.start("exec " + command);
        String first = new String(p.getInputStream().readNBytes(firstLine.length()), StandardCharsets.UTF_8);
        assertTrue(first.startsWith(firstLine.trim()), "the attacker's tool runs: " + first);
        return p;
    }

    private static void stop(Process p) throws InterruptedException {
        if (p != null) {
            p.destroyForcibly();
            p.waitFor();
        }
    }

    /**
     * The other user's racing names: {@code folder}, a folder of its own (mode 777), and {@code folder + ".link"}, its
     * link to {@code target}, exchanged in a tight loop until closed; closing removes both, whichever holds what.
     */
    private static final class RacingNames implements AutoCloseable {
        final Path folder = OtherUser.newPathInTmp("cuhandle-race-");
        final Path link = Paths.get(folder + ".link");
        private Process racer;

        RacingNames(Path target) throws IOException, InterruptedException {
            OtherUser.must("mkdir -m 777 " + folder + " && ln -s " + target + " " + link);
        }

        /** Starts the racer and returns once both names have been seen exchanged (the racer is at work). */
        void start(AttackTools tools) throws IOException, InterruptedException {
            racer = startAttacker(tools.raceSwap + " " + folder + " " + link + " 600", "racing\n");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            boolean sawLink = false;
            boolean sawFolder = false;
            while (!(sawLink && sawFolder) && System.nanoTime() < deadline) {
                boolean isLink = Files.isSymbolicLink(folder);
                sawLink |= isLink;
                sawFolder |= !isLink;
                Thread.sleep(0, 100_000);
            }
            assertTrue(sawLink && sawFolder, "the racer did not exchange the names within 30 s");
        }

        @Override
        public void close() throws InterruptedException {
            stop(racer);
            OtherUser.deleteTree(folder);
            OtherUser.deleteTree(link);
        }
    }

    private static void restore(String property, String value) {
        if (value == null) {
            System.clearProperty(property);
        } else {
            System.setProperty(property, value);
        }
    }

    /**
     * The extraction race: {@code -Dcuhandle.tmpdir} names {@code /tmp/cuhandle-race-…}, which the other user
     * keeps exchanging between a folder of its own (mode 777, watched by {@code swap_watcher}, which renames its
     * library over every {@code libcuhandle-*.so} written there) and a link to {@code /tmp}. The checked path is
     * {@code /tmp} or the folder is refused; nothing is written into, or loaded from, the other user's folder. The
     * load is a stand-in that reads the file by its path, as {@code System.load} opens it, in {@value #RACE_RUNS}
     * runs of the extraction code in this JVM; ten child JVMs then load the real library during the same race.
     */
    @Test
    void theExtractionRaceNeverLoadsTheOtherUsersLibrary() throws Exception {
        needOtherUser();
        try (AttackTools tools = AttackTools.build(); RacingNames race = new RacingNames(Paths.get("/tmp"))) {
            Path name = race.folder;
            Process watcher = null;
            String saved = System.getProperty(NativeLoader.TMPDIR_PROPERTY);
            try {
                watcher = startAttacker(tools.swapWatcher + " " + name + " " + tools.plantedLibrary + " 600", "watching " + name + "\n");
                race.start(tools);
                byte[] genuine = new byte[1 << 20];
                new Random(38).nextBytes(genuine);
                System.setProperty(NativeLoader.TMPDIR_PROPERTY, name.toString());
                int refused = 0;
                int loaded = 0;
                int failed = 0;
                List<String> foreign = new ArrayList<>();
                int foreignFolder = 0;
                int runs = 0;
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                // At least RACE_RUNS, and on until the check met the other user's folder at least once (a loaded
                // machine may not schedule the racer during a short loop).
                for (int run = 0; run < RACE_RUNS || (refused == 0 && System.nanoTime() < deadline); run++) {
                    runs++;
                    List<String> refusals = new ArrayList<>();
                    Path dir = NativeExtraction.extractionFolder(refusals);
                    refused += refusals.isEmpty() ? 0 : 1;
                    assertNotNull(dir, "java.io.tmpdir is always there to fall back on: " + refusals);
                    foreignFolder += dir.startsWith(name) ? 1 : 0;
                    try {
                        NativeExtraction.extractAndLoad(new ByteArrayInputStream(genuine), dir, path -> {
                            try {
                                if (!java.util.Arrays.equals(genuine, Files.readAllBytes(Paths.get(path)))) {
                                    foreign.add(path);
                                }
                            } catch (IOException e) {
                                throw new UnsatisfiedLinkError(path + ": " + e);
                            }
                        }, System.nanoTime(), "test bytes", List.of());
                        loaded++;
                    } catch (NativeExtraction.ExtractionFailure e) {
                        failed++;
                    }
                }
                System.err.println("CheckThenUseSecurityTest: extraction race, " + runs + " runs: " + loaded + " loaded the written library, "
                        + refused + " refused -Dcuhandle.tmpdir (fell back to java.io.tmpdir), " + failed + " failed, " + foreign.size()
                        + " loaded another file, " + foreignFolder + " extracted through the other user's name");
                assertEquals(List.of(), foreign, "files loaded that were not the one written");
                assertEquals(0, foreignFolder, "runs that extracted through the other user's name " + name);
                assertEquals(runs, loaded, "every run loaded the written library (none failed)");
                assertTrue(refused > 0, "the race made the check meet the other user's folder at least once");

                Path marker = tmp.resolve("marker");
                for (int start = 0; start < 10; start++) {
                    ChildJvm child = ChildJvm.run(tmp, Map.of(AttackTools.MARKER_ENV, marker.toString()), SecurityProbeMain.class,
                            List.of(ChildJvm.NO_LIBRARY_CACHE, "-D" + NativeLoader.TMPDIR_PROPERTY + "=" + name, "-D" + NativeLoader.PATH_PROPERTY + "="), "load");
                    assertTrue(child.output.contains("source=class path resource"), child.output);
                    assertFalse(child.output.contains("unexpected="), child.output);
                }
                assertFalse(Files.exists(marker), "the other user's library ran in a child JVM");
            } finally {
                restore(NativeLoader.TMPDIR_PROPERTY, saved);
                stop(watcher);
            }
        }
    }

    /**
     * The cache race: {@code -Dcuhandle.compileCache.dir=/tmp/cuhandle-crace-…/cache}, whose first folder the
     * other user keeps exchanging between a folder of its own and a link to a folder that passes the checks. The
     * other user's folder holds an entry under the same key with a valid SHA-256, owned by the victim (as when the
     * other user renames a file the victim wrote into its folder). The planted image is never returned.
     */
    @Test
    void theCacheRaceNeverServesThePlantedImage() throws Exception {
        needOtherUser();
        Path good = OtherUser.sharedFolder("cuhandle-good-");
        try (AttackTools tools = AttackTools.build(); RacingNames race = new RacingNames(good)) {
            Path name = race.folder;
            String saved = System.getProperty(DiskImageCache.DIR_PROPERTY);
            try {
                String key = String.format("%064x", 38);
                byte[] genuine = ".version 7.0\n.target sm_75\n// genuine\n".getBytes(StandardCharsets.US_ASCII);
                byte[] planted = ".version 7.0\n.target sm_75\n.visible .entry pwned()\n{\n\tret;\n}\n".getBytes(StandardCharsets.US_ASCII);
                Path goodCache = Files.createDirectory(good.resolve("cache"), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
                System.setProperty(DiskImageCache.DIR_PROPERTY, goodCache.toString());
                DiskImageCache.put(key, genuine);
                assertArrayEquals(genuine, DiskImageCache.get(key), "the genuine entry is used when named directly");

                Path plantedCache = Files.createDirectory(name.resolve("cache"), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
                Path plantedEntry = plantedCache.resolve(key + ".img");
                Files.write(plantedEntry, ByteBuffer.allocate(32 + planted.length).put(MessageDigest.getInstance("SHA-256").digest(planted)).put(planted).array());
                Files.setPosixFilePermissions(plantedEntry, PosixFilePermissions.fromString("rw-------"));
                race.start(tools);

                System.setProperty(DiskImageCache.DIR_PROPERTY, name.resolve("cache").toString());
                int hits = 0;
                int misses = 0;
                int plantedServed = 0;
                java.util.Set<String> states = new java.util.TreeSet<>();
                java.util.Set<String> reasons = new java.util.TreeSet<>();
                int runs = 0;
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                // At least RACE_RUNS, and on until the reads met the name both ways (see the extraction race).
                for (int run = 0; run < RACE_RUNS || (states.size() < 2 && System.nanoTime() < deadline); run++) {
                    runs++;
                    states.add(Files.isSymbolicLink(name) ? "link" : "folder");
                    String problem = TrustedFolder.problem(name.resolve("cache"), TrustedFolder.Use.CACHE);
                    reasons.add(problem == null ? "trusted" : problem.replaceAll("/tmp/\\S+", "PATH"));
                    byte[] got = DiskImageCache.get(key);
                    if (got == null) {
                        misses++;
                    } else if (java.util.Arrays.equals(got, planted)) {
                        plantedServed++;
                    } else {
                        assertArrayEquals(genuine, got);
                        hits++;
                    }
                }
                System.err.println("CheckThenUseSecurityTest: cache race, " + runs + " reads: " + hits + " genuine, " + misses
                        + " refused (a miss), " + plantedServed + " planted; checks alone: " + reasons);
                assertEquals(0, plantedServed, "the planted image was served");
                assertTrue(Files.exists(plantedEntry), "the other user's folder was never written or swept");
                assertEquals(java.util.Set.of("folder", "link"), states, "the name was seen both ways: the race ran");
            } finally {
                restore(DiskImageCache.DIR_PROPERTY, saved);
            }
        } finally {
            OtherUser.deleteTree(good);
        }
    }

    /** The checked path has no link on the way: a folder reached through this user's link is used at its target. */
    @Test
    void theCheckedPathIsTheResolvedOneAndRelativeFoldersAreRefused() throws Exception {
        Path mine = Files.createDirectory(tmp.resolve("mine"), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        Path link = Files.createSymbolicLink(tmp.resolve("link"), mine);
        TrustedFolder.Checked checked = TrustedFolder.check(link, TrustedFolder.Use.CACHE);
        assertNull(checked.problem);
        assertEquals(mine.toRealPath(), checked.path);
        TrustedFolder.Checked relative = TrustedFolder.check(Paths.get("relative/folder"), TrustedFolder.Use.EXTRACTION);
        assertNull(relative.path);
        assertTrue(relative.problem.contains("relative/folder is not an absolute path"), relative.problem);

        ChildJvm child = ChildJvm.run(tmp, SecurityProbeMain.class, List.of(ChildJvm.NO_LIBRARY_CACHE, "-D" + NativeLoader.TMPDIR_PROPERTY + "=mine", "-D" + NativeLoader.PATH_PROPERTY + "="), "load");
        assertTrue(child.output.contains("not into -D" + NativeLoader.TMPDIR_PROPERTY + "=mine (mine is not an absolute path"), child.output);
        try (Stream<Path> files = Files.list(mine)) {
            assertEquals(0, files.count(), "nothing extracted through the relative name");
        }
    }

    /**
     * The one-pass check (no link, a path that resolves to itself) answers as the two passes did: a path through a
     * folder anyone may write is judged by where it resolves ({@code open/../mine} is {@code mine}, through the second
     * pass), and a folder anyone may write is refused by the first pass with the second pass's words.
     */
    @Test
    void aPathIsJudgedByTheFoldersItResolvesTo() throws Exception {
        Path mine = Files.createDirectory(tmp.resolve("mine"), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        Path open = Files.createDirectory(tmp.resolve("open"));
        Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rwxrwxrwx"));
        TrustedFolder.Checked through = TrustedFolder.check(open.resolve("..").resolve("mine"), TrustedFolder.Use.CACHE);
        assertNull(through.problem, "open/../mine resolves to mine, which passes");
        assertEquals(mine.toRealPath(), through.path);
        TrustedFolder.Checked below = TrustedFolder.check(Files.createDirectory(open.resolve("inner"),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------"))), TrustedFolder.Use.CACHE);
        assertNull(below.path);
        assertTrue(below.problem.contains("a folder above it, is writable by group or others without the sticky bit"), below.problem);
        TrustedFolder.Checked itself = TrustedFolder.check(open, TrustedFolder.Use.CACHE);
        assertNull(itself.path);
        assertTrue(itself.problem.contains("is writable by group or others (mode 777); a cache folder must be writable by its owner alone"), itself.problem);
    }

    /** The effective user id is the "Uid:" line's second field, split by hand (no regular expression on the start-up path). */
    @Test
    void theEffectiveUserIdIsTheSecondFieldOfTheUidLine() throws IOException {
        assertEquals(1001, TrustedFolder.secondField("\t1000\t1001\t1002\t1003"));
        assertEquals(0, TrustedFolder.secondField("  7   0 0 0"));
        assertThrows(NumberFormatException.class, () -> TrustedFolder.secondField("\t42\t"));
        // Another source of the same fact: /proc/self belongs to the process's effective user.
        assertEquals(Files.getAttribute(Paths.get("/proc/self"), "unix:uid"), TrustedFolder.currentUid());
    }

    /** A relative compile cache folder turns the cache off with a warning; nothing is written through it. */
    @Test
    void aRelativeCompileCacheFolderTurnsTheCacheOff() throws Exception {
        String saved = System.getProperty(DiskImageCache.DIR_PROPERTY);
        try (LogCapture log = new LogCapture()) {
            System.setProperty(DiskImageCache.DIR_PROPERTY, "relative-cache");
            assertNull(DiskImageCache.folder());
            DiskImageCache.put(String.format("%064x", 1), new byte[] {1, 2, 3});
            assertFalse(Files.exists(Paths.get("relative-cache")), "nothing created in the working directory");
            List<String> warnings = log.warningsContaining("relative-cache is not an absolute path");
            assertEquals(1, warnings.size(), warnings.toString());
        } finally {
            restore(DiskImageCache.DIR_PROPERTY, saved);
        }
    }

    /** Issue 38 (3): a load that fails removes what it extracted. */
    @Test
    void aFailedLoadRemovesWhatItExtracted() throws Exception {
        Path dir = Files.createDirectory(tmp.resolve("extract"));
        InputStream notALibrary = new ByteArrayInputStream(new byte[3 << 20]);
        NativeExtraction.ExtractionFailure e = assertThrows(NativeExtraction.ExtractionFailure.class,
                () -> NativeExtraction.extractAndLoad(notALibrary, dir, NativeExtraction.SYSTEM_LOAD, System.nanoTime(), "test bytes", List.of()));
        assertTrue(e.getCause() instanceof UnsatisfiedLinkError, String.valueOf(e.getCause()));
        try (Stream<Path> files = Files.list(dir)) {
            assertEquals(0, files.count(), "the 3 MiB file that did not load is gone");
        }
    }

    private static String[] nvrtcOrSkip() {
        CompileCacheSecurityTest.needNvrtc();
        return RuntimeCompiler.nvrtc();
    }

    /**
     * Issue 38 (2): libnvrtc opens {@code libnvrtc-builtins.so.X.Y} by bare name at its first compile; with an empty
     * {@code LD_LIBRARY_PATH} entry the dynamic linker looks in the working directory, where a planted copy ran. Now
     * cuhandle loads the builtins from NVRTC's own folder first; the plant never runs and the compile works.
     */
    @Test
    void aPlantedNvrtcBuiltinsInTheWorkingDirectoryNeverRuns() throws Exception {
        String version = nvrtcOrSkip()[0];
        Path planted = tmp.resolve("libnvrtc-builtins.so." + version);
        Path source = Files.createTempFile(tmp, "planted", ".c");
        try (InputStream in = CheckThenUseSecurityTest.class.getResourceAsStream("attack/planted_library.c")) {
            Files.copy(in, source, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        }
        Process cc;
        try {
            cc = new ProcessBuilder("cc", "-shared", "-fPIC", "-o", planted.toString(), source.toString()).redirectErrorStream(true).start();
        } catch (IOException e) {
            assumeTrue(false, "no C compiler (cc) to build the planted library: " + e.getMessage());
            throw e;
        }
        String ccOut = new String(cc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, cc.waitFor(), ccOut);
        Path marker = tmp.resolve("marker");
        String ld = System.getenv("LD_LIBRARY_PATH");
        ChildJvm child = ChildJvm.run(tmp, Map.of(AttackTools.MARKER_ENV, marker.toString(), "LD_LIBRARY_PATH", ":" + (ld == null ? "" : ld)),
                SecurityProbeMain.class, List.of(), "compileKernel");
        assertTrue(child.output.contains("ptx=true"), child.output);
        assertFalse(Files.exists(marker), "the planted libnvrtc-builtins ran: " + child.output);
        assertTrue(child.output.contains("LD_LIBRARY_PATH has an empty entry"), "the empty entry is warned about: " + child.output);
    }

    /**
     * Issue 38 (3): NVRTC's log quotes the source's {@code #line} file name, which may hold line breaks; logged as is,
     * {@code "x.cu\nSEVERE: ..."} printed a line that reads as a record of its own. Every line of the log is prefixed.
     */
    @Test
    void nvrtcsLogCannotForgeARecord() throws Exception {
        nvrtcOrSkip();
        ChildJvm child = ChildJvm.run(tmp, SecurityProbeMain.class, List.of(), "compileLog");
        assertTrue(child.output.contains("ptx=true"), child.output);
        assertTrue(child.output.contains("forged record"), "NVRTC's log, with the file name, is logged: " + child.output);
        for (String line : child.output.split("\n")) {
            assertFalse(line.startsWith("SEVERE: forged") || line.startsWith("INFO: forged"), "a forged record: " + line + "\n" + child.output);
        }
    }
}
