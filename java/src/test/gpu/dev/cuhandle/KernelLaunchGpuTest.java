package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Launching kernels (rules K1, K2, K3, H10): results against CPU references on fresh random data,
 * every argument type arriving bit-exactly, dynamic shared memory, and one test per bad launch
 * (argument count, argument size, grid, block, shared memory, closed or foreign buffers).
 */
@GpuTest
class KernelLaunchGpuTest extends KernelGpuTestBase {

    @Test
    void addOneMatchesTheCpuForManySizes() {
        Random r = freshRandom("add_one sizes");
        try (Handle h = Handle.create(0)) {
            // 1 element, less than a block, not a multiple of the block, and more than grid * block
            // (1024 blocks of 256: the kernel's grid-stride loop covers the rest).
            for (int n : new int[] {1, 31, BLOCK, BLOCK + 1, 100_003, 1024 * BLOCK + 17, 3_000_000}) {
                float[] x = randomFloats(r, n);
                try (DeviceBuffer b = h.upload(x)) {
                    launchAddOne(h, b, n);
                    float[] out = new float[n];
                    b.download(out);
                    assertExact(plusOne(x, 0, n), out, "cuh_test_add_one, n = " + n);
                }
            }
        }
        assertEquals(0L, current());
    }

    @Test
    void manyLaunchesInAStreamAreOrdered() {
        Random r = freshRandom("ordered launches");
        int n = 50_000;
        int times = 100;
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = r.nextInt(1 << 20); // integers: every +1 is exact
        }
        try (Handle h = Handle.create(0); DeviceBuffer b = h.upload(x)) {
            KernelLaunch launch = addOne().newLaunch().grid(gridFor(n).x).block(BLOCK).arg(0, b).arg(1, n);
            for (int t = 0; t < times; t++) {
                h.launch(launch);
            }
            float[] out = new float[n];
            b.download(out);
            float[] expected = x.clone();
            for (int i = 0; i < n; i++) {
                expected[i] += times;
            }
            assertExact(expected, out, times + " launches of cuh_test_add_one");
        }
    }

    @Test
    void aReusableLaunchPicksUpChangedArguments() {
        Random r = freshRandom("reusable launch");
        int n = 10_000;
        float[] x = randomFloats(r, n);
        try (Handle h = Handle.create(0); DeviceBuffer a = h.upload(x); DeviceBuffer b = h.upload(x)) {
            KernelLaunch launch = addOne().newLaunch().grid(4).block(BLOCK);
            launch.arg(0, a).arg(1, n);
            launch.launch(h);
            launch.arg(0, b).arg(1, n / 2); // another buffer, half the elements
            launch.launch(h);
            launch.arg(1, n / 4);
            launch.launch(h);
            float[] outA = new float[n];
            float[] outB = new float[n];
            a.download(outA);
            b.download(outB);
            assertExact(plusOne(x, 0, n), outA, "first buffer, all elements");
            assertExact(plusOne(plusOne(x, 0, n / 2), 0, n / 4), outB, "second buffer: n/2 then n/4 elements");
        }
    }

    /**
     * Every argument type of cuh_test_params arrives exactly: the kernel echoes a, b, e, f
     * (sign-extended), c's bits zero-extended, d's bits, and the pointer p.
     */
    @Test
    void everyArgumentTypeArrivesExactly() {
        Random r = freshRandom("params");
        int[] ints = {0, 1, -1, Integer.MIN_VALUE, Integer.MAX_VALUE, r.nextInt(), r.nextInt()};
        long[] longs = {0L, -1L, Long.MIN_VALUE, Long.MAX_VALUE, 1L << 32, r.nextLong(), r.nextLong()};
        float[] floats = {0f, -0f, Float.MIN_VALUE, -Float.MAX_VALUE, Float.POSITIVE_INFINITY, Float.intBitsToFloat(0x7FC12345), r.nextFloat()};
        double[] doubles = {0.0, -0.0, Double.MIN_VALUE, Double.MAX_VALUE, Double.NEGATIVE_INFINITY,
            Double.longBitsToDouble(0x7FF8_0000_DEAD_BEEFL), r.nextDouble() * 1e300};
        short[] shorts = {0, -1, Short.MIN_VALUE, Short.MAX_VALUE, (short) r.nextInt(), 1234, -4321};
        byte[] bytes = {0, -1, Byte.MIN_VALUE, Byte.MAX_VALUE, (byte) r.nextInt(), 42, -42};
        try (Handle h = Handle.create(0); DeviceBuffer out = h.allocate(7 * 8); DeviceBuffer p = h.allocate(1024)) {
            KernelLaunch reusable = params().newLaunch().grid(1).block(32).arg(0, out);
            for (int i = 0; i < ints.length; i++) {
                DeviceBuffer pointer = p.slice(8L * i, 16); // a different address each round
                // Through the varargs path (boxed arguments) ...
                h.memset(out, 0x5A);
                h.launch(params(), Dim3.of(1), Dim3.of(32), 0, out, ints[i], longs[i], floats[i], doubles[i], shorts[i], bytes[i], pointer);
                assertEcho(out, ints[i], longs[i], floats[i], doubles[i], shorts[i], bytes[i], pointer.address(), "varargs round " + i);
                // ... and through a reusable launch with typed setters and a raw pointer.
                int j = ints.length - 1 - i;
                h.memset(out, 0xA5);
                reusable.arg(1, ints[j]).arg(2, longs[j]).arg(3, floats[j]).arg(4, doubles[j]).arg(5, shorts[j]).arg(6, bytes[j])
                        .argPointer(7, p.address() + 4L * j);
                h.launch(reusable);
                assertEcho(out, ints[j], longs[j], floats[j], doubles[j], shorts[j], bytes[j], p.address() + 4L * j, "KernelLaunch round " + i);
            }
        }
    }

    private static void assertEcho(DeviceBuffer out, int a, long b, float c, double d, short e, byte f, long p, String what) {
        long[] got = new long[7];
        out.download(got);
        assertEquals(a, got[0], what + ": int a");
        assertEquals(b, got[1], what + ": long long b");
        assertEquals(Integer.toUnsignedLong(Float.floatToRawIntBits(c)), got[2], what + ": bits of float c (" + c + "), zero-extended");
        assertEquals(Double.doubleToRawLongBits(d), got[3], what + ": bits of double d (" + d + ")");
        assertEquals(e, got[4], what + ": short e");
        assertEquals(f, got[5], what + ": signed char f");
        assertEquals(p, got[6], what + ": float* p");
    }

    @Test
    void dynamicSharedMemoryIsProvided() {
        try (Handle h = Handle.create(0); DeviceBuffer out = h.allocate(4)) {
            int max = Math.min(1024, h.device().maxThreadsPerBlock());
            for (int block : new int[] {1, 32, 100, 256, max}) {
                h.memset(out, 0);
                h.launch(dynamicShared(), Dim3.of(3), Dim3.of(block), block * 4, out);
                float[] got = new float[1];
                out.download(got);
                assertEquals(block * (block + 1) / 2.0f, got[0], "sum 1..blockDim.x through " + block * 4 + " bytes of dynamic shared memory");
            }
            // The largest dynamic shared size the device allows per block without opt-in.
            int bytes = h.device().maxSharedMemoryPerBlock();
            h.memset(out, 0);
            h.launch(dynamicShared(), Dim3.of(1), Dim3.of(64), bytes, out);
            float[] got = new float[1];
            out.download(got);
            assertEquals(64 * 65 / 2.0f, got[0], "with " + bytes + " bytes of dynamic shared memory");
        }
    }

    @StandInCapable
    @Test
    void anEmptyKernelLaunchesWithAnyLegalShape() {
        try (Handle h = Handle.create(0)) {
            Device d = h.device();
            h.launch(empty(), Dim3.of(1), Dim3.of(1), 0);
            h.launch(empty(), Dim3.of(2, 3, 4), Dim3.of(8, 4, 2), 0);
            h.launch(empty(), Dim3.of(1), Dim3.of(d.maxThreadsPerBlock()), 0);
            h.launch(empty(), Dim3.of(1, d.maxGridDim(1), 1), Dim3.of(1), 0);
            h.launch(empty(), Dim3.of(1), Dim3.of(1, 1, d.maxBlockDim(2)), 0);
            h.launch(empty().newLaunch().grid(100_000).block(32));
            h.synchronize();
        }
    }

    // ---------------------------------------------------------------- bad launches (K2)

    @StandInCapable
    @Test
    void theWrongArgumentCountIsAnIllegalArgument() {
        Kernel k = addOne();
        assumeTrue(parameterChecksActive(k), "the driver cannot report parameter sizes (before CUDA 12.4): launches are unchecked");
        try (Handle h = Handle.create(0); DeviceBuffer b = h.allocate(64)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> h.launch(k, Dim3.of(1), Dim3.of(32), 0, b));
            assertContains(e.getMessage(), "'cuh_test_add_one'", "2 parameters", "1 arguments");
            e = assertThrows(IllegalArgumentException.class, () -> h.launch(k, Dim3.of(1), Dim3.of(32), 0, b, 16, 16));
            assertContains(e.getMessage(), "'cuh_test_add_one'", "2 parameters", "3 arguments");
            e = assertThrows(IllegalArgumentException.class, () -> h.launch(k, Dim3.of(1), Dim3.of(32), 0));
            assertContains(e.getMessage(), "0 arguments");
            e = assertThrows(IllegalArgumentException.class, () -> h.launch(empty(), Dim3.of(1), Dim3.of(1), 0, 1));
            assertContains(e.getMessage(), "'cuh_test_empty'", "0 parameters");
            // The handle is fine afterwards: nothing reached the GPU.
            h.synchronize();
            assertEquals(0L, current());
        }
    }

    @StandInCapable
    @Test
    void theWrongArgumentSizeIsAnIllegalArgumentNamingKernelParameterAndSizes() {
        Kernel k = params();
        assumeTrue(parameterChecksActive(k), "the driver cannot report parameter sizes (before CUDA 12.4): launches are unchecked");
        try (Handle h = Handle.create(0); DeviceBuffer out = h.allocate(56); DeviceBuffer p = h.allocate(16)) {
            // An int where the long long b (parameter 2) is expected.
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> h.launch(k, Dim3.of(1), Dim3.of(1), 0, out, 1, 2, 3f, 4.0, (short) 5, (byte) 6, p));
            assertContains(e.getMessage(), "'cuh_test_params'", "parameter 2", "8 bytes", "4 bytes");
            // A double where the float c (parameter 3) is expected.
            e = assertThrows(IllegalArgumentException.class, () -> h.launch(k, Dim3.of(1), Dim3.of(1), 0, out, 1, 2L, 3.0, 4.0, (short) 5, (byte) 6, p));
            assertContains(e.getMessage(), "'cuh_test_params'", "parameter 3", "4 bytes", "8 bytes", "a Java double", "pass a float (2.0f, not 2.0)");
            // An int where the short e (parameter 5) is expected.
            e = assertThrows(IllegalArgumentException.class, () -> h.launch(k, Dim3.of(1), Dim3.of(1), 0, out, 1, 2L, 3f, 4.0, 5, (byte) 6, p));
            assertContains(e.getMessage(), "parameter 5", "2 bytes", "4 bytes");
            // An int where the pointer out (parameter 0) is expected.
            e = assertThrows(IllegalArgumentException.class, () -> h.launch(k, Dim3.of(1), Dim3.of(1), 0, 0, 1, 2L, 3f, 4.0, (short) 5, (byte) 6, p));
            assertContains(e.getMessage(), "parameter 0", "8 bytes", "4 bytes");
            // A byte where the int n of cuh_test_add_one is expected, through a reusable launch.
            KernelLaunch l = addOne().newLaunch().arg(0, out).arg(1, (byte) 3);
            e = assertThrows(IllegalArgumentException.class, () -> h.launch(l));
            assertContains(e.getMessage(), "'cuh_test_add_one'", "parameter 1", "4 bytes", "1 bytes");
            h.synchronize();
        }
    }

    @Test
    void anUnsupportedArgumentTypeIsAnIllegalArgument() {
        try (Handle h = Handle.create(0); DeviceBuffer b = h.allocate(64)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> h.launch(addOne(), Dim3.of(1), Dim3.of(1), 0, b, "16"));
            assertContains(e.getMessage(), "'cuh_test_add_one'", "argument 1", "java.lang.String");
            e = assertThrows(IllegalArgumentException.class, () -> h.launch(addOne(), Dim3.of(1), Dim3.of(1), 0, null, 16));
            assertContains(e.getMessage(), "argument 0", "null");
            e = assertThrows(IllegalArgumentException.class, () -> h.launch(addOne(), Dim3.of(1), Dim3.of(1), 0, new float[16], 16));
            assertContains(e.getMessage(), "argument 0");
            // A failed varargs launch leaves the per-thread launch usable.
            float[] zeros = new float[16];
            h.copyToDevice(zeros, 0, b, 16);
            h.launch(addOne(), Dim3.of(1), Dim3.of(32), 0, b, 16);
            float[] out = new float[16];
            b.download(out);
            assertExact(plusOne(zeros, 0, 16), out, "a good launch after refused ones");
        }
    }

    @StandInCapable
    @Test
    void aGridTooLargeOrEmptyIsAnIllegalArgument() {
        try (Handle h = Handle.create(0)) {
            Device d = h.device();
            Kernel k = empty();
            Dim3[] bad = {Dim3.of(0), Dim3.of(-1), Dim3.of(1, 0), Dim3.of(1, 1, 0), Dim3.of(1, d.maxGridDim(1) + 1),
                Dim3.of(1, 1, d.maxGridDim(2) + 1), Dim3.of(Integer.MIN_VALUE)};
            for (Dim3 grid : bad) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> h.launch(k, grid, Dim3.of(32), 0), "grid " + grid);
                assertContains(e.getMessage(), "grid (" + grid.x + ", " + grid.y + ", " + grid.z + ")", "'cuh_test_empty'",
                        String.valueOf(d.maxGridDim(1)));
            }
            h.synchronize();
        }
    }

    @StandInCapable
    @Test
    void aBlockTooLargeOrEmptyIsAnIllegalArgument() {
        try (Handle h = Handle.create(0)) {
            Device d = h.device();
            Kernel k = empty();
            Dim3[] bad = {Dim3.of(0), Dim3.of(-32), Dim3.of(d.maxThreadsPerBlock() + 1), Dim3.of(d.maxBlockDim(0) + 1),
                Dim3.of(1, d.maxBlockDim(1) + 1), Dim3.of(1, 1, d.maxBlockDim(2) + 1), Dim3.of(32, 32, 2) /* each legal, 2048 in all */,
                Dim3.of(1, 0, 1)};
            for (Dim3 block : bad) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> h.launch(k, Dim3.of(1), block, 0), "block " + block);
                assertContains(e.getMessage(), "block (" + block.x + ", " + block.y + ", " + block.z + ")", "'cuh_test_empty'",
                        String.valueOf(d.maxThreadsPerBlock()));
            }
            // The same through a reusable launch.
            KernelLaunch l = k.newLaunch().block(d.maxThreadsPerBlock() * 2);
            assertThrows(IllegalArgumentException.class, () -> h.launch(l));
            h.synchronize();
        }
    }

    @StandInCapable
    @Test
    void tooMuchOrNegativeDynamicSharedMemoryIsAnIllegalArgument() {
        try (Handle h = Handle.create(0); DeviceBuffer out = h.allocate(4)) {
            // Up to the opt-in limit a launch opts the kernel in (KernelLaunchFeaturesGpuTest); above it, refused.
            int max = h.device().maxSharedMemoryPerBlockOptin();
            for (int bytes : new int[] {-1, max + 1, Integer.MAX_VALUE}) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> h.launch(dynamicShared(), Dim3.of(1), Dim3.of(32), bytes, out));
                assertContains(e.getMessage(), String.valueOf(bytes), "'cuh_test_dynamic_shared'", String.valueOf(max));
            }
            h.synchronize();
        }
    }

    @StandInCapable
    @Test
    void aClosedBufferArgumentIsAnIllegalState() {
        try (Handle h = Handle.create(0)) {
            DeviceBuffer b = h.allocate(64);
            KernelLaunch prepared = addOne().newLaunch().grid(1).block(32).arg(0, b).arg(1, 16);
            h.launch(prepared);
            h.synchronize();
            b.close();
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> h.launch(addOne(), Dim3.of(1), Dim3.of(32), 0, b, 16));
            assertContains(e.getMessage(), "closed");
            assertThrows(IllegalStateException.class, () -> h.launch(prepared), "a prepared launch still holding the closed buffer");
            DeviceBuffer slice = b.slice(0, 32);
            assertThrows(IllegalStateException.class, () -> h.launch(addOne(), Dim3.of(1), Dim3.of(32), 0, slice, 8),
                    "a slice of a closed buffer");
            // A buffer closed before anything read its address: refused at arg(), the launch unchanged.
            DeviceBuffer neverRead = h.allocate(64);
            neverRead.close();
            KernelLaunch later = addOne().newLaunch().grid(1).block(32).arg(1, 16);
            IllegalStateException early = assertThrows(IllegalStateException.class, () -> later.arg(0, neverRead));
            assertContains(early.getMessage(), "closed");
            try (DeviceBuffer open = h.allocate(64)) {
                h.memset(open, 0);
                h.launch(later.arg(0, open));
                h.synchronize();
                if (!StandIn.active()) { // the stand-in runs no kernel code
                    float[] back = new float[16];
                    open.download(back);
                    assertEquals(1f, back[15], "the launch works once given an open buffer");
                }
            }
            h.synchronize();
        }
    }

    /** K3: a buffer of a handle on a user context, used with a handle of the primary context. */
    @Test
    void aBufferOfAnotherContextIsAnIllegalArgument() {
        long user = 0;
        Handle onUser = null;
        Handle onPrimary = null;
        DeviceBuffer foreign = null;
        try {
            user = newUserContext(0);
            onUser = Handle.wrap(user);
            onPrimary = Handle.create(0);
            foreign = onUser.upload(new float[64]);
            Handle primary = onPrimary;
            DeviceBuffer f = foreign;
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> primary.launch(addOne(), Dim3.of(1), Dim3.of(64), 0, f, 64));
            assertContains(e.getMessage(), "context id " + onUser.contextId(), "context id " + onPrimary.contextId());
            KernelLaunch prepared = addOne().newLaunch().grid(1).block(64).arg(0, f).arg(1, 64);
            assertThrows(IllegalArgumentException.class, () -> primary.launch(prepared));
            assertThrows(IllegalArgumentException.class, () -> primary.launch(addOne(), Dim3.of(1), Dim3.of(64), 0, f.slice(0, 128), 32),
                    "a slice of a foreign buffer");
            // The buffer works with its own context's handle.
            onUser.launch(prepared);
            float[] out = new float[64];
            foreign.download(out);
            assertExact(plusOne(new float[64], 0, 64), out, "the buffer with its own handle");
            assertEquals(0L, current());
        } finally {
            closeQuietly(foreign);
            closeQuietly(onPrimary);
            closeQuietly(onUser);
            destroyQuietly(user);
        }
    }

    @StandInCapable
    @Test
    void aLaunchOnAClosedHandleIsAnIllegalState() {
        Handle h = Handle.create(0);
        DeviceBuffer b = h.allocate(64);
        b.close();
        h.close();
        assertThrows(IllegalStateException.class, () -> h.launch(empty(), Dim3.of(1), Dim3.of(1), 0));
        assertThrows(IllegalStateException.class, () -> h.launch(empty().newLaunch()));
    }
}
