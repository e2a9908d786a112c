package dev.cuhandle;

import dev.cuhandle.BlasTestSupport.Prec;
import dev.cuhandle.BlasTestSupport.Reduction;
import dev.cuhandle.BlasTestSupport.Vec;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * The soak's invalid calls: each must be refused with its documented exception type, and leave the
 * buffers it touched unchanged (zero increments, short and misaligned buffers, closed handles, buffers,
 * events and libraries, bad sizes, nulls, array ranges, kernel arguments, launch shapes, result buffers
 * and slices).
 */
final class SoakInvalidOperations extends SoakOperations {
    SoakInvalidOperations(SoakWorker worker) {
        super(worker);
    }

    void invalid() {
        Handle h = runner();
        switch (rnd.nextInt(18)) {
            case 0:
                invalidZeroIncrement(h);
                break;
            case 1:
                invalidTooShort(h);
                break;
            case 2:
                invalidMisaligned(h);
                break;
            case 3:
                invalidBufferOfClosedHandle(h);
                break;
            case 4:
                invalidClosedBuffer(h);
                break;
            case 5:
                invalidClosedHandle();
                break;
            case 6:
                invalidClosedEvent(h);
                break;
            case 7:
                if (rnd.nextInt(4) == 0) { // loading a library is slower than the rest
                    invalidClosedLibrary(h);
                }
                break;
            case 8:
                invalidSizes(h);
                break;
            case 9:
                invalidNulls(h);
                break;
            case 10:
                invalidArrayRanges(h);
                break;
            case 11:
                invalidKernelArguments(h);
                break;
            case 12:
                invalidLaunchShape(h);
                break;
            case 13:
                invalidMemsetAndCopy(h);
                break;
            case 14:
                invalidResultBuffers(h);
                break;
            case 15:
                invalidSlices(h);
                break;
            case 16:
                invalidNullBlasArguments(h);
                break;
            default:
                invalidZeroIncrement(h);
                break;
        }
    }

    void invalidZeroIncrement(Handle h) {
        Prec p = prec();
        long n = 1 + rnd.nextInt(64);
        SplittableRandom sr = split();
        Vec x = Vec.random(p, n, 1, 0, sr);
        Vec y = Vec.random(p, n, 1, 0, sr);
        try (DeviceBuffer bx = x.upload(h); DeviceBuffer by = y.upload(h)) {
            long incx = inc(true);
            expect("axpy incy=0", IllegalArgumentException.class, () -> p.axpy(h, n, 2.0, bx, incx, by, 0));
            expect("copy incy=0", IllegalArgumentException.class, () -> p.copy(h, n, bx, incx, by, 0));
            expect("swap incx=0", IllegalArgumentException.class, () -> p.swap(h, n, bx, 0, by, 1));
            expect("swap incy=0", IllegalArgumentException.class, () -> p.swap(h, n, bx, -1, by, 0));
            same("refused inc 0: x", x.all, download(p, h, bx, x.all.length));
            same("refused inc 0: y", y.all, download(p, h, by, y.all.length));
        }
    }

