package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.Random;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link Library#compile(Handle, String, CompileOptions)}: compiled for the handle's device, loaded, its kernels
 * found with the parameters of the source, and (on a real GPU) computing what the CPU computes.
 */
@GpuTest
class RuntimeCompileGpuTest extends KernelGpuTestBase {
    /** Parameters of every size class: 4, 8 (pointer), 8, 2, 1, 4 bytes (the body need not use them). */
    private static final String MIXED = """
            extern "C" __global__ void mixed(float a, const double* x, long long b, short s, char c, int n) {}
            """;

    private static final String SAXPY = """
            #include "saxpy_config.h"
            // y = a * x + y, one fused multiply-add per element (bit-exact against Math.fma).
            extern "C" __global__ void SAXPY_NAME(REAL a, const REAL* x, REAL* y, int n) {
                for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
                    y[i] = fmaf(a, x[i], y[i]);
                }
            }
            """;

    @BeforeEach
    void nvrtcIsThere() {
        try {
            RuntimeCompiler.nvrtc();
        } catch (CudaException e) {
            assertFalse(Boolean.getBoolean("cuhandle.requireNvrtc"), "NVRTC must be found on a machine that builds cuhandle: " + e.getMessage());
            assumeTrue(false, "NVRTC is not installed: " + e.getMessage());
        }
    }

