package dev.cuhandle;

import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Child JVM of {@link OldDriverKernelChecksTest}: on a stand-in driver that reports CUDA 12.2 (no
 * {@code cuKernelGetParamInfo}), loads kernels/test/kernel_checks.cu's kernels as PTX, a cubin (from memory and
 * from a file), a fatbin and NVRTC output (PTX and a cubin), and prints one line per source and launch:
 * {@code <source> <case>: <outcome>}, the outcome being {@code launched}, {@code parameters <count> <sizes>} or
 * {@code <exception class>: <message>}.
 */
public final class OldDriverKernelChecksMain {
    /** The two kernels of kernel_checks.cu the checks use, for NVRTC. */
    static final String SOURCE = """
            struct CuhDoubles6 { double d[6]; };
            extern "C" __global__ void cuh_check_pointer_and_count(float* x, int n) {
                for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x[i] *= 2.0f;
            }
            extern "C" __global__ void cuh_check_struct48(CuhDoubles6 s, double* out) {
                if (blockIdx.x == 0 && threadIdx.x < 6) out[threadIdx.x] = s.d[threadIdx.x];
            }
            """;

    private OldDriverKernelChecksMain() {}

    public static void main(String[] args) throws Exception {
        System.out.println("driver " + Cuda.driverVersion());
        try (Handle h = Handle.create(0); DeviceBuffer b = h.allocate(64)) {
            Map<String, Supplier<Library>> sources = new LinkedHashMap<>();
            sources.put("ptx", () -> Library.loadResource(OldDriverKernelChecksMain.class, TestKernels.CHECKS_PTX));
            sources.put("cubin", () -> Library.loadResource(OldDriverKernelChecksMain.class, TestKernels.CHECKS_CUBIN));
            sources.put("cubin-file", () -> Library.load(resourceFile(TestKernels.CHECKS_CUBIN)));
            sources.put("fatbin", () -> Library.loadResource(OldDriverKernelChecksMain.class, TestKernels.CHECKS_FATBIN));
            sources.put("nvrtc-ptx", () -> Library.compile(h, SOURCE, CompileOptions.defaults().ptxOnly(true)));
            sources.put("nvrtc-cubin", () -> Library.compile(h, SOURCE, CompileOptions.defaults().architecture("sm_90")));
            for (Map.Entry<String, Supplier<Library>> source : sources.entrySet()) {
                try (Library lib = source.getValue().get()) {
                    String s = source.getKey();
                    Kernel pointer = lib.kernel("cuh_check_pointer_and_count");
                    Kernel struct = lib.kernel("cuh_check_struct48");
                    System.out.println(s + " pointer-and-count: parameters " + pointer.parameterCount() + " " + pointer.parameterSize(0) + " " + pointer.parameterSize(1));
                    System.out.println(s + " struct48: parameters " + struct.parameterCount() + " " + struct.parameterSize(0) + " " + struct.parameterSize(1));
                    report(s + " valid", () -> h.launch(pointer, Dim3.of(1), Dim3.of(32), 0, b, 16));
                    report(s + " valid-struct", () -> h.launch(struct, Dim3.of(1), Dim3.of(32), 0, ByteBuffer.allocate(48), b));
                    report(s + " too-few", () -> h.launch(pointer, Dim3.of(1), Dim3.of(32), 0, b));
                    report(s + " int-for-pointer", () -> h.launch(pointer, Dim3.of(1), Dim3.of(32), 0, 7, 16));
                    report(s + " struct40-for-48", () -> h.launch(struct, Dim3.of(1), Dim3.of(32), 0, ByteBuffer.allocate(40), b));
                } catch (RuntimeException e) {
                    System.out.println(source.getKey() + " load: " + e.getClass().getSimpleName() + ": " + e.getMessage());
                }
            }
            h.synchronize();
        }
    }

    private static void report(String what, Runnable launch) {
        try {
            launch.run();
            System.out.println(what + ": launched");
        } catch (RuntimeException e) {
            System.out.println(what + ": " + e.getClass().getSimpleName() + ": " + e.getMessage());
        }
    }

    private static Path resourceFile(String resource) {
        try (InputStream in = OldDriverKernelChecksMain.class.getResourceAsStream(resource)) {
            Path file = Files.createTempFile("cuhandle-kernel-checks", resource.substring(resource.lastIndexOf('.')));
            file.toFile().deleteOnExit();
            Files.write(file, in.readAllBytes());
            return file;
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
