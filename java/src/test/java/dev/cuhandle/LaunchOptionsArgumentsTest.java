package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static dev.cuhandle.KernelLaunchArgumentsTest.assertContains;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Issue 11 items 4 and 5, the checks that need no driver: structure arguments, cluster sizes,
 * load options and the numbers behind the named attributes.
 */
class LaunchOptionsArgumentsTest {
    private static KernelLaunch launch() {
        return new Kernel(null, "cuh_fake", 0L, new long[] {-1}).newLaunch();
    }

    @Test
    void structureArgumentsAreCheckedAndCopied() {
        KernelLaunch l = launch();
        assertThrows(NullPointerException.class, () -> l.arg(0, (ByteBuffer) null));
        ByteBuffer empty = ByteBuffer.allocate(8);
        empty.position(8);
        assertContains(assertThrows(IllegalArgumentException.class, () -> l.arg(0, empty)).getMessage(), "structure argument 0", "no bytes");
        assertContains(assertThrows(IllegalArgumentException.class, () -> l.arg(64, ByteBuffer.allocate(4))).getMessage(), "index 64");
        ByteBuffer s = ByteBuffer.allocate(24);
        s.position(4);
        l.arg(3, s);
        assertEquals(4, s.position(), "the position does not move");
        l.arg(3, ByteBuffer.allocate(20)); // reuses the region
        l.arg(3, 7); // back to a scalar
        assertEquals(7L, l.slotBits(3));
    }

    @Test
    void structureArgumentsHaveABoundedArea() {
        KernelLaunch l = launch();
        for (int i = 0; i < KernelLaunch.MAX_STRUCT_BYTES / 1024; i++) {
            l.arg(i, ByteBuffer.allocate(1024));
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> l.arg(10, ByteBuffer.allocate(1)));
        assertContains(e.getMessage(), "structure argument 10", String.valueOf(KernelLaunch.MAX_STRUCT_BYTES));
        l.arg(0, ByteBuffer.allocate(1000)); // an existing region is reused
    }

    @Test
    void clusterSizesAreChecked() {
        KernelLaunch l = launch();
        // Above 8 blocks (non-portable) is checked at launch, against what the driver allows the kernel.
        l.cluster(2, 2, 2).cluster(0, 0, 0).cluster(8, 1, 1).cluster(16, 1, 1).cluster(3, 3, 1);
        for (int[] bad : new int[][] {{0, 1, 1}, {-1, 1, 1}, {1, 0, 2}, {2, 2, -2}}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> l.cluster(bad[0], bad[1], bad[2]));
            assertContains(e.getMessage(), "cluster (" + bad[0] + ", " + bad[1] + ", " + bad[2] + ")", "each >= 1", "up to 8");
        }
    }

    @Test
    void loadOptionsAreChecked() {
        LoadOptions o = LoadOptions.defaults();
        assertContains(assertThrows(IllegalArgumentException.class, () -> o.optimizationLevel(5)).getMessage(), "5", "[0, 4]");
        assertThrows(IllegalArgumentException.class, () -> o.optimizationLevel(-1));
        assertContains(assertThrows(IllegalArgumentException.class, () -> o.maxRegisters(0)).getMessage(), "0", "below 1");
        LoadOptions set = o.optimizationLevel(2).maxRegisters(40).logVerbose(true).binaryIsPreserved(true);
        assertEquals("LoadOptions[optimizationLevel=2, maxRegisters=40, logVerbose=true, binaryIsPreserved=true]", set.toString());
        assertEquals("LoadOptions[optimizationLevel=default, maxRegisters=default, logVerbose=false, binaryIsPreserved=false]", o.toString());
        assertThrows(NullPointerException.class, () -> Library.load(new byte[] {1}, null));
    }

    @Test
    void namedAttributesCarryCudaHsNumbers() {
        assertEquals(8, KernelAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES.value());
        assertEquals(4, KernelAttribute.NUM_REGS.value());
        assertEquals(Kernel.ATTRIBUTE_NUM_REGS, KernelAttribute.NUM_REGS.value());
        assertEquals(95, DeviceAttribute.COOPERATIVE_LAUNCH.value());
        assertEquals(97, DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN.value());
        assertEquals(16, DeviceAttribute.MULTIPROCESSOR_COUNT.value());
        Set<Integer> seen = new HashSet<>();
        for (DeviceAttribute a : DeviceAttribute.values()) {
            assertTrue(seen.add(a.value()), "one number per device attribute: " + a);
        }
        seen.clear();
        for (KernelAttribute a : KernelAttribute.values()) {
            assertTrue(seen.add(a.value()), "one number per kernel attribute: " + a);
        }
    }
}
