package dev.cuhandle;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Random;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Shared helpers of the BLAS GPU tests: the run's random seed, one precision-generic front end to
 * {@link Blas}, vectors laid out inside device buffers with guard elements, and result buffers
 * with guard bytes.
 *
 * <p>Every run draws a fresh seed (printed once, and part of every failure message); rerun a
 * failure with {@code -Dcuhandle.blasSeed=<seed>}. Each test case derives its own generator from
 * the seed and its name, so one case can be reproduced alone.
 */
final class BlasTestSupport {
    static final String SEED_PROPERTY = "cuhandle.blasSeed";
    static final long SEED = initialSeed();
    private static final AtomicBoolean ANNOUNCED = new AtomicBoolean();
    /** Guard elements after every vector's span, outside its slice; they must never change. */
    static final int TRAIL = 3;
    /** Result slices start at this byte of a {@link #RESULT_BUFFER_BYTES}-byte buffer. */
    static final int RESULT_OFFSET = 8;
    static final int RESULT_BUFFER_BYTES = 24;
    /** Bytes a fresh result buffer is filled with (a value no reduction here produces). */
    static final byte RESULT_SENTINEL = (byte) 0x7B;

    private BlasTestSupport() {}

    private static long initialSeed() {
        String fixed = System.getProperty(SEED_PROPERTY);
        if (fixed != null && !fixed.isEmpty()) {
            return Long.decode(fixed);
        }
        return new Random().nextLong() ^ System.nanoTime();
    }

    static void announceSeed(String who) {
        if (ANNOUNCED.compareAndSet(false, true)) {
            System.out.println("[blas-tests] random seed " + SEED + " (" + who + "; rerun with -D" + SEED_PROPERTY + "=" + SEED + ")");
        }
    }

    /** "[seed=..., case ...]" for failure messages. */
    static String where(String caseName) {
        return " [" + caseName + "; seed=" + SEED + ", rerun with -D" + SEED_PROPERTY + "=" + SEED + "]";
    }

    /** A generator for one case, reproducible from the seed and the case's name. */
    static SplittableRandom random(String caseName) {
        long h = SEED;
        for (int i = 0; i < caseName.length(); i++) {
            h = (h ^ caseName.charAt(i)) * 0x100000001B3L;
        }
        return new SplittableRandom(h ^ (h >>> 29));
    }

    // ------------------------------------------------------------------------------ precisions

    /** float (s) or double (d), with the Blas calls of that precision. */
    enum Prec {
        S(4), D(8);

        final int bytes;

        Prec(int bytes) {
            this.bytes = bytes;
        }

        boolean single() {
            return this == S;
        }

        String prefix() {
            return single() ? "s" : "d";
        }

        /** Rounds to this precision. */
        double round(double v) {
            return single() ? (double) (float) v : v;
        }

        /** Bytes of a dot/nrm2/asum result; iamax results are always 8 bytes (a 64-bit index). */
        int resultBytes(boolean iamax) {
            return iamax ? 8 : bytes;
        }

        DeviceBuffer upload(Handle h, double[] values) {
            if (single()) {
                float[] f = new float[values.length];
                for (int i = 0; i < f.length; i++) {
                    f[i] = (float) values[i];
                }
                return h.upload(f);
            }
            return h.upload(values);
        }

        /** The first {@code count} elements of {@code b}. */
        double[] download(DeviceBuffer b, int count) {
            double[] out = new double[count];
            if (single()) {
                float[] f = new float[count];
                b.download(f);
                for (int i = 0; i < count; i++) {
                    out[i] = f[i];
                }
            } else {
                b.download(out);
            }
            return out;
        }

        void scal(Handle h, long n, double alpha, DeviceBuffer x, long incx) {
            if (single()) {
                Blas.sscal(h, n, (float) alpha, x, incx);
            } else {
                Blas.dscal(h, n, alpha, x, incx);
            }
        }

        void axpy(Handle h, long n, double alpha, DeviceBuffer x, long incx, DeviceBuffer y, long incy) {
            if (single()) {
                Blas.saxpy(h, n, (float) alpha, x, incx, y, incy);
            } else {
                Blas.daxpy(h, n, alpha, x, incx, y, incy);
            }
        }

