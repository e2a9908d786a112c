package dev.cuhandle.bench;

import static dev.cuhandle.bench.CallTiming.median;

import dev.cuhandle.Cuda;
import dev.cuhandle.Device;
import dev.cuhandle.DeviceAttribute;
import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.Dim3;
import dev.cuhandle.Handle;
import dev.cuhandle.Kernel;
import dev.cuhandle.Library;
import dev.cuhandle.SmPartitions;
import dev.cuhandle.TestKernels;

/**
 * SM partitions against ordinary handles (issue 34; goal on the H200: a short job next to a saturating kernel of
 * another handle takes at most 1.2x its time alone on a partition handle, and launch and allocation costs on a
 * partition handle are within 10% of an ordinary handle's). In one process:
 * <ul>
 *   <li>isolation: a short job (one block per SM of the device, 1024 threads, every thread spinning ~1 ms;
 *       {@code cuh_test_smids}) alone, then right after a saturating kernel (4 blocks per SM, ~200 ms each) was
 *       queued on the other handle of the pair; for a pair of ordinary handles of device 0 (a stream each, H9) and a
 *       pair of handles of two SM partitions ({@code splitSms(2)}); medians over {@link #ISOLATION_RUNS} runs;
 *   <li>launch cost: µs per launch of an empty kernel over {@link #LAUNCHES} launches, ordinary and partition
 *       handle taking turns {@link #TURNS} times (medians of the turns);
 *   <li>allocation cost: µs per {@code allocate(1 MiB)} + {@code close()} round in stream order, the same way.
 * </ul>
 * Prints CSV lines {@code partitions,<figure>,<ordinary|partition>,<value>,<unit>} and the ratios.
 */
public final class SmPartitionBenchmark {
    private static final int ISOLATION_RUNS = 7;
    private static final int LAUNCHES = 50_000;
    private static final int ALLOCATIONS = 20_000;
    private static final int TURNS = 5;

    private SmPartitionBenchmark() {}

    public static void main(String[] args) {
        Device d = Cuda.device(0);
        String why = d.smPartitionSupport();
        if (!why.isEmpty()) {
            System.out.println("partitions,unsupported," + why.replace(',', ';'));
            return;
        }
        long cyclesPerMs = d.attribute(DeviceAttribute.CLOCK_RATE); // kHz: cycles per millisecond
        int sms = d.multiprocessorCount();
        try (SmPartitions parts = d.splitSms(2); Library kernels = TestKernels.load();
                Handle o1 = Handle.create(0); Handle o2 = Handle.create(0);
                Handle p1 = Handle.create(parts.get(0)); Handle p2 = Handle.create(parts.get(1))) {
            System.out.println("partitions,split," + parts.toString().replace(',', ';'));
            Kernel spin = kernels.kernel("cuh_test_smids");
            Kernel empty = kernels.kernel("cuh_test_empty");
            double[] ordinary = isolation(o1, o2, spin, sms, cyclesPerMs);
            double[] partition = isolation(p1, p2, spin, sms, cyclesPerMs);
            print("short_job_alone", ordinary[0], partition[0], "ms");
            print("short_job_next_to_saturating_kernel", ordinary[1], partition[1], "ms");
            System.out.printf("partitions,slowdown_next_to_saturating_kernel,ordinary,%.2f,x%n", ordinary[1] / ordinary[0]);
            System.out.printf("partitions,slowdown_next_to_saturating_kernel,partition,%.2f,x%n", partition[1] / partition[0]);

            double[][] launch = new double[2][TURNS];
            double[][] churn = new double[2][TURNS];
            for (int turn = 0; turn < TURNS; turn++) {
                launch[0][turn] = launchUs(o1, empty);
                launch[1][turn] = launchUs(p1, empty);
                churn[0][turn] = allocationUs(o1);
                churn[1][turn] = allocationUs(p1);
            }
            print("launch_cost", median(launch[0]), median(launch[1]), "us");
            System.out.printf("partitions,launch_cost_ratio,partition_over_ordinary,%.3f,x%n", median(launch[1]) / median(launch[0]));
            print("allocate_close_1MiB", median(churn[0]), median(churn[1]), "us");
            System.out.printf("partitions,allocate_close_ratio,partition_over_ordinary,%.3f,x%n", median(churn[1]) / median(churn[0]));
        }
    }

    /** [median ms of the short job alone, median ms of it right after a saturating kernel was queued on {@code busy}]. */
    private static double[] isolation(Handle busy, Handle quick, Kernel spin, int sms, long cyclesPerMs) {
        try (DeviceBuffer big = busy.allocate(4L * 4 * sms); DeviceBuffer small = quick.allocate(4L * sms)) {
            long shortCycles = cyclesPerMs;       // ~1 ms per block
            long longCycles = 200 * cyclesPerMs;  // ~200 ms per block
            double[] alone = new double[ISOLATION_RUNS];
            double[] busyRuns = new double[ISOLATION_RUNS];
            for (int run = -1; run < ISOLATION_RUNS; run++) {
                long t0 = System.nanoTime();
                quick.launch(spin, Dim3.of(sms), Dim3.of(1024), 0, small, shortCycles);
                quick.synchronize();
                double a = (System.nanoTime() - t0) / 1e6;
                busy.launch(spin, Dim3.of(4 * sms), Dim3.of(1024), 0, big, longCycles);
                long t1 = System.nanoTime();
                quick.launch(spin, Dim3.of(sms), Dim3.of(1024), 0, small, shortCycles);
                quick.synchronize();
                double b = (System.nanoTime() - t1) / 1e6;
                busy.synchronize();
                if (run >= 0) {
                    alone[run] = a;
                    busyRuns[run] = b;
                }
            }
            return new double[] {median(alone), median(busyRuns)};
        }
    }

    private static double launchUs(Handle h, Kernel empty) {
        for (int i = 0; i < 5_000; i++) {
            h.launch(empty, Dim3.of(1), Dim3.of(32), 0);
        }
        h.synchronize();
        long t0 = System.nanoTime();
        for (int i = 0; i < LAUNCHES; i++) {
            h.launch(empty, Dim3.of(1), Dim3.of(32), 0);
        }
        double us = (System.nanoTime() - t0) / 1e3 / LAUNCHES;
        h.synchronize();
        return us;
    }

    private static double allocationUs(Handle h) {
        for (int i = 0; i < 1_000; i++) {
            h.allocate(1 << 20).close();
        }
        h.synchronize();
        long t0 = System.nanoTime();
        for (int i = 0; i < ALLOCATIONS; i++) {
            h.allocate(1 << 20).close();
        }
        double us = (System.nanoTime() - t0) / 1e3 / ALLOCATIONS;
        h.synchronize();
        return us;
    }

    private static void print(String figure, double ordinary, double partition, String unit) {
        System.out.printf("partitions,%s,ordinary,%.4f,%s%n", figure, ordinary, unit);
        System.out.printf("partitions,%s,partition,%.4f,%s%n", figure, partition, unit);
    }
}
