package dev.cuhandle;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Sets {@code cuhandle.transfer.*} system properties for a block and restores the previous values
 * when closed. {@link #tiny()} makes small arrays take every path of the copy pipeline: several
 * chunks per range, several ranges on several threads, staging slots recycled within one copy.
 */
final class TransferProperties implements AutoCloseable {
    /** Chunks of 4 KiB (the smallest a plan makes), a new thread every 8 KiB, up to 4 threads, 2 slots each. */
    static final int TINY_CHUNK = 4096;
    private final Map<String, String> previous = new LinkedHashMap<>();

    private TransferProperties(Map<String, Object> values) {
        values.forEach((name, value) -> {
            previous.put(name, System.getProperty(name));
            System.setProperty(name, String.valueOf(value));
        });
    }

    static TransferProperties set(Map<String, Object> values) {
        return new TransferProperties(values);
    }

    static TransferProperties tiny() {
        return tinyWith(Map.of());
    }

    /** {@link #tiny()} and {@code more} besides. */
    static TransferProperties tinyWith(Map<String, Object> more) {
        Map<String, Object> values = new java.util.HashMap<>(Map.of(TransferPlan.CHUNK_BYTES, TINY_CHUNK, TransferPlan.MIN_CHUNK_BYTES, TINY_CHUNK,
                TransferPlan.BYTES_PER_THREAD, 2 * TINY_CHUNK, TransferPlan.THREADS, 4, TransferPlan.DEPTH, 2));
        values.putAll(more);
        return set(values);
    }

    @Override
    public void close() {
        previous.forEach((name, value) -> {
            if (value == null) {
                System.clearProperty(name);
            } else {
                System.setProperty(name, value);
            }
        });
    }
}
