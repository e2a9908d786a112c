package dev.cuhandle;

import dev.cuhandle.BlasTestSupport.Prec;
import dev.cuhandle.BlasTestSupport.Reduction;
import dev.cuhandle.BlasTestSupport.Vec;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * The soak's BLAS operations: a random update (scal, axpy, copy, swap) or reduction (dot, nrm2, asum,
 * iamax; host and device result) of either precision, with random sizes, increments and offsets, on the
 * shared or the private handle and sometimes with buffers of the other, checked against
 * {@link BlasReference} with the tolerances of the BLAS GPU tests; elements outside the vectors must not
 * change.
 */
final class SoakBlasOperations extends SoakOperations {
    SoakBlasOperations(SoakWorker worker) {
        super(worker);
    }

    void blasUpdate() {
        Prec p = prec();
        int op = rnd.nextInt(4);
        Handle runner = runner();
        Handle owner = ownerFor(runner);
        SplittableRandom sr = split();
        switch (op) {
            case 0: {
                long incx = singleInc();
                long n = n(incx, 0);
                Vec x = Vec.random(p, n, incx, lead(), sr);
                double alpha = alpha(p);
                double[] expected = x.copyOfAll();
                BlasReference.scal(p.single(), n, alpha, expected, x.lead, incx);
                String what = vec("scal", p, n, incx, Long.MIN_VALUE, x.lead, -1) + " alpha=" + alpha + crossing(owner, runner);
                try (SoakBuffers b = new SoakBuffers(owner, runner)) {
                    DeviceBuffer bx = b.add(x.upload(owner));
                    b.ready();
                    p.scal(runner, n, alpha, x.view(bx), incx);
                    same(what + " x", expected, download(p, runner, bx, x.all.length));
                }
                valid(p.prefix() + "scal");
                break;
            }
            case 1: {
                long incx = inc(true);
                long incy = inc(false);
                long n = n(incx, incy);
                Vec x = Vec.random(p, n, incx, lead(), sr);
                Vec y = Vec.random(p, n, incy, lead(), sr);
                double alpha = alpha(p);
                String what = vec("axpy", p, n, incx, incy, x.lead, y.lead) + " alpha=" + alpha + crossing(owner, runner);
                try (SoakBuffers b = new SoakBuffers(owner, runner)) {
                    DeviceBuffer bx = b.add(x.upload(owner));
                    DeviceBuffer by = b.add(y.upload(owner));
                    b.ready();
                    p.axpy(runner, n, alpha, x.view(bx), incx, y.view(by), incy);
                    double[] gotY = download(p, runner, by, y.all.length);
                    same(what + " x (read only)", x.all, download(p, runner, bx, x.all.length));
                    boolean[] element = new boolean[y.all.length];
                    for (long i = 0; i < n; i++) {
                        int ky = y.at(i);
                        element[ky] = true;
                        double xi = x.all[x.at(i)];
                        if (!BlasReference.axpyAccepts(p.single(), alpha, xi, y.all[ky], gotY[ky])) {
                            throw new Mismatch(what + ": y element " + i + " (buffer element " + ky + ") is " + gotY[ky] + ", expected "
                                    + alpha + " * " + xi + " + " + y.all[ky] + " (float: within 1 ulp of the fused result; double: fused or twice rounded)");
                        }
                    }
                    for (int k = 0; k < element.length; k++) {
                        if (!element[k] && !BlasReference.sameValue(y.all[k], gotY[k])) {
                            throw new Mismatch(what + ": buffer element " + k + " of y is not part of the vector but changed from " + y.all[k] + " to " + gotY[k]);
                        }
                    }
                }
                valid(p.prefix() + "axpy");
                break;
            }
            case 2: {
                long incx = inc(true);
                long incy = inc(false);
                long n = n(incx, incy);
                Vec x = Vec.random(p, n, incx, lead(), sr);
                Vec y = Vec.random(p, n, incy, lead(), sr);
                double[] expectedY = y.copyOfAll();
                BlasReference.copy(n, x.all, x.lead, incx, expectedY, y.lead, incy);
                String what = vec("copy", p, n, incx, incy, x.lead, y.lead) + crossing(owner, runner);
                try (SoakBuffers b = new SoakBuffers(owner, runner)) {
                    DeviceBuffer bx = b.add(x.upload(owner));
                    DeviceBuffer by = b.add(y.upload(owner));
                    b.ready();
                    p.copy(runner, n, x.view(bx), incx, y.view(by), incy);
                    same(what + " y", expectedY, download(p, runner, by, y.all.length));
                    same(what + " x (read only)", x.all, download(p, runner, bx, x.all.length));
                }
                valid(p.prefix() + "copy");
                break;
            }
            default: {
                long incx = inc(false);
                long incy = inc(false);
                long n = n(incx, incy);
                Vec x = Vec.random(p, n, incx, lead(), sr);
                Vec y = Vec.random(p, n, incy, lead(), sr);
                double[] expectedX = x.copyOfAll();
                double[] expectedY = y.copyOfAll();
                BlasReference.swap(n, expectedX, x.lead, incx, expectedY, y.lead, incy);
                String what = vec("swap", p, n, incx, incy, x.lead, y.lead) + crossing(owner, runner);
                try (SoakBuffers b = new SoakBuffers(owner, runner)) {
                    DeviceBuffer bx = b.add(x.upload(owner));
                    DeviceBuffer by = b.add(y.upload(owner));
                    b.ready();
                    p.swap(runner, n, x.view(bx), incx, y.view(by), incy);
                    same(what + " x", expectedX, download(p, runner, bx, x.all.length));
                    same(what + " y", expectedY, download(p, runner, by, y.all.length));
                }
                valid(p.prefix() + "swap");
                break;
            }
        }
    }

