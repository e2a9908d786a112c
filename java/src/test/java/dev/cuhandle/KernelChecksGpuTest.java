package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Launches as an application makes them (issue 20), with kernels/test/kernel_checks.cu: the thread's reusable
 * launch behind {@link Handle#launch} with structures at every argument position. On a GPU the results are
 * checked against the CPU on fresh random data (the seed is printed); on the CPU stand-in the same launches must
 * be accepted by its driver.
 */
@GpuTest
class KernelChecksGpuTest extends GpuTestSupport {
    private final Random random = KernelGpuTestBase.freshRandom("kernel checks");
    private Handle handle;
    private Library library;

    @BeforeEach
    void handleAndModule() {
        clearCurrent();
        handle = Handle.create(0);
        library = Library.loadResource(KernelChecksGpuTest.class, TestKernels.CHECKS_FATBIN);
    }

    @AfterEach
    void closeAll() {
        closeQuietly(library);
        closeQuietly(handle);
        clearCurrent();
    }

    /**
     * Item 1: the thread's launch object kept every structure region of earlier launches, so after four launches
     * with a 1 KiB structure at four argument positions the fifth was refused ("does not fit ... use a new
     * KernelLaunch"), which the varargs API offers no way to do.
     */
    @Test
    @StandInCapable
    void handleLaunchTakesStructuresAtAnyPositionLaunchAfterLaunch() {
        boolean runs = !StandIn.active();
        try (DeviceBuffer out = handle.allocate(4)) {
            for (int round = 0; round < 3; round++) {
                for (int position = 0; position <= 4; position++) {
                    byte[] bytes = new byte[1024];
                    random.nextBytes(bytes);
                    Object[] args = structureAt(position, out, ByteBuffer.wrap(bytes));
                    handle.launch(library.kernel("cuh_check_struct_at_" + position), Dim3.of(1), Dim3.of(32), 0, args);
                    if (runs) {
                        int expected = position;
                        for (byte b : bytes) {
                            expected += b & 0xFF;
                        }
                        int[] got = new int[1];
                        out.download(got);
                        assertEquals(expected, got[0], "round " + round + ", structure at argument " + position);
                    }
                }
            }
            handle.synchronize();
        }
    }

    /** The arguments of cuh_check_struct_at_{position}: the structure at that position, the output buffer and ints around it. */
    private Object[] structureAt(int position, DeviceBuffer out, ByteBuffer structure) {
        if (position == 0) {
            return new Object[] {structure, out};
        }
        Object[] args = new Object[position + 1];
        args[0] = out;
        for (int i = 1; i < position; i++) {
            args[i] = random.nextInt();
        }
        args[position] = structure;
        return args;
    }
}
