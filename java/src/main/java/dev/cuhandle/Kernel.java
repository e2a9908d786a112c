package dev.cuhandle;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A kernel of a {@link Library}, launchable in every context (rule H10). Its parameter sizes are known and
 * launches are checked against them (rule K2): from the driver ({@code cuKernelGetParamInfo}, CUDA 12.4+), or on
 * older drivers from the module image itself (PTX {@code .entry} parameter lists, a cubin's
 * {@code EIATTR_KPARAM_INFO} attributes, the PTX and cubins inside a fatbin). Kernels whose image describes no
 * parameters in a form cuhandle reads launch unchecked ({@link #parameterCount()} is -1).
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
    /** Parameter sizes; null if neither the driver nor the image can tell, or not probed yet. */
    private volatile int[] paramSizes;
    /** False until the sizes were probed (they need a current context, so maybe at the first launch). */
    private volatile boolean paramSizesKnown;
    /** Per device: the dynamic shared memory this kernel was opted in to (set once per device and size). */
    private final Map<Integer, Integer> dynamicSharedOptIn = new ConcurrentHashMap<>();

    /** The kernel's function in the context of the last launch; null before the first launch. */
    private volatile ContextFunction lastFunction;

    /**
     * A kernel's function ({@code cuKernelGetFunction}) in the context of one id. Launching it spares
     * the driver resolving the kernel for the context on every launch. Keyed by context id, which a
     * handle validates before every launch (H8), so a function of a destroyed or reset context is
     * never launched; the library is open while its kernels launch.
     */
    private static final class ContextFunction {
        final long contextId;
        final long function;

        ContextFunction(long contextId, long function) {
            this.contextId = contextId;
            this.function = function;
        }
    }

    Kernel(Library library, String name, long raw, long[] encodedSizes) {
        this.library = library;
        this.name = name;
        this.raw = raw;
        decode(encodedSizes);
    }

    /** [count, sizes...], [-1] (unsupported) or [-2] (needs a context): see rust/src/core/library.rs. */
    private void decode(long[] encoded) {
        if (encoded[0] == -2) {
            return;
        }
        if (encoded[0] >= 0) {
            int[] sizes = new int[(int) encoded[0]];
            for (int i = 0; i < sizes.length; i++) {
                sizes[i] = (int) encoded[1 + i];
            }
            paramSizes = sizes;
        }
        paramSizesKnown = true;
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
        int[] sizes = probedSizes();
        return sizes == null ? -1 : sizes.length;
    }

    /** The parameter sizes, asking the driver in the current or primary context if no launch did yet. */
    private int[] probedSizes() {
        if (!paramSizesKnown) {
            long lib = library.enter();
            try {
                decode(NativeApi.kernelParamSizesOn(lib, raw, Cuda.getDevice()));
            } finally {
                library.exit();
            }
        }
        return paramSizes;
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
        int[] sizes = probedSizes();
        if (sizes == null) {
            return -1;
        }
        if (index < 0 || index >= sizes.length) {
            throw new IllegalArgumentException("kernel '" + name + "' has " + sizes.length + " parameters; index " + index
                    + " is outside [0, " + sizes.length + ")");
        }
        return sizes[index];
    }

    /** The parameter sizes for a launch on {@code handle} (which has entered its call), or null if unknowable. */
    int[] paramSizes(long handlePointer, long libraryPointer) {
        if (!paramSizesKnown) {
            decode(NativeApi.kernelParamSizes(handlePointer, libraryPointer, raw));
        }
        return paramSizes;
    }

    /** The function to launch on {@code handle} (which has entered its call, as has the library). */
    long function(Handle handle, long handlePointer) {
        ContextFunction f = lastFunction;
        long contextId = handle.contextId();
        if (f == null || f.contextId != contextId) {
            // Threads racing here get the same function; whichever store wins is right.
            f = new ContextFunction(contextId, NativeApi.kernelFunction(handlePointer, raw));
            lastFunction = f;
        }
        return f.function;
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
        long lib = library.enter();
        try {
            return NativeApi.kernelAttribute(lib, raw, cuFunctionAttribute, device);
        } finally {
            library.exit();
        }
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
     * kernel in every context on that device.
     *
     * @param cuFunctionAttribute a settable {@code CUfunction_attribute} value from {@code cuda.h}
     * @param value the new value
     * @param device the device number
     * @throws IllegalStateException if the library is closed
     * @throws CudaException if the driver rejects the attribute, value or device
     */
    public void setAttribute(int cuFunctionAttribute, int value, int device) {
        long lib = library.enter();
        try {
            NativeApi.kernelSetAttribute(lib, raw, cuFunctionAttribute, value, device);
        } finally {
            library.exit();
        }
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
     * the default 48 KiB ({@code CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES}). A launch does this by itself
     * when it asks for more than {@link Device#maxSharedMemoryPerBlock()}; call it to pay the cost up front.
     *
     * @param device the device number
     * @param bytes the dynamic shared memory per block, at most the device's opt-in limit
     *     ({@link Device#maxSharedMemoryPerBlockOptin()}) less this kernel's static shared memory
     * @throws IllegalArgumentException if {@code bytes} is negative or above that limit (both numbers are named)
     * @throws IllegalStateException if the library is closed
     * @throws CudaException if the device does not exist or the driver fails
     */
    public void setMaxDynamicSharedBytes(int device, int bytes) {
        int limit = Cuda.device(device).maxSharedMemoryPerBlockOptin() - staticSharedBytes(device);
        if (bytes < 0 || bytes > limit) {
            throw new IllegalArgumentException("dynamic shared memory of " + bytes + " bytes for kernel '" + name + "' is outside [0, " + limit
                    + "]: device " + device + " allows " + Cuda.device(device).maxSharedMemoryPerBlockOptin()
                    + " bytes per block with opt-in, less the kernel's static shared memory");
        }
        setAttribute(KernelAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes, device);
        dynamicSharedOptIn.merge(device, bytes, Math::max);
    }

    /** Opts the kernel in to {@code bytes} of dynamic shared memory on {@code device} unless it already is. */
    void ensureDynamicShared(int device, int bytes) {
        Integer done = dynamicSharedOptIn.get(device);
        if (done == null || done < bytes) {
            setMaxDynamicSharedBytes(device, bytes);
        }
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
        return "Kernel[" + name + (paramSizes == null ? "" : ", " + paramSizes.length + " parameters") + "]";
    }
}
