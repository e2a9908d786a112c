package dev.cuhandle;

/**
 * Diagnostic for the GPU host: how much device memory each kind of per-handle resource leaves
 * reserved after N handles that used it were closed (or leaked and cleaned). Prints one line per
 * mode: MiB not given back, relative to the start.
 */
public final class MemoryProbeMain {
    private MemoryProbeMain() {}

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 2000;
        try (Handle anchor = Handle.create()) {
            long base = anchor.freeMemory();
            String[] modes = args.length > 1 ? args[1].split(",") : new String[] {"bare", "stream", "alloc", "alloc+memset", "sasum", "leak-sasum"};
            for (String mode : modes) {
                long t0 = System.nanoTime();
                for (int i = 0; i < n; i++) {
                    Handle h = Handle.create();
                    DeviceBuffer b = null;
                    switch (mode.replace("leak-", "")) {
                        case "bare":
                            break;
                        case "stream":
                            h.stream();
                            break;
                        case "alloc":
                            b = h.allocate(8192);
                            break;
                        case "alloc+memset":
                            b = h.allocate(8192);
                            h.memset(b, 1);
                            break;
                        default:
                            b = h.allocate(8192);
                            h.memset(b, 1);
                            Blas.sasum(h, 16, b, 1);
                    }
                    if (!mode.startsWith("leak")) {
                        if (b != null) {
                            b.close();
                        }
                        h.close();
                    }
                }
                if (mode.startsWith("leak")) {
                    for (int i = 0; i < 200; i++) {
                        System.gc();
                        Thread.sleep(20);
                    }
                }
                anchor.synchronize();
                Thread.sleep(200);
                long now = anchor.freeMemory();
                System.out.printf("mode=%-14s n=%d retainedMiB=%.1f perHandleKiB=%.1f ms=%d%n", mode, n, (base - now) / 1048576.0,
                        (base - now) / 1024.0 / n, (System.nanoTime() - t0) / 1_000_000);
            }
        }
    }
}
