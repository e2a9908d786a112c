package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Loading modules (rule H10): every way in (byte[], file, class-path resource, PTX through the
 * JIT), what a loaded library tells about its kernels (names, parameter sizes, attributes), unknown
 * kernels, and closing. Every library loaded here is checked by launching a kernel of it and
 * comparing with the CPU. Bad images are in {@link LibraryLoadBadImageGpuTest}.
 */
@GpuTest
class LibraryLoadGpuTest extends KernelGpuTestBase {
    static final List<String> TEST_KERNELS = Arrays.asList("cuh_test_add_one", "cuh_test_dynamic_shared", "cuh_test_empty", "cuh_test_fault",
            "cuh_test_params", "cuh_test_spin");

    /** A hand-written PTX module (like anchors.cu's): {@code k(unsigned* p, unsigned v)} stores v to *p. */
    static final String STORE_PTX = ".version 7.8\n.target sm_52\n.address_size 64\n"
            + ".visible .entry cuh_store(.param .u64 p, .param .u32 v)\n{\n"
            + "  .reg .b64 %rd<2>;\n  .reg .b32 %r<2>;\n"
            + "  ld.param.u64 %rd1, [p];\n  ld.param.u32 %r1, [v];\n  cvta.to.global.u64 %rd1, %rd1;\n"
            + "  st.global.u32 [%rd1], %r1;\n  ret;\n}\n";

    /** Looks cuh_test_add_one up in {@code lib}, runs it once on fresh random data and compares with the CPU. */
    static void assertAddOneWorks(Library lib, String what) {
        Kernel k = lookUp(lib, "cuh_test_add_one");
        assertSame(lib, k.library());
        assertEquals("cuh_test_add_one", k.name());
        Random r = freshRandom(what);
        int n = 1000 + r.nextInt(5000);
        float[] x = randomFloats(r, n);
        try (Handle h = Handle.create(0); DeviceBuffer b = h.upload(x)) {
            h.launch(k, gridFor(n), Dim3.of(BLOCK), 0, b, n);
            float[] out = new float[n];
            b.download(out);
            assertExact(plusOne(x, 0, n), out, what + ": cuh_test_add_one");
        }
        assertEquals(0L, current(), what + ": nothing current afterwards (H4)");
    }

    @Test
    void loadsAFatbinFromAByteArray() {
        byte[] image = fatbinBytes();
        assertEquals(0xBA55ED50, (image[0] & 0xFF) | (image[1] & 0xFF) << 8 | (image[2] & 0xFF) << 16 | (image[3] & 0xFF) << 24,
                "the test image is a fatbin");
        try (Library lib = Library.load(image)) {
            assertFalse(lib.isClosed());
            assertAddOneWorks(lib, "fatbin from byte[]");
        }
    }

    @Test
    void theImageArrayMayBeReusedAfterLoading() {
        byte[] image = fatbinBytes();
        try (Library lib = Library.load(image)) {
            Arrays.fill(image, (byte) 0); // the library must have its own copy
            assertAddOneWorks(lib, "fatbin whose byte[] was zeroed after loading");
        }
    }

    @Test
    void loadsAFatbinFromAFile(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("test_kernels.fatbin");
        Files.write(file, fatbinBytes());
        try (Library lib = Library.load(file)) {
            assertAddOneWorks(lib, "fatbin from a file");
        }
    }

    @Test
    void loadsAFatbinFromAClassPathResource() {
        try (Library lib = Library.loadResource(TestKernels.class, TestKernels.FATBIN)) {
            assertAddOneWorks(lib, "fatbin from a class-path resource");
        }
    }

