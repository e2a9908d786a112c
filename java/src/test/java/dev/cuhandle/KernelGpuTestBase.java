package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;

/**
 * Shared fixtures of the kernel, library, buffer, event and interop GPU tests: the test kernels
 * (kernels/test/test_kernels.cu), a clean context stack around every test, user contexts that
 * are always destroyed, random data and CPU references.
 *
 * <p>Every test starts and ends with nothing current on its thread; a test that leaves a context
 * current fails (the library must never change the caller's current context, rule H4, and the
 * tests themselves restore what they made current).
 */
abstract class KernelGpuTestBase extends GpuTestSupport {
    /** H200 SM clock is at most ~1.98 GHz: spinning this many clock64 cycles takes >= ~10 ms. */
    static final long SPIN_CYCLES_10MS = 20_000_000L;

    private static Library kernels;
    private static final ConcurrentHashMap<String, Kernel> KERNELS = new ConcurrentHashMap<>();

    // ---------------------------------------------------------------- per-test hygiene

    @BeforeEach
    void startWithNothingCurrent(TestInfo info) {
        int popped = clearCurrent();
        if (popped > 0) {
            System.out.println("[kernel-tests] " + info.getDisplayName() + ": popped " + popped + " context(s) left by an earlier test");
        }
    }

    @AfterEach
    void endWithNothingCurrent(TestInfo info) {
        long left = current();
        int popped = clearCurrent();
        if (popped > 0) {
            fail(info.getDisplayName() + " left context " + hex(left) + " current (" + popped + " stack entries); every test must restore"
                    + " the thread's context stack and no cuhandle call may change it (H4)");
        }
    }

    // ---------------------------------------------------------------- context stack

    /** For finally blocks: destroys a context created by the test, reporting (not throwing) a failure. */
    static void destroyQuietly(long ctx) {
        if (ctx == 0) {
            return;
        }
        try {
            clearCurrent();
            NativeTestApi.destroyContext(ctx);
        } catch (RuntimeException e) {
            System.out.println("[kernel-tests] destroying context " + hex(ctx) + " failed: " + e);
        }
    }

    /**
     * {@code cuMemAlloc} in {@code h}'s context: makes it current for the allocation and restores
     * an empty context stack. Free with {@link #rawFree}.
     */
    static long rawAlloc(Handle h, long bytes) {
        assertEquals(0L, current(), "rawAlloc expects nothing current");
        h.makeCurrent();
        try {
            long p = NativeTestApi.memAlloc(bytes);
            assertTrue(p != 0, "cuMemAlloc returned 0");
            return p;
        } finally {
            clearCurrent();
        }
    }

    /** {@code cuMemFree} of memory from {@link #rawAlloc}, with {@code h}'s context current for the call. */
    static void rawFree(Handle h, long pointer) {
        h.makeCurrent();
        try {
            NativeTestApi.memFree(pointer);
        } finally {
            clearCurrent();
        }
    }

    // ---------------------------------------------------------------- kernels

    /** The fatbin of the test kernels as the build put it on the test class path. */
    static byte[] fatbinBytes() {
        return resourceBytes(TestKernels.FATBIN);
    }

    static byte[] ptxBytes() {
        return resourceBytes(TestKernels.PTX);
    }

