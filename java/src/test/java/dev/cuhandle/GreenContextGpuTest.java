package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * What a handle does with a green context (CUDA 12.4+, "Green Contexts" of the driver API). NVIDIA
 * documents that a green context is made current through the {@code CUcontext} that
 * {@code cuCtxFromGreenCtx} returns, "a normal primary context but with the resources of the specified
 * green context", and that a green context "can be current to only one thread at a time", with no
 * internal synchronization for calls from several threads. So everything here runs on one thread.
 *
 * <p>Checked: with the green context current, {@code Handle.create()} binds it (H1); the handle's work
 * runs on a stream of the green context ({@code cuStreamGetGreenCtx}), so on its SMs, with results
 * equal to the CPU's; every call and {@code close()} leave the green context current (H4); the primary
 * context's state is the same after the handle closed as before it was created. Skipped where the
 * driver has no green contexts. Prints {@code [green-context] key=value} lines for the GPU log.
 */
@GpuTest
class GreenContextGpuTest extends HandleGpuTestBase {
    private static final String LOG = "[green-context] ";
    private final Random random = new Random();

    @Test
    void createWithAGreenContextCurrent_bindsIt_runsOnItsStream_andLeavesItCurrent() {
        assumeTrue(Cuda.driverVersion() >= 12040 && GreenContextTestApi.available(),
                "driver " + Cuda.driverVersion() + " has no green contexts (CUDA 12.4+)");
        int deviceSms = Cuda.device(0).multiprocessorCount();
        long[] green;
        try {
            green = GreenContextTestApi.create(0, Math.max(1, deviceSms / 2));
        } catch (CudaException e) {
            assumeTrue(e.error() != CudaError.NOT_SUPPORTED, "green contexts are not supported on this device: " + e.getMessage());
            throw e;
        }
        long greenCtx = green[GreenContextTestApi.CONTEXT];
        try {
            long[] primaryBefore = settledPrimaryState(0);
            makeOnlyCurrent(greenCtx);
            try (Handle h = Handle.create()) {
                long retained = NativeTestApi.retainPrimary(0);
                NativeTestApi.releasePrimary(0);
                System.out.println(LOG + "driver=" + Cuda.driverVersion() + " device_sms=" + green[GreenContextTestApi.DEVICE_SMS]
                        + " green_sms=" + green[GreenContextTestApi.SMS] + " green_context=" + hex(greenCtx) + " primary_context=" + hex(retained)
                        + " bound=" + hex(h.rawContext()) + " retains_primary=" + h.ownsPrimaryContext()
                        + " green_context_id=" + NativeTestApi.contextId(greenCtx) + " handle_context_id=" + h.contextId());
                assertEquals(hex(greenCtx), hex(current()), "H4: creating the handle left the green context current");
                assertEquals(hex(greenCtx), hex(h.rawContext()), "H1: the handle binds the current (green) context");
                assertEquals(NativeTestApi.contextId(greenCtx), h.contextId(), "the handle recorded the green context's id");

                checkAddOne(h, random, 1 << 16, 3, "add-one through a handle of a green context");
                assertEquals(hex(greenCtx), hex(current()), "H4: the calls left the green context current");
                long streamsGreen = GreenContextTestApi.greenContextOfStream(h.stream());
                System.out.println(LOG + "handle_stream_green_context=" + hex(streamsGreen) + " green=" + hex(green[GreenContextTestApi.GREEN]));
                assertEquals(hex(green[GreenContextTestApi.GREEN]), hex(streamsGreen),
                        "the handle's stream belongs to the green context, so its work runs on the green context's SMs");
            }
            assertEquals(hex(greenCtx), hex(current()), "H4: close() left the green context current");
            clearCurrent();
            assertEquals(state(primaryBefore), state(settledPrimaryState(0)), "the primary context's state after the handle closed");
        } finally {
            clearCurrent();
            GreenContextTestApi.destroy(green[GreenContextTestApi.GREEN]);
        }
    }
}
