package dev.cuhandle.spark.example;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cuhandle.StandIn;
import dev.cuhandle.spark.GpuTask;
import dev.cuhandle.spark.TestSpark;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Random;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The nearest-neighbour example on the CPU stand-in driver, where kernels do not run: the CPU job
 * (the reference on the GPU host) against a plain loop; the kernels' algorithm through its Java
 * model ({@link KnnKernelModel}) against a plain top-k, ties included; the host's merge of candidate
 * lists; the answer comparison; and the GPU path around the kernels (every partition searched, every
 * buffer and handle released) and the runner's knn mode. The kernels' CUDA code is checked against
 * the CPU's answer on a GPU, by that mode.
 */
class NearestNeighboursTest {
    @BeforeAll
    static void standIn() {
        TestSpark.requireStandIn();
    }

    /** Query {@code q}'s best rows by a plain loop over every row: one product and one add per dim, in order. */
    private static NeighbourLists plainTopK(float[] rows, long count, float[] queries, int nQueries, int dim, int k, boolean fused) {
        NeighbourLists best = new NeighbourLists(nQueries, k);
        for (int q = 0; q < nQueries; q++) {
            for (int r = 0; r < count; r++) {
                float s = 0;
                for (int j = 0; j < dim; j++) {
                    s = fused ? Math.fma(rows[r * dim + j], queries[q * dim + j], s) : s + rows[r * dim + j] * queries[q * dim + j];
                }
                best.offer(q, s, r);
            }
        }
        return best;
    }

    private static float[] allRows(NeighbourProblem problem) {
        float[] rows = new float[(int) problem.rows * problem.dim];
        problem.generateRows(rows, 0, 0, (int) problem.rows);
        return rows;
    }

    @Test
    void generatedRowsDependOnlyOnTheSeedAndTheRowAndLieInMinusOneToOne() {
        NeighbourProblem problem = new NeighbourProblem(1000, 16, 4, 3, 3, 11);
        float[] all = allRows(problem);
        float[] slice = new float[37 * 16];
        problem.generateRows(slice, 0, 500, 37);
        assertArrayEquals(Arrays.copyOfRange(all, 500 * 16, 537 * 16), slice, "rows 500 to 536 alone");
        for (float v : all) {
            assertTrue(v >= -1f && v < 1f, "value " + v);
        }
        float[] otherSeed = new float[all.length];
        GeneratedRows.fill(otherSeed, 0, 0, 1000, 16, 12);
        assertFalse(Arrays.equals(all, otherSeed));
    }

    @Test
    void theCpuJobEqualsAPlainLoopExactly() {
        NeighbourProblem problem = new NeighbourProblem(3 * CpuNeighbourSearch.BLOCK_ROWS + 41, 24, 37, 5, 3, 7);
        NeighbourLists expected = plainTopK(allRows(problem), problem.rows, problem.queryVectors(), problem.queries, problem.dim, problem.k, false);
        try (JavaSparkContext sc = TestSpark.start("local[2]")) {
            NeighbourAnswer cpu = NearestNeighbours.onCpu(sc, problem);
            assertEquals(problem.rows, cpu.rows);
            assertTrue(cpu.lists.sameAs(expected), () -> "CPU job " + cpu.summary(2) + " != plain loop " + new NeighbourAnswer(problem.rows, expected).summary(2));
            assertTrue(NeighbourComparison.of(cpu, new NeighbourAnswer(problem.rows, expected)).same());
        }
    }

    @ParameterizedTest
    @CsvSource({"16, 3, -1", "8, 2, 0"})
    void theKernelModelFindsThePlainTopKWithManyTiesInAnyThreadOrder(int dim, int values, int lowest) {
        // Small integers: integer scores, so many rows tie and the id order decides. With values 0 and 1 in
        // 8 dims, thousands of rows reach each query's highest score: the lists hold its smallest ids.
        int nQueries = 130; // two query tiles, the second with 2 of 128 queries
        int count = 2 * GpuNeighbourSearch.ROWS_PER_CHUNK + 300; // blocks of 5000 rows: 2 chunks, then 1; partial tiles
        Random random = new Random(3);
        float[] rows = new float[count * dim];
        float[] queries = new float[nQueries * dim];
        for (float[] a : new float[][] {rows, queries}) {
            for (int i = 0; i < a.length; i++) {
                a[i] = lowest + random.nextInt(values);
            }
        }
        NeighbourLists expected = plainTopK(rows, count, queries, nQueries, dim, KnnKernelModel.K, true);
        long firstRow = 1L << 33; // ids beyond an int: the kernels count from the partition's first row
        NeighbourLists shifted = new NeighbourLists(nQueries, KnnKernelModel.K);
        shifted.offerCandidates(expected.scores, toInts(expected.ids), KnnKernelModel.K, firstRow);
        for (long order : new long[] {-1, 1, 2}) {
            NeighbourLists model = new KnnKernelModel(order).search(rows, count, firstRow, queries, nQueries, dim, KnnKernelModel.K, 5000);
            assertTrue(model.sameAs(shifted), () -> "thread order " + order + ": " + model.describe(129) + " != " + shifted.describe(129));
        }
        NeighbourLists ten = new KnnKernelModel(-1).search(rows, count, 0, queries, nQueries, dim, 10, GpuNeighbourSearch.BLOCK_ROWS);
        assertTrue(ten.sameAs(plainTopK(rows, count, queries, nQueries, dim, 10, true)), "k 10, all rows in one block");
    }

