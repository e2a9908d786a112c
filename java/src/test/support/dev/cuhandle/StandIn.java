package dev.cuhandle;

/**
 * The CPU stand-in driver (tests/standin-driver) as the tests see it: whether it is the loaded
 * driver, and its control channel. The channel is {@code cuDeviceGetAttribute} with a magic
 * attribute ({@code 0x40000000 | command << 20 | arg}), so the tests reach it through cuhandle's
 * own JNI entry points and need no native code of their own. Command numbers: README.md there.
 */
public final class StandIn {
    /** The system property the Maven {@code standin} execution sets. */
    public static final String PROPERTY = "cuhandle.standIn";
    private static final int MAGIC = 0x40000000;
    private static final int MAX_ARG = 0xFFFFF;
    private static volatile Boolean active;

    private StandIn() {}

    /** True when the stand-in run was requested and the loaded driver really is the stand-in. */
    public static boolean active() {
        Boolean a = active;
        if (a == null) {
            a = Boolean.getBoolean(PROPERTY) && loadedDriverIsStandIn();
            active = a;
        }
        return a;
    }

    private static boolean loadedDriverIsStandIn() {
        try {
            return Cuda.driverPath().contains("libcuda-standin");
        } catch (RuntimeException e) {
            // No loadable driver at all: certainly not the stand-in.
            return false;
        }
    }

    /** Sends {@code command} with {@code arg} (0..0xFFFFF) and returns the stand-in's answer. */
    public static int control(int command, int arg) {
        if (!active()) {
            throw new IllegalStateException("the CPU stand-in driver is not loaded (run with -D" + PROPERTY + "=true and cuhandle.driver.path=.../libcuda-standin.so)");
        }
        if (command < 1 || command > 0x3FF || arg < 0 || arg > MAX_ARG) {
            throw new IllegalArgumentException("command " + command + " / argument " + arg + " do not fit the control attribute");
        }
        return NativeApi.deviceAttribute(0, MAGIC | (command << 20) | arg);
    }

    /** Simulated duration of every launch and copy from now on; returns the previous value. */
    public static int setWorkMillis(int millis) {
        return control(1, millis);
    }

    /** The calling thread's next stream, event or context synchronize fails with {@code code} (sticky codes also poison its context). */
    public static void failNextSync(int code) {
        control(2, code);
    }

    /** Stream-ordered frees that happened while another stream still used the memory. */
    public static int useAfterFrees() {
        return control(3, 0);
    }

    /** Device allocations alive in all contexts. */
    public static int liveAllocations() {
        return control(4, 0);
    }

    /** KiB of device memory alive in all contexts (rounded up). */
    public static int liveKiB() {
        return control(5, 0);
    }

    /** The retain count of {@code device}'s primary context. */
    public static int primaryRetains(int device) {
        return control(6, device);
    }

    /** Zeroes the use-after-free, launch, out-of-bounds and bad-handle counters. */
    public static void resetCounters() {
        control(7, 0);
    }

    public static int launches() {
        return control(8, 0);
    }

    /** Copies and memsets refused because a device range was outside every allocation. */
    public static int outOfBounds() {
        return control(9, 0);
    }

    /** Handles refused because they were not live objects of the right kind. */
    public static int badHandles() {
        return control(10, 0);
    }

    /** User streams alive in all contexts. */
    public static int liveStreams() {
        return control(11, 0);
    }

    public static int liveEvents() {
        return control(12, 0);
    }

    /** Memory pools alive (made by cuMemPoolCreate and not destroyed, or destroyed with allocations left). */
    public static int livePools() {
        return control(46, 0);
    }

    /** The calling thread's next {@code count} device allocations fail with OUT_OF_MEMORY. */
    public static void failNextAllocations(int count) {
        control(13, count);
    }

    /** The calling thread's next {@code count} cuMemHostAlloc calls fail with OUT_OF_MEMORY. */
    public static void failNextHostAllocations(int count) {
        control(14, count);
    }

    /** Captured graphs (templates) alive in all contexts. */
    public static int liveGraphs() {
        return control(40, 0);
    }

