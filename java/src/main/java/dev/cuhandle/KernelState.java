package dev.cuhandle;

/**
 * What cuhandle knows about one kernel of a loaded library (one {@code CUkernel}), shared by every {@link Kernel}
 * object that {@link Library#kernel(String)} returns for it: its parameter sizes (asked for or read once), its
 * function in the context of the last launch, and per device the driver's per-kernel attributes that launches
 * depend on. The driver keeps those attributes per kernel and device, not per Java object: when each object kept
 * its own record, a second object's smaller opt-in lowered the dynamic shared memory the first one's launches
 * relied on.
 */
final class KernelState {
    private static final int MAX_DYNAMIC_SHARED = KernelAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES.value();

    /** The library, or null for the stand-ins the argument tests build without one. */
    final Library library;
    final String name;
    final long raw;
    /** Marks parameter sizes not probed yet (the driver answers only with a context current, so maybe at a launch). */
    private static final int[] NOT_PROBED = new int[0];
    /** Parameter sizes; null if neither the driver nor the image can tell, {@link #NOT_PROBED} until asked. */
    private volatile int[] paramSizes = NOT_PROBED;
    /** The kernel's function in the context of the last launch; null before the first launch. */
    private volatile ContextFunction lastFunction;

    /**
     * Per device ordinal: the kernel's {@code MAX_DYNAMIC_SHARED_SIZE_BYTES} as cuhandle knows it (the driver's
     * default, the per-block limit less static shared memory, until cuhandle sets it), so launches up to it need
     * no driver call. Replaced, never changed in place, so the launch path reads it without a lock; written with
     * this locked. Missing or -1 entries: not asked yet.
     */
    private volatile int[] dynamicSharedLimit = new int[0];
    /** Per device: static shared memory plus one (0: not asked yet); guarded by this. */
    private int[] staticSharedPlusOne = new int[0];
    /** The largest cluster of the last non-portable cluster launch's configuration; null when none or stale. */
    private volatile ClusterLimit clusterLimit;

    /** A kernel's function ({@code cuKernelGetFunction}) in the context of one id (see {@link #function}). */
    private static final class ContextFunction {
        final long contextId;
        final long function;

        ContextFunction(long contextId, long function) {
            this.contextId = contextId;
            this.function = function;
        }
    }

    /** The most blocks per cluster the driver allows the kernel with one launch configuration. */
    private static final class ClusterLimit {
        /** The function (per context) the limit was asked for: asking also sets its non-portable attribute. */
        final long function;
        final int device;
        final int bx;
        final int by;
        final int bz;
        final int sharedBytes;
        final int blocks;

        ClusterLimit(long function, int device, int bx, int by, int bz, int sharedBytes, int blocks) {
            this.function = function;
            this.device = device;
            this.bx = bx;
            this.by = by;
            this.bz = bz;
            this.sharedBytes = sharedBytes;
            this.blocks = blocks;
        }

        boolean isFor(long function, int device, int bx, int by, int bz, int sharedBytes) {
            return this.function == function && this.device == device && this.bx == bx && this.by == by && this.bz == bz && this.sharedBytes == sharedBytes;
        }
    }

    KernelState(Library library, String name, long raw, long[] encodedSizes) {
        this.library = library;
        this.name = name;
        this.raw = raw;
        decode(encodedSizes);
    }

    /** [count, sizes...], [-1] (unknowable) or [-2] (needs a context): see rust/src/core/library.rs. */
    private void decode(long[] encoded) {
        if (encoded[0] == -2) {
            return;
        }
        int[] sizes = null;
        if (encoded[0] >= 0) {
            sizes = new int[(int) encoded[0]];
            for (int i = 0; i < sizes.length; i++) {
                sizes[i] = (int) encoded[1 + i];
            }
        }
        paramSizes = sizes;
    }

    /** The parameter sizes, asking the driver in the current or primary context if not known yet. */
    int[] probedSizes() {
        int[] sizes = paramSizes;
        if (sizes != NOT_PROBED) {
            return sizes;
        }
        long lib = library.enter();
        try {
            decode(NativeApi.kernelParamSizesOn(lib, raw, Cuda.getDevice()));
        } finally {
            library.exit();
        }
        return knownSizes();
    }

    /** The parameter sizes for a launch on a handle that has entered its call (as has the library), or null. */
    int[] paramSizes(long handlePointer, long libraryPointer) {
        int[] sizes = paramSizes;
        if (sizes != NOT_PROBED) {
            return sizes;
        }
        decode(NativeApi.kernelParamSizes(handlePointer, libraryPointer, raw));
        return knownSizes();
    }

    /** The sizes known so far, without asking (for toString): null when unknown or not probed yet. */
    int[] knownSizes() {
        int[] sizes = paramSizes;
        return sizes == NOT_PROBED ? null : sizes;
    }

    /**
     * The function to launch on {@code handle} (which has entered its call, as has the library). Launching it
     * spares the driver resolving the kernel for the context on every launch. Keyed by context id, which a
     * handle validates before every launch (H8), so a function of a destroyed or reset context is never
     * launched; the library is open while its kernels launch.
     */
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

