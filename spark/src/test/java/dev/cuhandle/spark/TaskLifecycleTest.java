package dev.cuhandle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cuhandle.Cuda;
import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.Dim3;
import dev.cuhandle.Handle;
import dev.cuhandle.Library;
import dev.cuhandle.StandIn;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.util.TaskCompletionListener;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * 1,000 tasks on 4 pooled task threads (local[4]), each with its own handle from
 * {@link GpuTask#handle()}, a kernel from the {@link GpuLibraries} cache and a launch: every handle
 * is released when its task ends, nothing is left current on the threads, and the image is loaded
 * once. Local mode runs the tasks in this JVM, so what the tasks observe is collected in static
 * queues as well as returned.
 */
class TaskLifecycleTest {
    private static final int TASKS = 1000;
    /** Seen by each task's last completion listener, after GpuTask's listener closed the handle. */
    private static final Queue<AfterTask> AFTER = new ConcurrentLinkedQueue<>();
    private static final AtomicInteger LOADS = new AtomicInteger();
    private static final Queue<Library> LOADED = new ConcurrentLinkedQueue<>();

    /** What one task saw while it ran. */
    static final class TaskRecord implements Serializable {
        private static final long serialVersionUID = 1L;
        long task;
        long thread;
        int handle;
        boolean sameHandleTwice;
        long currentAtStart;
        long currentAfterWork;
        int device;
        int library;
    }

    /** What a task's completion listener saw after the handle's own listener ran. */
    static final class AfterTask {
        final long task;
        final boolean handleClosed;
        final long current;

        AfterTask(long task, boolean handleClosed, long current) {
            this.task = task;
            this.handleClosed = handleClosed;
            this.current = current;
        }
    }

    @BeforeAll
    static void standIn() {
        TestSpark.requireStandIn();
    }

    @Test
    void everyTaskGetsAndReleasesItsHandleAndTheImageLoadsOnce() {
        String libraryKey = "lifecycle test " + UUID.randomUUID();
        int launchesBefore = StandIn.launches();
        List<TaskRecord> records;
        JavaSparkContext sc = TestSpark.start("local[4]");
        try {
            List<Integer> numbers = new ArrayList<>();
            for (int i = 0; i < TASKS; i++) {
                numbers.add(i);
            }
            records = sc.parallelize(numbers, TASKS).mapPartitions(it -> task(it, libraryKey)).collect();
            // Local mode: the tasks ran in this JVM, and the job ended only after their listeners ran.
            assertEquals(0, GpuTask.openHandles(), "task handles left open after the job");
            assertEquals(0, StandIn.primaryRetains(0), "primary-context retains left on device 0");
            assertEquals(0, StandIn.primaryRetains(1), "primary-context retains left on device 1");
        } finally {
            sc.stop();
        }

        assertEquals(TASKS, records.size());
        assertEquals(TASKS, records.stream().mapToLong(r -> r.task).distinct().count(), "one record per task");
        for (TaskRecord r : records) {
            assertTrue(r.sameHandleTwice, "task " + r.task + ": GpuTask.handle() twice gave two handles");
            assertEquals(0, r.currentAtStart, "task " + r.task + " found a context current on its pooled thread");
            assertEquals(0, r.currentAfterWork, "task " + r.task + ": the handle's work changed the thread's current context");
            assertEquals(0, r.device, "task " + r.task + ": local mode without spark.cuhandle.device uses device 0");
        }
        assertEquals(TASKS, records.stream().map(r -> r.handle).distinct().count(), "each task has a handle of its own");
        Map<Long, Long> tasksPerThread = records.stream().collect(Collectors.groupingBy(r -> r.thread, Collectors.counting()));
        assertTrue(tasksPerThread.size() < TASKS / 10 && tasksPerThread.values().stream().anyMatch(n -> n > 1),
                "Spark reuses its task threads: " + tasksPerThread.size() + " threads ran " + TASKS + " tasks");

        assertEquals(TASKS, AFTER.size(), "every task's completion listeners ran");
        for (AfterTask a : AFTER) {
            assertTrue(a.handleClosed, "task " + a.task + ": its handle was still open when its task completed");
            assertEquals(0, a.current, "task " + a.task + ": a context was current on its thread after the handle closed");
        }

        assertEquals(1, LOADS.get(), "the kernel image was loaded once for " + TASKS + " tasks");
        assertEquals(1, records.stream().map(r -> r.library).distinct().count(), "all tasks used the one cached library");
        assertEquals(TASKS, StandIn.launches() - launchesBefore, "every task launched its kernel");
        assertTrue(LOADED.peek().isClosed(), "the plugin closed the cached library when the executor stopped");
    }

    private static Iterator<TaskRecord> task(Iterator<Integer> ignored, String libraryKey) {
        TaskContext context = TaskContext.get();
        TaskRecord r = new TaskRecord();
        r.task = context.taskAttemptId();
        r.thread = Thread.currentThread().getId();
        r.currentAtStart = Cuda.currentContext();
        Handle[] seen = new Handle[1];
        // Registered before GpuTask's own listener, so it runs after it (Spark runs them last-in first-out).
        context.addTaskCompletionListener((TaskCompletionListener) c -> AFTER.add(new AfterTask(c.taskAttemptId(), seen[0].isClosed(), Cuda.currentContext())));

        Handle h = GpuTask.handle();
        seen[0] = h;
        r.sameHandleTwice = GpuTask.handle() == h;
        r.handle = System.identityHashCode(h);
        r.device = h.device().ordinal();
        Library library = GpuLibraries.get(libraryKey, countingLoader());
        r.library = System.identityHashCode(library);
        float[] row = new float[64];
        float[] out = new float[1];
        try (DeviceBuffer rows = h.upload(row); DeviceBuffer query = h.upload(row); DeviceBuffer scores = h.allocate(4)) {
            h.launch(library.kernel("score_rows"), Dim3.of(1), Dim3.of(32), 0, rows, query, scores, 1, 64);
            GpuTask.synchronize(h);
            scores.download(out);
        }
        r.currentAfterWork = Cuda.currentContext();
        return Collections.singletonList(r).iterator();
    }

    private static Supplier<Library> countingLoader() {
        return () -> {
            LOADS.incrementAndGet();
            Library loaded = Library.loadResource(TaskLifecycleTest.class, "/kernels/score_rows.fatbin");
            LOADED.add(loaded);
            return loaded;
        };
    }

    @Test
    void aRetriedAttemptGetsAHandleOfItsOwnAndTheFailedOnesIsReleased() {
        // local[2,2]: two threads, and a failed task is tried once more.
        JavaSparkContext sc = TestSpark.start("local[2,2]");
        try {
            List<String> attempts = sc.parallelize(List.of(0, 1, 2, 3), 4).mapPartitions(TaskLifecycleTest::failFirstAttempt).collect();
            for (String a : attempts) {
                assertTrue(a.startsWith("attempt 1, first attempt's handle closed true, new handle "), a);
                assertFalse(a.endsWith("same handle true"), a);
            }
            assertEquals(4, attempts.size());
            assertEquals(0, GpuTask.openHandles());
            assertEquals(0, StandIn.primaryRetains(0));
        } finally {
            sc.stop();
        }
    }

    private static final Map<Integer, Handle> FIRST_ATTEMPTS = new ConcurrentHashMap<>();

    private static Iterator<String> failFirstAttempt(Iterator<Integer> partition) {
        int p = partition.next();
        TaskContext context = TaskContext.get();
        Handle h = GpuTask.handle();
        if (context.attemptNumber() == 0) {
            FIRST_ATTEMPTS.put(p, h);
            throw new IllegalStateException("the first attempt of partition " + p + " fails on purpose");
        }
        Handle first = FIRST_ATTEMPTS.get(p);
        return Collections.singletonList("attempt " + context.attemptNumber() + ", first attempt's handle closed " + first.isClosed()
                + ", new handle " + !h.isClosed() + ", same handle " + (h == first)).iterator();
    }

    @Test
    void handleOutsideATaskIsRefusedWithTheReason() {
        IllegalStateException e = assertThrows(IllegalStateException.class, GpuTask::handle);
        assertTrue(e.getMessage().contains("outside a Spark task"), e.getMessage());
    }

    @Test
    void theCachedLibraryIsSharedAcrossSparkContextsUntilTheExecutorStops() {
        String key = "restart test " + UUID.randomUUID();
        JavaSparkContext first = TestSpark.start("local[2]");
        Library before;
        try {
            before = GpuLibraries.get(key, () -> Library.loadResource(TaskLifecycleTest.class, "/kernels/score_rows.fatbin"));
            assertSame(before, GpuLibraries.get(key, () -> {
                throw new AssertionError("loaded twice");
            }));
        } finally {
            first.stop();
        }
        assertTrue(before.isClosed(), "closed by the plugin's executor shutdown");
        JavaSparkContext second = TestSpark.start("local[2]");
        try {
            Library after = GpuLibraries.get(key, () -> Library.loadResource(TaskLifecycleTest.class, "/kernels/score_rows.fatbin"));
            assertFalse(after.isClosed(), "a new executor loads the image again");
        } finally {
            second.stop();
        }
    }
}
