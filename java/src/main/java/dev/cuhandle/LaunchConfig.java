package dev.cuhandle;

/**
 * The execution configuration of a {@link KernelLaunch}, what {@code cuLaunchKernelEx}'s {@code CUlaunchConfig}
 * holds (grid and block sizes, dynamic shared memory, the cooperative and cluster attributes), and its validation
 * against the device's limits and the kernel's attributes. The launch's setters only store: the device is known
 * when the launch runs, so that is when these checks run, each message naming the kernel and the limit it exceeds.
 * Kept apart from the launch's argument encoding, which knows nothing of devices.
 */
final class LaunchConfig {
    /** The most blocks of a portable thread-block cluster; more need the kernel's non-portable attribute. */
    static final int PORTABLE_CLUSTER_BLOCKS = 8;

    int gridX = 1;
    int gridY = 1;
    int gridZ = 1;
    int blockX = 1;
    int blockY = 1;
    int blockZ = 1;
    int sharedBytes;
    boolean cooperative;
    /** Blocks per cluster; all 0 for a launch without clusters. */
    int clusterX;
    int clusterY;
    int clusterZ;

    /** Takes every setting of {@code other}. */
    void copyFrom(LaunchConfig other) {
        gridX = other.gridX;
        gridY = other.gridY;
        gridZ = other.gridZ;
        blockX = other.blockX;
        blockY = other.blockY;
        blockZ = other.blockZ;
        sharedBytes = other.sharedBytes;
        cooperative = other.cooperative;
        clusterX = other.clusterX;
        clusterY = other.clusterY;
        clusterZ = other.clusterZ;
    }

    /** Sets the cluster size, refusing at once what is no cluster size on any device: a negative or 0 next to a non-0. */
    void cluster(int x, int y, int z) {
        boolean none = x == 0 && y == 0 && z == 0;
        if (!none && (x < 1 || y < 1 || z < 1)) {
            throw new IllegalArgumentException("cluster (" + x + ", " + y + ", " + z + ") is not a cluster size: expected each >= 1 (up to "
                    + PORTABLE_CLUSTER_BLOCKS + " blocks in all are portable; more where the kernel allows non-portable sizes), or (0, 0, 0) for no clusters");
        }
        clusterX = x;
        clusterY = y;
        clusterZ = z;
    }

    boolean hasClusters() {
        return clusterX != 0;
    }

    /**
     * Checks grid, block, dynamic shared memory and the cooperative attribute against device {@code d}, opting the
     * kernel in to dynamic shared memory above the default (once per device and size, {@link KernelState}) on the way.
     */
    void check(Kernel kernel, Device d) {
        if (gridX < 1 || gridY < 1 || gridZ < 1 || gridX > d.maxGridDim(0) || gridY > d.maxGridDim(1) || gridZ > d.maxGridDim(2)) {
            throw new IllegalArgumentException("grid (" + gridX + ", " + gridY + ", " + gridZ + ") for kernel '" + kernel.name()
                    + "' is outside the device's limits: each >= 1 and <= (" + d.maxGridDim(0) + ", " + d.maxGridDim(1) + ", " + d.maxGridDim(2) + ")");
        }
        if (blockX < 1 || blockY < 1 || blockZ < 1 || blockX > d.maxBlockDim(0) || blockY > d.maxBlockDim(1) || blockZ > d.maxBlockDim(2)
                || (long) blockX * blockY * blockZ > d.maxThreadsPerBlock()) {
            throw new IllegalArgumentException("block (" + blockX + ", " + blockY + ", " + blockZ + ") for kernel '" + kernel.name()
                    + "' is outside the device's limits: each >= 1, <= (" + d.maxBlockDim(0) + ", " + d.maxBlockDim(1) + ", " + d.maxBlockDim(2)
                    + "), at most " + d.maxThreadsPerBlock() + " threads in all");
        }
        if (sharedBytes < 0 || sharedBytes > d.maxSharedMemoryPerBlockOptin()) {
            throw new IllegalArgumentException("dynamic shared memory of " + sharedBytes + " bytes for kernel '" + kernel.name()
                    + "' is outside [0, " + d.maxSharedMemoryPerBlockOptin() + "] (device " + d.ordinal() + " allows "
                    + d.maxSharedMemoryPerBlock() + " bytes per block, " + d.maxSharedMemoryPerBlockOptin() + " with opt-in)");
        }
        if (sharedBytes != 0) {
            kernel.state().ensureDynamicShared(d, sharedBytes);
        }
        if (cooperative && !d.supportsCooperativeLaunch()) {
            throw new UnsupportedOperationException("cooperative launch of kernel '" + kernel.name() + "' refused: device " + d.ordinal() + " (" + d.name()
                    + ") cannot launch cooperatively (CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH is 0)");
        }
    }

    /**
     * Cluster launches: compute capability 9.0, a grid of whole clusters, and no more blocks than the kernel may have
     * ({@code function} is the kernel's function in the launching handle's context).
     */
    void checkCluster(Kernel kernel, Device d, long handlePointer, long function) {
        if (d.computeCapabilityMajor() < 9) {
            throw new UnsupportedOperationException("cluster launch of kernel '" + kernel.name() + "' refused: device " + d.ordinal() + " (" + d.name()
                    + ") has compute capability " + d.computeCapability() + "; thread-block clusters need 9.0 or newer");
        }
        if (gridX % clusterX != 0 || gridY % clusterY != 0 || gridZ % clusterZ != 0) {
            throw new IllegalArgumentException("grid (" + gridX + ", " + gridY + ", " + gridZ + ") for kernel '" + kernel.name()
                    + "' is not a multiple of the cluster (" + clusterX + ", " + clusterY + ", " + clusterZ + ") in every dimension");
        }
        long blocks = (long) clusterX * clusterY * clusterZ;
        if (blocks <= PORTABLE_CLUSTER_BLOCKS) {
            return; // portable: every device with clusters runs it (resources permitting, which the driver judges)
        }
        KernelState state = kernel.state();
        int most = state.maxClusterBlocks(d, handlePointer, function, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedBytes);
        if (most >= 0 && blocks > most) {
            boolean allowed = state.attribute(KernelAttribute.NON_PORTABLE_CLUSTER_SIZE_ALLOWED.value(), d.ordinal()) != 0;
            throw new IllegalArgumentException("cluster (" + clusterX + ", " + clusterY + ", " + clusterZ + ") of " + blocks + " blocks for kernel '"
                    + kernel.name() + "' is larger than the " + most + " blocks device " + d.ordinal() + " allows it with block (" + blockX + ", "
                    + blockY + ", " + blockZ + ") and " + sharedBytes + " bytes of dynamic shared memory (cuOccupancyMaxPotentialClusterSize); "
                    + (allowed ? "the kernel allows non-portable cluster sizes, so that is the device's limit"
                            : "clusters above " + PORTABLE_CLUSTER_BLOCKS + " blocks (the portable limit) need the kernel's "
                                    + "KernelAttribute.NON_PORTABLE_CLUSTER_SIZE_ALLOWED set to 1 on the device first"));
        }
    }
}
