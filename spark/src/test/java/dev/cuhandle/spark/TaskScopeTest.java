package dev.cuhandle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.Dim3;
import dev.cuhandle.Handle;
import dev.cuhandle.Kernel;
import dev.cuhandle.StandIn;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaFutureAction;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Rule S2 of docs/design.md (issue 33): a task owns what it makes through its handle, task state is keyed by the
 * task itself (not by an attempt id that every SparkContext restarts at 0), and a killed task stops waiting at once
 * without spinning, while its release still waits for the work it queued. Local mode on the CPU stand-in, whose
 * simulated work time makes GPU work last.
 */
class TaskScopeTest {
    private static final String KERNEL = "/kernels/score_rows.fatbin";
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    /** What the tasks of the tests saw (local mode: the tasks run in this JVM). */
    private static final Queue<String> PROBLEMS = new ConcurrentLinkedQueue<>();
    private static final Map<String, Integer> DEVICES = new ConcurrentHashMap<>();
    private static final Map<String, Long> THREAD_IDS = new ConcurrentHashMap<>();
    /** Per task: when its wait ended with the kill (System.nanoTime()). */
    private static final Map<String, Long> WAIT_ENDED = new ConcurrentHashMap<>();
    /** What the failing tasks made and never closed. */
    private static final Queue<AutoCloseable> MADE = new ConcurrentLinkedQueue<>();
    private static volatile CountDownLatch started;
    private static volatile CountDownLatch oldTasksMayEnd;
    private static volatile CountDownLatch oldTasksEnded;

    @BeforeAll
    static void standIn() {
        TestSpark.requireStandIn();
    }

