package dev.cuhandle;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import jcuda.NativePointerObject;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUpointer_attribute;
import jcuda.driver.JCudaDriver;
import jcuda.runtime.JCuda;
import jcuda.runtime.cudaMemcpyKind;

/**
 * Child JVM for {@link RuntimeContextGpuTest}: how the CUDA runtime (JCuda's runtime API, a
 * statically linked cudart 12.6) creates, adopts and shares contexts with cuhandle. Every mode runs
 * in a fresh process, because the runtime's state and the primary context's life are process-wide
 * (and {@code deviceReset} destroys the primary context of every user in the process).
 *
 * <p>Prints {@code [runtime-observation]} lines (what the runtime and the driver did) and
 * {@code [runtime-check] FAIL:} lines (a claim of docs/handles.md that did not hold); ends with
 * {@link #DONE}. Exit status: 0 all checks held, 1 a check failed, {@link #NO_JCUDA} JCuda's natives
 * could not load. Uses no JUnit classes.
 */
public final class RuntimeContextChild {
    static final String OBSERVATION = "[runtime-observation] ";
    static final String CHECK_FAILED = "[runtime-check] FAIL: ";
    static final String DONE = "[runtime-check] done";
    static final int NO_JCUDA = 3;

    private static final List<String> FAILURES = new ArrayList<>();
    private static final int N = 100_003;
    private static final CUdevice DEVICE = new CUdevice();

