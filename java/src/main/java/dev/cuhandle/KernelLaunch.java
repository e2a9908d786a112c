package dev.cuhandle;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A reusable kernel launch (rule K1): arguments are written into 8-byte slots of a direct buffer
 * whose address the native layer hands to {@code cuLaunchKernel}, so launching allocates nothing.
 * Set the shape and arguments once, change what varies, call {@link #launch(Handle)} in the loop.
 * Not thread-safe: use one per thread.
 */
public final class KernelLaunch {
    /** The most arguments a launch takes. */
    public static final int MAX_ARGS = 64;
    private static final int SLOT = 8;
    private static final ThreadLocal<KernelLaunch> PER_THREAD = new ThreadLocal<>();

    private Kernel kernel;
    private final ByteBuffer slots = ByteBuffer.allocateDirect(MAX_ARGS * SLOT + 64).order(ByteOrder.nativeOrder());
    private final long slotsAddress;
    private final int[] sizes = new int[MAX_ARGS];
    private final DeviceBuffer[] buffers = new DeviceBuffer[MAX_ARGS];
    private int argCount;
    private int gx = 1;
    private int gy = 1;
    private int gz = 1;
    private int bx = 1;
    private int by = 1;
    private int bz = 1;
    private int sharedBytes;

    KernelLaunch(Kernel kernel) {
        this.kernel = kernel;
        Native.ensureLoaded();
        this.slotsAddress = NativeApi.directBufferAddress(slots);
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
        gx = x;
        gy = y;
        gz = z;
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
        bx = x;
        by = y;
        bz = z;
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
     * Sets the dynamic shared memory per block ({@code extern __shared__}). Checked at launch against
     * {@link Device#maxSharedMemoryPerBlock()}.
     *
     * @param bytes dynamic shared memory in bytes, 0 or more
     * @return this launch
     */
    public KernelLaunch sharedBytes(int bytes) {
        sharedBytes = bytes;
        return this;
    }

    private int slot(int index, int size) {
        if (index < 0 || index >= MAX_ARGS) {
            throw new IllegalArgumentException("argument index " + index + " is outside [0, " + MAX_ARGS + ")");
        }
        sizes[index] = size;
        buffers[index] = null;
        argCount = Math.max(argCount, index + 1);
        int at = index * SLOT;
        if (size < SLOT) {
            // No stale upper bytes of a wider earlier argument: a driver that cannot check sizes
            // (before 12.4) would hand them to the kernel.
            slots.putLong(at, 0);
        }
        return at;
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
     */
    public KernelLaunch arg(int index, DeviceBuffer buffer) {
        if (buffer == null) { // no message built on the hot path
            throw new NullPointerException("buffer argument " + index + " is null");
        }
        int at = slot(index, 8);
        buffers[index] = buffer;
        slots.putLong(at, buffer.address());
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
        slots.putLong(slot(index, 8), deviceAddress);
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
        slots.putInt(slot(index, 4), value);
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
        slots.putLong(slot(index, 8), value);
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
        slots.putFloat(slot(index, 4), value);
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
        slots.putDouble(slot(index, 8), value);
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
        slots.putShort(slot(index, 2), value);
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
        slots.put(slot(index, 1), value);
        return this;
    }

    /** The 8 bytes of argument slot {@code index} as a long (for tests). */
    long slotBits(int index) {
        return slots.getLong(index * SLOT);
    }

    /**
     * Sets the argument count explicitly, e.g. 0 for a kernel without parameters or fewer to drop trailing
     * arguments. Where the driver knows the kernel's parameters (CUDA 12.4+), a launch checks the count and
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
            } else {
                throw new IllegalArgumentException("kernel '" + kernel.name() + "' argument " + i + " is "
                        + (a == null ? "null" : "a " + a.getClass().getName())
                        + "; expected a DeviceBuffer, Integer, Long, Float, Double, Short or Byte (use argPointer for raw addresses)");
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
     * @throws CudaException if the driver refuses the launch
     */
    public void launch(Handle handle) {
        Library library = kernel.library();
        long lib = library.enter();
        try {
            long h = handle.enter();
            try {
                int entered = enterBuffers(handle);
                try {
                    check(handle, h, lib);
                    NativeApi.launch(h, kernel.function(handle, h), gx, gy, gz, bx, by, bz, sharedBytes, slotsAddress, argCount);
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

    /** Enters every buffer argument (in index order); returns how many slots were walked. */
    private int enterBuffers(Handle handle) {
        int i = 0;
        try {
            for (; i < argCount; i++) {
                if (buffers[i] != null) {
                    buffers[i].enterFor(handle);
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

    private void check(Handle handle, long handlePointer, long libraryPointer) {
        int[] expected = kernel.paramSizes(handlePointer, libraryPointer);
        if (expected != null) {
            if (expected.length != argCount) {
                throw new IllegalArgumentException("kernel '" + kernel.name() + "' takes " + expected.length + " parameters; " + argCount + " arguments given");
            }
            for (int i = 0; i < argCount; i++) {
                if (expected[i] != sizes[i]) {
                    throw new IllegalArgumentException("kernel '" + kernel.name() + "' parameter " + i + " is " + expected[i]
                            + " bytes; the argument given is " + sizes[i] + " bytes");
                }
            }
        }
        Device d = handle.device();
        if (gx < 1 || gy < 1 || gz < 1 || gx > d.maxGridDim(0) || gy > d.maxGridDim(1) || gz > d.maxGridDim(2)) {
            throw new IllegalArgumentException("grid (" + gx + ", " + gy + ", " + gz + ") for kernel '" + kernel.name() + "' is outside the device's limits: each >= 1 and <= ("
                    + d.maxGridDim(0) + ", " + d.maxGridDim(1) + ", " + d.maxGridDim(2) + ")");
        }
        if (bx < 1 || by < 1 || bz < 1 || bx > d.maxBlockDim(0) || by > d.maxBlockDim(1) || bz > d.maxBlockDim(2)
                || (long) bx * by * bz > d.maxThreadsPerBlock()) {
            throw new IllegalArgumentException("block (" + bx + ", " + by + ", " + bz + ") for kernel '" + kernel.name() + "' is outside the device's limits: each >= 1, <= ("
                    + d.maxBlockDim(0) + ", " + d.maxBlockDim(1) + ", " + d.maxBlockDim(2) + "), at most " + d.maxThreadsPerBlock() + " threads in all");
        }
        if (sharedBytes < 0 || sharedBytes > d.maxSharedMemoryPerBlock()) {
            throw new IllegalArgumentException("dynamic shared memory of " + sharedBytes + " bytes for kernel '" + kernel.name()
                    + "' is outside [0, " + d.maxSharedMemoryPerBlock() + "]");
        }
    }
}
