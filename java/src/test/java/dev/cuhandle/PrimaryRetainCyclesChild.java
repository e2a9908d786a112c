package dev.cuhandle;

import java.util.Random;

/**
 * Child JVM of {@link HandleCloseGpuTest}'s 100,000-cycle test (rule H6: the primary-context retain
 * is released exactly once). A fresh process, so the primary context of device 0 is inactive before
 * the cycles start and only this main's handles retain it; the check needs that, since an
 * unreleased retain shows only as a primary context still active at the end. One handle (the
 * keeper) stays open during the cycles, so that each cycle retains an active context instead of
 * creating it; a release too many would take the keeper's retain and leave the primary context
 * inactive while the keeper is still open.
 *
 * <p>Prints {@code [h6-cycles] key=value} lines (the primary context's {@code active} flag before,
 * during, after the cycles and at the end; the time per cycle) and {@link #DONE}; exits 1 if a check
 * here fails. Uses no JUnit classes. The parent judges the flags.
 */
public final class PrimaryRetainCyclesChild {
    static final String PREFIX = "[h6-cycles] ";
    static final String DONE = PREFIX + "done";
    static final int CYCLES = 100_000;

    private PrimaryRetainCyclesChild() {}

    public static void main(String[] args) {
        print("before_active", NativeTestApi.primaryState(0)[1]);
        long nanos;
        try (Handle keeper = Handle.create(0)) {
            print("with_keeper_active", NativeTestApi.primaryState(0)[1]);
            long t0 = System.nanoTime();
            for (int i = 0; i < CYCLES; i++) {
                Handle h = (i % 2 == 0) ? Handle.create() : Handle.create(0);
                if (i % 10_000 == 0) {
                    check(h.ownsPrimaryContext(), "cycle " + i + ": the handle retains the primary context");
                    check(keeper.rawContext() == h.rawContext(), "cycle " + i + ": the handle is bound to the keeper's context");
                    h.validate();
                }
                h.close();
                if (i % 25_000 == 0) {
                    try {
                        h.validate();
                        throw new AssertionError("cycle " + i + ": validate() after close() must throw IllegalStateException");
                    } catch (IllegalStateException expected) {
                        // closed
                    }
                }
            }
            nanos = System.nanoTime() - t0;
            print("after_cycles_with_keeper_active", NativeTestApi.primaryState(0)[1]);
            check(NativeTestApi.currentContext() == 0, "H4: create/close left a context current");
            addOneChecked(keeper);
        }
        print("after_active", NativeTestApi.primaryState(0)[1]);
        print("cycles", CYCLES);
        print("cycle_us", String.format(java.util.Locale.ROOT, "%.3f", nanos / 1000.0 / CYCLES));
        System.out.println(DONE);
    }

    /**
     * The keeper still computes: add-one on fresh random data, compared with the CPU (on the CPU
     * stand-in, where kernels do not run, the data must come back unchanged).
     */
    private static void addOneChecked(Handle keeper) {
        Random random = new Random();
        float[] x = new float[10_000];
        for (int i = 0; i < x.length; i++) {
            x[i] = random.nextFloat() * 200f - 100f;
        }
        try (Library lib = TestKernels.load(); DeviceBuffer b = keeper.upload(x)) {
            keeper.launch(lib.kernel("cuh_test_add_one"), Dim3.of((x.length + 255) / 256), Dim3.of(256), 0, b, x.length);
            float[] out = new float[x.length];
            b.download(out);
            for (int i = 0; i < x.length; i++) {
                float expected = StandIn.active() ? x[i] : x[i] + 1.0f;
                check(Float.compare(out[i], expected) == 0, "the keeper's add-one after the cycles: element " + i + " is " + out[i] + ", the CPU says " + expected);
            }
        }
    }

    private static void check(boolean condition, String what) {
        if (!condition) {
            throw new AssertionError(what);
        }
    }

    private static void print(String key, Object value) {
        System.out.println(PREFIX + key + "=" + value);
    }
}
