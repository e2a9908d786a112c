package dev.cuhandle.spark;

import dev.cuhandle.Cuda;
import dev.cuhandle.CudaError;
import dev.cuhandle.CudaException;
import dev.cuhandle.Device;
import dev.cuhandle.Handle;
import dev.cuhandle.SmPartitions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkEnv;

/**
 * SM partitions for Spark tasks: with {@value #SM_PARTITIONS_KEY}{@code =N}, each executor JVM splits each GPU its
 * tasks use into N SM partitions once ({@link Device#splitSms(int)}, rule P1 of docs/design.md), and each task's
 * handle ({@link GpuTask#handle()}) is made on a partition that no other running task of the executor holds, so
 * that one task's long kernels cannot take the SMs the other tasks' work runs on.
 *
 * <p><b>Which partition.</b> The one with the fewest task handles now, the lowest index among equals: every task
 * gets a partition of its own while no more tasks than partitions hold the GPU. With more (a barrier stage, or
 * {@link GpuAdmission#CONCURRENT_TASKS_KEY} above N) tasks share partitions, each still with a stream of its own;
 * they do not wait. Keep {@code spark.cuhandle.concurrentGpuTasks} at most N for one partition per task. A task's
 * partition is counted free again when the task ends (success, failure or kill), after its handle has closed and
 * before its admission permit goes back.
 *
 * <p><b>Devices that cannot be split.</b> A driver before CUDA 12.4, a device without green contexts
 * ({@link Device#smPartitionSupport()}), or a device that cannot make N partitions: the executor logs one warning
 * per device (System.Logger {@code dev.cuhandle.spark}, saying why) and its tasks get ordinary handles, as without
 * the setting. The partitions isolate tasks' speed, not their results, so a job runs on older or smaller GPUs of
 * a cluster all the same; a task that needs to know looks at {@link Handle#partitionSms()} (0 for an ordinary
 * handle). Other driver failures while splitting fail the task and are not remembered.
 *
 * <p><b>Lifetime.</b> The split lives for the executor (local mode: the SparkContext); the executor plugin
 * ({@link CuhandleSparkPlugin}) ends it at shutdown, and handles still open keep their partitions alive. State is
 * per device and N, never per task id, so SparkContexts restarted in one JVM each split anew.
 */
public final class GpuSmPartitions {
    /** The Spark configuration key: how many SM partitions each GPU of an executor is split into for its tasks. */
    public static final String SM_PARTITIONS_KEY = "spark.cuhandle.smPartitions";

    private static final System.Logger LOG = System.getLogger("dev.cuhandle.spark");
    /** Per device and N: its pool, or the reason it cannot be split (a String). */
    private static final Map<DeviceParts, Object> STATE = new ConcurrentHashMap<>();
    /** Serialises splits (rare: once per device and N per executor). */
    private static final Object SPLIT_LOCK = new Object();

    private record DeviceParts(int device, int parts) {}

    /** A task's handle and what releases its partition at the task's end (nothing for an ordinary handle). */
    record Placed(Handle handle, Runnable release) {}

    private GpuSmPartitions() {}

    /**
     * The number of partitions a configured value ({@code null} when unset) stands for: 0 when off. The seam that
     * tests use without a cluster.
     *
     * @throws IllegalStateException if the value is set but not a whole number from 1
     */
    static int parts(String configured) {
        if (configured == null || configured.isBlank()) {
            return 0;
        }
        try {
            int parts = Integer.parseInt(configured.trim());
            if (parts >= 1) {
                return parts;
            }
        } catch (NumberFormatException e) {
            // reported below, with what was expected
        }
        throw new IllegalStateException(SM_PARTITIONS_KEY + "=" + configured.trim() + " is not a valid number of SM partitions; expected a whole "
                + "number from 1: how many SM partitions each GPU of an executor is split into, one per concurrently running task "
                + "(leave it unset for ordinary handles)");
    }

    /** The value of {@value #SM_PARTITIONS_KEY} in the executor's Spark configuration: 0 when unset. */
    static int configuredParts() {
        SparkEnv env = SparkEnv.get();
        return parts(env == null ? null : env.conf().get(SM_PARTITIONS_KEY, null));
    }

