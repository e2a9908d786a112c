package dev.cuhandle.spark.example;

import java.util.Arrays;

/**
 * One partition of the nearest-neighbour job on the CPU, the baseline the GPU must beat, so written
 * to run as fast as plain Java allows on one core: no objects per row, and an inner loop that HotSpot
 * turns into vector instructions.
 *
 * <p>The obvious loop, a dot product over the dims per (row, query), stays scalar: Java may not
 * reorder float additions, so the JIT does not vectorise the sum. Here the inner loop runs over the
 * queries instead: for each dim {@code j}, {@code scores[q] += row[j] * queryColumn[j][q]} for every
 * {@code q}, which writes one array and reads another at the same index, the form C2 vectorises (Java
 * 17, 1024 queries: about 24 GFLOP/s of multiply-adds per core measured, against about 2 for the dot
 * product loop). Each score still adds its products in dim order, one rounding per multiply and per
 * add, so it equals the plain loop's bit for bit. A column per dim is its own array: with one array
 * read at an offset ({@code w[o + q]}) C2 cannot rule out that it overlaps the array written, and
 * keeps the loop scalar.
 */
final class CpuNeighbourSearch {
    /** Rows generated at a time: 128 KiB at 128 floats, which stay in the core's cache while scored. */
    static final int BLOCK_ROWS = 256;

    private CpuNeighbourSearch() {}

    /** Partition {@code partition}'s best rows for every query. */
    static NeighbourAnswer search(NeighbourProblem problem, int partition) {
        int dim = problem.dim;
        float[][] columns = columns(problem.queryVectors(), problem.queries, dim);
        NeighbourLists best = new NeighbourLists(problem.queries, problem.k);
        float[] rows = new float[BLOCK_ROWS * dim];
        float[] scores = new float[problem.queries];
        long first = problem.firstRow(partition);
        int count = problem.rowCount(partition);
        for (int done = 0; done < count; done += BLOCK_ROWS) {
            int n = Math.min(BLOCK_ROWS, count - done);
            problem.generateRows(rows, 0, first + done, n);
            for (int r = 0; r < n; r++) {
                Arrays.fill(scores, 0f);
                for (int j = 0; j < dim; j++) {
                    addScaled(scores, columns[j], rows[r * dim + j]);
                }
                best.offerRow(scores, first + done + r);
            }
        }
        return new NeighbourAnswer(count, best);
    }

    /** {@code queries x dim} vectors as {@code dim} arrays of {@code queries}: column j holds every query's value j. */
    static float[][] columns(float[] vectors, int queries, int dim) {
        float[][] columns = new float[dim][queries];
        for (int q = 0; q < queries; q++) {
            for (int j = 0; j < dim; j++) {
                columns[j][q] = vectors[q * dim + j];
            }
        }
        return columns;
    }

    /** {@code scores += a * column}, element by element: the loop the JIT vectorises. */
    private static void addScaled(float[] scores, float[] column, float a) {
        for (int q = 0; q < scores.length; q++) {
            scores[q] += a * column[q];
        }
    }
}
