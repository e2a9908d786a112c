package dev.cuhandle.spark;

import dev.cuhandle.Cuda;
import java.util.StringJoiner;

/**
 * Spark's GPU discovery: prints the JSON that {@code spark.executor.resource.gpu.discoveryScript}
 * (and {@code spark.worker.resource.gpu.discoveryScript}, {@code spark.driver.resource.gpu.discoveryScript})
 * must print, {@code {"name":"gpu","addresses":["0","1"]}}, listing the CUDA devices cuhandle sees
 * (after {@code CUDA_VISIBLE_DEVICES}) by ordinal, the numbers {@link GpuTask} maps addresses back to.
 *
 * <p>Spark runs a script, not a class: {@code bin/cuhandle-gpu-discovery.sh} of the cuhandle
 * sources runs this class with the cuhandle and cuhandle-spark JARs found beside the script (or
 * on {@code CUHANDLE_CLASSPATH}). Spark itself is not needed on its class path.
 */
public final class GpuDiscovery {
    private GpuDiscovery() {}

    /**
     * Prints the JSON on standard output and exits 0; if CUDA cannot be used, prints the reason on
     * standard error and exits 1, which Spark reports as a failed discovery.
     *
     * @param args optional: the resource name (default {@code gpu}), letters, digits, '.', '_' and '-'
     */
    public static void main(String[] args) {
        String name = args.length > 0 ? args[0] : DeviceAssignment.GPU;
        if (!name.matches("[A-Za-z0-9._-]+")) {
            System.err.println("cuhandle GPU discovery: resource name '" + name + "' must consist of letters, digits, '.', '_' and '-'");
            System.exit(2);
        }
        int count;
        try {
            count = Cuda.deviceCount();
        } catch (RuntimeException | LinkageError e) {
            System.err.println("cuhandle GPU discovery: CUDA is not usable: " + e.getMessage());
            System.exit(1);
            return;
        }
        System.out.println(json(name, count));
        System.exit(0);
    }

    /** Spark's resource JSON for devices 0 to {@code count} - 1. */
    static String json(String name, int count) {
        StringJoiner addresses = new StringJoiner(",", "[", "]");
        for (int d = 0; d < count; d++) {
            addresses.add("\"" + d + "\"");
        }
        return "{\"name\":\"" + name + "\",\"addresses\":" + addresses + "}";
    }
}
