package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Issue 34's stress run: 16 threads, 100,000 mixed operations each (launches, BLAS with host and device results,
 * array copies, allocate and close) on the handles of 4 SM partitions (4 threads per handle), with no error, every
 * result equal to the CPU's, and nothing current on the calling thread before or after any operation. GPU only:
 * kernels must execute. Prints {@code [partitions-stress]} lines for the GPU log.
 */
@GpuTest
class SmPartitionStressGpuTest {
    private static final int THREADS = 16;
    private static final int OPERATIONS = Integer.getInteger("cuhandle.partitionStress.operations", 100_000);
    private static final int N = 1024;

    @Test
    void sixteenThreadsMixOperationsOnFourPartitionsWithoutErrorAndWithNothingCurrent() throws Exception {
        String why = Cuda.device(0).smPartitionSupport();
        assumeTrue(why.isEmpty(), "SM partitions are not supported here: " + why);
        AtomicLong checks = new AtomicLong();
        long start = System.nanoTime();
        try (SmPartitions parts = Cuda.device(0).splitSms(4); Library kernels = TestKernels.load()) {
            Kernel addOne = kernels.kernel("cuh_test_add_one");
            Handle[] handles = new Handle[4];
            for (int i = 0; i < 4; i++) {
                handles[i] = Handle.create(parts.get(i));
            }
            ExecutorService pool = Executors.newFixedThreadPool(THREADS);
            try {
                List<Future<?>> done = new ArrayList<>();
                for (int t = 0; t < THREADS; t++) {
                    Handle h = handles[t % 4];
                    long seed = 1000 + t;
                    done.add(pool.submit(() -> {
                        run(h, addOne, seed, checks);
                        return null;
                    }));
                }
                for (Future<?> f : done) {
                    f.get(900, TimeUnit.SECONDS);
                }
            } finally {
                pool.shutdownNow();
                for (Handle h : handles) {
                    h.close();
                }
            }
        }
        System.out.printf("[partitions-stress] %d threads x %d operations on 4 partitions: 0 errors, %d results checked against the CPU, %.1f s%n",
                THREADS, OPERATIONS, checks.get(), (System.nanoTime() - start) / 1e9);
    }

    /** One thread's operations; {@code x} on the device mirrors {@code cpu} after every operation. */
    private static void run(Handle h, Kernel addOne, long seed, AtomicLong checks) {
        Random random = new Random(seed);
        float[] cpu = SmPartitionGpuTest.randomFloats(N, seed);
        float[] y = SmPartitionGpuTest.randomFloats(N, seed + 1);
        try (DeviceBuffer x = h.upload(cpu); DeviceBuffer dy = h.upload(y); DeviceBuffer dot = h.allocate(4)) {
            for (int op = 0; op < OPERATIONS; op++) {
                assertEquals(0L, GpuTestSupport.current(), "something was current before operation " + op);
                switch (random.nextInt(6)) {
                    case 0:
                        h.launch(addOne, Dim3.of(N / 256), Dim3.of(256), 0, x, N);
                        for (int i = 0; i < N; i++) {
                            cpu[i] += 1f;
                        }
                        break;
                    case 1: {
                        float alpha = random.nextFloat() - 0.5f;
                        Blas.saxpy(h, N, alpha, dy, 1, x, 1);
                        for (int i = 0; i < N; i++) {
                            cpu[i] = alpha * y[i] + cpu[i];
                        }
                        break;
                    }
                    case 2: {
                        float got = Blas.sdot(h, N, x, 1, dy, 1);
                        // A float reduction's rounding grows with the sum of the terms' magnitudes, not the result's.
                        assertEquals(dot(cpu, y), got, 1e-5f * absDot(cpu, y) + 1e-3f, "sdot at operation " + op);
                        checks.incrementAndGet();
                        break;
                    }
                    case 3:
                        Blas.sdot(h, N, x, 1, dy, 1, dot);
                        break;
                    case 4: {
                        float[] back = new float[N];
                        h.copyToHost(x, back, 0, N);
                        for (int i = 0; i < N; i++) {
                            assertClose(cpu[i], back[i], "element " + i + " at operation " + op);
                        }
                        checks.incrementAndGet();
                        break;
                    }
                    default: {
                        int bytes = 4 * (1 + random.nextInt(1 << 16));
                        try (DeviceBuffer scratch = h.allocate(bytes)) {
                            h.memset(scratch, random.nextInt(256));
                        }
                        break;
                    }
                }
                assertEquals(0L, GpuTestSupport.current(), "something was left current by operation " + op);
                if (op % 4096 == 4095) {
                    // Keeps the values bounded (saxpy and add_one grow them) and the CPU mirror exact.
                    cpu = SmPartitionGpuTest.randomFloats(N, seed + op);
                    h.copyToDevice(cpu, 0, x, N);
                }
            }
            float[] back = new float[N];
            h.copyToHost(x, back, 0, N);
            for (int i = 0; i < N; i++) {
                assertClose(cpu[i], back[i], "element " + i + " at the end");
            }
        }
    }

    private static float dot(float[] a, float[] b) {
        double sum = 0;
        for (int i = 0; i < a.length; i++) {
            sum += (double) a[i] * b[i];
        }
        return (float) sum;
    }

    private static float absDot(float[] a, float[] b) {
        double sum = 0;
        for (int i = 0; i < a.length; i++) {
            sum += Math.abs((double) a[i] * b[i]);
        }
        return (float) sum;
    }

    private static void assertClose(float want, float got, String what) {
        assertEquals(want, got, 1e-3f * Math.max(1f, Math.abs(want)), what);
    }
}
