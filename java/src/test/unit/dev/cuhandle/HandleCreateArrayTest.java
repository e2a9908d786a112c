package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;

/**
 * A native create writes the new handle's pointer and properties into a {@code long[]} the Java side passes it
 * ({@code NativeApi.handleCreateDevice}; issue 35: cheaper than an array the native side makes). An array that
 * cannot take them gets an exception and no handle: the one just made is destroyed, so the primary-context retain
 * is given back (counted by the stand-in driver, the only driver that shows the count).
 */
@EnabledIf("dev.cuhandle.StandIn#active")
class HandleCreateArrayTest {
    @Test
    void theValuesArriveInTheCallersArray() {
        int before = StandIn.primaryRetains(0);
        long[] created = new long[6];
        NativeApi.handleCreateDevice(0, created);
        try {
            assertNotEquals(0L, created[0], "the native pointer");
            long primary = NativeTestApi.retainPrimary(0);
            NativeTestApi.releasePrimary(0);
            assertEquals(primary, created[1], "the raw context: device 0's primary context");
            assertEquals(NativeTestApi.contextId(created[1]), created[2], "the context id");
            assertEquals(0L, created[3], "the device ordinal");
            assertEquals(1L, created[4], "the primary context is retained");
            assertEquals(0L, created[5], "no SM partition");
            assertEquals(before + 1, StandIn.primaryRetains(0), "the handle holds one retain");
        } finally {
            NativeApi.handleDestroy(created[0]);
        }
        assertEquals(before, StandIn.primaryRetains(0), "destroying it gave the retain back");
    }

    @Test
    void anArrayTooShortIsAnExceptionAndLeavesNoHandle() {
        int before = StandIn.primaryRetains(0);
        long[] shortArray = new long[5];
        assertThrows(ArrayIndexOutOfBoundsException.class, () -> NativeApi.handleCreateDevice(0, shortArray));
        assertEquals(0L, java.util.Arrays.stream(shortArray).filter(v -> v != 0).count(), "nothing written into the short array");
        assertEquals(before, StandIn.primaryRetains(0), "the handle made before the failed write was destroyed");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> NativeApi.handleCreateDevice(0, null));
        assertTrue(e.getMessage().contains("null"), e.getMessage());
        assertEquals(before, StandIn.primaryRetains(0), "a null array: no handle either");
    }
}
