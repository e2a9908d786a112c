package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;

/**
 * Shared fixtures for the handle-contract GPU tests (rules H1-H12 of docs/design.md): the test kernels,
 * helpers to manage the calling thread's context stack through {@link NativeTestApi}, CPU
 * references for the kernels and helpers to run code on fresh threads.
 *
 * <p>Every test starts and ends with nothing current on its thread: {@link #startClean} and
 * {@link #endClean} pop the context stack (bounded) so that one test's leftovers never leak into
 * the next one.
 */
abstract class HandleGpuTestBase extends GpuTestSupport {
    /** H200 SM clock is ~1.98 GHz: 2e9 {@code clock64} cycles are about one second of spinning. */
    static final long SPIN_CYCLES_PER_SECOND = 1_980_000_000L;

    private static Library kernels;

    // ---------------------------------------------------------------- per-test hygiene

    @BeforeEach
    void startClean(TestInfo info) {
        int popped = clearCurrent();
        if (popped > 0) {
            System.out.println("[handle-tests] " + info.getDisplayName() + ": popped " + popped
                    + " context(s) left current on the test thread by an earlier test");
        }
    }

    @AfterEach
    void endClean(TestInfo info) {
        int popped = clearCurrent();
        if (popped > 0) {
            System.out.println("[handle-tests] " + info.getDisplayName() + ": popped " + popped + " context(s) after the test");
        }
    }

    // ---------------------------------------------------------------- context stack

    /** Leaves exactly {@code ctx} current (a one-entry stack), or nothing for 0. */
    /**
     * Runs {@code body} with a new user context of device 0 current and a handle of device 0's
     * primary context (not that user context), passing both; destroys the user context afterwards.
     */
    static void withAnotherContextCurrent(java.util.function.BiConsumer<Handle, Long> body) {
        long user = NativeTestApi.createContext(0);
        try {
            makeOnlyCurrent(user);
            try (Handle h = Handle.create(0)) { // explicit device: the primary context, not `user`
                assertTrue(h.contextId() != NativeTestApi.contextId(user), "the handle is bound to the primary context");
                body.accept(h, user);
            }
        } finally {
            clearCurrent();
            destroyQuietly(user);
        }
    }

    static void makeOnlyCurrent(long ctx) {
        clearCurrent();
        if (ctx != 0) {
            NativeTestApi.setCurrent(ctx);
        }
        assertEquals(hex(ctx), hex(current()), "setting up the thread's current context");
    }

    /** Destroys a user context, never throwing (for finally blocks); reports a failure on stdout. */
    static void destroyQuietly(long ctx) {
        if (ctx == 0) {
            return;
        }
        try {
            NativeTestApi.destroyContext(ctx);
        } catch (RuntimeException e) {
            System.out.println("[handle-tests] destroying context " + hex(ctx) + " failed: " + e);
        }
    }

