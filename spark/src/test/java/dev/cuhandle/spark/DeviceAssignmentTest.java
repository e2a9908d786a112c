package dev.cuhandle.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.apache.spark.resource.ResourceInformation;
import org.junit.jupiter.api.Test;

/** Which device a task gets, from its resources, the job's local property and the configuration. */
class DeviceAssignmentTest {
    private static Map<String, ResourceInformation> gpus(String... addresses) {
        return Map.of("gpu", new ResourceInformation("gpu", addresses));
    }

    @Test
    void sparksGpuAddressWinsOverEveryFallback() {
        DeviceAssignment.Choice c = DeviceAssignment.choose(gpus("1"), "0", "0", 7);
        assertArrayEquals(new int[] {1}, c.devices);
        assertEquals(1, c.first());
        assertTrue(c.source.contains("GPU address 1 that Spark assigned to task 7"), c.source);
    }

    @Test
    void aTaskWithSeveralGpusGetsThemAllInSparksOrder() {
        assertArrayEquals(new int[] {3, 2}, DeviceAssignment.choose(gpus("3", "2"), null, null, 1).devices);
    }

    @Test
    void withoutGpusTheLocalPropertyThenTheConfigurationThenZero() {
        assertEquals(2, DeviceAssignment.choose(Map.of(), " 2 ", "1", 1).first());
        assertEquals(1, DeviceAssignment.choose(Map.of(), null, "1", 1).first());
        assertEquals(1, DeviceAssignment.choose(gpus(), "", "1", 1).first(), "an empty address list is no assignment");
        DeviceAssignment.Choice none = DeviceAssignment.choose(null, null, null, 1);
        assertEquals(0, none.first());
        assertTrue(none.source.contains("spark.cuhandle.device is not set"), none.source);
    }

    @Test
    void anAddressThatIsNoOrdinalIsRefusedWithWhatToDo() {
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> DeviceAssignment.choose(gpus("GPU-5d2c0c3e"), null, null, 9));
        assertTrue(e.getMessage().contains("GPU address \"GPU-5d2c0c3e\" that Spark assigned to task 9 is not a CUDA device number")
                && e.getMessage().contains("cuhandle-gpu-discovery.sh"), e.getMessage());
    }

    @Test
    void aBadConfiguredDeviceIsRefused() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> DeviceAssignment.choose(Map.of(), null, "-1", 1));
        assertTrue(e.getMessage().contains("spark.cuhandle.device=-1") && e.getMessage().contains("expected a device number from 0"), e.getMessage());
        assertThrows(IllegalStateException.class, () -> DeviceAssignment.choose(Map.of(), "gpu0", null, 1));
    }
}