    /**
     * A new handle on {@code device} for a task: on its least-held partition when {@code parts} is at least 1 and
     * the device can be split so, otherwise an ordinary handle.
     *
     * @throws CudaException if the device does not exist, or the driver fails
     */
    static Placed place(int device, int parts) {
        if (parts < 1) {
            return new Placed(Handle.create(device), () -> { });
        }
        DeviceParts key = new DeviceParts(device, parts);
        while (true) {
            Object state = STATE.get(key);
            if (state == null) {
                state = split(key);
            }
            if (state instanceof String) {
                return new Placed(Handle.create(device), () -> { });
            }
            SmPartitionPool pool = (SmPartitionPool) state;
            SmPartitionPool.Slot slot = pool.take();
            if (slot != null) {
                return new Placed(slot.handle(), slot::release);
            }
            STATE.remove(key, pool); // closed by closeAll while this task chose it: split again
        }
    }

    /** Splits the device once per key (or records why it cannot), and returns the pool or the reason. */
    private static Object split(DeviceParts key) {
        synchronized (SPLIT_LOCK) {
            Object state = STATE.get(key);
            if (state != null) {
                return state;
            }
            Device device = Cuda.device(key.device());
            String unsupported = device.smPartitionSupport();
            if (unsupported.isEmpty()) {
                try {
                    SmPartitions parts = device.splitSms(key.parts());
                    LOG.log(System.Logger.Level.INFO, () -> "cuhandle: " + SM_PARTITIONS_KEY + "=" + key.parts() + ": " + parts
                            + "; each task's handle gets the partition with the fewest tasks");
                    state = new SmPartitionPool(parts);
                } catch (IllegalArgumentException e) {
                    unsupported = e.getMessage();
                } catch (CudaException e) {
                    if (e.error() != CudaError.NOT_SUPPORTED) {
                        throw e; // not remembered: the next task tries again
                    }
                    unsupported = e.getMessage();
                }
            }
            if (state == null) {
                state = "device " + key.device() + " cannot be split into " + key.parts() + " SM partitions: " + unsupported;
                LOG.log(System.Logger.Level.WARNING, "cuhandle: " + SM_PARTITIONS_KEY + "=" + key.parts() + " is ignored on device "
                        + key.device() + ", whose tasks get ordinary handles (they share all its SMs): " + state);
            }
            STATE.put(key, state);
            return state;
        }
    }

    /**
     * Task handles per SM partition of {@code device} now, for the split made for {@code parts} partitions. For
     * monitoring and tests.
     *
     * @param device the device ordinal
     * @param parts the value of {@value #SM_PARTITIONS_KEY}
     * @return one count per partition, in partition order; empty if no task has split the device so yet, or it
     *     cannot be split so
     */
    public static int[] tasksPerPartition(int device, int parts) {
        Object state = STATE.get(new DeviceParts(device, parts));
        return state instanceof SmPartitionPool ? ((SmPartitionPool) state).holders() : new int[0];
    }

    /**
     * Why {@code device} is not split into {@code parts} partitions for tasks, where a task found it could not be.
     *
     * @param device the device ordinal
     * @param parts the value of {@value #SM_PARTITIONS_KEY}
     * @return the reason logged in the warning, or {@code null} if no task found the device unsplittable so
     */
    public static String fallbackReason(int device, int parts) {
        Object state = STATE.get(new DeviceParts(device, parts));
        return state instanceof String ? (String) state : null;
    }

    /** The pool of {@code device} for {@code parts}, or null. For tests. */
    static SmPartitionPool pool(int device, int parts) {
        Object state = STATE.get(new DeviceParts(device, parts));
        return state instanceof SmPartitionPool ? (SmPartitionPool) state : null;
    }

    /** Ends every split and forgets every fallback (executor shutdown); returns how many splits it ended. */
    static int closeAll() {
        List<Object> ended = new ArrayList<>();
        for (Map.Entry<DeviceParts, Object> e : STATE.entrySet()) {
            if (STATE.remove(e.getKey(), e.getValue())) {
                ended.add(e.getValue());
            }
        }
        int closed = 0;
        for (Object state : ended) {
            if (state instanceof SmPartitionPool) {
                try {
                    ((SmPartitionPool) state).close();
                    closed++;
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "closing SM partitions failed", e);
                }
            }
        }
        return closed;
    }
}
