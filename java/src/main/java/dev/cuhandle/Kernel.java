package dev.cuhandle;

/**
 * A kernel of a {@link Library}, launchable in every context (rule H10). Where the driver can
 * tell (12.4+), its parameter sizes are known and launches are checked against them (rule K2).
 */
public final class Kernel {
    /** {@code CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK}. */
    public static final int ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;
    /** {@code CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES}: static shared memory. */
    public static final int ATTRIBUTE_SHARED_SIZE_BYTES = 1;
    /** {@code CU_FUNC_ATTRIBUTE_NUM_REGS}. */
    public static final int ATTRIBUTE_NUM_REGS = 4;

    private final Library library;
    private final String name;
    private final long raw;
    private final int[] paramSizes;

    Kernel(Library library, String name, long raw, int[] paramSizes) {
        this.library = library;
        this.name = name;
        this.raw = raw;
        this.paramSizes = paramSizes;
    }

    public String name() {
        return name;
    }

    public Library library() {
        return library;
    }

    long raw() {
        return raw;
    }

    /** Parameter count, or -1 when the driver cannot tell (before CUDA 12.4). */
    public int parameterCount() {
        return paramSizes == null ? -1 : paramSizes.length;
    }

    /** Size in bytes of parameter {@code index}, or -1 when unknown. */
    public int parameterSize(int index) {
        return paramSizes == null ? -1 : paramSizes[index];
    }

    int[] paramSizes() {
        return paramSizes;
    }

    /** Any {@code CUfunction_attribute} of this kernel on {@code device}. */
    public int attribute(int cuFunctionAttribute, int device) {
        long lib = library.enter();
        try {
            return NativeApi.kernelAttribute(lib, raw, cuFunctionAttribute, device);
        } finally {
            library.exit();
        }
    }

    public int maxThreadsPerBlock(int device) {
        return attribute(ATTRIBUTE_MAX_THREADS_PER_BLOCK, device);
    }

    public int registers(int device) {
        return attribute(ATTRIBUTE_NUM_REGS, device);
    }

    public int staticSharedBytes(int device) {
        return attribute(ATTRIBUTE_SHARED_SIZE_BYTES, device);
    }

    /** A reusable launch of this kernel (allocates nothing per launch). */
    public KernelLaunch newLaunch() {
        return new KernelLaunch(this);
    }

    @Override
    public String toString() {
        return "Kernel[" + name + (paramSizes == null ? "" : ", " + paramSizes.length + " parameters") + "]";
    }
}
