package dev.cuhandle.spark.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cuhandle.spark.GpuTask;
import dev.cuhandle.spark.TestSpark;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The SM-partition benchmark (run-spark-example's {@code partitions} mode) end to end on the CPU stand-in driver, where
 * kernels do not run: its four runs finish, the partitioned ones give each task a partition of its own, and it
 * prints the CSV lines. The times mean nothing here; the H200's are in docs/spark.md.
 */
class SmPartitionIsolationTest {
    @BeforeAll
    static void standIn() {
        TestSpark.requireStandIn();
    }

    @Test
    void theBenchmarkRunsEndToEndAndGivesEachTaskAPartition() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        int exit = SmPartitionIsolationMain.run(new String[] {"--tasks", "4", "--parts", "4", "--jobs", "5", "--warmup", "1", "--short-ms", "1",
            "--long-ms", "2"}, new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String report = bytes.toString(StandardCharsets.UTF_8);
        assertEquals(0, exit, report);
        assertTrue(report.contains("csv,handles,neighbour,short_tasks,short_jobs,median_ms,p90_ms,vs_alone,long_kernels,task_sms"), report);
        assertTrue(report.contains("csv,ordinary,alone,3,15,") && report.contains("csv,ordinary,long,3,15,"), report);
        assertTrue(report.contains("csv,spark.cuhandle.smPartitions=4,alone,3,15,") && report.contains("csv,spark.cuhandle.smPartitions=4,long,3,15,"),
                report);
        assertTrue(report.contains(",132/132/132/132\n"), "ordinary handles run on the whole device: " + report);
        assertTrue(report.contains(",32/32/32/32\n"), "each partitioned task's handle has 32 SMs: " + report);
        assertTrue(report.contains("each task on an SM partition of its own (spark.cuhandle.smPartitions=4, long): yes"), report);
        assertTrue(report.strip().endsWith("times are reported, not asserted)") && report.contains("partitions: PASS"), report);
        assertEquals(0, GpuTask.openHandles());
    }
}
