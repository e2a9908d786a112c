package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 11 item 5: {@code Library.load(Path)} (the native side reads the file once and hands the
 * driver the bytes it checked, issue 26; no copy of the image passes through Java) and JIT/library options at load
 * (optimisation level, register limit, verbose JIT log, binary preserved). The PTX of the test
 * kernels makes the driver's JIT run, so the options have something to act on.
 */
@GpuTest
class LibraryLoadOptionsGpuTest extends GpuTestSupport {
    private final long seed = System.nanoTime();
    private final Random random = new Random(seed);
    private Handle handle;

    @BeforeEach
    void handle() {
        clearCurrent();
        handle = Handle.create(0);
    }

    @AfterEach
    void close() {
        closeQuietly(handle);
        clearCurrent();
    }

    private static Path write(Path dir, String name, byte[] bytes) throws IOException {
        Path file = dir.resolve(name);
        Files.write(file, bytes);
        return file;
    }

    /** Adds one to n random floats with cuh_test_add_one of {@code lib} and checks the result on the CPU. */
    private void addOneWorks(Library lib) {
        int n = 1000 + random.nextInt(10_000);
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = random.nextFloat();
        }
        try (DeviceBuffer d = handle.upload(x)) {
            lib.kernel("cuh_test_add_one").newLaunch().grid((n + 255) / 256).block(256).arg(0, d).arg(1, n).launch(handle);
            float[] got = new float[n];
            d.download(got);
            for (int i = 0; i < n; i++) {
                assertEquals(x[i] + 1.0f, got[i], 0.0f, "x[" + i + "] + 1 (seed " + seed + ")");
            }
        }
    }

    @Test
    void aPtxFileLoadsWithJitOptionsAndRuns(@TempDir Path dir) throws IOException {
        Path file = write(dir, "test_kernels.ptx", KernelGpuTestBase.ptxBytes());
        LoadOptions options = LoadOptions.defaults().optimizationLevel(3).maxRegisters(32).logVerbose(true);
        try (Library lib = Library.load(file, options)) {
            addOneWorks(lib);
            int registers = lib.kernel("cuh_test_add_one").registers(handle.device().ordinal());
            assertTrue(registers <= 32, "CU_JIT_MAX_REGISTERS 32 reached the JIT: " + registers + " registers");
            assertTrue(lib.toString().contains(file.toString()), lib.toString());
        }
    }

    @Test
    void aFatbinFileLoadsAndRuns(@TempDir Path dir) throws IOException {
        try (Library lib = Library.load(write(dir, "test_kernels.fatbin", KernelGpuTestBase.fatbinBytes()))) {
            addOneWorks(lib);
        }
    }

    @Test
    void aPreservedBinaryLoadsAndRuns() {
        try (Library lib = Library.load(KernelGpuTestBase.fatbinBytes(), LoadOptions.defaults().binaryIsPreserved(true))) {
            addOneWorks(lib);
        }
    }

    @Test
    @StandInCapable
    void theVerboseJitLogIsReadable() {
        // A PTX text no earlier run has seen: the driver's JIT cache (~/.nv/ComputeCache) would
        // otherwise serve the earlier tests' compilation, and no JIT means no log.
        byte[] ptx = (new String(KernelGpuTestBase.ptxBytes(), StandardCharsets.US_ASCII).replace("\0", "")
                + "\n// " + UUID.randomUUID() + "\n").getBytes(StandardCharsets.US_ASCII);
        try (Library lib = Library.load(Arrays.copyOf(ptx, ptx.length + 1), LoadOptions.defaults().logVerbose(true));
                DeviceBuffer x = handle.upload(new float[32])) {
            // Context-independent loading JITs when the kernel is first loaded into a context (at the
            // first launch with lazy loading, CUDA's default since 12.2), not at cuLibraryLoadData: the
            // driver writes the log then, into the buffer the library keeps for its whole life.
            handle.launch(lib.kernel("cuh_test_add_one"), Dim3.of(1), Dim3.of(32), 0, x, 32);
            handle.synchronize();
            String log = lib.jitLog();
            System.out.println("[jit-log] " + log);
            assertFalse(log.isEmpty(), "a verbose JIT of PTX says what it did");
        }
    }

    @Test
    @StandInCapable
    void filesAndOptionsReachTheDriver(@TempDir Path dir) throws IOException {
        Path file = write(dir, "test_kernels.fatbin", KernelGpuTestBase.fatbinBytes());
        try (Library lib = Library.load(file, LoadOptions.defaults().optimizationLevel(0).maxRegisters(64))) {
            assertTrue(lib.kernelNames().isEmpty() || lib.kernelNames().contains("cuh_test_add_one"), lib.kernelNames().toString());
            assertEquals("cuh_test_add_one", lib.kernel("cuh_test_add_one").name());
        }
        try (Library lib = Library.load(KernelGpuTestBase.fatbinBytes(), LoadOptions.defaults().binaryIsPreserved(true))) {
            assertEquals("cuh_test_add_one", lib.kernel("cuh_test_add_one").name());
        }
    }

    @Test
    @StandInCapable
    void aTruncatedFileIsRefusedBeforeTheDriverReadsIt(@TempDir Path dir) throws IOException {
        byte[] fatbin = KernelGpuTestBase.fatbinBytes();
        Path file = write(dir, "truncated.fatbin", Arrays.copyOf(fatbin, fatbin.length / 2));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Library.load(file));
        assertTrue(e.getMessage().contains("fatbin"), e.getMessage());
        Path garbage = write(dir, "garbage.bin", new byte[] {1, 2, 3, 4, 5, 6, 7, 8});
        assertThrows(IllegalArgumentException.class, () -> Library.load(garbage, LoadOptions.defaults()));
    }

    /**
     * Issue 26 (5): {@code load(Path)} checked one read of the file and let the driver read it again
     * ({@code cuLibraryLoadFromFile}), which could load something else than what was checked. The stand-in counts
     * file loads: there are none, and the library has the kernels of the bytes that were checked.
     */
    @Test
    @StandInCapable
    void aFileIsReadOnceAndTheDriverGetsTheCheckedBytes(@TempDir Path dir) throws IOException {
        org.junit.jupiter.api.Assumptions.assumeTrue(StandIn.active(), "counting the driver's file loads needs the CPU stand-in driver");
        int before = StandIn.fileLoads();
        try (Library lib = Library.load(write(dir, "test_kernels.ptx", KernelGpuTestBase.ptxBytes()))) {
            assertTrue(lib.kernelNames().contains("cuh_test_add_one"), lib.kernelNames().toString());
        }
        assertEquals(before, StandIn.fileLoads(), "the driver never read the file itself");
    }

    /**
     * Issue 26 (5): a 64-byte ELF claiming 65,535 section headers of size 0 passed the check and reached the
     * driver, which would read 65,535 real headers past the image. The header's entry sizes are checked now.
     */
    @Test
    @StandInCapable
    void anElfWithHeaderEntriesOfTheWrongSizeIsRefused(@TempDir Path dir) throws IOException {
        java.nio.ByteBuffer elf = java.nio.ByteBuffer.allocate(64).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        elf.put(new byte[] {0x7f, 'E', 'L', 'F', 2, 1, 1});
        elf.putShort(52, (short) 64); // e_ehsize
        elf.putLong(40, 64); // e_shoff: the section headers start at the end of the file
        elf.putShort(58, (short) 0); // e_shentsize: 0, so the table "fits" any file
        elf.putShort(60, (short) 0xFFFF); // e_shnum: 65,535 sections
        IllegalArgumentException fromFile = assertThrows(IllegalArgumentException.class, () -> Library.load(write(dir, "bad.cubin", elf.array())));
        assertTrue(fromFile.getMessage().contains("e_shentsize") && fromFile.getMessage().contains("bad.cubin"), fromFile.getMessage());
        IllegalArgumentException fromMemory = assertThrows(IllegalArgumentException.class, () -> Library.load(elf.array()));
        assertTrue(fromMemory.getMessage().contains("section header size (e_shentsize) is 0; 64-bit ELF has 64"), fromMemory.getMessage());
    }
}