    void blasReduce() {
        Prec p = prec();
        Reduction r = Reduction.values()[rnd.nextInt(4)];
        Handle runner = runner();
        Handle owner = ownerFor(runner);
        SplittableRandom sr = split();
        boolean dot = r == Reduction.DOT;
        long incx = dot ? inc(true) : singleInc();
        long incy = dot ? inc(true) : 0;
        long n = n(incx, incy);
        Vec x = Vec.random(p, n, incx, lead(), sr);
        Vec y = dot ? Vec.random(p, n, incy, lead(), sr) : null;
        double ref;
        double tol;
        switch (r) {
            case DOT:
                ref = BlasReference.dot(n, x.all, x.lead, incx, y.all, y.lead, incy);
                tol = BlasReference.sumTolerance(p.single(), n, ref, BlasReference.absDot(n, x.all, x.lead, incx, y.all, y.lead, incy));
                break;
            case NRM2:
                ref = BlasReference.nrm2(n, x.all, x.lead, incx);
                tol = BlasReference.nrm2Tolerance(p.single(), n, ref);
                break;
            case ASUM:
                ref = BlasReference.asum(n, x.all, x.lead, incx);
                tol = BlasReference.sumTolerance(p.single(), n, ref, ref);
                break;
            default:
                ref = BlasReference.iamax(n, x.all, x.lead, incx);
                tol = 0;
                break;
        }
        boolean empty = n <= 0 || (!dot && incx <= 0);
        boolean iamax = r == Reduction.IAMAX;
        int rb = p.resultBytes(iamax);
        String what = r.name(p) + "(n=" + n + ", incx=" + incx + (dot ? ", incy=" + incy : "") + ", x at element " + x.lead
                + (dot ? ", y at element " + y.lead : "") + ")" + crossing(owner, runner);
        try (SoakBuffers b = new SoakBuffers(owner, runner)) {
            DeviceBuffer bx = b.add(x.upload(owner));
            DeviceBuffer by = dot ? b.add(y.upload(owner)) : null;
            byte[] fill = new byte[BlasTestSupport.RESULT_BUFFER_BYTES];
            Arrays.fill(fill, BlasTestSupport.RESULT_SENTINEL);
            DeviceBuffer res = b.add(owner.upload(fill));
            b.ready();
            DeviceBuffer vx = x.view(bx);
            DeviceBuffer vy = dot ? y.view(by) : null;
            double host = r.host(p, runner, n, vx, incx, vy, incy);
            DeviceBuffer slot = res.slice(BlasTestSupport.RESULT_OFFSET, rb);
            r.deviceCall(p, runner, n, vx, incx, vy, incy, slot);
            byte[] all = new byte[BlasTestSupport.RESULT_BUFFER_BYTES];
            runner.copyToHost(res, all, 0, all.length);
            for (int i = 0; i < all.length; i++) {
                boolean inSlot = i >= BlasTestSupport.RESULT_OFFSET && i < BlasTestSupport.RESULT_OFFSET + rb;
                if (!inSlot && all[i] != BlasTestSupport.RESULT_SENTINEL) {
                    throw new Mismatch(what + ": device result: byte " + i + " outside the " + rb + "-byte result slice changed");
                }
            }
            ByteBuffer bb = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
            int at = BlasTestSupport.RESULT_OFFSET;
            double device = iamax ? (double) bb.getLong(at) : p.single() ? bb.getFloat(at) : bb.getDouble(at);
            if (empty) {
                if (Double.doubleToRawLongBits(host) != 0 || Double.doubleToRawLongBits(device) != 0) {
                    throw new Mismatch(what + ": host " + host + ", device " + device + "; expected +0 (nothing to reduce)");
                }
            } else if (iamax) {
                if (host != ref || device != ref) {
                    throw new Mismatch(what + ": host " + (long) host + ", device " + (long) device + ", expected " + (long) ref);
                }
            } else {
                if (!BlasReference.close(ref, host, tol)) {
                    throw new Mismatch(what + " = " + host + ", expected " + ref + " within " + tol + " (off by " + Math.abs(host - ref) + ")");
                }
                if (!BlasReference.sameValue(host, device)) {
                    throw new Mismatch(what + ": the device-result variant wrote " + device + " but the host-result variant returned " + host
                            + "; the same input must give bit-identical results");
                }
            }
            same(what + " x (read only)", x.all, download(p, runner, bx, x.all.length));
            if (dot) {
                same(what + " y (read only)", y.all, download(p, runner, by, y.all.length));
            }
        }
        valid(r.name(p));
    }
}
