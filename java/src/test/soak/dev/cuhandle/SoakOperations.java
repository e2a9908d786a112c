package dev.cuhandle;

import dev.cuhandle.BlasTestSupport.Prec;
import java.util.Arrays;
import java.util.Random;
import java.util.SplittableRandom;

/**
 * What the soak's operations share, and the base of each group of them: the worker's state (its
 * random source, the shared and the private handle, the statistics), the random choices the
 * operations draw (handles, precisions, increments, sizes), and the checks of results against the CPU,
 * which throw {@link Mismatch}. {@link SoakWorker} runs the operations of {@link SoakBlasOperations},
 * {@link SoakKernelOperations}, {@link SoakMemoryOperations}, {@link SoakHandleOperations} and
 * {@link SoakInvalidOperations}; all of them draw from the worker's one random source, in the order the
 * worker runs them, so a seed repeats a run.
 */
abstract class SoakOperations {
    /** A mismatch against the CPU reference (a failure, but not an exception of the API). */
    static final class Mismatch extends RuntimeException {
        Mismatch(String message) {
            super(message);
        }
    }

    /** The worker whose thread runs these operations; it holds the private handle. */
    final SoakWorker worker;
    final SoakShared c;
    final SoakStats stats;
    /** The handle every worker shares. */
    final Handle shared;
    /** The worker's random source: one seed per worker, so a run repeats with its seed. */
    final Random rnd;
    final String name;
    final int maxElems;

    /** The state of worker {@code index} (the worker itself calls this). */
    SoakOperations(SoakShared c, int index) {
        this.worker = (SoakWorker) this;
        this.c = c;
        this.stats = c.stats;
        this.shared = c.shared;
        this.rnd = new Random(c.options.seed() + index);
        this.name = "soak-" + index;
        this.maxElems = 1 << c.options.maxLog2();
    }

    /** A group of operations of {@code worker}, sharing its state. */
    SoakOperations(SoakWorker worker) {
        this.worker = worker;
        this.c = worker.c;
        this.stats = worker.stats;
        this.shared = worker.shared;
        this.rnd = worker.rnd;
        this.name = worker.name;
        this.maxElems = worker.maxElems;
    }

    /** The worker's own handle (replaced now and then, see {@link SoakHandleOperations}). */
    Handle priv() {
        return worker.priv;
    }

    /** A new handle of device 0's primary context: create(), create(0) or a wrap of the anchor's context. */
    Handle newHandle() {
        int k = rnd.nextInt(5);
        if (k == 0) {
            return Handle.wrap(c.anchor.rawContext()); // borrowed: the anchor keeps the context alive
        }
        return k <= 2 ? Handle.create() : Handle.create(0);
    }

    Handle runner() {
        return rnd.nextBoolean() ? shared : priv();
    }

    /** Usually the runner itself; one time in four the other handle (a buffer crossing handles). */
    Handle ownerFor(Handle runner) {
        if (rnd.nextInt(4) != 0) {
            return runner;
        }
        return runner == shared ? priv() : shared;
    }

    Prec prec() {
        return rnd.nextBoolean() ? Prec.S : Prec.D;
    }

    SplittableRandom split() {
        return new SplittableRandom(rnd.nextLong());
    }

    /** An increment: mostly +-1, also +-2..4, larger strides and (where allowed) 0. */
    long inc(boolean zeroAllowed) {
        int r = rnd.nextInt(20);
        if (r < 8) {
            return 1;
        }
        if (r < 11) {
            return -1;
        }
        if (r < 14) {
            return 2 + rnd.nextInt(3);
        }
        if (r < 17) {
            return -(2 + rnd.nextInt(3));
        }
        if (r < 18 && zeroAllowed) {
            return 0;
        }
        return (rnd.nextBoolean() ? 1 : -1) * (5 + rnd.nextInt(60));
    }

    /** For scal, nrm2, asum, iamax: incx <= 0 does nothing, so mostly positive. */
    long singleInc() {
        long inc = inc(true);
        return rnd.nextInt(10) < 7 ? Math.abs(inc) : inc;
    }

    /** Elements: log-uniform in [1, maxElems]. */
    int elems() {
        int bits = rnd.nextInt(c.options.maxLog2() + 1);
        return 1 + rnd.nextInt(1 << bits);
    }

