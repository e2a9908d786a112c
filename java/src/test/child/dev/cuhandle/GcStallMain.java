package dev.cuhandle;

/**
 * Child-JVM body of {@link GcStallGpuTest}: queues about 3 s of GPU work (a spin kernel on a GPU,
 * simulated time on the stand-in), downloads a 64 MiB array behind it on one thread while another
 * thread keeps allocating, and prints the worst pause the allocating thread saw and how long the
 * download waited. Prints {@code maxStallMs=...} and {@code downloadMs=...}. With the argument {@code batch} the
 * download is one {@code downloadAll} of 1,024 arrays (views of the same 64 MiB), which must not stall either.
 *
 * <p>With the argument {@code baseline} it uses no GPU: the other thread sleeps as long as the
 * download would wait, with the same 64 MiB array live, so the printed stall is the collector's own
 * (docs/performance.md: the Parallel collector stalls about as long with no copy at all).
 */
public final class GcStallMain {
    private static final double WORK_SECONDS = 3.0;
    private static final int FLOATS = 16 << 20;
    /** Arrays of the download with the argument {@code batch}: one {@code downloadAll} of 1,024 arrays of 64 KiB. */
    private static final int BATCH = 1024;

    private GcStallMain() {}

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("baseline")) {
            float[] live = new float[FLOATS];
            long start = System.nanoTime();
            long maxStall = churnWhileAlive(startThread(() -> sleep((long) (WORK_SECONDS * 1000))));
            System.out.println("maxStallMs=" + maxStall / 1_000_000.0);
            System.out.println("downloadMs=" + (System.nanoTime() - start) / 1_000_000.0 + " (no download: a sleep, " + live.length + " floats live)");
            return;
        }
        try (Handle h = Handle.create(); DeviceBuffer x = h.allocate(4L * FLOATS)) {
            h.memset(x, 0);
            h.synchronize();
            Library kernels = null;
            if (StandIn.active()) {
                int previous = StandIn.setWorkMillis((int) (WORK_SECONDS * 1000));
                h.memset(x, 0); // one operation that the stand-in accounts 3 s of GPU time for
                StandIn.setWorkMillis(previous);
            } else {
                kernels = TestKernels.load();
                h.launch(kernels.kernel("cuh_test_spin"), Dim3.of(1), Dim3.of(1), 0, (long) (WORK_SECONDS * HandleGpuTestBase.SPIN_CYCLES_PER_SECOND));
            }
            boolean batch = args.length > 0 && args[0].equals("batch");
            float[] out = new float[batch ? 0 : FLOATS];
            float[][] parts = new float[batch ? BATCH : 0][FLOATS / BATCH];
            DeviceBuffer[] views = new DeviceBuffer[parts.length];
            for (int i = 0; i < views.length; i++) {
                views[i] = x.slice(4L * i * (FLOATS / BATCH), 4L * (FLOATS / BATCH));
            }
            long[] downloadNanos = new long[1];
            Thread downloader = startThread(() -> {
                long start = System.nanoTime();
                if (batch) {
                    h.downloadAll(views, parts);
                } else {
                    x.download(out);
                }
                downloadNanos[0] = System.nanoTime() - start;
            });
            long maxGap = churnWhileAlive(downloader);
            System.out.println("maxStallMs=" + maxGap / 1_000_000.0);
            System.out.println("downloadMs=" + downloadNanos[0] / 1_000_000.0);
            if (kernels != null) {
                kernels.close();
            }
        }
    }

    private static Thread startThread(Runnable body) {
        Thread t = new Thread(body, "downloader");
        t.start();
        return t;
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Allocates 1 MiB arrays while {@code other} runs; returns the longest gap between two, in ns. */
    private static long churnWhileAlive(Thread other) throws InterruptedException {
        long maxGap = 0;
        long last = System.nanoTime();
        long sink = 0;
        while (other.isAlive()) {
            byte[] garbage = new byte[1 << 20]; // young-generation churn: forces a collection every few ms
            sink += garbage.length;
            long now = System.nanoTime();
            maxGap = Math.max(maxGap, now - last);
            last = now;
        }
        other.join();
        System.out.println("allocatedMiB=" + (sink >> 20));
        return maxGap;
    }
}
