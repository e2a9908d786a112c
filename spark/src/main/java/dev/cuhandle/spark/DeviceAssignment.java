package dev.cuhandle.spark;

import java.util.Arrays;
import java.util.Map;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.resource.ResourceInformation;

/**
 * Which CUDA device a Spark task uses, and why: the GPU addresses Spark assigned to the task
 * ({@code TaskContext.resources().get("gpu")}), else {@code spark.cuhandle.device} (a local
 * property of the job, then the Spark configuration), else device 0.
 *
 * <p>Spark hands out GPU addresses only where it schedules GPUs (standalone, YARN, Kubernetes,
 * local-cluster); plain local mode ({@code local[N]}) never does, so there every task takes the
 * fallback. An address is the device's ordinal as cuhandle numbers devices, which is what
 * {@link GpuDiscovery} reports; inside a container that sees only some GPUs both number the
 * visible devices from 0.
 */
final class DeviceAssignment {
    /** Spark's resource name for GPUs, as in {@code spark.executor.resource.gpu.amount}. */
    static final String GPU = "gpu";
    /** The fallback device where Spark assigned no GPU (local mode): a local property or a configuration key. */
    static final String DEVICE_KEY = "spark.cuhandle.device";

    /** The devices a task may use, first one first, and a sentence saying where they came from. */
    static final class Choice {
        final int[] devices;
        final String source;

        Choice(int[] devices, String source) {
            this.devices = devices;
            this.source = source;
        }

        int first() {
            return devices[0];
        }

        @Override
        public String toString() {
            return "devices " + Arrays.toString(devices) + " (" + source + ")";
        }
    }

    private DeviceAssignment() {}

    /** The choice for the task {@code task}, reading the executor's configuration for the fallback. */
    static Choice forTask(TaskContext task) {
        SparkEnv env = SparkEnv.get();
        String configured = env == null ? null : env.conf().get(DEVICE_KEY, null);
        return choose(task.resourcesJMap(), task.getLocalProperty(DEVICE_KEY), configured, task.taskAttemptId());
    }

    /**
     * The choice from a task's resources, the job's local property and the configuration value (each may be
     * null); {@code taskId} only names the task in messages. The seam that tests use without a cluster.
     *
     * @throws IllegalStateException if Spark assigned a GPU address that is not a device ordinal, or a
     *     configured device number is not a non-negative integer
     */
    static Choice choose(Map<String, ResourceInformation> resources, String localProperty, String configured, long taskId) {
        ResourceInformation gpu = resources == null ? null : resources.get(GPU);
        if (gpu != null && gpu.addresses().length > 0) {
            String[] addresses = gpu.addresses();
            int[] devices = new int[addresses.length];
            for (int i = 0; i < addresses.length; i++) {
                devices[i] = ordinal(addresses[i], "GPU address \"" + addresses[i] + "\" that Spark assigned to task " + taskId,
                        "Spark's GPU addresses must be CUDA device ordinals as cuhandle numbers them; discover them with cuhandle's "
                                + "discovery script (bin/cuhandle-gpu-discovery.sh, class dev.cuhandle.spark.GpuDiscovery)");
            }
            return new Choice(devices, "GPU address" + (addresses.length > 1 ? "es " : " ") + String.join(",", addresses)
                    + " that Spark assigned to task " + taskId);
        }
        if (localProperty != null && !localProperty.isBlank()) {
            return fallback(localProperty, "local property " + DEVICE_KEY + "=" + localProperty.trim() + " (Spark assigned no GPU)");
        }
        if (configured != null && !configured.isBlank()) {
            return fallback(configured, DEVICE_KEY + "=" + configured.trim() + " in the Spark configuration (Spark assigned no GPU)");
        }
        return new Choice(new int[] {0}, "device 0: Spark assigned no GPU and " + DEVICE_KEY + " is not set");
    }

    private static Choice fallback(String value, String source) {
        return new Choice(new int[] {ordinal(value, source, "expected a device number from 0")}, source);
    }

    private static int ordinal(String value, String what, String expected) {
        try {
            int ordinal = Integer.parseInt(value.trim());
            if (ordinal >= 0) {
                return ordinal;
            }
        } catch (NumberFormatException e) {
            // reported below, with what was expected
        }
        throw new IllegalStateException(what + " is not a CUDA device number; " + expected);
    }
}
