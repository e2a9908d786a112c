package dev.cuhandle;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Another local user, for the multi-user security tests (issue 26): shell commands run as uid/gid 65534
 * ({@code nobody}) through {@code setpriv --reuid=65534 --regid=65534 --clear-groups}, else {@code runuser -u nobody}.
 * That needs the tests to run as root (CI does); elsewhere {@link #unavailable()} says why and the tests skip with
 * that reason.
 *
 * <p>Files the other user must read go into a {@link #sharedFolder} (mode 0755 under {@code /tmp}): JUnit's
 * {@code @TempDir} folders are private to the test's user.
 */
final class OtherUser {
    static final int UID = 65534;
    private static final String REASON = probe();

    private OtherUser() {}

    /**
     * Skips the calling test, with the reason printed and in the report, where commands cannot run as the other user
     * ({@code test} names the test class in the printed line).
     */
    static void assumeAvailable(String test) {
        if (REASON != null) {
            System.err.println(test + ": multi-user case skipped: " + REASON);
        }
        org.junit.jupiter.api.Assumptions.assumeTrue(REASON == null, "multi-user case skipped: " + REASON);
    }

    /** Why commands cannot run as another user here, or null when they can. */
    static String unavailable() {
        return REASON;
    }

    private static String probe() {
        int uid = TrustedFolder.currentUid();
        if (uid != 0) {
            return "the tests run as uid " + uid + ", not root, so they cannot act as a second user (uid " + UID + ")";
        }
        try {
            Result r = run("id -u");
            if (r.exitCode == 0 && r.output.trim().equals(Integer.toString(UID))) {
                return null;
            }
            return "running a command as uid " + UID + " failed (" + String.join(" ", prefix()) + "): exit " + r.exitCode + ", " + r.output.trim();
        } catch (IOException | RuntimeException e) {
            return "neither setpriv nor runuser can run a command as uid " + UID + ": " + e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted";
        }
    }

    private static List<String> prefix() {
        if (Files.isExecutable(Paths.get("/usr/bin/setpriv"))) {
            return List.of("/usr/bin/setpriv", "--reuid=" + UID, "--regid=" + UID, "--clear-groups");
        }
        return List.of("runuser", "-u", "nobody", "--");
    }

    /** What a command printed (stdout and stderr) and its exit code. */
    static final class Result {
        final int exitCode;
        final String output;

        Result(int exitCode, String output) {
            this.exitCode = exitCode;
            this.output = output;
        }
    }

    /** Runs {@code script} with {@code /bin/sh -c} as the other user and waits for it (at most 60 s). */
    static Result run(String script) throws IOException, InterruptedException {
        Process p = start(script);
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IOException("the other user's command did not finish in 60 s: " + script);
        }
        return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8));
    }

    /** Starts {@code script} as the other user (stderr merged into stdout); the caller ends it. */
    static Process start(String script) throws IOException {
        List<String> command = new ArrayList<>(prefix());
        command.addAll(Arrays.asList("/bin/sh", "-c", script));
        return new ProcessBuilder(command).redirectErrorStream(true).directory(new java.io.File("/")).start();
    }

    /** Runs {@code script} as the other user and fails the test unless it exits 0. */
    static String must(String script) throws IOException, InterruptedException {
        Result r = run(script);
        if (r.exitCode != 0) {
            throw new AssertionError("as uid " + UID + ": '" + script + "' exited " + r.exitCode + ": " + r.output);
        }
        return r.output;
    }

    /** A new folder under /tmp that everyone can read but only this user can write (for files the other user reads). */
    static Path sharedFolder(String prefix) throws IOException {
        Path dir = Files.createTempDirectory(Paths.get("/tmp"), prefix);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        return dir;
    }

    /** A path under /tmp that does not exist yet, for the other user to create. */
    static Path newPathInTmp(String prefix) {
        return Paths.get("/tmp", prefix + ProcessHandle.current().pid() + "-" + Long.toUnsignedString(System.nanoTime(), 36));
    }

    /** Deletes a folder tree (this process is root, so it may delete the other user's files too). */
    static void deleteTree(Path dir) {
        if (dir == null || !Files.exists(dir, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (java.util.stream.Stream<Path> all = Files.walk(dir)) {
            all.sorted(java.util.Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException ignored) {
                    // best effort: a temporary folder
                }
            });
        } catch (IOException ignored) {
            // best effort
        }
    }
}
