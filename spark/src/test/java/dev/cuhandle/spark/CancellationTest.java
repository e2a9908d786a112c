package dev.cuhandle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.cuhandle.Cuda;
import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.Dim3;
import dev.cuhandle.Handle;
import dev.cuhandle.Kernel;
import dev.cuhandle.StandIn;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.TaskContext;
import org.apache.spark.TaskKilled;
import org.apache.spark.api.java.JavaFutureAction;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.util.TaskCompletionListener;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A job cancelled while its tasks wait for long GPU work (the stand-in's simulated work time) ends
 * within 5 s, its tasks end killed, their handles are released only after the work they queued
 * has finished, and the next job on the same pooled threads is correct. Both ways Spark kills a
 * task are covered: with an interrupt of its thread ({@code interruptOnCancel = true}) and with
 * only the kill mark on its {@code TaskContext} (Spark's default for job groups).
 */
class CancellationTest {
    private static final int TASKS = 4;
    /** Simulated duration of each launch; a task queues ROUNDS of them, one after the other. */
    private static final int WORK_MILLIS = 1000;
    private static final int ROUNDS = 10;
    private static final long LIMIT_NANOS = TimeUnit.SECONDS.toNanos(5);

    private static volatile CountDownLatch waiting;
    /** Per task attempt: when its last launch was queued (its work ends WORK_MILLIS later at the earliest). */
    private static final Map<Long, Long> LAST_LAUNCH = new ConcurrentHashMap<>();
    /** Per task attempt: when its last completion listener ran, after the handle's listener closed the handle. */
    private static final Map<Long, Long> RELEASED = new ConcurrentHashMap<>();

    @BeforeAll
    static void standIn() {
        TestSpark.requireStandIn();
    }

    @ParameterizedTest(name = "interruptOnCancel = {0}")
    @ValueSource(booleans = {true, false})
    void aCancelledJobEndsWithinFiveSecondsAndReleasesEveryHandleAfterItsWork(boolean interruptOnCancel) throws Exception {
        LAST_LAUNCH.clear();
        RELEASED.clear();
        waiting = new CountDownLatch(TASKS);
        // All TASKS must wait on the GPU at once: admission (default 2 per device) would hold half of them back.
        JavaSparkContext sc = TestSpark.start("local[" + TASKS + "]", GpuAdmission.CONCURRENT_TASKS_KEY, String.valueOf(TASKS));
        AtomicInteger killed = new AtomicInteger();
        AtomicInteger otherEnds = new AtomicInteger();
        sc.sc().addSparkListener(new SparkListener() {
            @Override
            public void onTaskEnd(SparkListenerTaskEnd end) {
                (end.reason() instanceof TaskKilled ? killed : otherEnds).incrementAndGet();
            }
        });
        int previousWork = StandIn.setWorkMillis(WORK_MILLIS);
        try {
            sc.setJobGroup("waits-on-the-gpu", "tasks waiting for long GPU work", interruptOnCancel);
            JavaFutureAction<List<Long>> job = sc.parallelize(numbers(TASKS), TASKS).mapPartitions(CancellationTest::waitOnTheGpu).collectAsync();
            assertTrue(waiting.await(60, TimeUnit.SECONDS), "the tasks did not all start waiting");
            long cancelled = System.nanoTime();
            sc.cancelJobGroup("waits-on-the-gpu");

            ExecutionException ended = assertThrows(ExecutionException.class, () -> job.get(5, TimeUnit.SECONDS));
            assertTrue(String.valueOf(ended.getCause().getMessage()).contains("cancel"), "the job ended by cancellation: " + ended.getCause());
            long deadline = cancelled + LIMIT_NANOS;
            while ((GpuTask.openHandles() > 0 || StandIn.primaryRetains(0) > 0 || killed.get() < TASKS) && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            long took = System.nanoTime() - cancelled;
            assertEquals(0, GpuTask.openHandles(), "task handles still open " + took / 1_000_000 + " ms after the cancel");
            assertEquals(0, StandIn.primaryRetains(0), "primary-context retains left " + took / 1_000_000 + " ms after the cancel");
            assertEquals(TASKS, killed.get(), "tasks that ended killed (others: " + otherEnds.get() + ")");
            assertTrue(took < LIMIT_NANOS, "the cancel took " + took / 1_000_000 + " ms");
            assertTrue(took < TimeUnit.MILLISECONDS.toNanos((long) WORK_MILLIS * ROUNDS), "the tasks were stopped, not run to their end");

            assertEquals(TASKS, RELEASED.size(), "every task's handle was released");
            for (Map.Entry<Long, Long> release : RELEASED.entrySet()) {
                long workEnd = LAST_LAUNCH.get(release.getKey()) + TimeUnit.MILLISECONDS.toNanos(WORK_MILLIS);
                assertTrue(release.getValue() >= workEnd, "task " + release.getKey() + "'s handle was released "
                        + (workEnd - release.getValue()) / 1_000_000 + " ms before the GPU work it queued had finished");
            }
        } finally {
            StandIn.setWorkMillis(previousWork);
        }

        try {
            sc.clearJobGroup();
            int partitions = 4 * TASKS;
            List<Long> sums = sc.parallelize(numbers(partitions), partitions).mapPartitions(CancellationTest::roundTrip).collect();
            List<Long> expected = new ArrayList<>();
            for (int p = 0; p < partitions; p++) {
                expected.add(expectedSum(p));
            }
            assertEquals(expected, sums, "the job after the cancel, on the same pooled threads");
            assertEquals(0, GpuTask.openHandles());
            assertEquals(0, StandIn.primaryRetains(0));
        } finally {
            sc.stop();
        }
    }

    /** Queues ROUNDS launches of WORK_MILLIS each and waits for each with GpuTask.synchronize. */
    private static Iterator<Long> waitOnTheGpu(Iterator<Integer> ignored) {
        TaskContext context = TaskContext.get();
        long task = context.taskAttemptId();
        context.addTaskCompletionListener((TaskCompletionListener) c -> RELEASED.put(task, System.nanoTime()));
        Handle h = GpuTask.handle();
        Kernel kernel = GpuLibraries.resource(CancellationTest.class, "/kernels/score_rows.fatbin").kernel("score_rows");
        // Null pointers as arguments: kernels do not run on the stand-in, and with no buffers to close
        // only the handle's release stands between the kill and the end of the task's work.
        for (int round = 0; round < ROUNDS; round++) {
            LAST_LAUNCH.put(task, System.nanoTime());
            h.launch(kernel, Dim3.of(1), Dim3.of(32), 0, 0L, 0L, 0L, 1, 64);
            if (round == 0) {
                waiting.countDown();
            }
            GpuTask.synchronize(h);
        }
        fail("task " + task + " waited for all its work: the cancel did not stop it");
        return Collections.emptyIterator();
    }

    /** Uploads and downloads numbers derived from the partition; kernels do not run here, copies do. */
    private static Iterator<Long> roundTrip(Iterator<Integer> partition) {
        int p = partition.next();
        if (Cuda.currentContext() != 0) {
            throw new IllegalStateException("a context was current on the task thread at the start of a task");
        }
        Handle h = GpuTask.handle();
        long[] values = values(p);
        long[] back = new long[values.length];
        try (DeviceBuffer d = h.upload(values)) {
            GpuTask.synchronize(h);
            d.download(back);
        }
        long sum = 0;
        for (long v : back) {
            sum += v;
        }
        return Collections.singletonList(sum).iterator();
    }

    private static long[] values(int p) {
        long[] values = new long[1000];
        for (int i = 0; i < values.length; i++) {
            values[i] = 31L * p + i;
        }
        return values;
    }

    private static long expectedSum(int p) {
        long sum = 0;
        for (long v : values(p)) {
            sum += v;
        }
        return sum;
    }

    private static List<Integer> numbers(int n) {
        List<Integer> list = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            list.add(i);
        }
        return list;
    }
}
