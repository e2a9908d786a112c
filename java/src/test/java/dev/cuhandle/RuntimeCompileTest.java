package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Run-time compilation without a GPU: NVRTC compiles to PTX and cubins, defines and headers take effect,
 * compile errors carry NVRTC's log, and identical compilations come from the cache. Needs NVRTC (CI's machines
 * have Debian's 11.8; the Maven build requires it through {@code cuhandle.requireNvrtc}, elsewhere the tests
 * skip without it). The tests compile for compute capability 7.5, the oldest that both Debian's NVRTC 11.8 and
 * NVRTC 13 (which dropped 7.0) support, so the same tests run in CI and on the GPU host.
 */
class RuntimeCompileTest {
    /** Each test's sources get a unique comment so that no test sees another one's cached image. */
    private static final AtomicInteger UNIQUE = new AtomicInteger();

    private static final String SAXPY = """
            extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) {
                    y[i] = fmaf(a, x[i], y[i]);
                }
            }
            """;

    @BeforeAll
    static void nvrtcIsThere() {
        try {
            RuntimeCompiler.nvrtc();
        } catch (CudaException e) {
            assertFalse(Boolean.getBoolean("cuhandle.requireNvrtc"), "NVRTC must be found on a machine that builds cuhandle (it has nvcc): " + e.getMessage());
            assumeTrue(false, "NVRTC is not installed: " + e.getMessage());
        }
    }

    private static String unique(String source) {
        return "// test source " + UNIQUE.incrementAndGet() + " of " + ProcessHandle.current().pid() + "\n" + source;
    }

    private static String ptx(String source, CompileOptions options) {
        byte[] image = RuntimeCompiler.image(source, options, RuntimeCompiler.target(options, null));
        return new String(image, StandardCharsets.US_ASCII);
    }

    @Test
    void nvrtcIsFoundAndSaysWhichItIs() {
        String[] nvrtc = RuntimeCompiler.nvrtc();
        assertTrue(nvrtc[0].matches("\\d+\\.\\d+"), "version: " + nvrtc[0]);
        assertTrue(Files.isRegularFile(Path.of(nvrtc[1])), "the loaded file exists: " + nvrtc[1]);
        assertTrue(Path.of(nvrtc[1]).getFileName().toString().startsWith("libnvrtc.so"), nvrtc[1]);
    }

    @Test
    void aKernelFromATextBlockCompilesToPtxForCompute75() {
        String ptx = ptx(unique(SAXPY), CompileOptions.defaults().architecture("compute_75"));
        assertTrue(ptx.contains(".target sm_75"), ptx);
        assertTrue(ptx.contains(".visible .entry saxpy("), ptx);
        // Four parameters: float, two pointers, int.
        assertTrue(ptx.contains(".param .f32 saxpy_param_0") && ptx.contains(".param .u64 saxpy_param_2") && ptx.contains(".param .u32 saxpy_param_3"), ptx);
        assertTrue(ptx.contains("fma.rn.f32"), "fmaf is one fused multiply-add: " + ptx);
    }

    @Test
    void theSameKernelCompilesToACubinForSm75() {
        CompileOptions options = CompileOptions.defaults().architecture("sm_75");
        assertEquals("sm_75", RuntimeCompiler.target(options, null));
        byte[] cubin = RuntimeCompiler.image(unique(SAXPY), options, "sm_75");
        assertTrue(cubin.length > 64 && cubin[0] == 0x7f && cubin[1] == 'E' && cubin[2] == 'L' && cubin[3] == 'F', "a cubin is an ELF file");
        assertTrue(new String(cubin, StandardCharsets.ISO_8859_1).contains("saxpy"), "the symbol table names the kernel");
    }

