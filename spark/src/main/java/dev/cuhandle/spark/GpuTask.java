package dev.cuhandle.spark;

import dev.cuhandle.Handle;
import java.util.concurrent.CompletableFuture;
import org.apache.spark.TaskContext;
import org.apache.spark.TaskKilledException;

/**
 * The GPU of the running Spark task: a {@link Handle} on the device Spark assigned to it, closed
 * when the task ends, and waits for the GPU that Spark's cancellation ends.
 *
 * <pre>{@code
 * rdd.mapPartitions(rows -> {
 *     Handle h = GpuTask.handle();                        // this task's GPU; closed when the task ends
 *     Kernel score = GpuLibraries.resource(Job.class, "/kernels/score.fatbin").kernel("score");
 *     try (DeviceBuffer x = h.upload(pack(rows)); DeviceBuffer y = h.allocate(4L * n)) {
 *         h.launch(score, grid, block, 0, x, y, n);
 *         y.download(result);                             // a cancelled task stops waiting here
 *     }
 *     return result(...);
 * });
 * }</pre>
 *
 * <p><b>Which device.</b> The first of the GPU addresses Spark assigned to the task
 * ({@code TaskContext.resources().get("gpu")}, configured with {@code spark.executor.resource.gpu.amount}
 * and {@code spark.task.resource.gpu.amount}); where Spark assigned none, as in local mode, the
 * local property {@code spark.cuhandle.device} of the job, then {@code spark.cuhandle.device} in
 * the Spark configuration, else device 0. Addresses are device ordinals as cuhandle numbers them
 * ({@link GpuDiscovery} reports them so).
 *
 * <p><b>Life cycle.</b> The handle is made on the task's first call and closed by a
 * task-completion listener when the task ends: succeeded, failed or killed (rule S2 of
 * docs/design.md). Before the handle, the listener closes what the task registered with
 * {@link #closeAtEnd(AutoCloseable)}, then every buffer, pinned buffer, event and graph made through the
 * handle and still open ({@link Handle#trackResources() Handle.trackResources()}): a task that fails between {@code allocate}
 * and {@code close} leaves no allocation and no retain behind. Closing the handle waits for the GPU
 * work the task queued on it, then releases the primary-context retain. Every call in the same task
 * attempt returns the same handle; a retried attempt, and a task of another SparkContext in the same
 * JVM, gets its own. Do not close it yourself. Handles never change the context current on the pooled
 * task thread (rule H4), so the next task on that thread starts clean; {@link Handle#makeCurrent()} is
 * the exception and is best not used in tasks.
 *
 * <p><b>Cancellation.</b> Spark kills a task by marking it killed and, when the job asks for it
 * ({@code setJobGroup(group, description, true)}, {@code spark.job.interruptOnCancel}), by
 * interrupting its thread. The task's handle notices both in every blocking wait
 * ({@link Handle#synchronize()}, the blocking copies such as {@code download}, reductions to a host
 * value: see {@link dev.cuhandle.WaitCancellation}), and so do {@link #synchronize(Handle)} and
 * {@link #await(CompletableFuture)} for any handle or future: an interrupted task stops waiting at once,
 * a killed one within 20 ms, with a {@link TaskKilledException}. The waiting thread parks meanwhile (rule
 * W1). The task's queued work still finishes on the GPU before the handle is released; the release
 * parks too. The cost: each blocking call on a task's handle first waits for a future of the work
 * queued before it (a few microseconds).
 */
public final class GpuTask {
    private GpuTask() {}

