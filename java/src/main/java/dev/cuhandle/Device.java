package dev.cuhandle;

/**
 * Properties of one CUDA device, read once per process.
 *
 * <pre>{@code
 * Device d = h.device();                           // or Cuda.device(0)
 * System.out.println(d.name() + ", compute capability " + d.computeCapability() + ", " + (d.totalMemory() >> 30) + " GiB, "
 *         + d.multiprocessorCount() + " multiprocessors");
 * int blocks = Math.min((n + 255) / 256, d.maxGridDim(0));
 * }</pre>
 */
public final class Device {
    private final int ordinal;
    private final String name;
    private final long[] info;

    Device(int ordinal, String name, long[] info) {
        this.ordinal = ordinal;
        this.name = name;
        this.info = info.clone();
    }

    /**
     * The device number, as used by {@link Cuda#device(int)} and {@link Handle#create(int)}.
     *
     * @return the ordinal, from 0
     */
    public int ordinal() {
        return ordinal;
    }

    /**
     * The device's name as the driver reports it ({@code cuDeviceGetName}).
     *
     * @return the name, e.g. "NVIDIA H200"
     */
    public String name() {
        return name;
    }

    /**
     * Total device memory ({@code cuDeviceTotalMem}).
     *
     * @return the memory in bytes
     */
    public long totalMemory() {
        return info[0];
    }

    /**
     * The major compute capability, e.g. 9 for 9.0.
     *
     * @return the major version
     */
    public int computeCapabilityMajor() {
        return (int) info[1];
    }

    /**
     * The minor compute capability, e.g. 0 for 9.0.
     *
     * @return the minor version
     */
    public int computeCapabilityMinor() {
        return (int) info[2];
    }

    /**
     * The compute capability as text.
     *
     * @return major and minor separated by a dot, for example "9.0"
     */
    public String computeCapability() {
        return info[1] + "." + info[2];
    }

    /**
     * Number of streaming multiprocessors.
     *
     * @return the multiprocessor count
     */
    public int multiprocessorCount() {
        return (int) info[3];
    }

    /**
     * The most threads a block may have (all three dimensions together).
     *
     * @return the maximum number of threads per block
     */
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

    /**
     * The most shared memory a block may use without opting in to more (static and dynamic together).
     *
     * @return the maximum shared memory per block, in bytes
     */
    public int maxSharedMemoryPerBlock() {
        return (int) info[11];
    }

    /**
     * Whether the device supports stream-ordered memory pools ({@code cuMemAllocAsync}).
     *
     * @return {@code true} if memory pools are supported
     */
    public boolean supportsMemoryPools() {
        return info[12] != 0;
    }

    /**
     * The most shared memory a block may use once its kernel opts in
     * ({@code CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN}); a launch asking for more dynamic shared
     * memory than {@link #maxSharedMemoryPerBlock()} opts the kernel in by itself (see
     * {@link KernelLaunch#sharedBytes(int)}).
     *
     * @return the maximum shared memory per block with opt-in, in bytes
     */
    public int maxSharedMemoryPerBlockOptin() {
        return (int) info[13];
    }

    /**
     * Whether the device can run cooperative launches ({@code CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH}), needed
     * by {@link KernelLaunch#cooperative(boolean)}.
     *
     * @return {@code true} if cooperative launches are supported
     */
    public boolean supportsCooperativeLaunch() {
        return info[14] != 0;
    }

    /**
     * A device attribute by name ({@code cuDeviceGetAttribute}), read from the driver on each call.
     *
     * @param attribute the attribute
     * @return the attribute's value
     * @throws NullPointerException if {@code attribute} is {@code null}
     * @throws CudaException if the driver rejects the attribute or cannot be used
     */
    public int attribute(DeviceAttribute attribute) {
        return attribute(attribute.value());
    }

    /**
     * Any device attribute by number ({@code cuDeviceGetAttribute}), read from the driver on each call.
     *
     * @param cuDeviceAttribute a {@code CUdevice_attribute} value from {@code cuda.h}
     * @return the attribute's value
     * @throws CudaException if the driver rejects the attribute ({@link CudaError#INVALID_VALUE}) or cannot
     *     be used
     */
    public int attribute(int cuDeviceAttribute) {
        Native.ensureLoaded();
        return NativeApi.deviceAttribute(ordinal, cuDeviceAttribute);
    }

    /**
     * A one-line summary: ordinal, name, compute capability, multiprocessors and memory in GiB.
     *
     * @return the summary
     */
    /**
     * Splits the device's streaming multiprocessors into {@code parts} SM partitions of equal size, as large as the
     * device's granularity allows (an H200's 132 SMs: 2 x 64 or 4 x 32, with 4 left over). Handles created on a
     * partition ({@link Handle#create(SmPartition)}) run only on its SMs, so one partition's long kernels cannot delay
     * another's work. Needs a CUDA 12.4+ driver (green contexts).
     *
     * @param parts the number of partitions, at least 1
     * @return the partitions; close them (each is destroyed once nothing made on it is left)
     * @throws IllegalArgumentException if {@code parts} is less than 1, or the device cannot make that many
     *     partitions (the message says how many it can)
     * @throws CudaException if the driver is older than CUDA 12.4 or the device has no green contexts
     *     ({@link CudaError#NOT_SUPPORTED}, saying which), or the driver fails
     */
    public SmPartitions splitSms(int parts) {
        if (parts < 1) {
            throw new IllegalArgumentException(parts + " SM partitions asked for; expected at least 1");
        }
        Native.ensureLoaded();
        return SmPartitions.of(this, NativeApi.partitionSplitParts(ordinal, parts));
    }

    /**
     * Splits off one SM partition per entry of {@code smCounts}, in order, each of at least that many SMs: the driver
     * rounds a count up to the device's granularity (a multiple of 8 SMs on compute capability 9.0).
     *
     * @param smCounts the SMs each partition needs, each at least 1
     * @return the partitions; close them (each is destroyed once nothing made on it is left)
     * @throws NullPointerException if {@code smCounts} is {@code null}
     * @throws IllegalArgumentException if {@code smCounts} is empty or holds a count below 1, or the partitions do
     *     not fit in the device's SMs (the message names the first that did not and what was left)
     * @throws CudaException if the driver is older than CUDA 12.4 or the device has no green contexts
     *     ({@link CudaError#NOT_SUPPORTED}, saying which), or the driver fails
     */
    public SmPartitions splitSmsByCount(int... smCounts) {
        if (smCounts.length == 0) {
            throw new IllegalArgumentException("no SM counts given; expected one count of at least 1 SM per partition");
        }
        for (int i = 0; i < smCounts.length; i++) {
            if (smCounts[i] < 1) {
                throw new IllegalArgumentException("SM count " + smCounts[i] + " of partition " + i + " is invalid; expected at least 1");
            }
        }
        Native.ensureLoaded();
        return SmPartitions.of(this, NativeApi.partitionSplitCounts(ordinal, smCounts.clone()));
    }

    /**
     * Whether this device can be split into SM partitions ({@link #splitSms(int)}): a CUDA 12.4+ driver and a device
     * with green contexts.
     *
     * @return an empty string if it can, otherwise why not
     * @throws CudaException if the driver cannot be loaded or initialised
     */
    public String smPartitionSupport() {
        Native.ensureLoaded();
        return NativeApi.partitionSupport(ordinal);
    }

    @Override
    public String toString() {
        return String.format("device %d: %s, compute capability %s, %d multiprocessors, %.1f GiB",
                ordinal, name, computeCapability(), multiprocessorCount(), totalMemory() / (double) (1L << 30));
    }
}