        void copy(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy) {
            if (single()) {
                Blas.scopy(h, n, x, incx, y, incy);
            } else {
                Blas.dcopy(h, n, x, incx, y, incy);
            }
        }

        void swap(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy) {
            if (single()) {
                Blas.sswap(h, n, x, incx, y, incy);
            } else {
                Blas.dswap(h, n, x, incx, y, incy);
            }
        }

        double dot(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy) {
            return single() ? Blas.sdot(h, n, x, incx, y, incy) : Blas.ddot(h, n, x, incx, y, incy);
        }

        void dot(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy, DeviceBuffer result) {
            if (single()) {
                Blas.sdot(h, n, x, incx, y, incy, result);
            } else {
                Blas.ddot(h, n, x, incx, y, incy, result);
            }
        }

        double nrm2(Handle h, long n, DeviceBuffer x, long incx) {
            return single() ? Blas.snrm2(h, n, x, incx) : Blas.dnrm2(h, n, x, incx);
        }

        void nrm2(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer result) {
            if (single()) {
                Blas.snrm2(h, n, x, incx, result);
            } else {
                Blas.dnrm2(h, n, x, incx, result);
            }
        }

        double asum(Handle h, long n, DeviceBuffer x, long incx) {
            return single() ? Blas.sasum(h, n, x, incx) : Blas.dasum(h, n, x, incx);
        }

        void asum(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer result) {
            if (single()) {
                Blas.sasum(h, n, x, incx, result);
            } else {
                Blas.dasum(h, n, x, incx, result);
            }
        }

        long iamax(Handle h, long n, DeviceBuffer x, long incx) {
            return single() ? Blas.isamax(h, n, x, incx) : Blas.idamax(h, n, x, incx);
        }

        void iamax(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer result) {
            if (single()) {
                Blas.isamax(h, n, x, incx, result);
            } else {
                Blas.idamax(h, n, x, incx, result);
            }
        }
    }

    /** The four reductions, for loops over "host result" and "device result". */
    enum Reduction {
        DOT, NRM2, ASUM, IAMAX;

        String name(Prec p) {
            return this == IAMAX ? "i" + p.prefix() + "amax" : p.prefix() + name().toLowerCase(java.util.Locale.ROOT);
        }

        /** The host-result call; iamax's index as a double (exact). */
        double host(Prec p, Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy) {
            switch (this) {
                case DOT:
                    return p.dot(h, n, x, incx, y, incy);
                case NRM2:
                    return p.nrm2(h, n, x, incx);
                case ASUM:
                    return p.asum(h, n, x, incx);
                default:
                    return p.iamax(h, n, x, incx);
            }
        }

        /**
         * The device-result call into a fresh guarded result buffer; returns the value downloaded
         * from it (iamax's index as a double) after checking that only the result's bytes changed.
         */
        double device(Prec p, Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy, String caseName) {
            int rb = p.resultBytes(this == IAMAX);
            try (ResultSlot slot = new ResultSlot(h, rb)) {
                deviceCall(p, h, n, x, incx, y, incy, slot.view);
                return this == IAMAX ? slot.readLong(caseName) : slot.readReal(p, caseName);
            }
        }

        /** The device-result call alone, writing into {@code result} ({@code y} and {@code incy} are used by dot only). */
        void deviceCall(Prec p, Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy, DeviceBuffer result) {
            switch (this) {
                case DOT:
                    p.dot(h, n, x, incx, y, incy, result);
                    break;
                case NRM2:
                    p.nrm2(h, n, x, incx, result);
                    break;
                case ASUM:
                    p.asum(h, n, x, incx, result);
                    break;
                default:
                    p.iamax(h, n, x, incx, result);
                    break;
            }
        }
    }

    // ------------------------------------------------------------------------------ result buffers

    /**
     * A {@link #RESULT_BUFFER_BYTES}-byte buffer filled with {@link #RESULT_SENTINEL}, and a slice
     * of {@code bytes} at {@link #RESULT_OFFSET} that a device-result reduction writes to. Reading
     * checks that no byte outside the slice changed.
     */
    static final class ResultSlot implements AutoCloseable {
        final DeviceBuffer buffer;
        final DeviceBuffer view;
        final int bytes;

