package dev.cuhandle.spark.example;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Whether the GPU's nearest neighbours are the CPU's, up to float rounding. The two sum the same
 * products in another order (the GPU with fused multiply-adds), so a score may differ in its last
 * bits, about 1e-6 relative for 128 dims, and two rows whose scores are that close may swap places or,
 * at rank k, one may replace the other. A wrong dimension, row or query moves a score by about 1e-2.
 *
 * <p>A query agrees when at every rank the scores are within {@link #TOLERANCE} (relative to the larger
 * of both and 1, so that scores near 0 are compared absolutely), and each row of the GPU's list that is
 * not the CPU's row at that rank either is in the CPU's list with a score within tolerance of the
 * CPU's score at that rank (a swap of near-equal rows), or is absent from it and scores within tolerance
 * of the CPU's last (a near-tie at rank k broken the other way).
 */
final class NeighbourComparison {
    static final double TOLERANCE = 1e-4;
    /** Differences described in {@link #toString()}. */
    private static final int DESCRIBED = 3;

    final int queries;
    final int differingQueries;
    final List<String> firstDifferences;
    final String rowCounts;

    private NeighbourComparison(int queries, int differingQueries, List<String> firstDifferences, String rowCounts) {
        this.queries = queries;
        this.differingQueries = differingQueries;
        this.firstDifferences = firstDifferences;
        this.rowCounts = rowCounts;
    }

    /** Compares {@code actual} (the GPU's) with {@code expected} (the CPU's). */
    static NeighbourComparison of(NeighbourAnswer actual, NeighbourAnswer expected) {
        NeighbourLists a = actual.lists;
        NeighbourLists e = expected.lists;
        if (a.queries != e.queries || a.k != e.k) {
            throw new IllegalArgumentException("answers of " + a.queries + " x " + a.k + " and " + e.queries + " x " + e.k);
        }
        String rowCounts = actual.rows == expected.rows ? null : "rows searched " + actual.rows + " != " + expected.rows;
        int differing = 0;
        List<String> first = new ArrayList<>();
        for (int q = 0; q < a.queries; q++) {
            String why = difference(a, e, q);
            if (why != null) {
                differing++;
                if (first.size() < DESCRIBED) {
                    first.add("query " + q + ": " + why);
                }
            }
        }
        return new NeighbourComparison(a.queries, differing, Collections.unmodifiableList(first), rowCounts);
    }

    boolean same() {
        return differingQueries == 0 && rowCounts == null;
    }

    /** Why query {@code q}'s lists disagree, or null. */
    private static String difference(NeighbourLists a, NeighbourLists e, int q) {
        int k = a.k;
        int first = q * k;
        for (int r = 0; r < k; r++) {
            float score = a.scores[first + r];
            float expectedScore = e.scores[first + r];
            long id = a.ids[first + r];
            long expectedId = e.ids[first + r];
            if ((id < 0) != (expectedId < 0)) {
                return "rank " + (r + 1) + ": row " + id + " != " + expectedId;
            }
            if (id < 0) {
                continue; // both empty: fewer rows than k
            }
            if (!close(score, expectedScore)) {
                return "rank " + (r + 1) + ": score " + score + " != " + expectedScore;
            }
            if (id != expectedId && !nearTie(e, q, id, score, expectedScore)) {
                return "rank " + (r + 1) + ": row " + id + "=" + score + " != " + expectedId + "=" + expectedScore;
            }
        }
        return null;
    }

    /** Whether row {@code id}, ranked where {@code e} has a row of {@code expectedScore}, may be there. */
    private static boolean nearTie(NeighbourLists e, int q, long id, float score, float expectedScore) {
        int first = q * e.k;
        for (int i = first; i < first + e.k; i++) {
            if (e.ids[i] == id) {
                return close(e.scores[i], expectedScore);
            }
        }
        return close(score, e.scores[first + e.k - 1]);
    }

    static boolean close(double a, double b) {
        return Math.abs(a - b) <= TOLERANCE * Math.max(1, Math.max(Math.abs(a), Math.abs(b)));
    }

    @Override
    public String toString() {
        if (same()) {
            return "yes (all " + queries + " queries agree)";
        }
        List<String> parts = new ArrayList<>();
        if (rowCounts != null) {
            parts.add(rowCounts);
        }
        if (differingQueries > 0) {
            parts.add(differingQueries + " of " + queries + " queries differ; " + String.join("; ", firstDifferences));
        }
        return "NO: " + String.join("; ", parts);
    }
}
