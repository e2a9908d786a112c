package dev.cuhandle;

/**
 * How a copy between a Java array and the device is split (rule T1): into how many ranges, copied
 * by as many threads at once, and into what chunks each range moves through pinned staging. Chosen
 * by size from system properties, read at every copy so that a benchmark can sweep them:
 *
 * <ul>
 *   <li>{@value #THREADS}: the most threads one copy uses (default: 8, or fewer processors);
 *   <li>{@value #BYTES_PER_THREAD}: each range at least this long before one more thread joins
 *       (default 1 MiB): below it, handing a range to another thread costs more than it saves;
 *   <li>{@value #CHUNK_BYTES}: the largest chunk, also the size of the staging slots the pool
 *       allocates (default 4 MiB);
 *   <li>{@value #MIN_CHUNK_BYTES}: the smallest chunk of a range cut into several (default
 *       1 MiB): smaller ones cost more in driver calls than their overlap saves;
 *   <li>{@value #DEPTH}: staging slots per range (default 2, double buffering);
 *   <li>{@value #IDLE_SLOTS}: staging slots a context keeps for later copies (default 8);
 *   <li>{@value #CRITICAL_COPY}: {@code true} copies each chunk between the array and its staging
 *       slot with a {@code memcpy} inside a JNI critical region held for that copy alone (bounded,
 *       never across a wait for the GPU: rule L4), {@code false} with JNI's region copies (default true).
 * </ul>
 *
 * <p>A range is cut into {@link #CHUNKS_PER_RANGE} chunks where the size limits allow, so that the
 * host's copy of all but the first chunk overlaps a DMA. The defaults come from sweeps on an H200
 * host with 16 cores (docs/performance.md): the host's copies are what limits a large copy, so it
 * runs at about the threads' combined copy speed; in a copy of a few MiB each chunk's driver calls
 * (several microseconds each there, serialised on the stream) cost more than smaller chunks' overlap
 * gains, so a 4 MiB copy runs as four ranges of one chunk each.
 */
final class TransferPlan {
    static final String THREADS = "cuhandle.transfer.threads";
    static final String BYTES_PER_THREAD = "cuhandle.transfer.bytesPerThread";
    static final String CHUNK_BYTES = "cuhandle.transfer.chunkBytes";
    static final String MIN_CHUNK_BYTES = "cuhandle.transfer.minChunkBytes";
    static final String DEPTH = "cuhandle.transfer.depth";
    static final String IDLE_SLOTS = "cuhandle.transfer.idleSlots";
    static final String CRITICAL_COPY = "cuhandle.transfer.criticalCopy";

    static final int CHUNKS_PER_RANGE = 4;
    private static final int DEFAULT_THREADS = Math.min(8, Runtime.getRuntime().availableProcessors());
    private static final long MIB = 1L << 20;
    /** Chunks stay whole multiples of this, so that no element of any type straddles two. */
    private static final long ALIGN = 4096;

    /** Ranges (and threads) the copy is split into. */
    final int threads;
    /** Bytes per range (the last one may be shorter); a multiple of the element size. */
    final long rangeBytes;
    final long chunkBytes;
    final int depth;
    /** Size of the staging slots the pool allocates: the largest chunk, so that slots fit every copy. */
    final long slotBytes;
    final int idleSlots;
    final boolean criticalCopy;

    private TransferPlan(int threads, long rangeBytes, long chunkBytes, int depth, long slotBytes, int idleSlots, boolean criticalCopy) {
        this.threads = threads;
        this.rangeBytes = rangeBytes;
        this.chunkBytes = chunkBytes;
        this.depth = depth;
        this.slotBytes = slotBytes;
        this.idleSlots = idleSlots;
        this.criticalCopy = criticalCopy;
    }

    /** The plan for a copy of {@code bytes} bytes of elements of {@code elementBytes} bytes. */
    static TransferPlan of(long bytes, int elementBytes) {
        int maxThreads = (int) property(THREADS, DEFAULT_THREADS, 1, 64);
        long perThread = property(BYTES_PER_THREAD, MIB, 1, Long.MAX_VALUE);
        long maxChunk = roundDown(property(CHUNK_BYTES, 4 * MIB, ALIGN, 1L << 30));
        long minChunk = Math.min(maxChunk, roundDown(property(MIN_CHUNK_BYTES, MIB, ALIGN, 1L << 30)));
        int depth = (int) property(DEPTH, 2, 1, 16);
        int idle = (int) property(IDLE_SLOTS, 8, 0, 1024);

        int threads = (int) Math.max(1, Math.min(maxThreads, bytes / perThread));
        long elements = bytes / elementBytes;
        long rangeBytes = (elements + threads - 1) / threads * elementBytes;
        threads = rangeBytes == 0 ? 1 : (int) ((bytes + rangeBytes - 1) / rangeBytes); // rounding can leave one fewer
        long chunk = Math.max(minChunk, Math.min(maxChunk, roundDown(rangeBytes / CHUNKS_PER_RANGE)));
        boolean critical = Boolean.parseBoolean(System.getProperty(CRITICAL_COPY, "true").trim());
        return new TransferPlan(threads, Math.max(rangeBytes, elementBytes), chunk, depth, maxChunk, idle, critical);
    }

    private static long roundDown(long bytes) {
        return Math.max(ALIGN, bytes - bytes % ALIGN);
    }

    /** A numeric system property clamped to {@code [min, max]}; a value that is no number is ignored. */
    static long property(String name, long fallback, long min, long max) {
        String text = System.getProperty(name);
        long value = fallback;
        if (text != null) {
            try {
                value = Long.parseLong(text.trim());
            } catch (NumberFormatException e) {
                value = fallback;
            }
        }
        return Math.max(min, Math.min(max, value));
    }

    @Override
    public String toString() {
        return "TransferPlan[threads " + threads + ", range " + rangeBytes + " B, chunk " + chunkBytes + " B, depth " + depth + ", slot " + slotBytes
                + " B, idle slots " + idleSlots + (criticalCopy ? ", critical copies" : "") + "]";
    }
}
