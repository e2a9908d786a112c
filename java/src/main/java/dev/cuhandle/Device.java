package dev.cuhandle;

/** Properties of one CUDA device, read once per process. */
public final class Device {
    private final int ordinal;
    private final String name;
    private final long[] info;

    Device(int ordinal, String name, long[] info) {
        this.ordinal = ordinal;
        this.name = name;
        this.info = info.clone();
    }

    public int ordinal() {
        return ordinal;
    }

    public String name() {
        return name;
    }

    public long totalMemory() {
        return info[0];
    }

    public int computeCapabilityMajor() {
        return (int) info[1];
    }

    public int computeCapabilityMinor() {
        return (int) info[2];
    }

    /** For example "9.0". */
    public String computeCapability() {
        return info[1] + "." + info[2];
    }

    public int multiprocessorCount() {
        return (int) info[3];
    }

    public int maxThreadsPerBlock() {
        return (int) info[4];
    }

    /**
     * Largest block size in one dimension.
     *
     * @param dimension 0 (x), 1 (y) or 2 (z)
     * @return the most threads of a block in that dimension
     * @throws IllegalArgumentException if {@code dimension} is not 0, 1 or 2
     */
    public int maxBlockDim(int dimension) {
        return (int) info[5 + checkDimension(dimension)];
    }

    /**
     * Largest grid size in one dimension.
     *
     * @param dimension 0 (x), 1 (y) or 2 (z)
     * @return the most blocks of a grid in that dimension
     * @throws IllegalArgumentException if {@code dimension} is not 0, 1 or 2
     */
    public int maxGridDim(int dimension) {
        return (int) info[8 + checkDimension(dimension)];
    }

    private static int checkDimension(int dimension) {
        if (dimension < 0 || dimension > 2) {
            throw new IllegalArgumentException("dimension " + dimension + " does not exist; expected 0 (x), 1 (y) or 2 (z)");
        }
        return dimension;
    }

    public int maxSharedMemoryPerBlock() {
        return (int) info[11];
    }

    public boolean supportsMemoryPools() {
        return info[12] != 0;
    }

    /** Any {@code CUdevice_attribute} by number. */
    public int attribute(int cuDeviceAttribute) {
        Native.ensureLoaded();
        return NativeApi.deviceAttribute(ordinal, cuDeviceAttribute);
    }

    @Override
    public String toString() {
        return String.format("device %d: %s, compute capability %s, %d multiprocessors, %.1f GiB",
                ordinal, name, computeCapability(), multiprocessorCount(), totalMemory() / (double) (1L << 30));
    }
}
