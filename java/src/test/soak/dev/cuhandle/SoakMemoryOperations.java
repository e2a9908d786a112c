package dev.cuhandle;

import dev.cuhandle.BlasTestSupport.Prec;
import dev.cuhandle.BlasTestSupport.Reduction;
import dev.cuhandle.BlasTestSupport.Vec;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The soak's memory operations: memset and device copies of random ranges, copies between the device
 * and Java arrays of every type and direct ByteBuffers, and buffers handed from one worker thread to
 * another (a {@link SoakHandoff} in the shared mailbox), each read back and compared.
 */
final class SoakMemoryOperations extends SoakOperations {
    /** This worker's buffers handed to other threads and not yet closed. */
    private final List<SoakHandoff> pending = new ArrayList<>();

    SoakMemoryOperations(SoakWorker worker) {
        super(worker);
    }

    void memsetCopy() {
        Handle runner = runner();
        Handle owner = ownerFor(runner);
        int na = elems();
        int nb = na + rnd.nextInt(1024);
        byte[] a = randomBytes(na);
        byte[] bb = randomBytes(nb);
        try (SoakBuffers b = new SoakBuffers(owner, runner)) {
            DeviceBuffer da = b.add(owner.upload(a));
            DeviceBuffer db = b.add(owner.upload(bb));
            b.ready();
            int off = rnd.nextInt(nb + 1);
            int len = rnd.nextInt(nb - off + 1);
            int v = rnd.nextInt(256);
            runner.memset(db.slice(off, len), v);
            Arrays.fill(bb, off, off + len, (byte) v);
            int sOff = rnd.nextInt(na + 1);
            int sLen = rnd.nextInt(Math.min(na - sOff, nb) + 1);
            int dOff = rnd.nextInt(nb - sLen + 1);
            runner.copy(da.slice(sOff, sLen), db.slice(dOff, nb - dOff));
            System.arraycopy(a, sOff, bb, dOff, sLen);
            if (rnd.nextInt(4) == 0) {
                int w = rnd.nextInt(256);
                runner.memset(da, w);
                Arrays.fill(a, (byte) w);
            }
            byte[] gotA = new byte[na];
            byte[] gotB = new byte[nb];
            runner.copyToHost(da, gotA, 0, na);
            runner.copyToHost(db, gotB, 0, nb);
            String what = "memset [" + off + ", +" + len + ") = " + v + ", copy " + sLen + " bytes " + sOff + " -> " + dOff + crossing(owner, runner);
            sameBytes(what + ": destination", bb, gotB);
            sameBytes(what + ": source", a, gotA);
        }
        valid("memset+copy");
    }

    /** Array copies with offsets, of every element type, and direct ByteBuffers. */
    void arrays() {
        Handle runner = runner();
        Handle owner = ownerFor(runner);
        int type = rnd.nextInt(6);
        int len = elems();
        int off = rnd.nextInt(17);
        int extra = rnd.nextInt(5);
        int es = type == 0 || type == 2 ? 4 : type == 1 || type == 3 ? 8 : 1;
        try (SoakBuffers b = new SoakBuffers(owner, runner)) {
            DeviceBuffer d = b.add(owner.allocate((long) len * es + rnd.nextInt(64)));
            b.ready();
            boolean own = owner == runner && rnd.nextBoolean(); // the buffer's own upload/download (owner's stream)
            String what = "array copy of " + len + " elements (" + es + " bytes) from offset " + off + crossing(owner, runner);
            switch (type) {
                case 0: {
                    float[] src = randomFloats(off + len + extra);
                    runner.copyToDevice(src, off, d, len);
                    float[] back = new float[len + 2];
                    runner.copyToHost(d, back, 1, len);
                    check(what, Arrays.equals(back, 1, len + 1, src, off, off + len) && back[0] == 0 && back[len + 1] == 0);
                    if (own) {
                        float[] whole = randomFloats(len);
                        d.slice(0, 4L * len).upload(whole);
                        float[] out = new float[len];
                        d.slice(0, 4L * len).download(out);
                        same(what + " (DeviceBuffer.upload/download)", whole, out);
                    }
                    break;
                }
                case 1: {
                    double[] src = new double[off + len + extra];
                    for (int i = 0; i < src.length; i++) {
                        src[i] = rnd.nextGaussian() * 1e10;
                    }
                    runner.copyToDevice(src, off, d, len);
                    double[] back = new double[len + 2];
                    runner.copyToHost(d, back, 1, len);
                    check(what, Arrays.equals(back, 1, len + 1, src, off, off + len) && back[0] == 0 && back[len + 1] == 0);
                    if (own) {
                        double[] out = new double[len];
                        d.slice(0, 8L * len).download(out);
                        check(what + " (DeviceBuffer.download)", Arrays.equals(out, 0, len, src, off, off + len));
                    }
                    break;
                }
                case 2: {
                    int[] src = rnd.ints(off + len + extra).toArray();
                    runner.copyToDevice(src, off, d, len);
                    int[] back = new int[len + 2];
                    runner.copyToHost(d, back, 1, len);
                    check(what, Arrays.equals(back, 1, len + 1, src, off, off + len) && back[0] == 0 && back[len + 1] == 0);
                    break;
                }
                case 3: {
                    long[] src = rnd.longs(off + len + extra).toArray();
                    runner.copyToDevice(src, off, d, len);
                    long[] back = new long[len + 2];
                    runner.copyToHost(d, back, 1, len);
                    check(what, Arrays.equals(back, 1, len + 1, src, off, off + len) && back[0] == 0 && back[len + 1] == 0);
                    break;
                }
                case 4: {
                    byte[] src = randomBytes(off + len + extra);
                    runner.copyToDevice(src, off, d, len);
                    byte[] back = new byte[len + 2];
                    runner.copyToHost(d, back, 1, len);
                    check(what, Arrays.equals(back, 1, len + 1, src, off, off + len) && back[0] == 0 && back[len + 1] == 0);
                    break;
                }
                default: {
                    byte[] bytes = randomBytes(len);
                    ByteBuffer src = ByteBuffer.allocateDirect(off + len + extra);
                    src.position(off);
                    src.put(bytes);
                    runner.copyToDevice(src, off, d, len);
                    ByteBuffer dst = ByteBuffer.allocateDirect(len + 8);
                    runner.copyToHost(d, dst, 4, len);
                    byte[] back = new byte[len];
                    dst.position(4);
                    dst.get(back);
                    sameBytes(what + " (direct ByteBuffer)", bytes, back);
                    check(what + " (direct ByteBuffer guard bytes)", dst.getInt(0) == 0 && dst.getInt(4 + len) == 0);
                    break;
                }
            }
        }
        valid("arrays " + (type == 0 ? "float" : type == 1 ? "double" : type == 2 ? "int" : type == 3 ? "long" : type == 4 ? "byte" : "direct"));
    }

