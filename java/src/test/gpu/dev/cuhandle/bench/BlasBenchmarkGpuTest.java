package dev.cuhandle.bench;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cuhandle.Blas;
import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.Event;
import dev.cuhandle.GpuTest;
import dev.cuhandle.Handle;
import dev.cuhandle.StandInCapable;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The BLAS sweep's time box runs the call as often as its rules (and cublas_l1.cu's) say. */
@GpuTest
class BlasBenchmarkGpuTest {
    @StandInCapable
    @Test
    void theTimeBoxRunsOneProbeOneWarmUpBatchAndFiveToFifteenTimedBatches() {
        try (Handle h = Handle.create(0); DeviceBuffer x = h.allocate(4096); Event start = h.createEvent(); Event end = h.createEvent()) {
            AtomicInteger calls = new AtomicInteger();
            double us = BlasBenchmark.usPerCall(h, start, end, () -> {
                calls.incrementAndGet();
                Blas.sscal(h, 1024, 0.999f, x, 1);
            });
            assertTrue(us >= 0 && Double.isFinite(us), "us per call " + us);
            int timed = calls.get() - 11; // the first call and the 10-call probe
            boolean fits = false;
            for (int batch = 1; batch <= 2000 && !fits; batch++) {
                fits = timed % batch == 0 && timed / batch >= 6 && timed / batch <= 16; // warm-up batch + 5..15 timed
            }
            assertTrue(fits, calls.get() + " calls are not 11 + (1 + 5..15) batches of 1..2000");
        }
    }
}