    /** n for vectors with these increments: their span stays within maxElems; rarely 0 or negative. */
    long n(long incx, long incy) {
        if (rnd.nextInt(50) == 0) {
            return -rnd.nextInt(3);
        }
        long maxAbs = Math.max(1, Math.max(Math.abs(incx), Math.abs(incy)));
        long limit = (maxElems - 1) / maxAbs + 1;
        return Math.min(limit, elems());
    }

    /** The element offset of a vector's slice inside its buffer. */
    int lead() {
        int r = rnd.nextInt(4);
        return r == 0 ? 0 : r == 1 ? rnd.nextInt(4096) : rnd.nextInt(8);
    }

    double alpha(Prec p) {
        double a = p.round(0.5 + rnd.nextDouble());
        return rnd.nextBoolean() ? a : -a;
    }

    float[] randomFloats(int n) {
        float[] f = new float[n];
        for (int i = 0; i < n; i++) {
            f[i] = (rnd.nextFloat() - 0.5f) * 2000f;
        }
        return f;
    }

    byte[] randomBytes(int n) {
        byte[] b = new byte[n];
        rnd.nextBytes(b);
        return b;
    }

    void valid(String opName) {
        stats.valid.increment();
        stats.count(opName);
    }

    /** The first {@code count} elements of {@code whole}, read on {@code h}'s stream (waits for it). */
    static double[] download(Prec p, Handle h, DeviceBuffer whole, int count) {
        double[] out = new double[count];
        if (p.single()) {
            float[] f = new float[count];
            h.copyToHost(whole, f, 0, count);
            for (int i = 0; i < count; i++) {
                out[i] = f[i];
            }
        } else {
            h.copyToHost(whole, out, 0, count);
        }
        return out;
    }

    static void same(String what, double[] expected, double[] got) {
        for (int i = 0; i < expected.length; i++) {
            if (!BlasReference.sameValue(expected[i], got[i])) {
                int count = 0;
                for (int k = 0; k < expected.length; k++) {
                    if (!BlasReference.sameValue(expected[k], got[k])) {
                        count++;
                    }
                }
                throw new Mismatch(what + ": buffer element " + i + " is " + got[i] + ", expected " + expected[i] + "; " + count + " of "
                        + expected.length + " elements differ");
            }
        }
    }

    static void same(String what, float[] expected, float[] got) {
        for (int i = 0; i < expected.length; i++) {
            if (Float.floatToRawIntBits(expected[i]) != Float.floatToRawIntBits(got[i])) {
                throw new Mismatch(what + ": element " + i + " is " + got[i] + ", expected " + expected[i]);
            }
        }
    }

    static void sameBytes(String what, byte[] expected, byte[] got) {
        int i = Arrays.mismatch(expected, got);
        if (i >= 0) {
            throw new Mismatch(what + ": byte " + i + " differs (" + (i < got.length ? got[i] : "missing") + ", expected "
                    + (i < expected.length ? expected[i] : "none") + ")");
        }
    }

    static void check(String what, boolean ok) {
        if (!ok) {
            throw new Mismatch(what + ": the data read back differ from the data written");
        }
    }

    static String vec(String op, Prec p, long n, long incx, long incy, int lx, int ly) {
        return p.prefix() + op + "(n=" + n + ", incx=" + incx + (incy != Long.MIN_VALUE ? ", incy=" + incy : "") + ", x at element " + lx
                + (ly >= 0 ? ", y at element " + ly : "") + ")";
    }

    String crossing(Handle owner, Handle runner) {
        return " on the " + (runner == shared ? "shared" : "private") + " handle" + (owner != runner ? ", buffers of the other handle" : "");
    }

    /** Runs {@code call}, which must throw {@code type}. */
    void expect(String what, Class<? extends Throwable> type, Runnable call) {
        stats.invalid.increment();
        stats.count("invalid: " + what);
        try {
            call.run();
        } catch (Throwable t) {
            if (type.isInstance(t)) {
                stats.expected.increment();
            } else {
                stats.unexpected.increment();
                stats.failure("unexpected exception", name, "invalid: " + what, "expected " + type.getSimpleName() + ", got " + t, t);
            }
            return;
        }
        stats.notRefused.increment();
        stats.failure("not refused", name, "invalid: " + what, "returned normally; expected " + type.getSimpleName(), null);
    }
}
