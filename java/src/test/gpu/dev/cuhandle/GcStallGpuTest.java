package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Issue 9 (6), rule L4: array downloads held a JNI critical region across the wait for queued GPU
 * work, and every other thread's allocation stalled until the GPU was done (all 3 s of it). The
 * array is now filled by bounded region copies after each wait. Goal: another thread's worst
 * stall is at most 50 ms during a 3 s GPU-bound download; the test fails at 500 ms (far from
 * both the goal and the old 3 s, so machine noise cannot decide it) and prints the figure.
 */
@GpuTest
@StandInCapable
class GcStallGpuTest {
    @TempDir
    Path tmp;

    /** With JNI region copies and with critical-region copies ({@link TransferPlan#CRITICAL_COPY}), which L4 bounds to one chunk's memcpy. */
    @ParameterizedTest(name = "{0}, critical copies {1}, batch {2}")
    @CsvSource({"-XX:+UseG1GC,false,false", "-XX:+UseParallelGC,false,false", "-XX:+UseG1GC,true,false", "-XX:+UseParallelGC,true,false",
        "-XX:+UseG1GC,true,true", "-XX:+UseParallelGC,true,true"})
    void aDownloadWaitingForTheGpuDoesNotStopOtherThreads(String collector, boolean criticalCopies, boolean batch) throws Exception {
        List<String> options = new ArrayList<>(List.of(collector, "-Xmx512m", "-Xms512m", "-D" + TransferPlan.CRITICAL_COPY + "=" + criticalCopies));
        if (StandIn.active()) {
            options.add("-D" + StandIn.PROPERTY + "=true");
        }
        ChildJvm child = ChildJvm.run(tmp, GcStallMain.class, options, batch ? new String[] {"batch"} : new String[0]);
        assertEquals(0, child.exitCode, child.output);
        double stall = value(child.output, "maxStallMs=");
        double download = value(child.output, "downloadMs=");
        System.out.println("[gc-stall] " + collector + (criticalCopies ? ", critical copies" : "") + (batch ? ", downloadAll of 1,024 arrays" : "") + (StandIn.active() ? " (stand-in)" : " (GPU)") + ": worst allocation stall "
                + stall + " ms during a download that waited " + download + " ms");
        assertTrue(download >= 2_500, "the download should have waited for ~3 s of queued work: " + child.output);
        assertTrue(stall < 500, "another thread stalled " + stall + " ms while the download waited: " + child.output);
    }

    private static double value(String output, String key) {
        for (String line : output.split("\\R")) {
            if (line.startsWith(key)) {
                return Double.parseDouble(line.substring(key.length()));
            }
        }
        throw new AssertionError("no " + key + " in: " + output);
    }
}
