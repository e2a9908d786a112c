package dev.cuhandle;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The optional on-disk cache of NVRTC's images, so that a compile survives the process: off unless
 * {@code -Dcuhandle.compileCache.dir=<folder>} names a folder, or {@code -Dcuhandle.compileCache=disk} asks for
 * the user's cache folder ({@code $XDG_CACHE_HOME/cuhandle/nvrtc}, else {@code ~/.cache/cuhandle/nvrtc}). Entries
 * are named by the compilation's key ({@link RuntimeCompiler#key}); each holds the image after its own SHA-256, so
 * a truncated or altered file is a miss (and is deleted), never a bad image.
 *
 * <p>An entry is code this process will run, and its SHA-256 only detects damage (anyone can compute it), so the
 * folder is checked on every use ({@link TrustedFolder}, {@link TrustedFolder.Use#CACHE}): owned by this user,
 * writable by nobody else, and so is every folder above it; that use then goes through the path the check resolved,
 * never the configured name again. Each entry is opened without following a link and must be, as opened, this
 * user's own regular file with one name ({@code rust/src/core/own_file.rs}).
 * A folder that fails is not used at all, with one warning per folder (compiling goes on without the cache).
 *
 * <p>The cache is bounded: entries are at most {@link #MAX_ENTRY_BYTES}, a file's size is checked before anything
 * is allocated for it, and {@link DiskCacheBudget} keeps the folder under {@code -Dcuhandle.compileCache.maxBytes}
 * (least recently used out first) and removes temporary files that writers left behind. Writes go to a temporary
 * file, created exclusively and written through its own channel, then renamed into place, so concurrent JVMs
 * never read half an entry. Every failure, of any kind, is a logged miss: the cache can only make compiling
 * faster, never make it fail.
 */
final class DiskImageCache {
    static final String DIR_PROPERTY = "cuhandle.compileCache.dir";
    static final String MODE_PROPERTY = "cuhandle.compileCache";
    static final String MAX_BYTES_PROPERTY = "cuhandle.compileCache.maxBytes";
    /** The folder's default cap, as the CUDA driver's own JIT cache ({@code CUDA_CACHE_MAXSIZE}). */
    static final long DEFAULT_MAX_BYTES = 256L << 20;
    /**
     * The largest image kept: NVRTC's images of one architecture come nowhere near it, and a larger file is no entry
     * of ours (reading it whole could exhaust the heap).
     */
    static final long MAX_ENTRY_BYTES = 64L << 20;
    private static final int DIGEST_BYTES = 32;
    private static final String ENTRY_SUFFIX = ".img";
    private static final String TEMP_SUFFIX = ".tmp";

    /** Folders already warned about (exactly one warning per folder and process). */
    private static final Set<String> WARNED = ConcurrentHashMap.newKeySet();
    private static final DiskCacheBudget BUDGET = new DiskCacheBudget();

    private DiskImageCache() {}

    /**
     * The cache folder, or null when the disk cache is off. Read at each use, so tests can switch it. A relative
     * {@code -Dcuhandle.compileCache.dir} turns the cache off with a warning (it would depend on the working
     * directory); a relative {@code XDG_CACHE_HOME} is ignored, as the XDG specification says, for {@code ~/.cache}.
     */
    static Path folder() {
        String dir = System.getProperty(DIR_PROPERTY);
        if (dir != null && !dir.isEmpty()) {
            Path p = Paths.get(dir);
            if (!p.isAbsolute()) {
                warnOnce(DIR_PROPERTY + "=" + dir, "cuhandle: -D" + DIR_PROPERTY + "=" + dir + " is not an absolute path (a relative one would depend on"
                        + " the working directory); the compile cache is off. Name the folder from the root (see docs/security.md)");
                return null;
            }
            return p;
        }
        if (!"disk".equals(System.getProperty(MODE_PROPERTY))) {
            return null;
        }
        Path folder = TrustedFolder.userCacheFolder("nvrtc");
        if (folder == null) {
            warnOnce("user.home", "cuhandle: user.home (" + System.getProperty("user.home", "") + ") is not an absolute path and XDG_CACHE_HOME"
                    + " names no absolute folder; the compile cache is off");
        }
        return folder;
    }

    /** The folder's cap in bytes: {@code -Dcuhandle.compileCache.maxBytes} (e.g. {@code 1073741824}, {@code 512m}, {@code 2g}). */
    static long maxBytes() {
        String value = System.getProperty(MAX_BYTES_PROPERTY);
        if (value == null || value.isEmpty()) {
            return DEFAULT_MAX_BYTES;
        }
        String v = value.trim().toLowerCase(Locale.ROOT);
        int shift = v.endsWith("k") ? 10 : v.endsWith("m") ? 20 : v.endsWith("g") ? 30 : 0;
        try {
            long n = Long.parseLong(shift == 0 ? v : v.substring(0, v.length() - 1));
            if (n > 0 && n <= (Long.MAX_VALUE >> shift)) {
                return n << shift;
            }
        } catch (NumberFormatException e) {
            // warned below
        }
        warnOnce(MAX_BYTES_PROPERTY, "-D" + MAX_BYTES_PROPERTY + "=" + value + " is not a positive number of bytes (e.g. 268435456, 256m, 1g); using "
                + DEFAULT_MAX_BYTES);
        return DEFAULT_MAX_BYTES;
    }

    /** The image stored under {@code key}, or null (off, untrusted, absent, unreadable, oversized or damaged). */
    static byte[] get(String key) {
        Path dir = folder();
        if (dir == null || !Files.exists(dir)) {
            return null;
        }
        Path trusted = trusted(dir);
        if (trusted == null) {
            return null;
        }
        Path file = trusted.resolve(key + ENTRY_SUFFIX);
        try {
            // Opened without following a link or blocking on a FIFO, and checked on the opened file (owner, mode, one
            // name, size) before anything is allocated for it: no name is looked up twice.
            Native.ensureLoaded();
            Object read = NativeApi.readOwnFile(file.toString(), TrustedFolder.currentUid(), DIGEST_BYTES, DIGEST_BYTES + MAX_ENTRY_BYTES);
            if (read == null) {
                return null;
            }
            if (read instanceof String) {
                return discard(file, (String) read);
            }
            byte[] bytes = (byte[]) read;
            byte[] image = Arrays.copyOfRange(bytes, DIGEST_BYTES, bytes.length);
            if (!Arrays.equals(sha256(image), Arrays.copyOf(bytes, DIGEST_BYTES))) {
                return discard(file, "its SHA-256 does not match (a damaged entry)");
            }
            // The budget removes the least recently used first: a hit makes an entry recent.
            Files.setLastModifiedTime(file, FileTime.fromMillis(System.currentTimeMillis()));
            return image;
        } catch (NoSuchFileException e) {
            return null;
        } catch (IOException | RuntimeException | OutOfMemoryError e) {
            // OutOfMemoryError too: an entry within MAX_ENTRY_BYTES may still not fit a small heap.
            NativeLog.logger().log(Level.DEBUG, "cuhandle: reading the compile cache entry " + file + " failed: " + e);
            return null;
        }
    }

    /** Stores {@code image} under {@code key} if the cache is on and its folder trusted; failures are logged and otherwise ignored. */
    static void put(String key, byte[] image) {
        Path dir = folder();
        if (dir == null) {
            return;
        }
        long entryBytes = DIGEST_BYTES + (long) image.length;
        long cap = maxBytes();
        if (image.length > MAX_ENTRY_BYTES || entryBytes > cap) {
            NativeLog.logger().log(Level.DEBUG, "cuhandle: an image of " + image.length + " bytes is not kept in the compile cache (cap " + cap + " bytes)");
            return;
        }
        Path temp = null;
        try {
            if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
                Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
            }
            Path trusted = trusted(dir);
            if (trusted == null) {
                return;
            }
            BUDGET.makeRoom(trusted, entryBytes, cap);
            temp = trusted.resolve(key + "." + Long.toUnsignedString(ThreadLocalRandom.current().nextLong(), 36) + TEMP_SUFFIX);
            // CREATE_NEW never opens (or follows a link to) a file that is there already.
            try (SeekableByteChannel out = Files.newByteChannel(temp, EnumSet.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")))) {
                ByteBuffer bytes = ByteBuffer.allocate((int) entryBytes).put(sha256(image)).put(image);
                bytes.flip();
                while (bytes.hasRemaining()) {
                    out.write(bytes);
                }
            }
            Path entry = trusted.resolve(key + ENTRY_SUFFIX);
            try {
                Files.move(temp, entry, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(temp, entry, StandardCopyOption.REPLACE_EXISTING);
            }
            temp = null;
            BUDGET.added(trusted, entryBytes);
        } catch (IOException | RuntimeException | OutOfMemoryError e) {
            NativeLog.logger().log(Level.DEBUG, "cuhandle: writing to the compile cache " + dir + " failed: " + e);
        } finally {
            if (temp != null) {
                try {
                    Files.deleteIfExists(temp);
                } catch (IOException ignored) {
                    // Left for the budget's removal of stale temporary files.
                }
            }
        }
    }

    /**
     * The folder as {@link TrustedFolder#check} resolved it, if it passes the checks, else null (after the folder's one
     * warning). Everything this call of {@link #get} or {@link #put} does goes through the returned path.
     */
    private static Path trusted(Path dir) {
        TrustedFolder.Checked checked = TrustedFolder.check(dir, TrustedFolder.Use.CACHE);
        if (checked.problem != null) {
            warnOnce(dir.toString(), "cuhandle: the compile cache folder " + dir + " is not used: " + checked.problem
                    + ". Another user could plant compiled code there that this process would run; compiling goes on without the disk cache"
                    + " (see docs/security.md)");
        }
        return checked.path;
    }

    private static void warnOnce(String subject, String message) {
        if (WARNED.add(subject)) {
            NativeLog.logger().log(Level.WARNING, message);
        }
    }

    /** A miss for an entry that must not be used: it is deleted (the folder is this user's own), and null returned. */
    private static byte[] discard(Path file, String why) {
        NativeLog.logger().log(Level.WARNING, "cuhandle: the compile cache entry " + file + " is not used (" + why + "); deleting it and compiling again");
        try {
            Files.deleteIfExists(file);
        } catch (IOException | RuntimeException e) {
            NativeLog.logger().log(Level.DEBUG, "cuhandle: deleting " + file + " failed: " + e);
        }
        return null;
    }

    /** Whether {@code name} is an entry's file name (64 hex digits + ".img"). */
    static boolean isEntryName(String name) {
        return name.length() == 64 + ENTRY_SUFFIX.length() && name.endsWith(ENTRY_SUFFIX) && isHex(name.substring(0, 64));
    }

    /** Whether {@code name} is the name of a temporary file {@link #put} writes (key, ".", random, ".tmp"). */
    static boolean isTempName(String name) {
        return name.length() > 66 + TEMP_SUFFIX.length() && name.endsWith(TEMP_SUFFIX) && name.charAt(64) == '.' && isHex(name.substring(0, 64));
    }

    private static boolean isHex(String s) {
        return s.chars().allMatch(c -> (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
    }

    private static byte[] sha256(byte[] bytes) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(bytes);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required of every Java platform", e);
        }
    }
}
