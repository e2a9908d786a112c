package dev.cuhandle;

import dev.cuhandle.NativeLoader.Loaded;
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
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * {@link NativeLoader}'s fallback: libcuhandle extracted from the JAR to a uniquely named temporary file (safe with
 * concurrent JVMs) in {@code -Dcuhandle.tmpdir}, default {@code java.io.tmpdir}, when its per-user cached copy cannot
 * be used. The folder must be one no other user can write to, except a sticky one such as {@code /tmp}
 * ({@link TrustedFolder}); the file is created exclusively, written through the channel of that create, and checked to
 * be the same file before it is loaded. A class of its own, apart from the loader's usual path (the cached copy): a
 * fresh JVM loads every class that verifying a class needs (the exceptions this code catches, its helper classes),
 * and a start that finds its cached copy needs none of these (issue 35's cold start).
 */
final class NativeExtraction {
    private NativeExtraction() {}

    /**
     * Extracts {@code resource} and loads it, or throws the loader's failure naming everything in {@code tried}.
     * {@code started} is when finding the library began; {@code notCached} says why the cached copy was not used.
     */
    static Loaded fromJar(String resource, long started, List<String> tried, List<String> notCached) {
        try (InputStream in = NativeExtraction.class.getResourceAsStream(resource)) {
            if (in == null) {
                tried.add("class path resource " + resource + ": not found (this JAR has no native library for " + NativeLoader.platform() + ")");
                throw NativeLoader.failure(tried, null);
            }
            List<String> refused = new ArrayList<>();
            Path dir = extractionFolder(refused);
            if (dir == null) {
                tried.add("no folder is safe to extract " + resource + " into: " + String.join("; ", refused));
                throw NativeLoader.failure(tried, null);
            }
            try {
                Loaded extracted = extractAndLoad(in, dir, SYSTEM_LOAD, started, resource, refused);
                return notCached.isEmpty() ? extracted
                        : new Loaded(extracted.source + " (not cached: " + String.join("; ", notCached) + ")", extracted.extractNanos, extracted.systemLoadNanos);
            } catch (ExtractionFailure e) {
                tried.add(e.where + ": " + e.getCause());
                throw NativeLoader.failure(tried, e.getCause());
            }
        } catch (IOException e) {
            tried.add(resource + ": " + e);
            throw NativeLoader.failure(tried, e);
        }
    }

    /** What loads the verified file: {@link #SYSTEM_LOAD}, or a test's stand-in that records what it would run. */
    interface Load {
        void load(String absolutePath);
    }

    /**
     * {@code System.load}, as {@link #extractAndLoad}'s loader (tests pass one that records what it would run). A
     * class and not a method reference: this fallback runs in a start whose cached copy could not be used, and the
     * JVM's first lambda or method reference costs a fresh JVM about 15 ms of {@code java.lang.invoke} set-up
     * (issue 35).
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
        String configured = System.getProperty(NativeLoader.TMPDIR_PROPERTY);
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
            refused.add((folder.equals(configured) ? "-D" + NativeLoader.TMPDIR_PROPERTY + "=" : "java.io.tmpdir=") + folder + " (" + problem + ")");
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
}