    private static List<Integer> numbers(int n) {
        List<Integer> list = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            list.add(i);
        }
        return list;
    }

    private static void awaitUninterruptibly(CountDownLatch latch) {
        boolean interrupted = false;
        while (true) {
            try {
                if (latch.await(60, TimeUnit.SECONDS)) {
                    break;
                }
                PROBLEMS.add("a latch was not counted down in 60 s");
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * A context stopped while its tasks still run, then a new one started in the same JVM: the old tasks used device
     * 1, the new ones device 0. Every new task gets a new handle on device 0, and none is closed under it when the
     * old tasks end and their completion listeners run (keyed by attempt id, they closed the new tasks' handles).
     */
    @ParameterizedTest(name = "executor plugin = {0}")
    @ValueSource(booleans = {true, false})
    void s2_aNewContextsTasksGetTheirOwnHandlesAndKeepThemWhenTheStoppedContextsTasksEnd(boolean plugin) throws Exception {
        PROBLEMS.clear();
        DEVICES.clear();
        int tasks = 4;
        started = new CountDownLatch(tasks);
        oldTasksMayEnd = new CountDownLatch(1);
        // Two listeners per old task, one registered before its handle and one after: whatever order Spark runs
        // listeners in, the later of the two runs after the handle's own listener.
        oldTasksEnded = new CountDownLatch(2 * tasks);
        // Every task of both contexts holds its handle at once: admission must let all of them in.
        String[] conf = plugin ? new String[] {GpuAdmission.CONCURRENT_TASKS_KEY, String.valueOf(tasks)}
                : new String[] {GpuAdmission.CONCURRENT_TASKS_KEY, String.valueOf(tasks), "spark.plugins", ""};
        JavaSparkContext old = TestSpark.start("local[" + tasks + "]", conf);
        old.setLocalProperty(DeviceAssignment.DEVICE_KEY, "1");
        JavaFutureAction<List<Integer>> oldJob = old.parallelize(numbers(tasks), tasks).mapPartitions(TaskScopeTest::oldTask).collectAsync();
        assertTrue(started.await(60, TimeUnit.SECONDS), "the old context's tasks started");
        old.stop(); // does not wait for the running tasks
        JavaSparkContext next = TestSpark.start("local[" + tasks + "]", conf);
        try {
            started = new CountDownLatch(tasks);
            next.setLocalProperty(DeviceAssignment.DEVICE_KEY, "0");
            JavaFutureAction<List<Integer>> job = next.parallelize(numbers(tasks), tasks).mapPartitions(TaskScopeTest::newTask).collectAsync();
            assertTrue(started.await(60, TimeUnit.SECONDS), "the new context's tasks started");
            oldTasksMayEnd.countDown();
            assertEquals(List.of(0, 0, 0, 0), job.get(60, TimeUnit.SECONDS), "the devices of the new context's task handles");
            assertTrue(oldTasksEnded.await(60, TimeUnit.SECONDS), "the old tasks ended");
            assertEquals(List.of(), new ArrayList<>(PROBLEMS));
            try {
                oldJob.get(1, TimeUnit.SECONDS);
            } catch (ExecutionException | java.util.concurrent.CancellationException | java.util.concurrent.TimeoutException stopped) {
                // the old context was stopped: its job's outcome is not this test's concern
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (GpuTask.openHandles() > 0 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertEquals(0, GpuTask.openHandles(), "task handles left open");
            assertEquals(0, StandIn.primaryRetains(0) + StandIn.primaryRetains(1), "primary-context retains left");
        } finally {
            oldTasksMayEnd.countDown();
            next.stop();
        }
    }

    private static Iterator<Integer> oldTask(Iterator<Integer> partition) {
        TaskContext.get().addTaskCompletionListener((org.apache.spark.util.TaskCompletionListener) c -> oldTasksEnded.countDown());
        try {
            Handle h = GpuTask.handle();
            if (h.device().ordinal() != 1) {
                PROBLEMS.add("an old task's handle is on device " + h.device().ordinal());
            }
            started.countDown();
            awaitUninterruptibly(oldTasksMayEnd);
            return Collections.singletonList(h.device().ordinal()).iterator();
        } finally {
            TaskContext.get().addTaskCompletionListener((org.apache.spark.util.TaskCompletionListener) c -> oldTasksEnded.countDown());
        }
    }

    private static Iterator<Integer> newTask(Iterator<Integer> partition) {
        Handle h = GpuTask.handle();
        started.countDown();
        awaitUninterruptibly(oldTasksEnded);
        try (DeviceBuffer x = h.upload(new long[] {1, 2, 3})) {
            long[] back = new long[3];
            x.download(back);
            h.synchronize();
            if (back[2] != 3) {
                PROBLEMS.add("a new task read back " + back[2]);
            }
        } catch (RuntimeException e) {
            PROBLEMS.add("a new task's handle failed after the old tasks ended: " + e);
        }
        if (h.isClosed()) {
            PROBLEMS.add("a new task's handle was closed under it");
        }
        return Collections.singletonList(h.device().ordinal()).iterator();
    }

    /**
     * A task killed while it waits: in plain {@code Handle.synchronize()} (with or without an interrupt), the wait
     * ends within 1 s of the cancel, the task's thread uses less than 10% of a core from the cancel until its
     * handle is released, and the release comes after the work it queued.
     */
    @ParameterizedTest(name = "interruptOnCancel = {0}")
    @ValueSource(booleans = {true, false})
    void s2_aKilledTaskStopsWaitingAtOnceWithoutSpinningAndItsReleaseWaitsForItsWork(boolean interruptOnCancel) throws Exception {
        PROBLEMS.clear();
        THREAD_IDS.clear();
        WAIT_ENDED.clear();
        int tasks = 2;
        started = new CountDownLatch(tasks);
        JavaSparkContext sc = TestSpark.start("local[" + tasks + "]");
        int previous = StandIn.setWorkMillis(3000);
        try {
            sc.setJobGroup("plain-waits", "tasks in plain synchronize()", interruptOnCancel);
            JavaFutureAction<List<Integer>> job = sc.parallelize(numbers(tasks), tasks).mapPartitions(TaskScopeTest::waitPlainly).collectAsync();
            assertTrue(started.await(60, TimeUnit.SECONDS), "the tasks started waiting");
            Thread.sleep(200);
            Map<Long, Long> cpuAtCancel = new ConcurrentHashMap<>();
            THREAD_IDS.values().forEach(id -> cpuAtCancel.put(id, THREADS.getThreadCpuTime(id)));
            long cancelled = System.nanoTime();
            sc.cancelJobGroup("plain-waits");
            assertThrows(ExecutionException.class, () -> job.get(5, TimeUnit.SECONDS));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (GpuTask.openHandles() > 0 && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            long releasedMs = (System.nanoTime() - cancelled) / 1_000_000;
            assertEquals(0, GpuTask.openHandles(), "task handles left open");
            assertEquals(tasks, WAIT_ENDED.size(), "tasks whose wait ended with an exception: " + PROBLEMS);
            for (long ended : WAIT_ENDED.values()) {
                long endedMs = (ended - cancelled) / 1_000_000;
                System.out.println("[task-scope] a task's plain synchronize() ended " + endedMs + " ms after the cancel");
                assertTrue(endedMs < 1000, "a task's synchronize() ended " + endedMs + " ms after the cancel");
            }
            assertTrue(releasedMs >= 1500, "the handles were released " + releasedMs + " ms after the cancel, before the ~2.8 s of work they queued");
            for (Map.Entry<Long, Long> t : cpuAtCancel.entrySet()) {
                long cpuMs = (THREADS.getThreadCpuTime(t.getKey()) - t.getValue()) / 1_000_000;
                System.out.println("[task-scope] a killed task's thread: " + cpuMs + " ms of CPU in the " + releasedMs + " ms from the cancel to its release");
                assertTrue(cpuMs < releasedMs / 10, "a killed task's thread used " + cpuMs + " ms of CPU in " + releasedMs + " ms");
            }
            assertEquals(List.of(), new ArrayList<>(PROBLEMS));
        } finally {
            StandIn.setWorkMillis(previous);
            sc.stop();
        }
    }

    private static Iterator<Integer> waitPlainly(Iterator<Integer> partition) {
        THREAD_IDS.put(String.valueOf(TaskContext.get().taskAttemptId()), Thread.currentThread().getId());
        Handle h = GpuTask.handle();
        Kernel kernel = GpuLibraries.resource(TaskScopeTest.class, KERNEL).kernel("score_rows");
        h.launch(kernel, Dim3.of(1), Dim3.of(32), 0, 0L, 0L, 0L, 1, 64); // 3 s of simulated work; kernels do not run here
        started.countDown();
        try {
            for (int round = 0; round < 16; round++) {
                h.synchronize();
            }
        } catch (RuntimeException killed) {
            WAIT_ENDED.put(String.valueOf(TaskContext.get().taskAttemptId()), System.nanoTime());
            if (!(killed instanceof org.apache.spark.TaskKilledException)) {
                PROBLEMS.add("synchronize() ended with " + killed);
            }
            throw killed;
        }
        PROBLEMS.add("a task's synchronize() waited for all its work: the cancel did not end it");
        return Collections.emptyIterator();
    }

    /**
     * A failing task that did not close its buffers, pinned buffers and events leaves 0 live allocations and 0 retains
     * when the job ends; what it registered with {@link GpuTask#closeAtEnd} is closed too.
     */
    @org.junit.jupiter.api.Test
    void s2_aFailingTaskLeavesNoAllocationAndNoRetain() throws Exception {
        MADE.clear();
        JavaSparkContext sc = TestSpark.start("local[2]");
        try {
            // The same calls, closed by the task, first: what the process keeps for later copies (staging) is made here.
            assertEquals(4, sc.parallelize(numbers(4), 4).mapPartitions(TaskScopeTest::allocateAndClose).collect().size());
            int liveBefore = StandIn.liveAllocations();
            ExecutionException failed = assertThrows(ExecutionException.class,
                    () -> sc.parallelize(numbers(4), 4).mapPartitions(TaskScopeTest::failAfterAllocating).collectAsync().get(60, TimeUnit.SECONDS));
            assertTrue(String.valueOf(failed.getCause()).contains("fails after allocating"), String.valueOf(failed.getCause()));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while ((GpuTask.openHandles() > 0 || StandIn.liveAllocations() > liveBefore) && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertTrue(MADE.size() >= 13, "what the failing tasks made: " + MADE.size()); // the first failure aborts the job: not every task starts
            for (AutoCloseable made : MADE) {
                boolean closed = made instanceof Handle ? ((Handle) made).isClosed()
                        : made instanceof DeviceBuffer ? ((DeviceBuffer) made).isClosed()
                        : made instanceof dev.cuhandle.HostBuffer ? ((dev.cuhandle.HostBuffer) made).isClosed() : ((dev.cuhandle.Event) made).isClosed();
                assertTrue(closed, made + " is still open after its task ended");
            }
            assertEquals(liveBefore, StandIn.liveAllocations(), "device allocations left by the failed tasks");
            assertEquals(0, StandIn.primaryRetains(0), "primary-context retains left by the failed tasks");
            assertEquals(0, GpuTask.openHandles());
        } finally {
            sc.stop();
        }
    }

    private static Iterator<Integer> allocateAndClose(Iterator<Integer> partition) {
        Handle h = GpuTask.handle();
        try (DeviceBuffer b = h.upload(new float[256]); dev.cuhandle.HostBuffer host = h.allocateHost(1 << 16); dev.cuhandle.Event e = h.createEvent()) {
            return Collections.singletonList(0).iterator();
        }
    }

    private static Iterator<Integer> failAfterAllocating(Iterator<Integer> partition) {
        Handle h = GpuTask.handle();
        for (int i = 0; i < 8; i++) {
            MADE.add(h.allocate(1 << 16));
        }
        MADE.add(h.upload(new float[256]));
        MADE.add(h.allocateHost(1 << 16));
        MADE.add(h.createEvent());
        MADE.add(h);
        Handle other = Handle.create(0); // not made through the task's handle: registered to be closed at the end
        GpuTask.closeAtEnd(other);
        MADE.add(other);
        throw new IllegalStateException("task " + TaskContext.get().taskAttemptId() + " fails after allocating");
    }
}
