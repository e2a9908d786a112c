package dev.cuhandle.spark;

import dev.cuhandle.Cuda;
import dev.cuhandle.CudaException;
import dev.cuhandle.Handle;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.TaskContext;
import org.apache.spark.util.TaskCompletionListener;

/**
 * The GPU scopes of the running tasks of this JVM: per task, its handle and what it made, all closed by a
 * task-completion listener (rule S2 of docs/design.md).
 *
 * <p>Why a listener and not the task's own try-with-resources: Spark ends a task on success, failure and
 * cancellation alike by running its completion listeners on the task's thread, after the task's code has
 * returned or thrown, so the scope is closed on every path, including code that never expected to be
 * interrupted.
 *
 * <p>Why keyed by the {@link TaskContext} object: task attempt ids restart at 0 in every SparkContext, and a
 * stopped context's tasks may still run while the next context's start (Spark's {@code stop()} does not wait
 * for them): keyed by id, the new tasks got the old tasks' handles, and the old tasks' listeners closed the
 * new tasks' handles under them. A listener removes only the scope it made.
 */
final class TaskHandles {
    private static final System.Logger LOG = System.getLogger("dev.cuhandle.spark");
    /** By task, compared by identity (TaskContext defines no equality; this says so whatever a version does). */
    private static final Map<TaskContext, TaskScope> BY_TASK = Collections.synchronizedMap(new IdentityHashMap<>());
    /** Created and not yet closed: counted down only once close() has returned. */
    private static final AtomicInteger OPEN = new AtomicInteger();

    private TaskHandles() {}

    /** One task's GPU: its handle (tracking what it makes, waits ended by the kill) and what it asked to close at its end. */
    private static final class TaskScope {
        final long taskId;
        final Handle handle;
        /** Counts the handle out of its SM partition, once it has closed (a no-op for an ordinary handle). */
        private final Runnable partitionRelease;
        private final List<AutoCloseable> atEnd = new ArrayList<>();

        TaskScope(long taskId, Handle handle, Runnable partitionRelease) {
            this.taskId = taskId;
            this.handle = handle;
            this.partitionRelease = partitionRelease;
        }

        synchronized void closeAtEnd(AutoCloseable resource) {
            atEnd.add(resource);
        }

        /**
         * Closes what the task registered (newest first), then what its handle made and is still open, then the
         * handle (which waits for the task's queued work first, rule H6). Every close is attempted.
         */
        void end() {
            List<AutoCloseable> registered;
            synchronized (this) {
                registered = new ArrayList<>(atEnd);
                atEnd.clear();
            }
            RuntimeException failure = null;
            for (int i = registered.size() - 1; i >= 0; i--) {
                failure = closeCollecting(registered.get(i), failure);
            }
            failure = closeCollecting(handle::closeTrackedResources, failure);
            try {
                handle.close();
            } finally {
                OPEN.decrementAndGet();
                partitionRelease.run();
            }
            warnIfLeftCurrent(handle, taskId);
            if (failure != null) {
                throw failure;
            }
        }
    }

    private static RuntimeException closeCollecting(AutoCloseable resource, RuntimeException failure) {
        try {
            resource.close();
            return failure;
        } catch (Exception e) {
            RuntimeException thrown = e instanceof RuntimeException ? (RuntimeException) e : new IllegalStateException("closing " + resource + " failed", e);
            if (failure == null) {
                return thrown;
            }
            failure.addSuppressed(thrown);
            return failure;
        }
    }

    /** The handle of {@code task}, created and registered on first use, on a thread that runs the task. */
    static Handle of(TaskContext task) {
        TaskScope existing = BY_TASK.get(task);
        if (existing != null) {
            return existing.handle;
        }
        long id = task.taskAttemptId();
        if (task.isCompleted()) {
            throw new IllegalStateException("task " + id + " has already completed: its GPU handle was closed and no new one is made");
        }
        DeviceAssignment.Choice choice = DeviceAssignment.forTask(task);
        int smPartitions = GpuSmPartitions.configuredParts(); // a bad value fails before the task waits for anything
        // Admission first (waits, cancellably, while spark.cuhandle.concurrentGpuTasks tasks hold the device),
        // released by a listener registered before the handle's: Spark runs listeners last in, first out, so the
        // permit goes back only after the handle has closed, after the task's queued work.
        GpuAdmission.Permit permit = GpuAdmission.acquire(task, choice.first());
        task.addTaskCompletionListener((TaskCompletionListener) completed -> permit.release());
        GpuSmPartitions.Placed placed;
        try {
            placed = GpuSmPartitions.place(choice.first(), smPartitions);
        } catch (CudaException e) {
            permit.release();
            CudaException named = new CudaException(e.code(), "GpuTask.handle() on device " + choice.first() + ", from " + choice.source,
                    e.getMessage());
            named.initCause(e);
            throw named;
        }
        Handle created = placed.handle();
        OPEN.incrementAndGet();
        created.trackResources();
        created.setWaitCancellation(CancellableWait.of(task));
        TaskScope scope = new TaskScope(id, created, placed.release());
        TaskScope raced;
        synchronized (BY_TASK) {
            raced = BY_TASK.putIfAbsent(task, scope);
        }
        if (raced != null) {
            // Another thread of the same task (one that Spark gave the task's context) was first; the permit is
            // the task's one permit for the device (acquire returns it again), released at the task's end.
            try {
                created.close();
            } finally {
                OPEN.decrementAndGet();
                placed.release().run();
            }
            return raced.handle;
        }
        // Registered last: a task that completed meanwhile runs the listener at once, closing it.
        task.addTaskCompletionListener((TaskCompletionListener) completed -> release(task, scope));
        return created;
    }

    /**
     * Closes {@code resource} when {@code task} ends: before its handle and what the handle made, if the task has
     * a handle by then; otherwise by a completion listener of its own.
     */
    static void closeAtEnd(TaskContext task, AutoCloseable resource) {
        TaskScope scope = BY_TASK.get(task);
        if (scope != null) {
            scope.closeAtEnd(resource);
        } else {
            task.addTaskCompletionListener((TaskCompletionListener) completed -> {
                RuntimeException failure = closeCollecting(resource, null);
                if (failure != null) {
                    throw failure;
                }
            });
        }
    }

    /** Ends {@code scope} if it is still {@code task}'s (the completion listener); true if it was. */
    private static boolean release(TaskContext task, TaskScope scope) {
        if (!BY_TASK.remove(task, scope)) {
            return false;
        }
        scope.end();
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
                        + "(Handle.makeCurrent()), and the pooled thread keeps it for later tasks. cuhandle's own calls need no current "
                        + "context: call makeCurrent() only for raw driver calls, and with the binding that makes them set the context "
                        + "read before makeCurrent() back before the task ends (cuCtxGetCurrent, then cuCtxSetCurrent)");
            }
        } catch (CudaException e) {
            LOG.log(System.Logger.Level.DEBUG, "could not check the current context after task " + id, e);
        }
    }

    /** Handles created for tasks and not yet closed. */
    static int open() {
        return OPEN.get();
    }

    /** Ends the scopes of tasks that never completed (executor shutdown); returns how many. */
    static int closeRemaining() {
        List<Map.Entry<TaskContext, TaskScope>> remaining;
        synchronized (BY_TASK) {
            remaining = new ArrayList<>(BY_TASK.entrySet());
        }
        int closed = 0;
        for (Map.Entry<TaskContext, TaskScope> e : remaining) {
            if (release(e.getKey(), e.getValue())) {
                closed++;
            }
        }
        return closed;
    }
}
