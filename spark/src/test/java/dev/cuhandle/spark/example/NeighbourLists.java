package dev.cuhandle.spark.example;

import java.io.Serializable;
import java.util.Arrays;

/**
 * For each query, the {@code k} best rows offered so far, best first: a higher score first, equal
 * scores the smaller row id first, empty slots (id -1, score -infinity) last. The same order as the
 * GPU kernels' ({@code knn_topk.cu}), so that both paths settle ties alike; the order never depends
 * on the order of the offers, so merging partitions' lists in any order gives the same lists.
 */
final class NeighbourLists implements Serializable {
    private static final long serialVersionUID = 1L;

    final int queries;
    final int k;
    /** {@code scores[q * k + rank]}. */
    final float[] scores;
    /** {@code ids[q * k + rank]}; -1 in an empty slot. */
    final long[] ids;

    NeighbourLists(int queries, int k) {
        this.queries = queries;
        this.k = k;
        this.scores = new float[queries * k];
        this.ids = new long[queries * k];
        Arrays.fill(scores, Float.NEGATIVE_INFINITY);
        Arrays.fill(ids, -1);
    }

    /** Whether {@code (score, id)} comes before {@code (otherScore, otherId)}. */
    static boolean ranksBefore(float score, long id, float otherScore, long otherId) {
        if (otherId < 0) {
            return id >= 0;
        }
        if (id < 0) {
            return false;
        }
        return score > otherScore || (score == otherScore && id < otherId);
    }

    /** Puts row {@code id} with {@code score} into query {@code q}'s list if it ranks among the best k. */
    void offer(int q, float score, long id) {
        int first = q * k;
        int p = first + k - 1;
        if (!ranksBefore(score, id, scores[p], ids[p])) {
            return;
        }
        while (p > first && ranksBefore(score, id, scores[p - 1], ids[p - 1])) {
            scores[p] = scores[p - 1];
            ids[p] = ids[p - 1];
            p--;
        }
        scores[p] = score;
        ids[p] = id;
    }

    /**
     * Offers row {@code id} to every query, {@code rowScores[q]} being its score for query {@code q}. Most
     * scores fall below the list's last one and cost one comparison.
     */
    void offerRow(float[] rowScores, long id) {
        for (int q = 0; q < queries; q++) {
            if (rowScores[q] >= scores[q * k + k - 1]) {
                offer(q, rowScores[q], id);
            }
        }
    }

    /**
     * Offers candidate lists laid out as the GPU returns them: {@code perQuery} per query, query after query;
     * a candidate's row is {@code idBase + candidateIds[i]}, none where the id is negative.
     */
    void offerCandidates(float[] candidateScores, int[] candidateIds, int perQuery, long idBase) {
        for (int q = 0; q < queries; q++) {
            for (int i = q * perQuery; i < (q + 1) * perQuery; i++) {
                if (candidateIds[i] >= 0) {
                    offer(q, candidateScores[i], idBase + candidateIds[i]);
                }
            }
        }
    }

    /** Writes this one query's list as the GPU kernels lay out candidates: scores and int ids from {@code at}. */
    void copyTo(float[] candidateScores, int[] candidateIds, int at) {
        for (int r = 0; r < k; r++) {
            candidateScores[at + r] = scores[r];
            candidateIds[at + r] = (int) ids[r];
        }
    }

    /** These lists and {@code other}'s as one (neither is changed). */
    NeighbourLists merge(NeighbourLists other) {
        if (other.queries != queries || other.k != k) {
            throw new IllegalArgumentException(other.queries + " lists of " + other.k + " merged with " + queries + " of " + k);
        }
        NeighbourLists merged = new NeighbourLists(queries, k);
        for (NeighbourLists lists : new NeighbourLists[] {this, other}) {
            for (int i = 0; i < lists.ids.length; i++) {
                if (lists.ids[i] >= 0) {
                    merged.offer(i / k, lists.scores[i], lists.ids[i]);
                }
            }
        }
        return merged;
    }

    /** Whether both hold the same rows with bit-identical scores. */
    boolean sameAs(NeighbourLists other) {
        return queries == other.queries && k == other.k && Arrays.equals(ids, other.ids) && Arrays.equals(scores, other.scores);
    }

    /** Query {@code q}'s list, as "id=score" pairs. */
    String describe(int q) {
        StringBuilder s = new StringBuilder("query ").append(q).append(':');
        for (int r = 0; r < k; r++) {
            s.append(' ').append(ids[q * k + r]).append('=').append(scores[q * k + r]);
        }
        return s.toString();
    }
}
