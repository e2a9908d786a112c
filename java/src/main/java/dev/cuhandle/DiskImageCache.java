package dev.cuhandle;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;

/**
 * The optional on-disk cache of NVRTC's images, so that a compile survives the process: off unless
 * {@code -Dcuhandle.compileCache.dir=<folder>} names a folder, or {@code -Dcuhandle.compileCache=disk} asks for
 * the user's cache folder ({@code $XDG_CACHE_HOME/cuhandle/nvrtc}, else {@code ~/.cache/cuhandle/nvrtc}). Entries
 * are named by the compilation's key ({@link RuntimeCompiler#key}); each holds the image after its own SHA-256, so
 * a truncated or altered file is a miss (and is deleted), never a bad image. Writes go to a temporary file that is
 * renamed into place, so concurrent JVMs never read half an entry. Every I/O failure is a logged miss: the cache
 * can only make compiling faster, never make it fail.
 */
final class DiskImageCache {
    static final String DIR_PROPERTY = "cuhandle.compileCache.dir";
    static final String MODE_PROPERTY = "cuhandle.compileCache";
    private static final int DIGEST_BYTES = 32;

    private DiskImageCache() {}

    /** The cache folder, or null when the disk cache is off. Read at each use, so tests can switch it. */
    static Path folder() {
        String dir = System.getProperty(DIR_PROPERTY);
        if (dir != null && !dir.isEmpty()) {
            return Paths.get(dir);
        }
        if (!"disk".equals(System.getProperty(MODE_PROPERTY))) {
            return null;
        }
        String xdg = System.getenv("XDG_CACHE_HOME");
        Path base = xdg != null && !xdg.isEmpty() ? Paths.get(xdg) : Paths.get(System.getProperty("user.home"), ".cache");
        return base.resolve("cuhandle").resolve("nvrtc");
    }

    /** The image stored under {@code key}, or null (off, absent, unreadable or damaged). */
    static byte[] get(String key) {
        Path dir = folder();
        if (dir == null) {
            return null;
        }
        Path file = dir.resolve(key + ".img");
        try {
            if (!Files.isRegularFile(file)) {
                return null;
            }
            byte[] stored = Files.readAllBytes(file);
            if (stored.length > DIGEST_BYTES) {
                byte[] image = Arrays.copyOfRange(stored, DIGEST_BYTES, stored.length);
                if (Arrays.equals(sha256(image), Arrays.copyOf(stored, DIGEST_BYTES))) {
                    return image;
                }
            }
            NativeLog.logger().log(Level.WARNING, "cuhandle: the compile cache entry " + file + " is damaged; deleting it and compiling again");
            Files.deleteIfExists(file);
        } catch (IOException e) {
            NativeLog.logger().log(Level.DEBUG, "cuhandle: reading the compile cache entry " + file + " failed: " + e);
        }
        return null;
    }

    /** Stores {@code image} under {@code key} if the cache is on; failures are logged and otherwise ignored. */
    static void put(String key, byte[] image) {
        Path dir = folder();
        if (dir == null) {
            return;
        }
        Path temp = null;
        try {
            if (!Files.isDirectory(dir)) {
                Files.createDirectories(dir);
                setOwnerOnly(dir);
            }
            temp = Files.createTempFile(dir, key, ".tmp");
            Files.write(temp, ByteBuffer.allocate(DIGEST_BYTES + image.length).put(sha256(image)).put(image).array());
            try {
                Files.move(temp, dir.resolve(key + ".img"), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(temp, dir.resolve(key + ".img"), StandardCopyOption.REPLACE_EXISTING);
            }
            temp = null;
        } catch (IOException | RuntimeException e) {
            NativeLog.logger().log(Level.DEBUG, "cuhandle: writing to the compile cache " + dir + " failed: " + e);
        } finally {
            if (temp != null) {
                try {
                    Files.deleteIfExists(temp);
                } catch (IOException ignored) {
                    // The entry was not written; a stray temporary file is harmless.
                }
            }
        }
    }

    /** Other users must not plant images in a cache folder we made (they would run as this user's kernels). */
    private static void setOwnerOnly(Path dir) {
        try {
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
        } catch (IOException | UnsupportedOperationException e) {
            NativeLog.logger().log(Level.DEBUG, "cuhandle: cannot restrict " + dir + " to its owner: " + e);
        }
    }

    private static byte[] sha256(byte[] bytes) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(bytes);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required of every Java platform", e);
        }
    }
}
