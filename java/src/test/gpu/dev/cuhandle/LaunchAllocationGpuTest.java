package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.Test;

/**
 * Rule K1: the hot launch path (a reusable {@link KernelLaunch}) allocates nothing on the Java
 * heap. Measured with the thread's allocated-bytes counter over a million launches of the empty
 * kernel after a warm-up that lets the JIT compile the path.
 */
@GpuTest
class LaunchAllocationGpuTest extends KernelGpuTestBase {
    private static final int WARMUP = 100_000;
    private static final int LAUNCHES = 1_000_000;
    /** A few JIT-related allocations (deoptimisation, OSR) may land in the measured window. */
    private static final long TOLERANCE_BYTES = 1024;

    @Test
    void aReusableLaunchAllocatesNothingPerLaunch() {
        java.lang.management.ThreadMXBean plain = ManagementFactory.getThreadMXBean();
        assumeTrue(plain instanceof com.sun.management.ThreadMXBean, "this JVM cannot count allocated bytes per thread");
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) plain;
        assumeTrue(threads.isThreadAllocatedMemorySupported(), "this JVM cannot count allocated bytes per thread");
        threads.setThreadAllocatedMemoryEnabled(true);

        try (Handle h = Handle.create(0)) {
            KernelLaunch launch = empty().newLaunch().grid(1).block(32);
            for (int i = 0; i < WARMUP; i++) {
                launch.launch(h);
            }
            h.synchronize();

            long before = threads.getCurrentThreadAllocatedBytes();
            long t0 = System.nanoTime();
            for (int i = 0; i < LAUNCHES; i++) {
                launch.launch(h);
            }
            h.synchronize();
            long t1 = System.nanoTime();
            long allocated = threads.getCurrentThreadAllocatedBytes() - before;

            double usPerLaunch = (t1 - t0) / 1e3 / LAUNCHES;
            System.out.printf("[kernel-tests] %d launches of cuh_test_empty: %.3f us per launch, %d bytes allocated in all (%.4f per launch)%n",
                    LAUNCHES, usPerLaunch, allocated, allocated / (double) LAUNCHES);
            assertTrue(allocated < TOLERANCE_BYTES, "K1: " + LAUNCHES + " launches through a reusable KernelLaunch allocated " + allocated
                    + " bytes; expected none (tolerance " + TOLERANCE_BYTES + " bytes)");
            assertEquals(0L, current());
        }
    }

    /** The same with a kernel that takes arguments, changed between launches (the realistic hot loop). */
    @Test
    void changingArgumentsBetweenLaunchesAllocatesNothing() {
        java.lang.management.ThreadMXBean plain = ManagementFactory.getThreadMXBean();
        assumeTrue(plain instanceof com.sun.management.ThreadMXBean);
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) plain;
        assumeTrue(threads.isThreadAllocatedMemorySupported());
        threads.setThreadAllocatedMemoryEnabled(true);
        int n = 64;
        int launches = 200_000;
        try (Handle h = Handle.create(0); DeviceBuffer a = h.allocate(4L * n); DeviceBuffer b = h.allocate(4L * n)) {
            h.memset(a, 0);
            h.memset(b, 0);
            KernelLaunch launch = addOne().newLaunch().grid(1).block(64).arg(1, n);
            for (int i = 0; i < WARMUP; i++) {
                launch.arg(0, (i & 1) == 0 ? a : b).arg(1, n);
                launch.launch(h);
            }
            h.synchronize();
            long before = threads.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < launches; i++) {
                launch.arg(0, (i & 1) == 0 ? a : b).arg(1, n);
                launch.launch(h);
            }
            h.synchronize();
            long allocated = threads.getCurrentThreadAllocatedBytes() - before;
            System.out.printf("[kernel-tests] %d launches of cuh_test_add_one with changing arguments: %d bytes allocated%n", launches, allocated);
            assertTrue(allocated < TOLERANCE_BYTES, "K1: " + launches + " launches with changing arguments allocated " + allocated + " bytes");
            // And the work was done: every element of both buffers got (WARMUP + launches) / 2 increments.
            float[] out = new float[n];
            a.download(out);
            float expected = (WARMUP + launches) / 2.0f;
            for (float v : out) {
                assertEquals(expected, v, "increments in buffer a");
            }
            b.download(out);
            for (float v : out) {
                assertEquals(expected, v, "increments in buffer b");
            }
        }
    }
}
