package dev.cuhandle.spark;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.TaskKilledException;

/**
 * Admission control: at most {@code spark.cuhandle.concurrentGpuTasks} tasks of this executor JVM
 * hold one GPU device at once; the others wait for a permit before they touch it.
 *
 * <p>Why: with {@code spark.task.resource.gpu.amount=0.25} Spark runs four tasks on a GPU at once,
 * and all of them allocate at the same moment. The first {@code CUDA_ERROR_OUT_OF_MEMORY} fails a
 * task, and Spark's retry meets the same crowd. A task that waits for a permit holds nothing on the
 * GPU while it waits, so the tasks admitted get the memory; {@link GpuRetry} handles the
 * out-of-memory errors that remain.
 *
 * <p><b>Configuration.</b> {@value #CONCURRENT_TASKS_KEY} in the Spark configuration (read on the
 * executor): a whole number from 1; {@value #DEFAULT_CONCURRENT_TASKS} when it is not set. Two keeps
 * the GPU busy while one task copies and the other computes, and halves the memory that four tasks
 * sharing a GPU would ask for at once. Permits are per device: an executor with two GPUs admits that
 * many tasks on each.
 *
 * <p><b>Waiting.</b> First come, first served. The wait parks (it never spins) and honours Spark's
 * cancellation: an interrupt of the task's thread ends it at once, the task's kill mark within 20 ms,
 * both with Spark's {@link TaskKilledException} (the interrupt flag stays set). A task of a barrier
 * stage never waits: its stage runs all its tasks at once, and one of them waiting for a permit that
 * another holds until the barrier would stop the stage forever; it is counted as a holder all the same.
 *
 * <p><b>Monitoring.</b> {@link #holders(int)}, {@link #maxHolders(int)}, {@link #waiting(int)},
 * {@link #waits()} and {@link #waitedNanos()}; each wait is also logged to the {@code System.Logger}
 * {@code dev.cuhandle.spark} (DEBUG, INFO from 1 s).
 */
public final class GpuAdmission {
    /** The Spark configuration key: how many tasks may hold one GPU device at once in an executor. */
    public static final String CONCURRENT_TASKS_KEY = "spark.cuhandle.concurrentGpuTasks";
    /** The number of tasks admitted per device when {@value #CONCURRENT_TASKS_KEY} is not set. */
    public static final int DEFAULT_CONCURRENT_TASKS = 2;

    private static final System.Logger LOG = System.getLogger("dev.cuhandle.spark");
    private static final long SLOW_WAIT_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final ConcurrentHashMap<Integer, DevicePermits> BY_DEVICE = new ConcurrentHashMap<>();
    /** The permits tasks hold, so that a task asking again for the same device gets the one it holds. */
    private static final ConcurrentHashMap<TaskDevice, Permit> BY_TASK = new ConcurrentHashMap<>();

    /**
     * A task and a device it holds a permit for. The task is compared by identity, not by its attempt id: attempt
     * ids restart at 0 in every SparkContext, so a task of a restarted context could otherwise be handed the permit
     * of an older context's task still running in this JVM (rule S2).
     */
    private static final class TaskDevice {
        private final TaskContext task;
        private final int device;

        TaskDevice(TaskContext task, int device) {
            this.task = task;
            this.device = device;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof TaskDevice && ((TaskDevice) o).task == task && ((TaskDevice) o).device == device;
        }

        @Override
        public int hashCode() {
            return 31 * System.identityHashCode(task) + device;
        }
    }

    private GpuAdmission() {}

    /**
     * A task's permit to use one device. {@link #release()} gives it back; only the first call does
     * anything, so a completion listener and an error path may both call it.
     */
    static final class Permit {
        private final DevicePermits permits;
        private final int device;
        private final long waitedNanos;
        /** The task and device this permit is registered under in BY_TASK; null for the seam's permits. */
        private final TaskDevice owner;
        private final AtomicBoolean released = new AtomicBoolean();

        private Permit(DevicePermits permits, int device, long waitedNanos, TaskDevice owner) {
            this.permits = permits;
            this.device = device;
            this.waitedNanos = waitedNanos;
            this.owner = owner;
        }

        /** Gives the permit back, once; later calls do nothing. */
        void release() {
            if (released.compareAndSet(false, true)) {
                if (owner != null) {
                    BY_TASK.remove(owner, this);
                }
                permits.release();
            }
        }

        /** Whether {@link #release()} has run. */
        boolean isReleased() {
            return released.get();
        }

        /** How long the task waited for this permit, in nanoseconds; 0 if it did not wait. */
        long waitedNanos() {
            return waitedNanos;
        }

        @Override
        public String toString() {
            return "GPU permit for device " + device + (isReleased() ? " (released)" : "");
        }
    }

