package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/**
 * Issue 9 (2), rule L3, with real kernels: buffer {@code x} of handle A is written by a long
 * kernel of handle B (same context) when A closes it. The free used to be ordered on A's stream
 * only: a new allocation then got {@code x}'s memory while B's kernel still wrote it (the fresh,
 * zeroed buffer read back non-zero, then CUDA_ERROR_ILLEGAL_ADDRESS ended the process). Now the
 * free is ordered (on the GPU) after the work of every stream that used the buffer (rule L3).
 */
@GpuTest
class MemoryOrderGpuTest extends HandleGpuTestBase {
    @Test
    void memoryFreedWhileAnotherHandlesKernelUsesItIsNotHandedOutBeforeThatKernelEnds() {
        int n = 64 << 20; // 256 MiB of floats, as in the report
        try (Handle a = Handle.create(); Handle b = Handle.create()) {
            DeviceBuffer x = a.allocate(4L * n);
            a.synchronize();
            spin(b, 0.5); // B's stream is busy for half a second ...
            for (int i = 0; i < 4; i++) {
                addOne(b, x, n); // ... then writes every element of x, four times
            }
            x.close(); // from A, while B's work is queued or running
            try (DeviceBuffer fresh = a.allocate(4L * n)) {
                a.memset(fresh, 0);
                b.synchronize();
                a.synchronize();
                float[] out = new float[n];
                fresh.download(out);
                int nonZero = 0;
                for (float v : out) {
                    if (v != 0f) {
                        nonZero++;
                    }
                }
                assertEquals(0, nonZero, "elements of a freshly zeroed buffer written by a kernel of the freed buffer's other user");
            }
        }
    }
}