    static byte[] resourceBytes(String resource) {
        try (InputStream in = TestKernels.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new AssertionError("test resource " + resource + " is missing: the build compiles kernels/test/test_kernels.cu into it");
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The test kernels, loaded once per JVM and shared (a Library is context-independent, H10). */
    static synchronized Library kernels() {
        if (kernels == null || kernels.isClosed()) {
            kernels = TestKernels.load();
            KERNELS.clear();
        }
        return kernels;
    }

    /**
     * A test kernel from the shared library, looked up with the primary context current so that its
     * parameter sizes are known at once (cuKernelGetParamInfo answers only with a context current;
     * a lookup with nothing current defers the probe to the first launch, which
     * {@link LibraryLoadGpuTest} checks separately).
     */
    static Kernel kernel(String name) {
        Library lib = kernels();
        Kernel k = KERNELS.get(name);
        if (k == null || k.library() != lib) {
            k = lookUpInPrimaryContext(lib, name);
            KERNELS.put(name, k);
        }
        return k;
    }

    /**
     * {@code lib.kernel(name)} with device 0's primary context current for the call; the caller's
     * current context (if any) is put back afterwards.
     */
    static Kernel lookUpInPrimaryContext(Library lib, String name) {
        long previous = current();
        long primary = NativeTestApi.retainPrimary(0);
        try {
            NativeTestApi.setCurrent(primary); // pushes onto an empty stack, else replaces the top
            return lib.kernel(name);
        } finally {
            NativeTestApi.setCurrent(previous); // pops, or puts the caller's context back on top
            NativeTestApi.releasePrimary(0);
        }
    }

    static Kernel addOne() {
        return kernel("cuh_test_add_one");
    }

    static Kernel params() {
        return kernel("cuh_test_params");
    }

    static Kernel empty() {
        return kernel("cuh_test_empty");
    }

    static Kernel spin() {
        return kernel("cuh_test_spin");
    }

    static Kernel dynamicShared() {
        return kernel("cuh_test_dynamic_shared");
    }

    /** {@code lib.kernel(name)} with whatever is current (usually nothing: rule H10). */
    static Kernel lookUp(Library lib, String name) {
        return lib.kernel(name);
    }

    /**
     * True where the kernel's parameter sizes are known, so launches are checked (K2): the driver
     * has cuKernelGetParamInfo (12.4+) and the sizes were probed (at a lookup with a context
     * current, or at the first launch), or the driver is older and the image describes them.
     */
    static boolean parameterChecksActive(Kernel k) {
        return k.parameterCount() >= 0;
    }

    static Dim3 gridFor(int n) {
        return Dim3.of(Math.max(1, Math.min(1024, (n + BLOCK - 1) / BLOCK)));
    }

    /** {@code x[i] += 1} for {@code i < n} on {@code h}'s stream. */
    static void launchAddOne(Handle h, DeviceBuffer x, int n) {
        h.launch(addOne(), gridFor(n), Dim3.of(BLOCK), 0, x, n);
    }

    // ---------------------------------------------------------------- data and CPU references

    /** A fresh seed per call, printed so that a failure can be reproduced. */
    static Random freshRandom(String what) {
        long seed = System.nanoTime() ^ Thread.currentThread().getId() * 0x9E3779B97F4A7C15L;
        System.out.println("[kernel-tests] " + what + ": random seed " + seed + "L");
        return new Random(seed);
    }

    static float[] randomFloats(Random r, int n) {
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = (r.nextFloat() - 0.5f) * 2000f;
        }
        return x;
    }

    static double[] randomDoubles(Random r, int n) {
        double[] x = new double[n];
        for (int i = 0; i < n; i++) {
            x[i] = Double.longBitsToDouble(r.nextLong()); // every bit pattern, NaN payloads included
        }
        return x;
    }

    static int[] randomInts(Random r, int n) {
        int[] x = new int[n];
        for (int i = 0; i < n; i++) {
            x[i] = r.nextInt();
        }
        return x;
    }

    static long[] randomLongs(Random r, int n) {
        long[] x = new long[n];
        for (int i = 0; i < n; i++) {
            x[i] = r.nextLong();
        }
        return x;
    }

    static byte[] randomBytes(Random r, int n) {
        byte[] x = new byte[n];
        r.nextBytes(x);
        return x;
    }

    /** The CPU result of one cuh_test_add_one over {@code [from, to)} of {@code x}. */
    static float[] plusOne(float[] x, int from, int to) {
        float[] r = x.clone();
        for (int i = from; i < to; i++) {
            r[i] = r[i] + 1.0f;
        }
        return r;
    }

    static void assertContains(String message, String... parts) {
        assertTrue(message != null, "the exception has no message");
        for (String p : parts) {
            assertTrue(message.contains(p), "the message should contain \"" + p + "\" but is: " + message);
        }
    }
}
