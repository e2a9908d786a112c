package dev.cuhandle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.cuhandle.Cuda;
import dev.cuhandle.Handle;
import dev.cuhandle.StandIn;
import dev.cuhandle.spark.example.BarrierStage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.resource.ResourceInformation;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Spark's GPU scheduling end to end on the stand-in's two devices: a local-cluster worker
 * discovers them with cuhandle's discovery script (bin/cuhandle-gpu-discovery.sh), the executor
 * gets both, and two tasks of one GPU each, run at the same time (a barrier stage), get addresses
 * "0" and "1" and handles on devices 0 and 1. The executor is a JVM of its own, so what its tasks
 * saw comes back as their results.
 */
class GpuAddressesTest {
    @BeforeAll
    static void standIn() {
        TestSpark.requireStandIn();
        if (Cuda.deviceCount() != 2) {
            throw new IllegalStateException("the stand-in should model 2 devices (CUHANDLE_STANDIN_DEVICES=2 in the surefire configuration), it has "
                    + Cuda.deviceCount());
        }
    }

    @Test
    void tasksWithAddressesZeroAndOneGetHandlesOnDevicesZeroAndOne(@TempDir Path temp) throws IOException {
        Path discovery = discoveryScript(temp);
        String testClassPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        JavaSparkContext sc = TestSpark.start("local-cluster[1,2,1024]",
                "spark.worker.resource.gpu.amount", "2",
                "spark.worker.resource.gpu.discoveryScript", discovery.toString(),
                "spark.executor.resource.gpu.amount", "2",
                "spark.task.resource.gpu.amount", "1",
                "spark.executor.cores", "2",
                "spark.executor.memory", "512m",
                "spark.executor.extraClassPath", testClassPath,
                "spark.executor.extraJavaOptions", "-Dcuhandle.standIn=true");
        try {
            BarrierStage.awaitExecutors(sc, 1, 120_000);
            Set<String> seen = new TreeSet<>(BarrierStage.mapPartitions(sc.parallelize(Arrays.asList(0, 1), 2),
                    GpuAddressesTest::addressAndDevice, String.class).collect());
            assertEquals(new TreeSet<>(List.of("address 0 -> device 0, devices [0]", "address 1 -> device 1, devices [1]")), seen);

            // The executor after those tasks: nothing open, nothing retained.
            List<String> after = sc.parallelize(Arrays.asList(0, 1), 2).mapPartitions(GpuAddressesTest::executorState).collect();
            assertEquals(List.of("open handles 0, retains 0 0", "open handles 0, retains 0 0"), after);
        } finally {
            sc.stop();
        }
    }

    private static Iterator<String> addressAndDevice(Iterator<Integer> ignored) {
        BarrierTaskContext context = BarrierTaskContext.get();
        context.barrier(); // both tasks hold their GPU at once, so they cannot share one address
        ResourceInformation gpu = context.resourcesJMap().get("gpu");
        Handle h = GpuTask.handle();
        String seen = "address " + String.join(",", gpu.addresses()) + " -> device " + h.device().ordinal() + ", devices "
                + Arrays.toString(GpuTask.devices());
        context.barrier(); // neither ends before the other has its handle
        return Collections.singletonList(seen).iterator();
    }

    private static Iterator<String> executorState(Iterator<Integer> ignored) {
        return Collections.singletonList("open handles " + GpuTask.openHandles() + ", retains " + StandIn.primaryRetains(0) + " "
                + StandIn.primaryRetains(1)).iterator();
    }

    /**
     * bin/cuhandle-gpu-discovery.sh as Spark would run it, with the class path given through
     * CUHANDLE_CLASSPATH (Spark runs the script with its own environment, so a wrapper sets it).
     */
    static Path discoveryScript(Path folder) throws IOException {
        Path script = Paths.get("bin", "cuhandle-gpu-discovery.sh").toAbsolutePath();
        Path wrapper = folder.resolve("discover-gpus.sh");
        Files.writeString(wrapper, "#!/bin/sh\nCUHANDLE_CLASSPATH='" + discoveryClassPath() + "' exec '" + script + "' \"$@\"\n");
        Files.setPosixFilePermissions(wrapper, PosixFilePermissions.fromString("rwxr-xr-x"));
        return wrapper;
    }

    /** This module's classes and the cuhandle JAR, the class path the script needs (no Spark). */
    static String discoveryClassPath() {
        StringBuilder cp = new StringBuilder(Paths.get("target", "classes").toAbsolutePath().toString());
        for (String entry : System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")).split(java.io.File.pathSeparator)) {
            if (entry.matches(".*[/\\\\](cuhandle-[0-9][^/\\\\]*\\.jar|java[/\\\\]target[/\\\\]classes)")) {
                cp.append(java.io.File.pathSeparator).append(entry);
            }
        }
        return cp.toString();
    }
}