    void invalidTooShort(Handle h) {
        Prec p = prec();
        long inc = inc(false);
        long n = 1 + Math.min(rnd.nextInt(1000), (maxElems - 1) / Math.abs(inc));
        int need = Math.toIntExact(BlasReference.span(n, inc));
        SplittableRandom sr = split();
        Vec ok = Vec.random(p, n, inc, 0, sr);
        double[] okData = Arrays.copyOf(ok.all, need);
        double[] shortData = Arrays.copyOf(ok.all, need - 1);
        long pos = Math.abs(inc);
        try (DeviceBuffer good = p.upload(h, okData); DeviceBuffer good2 = p.upload(h, okData); DeviceBuffer bad = p.upload(h, shortData)) {
            String k = "too short";
            switch (rnd.nextInt(8)) {
                case 0:
                    expect(k + ": scal x", IllegalArgumentException.class, () -> p.scal(h, n, 2.0, bad, pos));
                    break;
                case 1:
                    expect(k + ": axpy x", IllegalArgumentException.class, () -> p.axpy(h, n, 2.0, bad, inc, good, inc));
                    expect(k + ": axpy y", IllegalArgumentException.class, () -> p.axpy(h, n, 2.0, good, inc, bad, inc));
                    break;
                case 2:
                    expect(k + ": copy y", IllegalArgumentException.class, () -> p.copy(h, n, good, inc, bad, inc));
                    break;
                case 3:
                    expect(k + ": swap x", IllegalArgumentException.class, () -> p.swap(h, n, bad, inc, good, inc));
                    break;
                case 4:
                    expect(k + ": dot y", IllegalArgumentException.class, () -> p.dot(h, n, good, inc, bad, inc));
                    break;
                case 5:
                    expect(k + ": nrm2 x", IllegalArgumentException.class, () -> p.nrm2(h, n, bad, pos));
                    break;
                case 6:
                    expect(k + ": asum x (device result)", IllegalArgumentException.class, () -> {
                        try (DeviceBuffer r = h.allocate(8)) {
                            p.asum(h, n, bad, pos, r);
                        }
                    });
                    break;
                default:
                    expect(k + ": iamax x", IllegalArgumentException.class, () -> p.iamax(h, n, bad, pos));
                    break;
            }
            same("refused too-short calls: the short buffer", shortData, download(p, h, bad, shortData.length));
            same("refused too-short calls: the good buffer", okData, download(p, h, good, okData.length));
            same("refused too-short calls: the second good buffer", okData, download(p, h, good2, okData.length));
        }
    }

    void invalidMisaligned(Handle h) {
        float[] fdata = randomFloats(64);
        double[] ddata = new double[32];
        for (int i = 0; i < ddata.length; i++) {
            ddata[i] = rnd.nextGaussian();
        }
        try (DeviceBuffer f = h.upload(fdata); DeviceBuffer d = h.upload(ddata)) {
            DeviceBuffer fx = f.slice(2, 128); // byte 2 of a float buffer
            DeviceBuffer fy = f.slice(128, 128);
            DeviceBuffer dx = d.slice(4, 128); // byte 4 of a double buffer
            DeviceBuffer dy = d.slice(128, 128);
            switch (rnd.nextInt(5)) {
                case 0:
                    expect("misaligned: saxpy x at byte 2", IllegalArgumentException.class, () -> Blas.saxpy(h, 4, 1f, fx, 1, fy, 1));
                    break;
                case 1:
                    expect("misaligned: sscal x at byte 2", IllegalArgumentException.class, () -> Blas.sscal(h, 4, 2f, fx, 1));
                    break;
                case 2:
                    expect("misaligned: sdot y at byte 2", IllegalArgumentException.class, () -> Blas.sdot(h, 4, fy, 1, fx, 1));
                    break;
                case 3:
                    expect("misaligned: dcopy x at byte 4", IllegalArgumentException.class, () -> Blas.dcopy(h, 4, dx, 1, dy, 1));
                    break;
                default:
                    expect("misaligned: dnrm2 x at byte 4", IllegalArgumentException.class, () -> Blas.dnrm2(h, 4, dx, 1));
                    break;
            }
            unchanged(h, f, fdata, "misaligned slices");
            double[] out = new double[ddata.length];
            h.copyToHost(d, out, 0, out.length);
            same("misaligned slices: the double buffer after refused calls", ddata, out);
        }
    }

    void invalidBufferOfClosedHandle(Handle h) {
        float[] data = randomFloats(1 + rnd.nextInt(1024));
        DeviceBuffer b;
        try (Handle t = newHandle()) {
            b = t.upload(data);
        }
        try {
            expect("buffer of a closed handle: download", IllegalStateException.class, () -> b.download(new float[data.length]));
            expect("buffer of a closed handle: upload", IllegalStateException.class, () -> b.upload(new float[data.length]));
            float[] out = new float[data.length];
            h.copyToHost(b, out, 0, out.length); // allowed: another open handle of the same context
            same("a buffer of a closed handle read through another handle", data, out);
        } finally {
            b.close();
        }
    }