    private static int[] toInts(long[] ids) {
        return Arrays.stream(ids).mapToInt(id -> (int) id).toArray();
    }

    @Test
    void theKernelModelAgreesWithTheCpuJobOnGeneratedRows() {
        NeighbourProblem problem = new NeighbourProblem(6000, 64, 40, 10, 2, 5);
        float[] rows = allRows(problem);
        float[] queries = problem.queryVectors();
        NeighbourLists cpu = plainTopK(rows, problem.rows, queries, problem.queries, problem.dim, problem.k, false);
        NeighbourLists gpu = new KnnKernelModel(4).search(rows, (int) problem.rows, 0, queries, problem.queries, problem.dim, problem.k, 2500);
        NeighbourComparison comparison = NeighbourComparison.of(new NeighbourAnswer(problem.rows, gpu), new NeighbourAnswer(problem.rows, cpu));
        assertTrue(comparison.same(), comparison::toString);
    }

    @Test
    void candidateListsMergeIntoTheBestKWithTiesToTheSmallerIdWhateverTheOrder() {
        // Two queries, 4 candidates each (as the GPU returns them), ids relative to a base; -1 is no candidate.
        float[] scores = {5f, 7f, 5f, 9f, /* query 1 */ 1f, 1f, 1f, 2f};
        int[] ids = {3, 1, 2, -1, /* query 1 */ 9, 4, 6, 8};
        NeighbourLists lists = new NeighbourLists(2, 3);
        lists.offerCandidates(scores, ids, 4, 100);
        assertArrayEquals(new long[] {101, 102, 103, 108, 104, 106}, lists.ids, "query 0: 7, then the tie at 5 by id; query 1: 2, then ties by id");
        assertArrayEquals(new float[] {7f, 5f, 5f, 2f, 1f, 1f}, lists.scores);

        NeighbourLists other = new NeighbourLists(2, 3);
        other.offer(0, 5f, 100); // ties with 102 and 103, smaller id: ranks before them
        other.offer(1, 3f, 1);
        NeighbourLists merged = lists.merge(other);
        assertArrayEquals(new long[] {101, 100, 102, 1, 108, 104}, merged.ids);
        assertTrue(merged.sameAs(other.merge(lists)), "merging in the other order");

        NeighbourLists few = new NeighbourLists(1, 3);
        few.offer(0, 1f, 5);
        assertArrayEquals(new long[] {5, -1, -1}, few.ids, "fewer rows than k: empty slots last");
        assertEquals(Float.NEGATIVE_INFINITY, few.scores[2]);
    }