    /**
     * Issue 20 (8): a compile error carries NVRTC's own result (NVRTC_ERROR_COMPILATION, 6) and says it, not a
     * driver code (it said CUDA_ERROR_INVALID_SOURCE, 300), with the log, the program name and the architecture. It
     * stays a CudaException (code INVALID_SOURCE) for handlers of every CUDA failure.
     */
    @Test
    void aCompileErrorCarriesTheLogWithTheLineNumber() {
        String broken = """
                extern "C" __global__ void broken(float* y) {
                    int i = threadIdx.x;
                    y[i] = undeclared_value * 2.0f;
                }
                """;
        CompileOptions options = CompileOptions.defaults().programName("broken.cu").architecture("compute_75");
        CompileException e = assertThrows(CompileException.class, () -> RuntimeCompiler.image(broken, options, "compute_75"));
        assertTrue(e.getLog().contains("broken.cu(3): error"), e.getLog());
        assertTrue(e.getLog().contains("undeclared_value"), e.getLog());
        assertEquals(CompileException.NVRTC_ERROR_COMPILATION, e.nvrtcResult());
        assertEquals(6, e.nvrtcResult());
        assertEquals("NVRTC_ERROR_COMPILATION", e.nvrtcResultName());
        assertEquals("broken.cu", e.programName());
        assertEquals("compute_75", e.architecture());
        assertTrue(e.getMessage().startsWith("nvrtcCompileProgram failed: NVRTC_ERROR_COMPILATION (6): broken.cu did not compile for compute_75:"), e.getMessage());
        assertTrue(e.getMessage().contains("broken.cu(3): error"), e.getMessage());
        assertTrue(!e.getMessage().contains("CUDA_ERROR"), "no driver code in the message: " + e.getMessage());
        assertTrue(CudaException.class.isInstance(e), "still a CudaException for handlers of every CUDA failure");
        assertEquals(CudaError.INVALID_SOURCE, e.error());
    }

    @Test
    void definesAndHeaderStringsTakeEffect() {
        String source = unique("""
                #include "constants.h"
                extern "C" __global__ void KERNEL_NAME(float* y) {
                    y[threadIdx.x] *= SCALE * OFFSET;
                }
                """);
        CompileOptions options = CompileOptions.defaults().architecture("compute_75")
                .define("KERNEL_NAME", "named_by_a_define")
                .header("constants.h", "#define SCALE 3.0f\n");
        String ptx = ptx(source, options.define("OFFSET", "5.0f"));
        assertTrue(ptx.contains(".entry named_by_a_define("), ptx);
        // SCALE * OFFSET = 15.0f, folded into the multiplication by 0f41700000.
        assertTrue(ptx.contains("0f41700000"), ptx);
        String other = ptx(source, options.define("OFFSET", "7.0f")); // 21.0f
        assertTrue(other.contains("0f41A80000") && !other.contains("0f41700000"), other);
        CompileException missing = assertThrows(CompileException.class, () -> ptx(source, CompileOptions.defaults().architecture("compute_75")));
        assertTrue(missing.getLog().contains("constants.h"), "without the header the include fails: " + missing.getLog());
    }

    @Test
    void identicalCompilesComeFromTheCacheWithoutCallingNvrtc() {
        String source = unique(SAXPY);
        CompileOptions options = CompileOptions.defaults().architecture("compute_75").define("A").header("a.h", "//a").header("b.h", "//b");
        long before = RuntimeCompiler.compileCount();
        byte[] first = RuntimeCompiler.image(source, options, "compute_75");
        assertEquals(before + 1, RuntimeCompiler.compileCount());
        byte[] again = RuntimeCompiler.image(source, options, "compute_75");
        assertSame(first, again, "the cached image");
        // Equal options built separately, headers in the other order: still the same inputs.
        CompileOptions same = CompileOptions.defaults().header("b.h", "//b").header("a.h", "//a").define("A").architecture("compute_75");
        assertSame(first, RuntimeCompiler.image(source, same, "compute_75"));
        assertEquals(before + 1, RuntimeCompiler.compileCount(), "no NVRTC call for identical inputs");
        // Any difference compiles anew: source, define, flag, header text, program name, architecture.
        RuntimeCompiler.image(source + " ", options, "compute_75");
        RuntimeCompiler.image(source, options.define("B"), "compute_75");
        RuntimeCompiler.image(source, options.fastMath(true), "compute_75");
        RuntimeCompiler.image(source, options.header("a.h", "//a2"), "compute_75");
        RuntimeCompiler.image(source, options.programName("x.cu"), "compute_75");
        RuntimeCompiler.image(source, options.architecture("compute_80"), "compute_80");
        assertEquals(before + 7, RuntimeCompiler.compileCount());
    }

