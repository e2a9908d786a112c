package dev.cuhandle.bench;

import dev.cuhandle.Cuda;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.JCudaDriver;

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

    /**
     * The JCuda side of a comparison: enables JCuda's exceptions, initialises the driver and retains device 0's
     * primary context (not made current).
     *
     * @return the retained primary context
     */
    public static CUcontext jcudaRetainPrimary() {
        JCudaDriver.setExceptionsEnabled(true);
        JCudaDriver.cuInit(0);
        CUdevice device = new CUdevice();
        JCudaDriver.cuDeviceGet(device, 0);
        CUcontext primary = new CUcontext();
        JCudaDriver.cuDevicePrimaryCtxRetain(primary, device);
        return primary;
    }
}
