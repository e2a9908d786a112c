package dev.cuhandle.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cuhandle.Cuda;
import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.Handle;
import dev.cuhandle.SmPartition;
import dev.cuhandle.StandIn;
import dev.cuhandle.spark.example.BarrierStage;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.SparkException;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code spark.cuhandle.smPartitions} in Spark local mode on the CPU stand-in driver (132 SMs, green contexts from
 * CUDA 12.4): concurrent tasks get handles on distinct SM partitions, which count free again when the tasks end
 * (success, failure, kill) and serve the next jobs; more tasks than partitions share the least-held ones; a
 * restarted SparkContext splits anew; a split the device cannot make falls back to ordinary handles with a
 * warning; bad values fail the task naming the key and the value.
 */
class SmPartitionTasksTest {
    private static final String KEY = GpuSmPartitions.SM_PARTITIONS_KEY;
    /** Tasks ended by an interrupt while holding their partitions (local mode: this JVM). */
    private static final AtomicInteger KILLED = new AtomicInteger();
    /**
     * Set once the four tasks of a job held a partition at one moment: a task that polls the count only then
     * could miss that moment (task 0 fails at once and frees its partition) and wait out its deadline.
     */
    private static final AtomicBoolean ALL_HELD = new AtomicBoolean();

    @BeforeAll
    static void standIn() {
        TestSpark.requireStandIn();
        assertEquals("", Cuda.device(0).smPartitionSupport(), "the stand-in runs as CUDA 13.0, with green contexts");
    }

    /** What a task saw: its handle's partition SMs and context id, and the tasks per partition while all held theirs. */
    record Seen(int sms, long contextId, List<Integer> perPartition) implements java.io.Serializable {}

    @Test
    void fourConcurrentTasksGetFourDistinctPartitionsThatTheNextJobsReuse() throws Exception {
        JavaSparkContext sc = TestSpark.start("local[4]", KEY, "4", GpuAdmission.CONCURRENT_TASKS_KEY, "4");
        Set<Long> firstIds;
        try {
            List<Seen> first = atOnce(sc, 4);
            firstIds = contextIds(first);
            SmPartitionPool pool = GpuSmPartitions.pool(0, 4);
            assertNotNull(pool, "the first task split device 0");
            Set<Long> poolIds = new HashSet<>();
            for (SmPartition p : pool.partitions().list()) {
                assertEquals(32, p.sms(), "132 SMs in 4 partitions: 4 x 32, 4 left over");
                poolIds.add(p.contextId());
            }
            assertEquals(poolIds, firstIds, "4 tasks at once: one task on each partition");
            for (Seen s : first) {
                assertEquals(32, s.sms(), "the task's handle runs on its partition's 32 SMs");
                assertEquals(List.of(1, 1, 1, 1), s.perPartition(), "one task per partition while all four held their handles");
                assertTrue(StandIn.greenStreams(s.contextId()) >= 1, "the task's stream was made in its partition");
            }
            assertArrayEquals(new int[] {0, 0, 0, 0}, GpuSmPartitions.tasksPerPartition(0, 4), "every slot is free after the job");

            // The next jobs reuse the split and its free slots: again one task per partition.
            for (int job = 0; job < 3; job++) {
                List<Seen> again = atOnce(sc, 4);
                assertEquals(firstIds, contextIds(again), "job " + job + " used the same 4 partitions, one task each");
                assertTrue(GpuSmPartitions.pool(0, 4) == pool, "one split per device for the executor's life");
            }
            // One task at a time: each gets partition 0, the least held, as it is free again.
            List<Long> serial = sc.parallelize(numbers(6), 6).coalesce(1).mapPartitions(SmPartitionTasksTest::oneAfterAnother).collect();
            assertEquals(Collections.nCopies(6, pool.partitions().get(0).contextId()), serial);
            assertEquals(0, GpuTask.openHandles());
        } finally {
            sc.stop();
        }
        assertNull(GpuSmPartitions.pool(0, 4), "the plugin ended the split when the context stopped");
        for (long id : firstIds) {
            assertFalse(StandIn.greenAlive(id), "partition " + id + " was destroyed: no handle keeps it");
        }

        // A SparkContext restarted in the JVM splits anew (state per device and N, never per task id).
        JavaSparkContext next = TestSpark.start("local[4]", KEY, "4", GpuAdmission.CONCURRENT_TASKS_KEY, "4");
        try {
            Set<Long> nextIds = contextIds(atOnce(next, 4));
            assertEquals(4, nextIds.size());
            assertTrue(Collections.disjoint(firstIds, nextIds), "the new context's tasks got the new split's partitions");
        } finally {
            next.stop();
        }
        assertEquals(0, StandIn.greenCurrentViolations(), "no partition context was made current anywhere");
    }

    @Test
    void moreTasksThanPartitionsShareTheLeastHeldOnes() throws Exception {
        JavaSparkContext sc = TestSpark.start("local[6]", KEY, "4");
        try {
            List<Seen> seen = atOnce(sc, 6);
            assertEquals(4, contextIds(seen).size(), "6 tasks on 4 partitions use all 4");
            for (Seen s : seen) {
                assertEquals(List.of(2, 2, 1, 1), s.perPartition(), "the two extra tasks went to the least held, lowest first");
                assertEquals(32, s.sms());
            }
            assertArrayEquals(new int[] {0, 0, 0, 0}, GpuSmPartitions.tasksPerPartition(0, 4));
        } finally {
            sc.stop();
        }
    }

