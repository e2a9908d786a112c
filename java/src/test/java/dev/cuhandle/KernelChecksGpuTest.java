package dev.cuhandle;

import static dev.cuhandle.KernelLaunchArgumentsTest.assertContains;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.ByteBuffer;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Launches as an application makes them (issue 20 items 1-3), with kernels/test/kernel_checks.cu: the thread's
 * reusable launch behind {@link Handle#launch} with structures at every argument position, static plus dynamic
 * shared memory above 48 KiB, and the dynamic shared memory opt-in, which the driver keeps per kernel and device,
 * shared by every {@link Kernel} object of one kernel. On a GPU the results are checked against the CPU on fresh
 * random data (the seed is printed); on the CPU stand-in (which models static shared memory and the opt-in) the
 * same launches must be accepted by its driver.
 */
@GpuTest
class KernelChecksGpuTest extends GpuTestSupport {
    /** cuh_check_static_and_dynamic_shared's static shared memory: float[8192]. */
    private static final int STATIC_SHARED = 32 * 1024;
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

    /**
     * Item 2: 32 KiB of static and 32 KiB of dynamic shared memory exceed the 48 KiB default together, so the
     * kernel must be opted in although the dynamic bytes alone do not exceed it; before, the launch failed with
     * CUDA_ERROR_INVALID_VALUE.
     */
    @Test
    @StandInCapable
    void staticAndDynamicSharedMemoryTogetherAbove48KibOptTheKernelIn() {
        Device d = handle.device();
        Kernel k = library.kernel("cuh_check_static_and_dynamic_shared");
        assertEquals(STATIC_SHARED, k.staticSharedBytes(d.ordinal()));
        assumeTrue(d.maxSharedMemoryPerBlockOptin() >= STATIC_SHARED + 32 * 1024, "device allows only " + d.maxSharedMemoryPerBlockOptin() + " bytes with opt-in");
        int n = 32 * 1024 / Float.BYTES;
        launchStaticAndDynamic(k, n);
        assertTrue(k.attribute(KernelAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, d.ordinal()) >= n * Float.BYTES, "the launch opted the kernel in");
        // Above the opt-in limit less the static shared memory: refused naming the numbers.
        int tooMuch = d.maxSharedMemoryPerBlockOptin() - STATIC_SHARED + 4;
        try (DeviceBuffer b = handle.allocate(tooMuch)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> handle.launch(k, Dim3.of(1), Dim3.of(256), tooMuch, b, b, tooMuch / Float.BYTES));
            assertContains(e.getMessage(), "cuh_check_static_and_dynamic_shared", String.valueOf(tooMuch),
                    String.valueOf(d.maxSharedMemoryPerBlockOptin() - STATIC_SHARED), STATIC_SHARED + " bytes of static shared memory");
        }
    }

    /**
     * Item 3: the opt-in is the driver's, per kernel and device, for every Kernel object of the kernel. A second
     * object launching with less, or setMaxDynamicSharedBytes with less, lowered it and the first object's larger
     * launch then failed with CUDA_ERROR_INVALID_VALUE.
     */
    @Test
    @StandInCapable
    void kernelObjectsOfOneKernelShareItsOptInAndNoneLowersIt() {
        Device d = handle.device();
        int large = d.maxSharedMemoryPerBlockOptin() - STATIC_SHARED;
        int small = Math.max(16 * 1024, large / 2);
        assumeTrue(small > d.maxSharedMemoryPerBlock() - STATIC_SHARED, "no opt-in beyond the default on this device");
        Kernel first = library.kernel("cuh_check_static_and_dynamic_shared");
        Kernel second = library.kernel("cuh_check_static_and_dynamic_shared");
        launchStaticAndDynamic(first, large / Float.BYTES);
        launchStaticAndDynamic(second, small / Float.BYTES);
        launchStaticAndDynamic(first, large / Float.BYTES);
        assertEquals(large, second.attribute(KernelAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, d.ordinal()), "one attribute for both objects");
        second.setMaxDynamicSharedBytes(d.ordinal(), small);
        assertEquals(large, first.attribute(KernelAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, d.ordinal()), "a smaller opt-in never lowers it");
        launchStaticAndDynamic(first, large / Float.BYTES);
        // Set lower explicitly by number: it is lowered, and the next larger launch raises it again.
        second.setAttribute(KernelAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, small, d.ordinal());
        assertEquals(small, first.attribute(KernelAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, d.ordinal()));
        launchStaticAndDynamic(first, large / Float.BYTES);
        assertEquals(large, first.attribute(KernelAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, d.ordinal()));
    }

    /** cuh_check_static_and_dynamic_shared with {@code n} floats of dynamic shared memory, checked against the CPU on a GPU. */
    private void launchStaticAndDynamic(Kernel k, int n) {
        float[] in = new float[n];
        for (int i = 0; i < n; i++) {
            in[i] = random.nextInt(1 << 20);
        }
        try (DeviceBuffer x = handle.upload(in); DeviceBuffer y = handle.allocate((long) n * Float.BYTES)) {
            handle.launch(k, Dim3.of(1), Dim3.of(1024), n * Float.BYTES, x, y, n);
            if (StandIn.active()) {
                handle.synchronize();
                return;
            }
            float[] got = new float[n];
            y.download(got);
            for (int i = 0; i < n; i++) {
                assertEquals(in[n - 1 - i] + (i % 8192), got[i], 0.0f, "out[" + i + "] with " + n * Float.BYTES + " bytes of dynamic shared memory");
            }
        }
    }
}