    @Test
    void loadsPtxThroughTheJit() {
        byte[] ptx = ptxBytes();
        assertTrue(new String(ptx, StandardCharsets.US_ASCII).contains(".entry cuh_test_add_one"), "the PTX resource holds the test kernels");
        try (Library lib = TestKernels.loadPtx()) {
            assertAddOneWorks(lib, "PTX resource (JIT)");
            Kernel params = lookUpInPrimaryContext(lib, "cuh_test_params");
            if (sizesReported()) {
                assertEquals(8, params.parameterCount(), "parameters of cuh_test_params in the PTX module");
            }
        }
    }

    @Test
    void loadsHandWrittenPtxAndItsKernelStoresItsArgument() {
        Random r = freshRandom("hand-written PTX");
        int value = r.nextInt();
        try (Library lib = Library.load(STORE_PTX.getBytes(StandardCharsets.US_ASCII)); Handle h = Handle.create(0);
                DeviceBuffer out = h.allocate(4)) {
            Kernel k = lookUpInPrimaryContext(lib, "cuh_store");
            if (sizesReported()) {
                assertEquals(2, k.parameterCount());
                assertEquals(8, k.parameterSize(0));
                assertEquals(4, k.parameterSize(1));
            }
            h.memset(out, 0);
            h.launch(k, Dim3.of(1), Dim3.of(1), 0, out, value);
            int[] got = new int[1];
            out.download(got);
            assertEquals(value, got[0], "the PTX kernel stored its argument");
        }
    }

    @StandInCapable
    @Test
    void listsItsKernels() {
        List<String> names = kernels().kernelNames();
        assumeFalse(names.isEmpty(), "this driver cannot enumerate a library's kernels (before CUDA 12.4)");
        assertTrue(names.containsAll(TEST_KERNELS), "kernelNames() " + names + " should contain " + TEST_KERNELS);
        assertThrows(UnsupportedOperationException.class, () -> names.add("x"), "the list is unmodifiable");
    }

    /** cuKernelGetParamInfo exists from CUDA 12.4 on. */
    static boolean sizesReported() {
        return Cuda.driverVersion() >= 12040;
    }

    /** Looked up with a context current, a kernel knows its parameter sizes at once (K2). */
    @StandInCapable
    @Test
    void knowsParameterSizes() {
        assumeTrue(sizesReported(), "the driver cannot report parameter sizes (before CUDA 12.4)");
        Kernel add = addOne();
        assertEquals(2, add.parameterCount(), "cuh_test_add_one(float* x, int n)");
        assertEquals(8, add.parameterSize(0));
        assertEquals(4, add.parameterSize(1));
        assertEquals(0, empty().parameterCount(), "cuh_test_empty()");
        assertEquals(1, spin().parameterCount(), "cuh_test_spin(long long)");
        assertEquals(8, spin().parameterSize(0));
        // cuh_test_params(long long* out, int a, long long b, float c, double d, short e, signed char f, float* p)
        int[] sizes = {8, 4, 8, 4, 8, 2, 1, 8};
        Kernel p = params();
        assertEquals(sizes.length, p.parameterCount());
        for (int i = 0; i < sizes.length; i++) {
            assertEquals(sizes[i], p.parameterSize(i), "cuh_test_params parameter " + i);
        }
        assertTrue(p.toString().contains("cuh_test_params") && p.toString().contains("8 parameters"), p.toString());
    }

