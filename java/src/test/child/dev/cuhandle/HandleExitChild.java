package dev.cuhandle;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Child JVM for the handle tests. Uses no JUnit classes, so it runs on any class path that holds
 * cuhandle and its test classes. Modes (first argument):
 * <ul>
 * <li>{@code return} / {@code exit} (rule H6, {@link HandleCloseGpuTest}): creates handles on the
 * primary context and on a user context, buffers, work in flight and unreachable unclosed handles,
 * then exits without closing anything, by returning from {@code main} or by
 * {@code System.exit(0)}. The parent asserts exit status 0 and no crash files.</li>
 * <li>{@code sticky} (rule H11, {@link HandleStickyErrorGpuTest}): provokes
 * CUDA_ERROR_ILLEGAL_ADDRESS in a user context B and checks what the library guarantees. Measured
 * on the H200 with driver 580: after the fault every context of the process fails (even
 * {@code cuCtxCreate} and {@code cuDevicePrimaryCtxRetain} return 700, and a primary reset does not
 * heal it), so this must not run in the test JVM. Prints {@code [sticky-observation]} lines (what
 * the driver did) and {@code [sticky-check] FAIL:} lines (a guarantee broken); exits 1 if any
 * check failed, else 0.</li>
 * </ul>
 */
public final class HandleExitChild {
    /** Printed when all work succeeded, just before exiting. */
    static final String READY = "[HandleExitChild] work verified; exiting with handles open";
    static final String OBSERVATION = "[sticky-observation] ";
    static final String CHECK_FAILED = "[sticky-check] FAIL: ";
    static final String STICKY_DONE = "[sticky-check] done";

    /** Strong references, so that some handles are still reachable (and open) at exit. */
    private static final List<Object> KEEP = new ArrayList<>();

    private HandleExitChild() {}

    public static void main(String[] args) {
        String mode = args.length > 0 ? args[0] : "return";
        if ("sticky".equals(mode)) {
            int failures = sticky();
            System.out.flush();
            System.exit(failures == 0 ? 0 : 1);
        }
        exitWithHandlesOpen(mode);
    }


    private static void popAll() {
        for (int i = 0; i < 64 && NativeTestApi.currentContext() != 0; i++) {
            NativeTestApi.setCurrent(0);
        }
    }

    // ------------------------------------------------------------------ H6: exit with handles open

    private static void exitWithHandlesOpen(String mode) {
        Library lib = TestKernels.load();
        Kernel addOne = lib.kernel("cuh_test_add_one");
        Kernel spin = lib.kernel("cuh_test_spin");
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

        // On the CPU stand-in driver kernels do not execute: the launch must reach the driver and the
        // data must come back unchanged.
        boolean standIn = StandIn.active();
        for (Handle h : new Handle[] {primary, explicit, onUser}) {
            float[] x = new float[n];
            for (int i = 0; i < n; i++) {
                x[i] = random.nextFloat();
            }
            DeviceBuffer b = h.upload(x);
            KEEP.add(b);
            int launchesBefore = standIn ? StandIn.launches() : 0;
            h.launch(addOne, Dim3.of(64), Dim3.of(256), 0, b, n);
            if (standIn && StandIn.launches() != launchesBefore + 1) {
                System.out.println("[HandleExitChild] the stand-in driver accepted " + (StandIn.launches() - launchesBefore) + " launches, expected 1");
                System.exit(3);
            }
            float[] out = new float[n];
            b.download(out);
            for (int i = 0; i < n; i++) {
                float expected = standIn ? x[i] : x[i] + 1.0f;
                if (out[i] != expected) {
                    System.out.println("[HandleExitChild] wrong result at " + i + ": " + out[i] + " != " + expected);
                    System.exit(3);
                }
            }
            // A second buffer left open.
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

        // Work still running on the device at exit (about 0.1 s of spinning on two streams; on the
        // stand-in 100 ms of simulated work each).
        int previousWork = standIn ? StandIn.setWorkMillis(100) : 0;
        primary.launch(spin, Dim3.of(1), Dim3.of(1), 0, 200_000_000L);
        onUser.launch(spin, Dim3.of(1), Dim3.of(1), 0, 200_000_000L);
        if (standIn) {
            StandIn.setWorkMillis(previousWork);
        }

        System.out.println("[HandleExitChild] user context 0x" + Long.toHexString(user) + " left alive; mode " + mode);
        System.out.println(READY);
        System.out.flush();
        if ("exit".equals(mode)) {
            System.exit(0);
        }
    }

    // ------------------------------------------------------------------ H11: a sticky fault

    private static final List<String> FAILURES = new ArrayList<>();
    private static final Random RANDOM = new Random(0x5717L);

    private static void check(boolean condition, String guarantee) {
        if (!condition) {
            FAILURES.add(guarantee);
            System.out.println(CHECK_FAILED + guarantee);
        }
    }

    private static void observe(String line) {
        System.out.println(OBSERVATION + line);
    }

    /** Launch +1 on fresh random data and read back: null if correct, a description if wrong. Throws what the library throws. */
    private static String work(Handle h, Kernel addOne) {
        int n = 4096;
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = RANDOM.nextFloat() * 100f;
        }
        try (DeviceBuffer b = h.upload(x)) {
            h.launch(addOne, Dim3.of(16), Dim3.of(256), 0, b, n);
            h.synchronize();
            float[] out = new float[n];
            b.download(out);
            for (int i = 0; i < n; i++) {
                if (Float.floatToIntBits(out[i]) != Float.floatToIntBits(x[i] + 1.0f)) {
                    return "element " + i + " is " + out[i] + ", expected " + (x[i] + 1.0f);
                }
            }
            return null;
        }
    }

