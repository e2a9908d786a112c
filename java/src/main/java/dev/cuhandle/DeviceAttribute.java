package dev.cuhandle;

/**
 * Device attributes of {@code cuda.h} ({@code CUdevice_attribute}) by name, for
 * {@link Device#attribute(DeviceAttribute)}; each carries the driver's number. {@link Device#attribute(int)}
 * takes any other number.
 *
 * <pre>{@code
 * Device d = Cuda.device(0);
 * int warp = d.attribute(DeviceAttribute.WARP_SIZE);   // 32
 * int l2Bytes = d.attribute(38);                       // CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, by its number
 * }</pre>
 */
public enum DeviceAttribute {
    /** {@code CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK}. */
    MAX_THREADS_PER_BLOCK(1),
    /** {@code CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK}: without opt-in. */
    MAX_SHARED_MEMORY_PER_BLOCK(8),
    /** {@code CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY}. */
    TOTAL_CONSTANT_MEMORY(9),
    /** {@code CU_DEVICE_ATTRIBUTE_WARP_SIZE}. */
    WARP_SIZE(10),
    /** {@code CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK}. */
    MAX_REGISTERS_PER_BLOCK(12),
    /** {@code CU_DEVICE_ATTRIBUTE_CLOCK_RATE} in kHz. */
    CLOCK_RATE(13),
    /** {@code CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT}. */
    MULTIPROCESSOR_COUNT(16),
    /** {@code CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS}. */
    CONCURRENT_KERNELS(31),
    /** {@code CU_DEVICE_ATTRIBUTE_PCI_BUS_ID}. */
    PCI_BUS_ID(33),
    /** {@code CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE} in kHz. */
    MEMORY_CLOCK_RATE(36),
    /** {@code CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH} in bits. */
    GLOBAL_MEMORY_BUS_WIDTH(37),
    /** {@code CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE} in bytes. */
    L2_CACHE_SIZE(38),
    /** {@code CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR}. */
    MAX_THREADS_PER_MULTIPROCESSOR(39),
    /** {@code CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR}. */
    COMPUTE_CAPABILITY_MAJOR(75),
    /** {@code CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR}. */
    COMPUTE_CAPABILITY_MINOR(76),
    /** {@code CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR}. */
    MAX_SHARED_MEMORY_PER_MULTIPROCESSOR(81),
    /** {@code CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR}. */
    MAX_REGISTERS_PER_MULTIPROCESSOR(82),
    /** {@code CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY}. */
    MANAGED_MEMORY(83),
    /** {@code CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS}. */
    CONCURRENT_MANAGED_ACCESS(89),
    /** {@code CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH}. */
    COOPERATIVE_LAUNCH(95),
    /** {@code CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN}. */
    MAX_SHARED_MEMORY_PER_BLOCK_OPTIN(97),
    /** {@code CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR}. */
    MAX_BLOCKS_PER_MULTIPROCESSOR(106),
    /** {@code CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED}. */
    MEMORY_POOLS_SUPPORTED(115),
    /** {@code CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH}: thread-block clusters (compute capability 9.0 and newer). */
    CLUSTER_LAUNCH(120);

    private final int value;

    DeviceAttribute(int value) {
        this.value = value;
    }

    /**
     * The attribute's number in {@code cuda.h}.
     *
     * @return the {@code CUdevice_attribute} value
     */
    public int value() {
        return value;
    }
}
