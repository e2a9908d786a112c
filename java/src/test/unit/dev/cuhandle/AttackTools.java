package dev.cuhandle;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The attacker's tools of issue 26, built with {@code cc} from the test resources {@code dev/cuhandle/attack}: a
 * shared library whose constructor records that it ran (in the file named by {@code CUHANDLE_ATTACK_MARKER}), an
 * inotify watcher that renames it over a freshly written {@code libcuhandle-*.so}, and (issue 38) a racer that
 * exchanges two names in a tight loop, so that a path looked up twice leads to two different places. They go into a folder every user
 * can read, so that the other user ({@link OtherUser}) can use them too. Tests skip without a C compiler.
 */
final class AttackTools implements AutoCloseable {
    /** The environment variable naming the file the planted library's constructor appends to. */
    static final String MARKER_ENV = "CUHANDLE_ATTACK_MARKER";

    final Path folder;
    final Path plantedLibrary;
    final Path swapWatcher;
    final Path raceSwap;

    private AttackTools(Path folder) {
        this.folder = folder;
        this.plantedLibrary = folder.resolve("planted.so");
        this.swapWatcher = folder.resolve("swap_watcher");
        this.raceSwap = folder.resolve("race_swap");
    }

    static AttackTools build() throws IOException, InterruptedException {
        AttackTools tools = new AttackTools(OtherUser.sharedFolder("cuhandle-attack-tools-"));
        try {
            Path library = tools.copy("planted_library.c");
            Path watcher = tools.copy("swap_watcher.c");
            Path racer = tools.copy("race_swap.c");
            tools.cc("-shared", "-fPIC", "-o", tools.plantedLibrary.toString(), library.toString());
            tools.cc("-O1", "-o", tools.swapWatcher.toString(), watcher.toString());
            tools.cc("-O1", "-o", tools.raceSwap.toString(), racer.toString());
            Files.setPosixFilePermissions(tools.plantedLibrary, PosixFilePermissions.fromString("rwxr-xr-x"));
            return tools;
        } catch (IOException | InterruptedException | RuntimeException | Error e) {
            tools.close();
            throw e;
        }
    }

    private Path copy(String resource) throws IOException {
        Path target = folder.resolve(resource);
        try (InputStream in = AttackTools.class.getResourceAsStream("attack/" + resource)) {
            if (in == null) {
                throw new IOException("test resource dev/cuhandle/attack/" + resource + " is missing");
            }
            Files.copy(in, target, StandardCopyOption.REPLACE_EXISTING);
        }
        return target;
    }

    private void cc(String... args) throws IOException, InterruptedException {
        List<String> command = new java.util.ArrayList<>(List.of("cc"));
        command.addAll(List.of(args));
        Process p;
        try {
            p = new ProcessBuilder(command).redirectErrorStream(true).start();
        } catch (IOException e) {
            assumeTrue(false, "no C compiler (cc) to build the attacker's library: " + e.getMessage());
            throw e;
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException("cc " + String.join(" ", args) + " failed: " + out);
        }
    }

    @Override
    public void close() {
        OtherUser.deleteTree(folder);
    }
}
