package dev.cuhandle.spark;

import dev.cuhandle.CudaError;
import dev.cuhandle.CudaException;
import dev.cuhandle.Handle;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.BinaryOperator;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.apache.spark.TaskContext;
import org.apache.spark.TaskKilledException;

/**
 * Runs GPU work again when it runs out of device memory, instead of failing the Spark task: the
 * out-of-memory counterpart of {@link GpuAdmission}.
 *
 * <pre>{@code
 * Handle h = GpuTask.handle();
 * float[] scores = GpuRetry.run(h, () -> {                 // again after an out-of-memory error
 *     try (DeviceBuffer x = h.upload(rows); DeviceBuffer y = h.allocate(4L * n)) {
 *         h.launch(score, grid, block, 0, x, y, n);
 *         GpuTask.synchronize(h);
 *         float[] out = new float[n];
 *         y.download(out);
 *         return out;
 *     }
 * });
 * }</pre>
 *
 * <p><b>What counts.</b> A {@link CudaException} whose {@link CudaException#error() error()} is
 * {@link CudaError#OUT_OF_MEMORY}, thrown by the work itself. Every other exception propagates
 * unchanged at once. (An allocation of cuhandle has already trimmed the memory pool and tried once
 * more before it throws that error: rule M1 of docs/design.md.)
 *
 * <p><b>Between attempts</b> it waits, cancellably, for the GPU work the handle had queued (the failed
 * attempt's buffers are freed in stream order, so their memory comes back only then), gives the memory
 * the context's pool caches back to the driver ({@link Handle#trimMemory()}; every task's handle on a
 * device shares the device's primary context, so this includes what other tasks have freed), and then
 * waits until another task releases its {@link GpuAdmission} permit for the device, or for
 * {@value #FIRST_WAIT_MILLIS} ms, doubling with each further attempt up to {@value #MAX_WAIT_MILLIS}
 * ms, whichever comes first. With {@value #DEFAULT_ATTEMPTS} attempts that is at most 3 s of waiting.
 *
 * <p><b>Cancellation.</b> Those waits park and end like {@link GpuTask#synchronize(Handle)}: an interrupt
 * of the thread at once, the Spark task's kill mark within 20 ms, with a {@link TaskKilledException}
 * (the interrupt flag stays set). Outside a Spark task only an interrupt ends them.
 *
 * <p><b>The work must be repeatable.</b> It runs again from its start, so it must free what it allocated
 * when it throws (try-with-resources does) and must not have effects that may not happen twice.
 */
public final class GpuRetry {
    /** Attempts of {@link #run(Handle, Supplier)} and of each smallest range of {@link #split}: the first and four retries. */
    public static final int DEFAULT_ATTEMPTS = 5;
    /** The longest wait for another task's release after the first failed attempt, in milliseconds. */
    public static final long FIRST_WAIT_MILLIS = 200;
    /** The longest wait for another task's release between any two attempts, in milliseconds. */
    public static final long MAX_WAIT_MILLIS = 2000;

    private static final System.Logger LOG = System.getLogger("dev.cuhandle.spark");

    /**
     * Work on the part {@code [from, to)} of an input, for {@link GpuRetry#split}.
     *
     * @param <T> the result type
     */
    @FunctionalInterface
    public interface RangeWork<T> {
        /**
         * Does the work for the elements {@code from} (inclusive) to {@code to} (exclusive).
         *
         * @param from the first element of the range
         * @param to one past the last element of the range, greater than {@code from}
         * @return the result for the range
         */
        T run(long from, long to);
    }

    private final Handle handle;
    private final int attempts;
    private final long firstWaitNanos;
    private final DevicePermits permits;
    private final BooleanSupplier killed;

    private GpuRetry(Handle handle, int attempts, long firstWaitNanos) {
        this.handle = Objects.requireNonNull(handle, "handle");
        if (attempts < 1) {
            throw new IllegalArgumentException("attempts " + attempts + " is invalid; expected at least 1");
        }
        this.attempts = attempts;
        this.firstWaitNanos = firstWaitNanos;
        this.permits = GpuAdmission.permits(handle.device().ordinal());
        TaskContext task = TaskContext.get();
        this.killed = task == null ? () -> false : task::isInterrupted;
    }

    /** The seam for tests: retries on {@code handle} with a first wait of their choosing. */
    static GpuRetry withWaits(Handle handle, int attempts, long firstWaitNanos) {
        return new GpuRetry(handle, attempts, firstWaitNanos);
    }