    /**
     * The primary context's {@code [flags, active]} after giving the cleaner a moment to release
     * objects that earlier tests leaked, so that a comparison before/after a test is not disturbed
     * by an unrelated release in between.
     */
    static long[] settledPrimaryState(int device) {
        System.gc();
        try {
            Thread.sleep(100);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return NativeTestApi.primaryState(device);
    }

    static String state(long[] primaryState) {
        return "[flags=" + primaryState[0] + ", active=" + primaryState[1] + "]";
    }

    // ---------------------------------------------------------------- kernels

    /** The test kernels, loaded once per JVM (cuLibraryLoadData is context-independent, H10). */
    static synchronized Library kernels() {
        if (kernels == null || kernels.isClosed()) {
            kernels = TestKernels.load();
        }
        return kernels;
    }

    private static final java.util.concurrent.ConcurrentHashMap<String, Kernel> KERNELS = new java.util.concurrent.ConcurrentHashMap<>();

    static Kernel addOneKernel() {
        return kernel("cuh_test_add_one");
    }

    static Kernel spinKernel() {
        return kernel("cuh_test_spin");
    }

    static Kernel emptyKernel() {
        return kernel("cuh_test_empty");
    }

    static Kernel faultKernel() {
        return kernel("cuh_test_fault");
    }

    private static Kernel kernel(String name) {
        Library lib = kernels();
        Kernel k = KERNELS.get(name);
        if (k == null || k.library() != lib) {
            k = lib.kernel(name);
            KERNELS.put(name, k);
        }
        return k;
    }


    static Dim3 gridFor(int n) {
        return Dim3.of(Math.max(1, Math.min(1024, (n + BLOCK - 1) / BLOCK)));
    }

    /** {@code x[i] += 1} on the device, on the handle's stream. */
    static void addOne(Handle h, DeviceBuffer x, int n) {
        h.launch(addOneKernel(), gridFor(n), Dim3.of(BLOCK), 0, x, n);
    }

    /**
     * Keeps the handle's stream busy for about {@code seconds}. On the CPU stand-in driver, where
     * kernels do not execute, the same launch is made with the stand-in's simulated work time set
     * to {@code seconds} (at least 1 ms) for it and restored afterwards, so the stream is busy for
     * that long in simulated time: synchronize, event and copy calls queued behind it wait. The
     * work time is process-wide, so no other thread should launch or copy meanwhile.
     */
    static void spin(Handle h, double seconds) {
        long cycles = (long) (seconds * SPIN_CYCLES_PER_SECOND);
        if (!StandIn.active()) {
            h.launch(spinKernel(), Dim3.of(1), Dim3.of(1), 0, cycles);
            return;
        }
        int millis = (int) Math.max(1, Math.round(seconds * 1000));
        int launchesBefore = StandIn.launches();
        int previous = StandIn.setWorkMillis(millis);
        try {
            h.launch(spinKernel(), Dim3.of(1), Dim3.of(1), 0, cycles);
        } finally {
            StandIn.setWorkMillis(previous);
        }
        assertEquals(1, StandIn.launches() - launchesBefore, "spin(" + seconds + " s): launches the stand-in driver accepted");
    }

    // ---------------------------------------------------------------- data and CPU references

    static float[] randomFloats(Random random, int n) {
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = random.nextFloat() * 200f - 100f;
        }
        return x;
    }

    /** The CPU result of {@code times} launches of cuh_test_add_one: {@code times} float additions of 1, rounded each time. */
    static float[] plusOnes(float[] x, int times) {
        float[] r = x.clone();
        for (int i = 0; i < r.length; i++) {
            float v = r[i];
            for (int t = 0; t < times; t++) {
                v += 1.0f;
            }
            r[i] = v;
        }
        return r;
    }

    /**
     * What a buffer uploaded from {@code x} holds after {@code times} launches of cuh_test_add_one:
     * the CPU reference {@link #plusOnes} on a GPU; on the CPU stand-in driver, where kernels do not
     * execute, {@code x} itself (the data must come back unchanged, so a lost, misdirected or
     * corrupting copy still fails). Pair it with {@link LaunchCount} there, which checks that the
     * launches reached the driver.
     */
    static float[] afterAddOnes(float[] x, int times) {
        return StandIn.active() ? x.clone() : plusOnes(x, times);
    }

    /**
     * On the CPU stand-in driver, counts the kernel launches the driver accepted from its creation
     * on; on a GPU it checks nothing (the results of the kernels are compared there). The stand-in's
     * counter is process-wide: only launches the test itself makes may happen meanwhile.
     */
    static final class LaunchCount {
        private final int before = StandIn.active() ? StandIn.launches() : 0;

        /** On the stand-in: exactly {@code expected} launches were accepted since this count began. */
        void assertAccepted(int expected, String what) {
            if (StandIn.active()) {
                assertEquals(expected, StandIn.launches() - before, what + ": kernel launches the stand-in driver accepted");
            }
        }
    }

    /**
     * Uploads fresh random data with {@code h}, adds one {@code times} times on the device,
     * downloads and compares with the CPU. The buffer is closed afterwards. On the CPU stand-in
     * driver (no kernel executes) it checks what can be checked there: the driver accepted exactly
     * {@code times} launches and the data round-trips unchanged ({@link #afterAddOnes}).
     */
    static void checkAddOne(Handle h, Random random, int n, int times, String what) {
        float[] x = randomFloats(random, n);
        try (DeviceBuffer b = h.upload(x)) {
            LaunchCount launches = new LaunchCount();
            for (int t = 0; t < times; t++) {
                addOne(h, b, n);
            }
            launches.assertAccepted(times, what);
            float[] out = new float[n];
            b.download(out);
            assertExact(afterAddOnes(x, times), out, what);
        }
    }