    @Test
    void theComparisonAcceptsRoundingAndNearTiesAndCountsRealDifferences() {
        NeighbourAnswer cpu = answer(new float[] {9f, 8f, 7f, /* query 1 */ 3f, 2f, 1f}, new long[] {1, 2, 3, 4, 5, 6});
        assertTrue(NeighbourComparison.of(cpu, cpu).same());
        assertTrue(NeighbourComparison.of(answer(new float[] {9.00001f, 8f, 7f, 3f, 2f, 1.00005f}, new long[] {1, 2, 3, 4, 5, 6}), cpu).same(),
                "scores within 1e-4 relative");

        NeighbourAnswer nearTies = answer(new float[] {9f, 8.0001f, 7f, 3f, 2f, 1f}, new long[] {1, 2, 3, 4, 5, 6});
        NeighbourAnswer swapped = answer(new float[] {9f, 8.0001f, 8f, 3f, 2f, 1f}, new long[] {1, 3, 2, 4, 5, 6});
        assertTrue(NeighbourComparison.of(swapped, answer(new float[] {9f, 8.0001f, 8f, 3f, 2f, 1f}, new long[] {1, 2, 3, 4, 5, 6})).same(),
                "rows 2 and 3 score within tolerance of each other: either order");
        assertTrue(NeighbourComparison.of(answer(new float[] {9f, 8.0001f, 7.0001f, 3f, 2f, 1f}, new long[] {1, 2, 77, 4, 5, 6}), nearTies).same(),
                "row 77 instead of row 3 at rank k, scoring within tolerance of it: a near-tie at the boundary");

        // Row 77 scores 9 on the GPU; the CPU has it below its third row (7): not rounding.
        NeighbourComparison wrongRow = NeighbourComparison.of(answer(new float[] {9f, 8f, 7f, 3f, 2f, 1f}, new long[] {77, 2, 3, 4, 5, 6}), cpu);
        NeighbourComparison wrongScore = NeighbourComparison.of(answer(new float[] {9f, 8f, 7f, 3f, 2.01f, 1f}, new long[] {1, 2, 3, 4, 5, 6}), cpu);
        NeighbourComparison swappedFar = NeighbourComparison.of(answer(new float[] {9f, 8f, 7f, 3f, 2f, 1f}, new long[] {2, 1, 3, 4, 5, 6}), cpu);
        NeighbourComparison both = NeighbourComparison.of(answer(new float[] {9f, 8f, 7f, 3f, 2f, 1f}, new long[] {77, 2, 3, 66, 5, 6}), cpu);
        assertEquals(1, wrongRow.differingQueries);
        assertTrue(wrongRow.toString().startsWith("NO: 1 of 2 queries differ; query 0: rank 1: row 77=9.0 != 1=9.0"), wrongRow::toString);
        assertTrue(wrongScore.toString().contains("query 1: rank 2: score 2.01 != 2.0"), wrongScore::toString);
        assertTrue(swappedFar.toString().contains("query 0: rank 1: row 2"), "rows 1 and 2 are 1.0 apart: no near-tie");
        assertEquals(2, both.differingQueries);
        NeighbourComparison rows = NeighbourComparison.of(new NeighbourAnswer(99, cpu.lists), cpu);
        assertTrue(!rows.same() && rows.toString().contains("rows searched 99 != 100"), rows::toString);
    }

    private static NeighbourAnswer answer(float[] scores, long[] ids) {
        NeighbourLists lists = new NeighbourLists(2, 3);
        System.arraycopy(scores, 0, lists.scores, 0, scores.length);
        System.arraycopy(ids, 0, lists.ids, 0, ids.length);
        return new NeighbourAnswer(100, lists);
    }

    @Test
    void theGpuJobSearchesEveryPartitionInBlocksAndReleasesEverything() {
        // 2 partitions of 3 blocks each (the last partial): both slots, each reused, and both handles per task.
        NeighbourProblem problem = new NeighbourProblem(2L * (2 * GpuNeighbourSearch.BLOCK_ROWS + 1000), 8, 20, 4, 2, 9);
        int allocationsBefore = StandIn.liveAllocations();
        try (JavaSparkContext sc = TestSpark.start("local[2]")) {
            NeighbourAnswer gpu = NearestNeighbours.onGpu(sc, problem);
            assertEquals(problem.rows, gpu.rows, "rows searched on the GPU path");
            assertEquals(problem.queries * problem.k, gpu.lists.ids.length);
            assertTrue(Arrays.stream(gpu.lists.ids).allMatch(id -> id == -1), "no kernel ran: the running best stays empty");
            GpuPhaseTimes times = NearestNeighbours.gpuBreakdown(sc, problem, 1);
            assertEquals(problem.rowCount(1), times.rows);
            assertEquals(3, times.blocks);
            assertTrue(times.packMs > 0 && times.hostMergeMs > 0, () -> times.describe(problem.queries, problem.dim));
            assertEquals(0, GpuTask.openHandles());
        }
        assertEquals(allocationsBefore, StandIn.liveAllocations(), "device buffers left allocated");
    }

    @Test
    void theRunnersKnnModeRunsEndToEnd() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        int exit = VectorScoringMain.run(new String[] {"knn", "--master", "local[2]", "--rows", "20000", "--dim", "16", "--queries", "32", "--partitions",
            "4", "--runs", "1"}, new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String report = bytes.toString(StandardCharsets.UTF_8);
        assertEquals(0, exit, report);
        assertTrue(report.contains("CPU answer == GPU answer: not compared (the CPU stand-in driver runs no kernels)"), report);
        assertTrue(report.contains("throughput: CPU ") && report.contains("x (not required on the CPU stand-in driver)")
                && report.contains("GPU breakdown, one task alone") && report.contains("task handles open after the jobs: 0")
                && report.strip().endsWith("RESULT PASS"), report);
    }
}
