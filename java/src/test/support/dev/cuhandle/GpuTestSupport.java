package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Helpers shared by the GPU test bases ({@link HandleGpuTestBase}, {@link KernelGpuTestBase}):
 * the calling thread's context stack, user contexts, and bit-exact comparison with the CPU.
 */
abstract class GpuTestSupport {
    static final int BLOCK = 256;
    private static final int MAX_POPS = 64;

    /** The raw {@code CUcontext} current on this thread (0 if none). */
    static long current() {
        return NativeTestApi.currentContext();
    }

    /**
     * Pops the calling thread's context stack until nothing is current ({@code cuCtxSetCurrent(NULL)}
     * pops the top entry); returns how many entries were popped. Bounded, so a broken driver state
     * fails loudly instead of looping.
     */
    static int clearCurrent() {
        int popped = 0;
        while (current() != 0) {
            if (popped >= MAX_POPS) {
                throw new AssertionError("the context stack of thread " + Thread.currentThread().getName() + " still has "
                        + hex(current()) + " current after " + MAX_POPS + " pops");
            }
            NativeTestApi.setCurrent(0);
            popped++;
        }
        return popped;
    }

    /** A new user context ({@code cuCtxCreate}) on {@code device}; leaves nothing current. Destroy it in a finally block. */
    static long newUserContext(int device) {
        long ctx = NativeTestApi.createContext(device);
        if (ctx == 0) {
            throw new AssertionError("cuCtxCreate returned a NULL context");
        }
        clearCurrent();
        return ctx;
    }

    /** Closes without throwing (for finally blocks); reports a failure on stdout. */
    static void closeQuietly(AutoCloseable c) {
        if (c == null) {
            return;
        }
        try {
            c.close();
        } catch (Exception e) {
            System.out.println("[gpu-tests] closing " + c + " failed: " + e);
        }
    }

    static String hex(long v) {
        return "0x" + Long.toHexString(v);
    }

    /** Bit-exact comparison (raw bits, so NaN payloads count) naming the first mismatch. */
    static void assertExact(float[] expected, float[] actual, String what) {
        assertEquals(expected.length, actual.length, what + ": length");
        int mismatches = 0;
        int first = -1;
        for (int i = 0; i < expected.length; i++) {
            if (Float.floatToRawIntBits(expected[i]) != Float.floatToRawIntBits(actual[i])) {
                if (first < 0) {
                    first = i;
                }
                mismatches++;
            }
        }
        if (mismatches > 0) {
            fail(what + ": " + mismatches + " of " + expected.length + " elements differ from the CPU reference; first at index " + first
                    + ": expected " + expected[first] + ", the GPU gave " + actual[first]);
        }
    }
}