    /** Instantiated (executable) graphs alive in all contexts. */
    public static int liveGraphExecs() {
        return control(41, 0);
    }

    /**
     * Launches the stand-in accepted while their stream's context was not current on the calling
     * thread (nothing or another context current): what CUDA 13.0 drivers allow on a user stream.
     */
    public static int launchesOutsideCurrentContext() {
        return control(42, 0);
    }

    /**
     * Copies, memsets, stream-ordered pool allocations and frees the stand-in accepted on a user stream
     * while its context was not current on the calling thread: what CUDA 13.0 drivers allow.
     */
    public static int memoryCallsOutsideCurrentContext() {
        return control(47, 0);
    }

    /** {@code cuMemcpyBatchAsync} calls that queued their copies since the last {@link #resetCounters()}. */
    public static int batchCopies() {
        return control(48, 0);
    }

    /** Pinned host allocations ({@code cuMemHostAlloc}) alive. */
    public static int liveHostAllocations() {
        return control(43, 0);
    }

    /** Host memory ranges page-locked with {@code cuMemHostRegister} and not yet unregistered. */
    public static int liveHostRegistrations() {
        return control(44, 0);
    }

    /**
     * Copies and memsets that ran after their call returned, when their busy stream got to them (as DMA
     * does): a copy with page-locked host memory reads or writes that memory only then.
     */
    public static int deferredCopies() {
        return control(45, 0);
    }

    /**
     * Times a green context's {@code CUcontext} became current on a thread while it was current on another
     * (NVIDIA: "a green context can be current to only one thread at a time"); {@link #resetCounters()} zeroes it.
     */
    public static int greenCurrentViolations() {
        return control(70, 0);
    }

    /** The SMs of the green context whose {@code CUcontext} has id {@code contextId} ({@code cuCtxGetId}). */
    public static int greenSms(long contextId) {
        return control(71, greenArg(contextId));
    }

    /** Streams ever made in the green context of {@code contextId} (its own, or {@code cuStreamCreate} with it current). */
    public static int greenStreams(long contextId) {
        return control(72, greenArg(contextId));
    }

    /** Kernel launches ever queued on streams of the green context of {@code contextId} (direct and from graphs). */
    public static int greenLaunches(long contextId) {
        return control(73, greenArg(contextId));
    }

    /** Green contexts created and not destroyed. */
    public static int liveGreenContexts() {
        return control(74, 0);
    }

    /** How many SMs of the green context of {@code contextId} another live green context also holds (0: its share is its own). */
    public static int greenSharedSms(long contextId) {
        return control(75, greenArg(contextId));
    }

    /** The lowest SM index of the green context of {@code contextId}. */
    public static int greenFirstSm(long contextId) {
        return control(76, greenArg(contextId));
    }

    /** Whether the green context of {@code contextId} is alive (created, not destroyed). */
    public static boolean greenAlive(long contextId) {
        return control(77, greenArg(contextId)) == 1;
    }

    /** The SMs the last kernel launch could use, as {@code {first SM, count}} (a green context's share, else the whole device). */
    public static int[] lastLaunchSms() {
        int v = control(78, 0);
        return new int[] {v >>> 16, v & 0xFFFF};
    }

    /** Calls refused with {@code CUDA_ERROR_STREAM_DETACHED} (917): they named a stream of a destroyed green context. */
    public static int detachedStreamCalls() {
        return control(79, 0);
    }

    /** Streams of destroyed green contexts not destroyed themselves (leaks before CUDA 13.1, which lets them be destroyed). */
    public static int detachedStreams() {
        return control(80, 0);
    }

    private static int greenArg(long contextId) {
        if (contextId < 1 || contextId > MAX_ARG) {
            throw new IllegalArgumentException("context id " + contextId + " does not fit the control attribute (1.." + MAX_ARG + ")");
        }
        return (int) contextId;
    }

    /** {@code cuLibraryLoadFromFile} calls so far: none, since {@code Library.load(Path)} hands the driver the bytes it checked. */
    public static int fileLoads() {
        return control(60, 0);
    }
}