    /**
     * Runs {@code work} and returns its result, running it again after an out-of-memory error, up to
     * {@value #DEFAULT_ATTEMPTS} attempts in all (see the class comment for what happens between them).
     *
     * @param <T> the result type
     * @param handle the handle the work uses: its device's memory is freed and waited for between attempts
     * @param work the GPU work; it runs again from its start after an out-of-memory error, so it must free
     *     what it allocated when it throws
     * @return what {@code work} returned on the first attempt that did not throw
     * @throws NullPointerException if {@code handle} or {@code work} is {@code null}
     * @throws CudaException with {@link CudaError#OUT_OF_MEMORY} if every attempt ran out of memory: the same
     *     code and operation as the last attempt's error, which is its cause, and a message that says how many
     *     attempts were made; or any other {@code CudaException}, unchanged, that {@code work} throws or that
     *     waiting for the handle's work or trimming its memory throws (then with the out-of-memory error as a
     *     suppressed exception)
     * @throws TaskKilledException if the thread is interrupted (the flag stays set) or its Spark task is
     *     killed while it waits between attempts; the out-of-memory error is a suppressed exception
     * @throws IllegalStateException if the handle is closed when memory is to be freed between attempts, or
     *     {@code work} throws it
     * @throws RuntimeException any other exception of {@code work}, unchanged, at the attempt that threw it
     */
    public static <T> T run(Handle handle, Supplier<T> work) {
        return run(handle, DEFAULT_ATTEMPTS, work);
    }

    /**
     * Runs {@code work} like {@link #run(Handle, Supplier)}, with {@code attempts} attempts at the most.
     *
     * @param <T> the result type
     * @param handle the handle the work uses: its device's memory is freed and waited for between attempts
     * @param attempts how often to run {@code work} at the most, at least 1 (1: no retry)
     * @param work the GPU work; it runs again from its start after an out-of-memory error, so it must free
     *     what it allocated when it throws
     * @return what {@code work} returned on the first attempt that did not throw
     * @throws NullPointerException if {@code handle} or {@code work} is {@code null}
     * @throws IllegalArgumentException if {@code attempts} is less than 1
     * @throws CudaException with {@link CudaError#OUT_OF_MEMORY} if every attempt ran out of memory: the same
     *     code and operation as the last attempt's error, which is its cause, and a message that says how many
     *     attempts were made; or any other {@code CudaException}, unchanged, that {@code work} throws or that
     *     waiting for the handle's work or trimming its memory throws (then with the out-of-memory error as a
     *     suppressed exception)
     * @throws TaskKilledException if the thread is interrupted (the flag stays set) or its Spark task is
     *     killed while it waits between attempts; the out-of-memory error is a suppressed exception
     * @throws IllegalStateException if the handle is closed when memory is to be freed between attempts, or
     *     {@code work} throws it
     * @throws RuntimeException any other exception of {@code work}, unchanged, at the attempt that threw it
     */
    public static <T> T run(Handle handle, int attempts, Supplier<T> work) {
        return new GpuRetry(handle, attempts, TimeUnit.MILLISECONDS.toNanos(FIRST_WAIT_MILLIS)).retrying(work);
    }

    /**
     * Runs {@code work} on the whole range {@code [from, to)}; where a range runs out of memory, runs it
     * again as two halves, each the same way, and combines their results. A range is halved only while both
     * halves keep at least {@code minSize} elements; one too small to halve is run like
     * {@link #run(Handle, Supplier)}, with {@value #DEFAULT_ATTEMPTS} attempts. Before a range is halved, the
     * handle's queued work is waited for and the pool's cached memory given back (no wait for other tasks:
     * the halves need less).
     *
     * <pre>{@code
     * long total = GpuRetry.split(h, 0, rows.length, 1024,
     *         (from, to) -> scoreRows(h, rows, from, to),   // one allocation for to - from rows
     *         Long::sum);
     * }</pre>
     *
     * @param <T> the result type
     * @param handle the handle the work uses: its device's memory is freed and waited for between attempts
     * @param from the first element, at least 0
     * @param to one past the last element, greater than {@code from}
     * @param minSize the fewest elements a half may have, at least 1
     * @param work the GPU work for one range; a range that ran out of memory is not used, so it must free
     *     what it allocated when it throws
     * @param combine joins the results of two adjacent ranges, the lower first; called only when a range
     *     was halved
     * @return the result for {@code [from, to)}: {@code work}'s for the whole range, or the halves' combined
     * @throws NullPointerException if {@code handle}, {@code work} or {@code combine} is {@code null}
     * @throws IllegalArgumentException if {@code from} is negative, {@code to} is not greater than
     *     {@code from}, or {@code minSize} is less than 1
     * @throws CudaException with {@link CudaError#OUT_OF_MEMORY} if a range too small to halve ran out of
     *     memory on every attempt: the last attempt's error is its cause, and its message names the range and
     *     how many attempts were made; or any other {@code CudaException}, unchanged, that {@code work} throws
     *     or that waiting for the handle's work or trimming its memory throws (then with the out-of-memory
     *     error as a suppressed exception)
     * @throws TaskKilledException if the thread is interrupted (the flag stays set) or its Spark task is
     *     killed while it waits between attempts; the out-of-memory error is a suppressed exception
     * @throws IllegalStateException if the handle is closed when memory is to be freed between attempts, or
     *     {@code work} throws it
     * @throws RuntimeException any other exception of {@code work} or {@code combine}, unchanged
     */
    public static <T> T split(Handle handle, long from, long to, long minSize, RangeWork<T> work, BinaryOperator<T> combine) {
        return new GpuRetry(handle, DEFAULT_ATTEMPTS, TimeUnit.MILLISECONDS.toNanos(FIRST_WAIT_MILLIS))
                .splitting(from, to, minSize, work, combine);
    }

