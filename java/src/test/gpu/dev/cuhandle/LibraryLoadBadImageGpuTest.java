package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bad module images (one test per kind of damage): each is refused with an exception that says
 * what is wrong, never a crash, and the process can load and launch good images afterwards.
 * Images are derived from the real test fatbin (the build's /kernels/test_kernels.fatbin).
 *
 * <p>Fatbin layout (what rust/src/core/image.rs checks): a 16-byte header {u32 magic 0xBA55ED50,
 * u16 version, u16 header size, u64 payload size}, then entries {u16 kind, u16 version, u32 header
 * size, u64 payload size, ..., u32 arch at +28, ...}.
 */
@GpuTest
class LibraryLoadBadImageGpuTest extends KernelGpuTestBase {

    private static ByteBuffer le(byte[] image) {
        return ByteBuffer.wrap(image).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** header size + payload size: where the fatbin says it ends. */
    private static int declaredEnd(byte[] fatbin) {
        ByteBuffer b = le(fatbin);
        long end = (b.getShort(6) & 0xFFFF) + b.getLong(8);
        assertTrue(end > 16 && end <= fatbin.length, "the test fatbin is well formed (declared end " + end + ", length " + fatbin.length + ")");
        return (int) end;
    }

    /** Offsets of the entries of a well-formed fatbin. */
    private static int[] entryOffsets(byte[] fatbin) {
        ByteBuffer b = le(fatbin);
        int end = declaredEnd(fatbin);
        int[] offsets = new int[0];
        for (int at = b.getShort(6) & 0xFFFF; at < end; at += b.getInt(at + 4) + (int) b.getLong(at + 8)) {
            offsets = Arrays.copyOf(offsets, offsets.length + 1);
            offsets[offsets.length - 1] = at;
        }
        assertTrue(offsets.length > 0, "the test fatbin has entries");
        return offsets;
    }

    /** After a refused image, the process still loads and launches good ones (no state was damaged). */
    private static void assertGoodImagesStillWork() {
        LibraryLoadGpuTest.assertAddOneWorks(Library.load(fatbinBytes()), "a good fatbin after a refused image");
        assertEquals(0L, current());
    }

    private static IllegalArgumentException refusedBeforeTheDriver(byte[] image, String... messageParts) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Library.load(image).close(),
                "a damaged image of " + image.length + " bytes must be refused");
        assertContains(e.getMessage(), messageParts);
        assertGoodImagesStillWork();
        return e;
    }

    @Test
    void anEmptyImageIsRefused() {
        refusedBeforeTheDriver(new byte[0], "empty");
    }

    @Test
    void randomGarbageIsRefused() {
        Random r = freshRandom("garbage image");
        for (int length : new int[] {1, 3, 4, 15, 16, 100, 4096, 100_000}) {
            byte[] garbage = randomBytes(r, length);
            garbage[0] = 0x01; // neither the fatbin magic, nor ELF, nor text
            refusedBeforeTheDriver(garbage, "neither a fatbin");
        }
    }

    /** A .cu file given where an image belongs: the message says it is source and how to make an image of it. */
    @Test
    @StandInCapable
    void cudaSourceIsRefusedWithHowToCompileIt(@TempDir Path dir) throws IOException {
        Path source = Files.writeString(dir.resolve("scale.cu"), "extern \"C\" __global__ void scale(float *x, float a, int n) {\n"
                + "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) x[i] *= a;\n}\n");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Library.load(source).close());
        assertContains(e.getMessage(), "is CUDA C++ source", "nvcc -fatbin", "Library.compile", source.toString());
        byte[] bytes = Files.readAllBytes(source);
        e = assertThrows(IllegalArgumentException.class, () -> Library.load(bytes).close());
        assertContains(e.getMessage(), "is CUDA C++ source", "nvcc -fatbin", "Library.compile");
        assertEquals(0L, current());
    }

    @Test
    void aFatbinWithAFlippedMagicIsRefused() {
        for (int at = 0; at < 4; at++) {
            byte[] image = fatbinBytes();
            image[at] ^= (byte) 0xFF;
            refusedBeforeTheDriver(image, "neither a fatbin");
        }
    }

    @Test
    void aTruncatedFatbinIsRefusedWithTheSizes() {
        byte[] full = fatbinBytes();
        int end = declaredEnd(full);
        for (int length : new int[] {end - 1, end - 100, end / 2, 100, 17, 16}) {
            IllegalArgumentException e = refusedBeforeTheDriver(Arrays.copyOf(full, length), "truncated");
            assertContains(e.getMessage(), String.valueOf(length));
        }
        // Shorter than the 16-byte header itself.
        for (int length : new int[] {15, 8, 5, 4}) {
            refusedBeforeTheDriver(Arrays.copyOf(full, length), "truncated");
        }
    }

    @Test
    void aFatbinWhosePayloadSizeIsTooLargeIsRefused() {
        byte[] image = fatbinBytes();
        ByteBuffer b = le(image);
        b.putLong(8, b.getLong(8) + 1);
        refusedBeforeTheDriver(image, "truncated");
        b.putLong(8, Long.MAX_VALUE); // header + payload overflows
        refusedBeforeTheDriver(image, "truncated");
        b.putLong(8, -1L);
        refusedBeforeTheDriver(image, "truncated");
    }

    @Test
    void aFatbinWhoseHeaderSizeIsTooLargeIsRefused() {
        byte[] image = fatbinBytes();
        le(image).putShort(6, (short) 0xFFFF);
        refusedBeforeTheDriver(image, "truncated");
    }

    @Test
    void aFatbinEntryPointingPastThePayloadIsRefused() {
        byte[] full = fatbinBytes();
        for (int entry : entryOffsets(full)) {
            byte[] image = full.clone();
            ByteBuffer b = le(image);
            b.putLong(entry + 8, b.getLong(entry + 8) + full.length); // entry payload size past the end
            refusedBeforeTheDriver(image, "truncated fatbin entry");
            image = full.clone();
            le(image).putInt(entry + 4, Integer.MAX_VALUE); // entry header size past the end
            refusedBeforeTheDriver(image, "truncated fatbin entry");
            image = full.clone();
            le(image).putLong(entry + 8, -le(image).getInt(entry + 4)); // header + payload = 0: no progress
            refusedBeforeTheDriver(image, "truncated fatbin entry");
        }
    }

    /**
     * An image that passes the structural pre-check but that the driver rejects. The driver
     * compiles or selects code lazily: cuLibraryLoadData accepts such an image and the error comes
     * from the first kernel lookup (seen on the H200, driver 580, with CUDA_MODULE_LOADING unset and
     * EAGER alike). So "refused" means: loading plus one lookup throws a CudaException.
     */
    private static CudaException refusedByTheDriver(byte[] image, String kernel) {
        CudaException e = assertThrows(CudaException.class, () -> {
            try (Library lib = Library.load(image)) {
                lib.kernel(kernel);
            }
        }, "an image the driver cannot use must be refused at loading or at the first lookup");
        System.out.println("[kernel-tests] refused by the driver: " + e.getMessage());
        assertTrue(e.operation().equals("cuLibraryLoadData") || e.operation().equals("cuLibraryGetKernel"), "operation " + e.operation());
        assertContains(e.getMessage(), "CUDA_ERROR_");
        assertEquals(0L, current());
        return e;
    }

    /**
     * Header fields that the pre-check does not read but the driver does: every entry claims an
     * architecture newer than any GPU (sm_1000). The structure is intact, so only the driver can
     * refuse it (on driver 580: CUDA_ERROR_UNKNOWN from cuLibraryGetKernel).
     */
    @Test
    void aFatbinWithNoEntryForThisGpuIsACudaException() {
        byte[] image = fatbinBytes();
        for (int entry : entryOffsets(image)) {
            le(image).putInt(entry + 28, 1000);
        }
        refusedByTheDriver(image, "cuh_test_empty");
        assertGoodImagesStillWork();
    }

    @Test
    void aCubinWithSectionsOutsideTheFileIsRefused() {
        byte[] elf = new byte[64];
        ByteBuffer b = le(elf);
        elf[0] = 0x7F;
        elf[1] = 'E';
        elf[2] = 'L';
        elf[3] = 'F';
        elf[4] = 2; // 64-bit
        elf[5] = 1; // little-endian
        b.putLong(40, 4096); // section headers at 4096, past the end
        b.putShort(52, (short) 64); // e_ehsize: a well-formed 64-bit header, so the section check is what refuses
        b.putShort(58, (short) 64);
        b.putShort(60, (short) 3);
        refusedBeforeTheDriver(elf, "truncated cubin");
        refusedBeforeTheDriver(Arrays.copyOf(elf, 40), "ELF");
        byte[] bigEndian = elf.clone();
        bigEndian[5] = 2;
        refusedBeforeTheDriver(bigEndian, "ELF");
    }

    /**
     * The issue asks for the JIT log in the exception of broken PTX. Where the error surfaces (load
     * or first lookup, see {@link #refusedByTheDriver}) its message must carry the log, which names
     * the bad line.
     */
    @Test
    void ptxWithASyntaxErrorIsACudaExceptionWithTheJitLog() {
        String ptx = ".version 7.8\n.target sm_52\n.address_size 64\n"
                + ".visible .entry cuh_broken(.param .u64 p)\n{\n"
                + "  .reg .b64 %rd<2>;\n"
                + "  ld.param.u64 %rd1, [p];\n"
                + "  this_is_not_an_instruction %rd1, %rd1;\n"
                + "  ret;\n}\n";
        CudaException e = refusedByTheDriver(ptx.getBytes(StandardCharsets.US_ASCII), "cuh_broken");
        assertEquals(CudaError.INVALID_PTX, e.error(), e.getMessage());
        assertContains(e.getMessage(), "JIT log");
        String log = e.getMessage().substring(e.getMessage().indexOf("JIT log"));
        assertTrue(log.contains("this_is_not_an_instruction") || log.contains("line 8"), "the JIT log should point at the bad line: " + log);
        assertGoodImagesStillWork();
    }

    @Test
    void ptxWithAnUndeclaredRegisterIsACudaException() {
        String ptx = ".version 7.8\n.target sm_52\n.address_size 64\n"
                + ".visible .entry cuh_broken2(.param .u64 p)\n{\n"
                + "  ld.param.u64 %rd9, [p];\n  ret;\n}\n";
        CudaException e = refusedByTheDriver(ptx.getBytes(StandardCharsets.US_ASCII), "cuh_broken2");
        assertEquals(CudaError.INVALID_PTX, e.error(), e.getMessage());
        assertGoodImagesStillWork();
    }

    @Test
    void truncatedPtxIsACudaException() {
        byte[] ptx = ptxBytes();
        String text = new String(ptx, StandardCharsets.US_ASCII);
        int cut = text.indexOf(".entry cuh_test_add_one");
        assertTrue(cut > 0, "the PTX resource holds cuh_test_add_one");
        byte[] truncated = Arrays.copyOf(ptx, cut + 40); // ends inside the parameter list
        CudaException e = refusedByTheDriver(truncated, "cuh_test_empty"); // a kernel before the cut: the whole module is broken
        assertEquals(CudaError.INVALID_PTX, e.error(), e.getMessage());
        assertGoodImagesStillWork();
    }
}
