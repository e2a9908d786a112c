package dev.cuhandle;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Keeps the compile cache's folder under its byte cap: when an entry would take it over, the least recently used
 * entries ({@link DiskImageCache} refreshes an entry's modification time on each hit) are removed until the folder
 * is at most {@link #LOW_WATER} of the cap with the new entry; the same sweep removes temporary files that writers
 * left behind (a killed JVM, a full disk) once they are {@link #STALE_TEMP_MILLIS} old. Only files named as the
 * cache names them are touched, whatever else the folder holds.
 *
 * <p>The folder is listed only when this process's running total says an entry would not fit, and at least every
 * {@link #SWEEP_EVERY} writes; between listings the total counts this process's own writes. Other processes
 * writing to the same folder are seen at the next listing, so several writers together may pass the cap by what
 * they wrote since their last listing (at most a tenth of the cap each, plus {@link #SWEEP_EVERY} entries).
 */
final class DiskCacheBudget {
    /** After an eviction the folder holds at most this share of the cap, so that listings stay rare. */
    static final double LOW_WATER = 0.9;
    /** A temporary file older than this was left by a writer that died: a write takes milliseconds. */
    static final long STALE_TEMP_MILLIS = 10 * 60 * 1000L;
    /** The folder is listed again after this many writes even when the running total says there is room. */
    static final int SWEEP_EVERY = 100;

    private Path folder;
    /** The folder's entries in bytes as last listed, plus this process's writes since; -1 before the first listing. */
    private long total = -1;
    private int writesSinceSweep;

    /** Called before an entry of {@code incoming} bytes is written into {@code folder} (a trusted folder). */
    synchronized void makeRoom(Path folder, long incoming, long cap) {
        if (!folder.equals(this.folder) || total < 0 || writesSinceSweep >= SWEEP_EVERY || total + incoming > cap) {
            sweep(folder, incoming, cap);
        }
    }

    /** Called after an entry of {@code bytes} was written. */
    synchronized void added(Path folder, long bytes) {
        if (folder.equals(this.folder) && total >= 0) {
            total += bytes;
            writesSinceSweep++;
        }
    }

    /** An entry's file as listed. */
    private static final class Entry {
        final Path file;
        final long size;
        final long modifiedMillis;

        Entry(Path file, BasicFileAttributes a) {
            this.file = file;
            this.size = a.size();
            this.modifiedMillis = a.lastModifiedTime().toMillis();
        }
    }

    private void sweep(Path folder, long incoming, long cap) {
        List<Entry> entries = new ArrayList<>();
        long now = System.currentTimeMillis();
        long sum = 0;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(folder)) {
            for (Path file : files) {
                String name = file.getFileName().toString();
                boolean entry = DiskImageCache.isEntryName(name);
                if (!entry && !DiskImageCache.isTempName(name)) {
                    continue;
                }
                BasicFileAttributes a;
                try {
                    a = Files.readAttributes(file, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
                } catch (IOException gone) {
                    continue; // removed meanwhile by another process
                }
                if (!entry) {
                    if (now - a.lastModifiedTime().toMillis() > STALE_TEMP_MILLIS) {
                        delete(file);
                    }
                    continue;
                }
                entries.add(new Entry(file, a));
                sum += a.size();
            }
        } catch (IOException | RuntimeException e) {
            NativeLog.logger().log(Level.DEBUG, "cuhandle: listing the compile cache " + folder + " failed: " + e);
            return;
        }
        if (sum + incoming > cap) {
            long target = Math.max(0, Math.min(cap, (long) (cap * LOW_WATER)) - incoming);
            entries.sort(Comparator.comparingLong(e -> e.modifiedMillis));
            for (int i = 0; i < entries.size() && sum > target; i++) {
                if (delete(entries.get(i).file)) {
                    sum -= entries.get(i).size;
                }
            }
        }
        this.folder = folder;
        this.total = sum;
        this.writesSinceSweep = 0;
    }

    private static boolean delete(Path file) {
        try {
            return Files.deleteIfExists(file);
        } catch (IOException | RuntimeException e) {
            NativeLog.logger().log(Level.DEBUG, "cuhandle: removing " + file + " from the compile cache failed: " + e);
            return false;
        }
    }
}
