package dev.cuhandle.spark.example;

import java.io.Serializable;

/**
 * What the nearest-neighbour job computes: for each of {@code queries} query vectors, the {@code k}
 * rows of a generated data set ({@link GeneratedRows}) with the highest dot product, over {@code rows}
 * rows of {@code dim} floats in {@code partitions} partitions. Rows are numbered 0 to rows - 1 across
 * the partitions (the ids of the answer); partition {@code p} holds a contiguous range of them.
 *
 * <p>Shipped to the tasks, which generate their rows and the queries from it.
 */
public final class NeighbourProblem implements Serializable {
    private static final long serialVersionUID = 1L;
    /** Added to the seed for the queries, so that they are not rows of the data set. */
    private static final long QUERY_SEED_OFFSET = 0x5DEECE66DL;

    final long rows;
    final int dim;
    final int queries;
    final int k;
    final int partitions;
    final long seed;

    /**
     * @throws IllegalArgumentException if a size is out of range: {@code dim} a positive multiple of 8 (the
     *     GPU kernel reads rows 8 floats at a time), {@code k} from 1 to {@link GpuNeighbourSearch#KERNEL_K},
     *     at least one query, one partition and as many rows as partitions, and fewer than 2<sup>31</sup>
     *     rows per partition (the kernel numbers a partition's rows with ints)
     */
    public NeighbourProblem(long rows, int dim, int queries, int k, int partitions, long seed) {
        if (dim < 8 || dim % 8 != 0) {
            throw new IllegalArgumentException("dim is " + dim + "; expected a positive multiple of 8");
        }
        if (k < 1 || k > GpuNeighbourSearch.KERNEL_K) {
            throw new IllegalArgumentException("k is " + k + "; expected 1 to " + GpuNeighbourSearch.KERNEL_K);
        }
        if (queries < 1 || partitions < 1 || rows < partitions) {
            throw new IllegalArgumentException(rows + " rows, " + queries + " queries, " + partitions
                    + " partitions; expected at least one query and partition, and a row per partition");
        }
        if ((rows + partitions - 1) / partitions > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(rows + " rows in " + partitions + " partitions; expected fewer than 2^31 per partition");
        }
        this.rows = rows;
        this.dim = dim;
        this.queries = queries;
        this.k = k;
        this.partitions = partitions;
        this.seed = seed;
    }

    /** The id of partition {@code p}'s first row. */
    long firstRow(int p) {
        return rows * p / partitions;
    }

    /** How many rows partition {@code p} holds. */
    int rowCount(int p) {
        return (int) (firstRow(p + 1) - firstRow(p));
    }

    /** Writes {@code count} rows from id {@code firstRow} into {@code dst} from {@code offset}, row after row. */
    void generateRows(float[] dst, int offset, long firstRow, int count) {
        GeneratedRows.fill(dst, offset, firstRow, count, dim, seed);
    }

    /** The query vectors, one after the other ({@code queries x dim}). */
    float[] queryVectors() {
        float[] q = new float[queries * dim];
        GeneratedRows.fill(q, 0, 0, queries, dim, seed + QUERY_SEED_OFFSET);
        return q;
    }

    /** {@code rows * queries * dim}: the multiply-adds of the job. */
    double multiplyAdds() {
        return (double) rows * queries * dim;
    }

    @Override
    public String toString() {
        return rows + " rows x " + dim + " floats in " + partitions + " partitions, " + queries + " queries, k " + k + ", seed " + seed;
    }
}