    /** Other contexts: correct results or a CudaException, never wrong results, never another exception. */
    private static void observeWork(String what, Handle h, Kernel addOne) {
        try {
            String wrong = work(h, addOne);
            check(wrong == null, what + ": returned WRONG RESULTS without an exception: " + wrong);
            if (wrong == null) {
                observe(what + ": launch + synchronize WORKS, results correct");
            }
        } catch (CudaException e) {
            observe(what + ": FAILS with " + e.error() + " (sticky=" + e.isSticky() + "): " + e.getMessage());
        } catch (Throwable t) {
            check(false, what + ": threw " + t + " instead of working or throwing a CudaException");
        }
        check(NativeTestApi.currentContext() == 0, what + ": left a context current (H4)");
        popAll();
    }

    private interface Call {
        void run();
    }

    /** Every call of {@code h} fails with the original sticky error, naming the operation that failed first. */
    private static void checkPoisoned(String which, Handle h, DeviceBuffer buffer, CudaException first, Kernel empty) {
        List<Object[]> calls = new ArrayList<>();
        calls.add(new Object[] {"validate()", (Call) h::validate});
        calls.add(new Object[] {"synchronize()", (Call) h::synchronize});
        calls.add(new Object[] {"stream()", (Call) h::stream});
        calls.add(new Object[] {"allocate(16)", (Call) () -> h.allocate(16).close()});
        calls.add(new Object[] {"launch(empty)", (Call) () -> h.launch(empty, Dim3.of(1), Dim3.of(1), 0)});
        calls.add(new Object[] {"createEvent()", (Call) () -> h.createEvent().close()});
        calls.add(new Object[] {"setStream(0)", (Call) () -> h.setStream(0)});
        calls.add(new Object[] {"resetStream()", (Call) h::resetStream});
        calls.add(new Object[] {"makeCurrent()", (Call) h::makeCurrent});
        if (buffer != null) {
            calls.add(new Object[] {"copyToHost()", (Call) () -> h.copyToHost(buffer, new float[4], 0, 4)});
            calls.add(new Object[] {"memset()", (Call) () -> h.memset(buffer, 0)});
        }
        String sample = null;
        for (Object[] call : calls) {
            String name = which + "." + call[0];
            try {
                ((Call) call[1]).run();
                check(false, name + " returned normally after the sticky fault");
            } catch (CudaException e) {
                check(e.isSticky(), name + " threw a non-sticky CudaException: " + e.getMessage());
                check(e.error() == first.error(), name + " reported " + e.error() + " instead of the original " + first.error() + ": " + e.getMessage());
                check(e.getMessage().contains(first.operation()), name + ": the message does not mention the operation that failed first ("
                        + first.operation() + "): " + e.getMessage());
                if (sample == null) {
                    sample = e.getMessage();
                }
            } catch (Throwable t) {
                check(false, name + " threw " + t + " instead of a CudaException");
            }
            check(NativeTestApi.currentContext() == 0, name + " left a context current (H4)");
            popAll();
        }
        observe(which + ": every call failed; e.g. " + sample);
    }

    private static void closeChecked(String what, AutoCloseable c) {
        try {
            c.close();
        } catch (Throwable t) {
            check(false, "closing " + what + " threw " + t + " (close must never throw)");
        }
    }

