package dev.cuhandle;

import dev.cuhandle.BlasTestSupport.Prec;
import dev.cuhandle.BlasTestSupport.Reduction;
import dev.cuhandle.BlasTestSupport.Vec;
import java.lang.ref.WeakReference;

/**
 * The soak's handle operations: short-lived handles, the queries of a handle, the private handle closed
 * (its buffer then read through another handle) and made anew, and buffers dropped unclosed on purpose,
 * which the cleaner must release.
 */
final class SoakHandleOperations extends SoakOperations {
    /** When this worker last leaked a buffer (at most one every 2 s). */
    private long lastLeak;

    SoakHandleOperations(SoakWorker worker) {
        super(worker);
    }

    void shortLivedHandle() {
        try (Handle t = newHandle()) {
            int n = 1 + rnd.nextInt(1 << Math.min(12, c.options.maxLog2()));
            float[] data = randomFloats(n);
            try (DeviceBuffer b = t.upload(data)) {
                float[] out = new float[n];
                b.download(out);
                same("a short-lived handle's buffer", data, out);
                double[] d = new double[n];
                for (int i = 0; i < n; i++) {
                    d[i] = data[i];
                }
                double ref = BlasReference.asum(n, d, 0, 1);
                double got = Blas.sasum(t, n, b, 1);
                if (!BlasReference.close(ref, got, BlasReference.sumTolerance(true, n, ref, ref))) {
                    throw new Mismatch("sasum on a short-lived handle of " + n + " floats = " + got + ", expected " + ref);
                }
            }
        }
        valid("short-lived handle");
    }

    void handleMisc() {
        Handle h = runner();
        h.validate();
        h.stream();
        long free = h.freeMemory();
        if (free <= 0) {
            throw new Mismatch("freeMemory() = " + free + "; expected > 0");
        }
        if (h.contextId() != c.anchor.contextId() || h.device().ordinal() != 0) {
            throw new Mismatch(h + " is not on the anchor's context " + c.anchor);
        }
        h.synchronize();
        valid("handle validate/stream/freeMemory/synchronize");
    }

    /** Closes the private handle (maybe keeping one of its buffers) and makes a new one. */
    void recreatePrivate() {
        DeviceBuffer kept = null;
        float[] data = null;
        if (rnd.nextBoolean()) {
            data = randomFloats(1 + rnd.nextInt(4096));
            kept = priv().upload(data);
        }
        Handle old = priv();
        worker.priv = null;
        old.close(); // synchronises its stream: the kept buffer's data are there
        worker.priv = newHandle();
        valid("recreate private handle");
        expect("closed handle: synchronize", IllegalStateException.class, old::synchronize);
        if (kept != null) {
            try {
                DeviceBuffer k = kept;
                float[] d = data;
                expect("buffer of a closed handle: download", IllegalStateException.class, () -> k.download(new float[d.length]));
                // With another open handle of the same context the buffer still works until it is closed.
                Handle other = rnd.nextBoolean() ? shared : priv();
                float[] out = new float[data.length];
                other.copyToHost(kept, out, 0, out.length);
                same("a buffer of a closed handle read through another handle", data, out);
                valid("buffer of a closed handle via another handle");
            } finally {
                kept.close(); // its handle is closed: freed synchronously
            }
        }
    }

    /** Drops an unclosed buffer (at most one per thread every 2 s): the cleaner must release it. */
    void leak() {
        long now = System.nanoTime();
        if (lastLeak != 0 && now - lastLeak < 2_000_000_000L) {
            return;
        }
        lastLeak = now;
        leakOne(runner(), 1 + rnd.nextInt(1 << Math.min(14, c.options.maxLog2())));
        stats.leaked.increment();
        valid("leak a buffer on purpose");
    }

    void leakOne(Handle h, int n) {
        DeviceBuffer b = h.upload(new float[n]);
        c.leaks.add(new WeakReference<>(b));
    }
}