    /**
     * H10: a lookup needs no current context. The driver reports parameter sizes only with a
     * context current, so such a kernel probes them at its first launch (in the launching handle's
     * context): a bad first launch is still refused (K2), and afterwards the sizes are known.
     */
    @Test
    void aKernelLookedUpWithNothingCurrentIsCheckedFromItsFirstLaunch() {
        try (Library lib = TestKernels.load(); Handle h = Handle.create(0); DeviceBuffer b = h.allocate(64)) {
            assertEquals(0L, current());
            Kernel k = lib.kernel("cuh_test_add_one");
            assertEquals(0L, current(), "H4: a lookup leaves nothing current");
            assertTrue(k.parameterCount() == -1 || k.parameterCount() == 2, "before the first launch: unknown (-1) or 2, got " + k.parameterCount());
            if (sizesReported()) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> h.launch(k, Dim3.of(1), Dim3.of(16), 0, b, 16L));
                assertContains(e.getMessage(), "'cuh_test_add_one'", "parameter 1", "4 bytes", "8 bytes");
                assertEquals(2, k.parameterCount(), "the sizes are known after the first (refused) launch");
            }
            h.memset(b, 0);
            h.launch(k, Dim3.of(1), Dim3.of(16), 0, b, 16);
            float[] out = new float[16];
            b.download(out);
            assertExact(plusOne(new float[16], 0, 16), out, "the first good launch");
            if (sizesReported()) {
                assertEquals(2, k.parameterCount());
                assertEquals(8, k.parameterSize(0));
                assertEquals(4, k.parameterSize(1));
            }
            // Looked up from a fresh thread (nothing current there either), launched here.
            Kernel fromThread = java.util.concurrent.CompletableFuture.supplyAsync(() -> lib.kernel("cuh_test_empty")).join();
            h.launch(fromThread, Dim3.of(1), Dim3.of(1), 0);
            h.synchronize();
            assertEquals(0L, current());
        }
    }

    /** H10 and H4: lookups and attribute queries need no current context and leave none. */
    @StandInCapable
    @Test
    void kernelAttributesArePlausibleWithNoContextCurrent() {
        try (Library lib = TestKernels.load()) {
            assertEquals(0L, current());
            Kernel k = lookUp(lib, "cuh_test_add_one");
            assertEquals(0L, current());
            Device d = Cuda.device(0);
            int maxThreads = k.maxThreadsPerBlock(0);
            assertTrue(maxThreads > 0 && maxThreads <= d.maxThreadsPerBlock(),
                    "max threads per block " + maxThreads + " should be in (0, " + d.maxThreadsPerBlock() + "]");
            int registers = k.registers(0);
            assertTrue(registers >= 0 && registers <= 255, "registers " + registers);
            assertTrue(k.staticSharedBytes(0) >= 0, "static shared bytes");
            assertEquals(maxThreads, k.attribute(Kernel.ATTRIBUTE_MAX_THREADS_PER_BLOCK, 0), "attribute() and maxThreadsPerBlock() agree");
            Kernel shared = lookUp(lib, "cuh_test_dynamic_shared");
            assertEquals(0, shared.staticSharedBytes(0), "cuh_test_dynamic_shared uses only dynamic (extern) shared memory");
            assertEquals(0L, current(), "H4: attribute queries leave nothing current");
        }
    }

    @StandInCapable
    @Test
    void kernelAttributeOfAnInvalidDeviceIsACudaException() {
        Kernel k = addOne();
        CudaException e = assertThrows(CudaException.class, () -> k.maxThreadsPerBlock(Cuda.deviceCount() + 7));
        assertTrue(e.code() != 0);
        assertEquals(0L, current());
    }

    @StandInCapable
    @Test
    void anUnknownKernelIsAnIllegalArgumentNamingItAndListingTheKernels() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> kernels().kernel("cuh_test_no_such_kernel"));
        assertContains(e.getMessage(), "'cuh_test_no_such_kernel'");
        if (!kernels().kernelNames().isEmpty()) {
            for (String name : TEST_KERNELS) {
                assertContains(e.getMessage(), name);
            }
        }
        assertEquals(0L, current());
    }

    @StandInCapable
    @Test
    void aMangledOrMisspelledNameIsUnknown() {
        // C++ names are mangled; the test kernels are extern "C", so a case change is a different name.
        assertThrows(IllegalArgumentException.class, () -> kernels().kernel("CUH_TEST_ADD_ONE"));
        assertThrows(IllegalArgumentException.class, () -> kernels().kernel(""));
    }

    /**
     * A Java string with a NUL character never names a kernel. (JNI passes it as modified UTF-8,
     * where NUL is the two bytes C0 80, so it arrives as an unknown name, not as a C string cut short
     * at the NUL: "cuh_test_add_one\0x" must not find cuh_test_add_one.)
     */
    @StandInCapable
    @Test
    void aKernelNameWithANulCharacterIsAnIllegalArgument() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> kernels().kernel("cuh_test_add_one\0x"));
        assertContains(e.getMessage(), "'cuh_test_add_one");
    }

    @StandInCapable
    @Test
    void aNullKernelNameIsANullPointer() {
        assertThrows(NullPointerException.class, () -> kernels().kernel(null));
    }

    @Test
    void oneLibraryLaunchesInThePrimaryAndAUserContext() {
        Random r = freshRandom("one library, two contexts");
        long user = 0;
        Handle onPrimary = null;
        Handle onUser = null;
        try (Library lib = TestKernels.load()) {
            Kernel k = lookUp(lib, "cuh_test_add_one");
            user = newUserContext(0);
            onPrimary = Handle.create(0);
            onUser = Handle.wrap(user);
            assertTrue(onPrimary.contextId() != onUser.contextId(), "two different contexts");
            for (Handle h : new Handle[] {onPrimary, onUser, onPrimary, onUser}) {
                int n = 1 + r.nextInt(100_000);
                float[] x = randomFloats(r, n);
                try (DeviceBuffer b = h.upload(x)) {
                    h.launch(k, gridFor(n), Dim3.of(BLOCK), 0, b, n);
                    float[] out = new float[n];
                    b.download(out);
                    assertExact(plusOne(x, 0, n), out, "cuh_test_add_one on " + h);
                }
                assertEquals(0L, current(), "H4");
            }
        } finally {
            closeQuietly(onPrimary);
            closeQuietly(onUser);
            destroyQuietly(user);
        }
    }

    @Test
    void aKernelOfAClosedLibraryIsAnIllegalState() {
        Library lib = TestKernels.load();
        Kernel k = lookUp(lib, "cuh_test_add_one");
        KernelLaunch prepared = k.newLaunch();
        try (Handle h = Handle.create(0); DeviceBuffer b = h.upload(new float[16])) {
            h.launch(k, Dim3.of(1), Dim3.of(32), 0, b, 16); // works while open
            h.synchronize();
            prepared.grid(1).block(32).arg(0, b).arg(1, 16);
            lib.close();
            assertTrue(lib.isClosed());
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> h.launch(k, Dim3.of(1), Dim3.of(32), 0, b, 16));
            assertContains(e.getMessage(), "closed");
            assertThrows(IllegalStateException.class, () -> h.launch(prepared), "a prepared launch of the closed library's kernel");
            assertThrows(IllegalStateException.class, () -> prepared.launch(h));
            assertThrows(IllegalStateException.class, () -> k.maxThreadsPerBlock(0), "attributes of a closed library's kernel");
            assertThrows(IllegalStateException.class, () -> lib.kernel("cuh_test_add_one"), "lookups in a closed library");
            assertThrows(IllegalStateException.class, lib::kernelNames);
            lib.close(); // idempotent
            // The handle and the buffer are unaffected.
            h.launch(addOne(), Dim3.of(1), Dim3.of(32), 0, b, 16);
            float[] out = new float[16];
            b.download(out);
            float[] expected = new float[16];
            Arrays.fill(expected, 2.0f);
            assertExact(expected, out, "two launches of cuh_test_add_one (one before the close, one with another library's kernel)");
        } finally {
            lib.close();
        }
    }

    @Test
    void closingOneLibraryLeavesAnotherLoadOfTheSameImageWorking() {
        Library first = TestKernels.load();
        try (Library second = TestKernels.load()) {
            lookUp(first, "cuh_test_add_one");
            first.close();
            assertAddOneWorks(second, "second load of the same fatbin after the first was closed");
        } finally {
            first.close();
        }
    }
}
