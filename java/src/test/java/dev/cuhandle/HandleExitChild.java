package dev.cuhandle;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Child JVM for rule H6 ({@link HandleCloseGpuTest}): creates handles on the primary context and
 * on a user context, buffers, work in flight and unreachable unclosed handles, then exits without
 * closing anything, either by returning from {@code main} (argument {@code return}) or by
 * {@code System.exit(0)} (argument {@code exit}). The parent asserts exit status 0 and no crash
 * files. Uses no JUnit classes, so it runs on any class path that holds cuhandle and its tests.
 */
public final class HandleExitChild {
    /** Printed when all work succeeded, just before exiting. */
    static final String READY = "[HandleExitChild] work verified; exiting with handles open";

    /** Strong references, so that some handles are still reachable (and open) at exit. */
    private static final List<Object> KEEP = new ArrayList<>();

    private HandleExitChild() {}

    /** As HandleGpuTestBase.lookUp: retries with the primary context current if the lookup needs one. */
    private static Kernel lookUp(Library lib, String name) {
        try {
            return lib.kernel(name);
        } catch (CudaException e) {
            if (e.error() != CudaError.INVALID_CONTEXT) {
                throw e;
            }
            long primary = NativeTestApi.retainPrimary(0);
            try {
                NativeTestApi.setCurrent(primary);
                return lib.kernel(name);
            } finally {
                NativeTestApi.setCurrent(0);
                NativeTestApi.releasePrimary(0);
            }
        }
    }

    public static void main(String[] args) {
        String mode = args.length > 0 ? args[0] : "return";
        Library lib = TestKernels.load();
        Kernel addOne = lookUp(lib, "cuh_test_add_one");
        Kernel spin = lookUp(lib, "cuh_test_spin");
        int n = 1 << 16;
        Random random = new Random(6);

        Handle primary = Handle.create();
        Handle explicit = Handle.create(0);
        long user = NativeTestApi.createContext(0); // current on this thread
        Handle onUser = Handle.create();
        NativeTestApi.setCurrent(0);
        KEEP.add(lib);
        KEEP.add(primary);
        KEEP.add(explicit);
        KEEP.add(onUser);

        for (Handle h : new Handle[] {primary, explicit, onUser}) {
            float[] x = new float[n];
            for (int i = 0; i < n; i++) {
                x[i] = random.nextFloat();
            }
            DeviceBuffer b = h.upload(x);
            KEEP.add(b);
            h.launch(addOne, Dim3.of(64), Dim3.of(256), 0, b, n);
            float[] out = new float[n];
            b.download(out);
            for (int i = 0; i < n; i++) {
                if (out[i] != x[i] + 1.0f) {
                    System.out.println("[HandleExitChild] wrong result at " + i + ": " + out[i] + " != " + (x[i] + 1.0f));
                    System.exit(3);
                }
            }
            // A buffer with an allocation still queued, and a second buffer left open.
            KEEP.add(h.allocate(1 << 20));
        }

        // Unreachable, unclosed handles and buffers: the cleaner may be releasing them while the JVM exits.
        for (int i = 0; i < 20; i++) {
            Handle leaked = Handle.create(0);
            leaked.allocate(4096);
            if (i % 2 == 0) {
                Handle.wrap(user).allocate(1024);
            }
        }
        System.gc();

        // Work still running on the device at exit (about 0.1 s of spinning on two streams).
        primary.launch(spin, Dim3.of(1), Dim3.of(1), 0, 200_000_000L);
        onUser.launch(spin, Dim3.of(1), Dim3.of(1), 0, 200_000_000L);

        System.out.println("[HandleExitChild] user context 0x" + Long.toHexString(user) + " left alive; mode " + mode);
        System.out.println(READY);
        System.out.flush();
        if ("exit".equals(mode)) {
            System.exit(0);
        }
    }
}