    void invalidClosedBuffer(Handle h) {
        int n = 1 + rnd.nextInt(1024);
        DeviceBuffer b = h.upload(randomFloats(n));
        DeviceBuffer view = b.slice(0, 4L * Math.max(1, n / 2));
        b.close();
        switch (rnd.nextInt(6)) {
            case 0:
                expect("closed buffer: memset", IllegalStateException.class, () -> h.memset(b, 0));
                break;
            case 1:
                expect("closed buffer: download of a slice", IllegalStateException.class, () -> view.download(new float[1]));
                break;
            case 2:
                expect("closed buffer: sasum", IllegalStateException.class, () -> Blas.sasum(h, n, b, 1));
                break;
            case 3:
                expect("closed buffer: launch", IllegalStateException.class, () -> h.launch(c.addOne, Dim3.of(1), Dim3.of(32), 0, b, n));
                break;
            case 4:
                expect("closed buffer: copyToDevice", IllegalStateException.class, () -> h.copyToDevice(new float[1], 0, view, 1));
                break;
            default:
                expect("closed buffer: saxpy into a slice", IllegalStateException.class, () -> {
                    try (DeviceBuffer x = h.allocate(4L * n)) {
                        Blas.saxpy(h, 1, 1f, x, 1, view, 1);
                    }
                });
                break;
        }
        b.close(); // idempotent
    }

    void invalidClosedHandle() {
        Handle t = newHandle();
        t.close();
        switch (rnd.nextInt(6)) {
            case 0:
                expect("closed handle: allocate", IllegalStateException.class, () -> t.allocate(16));
                break;
            case 1:
                expect("closed handle: upload", IllegalStateException.class, () -> t.upload(new double[4]));
                break;
            case 2:
                expect("closed handle: createEvent", IllegalStateException.class, t::createEvent);
                break;
            case 3:
                expect("closed handle: sdot", IllegalStateException.class, () -> {
                    try (DeviceBuffer x = shared.allocate(64)) {
                        try {
                            Blas.sdot(t, 4, x, 1, x, 1);
                        } finally {
                            shared.synchronize();
                        }
                    }
                });
                break;
            case 4:
                expect("closed handle: launch", IllegalStateException.class, () -> {
                    try (DeviceBuffer b = shared.allocate(64)) {
                        t.launch(c.addOne, Dim3.of(1), Dim3.of(16), 0, b, 16);
                    }
                });
                break;
            default:
                expect("closed handle: freeMemory", IllegalStateException.class, t::freeMemory);
                break;
        }
        t.close(); // idempotent
    }

    void invalidClosedEvent(Handle h) {
        Event e = h.createEvent();
        try (Event other = h.createEvent()) {
            other.record(h);
            e.close();
            switch (rnd.nextInt(3)) {
                case 0:
                    expect("closed event: record", IllegalStateException.class, () -> e.record(h));
                    break;
                case 1:
                    expect("closed event: synchronize", IllegalStateException.class, e::synchronize);
                    break;
                default:
                    expect("closed event: elapsedSince", IllegalStateException.class, () -> other.elapsedSince(e));
                    break;
            }
            other.synchronize();
        }
        e.close();
    }

    void invalidClosedLibrary(Handle h) {
        Library lib = TestKernels.load();
        Kernel k = lib.kernel(SoakMain.ADD_ONE);
        lib.close();
        try (DeviceBuffer b = h.allocate(256)) {
            switch (rnd.nextInt(3)) {
                case 0:
                    expect("closed library: kernel lookup", IllegalStateException.class, () -> lib.kernel(SoakMain.ADD_ONE));
                    break;
                case 1:
                    expect("closed library: launch", IllegalStateException.class, () -> h.launch(k, Dim3.of(1), Dim3.of(64), 0, b, 64));
                    break;
                default:
                    expect("closed library: prepared launch", IllegalStateException.class, () -> h.launch(k.newLaunch().arg(0, b).arg(1, 64)));
                    break;
            }
            h.synchronize();
        }
    }

    void invalidSizes(Handle h) {
        long negative = -1 - (rnd.nextBoolean() ? rnd.nextInt(1 << 20) : rnd.nextLong() & Long.MAX_VALUE);
        switch (rnd.nextInt(3)) {
            case 0:
                expect("negative size: allocate", IllegalArgumentException.class, () -> h.allocate(negative));
                break;
            case 1:
                expect("negative size: wrapPointer", IllegalArgumentException.class, () -> {
                    try (DeviceBuffer b = h.allocate(64)) {
                        h.wrapPointer(b.address(), negative);
                    }
                });
                break;
            default:
                expect("negative size: slice", IllegalArgumentException.class, () -> {
                    try (DeviceBuffer b = h.allocate(64)) {
                        b.slice(0, negative);
                    }
                });
                break;
        }
    }

