package dev.cuhandle;

import static dev.cuhandle.BlasTestSupport.assertClose;
import static dev.cuhandle.BlasTestSupport.random;
import static dev.cuhandle.BlasTestSupport.where;

import dev.cuhandle.BlasTestSupport.Prec;
import dev.cuhandle.BlasTestSupport.Reduction;
import dev.cuhandle.BlasTestSupport.Vec;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Reductions are deterministic (Blas.java): the same input gives a bit-identical result on every
 * call. sdot/ddot, snrm2/dnrm2, sasum/dasum and isamax/idamax on 2^20+7 random elements of mixed
 * signs and magnitudes (so that the order of additions shows in the last bits), 10 calls each,
 * interleaved (so each call follows a different reduction on the same workspace), host- and
 * device-result variants, and once more through a second handle (another stream) of the same
 * context. The first result is also checked against the reference, so a constant wrong value
 * cannot pass.
 */
@GpuTest
class BlasDeterminismGpuTest {
    private static final int REPEATS = 10;
    private static final Reduction[] ORDER = {Reduction.DOT, Reduction.NRM2, Reduction.ASUM, Reduction.IAMAX};

    private static Handle h;

    @BeforeAll
    static void open() {
        BlasTestSupport.announceSeed(BlasDeterminismGpuTest.class.getSimpleName());
        h = Handle.create(0);
    }

    @AfterAll
    static void close() {
        if (h != null) {
            h.close();
        }
    }

    @ParameterizedTest
    @EnumSource(Prec.class)
    void reductions_bitIdenticalOverRepeatedCalls(Prec p) {
        long n = BlasGpuTest.BIG;
        for (long inc : new long[] {1, 2}) {
            String name = p.prefix() + " determinism n=" + n + " inc=" + inc;
            SplittableRandom rnd = random(name);
            Vec x = Vec.random(p, n, inc, rnd.nextInt(64), rnd);
            Vec y = Vec.random(p, n, inc, rnd.nextInt(64), rnd);
            try (DeviceBuffer bx = x.upload(h); DeviceBuffer by = y.upload(h); Handle second = Handle.create(0)) {
                DeviceBuffer vx = x.view(bx);
                DeviceBuffer vy = y.view(by);
                double[] first = new double[ORDER.length];
                for (int k = 0; k < ORDER.length; k++) {
                    first[k] = ORDER[k].host(p, h, n, vx, inc, vy, inc);
                }
                checkAgainstReference(p, x, y, first, name);
                for (int rep = 0; rep < REPEATS; rep++) {
                    for (int k = 0; k < ORDER.length; k++) {
                        Reduction r = ORDER[k];
                        same(r.name(p) + " host-result call " + (rep + 1), first[k], r.host(p, h, n, vx, inc, vy, inc), name);
                        same(r.name(p) + " device-result call " + (rep + 1), first[k], r.device(p, h, n, vx, inc, vy, inc, name), name);
                    }
                }
                for (int k = 0; k < ORDER.length; k++) {
                    Reduction r = ORDER[k];
                    same(r.name(p) + " through a second handle", first[k], r.host(p, second, n, vx, inc, vy, inc), name);
                    same(r.name(p) + " through a second handle, device result", first[k], r.device(p, second, n, vx, inc, vy, inc, name), name);
                }
            }
        }
    }

    private static void checkAgainstReference(Prec p, Vec x, Vec y, double[] got, String name) {
        long n = x.n;
        long inc = x.inc;
        double dot = BlasReference.dot(n, x.all, x.lead, inc, y.all, y.lead, inc);
        assertClose(Reduction.DOT.name(p), dot, got[0],
                BlasReference.sumTolerance(p.single(), n, dot, BlasReference.absDot(n, x.all, x.lead, inc, y.all, y.lead, inc)), name);
        double nrm2 = BlasReference.nrm2(n, x.all, x.lead, inc);
        assertClose(Reduction.NRM2.name(p), nrm2, got[1], BlasReference.nrm2Tolerance(p.single(), n, nrm2), name);
        double asum = BlasReference.asum(n, x.all, x.lead, inc);
        assertClose(Reduction.ASUM.name(p), asum, got[2], BlasReference.sumTolerance(p.single(), n, asum, asum), name);
        long iamax = BlasReference.iamax(n, x.all, x.lead, inc);
        if ((long) got[3] != iamax) {
            throw new AssertionError(Reduction.IAMAX.name(p) + " = " + (long) got[3] + ", expected " + iamax + where(name));
        }
    }

    private static void same(String what, double first, double again, String name) {
        if (Double.doubleToRawLongBits(first) != Double.doubleToRawLongBits(again)) {
            throw new AssertionError(what + " gave " + again + " (bits 0x" + Long.toHexString(Double.doubleToRawLongBits(again)) + ") but the first call gave "
                    + first + " (bits 0x" + Long.toHexString(Double.doubleToRawLongBits(first)) + "): reductions must be deterministic" + where(name));
        }
    }
}