    private RuntimeContextChild() {}

    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "";
        try {
            JCudaDriver.setExceptionsEnabled(true);
            JCuda.setExceptionsEnabled(true);
            JCudaDriver.cuInit(0); // creates no context
            JCudaDriver.cuDeviceGet(DEVICE, 0);
        } catch (UnsatisfiedLinkError e) {
            System.out.println("[runtime-skip] JCuda's natives cannot load with this driver: " + e);
            System.out.flush();
            System.exit(NO_JCUDA);
        }
        switch (mode) {
            case "setDevice":
                setDevice();
                break;
            case "cudaFreeZero":
                cudaFreeZero();
                break;
            case "followsCurrent":
                followsCurrent();
                break;
            case "shared":
                shared();
                break;
            case "deviceReset":
                deviceReset();
                break;
            default:
                check(false, "unknown mode '" + mode + "'");
        }
        System.out.println(DONE + ": " + FAILURES.size() + " check(s) failed");
        System.out.flush();
        System.exit(FAILURES.isEmpty() ? 0 : 1);
    }

    // ------------------------------------------------------------------ modes

    /** CUDA 12+: cudaSetDevice initialises the device's primary context and makes it current; cuhandle then binds it (H1). */
    private static void setDevice() {
        check(currentContext() == 0, "a fresh process has no current context before any runtime call");
        check(!primaryActive(), "a fresh process has an inactive primary context before any runtime call");
        JCuda.cudaSetDevice(0);
        long primary = primaryContext();
        observe("after cudaSetDevice(0): primary active " + primaryActive() + ", current " + hex(currentContext()) + ", primary " + hex(primary));
        check(primaryActive(), "cudaSetDevice(0) makes the primary context active (CUDA 12+ initialises it eagerly)");
        check(currentContext() == primary, "cudaSetDevice(0) makes the primary context current on the calling thread");
        try (Handle h = Handle.create()) {
            check(h.rawContext() == primary && h.ownsPrimaryContext(),
                    "Handle.create() after cudaSetDevice binds (and retains) the runtime's primary context (H1)");
            check(currentContext() == primary, "Handle.create() leaves the runtime's context current (H4)");
        }
    }

    /** The classic idiom: cudaFree(0) initialises the runtime on the primary context and makes it current, on any thread. */
    private static void cudaFreeZero() throws Exception {
        check(!primaryActive(), "a fresh process has an inactive primary context before any runtime call");
        JCuda.cudaFree(new Pointer());
        long primary = primaryContext();
        check(primaryActive(), "cudaFree(0) makes the primary context active");
        check(currentContext() == primary, "cudaFree(0) makes the primary context current on the calling thread");
        long[] onOtherThread = new long[2];
        Thread t = new Thread(() -> {
            onOtherThread[0] = currentContext();
            JCuda.cudaFree(new Pointer());
            onOtherThread[1] = currentContext();
        });
        t.start();
        t.join();
        observe("another thread: current before cudaFree(0) " + hex(onOtherThread[0]) + ", after " + hex(onOtherThread[1]));
        check(onOtherThread[0] == 0, "a new thread starts with nothing current, even after the runtime initialised on another thread");
        check(onOtherThread[1] == primary, "cudaFree(0) on a new thread makes the primary context current there too");
    }

    /** Runtime calls use whatever context is current: a user context when one is current, else the primary context. */
    private static void followsCurrent() {
        CUcontext user = new CUcontext();
        JCudaDriver.cuCtxCreate(user, 0, DEVICE); // current now
        long userRaw = raw(user);
        CUdeviceptr inUser = new CUdeviceptr();
        JCuda.cudaMalloc(inUser, 4L * N);
        long userOwner = pointerContext(inUser);
        observe("cudaMalloc with a user context current: pointer " + hex(raw(inUser)) + " belongs to " + hex(userOwner) + ", user " + hex(userRaw));
        check(userOwner == userRaw, "cudaMalloc with a user context current allocates in that context");
        check(currentContext() == userRaw, "runtime calls leave the user context current");

        // cuhandle binds the same current context (H1, borrowed) and works on the runtime's memory.
        Random random = new Random(0xC0DA);
        float[] x = randomFloats(random);
        JCuda.cudaMemcpy(inUser, Pointer.to(x), 4L * N, cudaMemcpyKind.cudaMemcpyHostToDevice);
        try (Handle h = Handle.create(); Library lib = TestKernels.load(); DeviceBuffer b = h.wrapPointer(raw(inUser), 4L * N)) {
            check(h.rawContext() == userRaw && !h.ownsPrimaryContext(), "Handle.create() binds the current user context without owning it (H1)");
            addOne(h, lib, b);
            h.synchronize();
        }
        float[] back = new float[N];
        JCuda.cudaMemcpy(Pointer.to(back), inUser, 4L * N, cudaMemcpyKind.cudaMemcpyDeviceToHost);
        checkPlusOne(x, back, "runtime memory of a user context, incremented by a cuhandle kernel, read back by cudaMemcpy (seed 0xC0DA)");
        JCuda.cudaFree(inUser);

        // Nothing current: the runtime falls back to the primary context and makes it current.
        CUcontext popped = new CUcontext();
        JCudaDriver.cuCtxPopCurrent(popped);
        check(currentContext() == 0, "popping the user context leaves nothing current");
        CUdeviceptr inPrimary = new CUdeviceptr();
        JCuda.cudaMalloc(inPrimary, 4096);
        long primary = primaryContext();
        check(pointerContext(inPrimary) == primary, "cudaMalloc with nothing current allocates in the primary context");
        check(currentContext() == primary, "cudaMalloc with nothing current makes the primary context current");
        JCuda.cudaFree(inPrimary);
        JCudaDriver.cuCtxDestroy(user);
    }

    /** A runtime user and cuhandle on one primary context: memory flows both ways, neither disturbs the other. */
    private static void shared() {
        JCuda.cudaSetDevice(0);
        long primary = primaryContext();
        Random random = new Random(0x5A4ED);
        float[] x = randomFloats(random);
        CUdeviceptr runtimeMemory = new CUdeviceptr();
        JCuda.cudaMalloc(runtimeMemory, 4L * N);
        JCuda.cudaMemcpy(runtimeMemory, Pointer.to(x), 4L * N, cudaMemcpyKind.cudaMemcpyHostToDevice);
        Handle h = Handle.create();
        try (Library lib = TestKernels.load()) {
            check(h.rawContext() == primary && h.ownsPrimaryContext(), "Handle.create() binds the runtime's primary context and retains it (H1)");
            // Runtime memory read by cuhandle.
            try (DeviceBuffer b = h.wrapPointer(raw(runtimeMemory), 4L * N)) {
                addOne(h, lib, b);
                float[] viaCuhandle = new float[N];
                b.download(viaCuhandle);
                checkPlusOne(x, viaCuhandle, "buffer written by cudaMemcpy, incremented and read by cuhandle (seed 0x5A4ED)");
            }
            // cuhandle memory read by the runtime.
            float[] y = randomFloats(random);
            try (DeviceBuffer own = h.upload(y)) {
                addOne(h, lib, own);
                h.synchronize();
                float[] viaRuntime = new float[N];
                JCuda.cudaMemcpy(Pointer.to(viaRuntime), devicePointer(own.address()), 4L * N, cudaMemcpyKind.cudaMemcpyDeviceToHost);
                checkPlusOne(y, viaRuntime, "buffer allocated and incremented by cuhandle, read by cudaMemcpy (seed 0x5A4ED)");
            }
            check(currentContext() == primary, "cuhandle calls leave the runtime's context current (H4)");
        }
        h.close();
        check(primaryActive(), "closing the handle leaves the primary context active: the runtime holds its own reference");
        float[] again = new float[N];
        JCuda.cudaMemcpy(Pointer.to(again), runtimeMemory, 4L * N, cudaMemcpyKind.cudaMemcpyDeviceToHost);
        checkPlusOne(x, again, "the runtime's memory after the handle closed");
        JCuda.cudaFree(runtimeMemory);
    }

    /** cudaDeviceReset under a cuhandle handle: the handle fails cleanly, closes, and a new handle works with the runtime again. */
    private static void deviceReset() {
        JCuda.cudaSetDevice(0);
        Handle stale = Handle.create();
        long idBefore = stale.contextId();
        Random random = new Random(0xDE5E7);
        try (Library lib = TestKernels.load()) {
            DeviceBuffer buffer = stale.upload(randomFloats(random));
            addOne(stale, lib, buffer);
            stale.synchronize();
            // A user context on the same device, with a handle (what cudaDeviceReset does to it is observed, not claimed).
            CUcontext user = new CUcontext();
            JCudaDriver.cuCtxCreate(user, 0, DEVICE);
            JCudaDriver.cuCtxPopCurrent(new CUcontext());
            Handle onUser = Handle.wrap(raw(user));

            JCuda.cudaDeviceReset();
            observe("after cudaDeviceReset: primary active " + primaryActive() + ", current " + hex(currentContext()));
            String userAfterReset = userHandleWorks(onUser, lib, random);
            observe("a user-context handle after cudaDeviceReset: " + userAfterReset);
            onUser.close();
            if (userAfterReset.equals("works")) {
                JCudaDriver.cuCtxDestroy(user); // else it may be gone: never hand the driver a destroyed context
            }
            check(!primaryActive(), "cudaDeviceReset destroys the primary context although cuhandle still retains it");
            try {
                stale.synchronize();
                check(false, "a call on a handle whose primary context cudaDeviceReset destroyed must throw CudaException (H8)");
            } catch (CudaException e) {
                observe("stale handle after cudaDeviceReset: " + e.getMessage());
                check(e.getMessage().contains("reset"), "the CudaException says the context was reset: " + e.getMessage());
            }

            // The runtime re-initialises the primary context on its next call (a new context id).
            CUdeviceptr p = new CUdeviceptr();
            JCuda.cudaMalloc(p, 4L * N);
            float[] x = randomFloats(random);
            JCuda.cudaMemcpy(p, Pointer.to(x), 4L * N, cudaMemcpyKind.cudaMemcpyHostToDevice);
            long primary = primaryContext();
            long idAfter = contextId(primary);
            observe("after the runtime's next call: primary active " + primaryActive() + ", id " + idBefore + " -> " + idAfter);
            check(primaryActive() && idAfter != idBefore, "the runtime's next call re-creates the primary context, with a new id");
            try {
                stale.validate();
                check(false, "the stale handle must keep failing after the runtime re-created the primary context (new id, H8)");
            } catch (CudaException e) {
                check(e.getMessage().contains("reset"), "after the re-creation the stale handle still says reset: " + e.getMessage());
            }
            // Closed only now, after the runtime re-created the context: the stale retain is released by
            // device, and must not take the runtime's reference to the new primary context.
            try {
                buffer.close();
                stale.close();
                stale.close();
            } catch (RuntimeException e) {
                check(false, "closing a buffer and a handle of a reset primary context must not throw: " + e);
            }
            check(primaryActive(), "closing the stale handle leaves the re-created primary context active");
            try (Handle fresh = Handle.create(); DeviceBuffer b = fresh.wrapPointer(raw(p), 4L * N)) {
                check(fresh.contextId() == idAfter, "a new handle binds the re-created primary context");
                addOne(fresh, lib, b);
                fresh.synchronize();
            }
            float[] back = new float[N];
            JCuda.cudaMemcpy(Pointer.to(back), p, 4L * N, cudaMemcpyKind.cudaMemcpyDeviceToHost);
            checkPlusOne(x, back, "runtime memory after the reset, incremented by a new handle (seed 0xDE5E7)");
            check(primaryActive(), "the re-created primary context stays active after the new handle closed: the runtime's reference remains");
            JCuda.cudaFree(p);
        }
    }

    // ------------------------------------------------------------------ helpers

    /** "works" if an add-one round trip on the handle gives the CPU's result, else what went wrong. */
    private static String userHandleWorks(Handle h, Library lib, Random random) {
        float[] x = randomFloats(random);
        try (DeviceBuffer b = h.upload(x)) {
            addOne(h, lib, b);
            float[] out = new float[N];
            b.download(out);
            for (int i = 0; i < N; i++) {
                if (Float.floatToRawIntBits(x[i] + 1f) != Float.floatToRawIntBits(out[i])) {
                    return "wrong result at element " + i;
                }
            }
            return "works";
        } catch (RuntimeException e) {
            return "failed: " + e;
        }
    }

    private static void addOne(Handle h, Library lib, DeviceBuffer b) {
        h.launch(lib.kernel("cuh_test_add_one"), Dim3.of((N + 255) / 256), Dim3.of(256), 0, b, N);
    }

    private static float[] randomFloats(Random random) {
        float[] x = new float[N];
        for (int i = 0; i < N; i++) {
            x[i] = random.nextFloat() * 200f - 100f;
        }
        return x;
    }

    private static void checkPlusOne(float[] before, float[] after, String what) {
        for (int i = 0; i < N; i++) {
            if (Float.floatToRawIntBits(before[i] + 1f) != Float.floatToRawIntBits(after[i])) {
                check(false, what + ": element " + i + " is " + after[i] + ", expected " + (before[i] + 1f));
                return;
            }
        }
    }

    private static void check(boolean condition, String claim) {
        if (!condition) {
            FAILURES.add(claim);
            System.out.println(CHECK_FAILED + claim);
        }
    }

    private static void observe(String what) {
        System.out.println(OBSERVATION + what);
    }

    private static long currentContext() {
        CUcontext c = new CUcontext();
        JCudaDriver.cuCtxGetCurrent(c);
        return raw(c);
    }

    private static boolean primaryActive() {
        int[] flags = new int[1];
        int[] active = new int[1];
        JCudaDriver.cuDevicePrimaryCtxGetState(DEVICE, flags, active);
        return active[0] != 0;
    }

    /** The primary context's pointer (a retain and a release, so its state is unchanged when it is active). */
    private static long primaryContext() {
        CUcontext c = new CUcontext();
        JCudaDriver.cuDevicePrimaryCtxRetain(c, DEVICE);
        JCudaDriver.cuDevicePrimaryCtxRelease(DEVICE);
        return raw(c);
    }

    private static long contextId(long ctx) {
        return NativeTestApi.contextId(ctx);
    }

    /**
     * The context an allocation belongs to (CU_POINTER_ATTRIBUTE_CONTEXT). JCuda's binding passes the
     * data pointer through, so a 64-bit slot receives the CUcontext; should a JCuda version treat the
     * attribute as a pointer object instead, a CUcontext receives it.
     */
    private static long pointerContext(CUdeviceptr p) {
        long[] owner = new long[1];
        try {
            JCudaDriver.cuPointerGetAttribute(Pointer.to(owner), CUpointer_attribute.CU_POINTER_ATTRIBUTE_CONTEXT, p);
        } catch (RuntimeException e) {
            observe("cuPointerGetAttribute into a long[] failed (" + e + "); trying a CUcontext");
        }
        if (owner[0] != 0) {
            return owner[0];
        }
        CUcontext c = new CUcontext();
        JCudaDriver.cuPointerGetAttribute(Pointer.to(c), CUpointer_attribute.CU_POINTER_ATTRIBUTE_CONTEXT, p);
        return raw(c);
    }

    private static CUdeviceptr devicePointer(long address) {
        CUdeviceptr p = new CUdeviceptr();
        try {
            Field f = NativePointerObject.class.getDeclaredField("nativePointer");
            f.setAccessible(true);
            f.setLong(p, address);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot set JCuda's native pointer", e);
        }
        return p;
    }

    static long raw(NativePointerObject o) {
        try {
            Method m = NativePointerObject.class.getDeclaredMethod("getNativePointer");
            m.setAccessible(true);
            return (long) m.invoke(o);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot read JCuda's native pointer", e);
        }
    }

    private static String hex(long v) {
        return "0x" + Long.toHexString(v);
    }
}
