package dev.cuhandle.spark;

import dev.cuhandle.Cuda;
import java.util.Map;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.resource.ResourceInformation;

/** The executor side of {@link CuhandleSparkPlugin}. */
final class CuhandleExecutorPlugin implements ExecutorPlugin {
    private static final System.Logger LOG = System.getLogger("dev.cuhandle.spark");

    @Override
    public void init(PluginContext ctx, Map<String, String> extraConf) {
        ResourceInformation gpus = ctx.resources().get(DeviceAssignment.GPU);
        String assigned = gpus == null ? "no GPU addresses (tasks use " + DeviceAssignment.DEVICE_KEY + ", else device 0)"
                : "GPU addresses " + String.join(",", gpus.addresses());
        String reason = Cuda.unavailableReason();
        if (reason != null) {
            // Not fatal: a job may fall back to the CPU. Tasks that ask for a handle get the full reason.
            LOG.log(System.Logger.Level.WARNING, "cuhandle on executor " + ctx.executorID() + ": CUDA is not usable (" + reason
                    + "); Spark assigned " + assigned);
            return;
        }
        LOG.log(System.Logger.Level.INFO, "cuhandle on executor " + ctx.executorID() + ": " + Cuda.deviceCount()
                + " CUDA device(s) visible, driver " + Cuda.driverPath() + "; Spark assigned " + assigned);
    }

    @Override
    public void shutdown() {
        int handles = TaskHandles.closeRemaining();
        if (handles > 0) {
            LOG.log(System.Logger.Level.WARNING, "cuhandle closed " + handles + " task handle(s) whose tasks never completed");
        }
        // After the task handles: a partition stays alive while a handle on it does, so the order is for tidiness only.
        int splits = GpuSmPartitions.closeAll();
        LOG.log(System.Logger.Level.DEBUG, "cuhandle ended " + splits + " SM partition split(s)");
        int libraries = GpuLibraries.closeAll();
        LOG.log(System.Logger.Level.DEBUG, "cuhandle closed " + libraries + " cached kernel librar" + (libraries == 1 ? "y" : "ies"));
    }
}