    void handoffGive() {
        if (pending.size() >= 4) {
            return;
        }
        int n = 1 + rnd.nextInt(1 << Math.min(16, c.options.maxLog2()));
        float[] data = randomFloats(n);
        SoakHandoff h = new SoakHandoff(shared.upload(data), data);
        pending.add(h);
        c.mailbox.add(h);
        valid("handoff give");
    }

    void handoffTake() {
        for (int tries = 0; tries < 8; tries++) {
            SoakHandoff h = c.mailbox.poll();
            if (h == null) {
                return;
            }
            if (h.claimed.compareAndSet(false, true)) {
                try {
                    verifyHandoff(h);
                } finally {
                    h.done.countDown();
                }
                valid("handoff take (another thread's buffer)");
                return;
            }
        }
    }

    /** Reads a handed-off buffer through the shared handle (it was uploaded there). */
    void verifyHandoff(SoakHandoff h) {
        int n = h.data.length;
        float[] out = new float[n];
        if (rnd.nextBoolean()) {
            shared.copyToHost(h.buffer, out, 0, n);
        } else {
            h.buffer.download(out);
        }
        same("handed-off buffer of " + n + " floats", h.data, out);
        if (rnd.nextBoolean()) {
            double[] d = new double[n];
            for (int i = 0; i < n; i++) {
                d[i] = h.data[i];
            }
            double ref = BlasReference.asum(n, d, 0, 1);
            double got = Blas.sasum(shared, n, h.buffer, 1);
            if (!BlasReference.close(ref, got, BlasReference.sumTolerance(true, n, ref, ref))) {
                throw new Mismatch("sasum of a handed-off buffer of " + n + " floats = " + got + ", expected " + ref);
            }
        }
    }

    /**
     * Closes this thread's handed-off buffers that are done with: used by another thread (done),
     * or claimed back here after 200 ms unused (then checked here). At the end, waits for the
     * ones another thread is still using.
     */
    void resolveHandoffs(boolean last) {
        for (Iterator<SoakHandoff> it = pending.iterator(); it.hasNext();) {
            SoakHandoff h = it.next();
            try {
                boolean mine = false;
                if (h.done.getCount() != 0 && (last || System.nanoTime() - h.created > 200_000_000L)) {
                    mine = h.claimed.compareAndSet(false, true);
                }
                if (mine) {
                    try {
                        verifyHandoff(h);
                    } finally {
                        h.done.countDown();
                    }
                    valid("handoff taken back");
                } else if (h.done.getCount() != 0) {
                    if (!last) {
                        continue; // another thread is using it
                    }
                    if (!h.done.await(60, TimeUnit.SECONDS)) {
                        it.remove();
                        throw new IllegalStateException("the thread that took a handed-off buffer did not finish with it within 60 s; it stays open");
                    }
                }
                it.remove();
                h.buffer.close();
            } catch (Mismatch m) {
                it.remove();
                h.buffer.close();
                stats.mismatches.increment();
                stats.failure("mismatch", name, "handoff", m.getMessage(), m);
            } catch (Throwable t) {
                stats.unexpected.increment();
                stats.failure("unexpected exception", name, "handoff", String.valueOf(t), t);
            }
        }
    }
}
