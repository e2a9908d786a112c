package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Rule K2 on every driver (issue 20): the parameter layouts rust/src/core/param_layout reads from a module image
 * (for drivers before CUDA 12.4) are the driver's own: for every built-in kernel and every test kernel, from
 * fatbins, cubins, PTX and NVRTC output, each offset and size equals what {@code cuKernelGetParamInfo} reports,
 * and the image describes every kernel the driver lists. On the H200 this compares with the real driver. On the
 * CPU stand-in it compares with the stand-in's own PTX reader (an independent implementation), for the images it
 * reads: those with PTX (it does not read cubins).
 */
@GpuTest
@StandInCapable
class ParamLayoutGpuTest extends GpuTestSupport {
    private Handle handle;

    @BeforeEach
    void aHandle() {
        clearCurrent();
        handle = Handle.create(0);
        assumeTrue(Cuda.driverVersion() >= 12040, "cuKernelGetParamInfo needs CUDA 12.4");
    }

    @AfterEach
    void close() {
        closeQuietly(handle);
        clearCurrent();
    }

    @Test
    void theBuiltInKernelsLayoutsAreTheDrivers() {
        assertSameAsTheDriver("built-in fatbin (kernels/blas1.cu)", NativeTestApi.builtinImage(), 16);
    }

    @Test
    void theTestKernelsLayoutsAreTheDrivers() {
        assertSameAsTheDriver(TestKernels.FATBIN, KernelGpuTestBase.resourceBytes(TestKernels.FATBIN), 6);
        assertSameAsTheDriver(TestKernels.PTX, KernelGpuTestBase.resourceBytes(TestKernels.PTX), 6);
        assertSameAsTheDriver("/kernels/variables.fatbin", KernelGpuTestBase.resourceBytes("/kernels/variables.fatbin"), 4);
        assertSameAsTheDriver("/kernels/launch_features.fatbin", KernelGpuTestBase.resourceBytes("/kernels/launch_features.fatbin"), 4);
        assertSameAsTheDriver(TestKernels.CHECKS_FATBIN, KernelGpuTestBase.resourceBytes(TestKernels.CHECKS_FATBIN), 13);
        assertSameAsTheDriver(TestKernels.CHECKS_PTX, KernelGpuTestBase.resourceBytes(TestKernels.CHECKS_PTX), 13);
        if (!StandIn.active()) { // the stand-in does not read cubins
            assertSameAsTheDriver(TestKernels.CHECKS_CUBIN, KernelGpuTestBase.resourceBytes(TestKernels.CHECKS_CUBIN), 13);
        }
    }

    @Test
    void nvrtcOutputsLayoutsAreTheDrivers() {
        RuntimeCompileTest.nvrtcIsThere();
        Device d = handle.device();
        int cc = 10 * d.computeCapabilityMajor() + d.computeCapabilityMinor();
        CompileOptions ptx = CompileOptions.defaults().ptxOnly(true);
        String ptxTarget = RuntimeCompiler.target(ptx, new int[] {cc});
        assertSameAsTheDriver("NVRTC " + ptxTarget, RuntimeCompiler.image(OldDriverKernelChecksMain.SOURCE, ptx, ptxTarget), 2);
        String native_ = RuntimeCompiler.target(CompileOptions.defaults(), new int[] {cc});
        if (!StandIn.active() && native_.startsWith("sm_")) {
            assertSameAsTheDriver("NVRTC " + native_, RuntimeCompiler.image(OldDriverKernelChecksMain.SOURCE, CompileOptions.defaults(), native_), 2);
        }
    }

    /** Loads {@code image} and compares every kernel's image-derived layout with cuKernelGetParamInfo's. */
    private void assertSameAsTheDriver(String what, byte[] image, int atLeast) {
        Map<String, List<Long>> fromImage = parse(NativeTestApi.imageParamLayouts(image));
        assertEquals(true, fromImage.size() >= atLeast, what + ": " + fromImage.size() + " kernels read from the image, expected at least " + atLeast
                + ": " + fromImage.keySet());
        try (Library lib = Library.load(image)) {
            List<String> listed = lib.kernelNames();
            if (!listed.isEmpty()) {
                assertEquals(new TreeSet<>(listed), new TreeSet<>(fromImage.keySet()), what + ": the image describes every kernel the driver lists");
            }
            long h = handle.enter();
            long libPointer = lib.enter();
            try {
                for (Map.Entry<String, List<Long>> kernel : fromImage.entrySet()) {
                    long raw = lib.kernel(kernel.getKey()).state().raw;
                    long[] driver = NativeTestApi.driverParamLayout(h, libPointer, raw);
                    assertNotNull(driver, "cuKernelGetParamInfo");
                    assertEquals(kernel.getValue(), boxed(driver), what + ": kernel " + kernel.getKey() + " (offset, size) pairs, image vs driver");
                }
            } finally {
                lib.exit();
                handle.exit();
            }
        }
    }

    /** "name offset:size ..." lines to name -> [offset, size, offset, size, ...]. */
    private static Map<String, List<Long>> parse(String lines) {
        Map<String, List<Long>> kernels = new TreeMap<>();
        for (String line : lines.split("\n")) {
            if (line.isEmpty()) {
                continue;
            }
            String[] parts = line.split(" ");
            List<Long> layout = new ArrayList<>();
            for (String param : Arrays.asList(parts).subList(1, parts.length)) {
                String[] offsetSize = param.split(":");
                layout.add(Long.parseLong(offsetSize[0]));
                layout.add(Long.parseLong(offsetSize[1]));
            }
            kernels.put(parts[0], layout);
        }
        return kernels;
    }

    private static List<Long> boxed(long[] values) {
        List<Long> list = new ArrayList<>();
        for (long v : values) {
            list.add(v);
        }
        return list;
    }
}
