package dev.cuhandle.spark;

import dev.cuhandle.WaitCancellation;
import java.util.concurrent.CompletableFuture;
import org.apache.spark.TaskContext;
import org.apache.spark.TaskKilledException;

/**
 * Waits for GPU work in a way that Spark's cancellation can end.
 *
 * <p>Spark kills a task by marking its {@link TaskContext} killed and, where the job asked for it
 * ({@code spark.job.interruptOnCancel}, {@code setJobGroup(..., interruptOnCancel = true)}, task
 * reaping), by interrupting its thread. {@link #of(TaskContext)} is the {@link WaitCancellation} that
 * sees both: the interrupt at once, the kill mark every {@value WaitCancellation#POLL_MILLIS} ms; a
 * task's handle has it (every blocking wait of the handle ends with the kill), and {@link #await} waits
 * for any future with it.
 *
 * <p>The work itself is not cancelled (CUDA cannot take queued work back): it runs to its end, and the
 * task's handle, closed by its completion listener, waits for it before it releases anything, so no
 * memory is freed under a running kernel.
 */
final class CancellableWait {
    static final String INTERRUPTED = "interrupted while waiting for the GPU (Spark cancels a task by interrupting its thread)";
    static final String KILLED = "killed while waiting for the GPU";

    private CancellableWait() {}

    /**
     * The future's value once it completes.
     *
     * @throws TaskKilledException if the thread is interrupted, or its Spark task is killed, before or while it
     *     waits; an interrupt flag stays set
     * @throws dev.cuhandle.CudaException if the work failed on the GPU, with the failure as its cause
     */
    static <T> T await(CompletableFuture<T> future) {
        return of(TaskContext.get()).await(future);
    }

    /** Ends waits when the thread is interrupted or, for a task (non-null), when the task is killed. */
    static WaitCancellation of(TaskContext task) {
        return interrupted -> interrupted ? killed(INTERRUPTED)
                : task != null && task.isInterrupted() ? killed(KILLED) : null;
    }

    private static TaskKilledException killed(String reason) {
        return new TaskKilledException(reason);
    }
}