    void invalidNulls(Handle h) {
        float[] data = randomFloats(16);
        try (DeviceBuffer b = h.upload(data)) {
            switch (rnd.nextInt(5)) {
                case 0:
                    expect("null array: upload", NullPointerException.class, () -> h.upload((float[]) null));
                    break;
                case 1:
                    expect("null array: download", NullPointerException.class, () -> b.download((double[]) null));
                    break;
                case 2:
                    expect("null array: copyToDevice", NullPointerException.class, () -> h.copyToDevice((int[]) null, 0, b, 1));
                    break;
                case 3:
                    expect("null array: copyToHost", NullPointerException.class, () -> h.copyToHost(b, (long[]) null, 0, 1));
                    break;
                default:
                    expect("null ByteBuffer: copyToHost", NullPointerException.class, () -> h.copyToHost(b, (ByteBuffer) null, 0, 4));
                    break;
            }
            unchanged(h, b, data, "null arrays");
        }
    }

    void invalidArrayRanges(Handle h) {
        int n = 16 + rnd.nextInt(64);
        float[] data = randomFloats(n);
        try (DeviceBuffer b = h.upload(data)) {
            float[] host = new float[n];
            switch (rnd.nextInt(6)) {
                case 0:
                    expect("array range: negative offset", IllegalArgumentException.class, () -> h.copyToDevice(host, -1 - rnd.nextInt(100), b, 1));
                    break;
                case 1:
                    expect("array range: past the end", IllegalArgumentException.class, () -> h.copyToDevice(host, 1 + rnd.nextInt(n), b, n));
                    break;
                case 2:
                    expect("array range: negative length", IllegalArgumentException.class, () -> h.copyToHost(b, host, 0, -1 - rnd.nextInt(100)));
                    break;
                case 3:
                    expect("array range: offset + length overflows", IllegalArgumentException.class, () -> h.copyToHost(b, host, 2, Integer.MAX_VALUE));
                    break;
                case 4:
                    expect("array range: more than the buffer holds", IllegalArgumentException.class, () -> b.download(new float[n + 1 + rnd.nextInt(8)]));
                    break;
                default:
                    expect("ByteBuffer range: past its capacity", IllegalArgumentException.class,
                            () -> h.copyToDevice(ByteBuffer.allocateDirect(32), 30, b, 4));
                    break;
            }
            unchanged(h, b, data, "bad array ranges");
        }
    }

    void invalidKernelArguments(Handle h) {
        if (c.addOne.parameterCount() < 0) {
            return; // the driver cannot report parameter sizes (before 12.4, or not probed yet): launches are unchecked
        }
        int n = 64;
        float[] data = randomFloats(n);
        try (DeviceBuffer b = h.upload(data)) {
            switch (rnd.nextInt(4)) {
                case 0:
                    expect("kernel: 1 argument for 2 parameters", IllegalArgumentException.class, () -> h.launch(c.addOne, Dim3.of(1), Dim3.of(64), 0, b));
                    break;
                case 1:
                    expect("kernel: 3 arguments for 2 parameters", IllegalArgumentException.class,
                            () -> h.launch(c.addOne, Dim3.of(1), Dim3.of(64), 0, b, n, n));
                    break;
                case 2:
                    expect("kernel: an int for the pointer parameter", IllegalArgumentException.class,
                            () -> h.launch(c.addOne, Dim3.of(1), Dim3.of(64), 0, 7, n));
                    break;
                default:
                    expect("kernel: a byte for the int parameter", IllegalArgumentException.class,
                            () -> h.launch(c.addOne, Dim3.of(1), Dim3.of(64), 0, b, (byte) 3));
                    break;
            }
            unchanged(h, b, data, "refused launches");
        }
    }

    void invalidLaunchShape(Handle h) {
        int n = 64;
        float[] data = randomFloats(n);
        try (DeviceBuffer b = h.upload(data)) {
            switch (rnd.nextInt(4)) {
                case 0:
                    expect("launch: grid 0", IllegalArgumentException.class, () -> h.launch(c.addOne, Dim3.of(0), Dim3.of(64), 0, b, n));
                    break;
                case 1:
                    expect("launch: block 0", IllegalArgumentException.class, () -> h.launch(c.addOne, Dim3.of(1), Dim3.of(0), 0, b, n));
                    break;
                case 2:
                    expect("launch: block of 2048 threads", IllegalArgumentException.class, () -> h.launch(c.addOne, Dim3.of(1), Dim3.of(2048), 0, b, n));
                    break;
                default:
                    expect("launch: negative shared memory", IllegalArgumentException.class, () -> h.launch(c.addOne, Dim3.of(1), Dim3.of(64), -1, b, n));
                    break;
            }
            unchanged(h, b, data, "refused launch shapes");
        }
    }

