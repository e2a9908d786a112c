package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * Launch arguments refused in Java before any native call (rule K1), so these run without a GPU:
 * argument indices and counts, argument types and nulls, and what a kernel reports about its
 * parameters. The kernels here are stand-ins built with Kernel's package-private constructor (no
 * library, no driver), so nothing is launched. The count and size checks against a kernel's
 * parameters (K2) run inside a launch, with the handle's context active: {@link KernelLaunchGpuTest}.
 */
class KernelLaunchArgumentsTest {
    /** Like cuh_test_params(long long*, int, long long, float, double, short, signed char, float*). */
    private static Kernel paramsLike() {
        return new Kernel(null, "cuh_fake_params", 0L, new long[] {8, 8, 4, 8, 4, 8, 2, 1, 8});
    }

    /** A kernel whose parameters the driver could not report (before CUDA 12.4). */
    private static Kernel unknownParameters() {
        return new Kernel(null, "cuh_fake_unknown", 0L, new long[] {-1});
    }

    static void assertContains(String message, String... parts) {
        for (String p : parts) {
            assertTrue(message != null && message.contains(p), "the message should contain \"" + p + "\" but is: " + message);
        }
    }

    @Test
    void parameterInformationIsReported() {
        Kernel k = paramsLike();
        assertEquals("cuh_fake_params", k.name());
        assertEquals(8, k.parameterCount());
        assertEquals(8, k.parameterSize(0));
        assertEquals(4, k.parameterSize(1));
        assertEquals(2, k.parameterSize(5));
        assertEquals(1, k.parameterSize(6));
        assertContains(k.toString(), "cuh_fake_params", "8 parameters");
        Kernel unknown = unknownParameters();
        assertEquals(-1, unknown.parameterCount(), "unknown parameter count is -1");
        assertEquals(-1, unknown.parameterSize(0), "unknown parameter size is -1");
        assertEquals(0, new Kernel(null, "cuh_fake_empty", 0L, new long[] {0}).parameterCount());
        // Looked up with no context current: not probed yet (parameterCount asks the driver then, see
        // KernelLaunchFeaturesGpuTest), so toString says nothing about parameters.
        Kernel notProbed = new Kernel(null, "cuh_fake_not_probed", 0L, new long[] {-2});
        assertEquals("Kernel[cuh_fake_not_probed]", notProbed.toString());
    }

