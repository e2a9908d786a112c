package dev.cuhandle;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Loads libcuhandle: from {@code -Dcuhandle.library.path} if set, else extracted from the JAR to
 * a uniquely named temporary file (safe with concurrent JVMs; directory from
 * {@code -Dcuhandle.tmpdir}, default {@code java.io.tmpdir}). Every path tried is reported.
 */
final class NativeLoader {
    static final String PATH_PROPERTY = "cuhandle.library.path";
    static final String TMPDIR_PROPERTY = "cuhandle.tmpdir";

    private NativeLoader() {}

    /**
     * Where the library came from, for the environment report, and how long the steps took (two
     * {@code System.nanoTime()} differences, for the cold-start benchmark's breakdown).
     */
    static final class Loaded {
        final String source;
        /** Finding and writing the temporary copy; 0 with {@code -Dcuhandle.library.path}. */
        final long extractNanos;
        /** {@code System.load}: mapping the library and its dependencies, running its initialisers. */
        final long systemLoadNanos;

        Loaded(String source, long extractNanos, long systemLoadNanos) {
            this.source = source;
            this.extractNanos = extractNanos;
            this.systemLoadNanos = systemLoadNanos;
        }
    }

    static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        String o = os.contains("linux") ? "linux" : os.replaceAll("\\s+", "");
        String a = (arch.equals("amd64") || arch.equals("x86_64")) ? "x86-64" : arch;
        return o + "-" + a.replace("x86-64", "x86_64");
    }

    static String resourceName() {
        return "/META-INF/native/" + platform() + "/libcuhandle.so";
    }

    static Loaded load() {
        List<String> tried = new ArrayList<>();
        String override = System.getProperty(PATH_PROPERTY);
        if (override != null && !override.isEmpty()) {
            Path p = Paths.get(override).toAbsolutePath();
            try {
                long t0 = System.nanoTime();
                System.load(p.toString());
                return new Loaded(p + " (from -D" + PATH_PROPERTY + ")", 0, System.nanoTime() - t0);
            } catch (UnsatisfiedLinkError e) {
                tried.add(p + " (-D" + PATH_PROPERTY + "): " + e.getMessage());
                throw failure(tried, e);
            }
        }
        String resource = resourceName();
        Path extracted = null;
        long t0 = System.nanoTime();
        try (InputStream in = NativeLoader.class.getResourceAsStream(resource)) {
            if (in == null) {
                tried.add("class path resource " + resource + ": not found (this JAR has no native library for " + platform() + ")");
                throw failure(tried, null);
            }
            String dir = System.getProperty(TMPDIR_PROPERTY, System.getProperty("java.io.tmpdir"));
            extracted = createOwnerOnlyFile(Paths.get(dir));
            writeInto(in, extracted);
            long t1 = System.nanoTime();
            System.load(extracted.toString());
            return new Loaded("class path resource " + resource + " (extracted to " + extracted + ", a temporary copy deleted once loaded)",
                    t1 - t0, System.nanoTime() - t1);
        } catch (IOException | UnsatisfiedLinkError e) {
            tried.add((extracted != null ? extracted.toString() : resource) + ": " + e);
            throw failure(tried, e);
        } finally {
            // Linux keeps the mapping after unlink: nothing is left behind, even on a crash.
            if (extracted != null) {
                try {
                    Files.deleteIfExists(extracted);
                } catch (IOException ignored) {
                    extracted.toFile().deleteOnExit();
                }
            }
        }
    }

    /**
     * Creates a new, empty file readable and writable by the owner only ({@code open} with
     * {@code O_CREAT|O_EXCL}, mode 0600), named {@code libcuhandle-<random>.so}. Unlike
     * {@code Files.createTempFile} it needs no {@code SecureRandom}, whose set-up costs a fresh JVM
     * about 10 ms: the name needs no secrecy, because an exclusive create never opens (or follows a
     * link to) a file someone else made; a name taken already is retried with another.
     * Falls back to {@code createTempFile} where the file system has no POSIX permissions.
     */
    static Path createOwnerOnlyFile(Path dir) throws IOException {
        FileAttribute<Set<PosixFilePermission>> ownerOnly = PosixFilePermissions.asFileAttribute(
                EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE));
        for (int attempt = 0; ; attempt++) {
            Path file = dir.resolve("libcuhandle-" + Long.toUnsignedString(ThreadLocalRandom.current().nextLong(), 36) + ".so");
            try {
                return Files.createFile(file, ownerOnly);
            } catch (FileAlreadyExistsException taken) {
                if (attempt == 99) {
                    throw taken;
                }
            } catch (UnsupportedOperationException noPosix) {
                return Files.createTempFile(dir, "libcuhandle-", ".so");
            }
        }
    }

    /**
     * Writes into the file {@code createOwnerOnlyFile} made (owner-only permissions) without replacing
     * it: {@code Files.copy(..., REPLACE_EXISTING)} deletes and recreates it with the umask's
     * permissions, leaving a window in which another user could swap the library.
     */
    static void writeInto(InputStream in, Path file) throws IOException {
        try (OutputStream out = Files.newOutputStream(file, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
            // A 64 KiB buffer instead of transferTo's 8 KiB one: the JAR entry is inflated straight
            // into it in fewer calls (fresh JDK 17 JVMs, 2.7 MB library: 14 ms -> 11 ms; 1 MiB: no better).
            byte[] buffer = new byte[COPY_BUFFER_BYTES];
            for (int n; (n = in.read(buffer)) != -1; ) {
                out.write(buffer, 0, n);
            }
        }
    }

    /** The extraction's copy buffer. */
    private static final int COPY_BUFFER_BYTES = 1 << 16;

    private static CudaException failure(List<String> tried, Throwable cause) {
        String message = "the cuhandle native library could not be loaded; tried: " + String.join("; ", tried)
                + ". Set -D" + PATH_PROPERTY + "=/path/to/libcuhandle.so to use another copy, or -D" + TMPDIR_PROPERTY
                + "=/a/directory/that/allows/exec if the temporary directory is mounted noexec";
        int code = cause == null ? CudaError.FILE_NOT_FOUND.code() : CudaError.SHARED_OBJECT_INIT_FAILED.code();
        return new CudaException(code, "loading libcuhandle", message, cause);
    }
}