    /**
     * Waits for a permit for {@code task} on {@code device}, as the class comment describes, with the limit
     * from the executor's Spark configuration. Call it on the task's thread before the task first touches the
     * device, and release the permit when the task ends, after its GPU work: a task-completion listener
     * registered before the handle's own (Spark runs listeners last-registered first). A task that holds a
     * permit for the device gets the same one again, so that a second call cannot wait for the task itself.
     *
     * @throws IllegalArgumentException if {@code device} is negative
     * @throws IllegalStateException if {@value #CONCURRENT_TASKS_KEY} is set but not a whole number from 1
     * @throws TaskKilledException if the thread is interrupted (the flag stays set) or the task is killed,
     *     before or while it waits; it then holds no permit
     */
    static Permit acquire(TaskContext task, int device) {
        TaskDevice owner = new TaskDevice(task, device);
        Permit held = BY_TASK.get(owner);
        if (held != null) {
            return held;
        }
        int limit = limit(configured());
        boolean barrier = task instanceof BarrierTaskContext;
        Permit permit = take(device, limit, barrier, task::isInterrupted, owner);
        BY_TASK.put(owner, permit);
        if (permit.waitedNanos > 0) {
            LOG.log(permit.waitedNanos >= SLOW_WAIT_NANOS ? System.Logger.Level.INFO : System.Logger.Level.DEBUG,
                    () -> "task " + task.taskAttemptId() + " waited " + TimeUnit.NANOSECONDS.toMillis(permit.waitedNanos)
                            + " ms for a GPU permit on device " + device + " (" + CONCURRENT_TASKS_KEY + "=" + limit + ")");
        }
        return permit;
    }

    /**
     * The seam under {@link #acquire(TaskContext, int)} that needs no running task: a permit for
     * {@code device} with at most {@code limit} holders; {@code killed} stands for the task's kill mark.
     */
    static Permit acquire(int device, int limit, boolean mustNotWait, BooleanSupplier killed) {
        return take(device, limit, mustNotWait, killed, null);
    }

    private static Permit take(int device, int limit, boolean mustNotWait, BooleanSupplier killed, TaskDevice owner) {
        if (limit < 1) {
            throw new IllegalArgumentException("limit " + limit + " is invalid; expected at least 1");
        }
        DevicePermits permits = permits(device);
        return new Permit(permits, device, permits.acquire(limit, mustNotWait, killed), owner);
    }

    /** The value of {@value #CONCURRENT_TASKS_KEY} in the executor's Spark configuration, or null. */
    private static String configured() {
        SparkEnv env = SparkEnv.get();
        return env == null ? null : env.conf().get(CONCURRENT_TASKS_KEY, null);
    }

    /**
     * The limit that a configured value ({@code null} when unset) stands for. The seam that tests use without
     * a cluster.
     *
     * @throws IllegalStateException if the value is set but not a whole number from 1
     */
    static int limit(String configured) {
        if (configured == null || configured.isBlank()) {
            return DEFAULT_CONCURRENT_TASKS;
        }
        try {
            int limit = Integer.parseInt(configured.trim());
            if (limit >= 1) {
                return limit;
            }
        } catch (NumberFormatException e) {
            // reported below, with what was expected
        }
        throw new IllegalStateException(CONCURRENT_TASKS_KEY + "=" + configured.trim() + " is not a valid number of tasks; expected a whole "
                + "number from 1: how many tasks of an executor may use one GPU at once (default " + DEFAULT_CONCURRENT_TASKS + ")");
    }

    /** The permits of {@code device}, made on first use. */
    static DevicePermits permits(int device) {
        if (device < 0) {
            throw new IllegalArgumentException("device " + device + " is invalid; expected a device ordinal from 0");
        }
        return BY_DEVICE.computeIfAbsent(device, DevicePermits::new);
    }

    /**
     * Tasks of this JVM that hold a permit for {@code device} now. For monitoring and tests.
     *
     * @param device the device ordinal
     * @return the number of holders, 0 for a device no task has asked for
     * @throws IllegalArgumentException if {@code device} is negative
     */
    public static int holders(int device) {
        return permits(device).holders();
    }

    /**
     * The most tasks of this JVM that have held a permit for {@code device} at once since the JVM started.
     * At most {@value #CONCURRENT_TASKS_KEY} unless a barrier stage's tasks (which do not wait) ran on it.
     *
     * @param device the device ordinal
     * @return the high mark of {@link #holders(int)}
     * @throws IllegalArgumentException if {@code device} is negative
     */
    public static int maxHolders(int device) {
        return permits(device).maxHolders();
    }

    /**
     * Tasks of this JVM waiting for a permit for {@code device} now.
     *
     * @param device the device ordinal
     * @return the number of waiting tasks
     * @throws IllegalArgumentException if {@code device} is negative
     */
    public static int waiting(int device) {
        return permits(device).waiting();
    }

    /**
     * How many requests for a permit had to wait in this JVM, on any device, since it started (cancelled
     * waits included).
     *
     * @return the number of waits
     */
    public static long waits() {
        return BY_DEVICE.values().stream().mapToLong(DevicePermits::waits).sum();
    }

    /**
     * How long requests for a permit have waited in this JVM, on all devices together, since it started
     * (cancelled waits included): the time admission control added to tasks.
     *
     * @return the total wait in nanoseconds
     */
    public static long waitedNanos() {
        return BY_DEVICE.values().stream().mapToLong(DevicePermits::waitedNanos).sum();
    }
}
