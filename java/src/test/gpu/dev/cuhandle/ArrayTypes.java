package dev.cuhandle;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;
import java.util.concurrent.CompletableFuture;

/**
 * The seven primitive array types cuhandle copies, for tests that run one scenario over all of
 * them: making random arrays, calling the right overload of {@link Handle}'s copies, and the bytes
 * an array range is in memory (native order, as on the device), for exact comparison.
 */
enum ArrayTypes {
    BYTE(1), SHORT(2), CHAR(2), INT(4), LONG(8), FLOAT(4), DOUBLE(8);

    final int bytes;

    ArrayTypes(int bytes) {
        this.bytes = bytes;
    }

    /** A new array of {@code length} elements with random bits (NaN payloads, negative zeros and all). */
    Object random(Random r, int length) {
        ByteBuffer bits = ByteBuffer.allocate(length * bytes).order(ByteOrder.nativeOrder());
        r.nextBytes(bits.array());
        Object a = allocate(length);
        switch (this) {
            case BYTE: bits.get((byte[]) a); break;
            case SHORT: bits.asShortBuffer().get((short[]) a); break;
            case CHAR: bits.asCharBuffer().get((char[]) a); break;
            case INT: bits.asIntBuffer().get((int[]) a); break;
            case LONG: bits.asLongBuffer().get((long[]) a); break;
            case FLOAT: bits.asFloatBuffer().get((float[]) a); break;
            default: bits.asDoubleBuffer().get((double[]) a); break;
        }
        return a;
    }

    Object allocate(int length) {
        switch (this) {
            case BYTE: return new byte[length];
            case SHORT: return new short[length];
            case CHAR: return new char[length];
            case INT: return new int[length];
            case LONG: return new long[length];
            case FLOAT: return new float[length];
            default: return new double[length];
        }
    }

    /** Elements {@code [offset, offset + length)} of {@code array} as bytes in native order (raw bits). */
    byte[] bytesOf(Object array, int offset, int length) {
        ByteBuffer out = ByteBuffer.allocate(length * bytes).order(ByteOrder.nativeOrder());
        switch (this) {
            case BYTE: out.put((byte[]) array, offset, length); break;
            case SHORT: out.asShortBuffer().put((short[]) array, offset, length); break;
            case CHAR: out.asCharBuffer().put((char[]) array, offset, length); break;
            case INT: out.asIntBuffer().put((int[]) array, offset, length); break;
            case LONG: out.asLongBuffer().put((long[]) array, offset, length); break;
            case FLOAT: for (int i = 0; i < length; i++) out.putInt(Float.floatToRawIntBits(((float[]) array)[offset + i])); break;
            default: for (int i = 0; i < length; i++) out.putLong(Double.doubleToRawLongBits(((double[]) array)[offset + i])); break;
        }
        return out.array();
    }

    void copyToDevice(Handle h, Object src, int srcOffset, DeviceBuffer dst, int length) {
        switch (this) {
            case BYTE: h.copyToDevice((byte[]) src, srcOffset, dst, length); break;
            case SHORT: h.copyToDevice((short[]) src, srcOffset, dst, length); break;
            case CHAR: h.copyToDevice((char[]) src, srcOffset, dst, length); break;
            case INT: h.copyToDevice((int[]) src, srcOffset, dst, length); break;
            case LONG: h.copyToDevice((long[]) src, srcOffset, dst, length); break;
            case FLOAT: h.copyToDevice((float[]) src, srcOffset, dst, length); break;
            default: h.copyToDevice((double[]) src, srcOffset, dst, length); break;
        }
    }

    void copyToHost(Handle h, DeviceBuffer src, Object dst, int dstOffset, int length) {
        switch (this) {
            case BYTE: h.copyToHost(src, (byte[]) dst, dstOffset, length); break;
            case SHORT: h.copyToHost(src, (short[]) dst, dstOffset, length); break;
            case CHAR: h.copyToHost(src, (char[]) dst, dstOffset, length); break;
            case INT: h.copyToHost(src, (int[]) dst, dstOffset, length); break;
            case LONG: h.copyToHost(src, (long[]) dst, dstOffset, length); break;
            case FLOAT: h.copyToHost(src, (float[]) dst, dstOffset, length); break;
            default: h.copyToHost(src, (double[]) dst, dstOffset, length); break;
        }
    }

    CompletableFuture<Void> uploadAsync(Handle h, Object src, int srcOffset, DeviceBuffer dst, int length) {
        switch (this) {
            case BYTE: return h.uploadAsync((byte[]) src, srcOffset, dst, length);
            case SHORT: return h.uploadAsync((short[]) src, srcOffset, dst, length);
            case CHAR: return h.uploadAsync((char[]) src, srcOffset, dst, length);
            case INT: return h.uploadAsync((int[]) src, srcOffset, dst, length);
            case LONG: return h.uploadAsync((long[]) src, srcOffset, dst, length);
            case FLOAT: return h.uploadAsync((float[]) src, srcOffset, dst, length);
            default: return h.uploadAsync((double[]) src, srcOffset, dst, length);
        }
    }

