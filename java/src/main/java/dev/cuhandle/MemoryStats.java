package dev.cuhandle;

/**
 * What the memory of a handle's context holds, from {@link Handle#memoryStats() Handle.memoryStats()} (rule M1 of
 * docs/design.md).
 *
 * <p>Device memory comes from a stream-ordered pool of cuhandle's own per context
 * ({@code cuMemAllocFromPoolAsync}; frees are {@code cuMemFreeAsync} in stream order). Freed
 * memory stays in the pool for reuse, up to the release threshold set with
 * {@code -Dcuhandle.pool.releaseThreshold=<bytes>} (default {@code unlimited}, as PyTorch's
 * caching allocator; {@code 0} gives memory back at every synchronisation), and goes back to the
 * device with {@link Handle#trimMemory() Handle.trimMemory()}, when an allocation runs out of memory (the pool is
 * trimmed and the allocation tried once more), and when the last cuhandle object of the context
 * is gone. {@code -Dcuhandle.pool.enabled=false}, or a device or driver without memory pools,
 * selects plain {@code cuMemAlloc}, whose free waits for the whole context.
 *
 * <p>Pinned host memory ({@link HostBuffer}s and reduction results) is cached the same way: a
 * closed buffer's block is reused once the copies that used it are done, and trimmed with the
 * device memory.
 *
 * <p>The counts are the driver's for the pool, which all handles of the context share.
 *
 * <pre>{@code
 * MemoryStats before = h.memoryStats();
 * h.trimMemory();                                  // give the pool's free memory back to the device
 * System.out.println(before.poolBytesReserved() - h.memoryStats().poolBytesReserved() + " bytes given back; " + h.memoryStats());
 * }</pre>
 */
public final class MemoryStats {
    private final long poolBytesInUse;
    private final long poolBytesReserved;
    private final long pinnedBytesCached;
    private final boolean streamOrdered;

    MemoryStats(long[] values) {
        this.poolBytesInUse = values[0];
        this.poolBytesReserved = values[1];
        this.pinnedBytesCached = values[2];
        this.streamOrdered = values[3] != 0;
    }

    /**
     * Bytes of device memory handed out by the context's pool and not yet freed (0 without a pool).
     *
     * @return bytes in use
     */
    public long poolBytesInUse() {
        return poolBytesInUse;
    }

    /**
     * Bytes of device memory the context's pool holds: in use plus kept for reuse (0 without a pool).
     * {@link Handle#trimMemory() Handle.trimMemory()} gives back the difference.
     *
     * @return bytes reserved from the device
     */
    public long poolBytesReserved() {
        return poolBytesReserved;
    }

    /**
     * Bytes of pinned host memory released and kept for reuse.
     *
     * @return cached pinned bytes
     */
    public long pinnedBytesCached() {
        return pinnedBytesCached;
    }

    /**
     * Whether device memory is allocated in stream order from a pool (false: {@code cuMemAlloc}, on a
     * device or driver without memory pools or with {@code -Dcuhandle.pool.enabled=false}).
     *
     * @return {@code true} for stream-ordered memory
     */
    public boolean streamOrdered() {
        return streamOrdered;
    }

    @Override
    public String toString() {
        return "MemoryStats[pool in use " + poolBytesInUse + " B, reserved " + poolBytesReserved + " B, pinned cached " + pinnedBytesCached
                + " B, " + (streamOrdered ? "stream-ordered" : "cuMemAlloc") + "]";
    }
}
