package dev.cuhandle.spark.example;

import java.io.Serializable;

/**
 * What the nearest-neighbour job computes over a set of rows: how many rows it searched and, for each
 * query, the best k of them. Partitions compute one each; {@link #merge} combines them on the driver,
 * so the same type is a partition's answer and the job's.
 */
public final class NeighbourAnswer implements Serializable {
    private static final long serialVersionUID = 1L;

    final long rows;
    final NeighbourLists lists;

    NeighbourAnswer(long rows, NeighbourLists lists) {
        this.rows = rows;
        this.lists = lists;
    }

    /** This answer and {@code other} as one: the rows add up, each query keeps the best k of both. */
    NeighbourAnswer merge(NeighbourAnswer other) {
        return new NeighbourAnswer(rows + other.rows, lists.merge(other.lists));
    }

    /** Whether both are bit for bit the same (runs of one path over the same rows must be). */
    boolean sameAs(NeighbourAnswer other) {
        return rows == other.rows && lists.sameAs(other.lists);
    }

    /** The row count and the lists of the first {@code shown} queries. */
    String summary(int shown) {
        StringBuilder s = new StringBuilder().append(rows).append(" rows, ").append(lists.queries).append(" queries, k ").append(lists.k);
        for (int q = 0; q < Math.min(shown, lists.queries); q++) {
            s.append("; ").append(lists.describe(q));
        }
        return s.toString();
    }

    @Override
    public String toString() {
        return summary(1);
    }
}