    /** {@link #run(Handle, int, Supplier)} with this object's handle, attempts and waits. */
    <T> T retrying(Supplier<T> work) {
        return retrying(work, "");
    }

    /** {@link #split} with this object's handle, attempts and waits. */
    <T> T splitting(long from, long to, long minSize, RangeWork<T> work, BinaryOperator<T> combine) {
        Objects.requireNonNull(work, "work");
        Objects.requireNonNull(combine, "combine");
        if (from < 0 || to <= from) {
            throw new IllegalArgumentException("range [" + from + ", " + to + ") is invalid; expected 0 <= from < to");
        }
        if (minSize < 1) {
            throw new IllegalArgumentException("minSize " + minSize + " is invalid; expected at least 1");
        }
        return halving(from, to, minSize, work, combine);
    }

    private <T> T halving(long from, long to, long minSize, RangeWork<T> work, BinaryOperator<T> combine) {
        long size = to - from;
        if (size / 2 < minSize) {
            return retrying(() -> work.run(from, to), " for range [" + from + ", " + to + ")");
        }
        try {
            return work.run(from, to);
        } catch (CudaException e) {
            if (!isOutOfMemory(e)) {
                throw e;
            }
            freeCachedMemory(e);
            LOG.log(System.Logger.Level.INFO, () -> "out of memory on range [" + from + ", " + to + ") on device "
                    + handle.device().ordinal() + ", running it as two halves: " + e.getMessage());
        }
        long middle = from + size / 2;
        T lower = halving(from, middle, minSize, work, combine);
        T upper = halving(middle, to, minSize, work, combine);
        return combine.apply(lower, upper);
    }

    private <T> T retrying(Supplier<T> work, String what) {
        Objects.requireNonNull(work, "work");
        for (int attempt = 1; ; attempt++) {
            CudaException outOfMemory;
            try {
                return work.get();
            } catch (CudaException e) {
                if (!isOutOfMemory(e)) {
                    throw e;
                }
                outOfMemory = e;
            }
            if (attempt == attempts) {
                throw exhausted(outOfMemory, what);
            }
            long seen = permits.releases(); // a release from now on may have freed what the next attempt needs
            freeCachedMemory(outOfMemory);
            long wait = waitBefore(attempt + 1);
            long start = System.nanoTime();
            boolean released = waitForRelease(seen, wait, outOfMemory);
            int failed = attempt;
            LOG.log(System.Logger.Level.INFO, () -> "out of memory on attempt " + failed + " of " + attempts + what + " on device "
                    + handle.device().ordinal() + "; freed cached memory, waited " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)
                    + " ms " + (released ? "until another task released the GPU" : "(no task released the GPU)") + ", trying again: "
                    + outOfMemory.getMessage());
        }
    }

    /** The longest wait before attempt {@code next} (2 or later): the first wait, doubled per attempt since, capped. */
    private long waitBefore(int next) {
        long cap = TimeUnit.MILLISECONDS.toNanos(MAX_WAIT_MILLIS);
        long wait = firstWaitNanos; // a first wait above the cap (tests) stays as it is
        for (int i = 2; i < next && wait < cap; i++) {
            wait = Math.min(2 * wait, cap);
        }
        return wait;
    }

    /**
     * Waits for the work queued on the handle (the failed attempt's buffers are freed in stream order) and
     * gives the pool's cached memory back to the driver.
     */
    private void freeCachedMemory(CudaException outOfMemory) {
        try {
            CancellableWait.await(handle.whenDone());
            handle.trimMemory();
        } catch (RuntimeException e) {
            e.addSuppressed(outOfMemory);
            throw e;
        }
    }

    private boolean waitForRelease(long seen, long timeoutNanos, CudaException outOfMemory) {
        try {
            return permits.awaitRelease(seen, timeoutNanos, killed);
        } catch (TaskKilledException e) {
            e.addSuppressed(outOfMemory);
            throw e;
        }
    }

    private CudaException exhausted(CudaException last, String what) {
        String prefix = last.operation() + " failed: ";
        String detail = last.getMessage().startsWith(prefix) ? last.getMessage().substring(prefix.length()) : last.getMessage();
        CudaException exhausted = new CudaException(last.code(), last.operation(), detail + "; out of memory on all " + attempts
                + (attempts == 1 ? " attempt" : " attempts") + " that GpuRetry made" + what + ", with cached memory freed and a wait for "
                + "other tasks' releases before each retry");
        exhausted.initCause(last);
        return exhausted;
    }

    /** Whether {@code e} is the out-of-memory error that another attempt may get past. */
    static boolean isOutOfMemory(CudaException e) {
        return e.error() == CudaError.OUT_OF_MEMORY;
    }
}