        ResultSlot(Handle h, int bytes) {
            this.bytes = bytes;
            byte[] fill = new byte[RESULT_BUFFER_BYTES];
            Arrays.fill(fill, RESULT_SENTINEL);
            this.buffer = h.upload(fill);
            this.view = buffer.slice(RESULT_OFFSET, bytes);
        }

        /** The raw bytes of the result slice (little-endian), after checking the guard bytes. */
        ByteBuffer read(String caseName) {
            byte[] all = new byte[RESULT_BUFFER_BYTES];
            buffer.download(all);
            for (int i = 0; i < all.length; i++) {
                if ((i < RESULT_OFFSET || i >= RESULT_OFFSET + bytes) && all[i] != RESULT_SENTINEL) {
                    throw new AssertionError("byte " + i + " of the result buffer changed (0x" + Integer.toHexString(all[i] & 0xff)
                            + "), but the result slice is bytes [" + RESULT_OFFSET + ", " + (RESULT_OFFSET + bytes) + ")" + where(caseName));
                }
            }
            return ByteBuffer.wrap(all, RESULT_OFFSET, bytes).slice().order(ByteOrder.LITTLE_ENDIAN);
        }

        double readReal(Prec p, String caseName) {
            ByteBuffer b = read(caseName);
            return p.single() ? b.getFloat(0) : b.getDouble(0);
        }

        /** Raw bits of a float/double result (for "+0.0 was written" checks). */
        long readBits(Prec p, String caseName) {
            ByteBuffer b = read(caseName);
            return p.single() ? b.getInt(0) & 0xffffffffL : b.getLong(0);
        }

        long readLong(String caseName) {
            return read(caseName).getLong(0);
        }

        @Override
        public void close() {
            buffer.close();
        }
    }

    // ------------------------------------------------------------------------------ vectors

    /**
     * A vector of n elements with increment inc inside a host array {@code all}: {@code lead}
     * elements before it, its span, then {@link #TRAIL} guard elements. Elements that are not part
     * of the vector (lead, gaps between strided elements, trail) hold "gap" values that are large
     * (~1e4), so a kernel that reads one gets a visibly wrong reduction, and must never change.
     */
    static final class Vec {
        final Prec prec;
        final long n;
        final long inc;
        final int lead;
        final int span;
        final double[] all;

        Vec(Prec prec, long n, long inc, int lead, double[] all) {
            this.prec = prec;
            this.n = n;
            this.inc = inc;
            this.lead = lead;
            this.span = Math.toIntExact(BlasReference.span(n, inc));
            this.all = all;
        }

        /** Random elements from {@link #element}, gap values elsewhere. */
        static Vec random(Prec prec, long n, long inc, int lead, SplittableRandom rnd) {
            int span = Math.toIntExact(BlasReference.span(n, inc));
            double[] all = new double[lead + span + TRAIL];
            for (int i = 0; i < all.length; i++) {
                all[i] = gap(prec, rnd);
            }
            Vec v = new Vec(prec, n, inc, lead, all);
            for (long i = 0; i < n; i++) {
                all[v.at(i)] = element(prec, rnd);
                if (inc == 0) {
                    break; // every element is the first
                }
            }
            return v;
        }

        /** Given elements (n = their count) with increment inc, gap values elsewhere. */
        static Vec of(Prec prec, long inc, int lead, SplittableRandom rnd, double... elements) {
            int n = elements.length;
            int span = Math.toIntExact(BlasReference.span(n, inc));
            double[] all = new double[lead + span + TRAIL];
            for (int i = 0; i < all.length; i++) {
                all[i] = gap(prec, rnd);
            }
            Vec v = new Vec(prec, n, inc, lead, all);
            for (int i = 0; i < n; i++) {
                all[v.at(i)] = prec.round(elements[i]);
            }
            return v;
        }

        /** Array index of element i. */
        int at(long i) {
            return BlasReference.index(lead, i, n, inc);
        }

        /** Uploads the whole array and returns the buffer; {@link #view} gives the vector's slice. */
        DeviceBuffer upload(Handle h) {
            return prec.upload(h, all);
        }

