package dev.cuhandle.spark.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cuhandle.StandIn;
import dev.cuhandle.spark.GpuTask;
import dev.cuhandle.spark.TestSpark;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The example job on the CPU stand-in driver. Kernels do not run there, so the GPU path is checked
 * for what it does around them (every row packed, uploaded and counted, every handle and buffer
 * released) and the CPU path, the reference the GPU run is compared with, is checked against a
 * plain loop over the same rows. The comparison itself is checked on made-up answers.
 */
class VectorScoringTest {
    private static final int DIM = 64;

    @BeforeAll
    static void standIn() {
        TestSpark.requireStandIn();
    }

    @Test
    void theCpuJobMatchesAPlainLoopAndTheGpuJobScoresEveryRowAndReleasesEverything() {
        long rows = 3 * VectorScoring.CHUNK_ROWS + 123; // several chunks per partition and a partial one
        float[] query = VectorScoring.query(DIM, 7);
        int allocationsBefore = StandIn.liveAllocations();
        try (JavaSparkContext sc = TestSpark.start("local[4]")) {
            JavaRDD<float[]> data = VectorScoring.vectors(sc, rows, DIM, 2, 7).cache();
            ScoreAnswer cpu = VectorScoring.onCpu(data, query, 5);

            List<List<float[]>> partitions = data.glom().collect();
            TopK best = new TopK(5);
            double total = 0;
            long n = 0;
            for (int p = 0; p < partitions.size(); p++) {
                List<float[]> part = partitions.get(p);
                for (int i = 0; i < part.size(); i++) {
                    float s = 0;
                    for (int j = 0; j < DIM; j++) {
                        s += part.get(i)[j] * query[j];
                    }
                    total += s;
                    best.offer(ScoreAnswer.rowId(p, i), s);
                    n++;
                }
            }
            assertEquals(rows, n);
            assertNull(cpu.disagreement(best.answer(n, total)), "the CPU job against a plain loop");
            assertEquals(5, cpu.ids.length);

            ScoreAnswer gpu = VectorScoring.onGpu(data, query, 5);
            assertEquals(rows, gpu.rows, "rows scored on the GPU path");
            assertEquals(0, GpuTask.openHandles());
        }
        assertEquals(allocationsBefore, StandIn.liveAllocations(), "device buffers left allocated");
    }

    @Test
    void answersAgreeDespiteSwappedNearTiesAndDisagreeOnRealDifferences() {
        ScoreAnswer cpu = new ScoreAnswer(100, 1000.0, new long[] {1, 2, 3}, new float[] {9f, 8.00001f, 8f});
        assertNull(new ScoreAnswer(100, 1000.001, new long[] {1, 3, 2}, new float[] {9f, 8.00001f, 8f}).disagreement(cpu),
                "rows 2 and 3 score within 1e-5 of each other: either order is right");
        assertTrue(new ScoreAnswer(100, 1000.0, new long[] {1, 4, 3}, new float[] {9f, 8.00001f, 8f}).disagreement(cpu).contains("rank 2: row"));
        assertTrue(new ScoreAnswer(100, 1001.0, new long[] {1, 2, 3}, new float[] {9f, 8.00001f, 8f}).disagreement(cpu).contains("total"));
        assertTrue(new ScoreAnswer(99, 1000.0, new long[] {1, 2, 3}, new float[] {9f, 8.00001f, 8f}).disagreement(cpu).contains("rows 99"));
        assertTrue(new ScoreAnswer(100, 1000.0, new long[] {1, 2}, new float[] {9f, 8.00001f}).disagreement(cpu).contains("2 best rows"));
    }

    @Test
    void mergingKeepsTheBestKAndTiesGoToTheSmallerId() {
        ScoreAnswer a = new ScoreAnswer(2, 3.0, new long[] {5, 1}, new float[] {2f, 1f});
        ScoreAnswer b = new ScoreAnswer(2, 4.0, new long[] {2, 4}, new float[] {2f, 2f});
        ScoreAnswer m = a.merge(b, 3);
        assertEquals(4, m.rows);
        assertEquals(7.0, m.total);
        assertEquals(List.of(2L, 4L, 5L), List.of(m.ids[0], m.ids[1], m.ids[2]));
    }

    @Test
    void theRunnersLocalModeRunsEndToEnd() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        int exit = VectorScoringMain.run(new String[] {"local", "--master", "local[2]", "--rows", "20000", "--partitions", "4", "--runs", "1"},
                new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String report = bytes.toString(StandardCharsets.UTF_8);
        assertEquals(0, exit, report);
        assertTrue(report.contains("CPU answer == GPU answer: not compared (the CPU stand-in driver runs no kernels)"), report);
        assertTrue(report.contains("throughput: CPU ") && report.contains("task handles open after the jobs: 0")
                && report.strip().endsWith("RESULT PASS"), report);
    }

    /** Local masters admit as many tasks to the GPU at once as they have cores; a cluster keeps the default. */
    @Test
    void localMastersAdmitOneTaskPerCore() {
        assertEquals(16, VectorScoringMain.localCores("local[16]"));
        assertEquals(4, VectorScoringMain.localCores("local[4, 2]"));
        assertEquals(Runtime.getRuntime().availableProcessors(), VectorScoringMain.localCores("local[*]"));
        assertEquals(0, VectorScoringMain.localCores("local-cluster[1,4,1024]"));
        assertEquals("8", VectorScoringMain.conf("local[8]").get(dev.cuhandle.spark.GpuAdmission.CONCURRENT_TASKS_KEY));
        assertEquals(false, VectorScoringMain.conf("local-cluster[1,4,1024]").contains(dev.cuhandle.spark.GpuAdmission.CONCURRENT_TASKS_KEY));
    }
}
