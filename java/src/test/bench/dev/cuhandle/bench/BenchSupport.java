package dev.cuhandle.bench;

import dev.cuhandle.Cuda;

/** What every benchmark main does first: without a usable GPU, say why on one line and exit with status 2. */
public final class BenchSupport {
    private BenchSupport() {}

    /**
     * Exits the JVM with status 2 and a {@code #} line naming the benchmark and the reason when no GPU can be used.
     *
     * @param benchmark the benchmark's name, for the message
     */
    public static void requireGpu(String benchmark) {
        if (!Cuda.isAvailable()) {
            System.out.println("# " + benchmark + " not run: " + Cuda.unavailableReason());
            System.exit(2);
        }
    }
}
