package dev.cuhandle;

/**
 * A kernel of a {@link Library}, launchable in every context (rule H10). Its parameter sizes are known and
 * launches are checked against them (rule K2): from the driver ({@code cuKernelGetParamInfo}, CUDA 12.4+), or on
 * older drivers from the module image itself (PTX {@code .entry} parameter lists, a cubin's
 * {@code EIATTR_KPARAM_INFO} attributes, the PTX and cubins inside a fatbin). Kernels whose image describes no
 * parameters in a form cuhandle reads launch unchecked ({@link #parameterCount()} is -1).
 *
 * <p>{@link Library#kernel(String)} returns a new object on each call; all objects of one kernel share what the
 * driver keeps per kernel and device (attributes such as the dynamic shared memory it was opted in to).
 *
 * <pre>{@code
 * // extern "C" __global__ void saxpy(int n, float a, const float* x, float* y)
 * Kernel saxpy = library.kernel("saxpy");
 * h.launch(saxpy, Dim3.of((n + 255) / 256), Dim3.of(256), 0, n, 2f, x, y);  // an int, a float, two buffers
 * h.launch(saxpy, Dim3.of(1), Dim3.of(256), 0, n, 2.0, x, y);  // IllegalArgumentException: a double for a float
 * }</pre>
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
    /** Shared by every Kernel object of this kernel: parameters, function cache, per-device attributes. */
    private final KernelState state;

    Kernel(Library library, String name, KernelState state) {
        this.library = library;
        this.name = name;
        this.state = state;
    }

    /** A kernel with a state of its own (tests build such stand-ins without a library or driver). */
    Kernel(Library library, String name, long raw, long[] encodedSizes) {
        this(library, name, new KernelState(library, name, raw, encodedSizes));
    }

    /**
     * The name the kernel was looked up by.
     *
     * @return the kernel's ({@code extern "C"} or mangled) name
     */
    public String name() {
        return name;
    }

    /**
     * The library the kernel belongs to; the kernel can be used while it is open.
     *
     * @return the library
     */
    public Library library() {
        return library;
    }

    /**
     * The context-independent {@code CUkernel} ({@code cuLibraryGetKernel}); valid while the library is open.
     * Package-private: the GPU tests launch it directly to compare the driver's own choice of context with
     * cuhandle's launches.
     */
    long rawKernel() {
        return state.raw;
    }

    /**
     * Parameter count, or -1 when neither the driver nor the module image can tell (see the class comment). On a
     * driver of CUDA 12.4 or newer the driver is asked; no launch is needed first: if the
     * kernel was looked up with no context current, the driver is asked in the context current now, or else in
     * the primary context of {@link Cuda#getDevice()} (rules H1, H2).
     *
     * @return the number of parameters, or -1
     * @throws IllegalStateException if the sizes must be asked for and the library is closed
     * @throws CudaException if the sizes must be asked for and the driver fails
     */
    public int parameterCount() {
        int[] sizes = state.probedSizes();
        return sizes == null ? -1 : sizes.length;
    }

    /**
     * Size in bytes of one parameter.
     *
     * @param index the parameter, from 0
     * @return its size in bytes, or -1 when the sizes are unknown (see {@link #parameterCount()})
     * @throws IllegalArgumentException if the sizes are known and {@code index} is not a parameter
     * @throws IllegalStateException if the sizes must be asked for and the library is closed
     * @throws CudaException if the sizes must be asked for and the driver fails
     */
    public int parameterSize(int index) {
        int[] sizes = state.probedSizes();
        if (sizes == null) {
            return -1;
        }
        if (index < 0 || index >= sizes.length) {
            throw new IllegalArgumentException("kernel '" + name + "' has " + sizes.length + " parameters; index " + index
                    + " is outside [0, " + sizes.length + ")");
        }
        return sizes[index];
    }

    /** The state shared by every Kernel object of this kernel. */
    KernelState state() {
        return state;
    }

    /**
     * Any attribute of this kernel on a device by number ({@code cuKernelGetAttribute}).
     *
     * @param cuFunctionAttribute a {@code CUfunction_attribute} value from {@code cuda.h}, e.g.
     *     {@link #ATTRIBUTE_NUM_REGS}
     * @param device the device number
     * @return the attribute's value
     * @throws IllegalStateException if the library is closed
     * @throws CudaException if the driver rejects the attribute or the device, or fails
     */
    public int attribute(int cuFunctionAttribute, int device) {
        return state.attribute(cuFunctionAttribute, device);
    }

    /**
     * An attribute of this kernel on a device by name ({@code cuKernelGetAttribute}).
     *
     * @param attribute the attribute
     * @param device the device number
     * @return the attribute's value
     * @throws NullPointerException if {@code attribute} is {@code null}
     * @throws IllegalStateException if the library is closed
     * @throws CudaException if the driver rejects the device, or fails
     */
    public int attribute(KernelAttribute attribute, int device) {
        return attribute(attribute.value(), device);
    }

    /**
     * Sets an attribute of this kernel on a device by number ({@code cuKernelSetAttribute}); it applies to the
     * kernel in every context on that device, and so to every {@code Kernel} object of it. Set this way,
     * {@code MAX_DYNAMIC_SHARED_SIZE_BYTES} takes exactly the value given, also a lower one; launches that need
     * more raise it again (see {@link #setMaxDynamicSharedBytes(int, int)}).
     *
     * @param cuFunctionAttribute a settable {@code CUfunction_attribute} value from {@code cuda.h}
     * @param value the new value
     * @param device the device number
     * @throws IllegalStateException if the library is closed
     * @throws CudaException if the driver rejects the attribute, value or device
     */
    public void setAttribute(int cuFunctionAttribute, int value, int device) {
        state.setAttribute(cuFunctionAttribute, value, device);
    }

    /**
     * Sets an attribute of this kernel on a device by name ({@code cuKernelSetAttribute}).
     *
     * @param attribute a settable attribute, e.g. {@link KernelAttribute#MAX_DYNAMIC_SHARED_SIZE_BYTES}
     * @param value the new value
     * @param device the device number
     * @throws NullPointerException if {@code attribute} is {@code null}
     * @throws IllegalStateException if the library is closed
     * @throws CudaException if the driver rejects the attribute, value or device
     */
    public void setAttribute(KernelAttribute attribute, int value, int device) {
        setAttribute(attribute.value(), value, device);
    }

    /**
     * Lets launches of this kernel on {@code device} use up to {@code bytes} of dynamic shared memory, above
     * the default ({@code CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES}, which starts at
     * {@link Device#maxSharedMemoryPerBlock()} less the kernel's static shared memory). A launch does this by
     * itself when its dynamic and the kernel's static shared memory together exceed that per-block default; call
     * it to pay the cost up front. The driver keeps the limit per kernel and device, for every {@code Kernel}
     * object of the kernel alike; this method never lowers it (a smaller {@code bytes} than the kernel already
     * allows changes nothing), so that launches of other objects or threads that rely on it keep working.
     *
     * @param device the device number
     * @param bytes the dynamic shared memory per block, at most the device's opt-in limit
     *     ({@link Device#maxSharedMemoryPerBlockOptin()}) less this kernel's static shared memory
     * @throws IllegalArgumentException if {@code bytes} is negative or above that limit (both numbers are named)
     * @throws IllegalStateException if the library is closed
     * @throws CudaException if the device does not exist or the driver fails
     */
    public void setMaxDynamicSharedBytes(int device, int bytes) {
        state.optIn(Cuda.device(device), bytes);
    }

    /**
     * The most threads per block this kernel can be launched with on {@code device}
     * ({@code cuKernelGetAttribute} with {@code CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK}).
     *
     * @param device the device number
     * @return the maximum number of threads per block
     * @throws IllegalStateException if the library is closed
     * @throws CudaException if the device does not exist or the driver fails
     */
    public int maxThreadsPerBlock(int device) {
        return attribute(ATTRIBUTE_MAX_THREADS_PER_BLOCK, device);
    }

    /**
     * Registers each thread of this kernel uses on {@code device} ({@code cuKernelGetAttribute} with
     * {@code CU_FUNC_ATTRIBUTE_NUM_REGS}).
     *
     * @param device the device number
     * @return the number of registers per thread
     * @throws IllegalStateException if the library is closed
     * @throws CudaException if the device does not exist or the driver fails
     */
    public int registers(int device) {
        return attribute(ATTRIBUTE_NUM_REGS, device);
    }

    /**
     * Statically allocated shared memory of this kernel on {@code device} ({@code cuKernelGetAttribute} with
     * {@code CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES}).
     *
     * @param device the device number
     * @return the static shared memory per block, in bytes
     * @throws IllegalStateException if the library is closed
     * @throws CudaException if the device does not exist or the driver fails
     */
    public int staticSharedBytes(int device) {
        return attribute(ATTRIBUTE_SHARED_SIZE_BYTES, device);
    }

    /**
     * A new reusable launch of this kernel, with grid and block 1, no dynamic shared memory and no arguments.
     * Launching it allocates nothing; use one per thread.
     *
     * @return the launch
     * @throws CudaException if the native library cannot be loaded
     */
    public KernelLaunch newLaunch() {
        return new KernelLaunch(this);
    }

    @Override
    public String toString() {
        int[] sizes = state.knownSizes();
        return "Kernel[" + name + (sizes == null ? "" : ", " + sizes.length + " parameters") + "]";
    }
}
