package dev.cuhandle.spark;

import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * cuhandle's Spark plugin ({@code spark.plugins=dev.cuhandle.spark.CuhandleSparkPlugin}): on each
 * executor it reports at start which CUDA devices cuhandle sees beside the GPUs Spark assigned to
 * the executor, and at shutdown closes the kernel libraries of {@link GpuLibraries} and any task
 * handle a task left open. Without it the libraries are closed by a JVM shutdown hook, which
 * local mode only runs when the JVM exits, not when a {@code SparkContext} stops.
 *
 * <p>It has no driver side.
 */
public final class CuhandleSparkPlugin implements SparkPlugin {
    /** Made by Spark from {@code spark.plugins}. */
    public CuhandleSparkPlugin() {}

    /**
     * No driver component.
     *
     * @return {@code null}
     */
    @Override
    public DriverPlugin driverPlugin() {
        return null;
    }

    /**
     * The executor component: a start report and the shutdown that releases cuhandle's per-executor state.
     *
     * @return a new executor plugin
     */
    @Override
    public ExecutorPlugin executorPlugin() {
        return new CuhandleExecutorPlugin();
    }
}
