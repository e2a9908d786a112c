package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * Issue 9 (5), rule L6: raw contexts that cannot be driver objects are refused before the driver
 * sees them (it would dereference them and crash the JVM). Needs no GPU: nothing reaches libcuda.
 */
class RawValuesTest {
    @Test
    void contextsThatCannotBeDriverObjectsAreRefused() {
        Native.ensureLoaded();
        String[][] cases = {
            {"0", "0 (NULL)"},
            {"1", "first page"},
            {"4095", "first page"},
            {"-1", "negative (-1)"},
            {String.valueOf(Long.MIN_VALUE), "negative"},
            {String.valueOf(0x7f00_0000_1004L), "not aligned to 8 bytes"},
        };
        for (String[] c : cases) {
            long raw = Long.parseLong(c[0]);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Handle.wrap(raw), "Handle.wrap(" + raw + ")");
            assertTrue(e.getMessage().contains("CUcontext") && e.getMessage().contains(c[1]), e.getMessage());
        }
    }
}
