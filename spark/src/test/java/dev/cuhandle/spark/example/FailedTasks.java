package dev.cuhandle.spark.example;

import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;

/** Counts a context's task attempts that ended unsuccessfully (failed or killed), for the example runners' verdicts. */
final class FailedTasks {
    private FailedTasks() {}

    /** A counter of {@code sc}'s unsuccessful task ends from now on. */
    static AtomicInteger count(JavaSparkContext sc) {
        AtomicInteger failed = new AtomicInteger();
        sc.sc().addSparkListener(new SparkListener() {
            @Override
            public void onTaskEnd(SparkListenerTaskEnd end) {
                if (!end.taskInfo().successful()) {
                    failed.incrementAndGet();
                }
            }
        });
        return failed;
    }
}