    /** Issue 9 (9): an index outside the parameters is a clear IllegalArgumentException, not an ArrayIndexOutOfBoundsException. */
    @Test
    void aParameterIndexOutsideTheKernelIsRefusedByName() {
        Kernel k = paramsLike();
        for (int index : new int[] {-1, 8, 100}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> k.parameterSize(index));
            assertContains(e.getMessage(), "cuh_fake_params", "8 parameters", "index " + index);
        }
    }

    /**
     * Issue 9 (10): a narrower argument must not leave the upper bytes of a wider earlier one in its
     * slot, where a driver that cannot check sizes (before 12.4) would pass them to the kernel.
     */
    @Test
    void aNarrowerArgumentClearsTheWholeSlot() {
        KernelLaunch launch = paramsLike().newLaunch();
        launch.arg(0, -1L);
        assertEquals(-1L, launch.slotBits(0));
        launch.arg(0, 7);
        assertEquals(7L, launch.slotBits(0), "int 7 in a slot that held -1L");
        launch.arg(0, (short) 3);
        assertEquals(3L, launch.slotBits(0));
        launch.arg(0, (byte) 1);
        assertEquals(1L, launch.slotBits(0));
        launch.arg(0, 1.5f);
        assertEquals(Float.floatToRawIntBits(1.5f) & 0xFFFF_FFFFL, launch.slotBits(0));
    }

    @Test
    void argumentIndicesOutsideZeroToMaxArgsAreRefused() {
        KernelLaunch launch = paramsLike().newLaunch();
        for (int index : new int[] {-1, KernelLaunch.MAX_ARGS, KernelLaunch.MAX_ARGS + 1, Integer.MIN_VALUE, Integer.MAX_VALUE}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> launch.arg(index, 1));
            assertContains(e.getMessage(), "argument index " + index, String.valueOf(KernelLaunch.MAX_ARGS));
            assertThrows(IllegalArgumentException.class, () -> launch.arg(index, 1L));
            assertThrows(IllegalArgumentException.class, () -> launch.arg(index, 1f));
            assertThrows(IllegalArgumentException.class, () -> launch.arg(index, 1.0));
            assertThrows(IllegalArgumentException.class, () -> launch.arg(index, (short) 1));
            assertThrows(IllegalArgumentException.class, () -> launch.arg(index, (byte) 1));
            assertThrows(IllegalArgumentException.class, () -> launch.argPointer(index, 0x1000L));
        }
        // The highest legal index works.
        assertSame(launch, launch.arg(KernelLaunch.MAX_ARGS - 1, 7));
        assertSame(launch, launch.arg(0, 7));
    }

    @Test
    void argumentCountsOutsideZeroToMaxArgsAreRefused() {
        KernelLaunch launch = paramsLike().newLaunch();
        for (int count : new int[] {-1, KernelLaunch.MAX_ARGS + 1, Integer.MIN_VALUE, Integer.MAX_VALUE}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> launch.argCount(count));
            assertContains(e.getMessage(), "argument count " + count);
        }
        assertSame(launch, launch.argCount(0));
        assertSame(launch, launch.argCount(KernelLaunch.MAX_ARGS));
    }

    @Test
    void aNullBufferArgumentIsANullPointerNamingTheIndex() {
        KernelLaunch launch = paramsLike().newLaunch();
        NullPointerException e = assertThrows(NullPointerException.class, () -> launch.arg(3, (DeviceBuffer) null));
        assertContains(e.getMessage(), "3");
    }

    @Test
    void varargsOfUnsupportedTypesAreRefusedNamingKernelAndIndex() {
        KernelLaunch launch = paramsLike().newLaunch();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> launch.setArgs(new Object[] {1, "two"}));
        assertContains(e.getMessage(), "'cuh_fake_params'", "argument 1", "java.lang.String");
        e = assertThrows(IllegalArgumentException.class, () -> launch.setArgs(new Object[] {null}));
        assertContains(e.getMessage(), "'cuh_fake_params'", "argument 0", "null");
        e = assertThrows(IllegalArgumentException.class, () -> launch.setArgs(new Object[] {1, 2, 'c'}));
        assertContains(e.getMessage(), "argument 2", "java.lang.Character");
        e = assertThrows(IllegalArgumentException.class, () -> launch.setArgs(new Object[] {new float[4]}));
        assertContains(e.getMessage(), "argument 0");
        e = assertThrows(IllegalArgumentException.class, () -> launch.setArgs(new Object[] {Boolean.TRUE}));
        assertContains(e.getMessage(), "java.lang.Boolean");
    }

    @Test
    void moreThanMaxArgsVarargsAreRefused() {
        KernelLaunch launch = paramsLike().newLaunch();
        Object[] many = new Object[KernelLaunch.MAX_ARGS + 1];
        java.util.Arrays.fill(many, 1);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> launch.setArgs(many));
        assertContains(e.getMessage(), String.valueOf(KernelLaunch.MAX_ARGS + 1), String.valueOf(KernelLaunch.MAX_ARGS));
    }

    @Test
    void dim3HoldsItsSizes() {
        Dim3 a = Dim3.of(7);
        assertEquals(7, a.x);
        assertEquals(1, a.y);
        assertEquals(1, a.z);
        Dim3 b = Dim3.of(3, 4);
        assertEquals(3, b.x);
        assertEquals(4, b.y);
        assertEquals(1, b.z);
        Dim3 c = Dim3.of(5, 6, 7);
        assertEquals(5, c.x);
        assertEquals(6, c.y);
        assertEquals(7, c.z);
        assertEquals("(5, 6, 7)", c.toString());
    }

    /** Issue 39 (6): a wrong-size argument's message names the parameter, the Java type given and what to pass. */
    @Test
    void aWrongSizeSaysWhatWasPassedAndWhatToPassInstead() {
        KernelLaunch launch = paramsLike().newLaunch().arg(0, 2.0).arg(1, 2.0f).arg(2, 7).arg(3, 7L).arg(4, (byte) 1).argPointer(5, 0L);
        assertEquals("kernel 'cuh_fake_params' parameter 0 is 4 bytes (a float, int or unsigned int in C); the argument given is 8 bytes,"
                + " a Java double: pass a float (2.0f, not 2.0) or cast ((float) x)", launch.wrongSize(0, 4));
        assertContains(launch.wrongSize(1, 8), "parameter 1 is 8 bytes", "4 bytes, a Java float", "pass a double (2.0, not 2.0f)");
        assertContains(launch.wrongSize(2, 8), "a Java int", "pass a long (2L)", "pointer parameter pass a DeviceBuffer");
        assertContains(launch.wrongSize(3, 4), "a Java long", "pass an int (2, not 2L)");
        assertContains(launch.wrongSize(4, 2), "2 bytes (a short", "1 bytes, a Java byte", "pass a short");
        assertContains(launch.wrongSize(5, 24), "24 bytes (a structure", "a raw device pointer (argPointer)", "as a ByteBuffer");
        launch.arg(6, java.nio.ByteBuffer.allocate(16));
        assertContains(launch.wrongSize(6, 24), "16 bytes, a structure of 16 bytes (ByteBuffer)", "pass the structure's 24 bytes");
    }
}
