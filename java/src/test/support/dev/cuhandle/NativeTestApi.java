package dev.cuhandle;

/**
 * Test-only native entry points (implemented in rust/src/jni/testing.rs): raw contexts, primary
 * context resets and retains, raw streams and memory, a deliberate panic, and the native table's checks.
 */
public final class NativeTestApi {
    static {
        Native.ensureLoaded();
    }

    private NativeTestApi() {}

    /** Returns its argument: a bare JNI call, the baseline of the handle benchmark. */
    public static native long noop(long value);

    /** "name signature" of every method the native table (rust/src/jni/natives.rs) registers for a class, named as JNI names it. */
    public static native String[] registeredMethods(String className);

    /**
     * Checks, as the library's load does, this class's {@code noop} entry under another name and JNI
     * signature: the refusal the load would give, or null where the entry fits (only {@code noop (J)J}).
     */
    public static native String registerNoopAs(String name, String signature);

    /** Emits a Rust log record (level 1 = error .. 5 = trace). */
    public static native void log(int level, String message);

    /** Panics in Rust; must arrive as a RuntimeException. */
    public static native int panic(String message);

    /**
     * Through the entry for hot bodies without a JNI environment ({@code entry_without_env!}):
     * mode 0 returns 42, 1 fails with an invalid argument, anything else panics.
     */
    public static native long withoutEnv(int mode);

    /**
     * The driver calls beneath a handle call's activation, checked as the handle checks them but without
     * cuhandle's own code: {@code cuCtxGetId} on {@code ctx} (compared with {@code id}), {@code cuCtxGetCurrent},
     * and where another context is current a switch to {@code ctx} and one back; entered as
     * {@link dev.cuhandle.Handle#stream()} is. HandleBenchmark times it in the same rounds as the call above it.
     *
     * @return the number of {@code cuCtxSetCurrent} calls made (0 or 2)
     * @throws IllegalArgumentException if the context's id is not {@code id}
     */
    public static native long activationDriverCalls(long ctx, long id);

    /**
     * The native pointer of an open handle, for {@link #handleStream(long)}: the caller keeps the handle open
     * for as long as it uses the pointer.
     */
    public static long pointerOf(Handle h) {
        long pointer = h.enter();
        h.exit();
        return pointer;
    }

    /**
     * {@link Handle#stream()}'s native call without the handle's enter and exit (rules H6 and L2: a call in
     * flight keeps {@code close()} from freeing), so that HandleBenchmark can time that protocol's price in the
     * same JVM as the call that pays it.
     */
    public static long handleStream(long pointer) {
        return NativeApi.handleStream(pointer);
    }

    /**
     * {@code Handle.create(device)}'s native create and {@code close()}'s native destroy, without the Java handle
     * (its objects, the cleaner's registration, the lifetime): HandleBenchmark sets this against a whole create +
     * close to split it into the native share and the Java share.
     */
    public static void createAndDestroyNatively(int device) {
        long[] created = new long[Handle.CREATED_VALUES];
        NativeApi.handleCreateDevice(device, created);
        NativeApi.handleDestroy(created[0]);
    }

    /** cuCtxCreate: the new context is pushed and current on this thread. */
    public static native long createContext(int device);

    /** The parameter layouts rust/src/core/param_layout reads from an image: "name offset:size ..." per line, sorted. */
    public static native String imageParamLayouts(byte[] image);

    /** The built-in kernels' fatbin (kernels/blas1.cu), as the native library embeds it. */
    public static native byte[] builtinImage();

    /** cuKernelGetParamInfo's [offset, size, ...] of a kernel in the handle's context; null before CUDA 12.4. */
    public static native long[] driverParamLayout(long handle, long library, long kernel);

    public static native void destroyContext(long ctx);

    /** cuCtxSetCurrent (0 pops). */
    public static native void setCurrent(long ctx);

    public static native long currentContext();

    public static native void resetPrimary(int device);

    public static native long retainPrimary(int device);

    public static native void releasePrimary(int device);

    public static native long contextId(long ctx);

    /** A non-blocking stream in the current context. */
    public static native long streamCreate();

    public static native void streamDestroy(long stream);

    /** cuMemAlloc in the current context. */
    public static native long memAlloc(long bytes);

    public static native void memFree(long ptr);

    /** [flags, active] of the device's primary context. */
    public static long[] primaryState(int device) {
        return NativeApi.primaryContextState(device);
    }
}
