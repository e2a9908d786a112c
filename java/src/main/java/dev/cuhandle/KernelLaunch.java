package dev.cuhandle;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A reusable kernel launch (rule K1): arguments are written into a direct buffer, scalars and
 * pointers into 8-byte slots and structures passed by value into an area of their own, next to
 * the array of argument pointers that the native layer hands to {@code cuLaunchKernel}, so
 * launching allocates nothing. Set the shape and arguments once, change what varies, call
 * {@link #launch(Handle)} in the loop. Not thread-safe: use one per thread.
 *
 * <pre>{@code
 * KernelLaunch launch = saxpy.newLaunch().grid((n + 255) / 256).block(256)
 *         .arg(0, n).arg(2, x).arg(3, y);
 * for (float alpha : alphas) {
 *     launch.arg(1, alpha).launch(h);                // checked, and allocates nothing
 * }
 * }</pre>
 *
 * <p>It also launches what {@link Handle#launch} cannot: structures by value
 * ({@link #arg(int, java.nio.ByteBuffer)}), dynamic shared memory above 48 KiB, cooperative launches and
 * thread-block clusters.
 */
public final class KernelLaunch {
    /** The most arguments a launch takes. */
    public static final int MAX_ARGS = 64;
    /** The most bytes all by-value structure arguments of one launch take together ({@link #arg(int, ByteBuffer)}). */
    public static final int MAX_STRUCT_BYTES = 4096;
    /** The most blocks of a portable thread-block cluster; more need the kernel's non-portable attribute (see {@link #cluster}). */
    public static final int MAX_CLUSTER_BLOCKS = LaunchConfig.PORTABLE_CLUSTER_BLOCKS;
    private static final int SLOT = 8;
    /** Alignment of each structure argument: enough for any CUDA scalar or vector type. */
    private static final int STRUCT_ALIGNMENT = 16;
    /**
     * Layout of the buffer: argument pointers, then value slots, then the native pointers of the buffer
     * arguments' memory (for the launch's use tracking, rule L3), then the structure area.
     */
    private static final int POINTERS = 0;
    private static final int VALUES = MAX_ARGS * SLOT;
    private static final int MEMORY = 2 * MAX_ARGS * SLOT;
    private static final int STRUCTS = 3 * MAX_ARGS * SLOT;
    private static final ThreadLocal<KernelLaunch> PER_THREAD = new ThreadLocal<>();

    private Kernel kernel;
    private final ByteBuffer slots = ByteBuffer.allocateDirect(STRUCTS + MAX_STRUCT_BYTES + STRUCT_ALIGNMENT).order(ByteOrder.nativeOrder());
    private final long slotsAddress;
    /** Offset of the (aligned) structure area inside {@link #slots}. */
    private final int structBase;
    /** Per argument: offset and capacity of its region in the structure area (capacity 0: none yet). */
    private final int[] structOffset = new int[MAX_ARGS];
    private final int[] structCapacity = new int[MAX_ARGS];
    private int structTop;
    private final int[] sizes = new int[MAX_ARGS];
    /** Per argument: which {@code arg} overload set it (one of {@link ArgumentKinds}' constants), for the messages of wrong sizes. */
    private final byte[] kinds = new byte[MAX_ARGS];
    private final DeviceBuffer[] buffers = new DeviceBuffer[MAX_ARGS];
    private int argCount;
    /** Entries of the memory list written by the last {@link #enterBuffers}. */
    private int memoryCount;
    /** Grid, block, shared memory, cooperative and cluster: stored here, checked at launch. */
    private final LaunchConfig config = new LaunchConfig();

    KernelLaunch(Kernel kernel) {
        this.kernel = kernel;
        Native.ensureLoaded();
        this.slotsAddress = NativeApi.directBufferAddress(slots);
        this.structBase = STRUCTS + (int) ((STRUCT_ALIGNMENT - (slotsAddress + STRUCTS) % STRUCT_ALIGNMENT) % STRUCT_ALIGNMENT);
        for (int i = 0; i < MAX_ARGS; i++) {
            slots.putLong(POINTERS + i * SLOT, slotsAddress + VALUES + i * SLOT);
        }
    }

    /** The launch object the varargs {@link Handle#launch} path reuses on this thread. */
    static KernelLaunch forThread(Kernel kernel) {
        KernelLaunch l = PER_THREAD.get();
        if (l == null) {
            l = new KernelLaunch(kernel);
            PER_THREAD.set(l);
        }
        l.kernel = kernel;
        return l;
    }

    /**
     * Sets the grid size in blocks. Checked against the device's limits at launch, not here.
     *
     * @param x blocks in x, at least 1
     * @param y blocks in y, at least 1
     * @param z blocks in z, at least 1
     * @return this launch
     */
    public KernelLaunch grid(int x, int y, int z) {
        config.gridX = x;
        config.gridY = y;
        config.gridZ = z;
        return this;
    }

    /**
     * Sets a one-dimensional grid {@code (x, 1, 1)} in blocks.
     *
     * @param x blocks in x, at least 1
     * @return this launch
     */
    public KernelLaunch grid(int x) {
        return grid(x, 1, 1);
    }

    /**
     * Sets the block size in threads. Checked against the device's limits at launch, not here.
     *
     * @param x threads in x, at least 1
     * @param y threads in y, at least 1
     * @param z threads in z, at least 1
     * @return this launch
     */
    public KernelLaunch block(int x, int y, int z) {
        config.blockX = x;
        config.blockY = y;
        config.blockZ = z;
        return this;
    }

    /**
     * Sets a one-dimensional block {@code (x, 1, 1)} in threads.
     *
     * @param x threads in x, at least 1
     * @return this launch
     */
    public KernelLaunch block(int x) {
        return block(x, 1, 1);
    }

    /**
     * Sets the dynamic shared memory per block ({@code extern __shared__}). Up to
     * {@link Device#maxSharedMemoryPerBlock()} (48 KiB) less the kernel's static shared memory every launch may use
     * it; above that, the first launch on a device opts the kernel in
     * ({@link Kernel#setMaxDynamicSharedBytes(int, int)}, once per device and size) up to
     * {@link Device#maxSharedMemoryPerBlockOptin()} less the kernel's static shared memory. Checked at launch.
     *
     * @param bytes dynamic shared memory in bytes, 0 or more
     * @return this launch
     */
    public KernelLaunch sharedBytes(int bytes) {
        config.sharedBytes = bytes;
        return this;
    }

    /**
     * Makes this a cooperative launch ({@code CU_LAUNCH_ATTRIBUTE_COOPERATIVE} through {@code cuLaunchKernelEx}):
     * all blocks are resident at once, so the kernel may synchronise the whole grid
     * ({@code cooperative_groups::this_grid().sync()}). The grid must fit on the device at once (the driver
     * refuses a larger one with {@link CudaError#COOPERATIVE_LAUNCH_TOO_LARGE}).
     *
     * @param enabled whether the launch is cooperative (default {@code false})
     * @return this launch
     */
    public KernelLaunch cooperative(boolean enabled) {
        config.cooperative = enabled;
        return this;
    }

    /**
     * Launches in thread-block clusters of {@code (x, y, z)} blocks ({@code CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION}
     * through {@code cuLaunchKernelEx}; compute capability 9.0 and newer). Each grid dimension must be a multiple
     * of the cluster's, checked at launch. Up to {@link #MAX_CLUSTER_BLOCKS} blocks are portable; larger clusters
     * need the kernel's {@link KernelAttribute#NON_PORTABLE_CLUSTER_SIZE_ALLOWED} set to 1 on the device, and are
     * checked at launch against the most the driver allows the kernel with the launch's block and shared memory
     * ({@code cuOccupancyMaxPotentialClusterSize}; 16 on an H100 or H200). {@code (0, 0, 0)} launches without
     * clusters (the default).
     *
     * @param x blocks per cluster in x
     * @param y blocks per cluster in y
     * @param z blocks per cluster in z
     * @return this launch
     * @throws IllegalArgumentException unless all are 0, or all at least 1
     */
    public KernelLaunch cluster(int x, int y, int z) {
        config.cluster(x, y, z);
        return this;
    }

    private int slot(int index, int size, byte kind) {
        checkIndex(index);
        sizes[index] = size;
        kinds[index] = kind;
        buffers[index] = null;
        argCount = Math.max(argCount, index + 1);
        int at = VALUES + index * SLOT;
        slots.putLong(POINTERS + index * SLOT, slotsAddress + at);
        if (size < SLOT) {
            // No stale upper bytes of a wider earlier argument: where the kernel's parameters are
            // unknown (Kernel#parameterCount() is -1), nothing checks sizes and the kernel would get them.
            slots.putLong(at, 0);
        }
        return at;
    }

    private static void checkIndex(int index) {
        if (index < 0 || index >= MAX_ARGS) {
            throw new IllegalArgumentException("argument index " + index + " is outside [0, " + MAX_ARGS + ")");
        }
    }

    /**
     * Sets argument {@code index} to a structure passed by value: the bytes from {@code bytes}' position to its
     * limit, copied now (the buffer's position does not move). The bytes must be laid out as the kernel's C
     * structure is, in the device's (little-endian) byte order with its padding. The size is checked against the
     * parameter's at launch wherever the kernel's parameters are known (see {@link Kernel}: from the driver on CUDA
     * 12.4+, else from the module image). The argument count grows to {@code index + 1} if it was smaller.
     *
     * @param index the parameter, from 0 to {@link #MAX_ARGS} - 1
     * @param bytes the structure's bytes (heap or direct buffer)
     * @return this launch
     * @throws NullPointerException if {@code bytes} is {@code null}
     * @throws IllegalArgumentException if {@code index} is outside {@code [0, MAX_ARGS)}, no bytes remain, or
     *     the structure arguments of this launch would take more than {@link #MAX_STRUCT_BYTES} together
     */
    public KernelLaunch arg(int index, ByteBuffer bytes) {
        if (bytes == null) {
            throw new NullPointerException("structure argument " + index + " is null");
        }
        checkIndex(index);
        int size = bytes.remaining();
        if (size == 0) {
            throw new IllegalArgumentException("structure argument " + index + " has no bytes (position = limit = " + bytes.position()
                    + "); expected the structure's bytes between position and limit");
        }
        int at = structRegion(index, size);
        for (int i = 0; i < size; i++) {
            slots.put(at + i, bytes.get(bytes.position() + i));
        }
        sizes[index] = size;
        kinds[index] = ArgumentKinds.STRUCT;
        buffers[index] = null;
        argCount = Math.max(argCount, index + 1);
        slots.putLong(POINTERS + index * SLOT, slotsAddress + at);
        return this;
    }

    /**
     * Frees the structure area for a new set of arguments. The thread's launch object behind {@link Handle#launch}
     * serves every kernel the thread launches: regions kept from earlier launches (at other argument positions)
     * would fill the area and refuse a later valid launch that no caller could avoid. Free when no structure
     * was passed since the last time.
     */
    private void forgetStructRegions() {
        if (structTop != 0) {
            java.util.Arrays.fill(structCapacity, 0);
            structTop = 0;
        }
    }

    /** The region of argument {@code index} in the structure area, reused if large enough, else a new one. */
    private int structRegion(int index, int size) {
        if (structCapacity[index] >= size) {
            return structBase + structOffset[index];
        }
        int aligned = (size + STRUCT_ALIGNMENT - 1) / STRUCT_ALIGNMENT * STRUCT_ALIGNMENT;
        if (structTop + aligned > MAX_STRUCT_BYTES) {
            throw new IllegalArgumentException("structure argument " + index + " of " + size + " bytes does not fit: this launch's structure arguments already take "
                    + structTop + " of " + MAX_STRUCT_BYTES + " bytes (each rounded up to " + STRUCT_ALIGNMENT + "); use a new KernelLaunch");
        }
        structOffset[index] = structTop;
        structCapacity[index] = aligned;
        structTop += aligned;
        return structBase + structOffset[index];
    }

    /**
     * Sets argument {@code index} to the device address of {@code buffer} (8 bytes, for a pointer parameter).
     * The address is read now; at each launch the buffer is held open for the launch and must belong to the
     * launching handle's context. The argument count grows to {@code index + 1} if it was smaller.
     *
     * @param index the parameter, from 0 to {@link #MAX_ARGS} - 1
     * @param buffer the buffer whose address is passed
     * @return this launch
     * @throws NullPointerException if {@code buffer} is {@code null}
     * @throws IllegalArgumentException if {@code index} is outside {@code [0, MAX_ARGS)}
     * @throws IllegalStateException if the buffer was closed before its address was ever read (see
     *     {@link DeviceBuffer#address()}); the launch is left as it was
     */
    public KernelLaunch arg(int index, DeviceBuffer buffer) {
        if (buffer == null) { // no message built on the hot path
            throw new NullPointerException("buffer argument " + index + " is null");
        }
        long address = buffer.address(); // may throw (a closed buffer): before this launch changes
        int at = slot(index, 8, ArgumentKinds.BUFFER);
        buffers[index] = buffer;
        slots.putLong(at, address);
        return this;
    }

    /**
     * Sets argument {@code index} to a raw device pointer (8 bytes). Unlike {@link #arg(int, DeviceBuffer)},
     * nothing keeps the memory behind it alive or checks its context.
     *
     * @param index the parameter, from 0 to {@link #MAX_ARGS} - 1
     * @param deviceAddress the device address ({@code CUdeviceptr})
     * @return this launch
     * @throws IllegalArgumentException if {@code index} is outside {@code [0, MAX_ARGS)}
     */
    public KernelLaunch argPointer(int index, long deviceAddress) {
        slots.putLong(slot(index, 8, ArgumentKinds.POINTER), deviceAddress);
        return this;
    }

    /**
     * Sets argument {@code index} to an {@code int} (4 bytes, for a {@code int} kernel parameter). The
     * argument count grows to {@code index + 1} if it was smaller.
     *
     * @param index the parameter, from 0 to {@link #MAX_ARGS} - 1
     * @param value the value
     * @return this launch
     * @throws IllegalArgumentException if {@code index} is outside {@code [0, MAX_ARGS)}
     */
    public KernelLaunch arg(int index, int value) {
        slots.putInt(slot(index, 4, ArgumentKinds.INT), value);
        return this;
    }

    /**
     * Sets argument {@code index} to a {@code long} (8 bytes, for a {@code long long} kernel parameter). The
     * argument count grows to {@code index + 1} if it was smaller.
     *
     * @param index the parameter, from 0 to {@link #MAX_ARGS} - 1
     * @param value the value
     * @return this launch
     * @throws IllegalArgumentException if {@code index} is outside {@code [0, MAX_ARGS)}
     */
    public KernelLaunch arg(int index, long value) {
        slots.putLong(slot(index, 8, ArgumentKinds.LONG), value);
        return this;
    }

    /**
     * Sets argument {@code index} to a {@code float} (4 bytes, for a {@code float} kernel parameter). The
     * argument count grows to {@code index + 1} if it was smaller.
     *
     * @param index the parameter, from 0 to {@link #MAX_ARGS} - 1
     * @param value the value
     * @return this launch
     * @throws IllegalArgumentException if {@code index} is outside {@code [0, MAX_ARGS)}
     */
    public KernelLaunch arg(int index, float value) {
        slots.putFloat(slot(index, 4, ArgumentKinds.FLOAT), value);
        return this;
    }

    /**
     * Sets argument {@code index} to a {@code double} (8 bytes, for a {@code double} kernel parameter). The
     * argument count grows to {@code index + 1} if it was smaller.
     *
     * @param index the parameter, from 0 to {@link #MAX_ARGS} - 1
     * @param value the value
     * @return this launch
     * @throws IllegalArgumentException if {@code index} is outside {@code [0, MAX_ARGS)}
     */
    public KernelLaunch arg(int index, double value) {
        slots.putDouble(slot(index, 8, ArgumentKinds.DOUBLE), value);
        return this;
    }

    /**
     * Sets argument {@code index} to a {@code short} (2 bytes, for a {@code short} kernel parameter). The
     * argument count grows to {@code index + 1} if it was smaller.
     *
     * @param index the parameter, from 0 to {@link #MAX_ARGS} - 1
     * @param value the value
     * @return this launch
     * @throws IllegalArgumentException if {@code index} is outside {@code [0, MAX_ARGS)}
     */
    public KernelLaunch arg(int index, short value) {
        slots.putShort(slot(index, 2, ArgumentKinds.SHORT), value);
        return this;
    }

    /**
     * Sets argument {@code index} to a {@code byte} (1 bytes, for a {@code char} kernel parameter). The
     * argument count grows to {@code index + 1} if it was smaller.
     *
     * @param index the parameter, from 0 to {@link #MAX_ARGS} - 1
     * @param value the value
     * @return this launch
     * @throws IllegalArgumentException if {@code index} is outside {@code [0, MAX_ARGS)}
     */
    public KernelLaunch arg(int index, byte value) {
        slots.put(slot(index, 1, ArgumentKinds.BYTE), value);
        return this;
    }

    /** The 8 bytes of argument slot {@code index} as a long (for tests). */
    long slotBits(int index) {
        return slots.getLong(VALUES + index * SLOT);
    }

    /**
     * Sets the argument count explicitly, e.g. 0 for a kernel without parameters or fewer to drop trailing
     * arguments. Wherever the kernel's parameters are known (see {@link Kernel}), a launch checks the count and
     * each argument's size against them.
     *
     * @param count number of arguments passed, from 0 to {@link #MAX_ARGS}
     * @return this launch
     * @throws IllegalArgumentException if {@code count} is outside {@code [0, MAX_ARGS]}
     */
    public KernelLaunch argCount(int count) {
        if (count < 0 || count > MAX_ARGS) {
            throw new IllegalArgumentException("argument count " + count + " is outside [0, " + MAX_ARGS + "]");
        }
        argCount = count;
        return this;
    }

    void setArgs(Object[] args) {
        if (args.length > MAX_ARGS) {
            throw new IllegalArgumentException(args.length + " kernel arguments given; at most " + MAX_ARGS + " are supported");
        }
        argCount = 0;
        forgetStructRegions();
        for (int i = 0; i < args.length; i++) {
            Object a = args[i];
            if (a instanceof DeviceBuffer) {
                arg(i, (DeviceBuffer) a);
            } else if (a instanceof Integer) {
                arg(i, (int) (Integer) a);
            } else if (a instanceof Long) {
                arg(i, (long) (Long) a);
            } else if (a instanceof Float) {
                arg(i, (float) (Float) a);
            } else if (a instanceof Double) {
                arg(i, (double) (Double) a);
            } else if (a instanceof Short) {
                arg(i, (short) (Short) a);
            } else if (a instanceof Byte) {
                arg(i, (byte) (Byte) a);
            } else if (a instanceof ByteBuffer) {
                arg(i, (ByteBuffer) a);
            } else {
                throw new IllegalArgumentException("kernel '" + kernel.name() + "' argument " + i + " is "
                        + (a == null ? "null" : "a " + a.getClass().getName())
                        + "; expected a DeviceBuffer, Integer, Long, Float, Double, Short, Byte or ByteBuffer (a structure by value; use argPointer for raw addresses)");
            }
        }
    }

    /** Forgets the kernel and buffer arguments, so that the thread's reusable launch keeps none of them alive. */
    void release() {
        java.util.Arrays.fill(buffers, 0, MAX_ARGS, null);
        kernel = null;
    }

    /**
     * Launches on {@code handle}'s stream. The kernel's library, the handle and every
     * {@link DeviceBuffer} argument are held open for the launch: a concurrent close waits for it
     * instead of freeing them first, and a closed one is an {@link IllegalStateException}.
     *
     * @param handle the handle whose context and stream run the kernel
     * @throws IllegalArgumentException if the arguments, grid, block or shared memory do not fit
     *     the kernel or the device, or a buffer belongs to another context
     * @throws IllegalStateException if the handle, library or a buffer argument is closed
     * @throws UnsupportedOperationException if the launch is {@link #cooperative(boolean) cooperative} and the
     *     device cannot launch cooperatively, or uses {@link #cluster(int, int, int) clusters} and the device's
     *     compute capability is below 9.0
     * @throws CudaException if the driver refuses the launch
     */
    public void launch(Handle handle) {
        Library library = kernel.library();
        long lib = library.enter();
        try {
            long h = handle.enter();
            try {
                Capture.noteUse(handle, library);
                int entered = enterBuffers(handle);
                try {
                    checkArguments(kernel.state().paramSizes(h, lib));
                    Device device = handle.device();
                    config.check(kernel, device);
                    long function = kernel.state().function(handle, h);
                    if (config.hasClusters()) {
                        config.checkCluster(kernel, device, h, function);
                    }
                    NativeApi.launch(h, function, config.gridX, config.gridY, config.gridZ, config.blockX, config.blockY, config.blockZ,
                            config.sharedBytes, slotsAddress + POINTERS, argCount, config.cooperative, config.clusterX, config.clusterY,
                            config.clusterZ, slotsAddress + MEMORY, memoryCount, lib);
                } finally {
                    exitBuffers(entered);
                }
            } finally {
                handle.exit();
            }
        } finally {
            library.exit();
        }
    }

    /**
     * Enters every buffer argument (in index order) and lists their memory's native pointers for the launch
     * ({@link #memoryCount}); returns how many slots were walked.
     */
    private int enterBuffers(Handle handle) {
        int i = 0;
        memoryCount = 0;
        try {
            for (; i < argCount; i++) {
                if (buffers[i] != null) {
                    slots.putLong(MEMORY + memoryCount++ * SLOT, buffers[i].enterFor(handle));
                }
            }
            return i;
        } catch (RuntimeException e) {
            exitBuffers(i);
            throw e;
        }
    }

    private void exitBuffers(int count) {
        for (int i = 0; i < count; i++) {
            if (buffers[i] != null) {
                buffers[i].exit();
            }
        }
    }

    /**
     * Checks the argument count and each argument's size against the kernel's parameters, {@code expected} (their
     * sizes in bytes), where they are known (see {@link Kernel}); {@code null} where they are not.
     */
    private void checkArguments(int[] expected) {
        if (expected == null) {
            return;
        }
        if (expected.length != argCount) {
            throw new IllegalArgumentException("kernel '" + kernel.name() + "' takes " + expected.length + " parameters; " + argCount + " arguments given: "
                    + (argCount < expected.length ? "parameter " + argCount + " (" + expected[argCount] + " bytes) has no argument"
                            : "argument " + expected.length + " has no parameter"));
        }
        for (int i = 0; i < argCount; i++) {
            if (expected[i] != sizes[i]) {
                throw new IllegalArgumentException(wrongSize(i, expected[i]));
            }
        }
    }

    /** Why argument {@code index} does not fit its parameter of {@code expected} bytes ({@link ArgumentKinds#wrongSize}). */
    String wrongSize(int index, int expected) {
        return ArgumentKinds.wrongSize(kernel.name(), index, expected, sizes[index], kinds[index]);
    }
}