    /**
     * The running task's handle, on the first GPU Spark assigned to it (or the local-mode fallback, see
     * the class comment). Made on the first call in the task and closed when the task ends.
     *
     * <p>The first call waits, parked, while {@code spark.cuhandle.concurrentGpuTasks} other tasks of this
     * executor hold the device ({@link GpuAdmission}); the task holds its permit until it ends, after its
     * handle is closed. Spark's cancellation ends that wait with a {@link TaskKilledException}.
     *
     * <p>With {@code spark.cuhandle.smPartitions=N} the handle is made on an SM partition of the device that no other
     * running task of the executor holds while there are no more tasks than partitions ({@link GpuSmPartitions});
     * on a device that cannot be split it is an ordinary handle ({@link Handle#partitionSms()} tells: 0).
     *
     * @return the task's handle; do not close it
     * @throws IllegalStateException if the calling thread runs no Spark task, the task has already
     *     completed, or a GPU address, {@code spark.cuhandle.device}, {@code spark.cuhandle.concurrentGpuTasks}
     *     or {@code spark.cuhandle.smPartitions} is not a valid number
     * @throws TaskKilledException if the task is cancelled while it waits for the device
     * @throws dev.cuhandle.CudaException if the handle cannot be made (no driver, no such device); the
     *     message says which device and where its number came from
     */
    public static Handle handle() {
        return TaskHandles.of(runningTask("GpuTask.handle()"));
    }

    /**
     * The device numbers the running task may use: the GPU addresses Spark assigned to it, in Spark's
     * order, or the one fallback device where it assigned none. {@link #handle()} uses the first; a
     * task given several GPUs makes handles for the others with {@link Handle#create(int)} and closes them.
     *
     * @return the device ordinals, at least one
     * @throws IllegalStateException if the calling thread runs no Spark task, or an address is not a
     *     device number
     */
    public static int[] devices() {
        return DeviceAssignment.forTask(runningTask("GpuTask.devices()")).devices.clone();
    }

    /**
     * Closes {@code resource} when the running task ends (succeeded, failed or killed): before the task's
     * handle and what it made, if the task has a handle by then. For what the task's handle does not make
     * itself: a handle on another of the task's devices, a native object of another library.
     *
     * @param resource what to close; a failure of its close fails the task's end, after the other closes
     * @throws NullPointerException if {@code resource} is {@code null}
     * @throws IllegalStateException if the calling thread runs no Spark task
     */
    public static void closeAtEnd(AutoCloseable resource) {
        java.util.Objects.requireNonNull(resource, "resource");
        TaskHandles.closeAtEnd(runningTask("GpuTask.closeAtEnd"), resource);
    }

    /**
     * Waits until the GPU has finished the work queued on {@code handle} so far, like
     * {@link Handle#synchronize()}, but ends when the thread is interrupted or its Spark task is killed.
     * Works outside Spark tasks too (then only an interrupt ends it).
     *
     * @param handle the handle whose work to wait for
     * @throws NullPointerException if {@code handle} is {@code null}
     * @throws TaskKilledException if the thread is interrupted (the flag stays set) or the task is killed,
     *     before or while waiting; the queued work still runs to its end
     * @throws IllegalStateException if the handle is closed
     * @throws dev.cuhandle.CudaException if the work failed on the GPU or the context is gone
     */
    public static void synchronize(Handle handle) {
        CancellableWait.await(handle.whenDone());
    }

    /**
     * Waits for a future of GPU work ({@link Handle#whenDone()}, {@link Handle#downloadAsync} ...) and returns
     * its value; ends when the thread is interrupted or its Spark task is killed.
     *
     * @param <T> the future's value type
     * @param future the future to wait for
     * @return the future's value
     * @throws NullPointerException if {@code future} is {@code null}
     * @throws TaskKilledException if the thread is interrupted (the flag stays set) or the task is killed,
     *     before or while waiting
     * @throws dev.cuhandle.CudaException if the work failed on the GPU
     */
    public static <T> T await(CompletableFuture<T> future) {
        return CancellableWait.await(future);
    }

    /**
     * Handles made for tasks in this JVM and not yet closed: 0 whenever no task that used
     * {@link #handle()} is running. For monitoring and tests.
     *
     * @return the number of open task handles
     */
    public static int openHandles() {
        return TaskHandles.open();
    }

    private static TaskContext runningTask(String call) {
        TaskContext task = TaskContext.get();
        if (task == null) {
            throw new IllegalStateException(call + " was called outside a Spark task (TaskContext.get() is null on thread "
                    + Thread.currentThread().getName() + "): call it inside a task's function, e.g. in mapPartitions");
        }
        return task;
    }
}