    CompletableFuture<Void> downloadAsync(Handle h, DeviceBuffer src, Object dst, int dstOffset, int length) {
        switch (this) {
            case BYTE: return h.downloadAsync(src, (byte[]) dst, dstOffset, length);
            case SHORT: return h.downloadAsync(src, (short[]) dst, dstOffset, length);
            case CHAR: return h.downloadAsync(src, (char[]) dst, dstOffset, length);
            case INT: return h.downloadAsync(src, (int[]) dst, dstOffset, length);
            case LONG: return h.downloadAsync(src, (long[]) dst, dstOffset, length);
            case FLOAT: return h.downloadAsync(src, (float[]) dst, dstOffset, length);
            default: return h.downloadAsync(src, (double[]) dst, dstOffset, length);
        }
    }

    /** A new array of arrays of this type ({@code float[][]} and so on), {@code count} null entries. */
    Object[] batch(int count) {
        return (Object[]) java.lang.reflect.Array.newInstance(allocate(0).getClass(), count);
    }

    void uploadAll(Handle h, Object[] src, DeviceBuffer[] dst) {
        switch (this) {
            case BYTE: h.uploadAll((byte[][]) src, dst); break;
            case SHORT: h.uploadAll((short[][]) src, dst); break;
            case CHAR: h.uploadAll((char[][]) src, dst); break;
            case INT: h.uploadAll((int[][]) src, dst); break;
            case LONG: h.uploadAll((long[][]) src, dst); break;
            case FLOAT: h.uploadAll((float[][]) src, dst); break;
            default: h.uploadAll((double[][]) src, dst); break;
        }
    }

    void downloadAll(Handle h, DeviceBuffer[] src, Object[] dst) {
        switch (this) {
            case BYTE: h.downloadAll(src, (byte[][]) dst); break;
            case SHORT: h.downloadAll(src, (short[][]) dst); break;
            case CHAR: h.downloadAll(src, (char[][]) dst); break;
            case INT: h.downloadAll(src, (int[][]) dst); break;
            case LONG: h.downloadAll(src, (long[][]) dst); break;
            case FLOAT: h.downloadAll(src, (float[][]) dst); break;
            default: h.downloadAll(src, (double[][]) dst); break;
        }
    }

    CompletableFuture<Void> uploadAllAsync(Handle h, Object[] src, DeviceBuffer[] dst) {
        switch (this) {
            case BYTE: return h.uploadAllAsync((byte[][]) src, dst);
            case SHORT: return h.uploadAllAsync((short[][]) src, dst);
            case CHAR: return h.uploadAllAsync((char[][]) src, dst);
            case INT: return h.uploadAllAsync((int[][]) src, dst);
            case LONG: return h.uploadAllAsync((long[][]) src, dst);
            case FLOAT: return h.uploadAllAsync((float[][]) src, dst);
            default: return h.uploadAllAsync((double[][]) src, dst);
        }
    }

    CompletableFuture<Void> downloadAllAsync(Handle h, DeviceBuffer[] src, Object[] dst) {
        switch (this) {
            case BYTE: return h.downloadAllAsync(src, (byte[][]) dst);
            case SHORT: return h.downloadAllAsync(src, (short[][]) dst);
            case CHAR: return h.downloadAllAsync(src, (char[][]) dst);
            case INT: return h.downloadAllAsync(src, (int[][]) dst);
            case LONG: return h.downloadAllAsync(src, (long[][]) dst);
            case FLOAT: return h.downloadAllAsync(src, (float[][]) dst);
            default: return h.downloadAllAsync(src, (double[][]) dst);
        }
    }

    /** The device bytes {@code [0, bytes)} of {@code buffer}, read through a direct ByteBuffer (no staging). */
    static byte[] deviceBytes(Handle h, DeviceBuffer buffer, int bytes) {
        ByteBuffer direct = ByteBuffer.allocateDirect(Math.max(1, bytes));
        h.copyToHost(buffer, direct, 0, bytes);
        byte[] out = new byte[bytes];
        direct.get(out);
        return out;
    }

    /** Index of the first byte where {@code a} and {@code b} differ, or -1. */
    static int firstDifference(byte[] a, byte[] b) {
        int n = Math.min(a.length, b.length);
        for (int i = 0; i < n; i++) {
            if (a[i] != b[i]) {
                return i;
            }
        }
        return a.length == b.length ? -1 : n;
    }
}
