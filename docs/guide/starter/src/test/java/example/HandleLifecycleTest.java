package example;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.Handle;
import dev.cuhandle.junit.RequiresGpu;
import org.junit.jupiter.api.Test;

/** Needs a driver and a device but no kernel: runs on the CPU stand-in driver too. */
class HandleLifecycleTest {
    @Test
    @RequiresGpu
    void copiesRoundTripAndClosedBuffersAreRefused() {
        float[] x = {1, 2, 3, 4};
        float[] back = new float[4];
        DeviceBuffer closed;
        try (Handle h = Handle.create(); DeviceBuffer dx = h.upload(x)) {
            dx.download(back);
            closed = dx;
        }
        assertArrayEquals(x, back);
        assertThrows(IllegalStateException.class, () -> closed.download(back));
    }
}