    @Test
    void failedAndKilledTasksFreeTheirPartitions() throws Exception {
        JavaSparkContext sc = TestSpark.start("local[4]", KEY, "4", GpuAdmission.CONCURRENT_TASKS_KEY, "4");
        try {
            // Task 0 fails once all four hold a partition; the other three end normally.
            ALL_HELD.set(false);
            SparkException e = assertThrows(SparkException.class,
                    () -> sc.parallelize(numbers(4), 4).mapPartitions(p -> holdThen(p, false)).collect());
            assertTrue(String.valueOf(e.getMessage()).contains("task 0 fails on purpose"), e.getMessage());
            awaitAllFree();
            assertEquals(4, contextIds(atOnce(sc, 4)).size(), "the next job gets all four partitions");

            // All four hold a partition and wait until they are killed (cancelJobGroup with interrupts).
            KILLED.set(0);
            ALL_HELD.set(false);
            sc.setJobGroup("sm-partitions-kill", "killed while holding partitions", true);
            Future<List<Integer>> job = sc.parallelize(numbers(4), 4).mapPartitions(p -> holdThen(p, true)).collectAsync();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (sum(GpuSmPartitions.tasksPerPartition(0, 4)) < 4 && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertArrayEquals(new int[] {1, 1, 1, 1}, GpuSmPartitions.tasksPerPartition(0, 4), "all four hold a partition of their own");
            sc.cancelJobGroup("sm-partitions-kill");
            assertThrows(ExecutionException.class, () -> job.get(30, TimeUnit.SECONDS));
            awaitAllFree();
            assertEquals(4, KILLED.get(), "the four tasks ended by the kill");
            sc.clearJobGroup();
            assertEquals(4, contextIds(atOnce(sc, 4)).size(), "the next job gets all four partitions again");
        } finally {
            sc.stop();
        }
    }

    private static void awaitAllFree() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while ((GpuTask.openHandles() != 0 || sum(GpuSmPartitions.tasksPerPartition(0, 4)) != 0) && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertEquals(0, GpuTask.openHandles(), "every task handle closed");
        assertArrayEquals(new int[] {0, 0, 0, 0}, GpuSmPartitions.tasksPerPartition(0, 4), "the ended tasks freed their slots");
    }

    @Test
    void aSplitTheDeviceCannotMakeFallsBackToOrdinaryHandles() throws Exception {
        // 132 SMs in steps of 8 make at most 16 partitions: 32 cannot be made.
        JavaSparkContext sc = TestSpark.start("local[2]", KEY, "32", GpuAdmission.CONCURRENT_TASKS_KEY, "2");
        try {
            List<Seen> seen = atOnce(sc, 2);
            for (Seen s : seen) {
                assertEquals(0, s.sms(), "an ordinary handle: partitionSms() 0");
            }
            String reason = GpuSmPartitions.fallbackReason(0, 32);
            assertNotNull(reason, "the fallback is recorded");
            assertTrue(reason.startsWith("device 0 cannot be split into 32 SM partitions: "), reason);
            assertEquals(0, GpuSmPartitions.tasksPerPartition(0, 32).length);
            assertEquals(2, atOnce(sc, 2).size(), "later tasks run with ordinary handles too, without splitting again");
        } finally {
            sc.stop();
        }
        assertNull(GpuSmPartitions.fallbackReason(0, 32), "forgotten at executor shutdown");
    }

    @Test
    void anExecutorWhoseDriverHasNoGreenContextsFallsBackToOrdinaryHandles() {
        // An executor JVM of its own whose stand-in driver reports CUDA 12.3: no green contexts.
        String testClassPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        JavaSparkContext sc = TestSpark.start("local-cluster[1,2,1024]", KEY, "4",
                "spark.executor.cores", "2",
                "spark.executor.memory", "512m",
                "spark.executorEnv.CUHANDLE_STANDIN_VERSION", "12030",
                "spark.executor.extraClassPath", testClassPath,
                "spark.executor.extraJavaOptions", "-Dcuhandle.standIn=true");
        try {
            BarrierStage.awaitExecutors(sc, 1, 120_000);
            List<String> seen = sc.parallelize(numbers(2), 2).mapPartitions(SmPartitionTasksTest::handleAndFallback).collect();
            assertEquals(2, seen.size());
            for (String s : seen) {
                assertTrue(s.startsWith("partitionSms 0, open 1, fallback: device 0 cannot be split into 4 SM partitions: "), s);
                assertTrue(s.contains("12.4"), "the reason names the driver version needed: " + s);
            }
        } finally {
            sc.stop();
        }
    }

    /** In the executor: the task's handle's partition SMs, the open handles and the recorded fallback. */
    private static Iterator<String> handleAndFallback(Iterator<Integer> ignored) {
        Handle h = GpuTask.handle();
        roundTrip(h, 3);
        return Collections.singletonList("partitionSms " + h.partitionSms() + ", open " + Math.min(1, GpuTask.openHandles())
                + ", fallback: " + GpuSmPartitions.fallbackReason(0, 4)).iterator();
    }

    @Test
    void badValuesFailTheTaskNamingTheKeyAndTheValue() {
        assertEquals(0, GpuSmPartitions.parts(null), "unset: off");
        assertEquals(0, GpuSmPartitions.parts(" "));
        assertEquals(1, GpuSmPartitions.parts("1"));
        assertEquals(4, GpuSmPartitions.parts(" 4 "));
        for (String bad : List.of("0", "-1", "abc", "2.5", "99999999999")) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> GpuSmPartitions.parts(bad));
            assertEquals(KEY + "=" + bad + " is not a valid number of SM partitions; expected a whole number from 1: how many SM partitions "
                    + "each GPU of an executor is split into, one per concurrently running task (leave it unset for ordinary handles)",
                    e.getMessage());
        }
        for (String bad : List.of("0", "-1", "abc")) {
            JavaSparkContext sc = TestSpark.start("local[1]", KEY, bad);
            try {
                SparkException e = assertThrows(SparkException.class,
                        () -> sc.parallelize(numbers(1), 1).mapPartitions(SmPartitionTasksTest::oneAfterAnother).collect());
                assertTrue(String.valueOf(e.getMessage()).contains("IllegalStateException: " + KEY + "=" + bad
                        + " is not a valid number of SM partitions; expected a whole number from 1"), e.getMessage());
                assertEquals(0, GpuAdmission.holders(0), "a refused task holds no permit");
                assertEquals(0, GpuTask.openHandles());
            } finally {
                sc.stop();
            }
        }
    }

    /** {@code tasks} tasks held at once by a barrier stage, each with its handle. */
    private static List<Seen> atOnce(JavaSparkContext sc, int tasks) throws Exception {
        return BarrierStage.mapPartitions(sc.parallelize(numbers(tasks), tasks), SmPartitionTasksTest::holdAtTheBarrier, Seen.class)
                .collectAsync().get(60, TimeUnit.SECONDS);
    }

    private static Iterator<Seen> holdAtTheBarrier(Iterator<Integer> partition) {
        int p = partition.next();
        BarrierTaskContext task = BarrierTaskContext.get();
        Handle h = GpuTask.handle();
        roundTrip(h, p);
        task.barrier(); // every task holds its handle now
        List<Integer> perPartition = new ArrayList<>();
        for (int n : GpuSmPartitions.tasksPerPartition(0, GpuSmPartitions.configuredParts())) {
            perPartition.add(n);
        }
        task.barrier(); // none ends before all have looked
        return Collections.singletonList(new Seen(h.partitionSms(), h.contextId(), perPartition)).iterator();
    }

    /** One task's partitions' context ids, one per task of the coalesced partition. */
    private static Iterator<Long> oneAfterAnother(Iterator<Integer> numbers) {
        Handle h = GpuTask.handle();
        roundTrip(h, 7);
        List<Long> ids = new ArrayList<>();
        numbers.forEachRemaining(n -> ids.add(h.contextId()));
        return ids.iterator();
    }

    /** Takes a partition, waits until all four tasks hold one, then fails (task 0), returns, or waits to be killed. */
    private static Iterator<Integer> holdThen(Iterator<Integer> partition, boolean untilKilled) throws InterruptedException {
        int p = partition.next();
        Handle h = GpuTask.handle();
        // The kill may reach a task anywhere after it took its partition (the test cancels once all four hold one): in
        // its round trip (a cancellable wait ends with TaskKilledException) or while it waits for the others.
        try {
            roundTrip(h, p);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (!ALL_HELD.get() && System.nanoTime() < deadline) {
                if (sum(GpuSmPartitions.tasksPerPartition(0, 4)) >= 4) {
                    ALL_HELD.set(true);
                } else {
                    Thread.sleep(5);
                }
            }
            if (untilKilled) {
                Thread.sleep(TimeUnit.SECONDS.toMillis(60));
            }
        } catch (InterruptedException | org.apache.spark.TaskKilledException e) {
            if (untilKilled) {
                KILLED.incrementAndGet();
            }
            throw e;
        }
        if (!untilKilled && p == 0) {
            throw new IllegalStateException("task 0 fails on purpose");
        }
        return Collections.singletonList(p).iterator();
    }

    private static void roundTrip(Handle h, int p) {
        long[] values = {p, p + 1L, p + 2L};
        long[] back = new long[3];
        try (DeviceBuffer d = h.upload(values)) {
            d.download(back);
        }
        assertArrayEquals(values, back, "a round trip through the task's handle");
    }

    private static Set<Long> contextIds(List<Seen> seen) {
        Set<Long> ids = new HashSet<>();
        for (Seen s : seen) {
            ids.add(s.contextId());
        }
        return ids;
    }

    private static int sum(int[] counts) {
        return Arrays.stream(counts).sum();
    }

    private static List<Integer> numbers(int n) {
        return TestSpark.numbers(n);
    }
}
