package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * NVRTC is optional: without it {@link Library#compile} throws a {@link CudaException} that names the file tried
 * and how to install NVRTC, every time, and everything else keeps working. Runs without a GPU (in a child JVM:
 * the NVRTC choice is made once per process).
 */
class NvrtcMissingTest {
    @TempDir
    Path tmp;

    @Test
    void anAbsentNvrtcGivesAClearErrorAndTheRestStillWorks() throws Exception {
        String missing = "/nonexistent/libnvrtc.so";
        ChildJvm child = ChildJvm.run(tmp, CompileProbeMain.class, "-D" + Native.NVRTC_PROPERTY + "=" + missing);
        String out = child.output;
        assertEquals(0, child.exitCode, out);
        assertTrue(child.crashFiles.isEmpty(), "no crash: " + child.crashFiles);
        assertFalse(out.contains("unexpected") || out.contains("compiled"), out);
        for (int attempt = 1; attempt <= 2; attempt++) {
            assertTrue(out.contains("exception" + attempt + "=CudaException"), out);
            assertTrue(out.contains("code" + attempt + "=" + CudaError.FILE_NOT_FOUND.code()), out);
            String message = out.lines().filter(l -> l.startsWith("message")).findFirst().orElse("");
            assertTrue(message.contains(missing), "the path tried: " + message);
            assertTrue(message.contains("nvidia-cuda-toolkit") && message.contains("cuda-nvrtc-12-x") && message.contains("-Dcuhandle.nvrtc.path"),
                    "how to install it: " + message);
        }
        // The rest: the driver is as available as in this JVM, and memory round-trips where it is.
        assertTrue(out.contains("available=" + Cuda.isAvailable()), out);
        if (Cuda.isAvailable()) {
            assertTrue(out.contains("roundTrip=ok"), out);
        }
    }
}
