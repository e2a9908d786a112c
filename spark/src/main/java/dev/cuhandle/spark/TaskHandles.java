package dev.cuhandle.spark;

import dev.cuhandle.Cuda;
import dev.cuhandle.CudaException;
import dev.cuhandle.Handle;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.TaskContext;
import org.apache.spark.util.TaskCompletionListener;

/**
 * The handles of the running tasks of this JVM, one per task attempt, each closed by a
 * task-completion listener.
 *
 * <p>Why a listener and not the task's own try-with-resources: Spark ends a task on success,
 * failure and cancellation alike by running its completion listeners on the task's thread, after
 * the task's code has returned or thrown, so the handle is closed on every path, including code
 * that never expected to be interrupted. {@link Handle#close()} synchronises the handle's stream
 * first, so the release comes after the GPU work the task queued, and it never changes which
 * context is current on the pooled thread (rule H4 of docs/design.md).
 */
final class TaskHandles {
    private static final System.Logger LOG = System.getLogger("dev.cuhandle.spark");
    private static final ConcurrentHashMap<Long, Handle> BY_TASK = new ConcurrentHashMap<>();
    /** Created and not yet closed: counted down only once close() has returned. */
    private static final AtomicInteger OPEN = new AtomicInteger();

    private TaskHandles() {}

    /** The handle of {@code task}, created and registered on first use, on a thread that runs the task. */
    static Handle of(TaskContext task) {
        long id = task.taskAttemptId();
        Handle existing = BY_TASK.get(id);
        if (existing != null) {
            return existing;
        }
        if (task.isCompleted()) {
            throw new IllegalStateException("task " + id + " has already completed: its GPU handle was closed and no new one is made");
        }
        DeviceAssignment.Choice choice = DeviceAssignment.forTask(task);
        Handle created;
        try {
            created = Handle.create(choice.first());
        } catch (CudaException e) {
            CudaException named = new CudaException(e.code(), "GpuTask.handle() on device " + choice.first() + ", from " + choice.source,
                    e.getMessage());
            named.initCause(e);
            throw named;
        }
        OPEN.incrementAndGet();
        Handle raced = BY_TASK.putIfAbsent(id, created);
        if (raced != null) {
            // Another thread of the same task (one that Spark gave the task's context) was first.
            created.close();
            OPEN.decrementAndGet();
            return raced;
        }
        // Registered last: a task that completed meanwhile runs the listener at once, closing it.
        task.addTaskCompletionListener((TaskCompletionListener) completed -> release(id));
        return created;
    }

    /** Closes the handle of task attempt {@code id}, if it has one (the completion listener); true if it had one. */
    static boolean release(long id) {
        Handle handle = BY_TASK.remove(id);
        if (handle == null) {
            return false;
        }
        try {
            handle.close();
        } finally {
            OPEN.decrementAndGet();
        }
        warnIfLeftCurrent(handle, id);
        return true;
    }

    /**
     * {@link Handle#makeCurrent()} is the one call that changes the thread's current context; a task
     * that used it would leave the context current on a pooled thread for the tasks after it.
     */
    private static void warnIfLeftCurrent(Handle handle, long id) {
        try {
            if (Cuda.currentContext() == handle.rawContext()) {
                LOG.log(System.Logger.Level.WARNING, "task " + id + " ended with its handle's context current on its thread "
                        + "(Handle.makeCurrent()); the pooled thread keeps it for later tasks: restore the previous context before the task ends");
            }
        } catch (CudaException e) {
            LOG.log(System.Logger.Level.DEBUG, "could not check the current context after task " + id, e);
        }
    }

    /** Handles created for tasks and not yet closed. */
    static int open() {
        return OPEN.get();
    }

    /** Closes the handles of tasks that never completed (executor shutdown); returns how many. */
    static int closeRemaining() {
        int closed = 0;
        for (Long id : BY_TASK.keySet()) {
            if (release(id)) {
                closed++;
            }
        }
        return closed;
    }
}
