package dev.cuhandle.spark.example;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;

/**
 * What the scoring job computes over a set of rows: how many, the sum of their scores, and the
 * k best rows (ids and scores, best first). Partitions compute one each; {@link #merge} combines
 * them, so the same type is a partition's answer and the job's.
 *
 * <p>A row's id is its partition in the upper 32 bits and its index in the partition below: the
 * same rows get the same ids in every run over the same cached data.
 */
public final class ScoreAnswer implements Serializable {
    private static final long serialVersionUID = 1L;

    final long rows;
    final double total;
    final long[] ids;
    final float[] scores;

    ScoreAnswer(long rows, double total, long[] ids, float[] scores) {
        if (ids.length != scores.length) {
            throw new IllegalArgumentException(ids.length + " ids but " + scores.length + " scores");
        }
        this.rows = rows;
        this.total = total;
        this.ids = ids;
        this.scores = scores;
    }

    static long rowId(int partition, long index) {
        return ((long) partition << 32) | index;
    }

    /** This answer and {@code other} as one: rows and totals add up, the best k of both remain. */
    ScoreAnswer merge(ScoreAnswer other, int k) {
        TopK best = new TopK(k);
        for (int i = 0; i < ids.length; i++) {
            best.offer(ids[i], scores[i]);
        }
        for (int i = 0; i < other.ids.length; i++) {
            best.offer(other.ids[i], other.scores[i]);
        }
        return best.answer(rows + other.rows, total + other.total);
    }

    /**
     * Why this answer (the GPU's) and {@code expected} (the CPU's) disagree, or null when they agree:
     * the same row count, totals within {@code 1e-5} relative, and at every rank scores within
     * {@code 1e-5} relative and the same row, unless the two rows there score within that tolerance
     * of each other (float sums in another order may swap near ties).
     */
    String disagreement(ScoreAnswer expected) {
        List<String> problems = new ArrayList<>();
        if (rows != expected.rows) {
            problems.add("rows " + rows + " != " + expected.rows);
        }
        if (!close(total, expected.total)) {
            problems.add("total " + total + " != " + expected.total);
        }
        if (ids.length != expected.ids.length) {
            problems.add(ids.length + " best rows != " + expected.ids.length);
        } else {
            for (int r = 0; r < ids.length; r++) {
                if (!close(scores[r], expected.scores[r])) {
                    problems.add("rank " + (r + 1) + ": score " + scores[r] + " != " + expected.scores[r]);
                } else if (ids[r] != expected.ids[r] && !nearTie(expected, r)) {
                    problems.add("rank " + (r + 1) + ": row " + describe(ids[r]) + " != " + describe(expected.ids[r]));
                }
            }
        }
        return problems.isEmpty() ? null : String.join("; ", problems);
    }

    /** Whether this answer's row at rank {@code r} appears among {@code expected}'s with a score within tolerance. */
    private boolean nearTie(ScoreAnswer expected, int r) {
        for (int i = 0; i < expected.ids.length; i++) {
            if (expected.ids[i] == ids[r]) {
                return close(expected.scores[i], expected.scores[r]);
            }
        }
        return false;
    }

    private static boolean close(double a, double b) {
        return Math.abs(a - b) <= 1e-5 * Math.max(Math.abs(a), Math.abs(b));
    }

    static String describe(long id) {
        return "p" + (id >>> 32) + "#" + (id & 0xFFFFFFFFL);
    }

    @Override
    public String toString() {
        StringBuilder s = new StringBuilder();
        s.append(rows).append(" rows, total ").append(String.format("%.6e", total)).append(", best");
        for (int i = 0; i < ids.length; i++) {
            s.append(' ').append(describe(ids[i])).append('=').append(scores[i]);
        }
        return s.toString();
    }
}