    @Test
    void theDiskCacheServesAnotherProcessAndSurvivesDamage(@TempDir Path dir) throws Exception {
        String source = unique(SAXPY);
        CompileOptions options = CompileOptions.defaults().architecture("compute_75");
        String before = System.getProperty(DiskImageCache.DIR_PROPERTY);
        System.setProperty(DiskImageCache.DIR_PROPERTY, dir.toString());
        try {
            long compiles = RuntimeCompiler.compileCount();
            byte[] first = RuntimeCompiler.image(source, options, "compute_75");
            Path[] entries;
            try (java.util.stream.Stream<Path> files = Files.list(dir)) {
                entries = files.toArray(Path[]::new);
            }
            assertEquals(1, entries.length, "one entry, no temporary file left: " + java.util.Arrays.toString(entries));
            RuntimeCompiler.clearCache(); // as a new process: only the disk has it
            byte[] fromDisk = RuntimeCompiler.image(source, options, "compute_75");
            assertArrayEquals(first, fromDisk);
            assertEquals(compiles + 1, RuntimeCompiler.compileCount(), "served from disk without NVRTC");
            // A damaged entry is a miss, deleted and written anew.
            byte[] damaged = Files.readAllBytes(entries[0]);
            damaged[damaged.length - 1] ^= 1;
            Files.write(entries[0], damaged);
            RuntimeCompiler.clearCache();
            assertArrayEquals(first, RuntimeCompiler.image(source, options, "compute_75"));
            assertEquals(compiles + 2, RuntimeCompiler.compileCount(), "compiled again");
            RuntimeCompiler.clearCache();
            RuntimeCompiler.image(source, options, "compute_75");
            assertEquals(compiles + 2, RuntimeCompiler.compileCount(), "the rewritten entry serves again");
        } finally {
            if (before == null) {
                System.clearProperty(DiskImageCache.DIR_PROPERTY);
            } else {
                System.setProperty(DiskImageCache.DIR_PROPERTY, before);
            }
        }
    }

    @Test
    void theDiskCacheIsOffUnlessAskedFor() {
        assumeTrue(System.getProperty(DiskImageCache.DIR_PROPERTY) == null && System.getProperty(DiskImageCache.MODE_PROPERTY) == null,
                "the build configured a compile cache");
        assertEquals(null, DiskImageCache.folder(), "off by default");
        System.setProperty(DiskImageCache.MODE_PROPERTY, "disk");
        try {
            assertTrue(DiskImageCache.folder().toString().endsWith("cuhandle/nvrtc"), String.valueOf(DiskImageCache.folder()));
        } finally {
            System.clearProperty(DiskImageCache.MODE_PROPERTY);
        }
    }

    @Test
    void aFailedCompileIsNotCached() {
        String broken = unique("extern \"C\" __global__ void k() { nope(); }\n");
        CompileOptions options = CompileOptions.defaults().architecture("compute_75");
        long before = RuntimeCompiler.compileCount();
        assertThrows(CompileException.class, () -> RuntimeCompiler.image(broken, options, "compute_75"));
        assertThrows(CompileException.class, () -> RuntimeCompiler.image(broken, options, "compute_75"));
        assertEquals(before + 2, RuntimeCompiler.compileCount());
    }

