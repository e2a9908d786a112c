package dev.cuhandle;

/**
 * Kernel attributes of {@code cuda.h} ({@code CUfunction_attribute}) by name, for
 * {@link Kernel#attribute(KernelAttribute, int)} and {@link Kernel#setAttribute(KernelAttribute, int, int)};
 * each carries the driver's number. The {@code int} overloads take any other number.
 *
 * <pre>{@code
 * int registers = kernel.attribute(KernelAttribute.NUM_REGS, 0);                     // per thread, on device 0
 * kernel.setAttribute(KernelAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, 100 * 1024, 0);  // allow 100 KiB of extern __shared__
 * }</pre>
 */
public enum KernelAttribute {
    /** {@code CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK} (read only). */
    MAX_THREADS_PER_BLOCK(0),
    /** {@code CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES}: static shared memory (read only). */
    SHARED_SIZE_BYTES(1),
    /** {@code CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES} (read only). */
    CONST_SIZE_BYTES(2),
    /** {@code CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES}: local memory per thread (read only). */
    LOCAL_SIZE_BYTES(3),
    /** {@code CU_FUNC_ATTRIBUTE_NUM_REGS} (read only). */
    NUM_REGS(4),
    /** {@code CU_FUNC_ATTRIBUTE_PTX_VERSION} (read only). */
    PTX_VERSION(5),
    /** {@code CU_FUNC_ATTRIBUTE_BINARY_VERSION} (read only). */
    BINARY_VERSION(6),
    /** {@code CU_FUNC_ATTRIBUTE_CACHE_MODE_CA} (read only). */
    CACHE_MODE_CA(7),
    /** {@code CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES}: the most dynamic shared memory a launch may ask for. */
    MAX_DYNAMIC_SHARED_SIZE_BYTES(8),
    /** {@code CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT} in percent. */
    PREFERRED_SHARED_MEMORY_CARVEOUT(9),
    /** {@code CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET} (read only). */
    CLUSTER_SIZE_MUST_BE_SET(10),
    /** {@code CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED}: clusters above 8 blocks. */
    NON_PORTABLE_CLUSTER_SIZE_ALLOWED(14);

    private final int value;

    KernelAttribute(int value) {
        this.value = value;
    }

    /**
     * The attribute's number in {@code cuda.h}.
     *
     * @return the {@code CUfunction_attribute} value
     */
    public int value() {
        return value;
    }
}