    // ---------------------------------------------------------------- threads

    /** Runs {@code body} on a new thread (nothing current there) and returns its result; rethrows its failure. */
    static <T> T onFreshThread(String name, Callable<T> body) throws Exception {
        return onFreshThreads(name, 1, i -> body.call()).get(0);
    }

    interface IndexedTask<T> {
        T call(int index) throws Exception;
    }

    /**
     * Runs {@code count} copies of {@code body} on as many new threads, all started together; each
     * thread first checks that nothing is current on it (a new thread) and at the end that it
     * still has nothing current (H4). Fails with every thread's failure attached.
     */
    static <T> List<T> onFreshThreads(String name, int count, IndexedTask<T> body) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(count, r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        });
        try {
            java.util.concurrent.CountDownLatch start = new java.util.concurrent.CountDownLatch(1);
            List<Future<T>> futures = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                int index = i;
                futures.add(pool.submit(() -> {
                    long before = current();
                    if (before != 0) {
                        throw new AssertionError("a new thread should have no current context, but " + hex(before) + " is current");
                    }
                    start.await();
                    T result = body.call(index);
                    long after = current();
                    if (after != 0) {
                        throw new AssertionError("thread " + name + "#" + index + " ended with context " + hex(after)
                                + " current; no cuhandle operation may change the caller's current context (H4)");
                    }
                    return result;
                }));
            }
            start.countDown();
            List<T> results = new ArrayList<>();
            AssertionError failure = null;
            for (int i = 0; i < count; i++) {
                try {
                    results.add(futures.get(i).get(120, TimeUnit.SECONDS));
                } catch (ExecutionException e) {
                    if (failure == null) {
                        failure = new AssertionError(name + "#" + i + " failed: " + e.getCause(), e.getCause());
                    } else {
                        failure.addSuppressed(e.getCause());
                    }
                } catch (TimeoutException e) {
                    AssertionError timeout = new AssertionError(name + "#" + i + " did not finish within 120 s");
                    if (failure == null) {
                        failure = timeout;
                    } else {
                        failure.addSuppressed(timeout);
                    }
                }
            }
            if (failure != null) {
                throw failure;
            }
            return results;
        } finally {
            pool.shutdownNow();
        }
    }

    // ---------------------------------------------------------------- child JVMs

    /** What a child JVM running {@link HandleExitChild} did. */
    static final class ChildRun {
        final List<String> command;
        final int exitCode;
        final String output;
        final List<String> crashFiles;

        ChildRun(ChildJvm child) {
            this.command = child.command;
            this.exitCode = child.exitCode;
            this.output = child.output;
            this.crashFiles = child.crashFiles;
        }

        String context() {
            return "\ncommand: " + String.join(" ", command) + "\n--- child output ---\n" + output + "--- end of child output ---";
        }

        /** No hs_err_pid*.log or core file, no fatal-error banner. */
        void assertNoCrash(String what) {
            if (!crashFiles.isEmpty()) {
                fail(what + ": the child JVM left crash files " + crashFiles + context());
            }
            if (output.contains("A fatal error has been detected")) {
                fail(what + ": the child JVM crashed" + context());
            }
        }

        List<String> linesStartingWith(String prefix) {
            List<String> lines = new ArrayList<>();
            for (String line : output.split("\\R")) {
                if (line.startsWith(prefix)) {
                    lines.add(line);
                }
            }
            return lines;
        }

        String tail(int lines) {
            String[] all = output.strip().split("\\R");
            return String.join("\n", java.util.Arrays.asList(all).subList(Math.max(0, all.length - lines), all.length));
        }
    }

    /**
     * Runs {@link HandleExitChild} with {@code mode} in a fresh JVM whose working directory is
     * {@code dir}, with this JVM's java, class path and cuhandle properties (and, on the CPU stand-in
     * driver, the property that tells the child it runs there).
     */
    static ChildRun runHandleExitChild(java.nio.file.Path dir, String mode) throws Exception {
        List<String> options = StandIn.active() ? List.of("-D" + StandIn.PROPERTY + "=true") : List.of();
        return new ChildRun(ChildJvm.run(dir, HandleExitChild.class, options, mode));
    }
}
