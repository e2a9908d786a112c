package dev.cuhandle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cuhandle.CudaException;
import dev.cuhandle.StandIn;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.SparkException;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Local mode assigns no GPUs: tasks take spark.cuhandle.device (the job's local property first,
 * then the configuration), and a device that does not exist fails the task with a message that
 * says which device and where its number came from.
 */
class LocalModeDeviceTest {
    @BeforeAll
    static void standIn() {
        TestSpark.requireStandIn();
    }

    @Test
    void tasksUseTheConfiguredDeviceAndTheLocalPropertyOverridesIt() {
        JavaSparkContext sc = TestSpark.start("local[2]", "spark.cuhandle.device", "1");
        try {
            assertEquals(List.of(1, 1, 1, 1), devices(sc));
            sc.setLocalProperty("spark.cuhandle.device", "0");
            assertEquals(List.of(0, 0, 0, 0), devices(sc));
            sc.setLocalProperty("spark.cuhandle.device", "5");
            SparkException e = assertThrows(SparkException.class, () -> devices(sc));
            Throwable cause = rootCudaException(e);
            assertTrue(cause.getMessage().contains("GpuTask.handle() on device 5, from local property spark.cuhandle.device=5")
                    && cause.getMessage().contains("INVALID_DEVICE"), cause.getMessage());
            assertEquals(0, GpuTask.openHandles());
            assertEquals(0, StandIn.primaryRetains(0) + StandIn.primaryRetains(1));
        } finally {
            sc.stop();
        }
    }

    private static List<Integer> devices(JavaSparkContext sc) {
        return sc.parallelize(Arrays.asList(1, 2, 3, 4), 4).mapPartitions(LocalModeDeviceTest::device).collect();
    }

    private static Iterator<Integer> device(Iterator<Integer> ignored) {
        return Collections.singletonList(GpuTask.handle().device().ordinal()).iterator();
    }

    private static Throwable rootCudaException(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof CudaException) {
                return t;
            }
        }
        // Spark reports a task's failure as text in the job's exception: the message is all there is.
        return e;
    }
}