        /** The slice the vector starts at: from {@code lead}, exactly its span long. */
        DeviceBuffer view(DeviceBuffer whole) {
            return whole.slice((long) lead * prec.bytes, (long) span * prec.bytes);
        }

        double[] download(DeviceBuffer whole) {
            return prec.download(whole, all.length);
        }

        double[] copyOfAll() {
            return all.clone();
        }
    }

    /** A random element: mixed signs, magnitudes from 2^-4 to 2^4, rounded to the precision. */
    static double element(Prec prec, SplittableRandom rnd) {
        double u = rnd.nextDouble() * 2 - 1;
        return prec.round(Math.scalb(u, rnd.nextInt(9) - 4));
    }

    /** A gap value: +-(1e4 .. 2e4), far larger than any element. */
    static double gap(Prec prec, SplittableRandom rnd) {
        double v = 1e4 * (1 + rnd.nextDouble());
        return prec.round(rnd.nextBoolean() ? v : -v);
    }

    /**
     * Runs reduction {@code r} on x (and y for dot) with the vectors' own n and increments, in
     * both variants; checks that the device-result variant wrote exactly the host-result value
     * (bit for bit: one deterministic kernel) and that x and y are unchanged; returns the host
     * result (iamax: the index as a double).
     */
    static double reduce(Handle h, Reduction r, Vec x, Vec y, String caseName) {
        Prec p = x.prec;
        long n = x.n;
        try (DeviceBuffer bx = x.upload(h); DeviceBuffer by = y != null ? y.upload(h) : null) {
            DeviceBuffer vx = x.view(bx);
            DeviceBuffer vy = y != null ? y.view(by) : null;
            long incy = y != null ? y.inc : 0;
            double host = r.host(p, h, n, vx, x.inc, vy, incy);
            double device = r.device(p, h, n, vx, x.inc, vy, incy, caseName);
            String what = r.name(p) + "(n=" + n + ", incx=" + x.inc + (y != null ? ", incy=" + incy : "") + ")";
            if (!BlasReference.sameValue(host, device)) {
                throw new AssertionError(what + ": the device-result variant wrote " + device + " but the host-result variant returned " + host
                        + "; the same input must give bit-identical results" + where(caseName));
            }
            assertSameArray(x.all, x.download(bx), what + " x (read only)", caseName);
            if (y != null) {
                assertSameArray(y.all, y.download(by), what + " y (read only)", caseName);
            }
            return host;
        }
    }

    /**
     * Checks {@code got} against {@code expected} element by element with equal bits (any NaN
     * equals any NaN); {@code what} names the array in the message.
     */
    static void assertSameArray(double[] expected, double[] got, String what, String caseName) {
        if (expected.length != got.length) {
            throw new AssertionError(what + ": length " + got.length + ", expected " + expected.length + where(caseName));
        }
        for (int i = 0; i < expected.length; i++) {
            if (!BlasReference.sameValue(expected[i], got[i])) {
                throw new AssertionError(what + ": buffer element " + i + " is " + got[i] + " (bits 0x" + Long.toHexString(Double.doubleToRawLongBits(got[i]))
                        + "), expected " + expected[i] + " (bits 0x" + Long.toHexString(Double.doubleToRawLongBits(expected[i])) + ")"
                        + mismatchCount(expected, got) + where(caseName));
            }
        }
    }

    private static String mismatchCount(double[] expected, double[] got) {
        int count = 0;
        for (int i = 0; i < expected.length; i++) {
            if (!BlasReference.sameValue(expected[i], got[i])) {
                count++;
            }
        }
        return "; " + count + " of " + expected.length + " buffer elements differ";
    }

    /** Fails unless {@code got} is within {@code tol} of {@code expected} (NaN/Inf must match). */
    static void assertClose(String what, double expected, double got, double tol, String caseName) {
        if (!BlasReference.close(expected, got, tol)) {
            throw new AssertionError(what + " = " + got + ", expected " + expected + " within " + tol + " (off by " + Math.abs(got - expected)
                    + (expected != 0 ? ", relative " + Math.abs(got - expected) / Math.abs(expected) : "") + ")" + where(caseName));
        }
    }
}
