package dev.cuhandle;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
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
 * Loads libcuhandle: from {@code -Dcuhandle.library.path} if set (an absolute path: it is trusted configuration,
 * see docs/security.md), else from its per-user cached copy ({@link NativeLibraryCache}, written by the first start),
 * else, when that cannot be used, extracted from the JAR to a uniquely named temporary file (safe with concurrent
 * JVMs) in {@code -Dcuhandle.tmpdir}, default {@code java.io.tmpdir}. The folder must be one no other user can
 * write to, except a sticky one such as {@code /tmp} ({@link TrustedFolder}); the file is created exclusively,
 * written through the channel of that create, and checked to be the same file before it is loaded. Every path
 * tried, and every folder refused with why, is reported.
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
        String o = os.contains("linux") ? "linux" : os.replace(" ", "");
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
            Path p = Paths.get(override);
            if (!p.isAbsolute()) {
                // It chooses the code this process runs: a relative path would depend on the working directory.
                tried.add(override + " (-D" + PATH_PROPERTY + "): not an absolute path; name the file from the root");
                throw failure(tried, null);
            }
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
        long t0 = System.nanoTime();
        List<String> notCached = new ArrayList<>();
        Loaded cached = NativeLibraryCache.load(resource, SYSTEM_LOAD, t0, notCached);
        if (cached != null) {
            return cached;
        }
        if (!notCached.isEmpty()) {
            tried.add("the per-user cache: " + String.join("; ", notCached));
        }
        try (InputStream in = NativeLoader.class.getResourceAsStream(resource)) {
            if (in == null) {
                tried.add("class path resource " + resource + ": not found (this JAR has no native library for " + platform() + ")");
                throw failure(tried, null);
            }
            List<String> refused = new ArrayList<>();
            Path dir = extractionFolder(refused);
            if (dir == null) {
                tried.add("no folder is safe to extract " + resource + " into: " + String.join("; ", refused));
                throw failure(tried, null);
            }
            try {
                Loaded extracted = extractAndLoad(in, dir, SYSTEM_LOAD, t0, resource, refused);
                return notCached.isEmpty() ? extracted
                        : new Loaded(extracted.source + " (not cached: " + String.join("; ", notCached) + ")", extracted.extractNanos, extracted.systemLoadNanos);
            } catch (ExtractionFailure e) {
                tried.add(e.where + ": " + e.getCause());
                throw failure(tried, e.getCause());
            }
        } catch (IOException e) {
            tried.add(resource + ": " + e);
            throw failure(tried, e);
        }
    }

    /** What loads the verified file: {@link #SYSTEM_LOAD}, or a test's stand-in that records what it would run. */
    interface Load {
        void load(String absolutePath);
    }

    /**
     * {@code System.load}, as a class and not a method reference: the loader runs on every cold start, and the
     * JVM's first lambda or method reference costs a fresh JVM about 15 ms of {@code java.lang.invoke} set-up
     * (issue 35), so the start-up path has none.
     */
    static final Load SYSTEM_LOAD = new Load() {
        @Override
        public void load(String absolutePath) {
            System.load(absolutePath);
        }
    };

    /** An extraction or load that failed, with the file (or folder) it concerned; the cause says why. */
    static final class ExtractionFailure extends Exception {
        private static final long serialVersionUID = 1L;
        final String where;

        ExtractionFailure(String where, Throwable cause) {
            super(where + ": " + cause, cause);
            this.where = where;
        }
    }

    /**
     * Writes {@code in} to a new file in {@code checkedFolder} (a path {@link TrustedFolder#check} returned, used as
     * is: never looked up again by another name), checks that the path still names that file, hands it to
     * {@code loader}, and deletes it whatever happens (Linux keeps a loaded library's mapping after unlink, so
     * nothing is left behind, also when the load fails). {@code started} is when finding the library began;
     * {@code resource} and the folders {@code refused} before this one describe where it came from.
     */
    static Loaded extractAndLoad(InputStream in, Path checkedFolder, Load loader, long started, String resource, List<String> refused)
            throws ExtractionFailure {
        Extracted extracted = null;
        try {
            extracted = extract(in, checkedFolder);
            extracted.verifyUnchanged();
            long t0 = System.nanoTime();
            loader.load(extracted.file.toString());
            long loadNanos = System.nanoTime() - t0;
            String source = "class path resource " + resource + " (extracted to " + extracted.file + ", a temporary copy deleted once loaded"
                    + (refused.isEmpty() ? "" : "; not into " + String.join("; ", refused)) + ")";
            return new Loaded(source, t0 - started, loadNanos);
        } catch (IOException | UnsatisfiedLinkError e) {
            throw new ExtractionFailure(extracted != null ? extracted.file.toString() : checkedFolder.toString(), e);
        } finally {
            if (extracted != null) {
                extracted.delete();
            }
        }
    }

    /**
     * The folder to extract into: {@code -Dcuhandle.tmpdir}, else (or when it fails the checks) {@code java.io.tmpdir},
     * whichever first passes {@link TrustedFolder#check} for {@link TrustedFolder.Use#EXTRACTION}, as that check
     * resolved it (the caller uses this path and no other name for it); null when none does. Each folder refused is
     * added to {@code refused} with why, and a refused {@code -Dcuhandle.tmpdir} is logged: in a folder other users
     * can write, one of them could swap the library before it is loaded. A relative setting is refused: it would
     * depend on the working directory.
     */
    static Path extractionFolder(List<String> refused) {
        String configured = System.getProperty(TMPDIR_PROPERTY);
        String temp = System.getProperty("java.io.tmpdir");
        List<String> folders = new ArrayList<>();
        if (configured != null && !configured.isEmpty()) {
            folders.add(configured);
        }
        if (temp != null && !temp.isEmpty() && !folders.contains(temp)) {
            folders.add(temp);
        }
        for (String folder : folders) {
            Path dir = Paths.get(folder);
            String problem;
            if (Files.isDirectory(dir) || !dir.isAbsolute()) {
                TrustedFolder.Checked checked = TrustedFolder.check(dir, TrustedFolder.Use.EXTRACTION);
                if (checked.path != null) {
                    if (!refused.isEmpty()) {
                        NativeLog.logger().log(System.Logger.Level.WARNING, "cuhandle: the native library is extracted to " + checked.path
                                + ", not into " + String.join("; ", refused) + " (see docs/security.md)");
                    }
                    return checked.path;
                }
                problem = checked.problem;
            } else {
                problem = dir + " is not a directory";
            }
            refused.add((folder.equals(configured) ? "-D" + TMPDIR_PROPERTY + "=" : "java.io.tmpdir=") + folder + " (" + problem + ")");
        }
        return null;
    }

    /** The library written to a new file, and that file's identity (device and inode) from when it was created. */
    static final class Extracted {
        final Path file;
        private final Object identity;
        private final long size;

        Extracted(Path file, Object identity, long size) {
            this.file = file;
            this.identity = identity;
            this.size = size;
        }

        /**
         * Throws unless the path still names the file that was created and written: same device and inode, a
         * regular file (not a link) of the written size, writable by its owner alone. The folder passed the trust
         * checks, so nobody else can rename a file over it; this is the check that it really did not happen.
         */
        void verifyUnchanged() throws IOException {
            BasicFileAttributes now = Files.readAttributes(file, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            String problem = TrustedFolder.fileProblem(file);
            if (identity == null || !identity.equals(now.fileKey()) || now.size() != size || problem != null) {
                throw new IOException(file + " was replaced between being written and being loaded (identity " + identity + " -> " + now.fileKey()
                        + ", " + size + " -> " + now.size() + " bytes" + (problem != null ? ", " + problem : "") + "); not loading it");
            }
        }

        void delete() {
            try {
                Files.deleteIfExists(file);
            } catch (IOException ignored) {
                file.toFile().deleteOnExit();
            }
        }
    }

    /**
     * Creates a new file readable and writable by the owner only ({@code open} with {@code O_CREAT|O_EXCL}, mode
     * 0600), named {@code libcuhandle-<random>.so}, and writes {@code in} into it through the channel of that very
     * create: the file is never opened again by its name before it is loaded, so no one can swap what gets written.
     * Unlike {@code Files.createTempFile} it needs no {@code SecureRandom}, whose set-up costs a fresh JVM about
     * 10 ms: the name needs no secrecy, because an exclusive create never opens (or follows a link to) a file
     * someone else made; a name taken already is retried with another.
     */
    static Extracted extract(InputStream in, Path dir) throws IOException {
        FileAttribute<Set<PosixFilePermission>> ownerOnly = PosixFilePermissions.asFileAttribute(
                EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE));
        for (int attempt = 0; ; attempt++) {
            Path file = dir.resolve("libcuhandle-" + Long.toUnsignedString(ThreadLocalRandom.current().nextLong(), 36) + ".so");
            FileChannel out;
            try {
                out = FileChannel.open(file, EnumSet.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE), ownerOnly);
            } catch (FileAlreadyExistsException taken) {
                if (attempt == 99) {
                    throw taken;
                }
                continue;
            }
            try (FileChannel channel = out) {
                Object identity = Files.readAttributes(file, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS).fileKey();
                long size = writeInto(in, channel);
                return new Extracted(file, identity, size);
            } catch (IOException | RuntimeException e) {
                Files.deleteIfExists(file);
                throw e;
            }
        }
    }

    /** Copies {@code in} to {@code out}; returns the number of bytes. */
    static long writeInto(InputStream in, WritableByteChannel out) throws IOException {
        // A 64 KiB buffer instead of transferTo's 8 KiB one: the JAR entry is copied straight into
        // it in fewer calls, which shortens every start (docs/measurements.md); larger gains nothing.
        byte[] buffer = new byte[COPY_BUFFER_BYTES];
        long total = 0;
        for (int n; (n = in.read(buffer)) != -1; ) {
            ByteBuffer chunk = ByteBuffer.wrap(buffer, 0, n);
            while (chunk.hasRemaining()) {
                out.write(chunk);
            }
            total += n;
        }
        return total;
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
