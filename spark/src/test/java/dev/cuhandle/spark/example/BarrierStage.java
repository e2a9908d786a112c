package dev.cuhandle.spark.example;

import java.io.Serializable;
import java.util.Iterator;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import scala.Function1;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag$;
import scala.reflect.ClassTag;

/**
 * {@code rdd.barrier().mapPartitions(f)} for Java: Spark's barrier API takes a Scala function and a
 * ClassTag, with no Java wrapper. A barrier stage launches all its tasks at once (or none), and
 * {@code BarrierTaskContext.barrier()} lets them wait for each other.
 *
 * <p>A barrier stage submitted before its executors have registered is not queued but retried
 * every {@code spark.scheduler.barrier.maxConcurrentTasksCheck.interval} (15 s by default):
 * {@link #awaitExecutors} first.
 */
public final class BarrierStage {
    private BarrierStage() {}

    /** Waits until {@code executors} executors (besides the driver) have registered. */
    public static void awaitExecutors(JavaSparkContext sc, int executors, long timeoutMillis) {
        long deadline = System.nanoTime() + timeoutMillis * 1_000_000;
        while (sc.sc().statusTracker().getExecutorInfos().length < executors + 1) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(executors + " executor(s) did not register within " + timeoutMillis + " ms");
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for executors", e);
            }
        }
    }

    /** The partitions of {@code rdd} mapped by {@code f}, all tasks running together. */
    public static <T, S> JavaRDD<S> mapPartitions(JavaRDD<T> rdd, FlatMapFunction<Iterator<T>, S> f, Class<S> type) {
        ClassTag<S> tag = ClassTag$.MODULE$.apply(type);
        Function1<scala.collection.Iterator<T>, scala.collection.Iterator<S>> scalaF =
                (Function1<scala.collection.Iterator<T>, scala.collection.Iterator<S>> & Serializable) it -> {
                    try {
                        return CollectionConverters.asScala(f.call(CollectionConverters.asJava(it)));
                    } catch (RuntimeException | Error e) {
                        throw e;
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                };
        return JavaRDD.fromRDD(rdd.rdd().barrier().mapPartitions(scalaF, false, tag), tag);
    }
}