    void invalidMemsetAndCopy(Handle h) {
        int n = 16 + rnd.nextInt(64);
        float[] data = randomFloats(n);
        try (DeviceBuffer b = h.upload(data); DeviceBuffer small = h.upload(new float[n / 2])) {
            switch (rnd.nextInt(3)) {
                case 0:
                    expect("memset value 256", IllegalArgumentException.class, () -> h.memset(b, 256));
                    break;
                case 1:
                    expect("memset value -1", IllegalArgumentException.class, () -> h.memset(b, -1));
                    break;
                default:
                    expect("copy into a smaller buffer", IllegalArgumentException.class, () -> h.copy(b, small));
                    break;
            }
            unchanged(h, b, data, "refused memset/copy");
            unchanged(h, small, new float[n / 2], "refused memset/copy (the small buffer)");
        }
    }

    void invalidResultBuffers(Handle h) {
        float[] data = randomFloats(32);
        try (DeviceBuffer x = h.upload(data); DeviceBuffer r = h.upload(new byte[32])) {
            switch (rnd.nextInt(4)) {
                case 0:
                    expect("device result: ddot at byte 4", IllegalArgumentException.class, () -> {
                        try (DeviceBuffer d = h.upload(new double[8])) {
                            Blas.ddot(h, 8, d, 1, d, 1, r.slice(4, 16));
                        }
                    });
                    break;
                case 1:
                    expect("device result: isamax at byte 4", IllegalArgumentException.class, () -> Blas.isamax(h, 32, x, 1, r.slice(4, 16)));
                    break;
                case 2:
                    expect("device result: sdot into 2 bytes", IllegalArgumentException.class, () -> Blas.sdot(h, 32, x, 1, x, 1, r.slice(8, 2)));
                    break;
                default:
                    expect("device result: isamax into 4 bytes", IllegalArgumentException.class, () -> Blas.isamax(h, 32, x, 1, r.slice(8, 4)));
                    break;
            }
            unchanged(h, x, data, "refused device results");
            byte[] out = new byte[32];
            h.copyToHost(r, out, 0, 32);
            sameBytes("refused device results: the result buffer", new byte[32], out);
        }
    }

    void invalidSlices(Handle h) {
        int bytes = 16 + rnd.nextInt(256);
        try (DeviceBuffer b = h.allocate(bytes)) {
            switch (rnd.nextInt(3)) {
                case 0:
                    expect("slice: negative offset", IllegalArgumentException.class, () -> b.slice(-1 - rnd.nextInt(8), 4));
                    break;
                case 1:
                    expect("slice: past the end", IllegalArgumentException.class, () -> b.slice(bytes - 3, 4));
                    break;
                default:
                    expect("slice: longer than the buffer", IllegalArgumentException.class, () -> b.slice(0, bytes + 1));
                    break;
            }
        }
    }

    void invalidNullBlasArguments(Handle h) {
        try (DeviceBuffer x = h.upload(randomFloats(16))) {
            switch (rnd.nextInt(3)) {
                case 0:
                    expect("BLAS: null x", NullPointerException.class, () -> Blas.saxpy(h, 4, 1f, null, 1, x, 1));
                    break;
                case 1:
                    expect("BLAS: null handle", NullPointerException.class, () -> Blas.sasum(null, 4, x, 1));
                    break;
                default:
                    expect("BLAS: null result", NullPointerException.class, () -> Blas.snrm2(h, 4, x, 1, null));
                    break;
            }
        }
    }

    /** Contents of a float buffer must be as uploaded after refused calls. */
    static void unchanged(Handle h, DeviceBuffer b, float[] data, String what) {
        float[] out = new float[data.length];
        h.copyToHost(b, out, 0, out.length);
        same(what + ": buffer contents after refused calls", data, out);
    }
}
