package dev.cuhandle.spark;

import dev.cuhandle.CudaException;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.spark.TaskContext;
import org.apache.spark.TaskKilledException;

/**
 * Waits for GPU work in a way that Spark's cancellation can end.
 *
 * <p>Spark kills a task by marking its {@link TaskContext} killed and, where the job asked for it
 * ({@code spark.job.interruptOnCancel}, {@code setJobGroup(..., interruptOnCancel = true)}, task
 * reaping), by interrupting its thread. {@code Handle.synchronize()} and the blocking copies wait
 * inside the driver ({@code cuStreamSynchronize}), where neither is seen until the work is done. A
 * future of the work ({@code Handle.whenDone()}, the asynchronous copies) is completed by
 * cuhandle's completion thread instead, so the task thread waits for it in
 * {@link CompletableFuture#get(long, TimeUnit)}, which an interrupt ends at once, and looks at the
 * kill mark every {@link #KILL_CHECK_MILLIS} ms.
 *
 * <p>The work itself is not cancelled (CUDA cannot take queued work back): it runs to its end, and
 * the task's handle, closed by its completion listener, synchronises before it releases anything,
 * so no memory is freed under a running kernel.
 */
final class CancellableWait {
    /** How often a waiting task looks at its kill mark: the delay of a kill that does not interrupt. */
    static final long KILL_CHECK_MILLIS = 20; // GpuTask's class comment says so
    static final String INTERRUPTED = "interrupted while waiting for the GPU (Spark cancels a task by interrupting its thread)";
    static final String KILLED = "killed while waiting for the GPU";

    private CancellableWait() {}

    /**
     * The future's value once it completes.
     *
     * @throws TaskKilledException if the thread is interrupted, or its Spark task is killed, before or while it
     *     waits; an interrupt flag stays set
     * @throws CudaException if the work failed on the GPU, with the failure as its cause
     */
    static <T> T await(CompletableFuture<T> future) {
        Objects.requireNonNull(future, "future");
        if (Thread.currentThread().isInterrupted()) {
            // Stop at every wait of an interrupted task, also where the work is already done (a completed
            // future's get() would not look at the flag).
            throw killed(INTERRUPTED, null);
        }
        TaskContext task = TaskContext.get();
        try {
            return task == null ? future.get() : awaitInTask(future, task);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // later interruptible calls of the task see it too
            throw killed(INTERRUPTED, e);
        } catch (ExecutionException e) {
            throw rethrown(e.getCause());
        }
    }

    private static <T> T awaitInTask(CompletableFuture<T> future, TaskContext task) throws InterruptedException, ExecutionException {
        CompletableFuture<T> waiting = future;
        while (true) {
            if (task.isInterrupted()) {
                throw killed(KILLED, null);
            }
            try {
                return waiting.get(KILL_CHECK_MILLIS, TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                // cuhandle's own futures poll the GPU for up to 1 ms in each get() before they park; a
                // copy completes with them but does not poll, so later rounds only park.
                waiting = waiting == future ? future.copy() : waiting;
            }
        }
    }

    private static TaskKilledException killed(String reason, Throwable cause) {
        TaskKilledException killed = new TaskKilledException(reason);
        if (cause != null) {
            killed.initCause(cause);
        }
        return killed;
    }

    /** The failure of the work, thrown again with this thread's stack (the original is the cause). */
    private static RuntimeException rethrown(Throwable failure) {
        if (failure instanceof CudaException) {
            CudaException gpu = (CudaException) failure;
            CudaException here = new CudaException(gpu.code(), "waiting for GPU work", gpu.getMessage());
            here.initCause(gpu);
            return here;
        }
        if (failure instanceof Error) {
            throw (Error) failure;
        }
        return failure instanceof RuntimeException ? (RuntimeException) failure : new CompletionException(failure);
    }
}
