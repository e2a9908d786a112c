package dev.cuhandle;

import java.lang.ref.Reference;
import java.util.Objects;

/**
 * A {@code __managed__} variable of a {@link Library} (rule K4): one copy at one address for the
 * whole process, which kernels in every context and on every device use and the host reads and
 * writes through this object.
 *
 * <p><b>Synchronisation.</b> The host must not read or write the variable while a kernel that
 * uses it may still run: {@link Handle#synchronize()} every handle whose kernels use it first
 * (on GPUs without concurrent managed access, Windows and pre-Pascal ones, a host access during a
 * kernel even faults). Kernels on different streams or devices that use it need the same ordering
 * among themselves. The accessors here are plain host loads and stores of the variable's bytes,
 * not atomic.
 *
 * <p>The variable lives as long as its library: after {@link Library#close()} every accessor
 * throws {@link IllegalStateException}, and this object keeps the library from being cleaned
 * while it is reachable.
 *
 * <pre>{@code
 * // in the library's source: __device__ __managed__ int hits;
 * ManagedVariable hits = lib.managed("hits");
 * hits.setInt(0, 0);
 * h.launch(count, Dim3.of(blocks), Dim3.of(256), 0, x, n);
 * h.synchronize();                                 // no kernel that uses it may run while the host reads it
 * int total = hits.getInt(0);
 * }</pre>
 */
public final class ManagedVariable {
    private final Library library;
    private final String name;
    private final long address;
    private final long bytes;

    ManagedVariable(Library library, String name, long address, long bytes) {
        this.library = library;
        this.name = name;
        this.address = address;
        this.bytes = bytes;
    }

    /**
     * The variable's name in its module.
     *
     * @return the name given to {@link Library#managed(String)}
     */
    public String name() {
        return name;
    }

    /**
     * The variable's address, the same in every context and on every device.
     *
     * @return the device (and host) address of the first byte
     */
    public long address() {
        return address;
    }

    /**
     * The variable's size.
     *
     * @return {@code sizeof} the variable, in bytes
     */
    public long byteLength() {
        return bytes;
    }

    /**
     * A view of the variable for kernels and copies on {@code handle} (its address is valid in
     * every context); closed with the library, like the views of {@link Library#global}.
     *
     * @param handle the handle whose stream copies to and from the view use
     * @return a buffer viewing the variable's bytes
     * @throws IllegalStateException if the library or the handle is closed
     */
    public DeviceBuffer view(Handle handle) {
        Objects.requireNonNull(handle, "handle");
        long lib = library.enter();
        try {
            return library.variableView(handle, address, bytes, "managed variable '" + name + "'");
        } finally {
            library.exit();
        }
    }

    /**
     * Reads the {@code int} at byte {@code offset}.
     *
     * @param offset byte offset in the variable
     * @return the value
     * @throws IllegalArgumentException if the 4 bytes are not inside the variable
     * @throws IllegalStateException if the library is closed
     */
    public int getInt(long offset) {
        return (int) read(offset, 4);
    }

    /**
     * Writes {@code value} at byte {@code offset}.
     *
     * @param offset byte offset in the variable
     * @param value the value
     * @throws IllegalArgumentException if the 4 bytes are not inside the variable
     * @throws IllegalStateException if the library is closed
     */
    public void setInt(long offset, int value) {
        write(offset, 4, value);
    }

    /**
     * Reads the {@code long} at byte {@code offset}.
     *
     * @param offset byte offset in the variable
     * @return the value
     * @throws IllegalArgumentException if the 8 bytes are not inside the variable
     * @throws IllegalStateException if the library is closed
     */
    public long getLong(long offset) {
        return read(offset, 8);
    }

    /**
     * Writes {@code value} at byte {@code offset}.
     *
     * @param offset byte offset in the variable
     * @param value the value
     * @throws IllegalArgumentException if the 8 bytes are not inside the variable
     * @throws IllegalStateException if the library is closed
     */
    public void setLong(long offset, long value) {
        write(offset, 8, value);
    }

    /**
     * Reads the {@code float} at byte {@code offset}.
     *
     * @param offset byte offset in the variable
     * @return the value
     * @throws IllegalArgumentException if the 4 bytes are not inside the variable
     * @throws IllegalStateException if the library is closed
     */
    public float getFloat(long offset) {
        return Float.intBitsToFloat(getInt(offset));
    }

    /**
     * Writes {@code value} at byte {@code offset}.
     *
     * @param offset byte offset in the variable
     * @param value the value
     * @throws IllegalArgumentException if the 4 bytes are not inside the variable
     * @throws IllegalStateException if the library is closed
     */
    public void setFloat(long offset, float value) {
        setInt(offset, Float.floatToRawIntBits(value));
    }

    /**
     * Reads the {@code double} at byte {@code offset}.
     *
     * @param offset byte offset in the variable
     * @return the value
     * @throws IllegalArgumentException if the 8 bytes are not inside the variable
     * @throws IllegalStateException if the library is closed
     */
    public double getDouble(long offset) {
        return Double.longBitsToDouble(getLong(offset));
    }

    /**
     * Writes {@code value} at byte {@code offset}.
     *
     * @param offset byte offset in the variable
     * @param value the value
     * @throws IllegalArgumentException if the 8 bytes are not inside the variable
     * @throws IllegalStateException if the library is closed
     */
    public void setDouble(long offset, double value) {
        setLong(offset, Double.doubleToRawLongBits(value));
    }

    private long read(long offset, int length) {
        check(offset, length);
        long lib = library.enter();
        try {
            return NativeApi.managedRead(lib, address, bytes, offset, length);
        } finally {
            library.exit();
            Reference.reachabilityFence(this);
        }
    }

    private void write(long offset, int length, long value) {
        check(offset, length);
        long lib = library.enter();
        try {
            NativeApi.managedWrite(lib, address, bytes, offset, length, value);
        } finally {
            library.exit();
            Reference.reachabilityFence(this);
        }
    }

    private void check(long offset, int length) {
        if (offset < 0 || offset > bytes - length) {
            throw new IllegalArgumentException("bytes [" + offset + ", " + offset + "+" + length + ") are outside the managed variable '" + name
                    + "' of " + bytes + " bytes");
        }
    }

    @Override
    public String toString() {
        return "ManagedVariable[" + name + ", " + bytes + " bytes at 0x" + Long.toHexString(address) + "]";
    }
}
