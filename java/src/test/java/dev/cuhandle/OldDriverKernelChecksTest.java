package dev.cuhandle;

import static dev.cuhandle.KernelLaunchArgumentsTest.assertContains;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;
import org.junit.jupiter.api.io.TempDir;

/**
 * Rule K2 on a driver without {@code cuKernelGetParamInfo} (issue 20): the stand-in reports CUDA 12.2
 * ({@code CUHANDLE_STANDIN_VERSION=12020}) in a child JVM (the driver is loaded once per process), and the
 * parameters are read from the module image itself. A missing argument, an {@code int} for a pointer and a
 * 40-byte structure for a 48-byte parameter are each an {@link IllegalArgumentException} naming kernel and
 * parameter, for kernels from PTX, a cubin (from memory and from a file), a fatbin and NVRTC (PTX and a cubin);
 * before, such launches went unchecked to the driver. The environment report says where the checks come from.
 */
@EnabledIf("dev.cuhandle.StandIn#active")
class OldDriverKernelChecksTest {
    private static final Map<String, String> CUDA_12_2 = Map.of("CUHANDLE_STANDIN_VERSION", "12020");

    @Test
    void wrongArgumentsAreRefusedByNameForEveryKindOfImage(@TempDir Path dir) throws Exception {
        ChildJvm child = ChildJvm.run(dir, CUDA_12_2, OldDriverKernelChecksMain.class, List.of());
        assertEquals(0, child.exitCode, child.output);
        List<String> lines = Arrays.asList(child.output.split("\\R"));
        assertTrue(lines.contains("driver 12020"), child.output);
        for (String source : new String[] {"ptx", "cubin", "cubin-file", "fatbin", "nvrtc-ptx", "nvrtc-cubin"}) {
            assertTrue(lines.contains(source + " pointer-and-count: parameters 2 8 4"), source + " parameters from the image:\n" + child.output);
            assertTrue(lines.contains(source + " struct48: parameters 2 48 8"), source + " parameters from the image:\n" + child.output);
            assertTrue(lines.contains(source + " valid: launched"), source + ":\n" + child.output);
            assertTrue(lines.contains(source + " valid-struct: launched"), source + ":\n" + child.output);
            assertContains(line(lines, source + " too-few: "), "IllegalArgumentException", "'cuh_check_pointer_and_count'", "takes 2 parameters",
                    "parameter 1 (4 bytes) has no argument");
            assertContains(line(lines, source + " int-for-pointer: "), "IllegalArgumentException", "'cuh_check_pointer_and_count'", "parameter 0",
                    "is 8 bytes", "is 4 bytes");
            assertContains(line(lines, source + " struct40-for-48: "), "IllegalArgumentException", "'cuh_check_struct48'", "parameter 0", "is 48 bytes",
                    "is 40 bytes");
        }
    }

    @Test
    void theEnvironmentReportSaysTheChecksComeFromTheImage(@TempDir Path dir) throws Exception {
        ChildJvm child = ChildJvm.run(dir, CUDA_12_2, Main.class, List.of());
        assertContains(child.output, "CUDA 12.2", "kernel checks:  ON (from the image)");
    }

    private static String line(List<String> lines, String prefix) {
        return lines.stream().filter(l -> l.startsWith(prefix)).findFirst().orElse("no line starting with '" + prefix + "'");
    }
}
