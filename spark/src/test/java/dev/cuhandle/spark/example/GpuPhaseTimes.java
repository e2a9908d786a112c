package dev.cuhandle.spark.example;

import java.io.Serializable;

/**
 * Where one task's GPU search spends its time, phase by phase, from a diagnostic run in which
 * {@link GpuNeighbourSearch} waits for each phase before the next (so none overlaps another and each
 * is timed alone): generating rows into pinned memory (host clock), the copy to the device, the
 * scoring kernel and the merge kernel (CUDA events), and the final download and merge on the host
 * (host clock).
 */
final class GpuPhaseTimes implements Serializable {
    private static final long serialVersionUID = 1L;

    long rows;
    int blocks;
    double packMs;
    double copyMs;
    double kernelMs;
    double mergeMs;
    double hostMergeMs;

    /** One line: each phase's time, its share and its rate, for {@code queries} queries of {@code dim} floats. */
    String describe(int queries, int dim) {
        double total = packMs + copyMs + kernelMs + mergeMs + hostMergeMs;
        double bytes = 4.0 * rows * dim;
        double flops = 2.0 * rows * queries * dim;
        return String.format("%d rows in %d blocks, %.1f ms in all: pack (generate into pinned memory) %.1f ms (%s, %.3g rows/s on one core), "
                        + "copy %.1f ms (%s, %.1f GB/s), kernel %.1f ms (%s, %.1f TFLOP/s), merge kernel %.2f ms (%s), host merge %.2f ms (%s)",
                rows, blocks, total, packMs, share(packMs, total), rows / (packMs / 1e3), copyMs, share(copyMs, total), bytes / (copyMs / 1e3) / 1e9,
                kernelMs, share(kernelMs, total), flops / (kernelMs / 1e3) / 1e12, mergeMs, share(mergeMs, total), hostMergeMs, share(hostMergeMs, total));
    }

    private static String share(double part, double total) {
        return String.format("%.0f%%", 100 * part / total);
    }
}