    @StandInCapable
    @Test
    void compiledForTheHandlesDeviceItLoadsAndItsKernelHasTheSourcesParameters() {
        try (Handle h = Handle.create(0); DeviceBuffer x = h.allocate(64)) {
            int cc = 10 * h.device().computeCapabilityMajor() + h.device().computeCapabilityMinor();
            String target = RuntimeCompiler.target(CompileOptions.defaults(), new int[] {cc});
            assertTrue(target.equals("sm_" + cc) || target.startsWith("compute_"), "the device's machine code, or PTX for a newer device: " + target);
            // PTX for the device's architecture: the stand-in reads parameters from PTX (not cubins).
            try (Library lib = Library.compile(h, MIXED, CompileOptions.defaults().ptxOnly(true))) {
                Kernel k = lib.kernel("mixed");
                h.launch(k, Dim3.of(1), Dim3.of(32), 0, 1.5f, x, 2L, (short) 3, (byte) 4, 5);
                h.synchronize();
                assumeTrue(parameterChecksActive(k), "the driver cannot report parameter sizes (before CUDA 12.4)");
                assertEquals(6, k.parameterCount());
                int[] sizes = new int[6];
                for (int i = 0; i < 6; i++) {
                    sizes[i] = k.parameterSize(i);
                }
                assertArrayEquals(new int[] {4, 8, 8, 2, 1, 4}, sizes);
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> h.launch(k, Dim3.of(1), Dim3.of(32), 0, 1.5f, x, 2, (short) 3, (byte) 4, 5));
                assertContains(e.getMessage(), "'mixed'", "parameter 2", "8 bytes", "4 bytes");
            }
            // Default options: machine code where NVRTC knows the device; it loads and the kernel is found.
            try (Library lib = Library.compile(h, MIXED, CompileOptions.defaults())) {
                assertEquals("mixed", lib.kernel("mixed").name());
            }
            // Without a handle: for every device of the machine.
            try (Library lib = Library.compile(MIXED, CompileOptions.defaults())) {
                assertEquals("mixed", lib.kernel("mixed").name());
            }
            h.synchronize();
        }
    }

    @StandInCapable
    @Test
    void everyCompileLoadsItsOwnLibraryWhileTheImageIsCached() {
        String source = MIXED + "// everyCompileLoadsItsOwnLibrary " + System.nanoTime() + "\n";
        CompileOptions options = CompileOptions.defaults().ptxOnly(true);
        try (Handle h = Handle.create(0)) {
            long before = RuntimeCompiler.compileCount();
            Library first = Library.compile(h, source, options);
            Library second = Library.compile(h, source, options);
            assertEquals(before + 1, RuntimeCompiler.compileCount(), "the second call used the cached image");
            assertNotSame(first, second);
            first.close();
            assertTrue(first.isClosed());
            assertFalse(second.isClosed(), "closing one library does not touch the other");
            assertEquals("mixed", second.kernel("mixed").name());
            second.close();
            IllegalStateException closed = assertThrows(IllegalStateException.class, () -> first.kernel("mixed"));
            assertContains(closed.getMessage(), "closed");
        }
    }

    /** Issue 20: the compiled image is there to keep or ship, and loads again without NVRTC. */
    @StandInCapable
    @Test
    void theCompiledImageCanBeKeptAndLoadedAgain() {
        try (Handle h = Handle.create(0)) {
            byte[] image;
            try (Library lib = Library.compile(h, MIXED, CompileOptions.defaults().ptxOnly(true))) {
                image = lib.compiledImage();
                assertTrue(lib.compiledArchitecture().startsWith("compute_"), lib.compiledArchitecture());
                String ptx = new String(image, java.nio.charset.StandardCharsets.US_ASCII);
                assertTrue(ptx.contains(".entry mixed(") && ptx.contains(".target sm_" + lib.compiledArchitecture().substring("compute_".length())), ptx);
                image[0] ^= 1;
                assertTrue(lib.compiledImage()[0] != image[0], "every call returns a copy: the library's image is not changed through it");
                image[0] ^= 1;
            }
            try (Library again = Library.load(image)) {
                assertEquals(6, again.kernel("mixed").parameterCount(), "the parameters, from the driver or the image");
                IllegalStateException e = assertThrows(IllegalStateException.class, again::compiledImage);
                assertContains(e.getMessage(), "not compiled by Library.compile");
            }
            try (Library cubin = Library.compile(h, MIXED, CompileOptions.defaults())) {
                byte[] machineCode = cubin.compiledImage();
                boolean elf = machineCode.length > 4 && machineCode[0] == 0x7f && machineCode[1] == 'E' && machineCode[2] == 'L' && machineCode[3] == 'F';
                assertEquals(cubin.compiledArchitecture().startsWith("sm_"), elf, "a cubin for sm_XY, PTX for compute_XY: " + cubin.compiledArchitecture());
            }
        }
    }

    @StandInCapable
    @Test
    void aCompileErrorThroughLibraryCompileIsACompileException() {
        try (Handle h = Handle.create(0)) {
            CompileException e = assertThrows(CompileException.class,
                    () -> Library.compile(h, "extern \"C\" __global__ void k() {\n  missing();\n}\n", CompileOptions.defaults().programName("k.cu")));
            assertContains(e.getLog(), "k.cu(2)", "missing");
        }
        Handle closed = Handle.create(0);
        closed.close();
        assertThrows(IllegalStateException.class, () -> Library.compile(closed, MIXED, CompileOptions.defaults()));
    }

    /** Not on the stand-in: the kernel must execute. Both the machine-code and the PTX (JIT) paths. */
    @Test
    void aCompiledSaxpyMatchesTheCpuOnFreshRandomData() {
        Random r = freshRandom("compiled saxpy");
        CompileOptions options = CompileOptions.defaults()
                .programName("saxpy.cu")
                .header("saxpy_config.h", "#define REAL float\n")
                .define("SAXPY_NAME", "compiled_saxpy");
        try (Handle h = Handle.create(0)) {
            for (CompileOptions o : new CompileOptions[] {options, options.ptxOnly(true)}) {
                try (Library lib = Library.compile(h, SAXPY, o)) {
                    Kernel saxpy = lib.kernel("compiled_saxpy");
                    for (int n : new int[] {1, 255, 256, 100_003, 1_000_000}) {
                        float a = (r.nextFloat() - 0.5f) * 8f;
                        float[] x = randomFloats(r, n);
                        float[] y = randomFloats(r, n);
                        float[] expected = new float[n];
                        for (int i = 0; i < n; i++) {
                            expected[i] = Math.fma(a, x[i], y[i]);
                        }
                        try (DeviceBuffer dx = h.upload(x); DeviceBuffer dy = h.upload(y)) {
                            h.launch(saxpy, gridFor(n), Dim3.of(BLOCK), 0, a, dx, dy, n);
                            float[] out = new float[n];
                            dy.download(out);
                            assertExact(expected, out, "compiled saxpy (" + o + "), n = " + n + ", a = " + a);
                        }
                    }
                }
            }
        }
    }

    /** The text-block example (dev.cuhandle.examples.CompileAndCountExample) counts what the CPU counts. */
    @Test
    void theTextBlockExampleCountsIntoItsManagedCounter() {
        long seed = System.nanoTime();
        java.util.Random random = new java.util.Random(seed);
        float[] x = new float[100_000 + random.nextInt(100_000)];
        long expected = 0;
        for (int i = 0; i < x.length; i++) {
            x[i] = random.nextFloat();
            expected += x[i] > 0.5f ? 1 : 0;
        }
        assertEquals(expected, dev.cuhandle.examples.CompileAndCountExample.countAbove(x, 0.5f), "count above 0.5 (seed " + seed + ")");
    }
}
