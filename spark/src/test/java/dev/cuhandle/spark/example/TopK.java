package dev.cuhandle.spark.example;

import java.util.PriorityQueue;

/** The k highest-scoring rows seen so far (equal scores: the smaller id ranks first). */
final class TopK {
    private final int k;
    /** The weakest kept row at the head, so that a better row replaces it in O(log k). */
    private final PriorityQueue<long[]> kept;

    TopK(int k) {
        if (k < 1) {
            throw new IllegalArgumentException("k is " + k + "; expected at least 1");
        }
        this.k = k;
        this.kept = new PriorityQueue<>(k + 1, (a, b) -> compare(a, b));
    }

    /** Orders weaker first: lower score, then larger id. Entries are {id, float bits}. */
    private static int compare(long[] a, long[] b) {
        int byScore = Float.compare(Float.intBitsToFloat((int) a[1]), Float.intBitsToFloat((int) b[1]));
        return byScore != 0 ? byScore : Long.compare(b[0], a[0]);
    }

    void offer(long id, float score) {
        long[] entry = {id, Float.floatToIntBits(score)};
        if (kept.size() < k) {
            kept.add(entry);
        } else if (compare(entry, kept.peek()) > 0) {
            kept.poll();
            kept.add(entry);
        }
    }

    /** The kept rows best first, with the given row count and total. */
    ScoreAnswer answer(long rows, double total) {
        int n = kept.size();
        long[] ids = new long[n];
        float[] scores = new float[n];
        PriorityQueue<long[]> drain = new PriorityQueue<>(kept);
        for (int i = n - 1; i >= 0; i--) {
            long[] e = drain.poll();
            ids[i] = e[0];
            scores[i] = Float.intBitsToFloat((int) e[1]);
        }
        return new ScoreAnswer(rows, total, ids, scores);
    }
}