    private static int sticky() {
        Library lib = TestKernels.load();
        // Every kernel is looked up before the fault: after it, the driver fails lookups too.
        Kernel addOne = lib.kernel("cuh_test_add_one");
        Kernel empty = lib.kernel("cuh_test_empty");
        Kernel fault = lib.kernel("cuh_test_fault");

        Handle hP = Handle.create(0);
        long c = NativeTestApi.createContext(0);
        popAll();
        Handle hC = Handle.wrap(c);
        long b = NativeTestApi.createContext(0);
        popAll();
        Handle hB = Handle.wrap(b);
        Handle hB2 = Handle.wrap(b);
        check(work(hP, addOne) == null, "the primary handle works before the fault");
        check(work(hC, addOne) == null, "context C works before the fault");
        check(work(hB, addOne) == null, "context B works before the fault");
        DeviceBuffer bufferB = hB.upload(new float[256]);
        hB.synchronize();

        CudaException first = null;
        try {
            hB.launch(fault.newLaunch().grid(1).block(1).argPointer(0, 16L));
            hB.synchronize();
        } catch (CudaException e) {
            first = e;
        }
        check(first != null, "a kernel writing to address 16 must fail with a CudaException at launch or synchronize");
        if (first == null) {
            return FAILURES.size();
        }
        observe("the fault in context B surfaced as: " + first.getMessage() + " (operation " + first.operation() + ")");
        check(first.error() == CudaError.ILLEGAL_ADDRESS, "the fault is CUDA_ERROR_ILLEGAL_ADDRESS, got " + first.error() + ": " + first.getMessage());
        check(first.isSticky(), "ILLEGAL_ADDRESS is marked sticky");
        check(first.getMessage().contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "the message names the error: " + first.getMessage());
        check(NativeTestApi.currentContext() == 0, "the failing call left a context current (H4)");
        popAll();

        // Every later call of every handle on B fails with the sticky cause.
        checkPoisoned("handle B", hB, bufferB, first, empty);
        checkPoisoned("second handle B2 (created before the fault)", hB2, null, first, empty);
        try {
            Handle late = Handle.wrap(b);
            try {
                late.validate();
                check(false, "a handle created on B after the fault must fail on its first call");
            } catch (CudaException e) {
                check(e.isSticky(), "a new handle on B reports the sticky error: " + e.getMessage());
                observe("Handle.wrap(B) after the fault succeeded; its first call failed: " + e.getMessage());
            } finally {
                closeChecked("a late handle on B", late);
            }
        } catch (CudaException e) {
            observe("Handle.wrap(B) after the fault failed at once: " + e.getMessage());
        }

        // Other contexts: the driver decides; the library must not crash or return wrong results.
        observeWork("another user context C (handle made before the fault)", hC, addOne);
        observeWork("the primary context (handle made before the fault)", hP, addOne);
        try (Handle fresh = Handle.create(0)) {
            observeWork("a new handle on the primary context", fresh, addOne);
        } catch (CudaException e) {
            observe("Handle.create(0) after the fault FAILS: " + e.getMessage());
        }
        try {
            long d = NativeTestApi.createContext(0);
            popAll();
            try (Handle hD = Handle.wrap(d)) {
                observeWork("a user context D created after the fault", hD, addOne);
            } finally {
                NativeTestApi.destroyContext(d);
            }
        } catch (CudaException e) {
            observe("creating a user context after the fault FAILS: " + e.getMessage());
        }
        popAll();

        // Closing never throws; then B is destroyed.
        closeChecked("a buffer of B", bufferB);
        closeChecked("handle B", hB);
        closeChecked("handle B2", hB2);
        try {
            NativeTestApi.destroyContext(b);
            observe("cuCtxDestroy(B) succeeded");
        } catch (CudaException e) {
            observe("cuCtxDestroy(B) FAILS: " + e.getMessage());
        }
        popAll();
        observeWork("context C after B was destroyed", hC, addOne);
        observeWork("the primary context after B was destroyed", hP, addOne);
        closeChecked("handle C", hC);
        closeChecked("the primary handle", hP);
        try {
            NativeTestApi.destroyContext(c);
        } catch (CudaException e) {
            observe("cuCtxDestroy(C) FAILS: " + e.getMessage());
        }
        popAll();
        try {
            NativeTestApi.resetPrimary(0);
            try (Handle afterReset = Handle.create(0)) {
                observeWork("a new primary handle after cuDevicePrimaryCtxReset", afterReset, addOne);
            }
        } catch (CudaException e) {
            observe("after cuDevicePrimaryCtxReset: " + e.getMessage());
        }
        popAll();
        System.out.println(STICKY_DONE + ": " + FAILURES.size() + " guarantee(s) broken");
        return FAILURES.size();
    }
}
