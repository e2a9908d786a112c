package dev.cuhandle;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The process's compiled module images, by a hash of everything that went into the compilation; least
 * recently used images are dropped beyond a count or a total size. Images, not libraries, are cached: a
 * {@link Library} is closed by its user, and a closed one must never be handed to another caller.
 *
 * <p>Thread-safe; the arrays it holds are never given out to users (a library load copies them).
 */
final class CompiledImageCache {
    private final int maxEntries;
    private final long maxBytes;
    private final LinkedHashMap<String, byte[]> images = new LinkedHashMap<>(16, 0.75f, true);
    private long bytes;

    CompiledImageCache(int maxEntries, long maxBytes) {
        this.maxEntries = maxEntries;
        this.maxBytes = maxBytes;
    }

    synchronized byte[] get(String key) {
        return images.get(key);
    }

    /** Stores an image; an image larger than the whole budget is not kept. */
    synchronized void put(String key, byte[] image) {
        if (image.length > maxBytes) {
            return;
        }
        byte[] previous = images.put(key, image);
        bytes += image.length - (previous == null ? 0 : previous.length);
        Iterator<Map.Entry<String, byte[]>> eldest = images.entrySet().iterator();
        while ((images.size() > maxEntries || bytes > maxBytes) && eldest.hasNext()) {
            Map.Entry<String, byte[]> e = eldest.next();
            bytes -= e.getValue().length;
            eldest.remove();
        }
    }

    synchronized int size() {
        return images.size();
    }

    synchronized void clear() {
        images.clear();
        bytes = 0;
    }
}