    int attribute(int attribute, int device) {
        long lib = library.enter();
        try {
            return NativeApi.kernelAttribute(lib, raw, attribute, device);
        } finally {
            library.exit();
        }
    }

    /**
     * Sets an attribute on {@code device}. {@code MAX_DYNAMIC_SHARED_SIZE_BYTES} set this way is set exactly
     * (also lower): launches that need more raise it again. Any attribute can change the largest cluster.
     */
    void setAttribute(int attribute, int value, int device) {
        if (attribute == MAX_DYNAMIC_SHARED) {
            synchronized (this) {
                setDynamicShared(device, value);
            }
            return;
        }
        long lib = library.enter();
        try {
            NativeApi.kernelSetAttribute(lib, raw, attribute, value, device);
        } finally {
            library.exit();
        }
        clusterLimit = null;
    }

    /**
     * Makes sure a launch with {@code bytes} (more than 0) of dynamic shared memory may run on {@code device}:
     * where the kernel's static and the dynamic shared memory together exceed the default per-block limit
     * (48 KiB), the kernel must be opted in to at least {@code bytes}. The common case costs one array read.
     */
    void ensureDynamicShared(Device device, int bytes) {
        int[] limits = dynamicSharedLimit;
        int d = device.ordinal();
        if (d < limits.length && bytes <= limits[d]) {
            return;
        }
        optIn(device, bytes);
    }

    /**
     * Opts the kernel in to {@code bytes} of dynamic shared memory on {@code device} unless it already allows
     * that much: it never lowers the limit, since other {@link Kernel} objects of this kernel, and launches in
     * flight on other threads, may rely on it.
     */
    synchronized void optIn(Device device, int bytes) {
        int d = device.ordinal();
        int staticBytes = staticShared(d);
        int limit = device.maxSharedMemoryPerBlockOptin() - staticBytes;
        if (bytes < 0 || bytes > limit) {
            throw new IllegalArgumentException("dynamic shared memory of " + bytes + " bytes for kernel '" + name + "' is outside [0, " + limit
                    + "]: device " + d + " allows " + device.maxSharedMemoryPerBlockOptin() + " bytes per block with opt-in, less the kernel's "
                    + staticBytes + " bytes of static shared memory");
        }
        int[] limits = dynamicSharedLimit;
        int current = d < limits.length && limits[d] >= 0 ? limits[d] : device.maxSharedMemoryPerBlock() - staticBytes;
        if (bytes > current) {
            setDynamicShared(d, bytes);
        } else {
            publishDynamicShared(d, current);
        }
    }

    /** Sets the attribute on the driver and records it; call with this locked. */
    private void setDynamicShared(int device, int bytes) {
        long lib = library.enter();
        try {
            NativeApi.kernelSetAttribute(lib, raw, MAX_DYNAMIC_SHARED, bytes, device);
        } finally {
            library.exit();
        }
        publishDynamicShared(device, bytes);
        clusterLimit = null;
    }

    /** Publishes the limit launches on {@code device} may use without a driver call; call with this locked. */
    private void publishDynamicShared(int device, int bytes) {
        int[] limits = dynamicSharedLimit;
        int[] grown = java.util.Arrays.copyOf(limits, Math.max(limits.length, device + 1));
        java.util.Arrays.fill(grown, limits.length, grown.length, -1);
        grown[device] = bytes;
        dynamicSharedLimit = grown;
    }

    /** Static shared memory on {@code device}, asked once; call with this locked. */
    private int staticShared(int device) {
        if (device >= staticSharedPlusOne.length || staticSharedPlusOne[device] == 0) {
            int bytes = attribute(Kernel.ATTRIBUTE_SHARED_SIZE_BYTES, device);
            staticSharedPlusOne = java.util.Arrays.copyOf(staticSharedPlusOne, Math.max(staticSharedPlusOne.length, device + 1));
            staticSharedPlusOne[device] = bytes + 1;
        }
        return staticSharedPlusOne[device] - 1;
    }

    /**
     * The most blocks a cluster of this kernel may have with this launch configuration on the handle's device
     * ({@code cuOccupancyMaxPotentialClusterSize}: 8, the portable limit, unless the kernel allows non-portable
     * sizes; then what the device can hold), or -1 where the driver cannot say. Asked once per function and
     * configuration; where the kernel allows non-portable sizes, the asking also sets that attribute on the
     * function itself (whether a function the context loaded earlier takes it from the kernel is not documented).
     */
    int maxClusterBlocks(Device device, long handlePointer, long function, int gx, int gy, int gz, int bx, int by, int bz, int sharedBytes) {
        ClusterLimit known = clusterLimit;
        if (known == null || !known.isFor(function, device.ordinal(), bx, by, bz, sharedBytes)) {
            boolean nonPortable = attribute(KernelAttribute.NON_PORTABLE_CLUSTER_SIZE_ALLOWED.value(), device.ordinal()) != 0;
            int blocks = NativeApi.kernelMaxClusterSize(handlePointer, function, gx, gy, gz, bx, by, bz, sharedBytes, nonPortable);
            known = new ClusterLimit(function, device.ordinal(), bx, by, bz, sharedBytes, blocks);
            clusterLimit = known;
        }
        return known.blocks;
    }
}