    @Test
    void flagsNvrtcDoesNotKnowAreIllegalArguments() {
        CompileOptions options = CompileOptions.defaults().architecture("compute_75").flag("--no-such-nvrtc-flag");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RuntimeCompiler.image(unique(SAXPY), options, "compute_75"));
        assertTrue(e.getMessage().contains("--no-such-nvrtc-flag") && e.getMessage().contains("NVRTC_ERROR_INVALID_OPTION (5)"), e.getMessage());
        // Known flags pass through.
        String ptx = ptx(unique(SAXPY), CompileOptions.defaults().architecture("compute_75").flag("-lineinfo").standard("c++14"));
        assertTrue(ptx.contains(".loc"), "-lineinfo adds line information: " + ptx.substring(0, Math.min(400, ptx.length())));
    }

    @Test
    void anArchitectureNvrtcDoesNotSupportListsTheSupportedOnes() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> RuntimeCompiler.target(CompileOptions.defaults().architecture("sm_999"), null));
        assertTrue(e.getMessage().contains("cannot compile for sm_999") && e.getMessage().contains("75"), e.getMessage());
    }

    @Test
    void theDevicesArchitectureIsMachineCodeWhenNvrtcKnowsItAndPtxOtherwise() {
        CompileOptions defaults = CompileOptions.defaults();
        assertEquals("sm_75", RuntimeCompiler.target(defaults, new int[] {75}));
        assertEquals("compute_75", RuntimeCompiler.target(defaults.ptxOnly(true), new int[] {75}));
        assertEquals("compute_75", RuntimeCompiler.target(defaults, new int[] {75, 80}), "mixed generations share PTX");
        // A compute capability newer than any NVRTC knows: the newest PTX it has, for the driver to JIT.
        String newest = RuntimeCompiler.target(defaults, new int[] {990});
        assertTrue(newest.matches("compute_\\d+"), newest);
        assertTrue(Integer.parseInt(newest.substring("compute_".length())) >= 90, newest);
        // An explicit architecture wins over the devices.
        assertEquals("sm_75", RuntimeCompiler.target(defaults.architecture("sm_75"), new int[] {90}));
    }

    /**
     * Issue 26 (7): Java strings crossed with GetStringUTFChars and a lossy UTF-8 decode, so "😀" in CUDA source
     * became six U+FFFD. The program name and the source reach NVRTC intact, and NVRTC's log comes back intact.
     */
    @Test
    void textOutsideTheBasicPlaneCrossesIntactBothWays() {
        String name = "😀-名前.cu";
        String source = unique("#error cuhandle 😀 marker \u00e9\n");
        CompileOptions options = CompileOptions.defaults().programName(name).architecture("compute_75");
        CompileException e = assertThrows(CompileException.class, () -> RuntimeCompiler.image(source, options, "compute_75"));
        assertTrue(e.getLog().contains(name + "(2)"), "the program name heads the log line: " + e.getLog());
        assertTrue(e.getLog().contains("cuhandle 😀 marker \u00e9"), "the #error text, from the source: " + e.getLog());
        assertFalse(e.getLog().contains("\uFFFD"), e.getLog());
    }

    /**
     * Issue 26 (6): a program name with "\nSEVERE: ..." forged a log record of its own. Names, flags and define
     * values that reach logs refuse control characters and line separators.
     */
    @Test
    void namesThatReachLogsRefuseControlCharacters() {
        CompileOptions d = CompileOptions.defaults();
        for (String bad : new String[] {"k.cu\nSEVERE: forged record", "k.cu\r", "tab\there", "k\u2028.cu", "k\u0085.cu", "bell\u0007", "nul\0"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> d.programName(bad), bad);
            assertTrue(e.getMessage().contains("the program name") && e.getMessage().contains(" (U+") && !e.getMessage().contains("\n"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> d.header(bad, "// text"), bad);
            assertThrows(IllegalArgumentException.class, () -> d.define("N", bad), bad);
            assertThrows(IllegalArgumentException.class, () -> d.flag("-D" + bad), bad);
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> d.programName("k.cu\nSEVERE: forged"));
        assertTrue(e.getMessage().contains("k.cu\\u000ASEVERE: forged") && e.getMessage().contains("U+000A at index 4"), e.getMessage());
        // Printable text of any script stays allowed; headers' own text may hold any line breaks.
        assertEquals("😀 ünïcode.cu", d.programName("😀 ünïcode.cu").programName());
        assertEquals("a\nb\r\n", d.header("ok.h", "a\nb\r\n").headers().get("ok.h"));
    }

    // ---------------------------------------------------------------- options and cache (no NVRTC calls)

    @Test
    void optionsAreImmutableAndGiveNvrtcFlagsInADocumentedOrder() {
        CompileOptions base = CompileOptions.defaults();
        CompileOptions o = base.flag("-lineinfo").standard("c++17").fastMath(true).define("N", "4").define("DEBUG").programName("k.cu");
        assertEquals(List.of("-DN=4", "-DDEBUG", "--use_fast_math", "-std=c++17", "-lineinfo"), o.nvrtcFlags());
        assertEquals("k.cu", o.programName());
        assertEquals(List.of(), base.nvrtcFlags(), "the defaults are unchanged");
        assertEquals(CompileOptions.DEFAULT_PROGRAM_NAME, base.programName());
        assertEquals(null, o.architecture());
        assertFalse(o.ptxOnly());
        assertEquals(Map.of("x.h", "1"), base.header("x.h", "0").header("x.h", "1").headers(), "a header of the same name is replaced");
        assertThrows(UnsupportedOperationException.class, () -> o.headers().put("y.h", ""));
        assertNotSame(base, base.fastMath(false));
    }

    @Test
    void badOptionsAreRefusedWhenSet() {
        CompileOptions d = CompileOptions.defaults();
        for (String bad : new String[] {"sm90", "sm_9", "compute_", "SM_90", "sm_90b", "gfx90a"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> d.architecture(bad), bad);
            assertTrue(e.getMessage().contains("sm_XY or compute_XY"), e.getMessage());
        }
        assertEquals("sm_90a", d.architecture("sm_90a").architecture());
        assertEquals(null, d.architecture("sm_90").architecture(null).architecture());
        IllegalArgumentException arch = assertThrows(IllegalArgumentException.class, () -> d.flag("-arch=sm_80"));
        assertTrue(arch.getMessage().contains("CompileOptions.architecture"), arch.getMessage());
        assertThrows(IllegalArgumentException.class, () -> d.flag("--gpu-architecture=compute_80"));
        assertThrows(IllegalArgumentException.class, () -> d.flag(""));
        assertThrows(IllegalArgumentException.class, () -> d.define("A=1"));
        assertThrows(IllegalArgumentException.class, () -> d.define("A B"));
        assertThrows(IllegalArgumentException.class, () -> d.define("", "1"));
        assertThrows(IllegalArgumentException.class, () -> d.define("A", "1\0"));
        assertThrows(IllegalArgumentException.class, () -> d.define("A", "1\n#define EVIL"));
        assertThrows(IllegalArgumentException.class, () -> d.programName(""));
        assertThrows(IllegalArgumentException.class, () -> d.header("", "x"));
        assertThrows(IllegalArgumentException.class, () -> d.standard("c++ 17"));
        assertThrows(NullPointerException.class, () -> d.header("a.h", null));
        assertThrows(NullPointerException.class, () -> Library.compile(null, d));
        assertThrows(NullPointerException.class, () -> Library.compile("", null));
        assertThrows(NullPointerException.class, () -> Library.compile((Handle) null, "", d));
    }

    @Test
    void theCacheKeyCoversEveryInputAndOnlyThem() {
        Map<String, String> headers = Map.of("a.h", "1");
        String key = RuntimeCompiler.key("11.8", "sm_90", "p.cu", "src", headers, List.of("-DX"));
        assertEquals(64, key.length(), "SHA-256 in hex");
        assertEquals(key, RuntimeCompiler.key("11.8", "sm_90", "p.cu", "src", Map.of("a.h", "1"), List.of("-DX")));
        assertNotEquals(key, RuntimeCompiler.key("12.8", "sm_90", "p.cu", "src", headers, List.of("-DX")));
        assertNotEquals(key, RuntimeCompiler.key("11.8", "compute_90", "p.cu", "src", headers, List.of("-DX")));
        assertNotEquals(key, RuntimeCompiler.key("11.8", "sm_90", "q.cu", "src", headers, List.of("-DX")));
        assertNotEquals(key, RuntimeCompiler.key("11.8", "sm_90", "p.cu", "src2", headers, List.of("-DX")));
        assertNotEquals(key, RuntimeCompiler.key("11.8", "sm_90", "p.cu", "src", Map.of("a.h", "2"), List.of("-DX")));
        assertNotEquals(key, RuntimeCompiler.key("11.8", "sm_90", "p.cu", "src", Map.of("b.h", "1"), List.of("-DX")));
        assertNotEquals(key, RuntimeCompiler.key("11.8", "sm_90", "p.cu", "src", headers, List.of("-DY")));
        assertNotEquals(key, RuntimeCompiler.key("11.8", "sm_90", "p.cu", "src", headers, List.of("-DX", "-DY")));
        // Boundaries between inputs are unambiguous: moving text from source to flag changes the key.
        assertNotEquals(RuntimeCompiler.key("v", "t", "p", "ab", Map.of(), List.of("c")), RuntimeCompiler.key("v", "t", "p", "a", Map.of(), List.of("bc")));
    }

    @Test
    void theCacheDropsTheLeastRecentlyUsedBeyondItsLimits() {
        CompiledImageCache cache = new CompiledImageCache(3, 100);
        cache.put("a", new byte[10]);
        cache.put("b", new byte[10]);
        cache.put("c", new byte[10]);
        cache.get("a"); // a is now the most recently used
        cache.put("d", new byte[10]);
        assertEquals(3, cache.size());
        assertEquals(null, cache.get("b"), "the least recently used went first");
        assertArrayEquals(new byte[10], cache.get("a"));
        cache.get("a"); // order now c, d, a
        cache.put("e", new byte[90]); // 10 + 10 + 10 + 90 > 100: the oldest go until it fits
        assertEquals(null, cache.get("c"));
        assertEquals(null, cache.get("d"));
        assertTrue(cache.get("a") != null && cache.get("e") != null, "100 bytes fit exactly");
        assertEquals(2, cache.size());
        cache.put("huge", new byte[101]);
        assertEquals(null, cache.get("huge"), "an image over the whole budget is not kept");
        assertTrue(cache.get("e") != null, "and does not evict others");
    }
}
