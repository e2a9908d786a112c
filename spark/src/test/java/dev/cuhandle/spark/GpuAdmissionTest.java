package dev.cuhandle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.Handle;
import dev.cuhandle.spark.example.BarrierStage;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.SparkException;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.util.TaskCompletionListener;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Admission control in Spark local mode: eight tasks on eight threads with
 * {@code spark.cuhandle.concurrentGpuTasks=2} hold the GPU two at a time and all succeed; a barrier
 * stage is admitted whole; a bad value fails the task naming the key and the value. Each task takes
 * its permit and releases it from a completion listener, as TaskHandles is to do at a task's first
 * {@link GpuTask#handle()}; a task asking again gets the permit it holds, so both may ask.
 */
class GpuAdmissionTest {
    private static final int TASKS = 8;
    private static final long HOLD_MILLIS = 300;
    /**
     * Tasks using the GPU, as the tasks count themselves: from after they have their permit to the end of
     * their code, which lies inside the time they hold it (it is released after the task's end).
     */
    private static final AtomicInteger HOLDING = new AtomicInteger();
    private static final AtomicInteger MOST_HOLDING = new AtomicInteger();

    @BeforeAll
    static void standIn() {
        TestSpark.requireStandIn();
    }

    @Test
    void eightTasksWithTwoPermitsNeverHoldTheGpuMoreThanTwoAtOnceAndAllSucceed() {
        HOLDING.set(0);
        MOST_HOLDING.set(0);
        long waitsBefore = GpuAdmission.waits();
        long waitedBefore = GpuAdmission.waitedNanos();
        JavaSparkContext sc = TestSpark.start("local[" + TASKS + "]", GpuAdmission.CONCURRENT_TASKS_KEY, "2");
        List<Long> waited;
        long took;
        try {
            long start = System.nanoTime();
            waited = sc.parallelize(numbers(TASKS), TASKS).mapPartitions(GpuAdmissionTest::holdTheGpu).collect();
            took = System.nanoTime() - start;
            // Local mode: the job ended after every task's completion listeners ran.
            assertEquals(0, GpuAdmission.holders(0), "permits still held after the job");
            assertEquals(0, GpuAdmission.waiting(0), "tasks still waiting after the job");
            assertEquals(0, GpuTask.openHandles());
        } finally {
            sc.stop();
        }
        assertEquals(TASKS, waited.size(), "every task succeeded");
        assertTrue(MOST_HOLDING.get() <= 2, MOST_HOLDING.get() + " tasks held the GPU at once");
        assertEquals(2, MOST_HOLDING.get(), "two tasks held the GPU at once at some point");
        assertTrue(GpuAdmission.maxHolders(0) >= 2, "the holder count reached 2");
        assertTrue(took >= TimeUnit.MILLISECONDS.toNanos(HOLD_MILLIS * TASKS / 2),
                "8 tasks of " + HOLD_MILLIS + " ms, 2 at a time, took only " + took / 1_000_000 + " ms");
        // All 8 start together on local[8]: 2 are admitted at once, the other 6 wait.
        long tasksThatWaited = waited.stream().filter(n -> n > 0).count();
        assertTrue(tasksThatWaited >= TASKS - 2, tasksThatWaited + " tasks waited");
        assertTrue(GpuAdmission.waits() - waitsBefore >= tasksThatWaited);
        assertTrue(GpuAdmission.waitedNanos() - waitedBefore >= waited.stream().mapToLong(Long::longValue).sum(),
                "the counter holds every task's wait");
    }

    /**
     * Rule S2: permits are kept per task, not per attempt id. Attempt ids restart at 0 in every SparkContext, so two
     * tasks of two contexts of one JVM can carry the same id; each must get a permit of its own.
     */
    @Test
    void tasksWithTheSameAttemptIdOfTwoContextsGetAPermitEach() {
        TaskContext older = org.apache.spark.TaskContext$.MODULE$.empty(); // Spark's own empty task context (private[spark] in Scala)
        TaskContext newer = org.apache.spark.TaskContext$.MODULE$.empty();
        assertEquals(older.taskAttemptId(), newer.taskAttemptId(), "both carry attempt id " + older.taskAttemptId());
        GpuAdmission.Permit first = GpuAdmission.acquire(older, 0);
        GpuAdmission.Permit second = GpuAdmission.acquire(newer, 0);
        try {
            assertNotSame(first, second, "the newer task was handed the older task's permit");
            assertSame(first, GpuAdmission.acquire(older, 0), "a task asking again gets the permit it holds");
            assertEquals(2, GpuAdmission.holders(0));
        } finally {
            first.release();
            second.release();
        }
        assertEquals(0, GpuAdmission.holders(0));
    }

    /** Takes the task's permit, uses the GPU for HOLD_MILLIS and returns how long it waited for the permit. */
    private static Iterator<Long> holdTheGpu(Iterator<Integer> partition) throws InterruptedException {
        int p = partition.next();
        TaskContext task = TaskContext.get();
        GpuAdmission.Permit permit = takePermit(task);
        if (GpuAdmission.acquire(task, 0) != permit) {
            throw new IllegalStateException("a task asking again got another permit: it could wait for itself");
        }
        Handle h = GpuTask.handle();
        MOST_HOLDING.accumulateAndGet(HOLDING.incrementAndGet(), Math::max);
        try {
            long[] values = {p, p + 1L, p + 2L};
            long[] back = new long[values.length];
            try (DeviceBuffer d = h.upload(values)) {
                GpuTask.synchronize(h);
                d.download(back);
            }
            Thread.sleep(HOLD_MILLIS);
            if (back[2] != p + 2L) {
                throw new IllegalStateException("partition " + p + ": the round trip gave " + back[2]);
            }
        } finally {
            HOLDING.decrementAndGet();
        }
        return Collections.singletonList(permit.waitedNanos()).iterator();
    }

    /** The permit as TaskHandles takes it: before the handle, released by a listener that runs after the handle's. */
    private static GpuAdmission.Permit takePermit(TaskContext task) {
        GpuAdmission.Permit permit = GpuAdmission.acquire(task, DeviceAssignment.forTask(task).first());
        task.addTaskCompletionListener((TaskCompletionListener) completed -> permit.release());
        return permit;
    }

    @Test
    void aBarrierStageIsAdmittedWholeBeyondTheLimit() throws Exception {
        HOLDING.set(0);
        MOST_HOLDING.set(0);
        JavaSparkContext sc = TestSpark.start("local[4]", GpuAdmission.CONCURRENT_TASKS_KEY, "1");
        try {
            // Waiting for a permit inside a barrier stage would stop it for good: a timeout fails the test.
            List<Integer> seen = BarrierStage.mapPartitions(sc.parallelize(numbers(4), 4), GpuAdmissionTest::holdAtTheBarrier, Integer.class)
                    .collectAsync().get(60, TimeUnit.SECONDS);
            assertEquals(List.of(4, 4, 4, 4), seen, "each task saw all four holding the GPU at the barrier");
            assertEquals(0, GpuAdmission.holders(0));
        } finally {
            sc.stop();
        }
        assertEquals(4, MOST_HOLDING.get());
    }

    private static Iterator<Integer> holdAtTheBarrier(Iterator<Integer> ignored) {
        BarrierTaskContext task = BarrierTaskContext.get();
        takePermit(task);
        MOST_HOLDING.accumulateAndGet(HOLDING.incrementAndGet(), Math::max);
        task.barrier(); // all four hold a permit now
        int holding = HOLDING.get();
        task.barrier(); // none stops counting before all have looked
        HOLDING.decrementAndGet();
        return Collections.singletonList(holding).iterator();
    }

    @Test
    void aBadConcurrentGpuTasksFailsTheTaskNamingTheKeyAndTheValue() {
        JavaSparkContext sc = TestSpark.start("local[1]", GpuAdmission.CONCURRENT_TASKS_KEY, "zero");
        try {
            SparkException e = assertThrows(SparkException.class,
                    () -> sc.parallelize(numbers(1), 1).mapPartitions(GpuAdmissionTest::holdTheGpu).collect());
            assertTrue(String.valueOf(e.getMessage()).contains("IllegalStateException: spark.cuhandle.concurrentGpuTasks=zero is not a valid "
                    + "number of tasks; expected a whole number from 1"), e.getMessage());
            assertEquals(0, GpuAdmission.holders(0), "a refused task holds no permit");
        } finally {
            sc.stop();
        }
    }

    @Test
    void theLimitIsTheDefaultWhenUnsetAndAWholeNumberFromOneOtherwise() {
        assertEquals(2, GpuAdmission.DEFAULT_CONCURRENT_TASKS);
        assertEquals(GpuAdmission.DEFAULT_CONCURRENT_TASKS, GpuAdmission.limit(null));
        assertEquals(GpuAdmission.DEFAULT_CONCURRENT_TASKS, GpuAdmission.limit(" "));
        assertEquals(1, GpuAdmission.limit("1"));
        assertEquals(4, GpuAdmission.limit(" 4 "));
        for (String bad : List.of("0", "-1", "2.5", "two", "99999999999")) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> GpuAdmission.limit(bad));
            assertEquals("spark.cuhandle.concurrentGpuTasks=" + bad + " is not a valid number of tasks; expected a whole number from 1: "
                    + "how many tasks of an executor may use one GPU at once (default 2)", e.getMessage());
        }
    }

    private static List<Integer> numbers(int n) {
        List<Integer> list = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            list.add(i);
        }
        return list;
    }
}
