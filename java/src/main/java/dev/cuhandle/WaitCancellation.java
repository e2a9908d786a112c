package dev.cuhandle;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;

/**
 * What ends a handle's blocking waits early: set it with {@link Handle#setWaitCancellation(WaitCancellation) Handle.setWaitCancellation}. Without one a
 * blocking call waits inside the driver ({@code cuStreamSynchronize}) and notices nothing until the GPU is
 * done; with one, {@link Handle#synchronize()} and the blocking copies between Java arrays or
 * {@code ByteBuffer}s and the device first wait for the work queued before them by parking on a future of
 * that work (rule W1 of docs/design.md: no wait spins), and end early:
 *
 * <ul>
 *   <li>when the waiting thread is interrupted: at once, with the exception {@link #check} returns for
 *       {@code interrupted = true}, or a {@link CancellationException} if it returns {@code null}; the
 *       interrupt flag stays set;
 *   <li>when {@link #check} returns an exception for {@code interrupted = false}: it is asked before each
 *       wait and every {@value #POLL_MILLIS} ms while waiting.
 * </ul>
 *
 * <p>The work itself is never cancelled (CUDA cannot take queued work back): it runs to its end, and the
 * handle's {@link Handle#close()} still waits for it (rule H6) before it releases anything. The cost, only
 * on handles that have one: each blocking call records an event and waits for a future of it (a few
 * microseconds), and a wait notices the end of the work through cuhandle's completion thread.
 *
 * <pre>{@code
 * h.setWaitCancellation(WaitCancellation.onInterrupt());
 * worker.interrupt();                  // a worker blocked in h.synchronize() or y.download(out) throws at once
 * }</pre>
 */
@FunctionalInterface
public interface WaitCancellation {
    /** How often a waiting thread asks {@link #check} ({@code interrupted = false}): the delay of a cancellation that does not interrupt. */
    long POLL_MILLIS = 20;

    /**
     * Whether the wait must end now.
     *
     * @param interrupted whether the waiting thread was interrupted (its flag stays set)
     * @return the exception the blocking call throws, or {@code null} to go on waiting (for
     *     {@code interrupted = true} a {@code null} still ends the wait, with a {@link CancellationException})
     */
    RuntimeException check(boolean interrupted);

    /**
     * Waits for {@code future} (of GPU work, or any other) and returns its value, ending early as this cancellation
     * says: at once when the thread is interrupted (the flag stays set), and when {@link #check} asks, which it does
     * before waiting and every {@value #POLL_MILLIS} ms. The thread parks meanwhile. Cancelling the wait does not
     * cancel the future.
     *
     * @param <T> the future's value type
     * @param future the future to wait for
     * @return the future's value
     * @throws NullPointerException if {@code future} is {@code null}
     * @throws RuntimeException what {@link #check} returns, or a {@link CancellationException} for an interrupt
     *     it returns nothing for
     * @throws CudaException if the future failed with one (thrown again with this thread's stack, the original
     *     as its cause); another failure is thrown as it is if unchecked, else in a
     *     {@link java.util.concurrent.CompletionException}
     */
    default <T> T await(CompletableFuture<T> future) {
        return CancellableWaits.await(java.util.Objects.requireNonNull(future, "future"), this);
    }

    /**
     * Ends waits when the waiting thread is interrupted, with a {@link CancellationException}.
     *
     * @return the cancellation
     */
    static WaitCancellation onInterrupt() {
        return interrupted -> interrupted ? new CancellationException("interrupted while waiting for the GPU") : null;
    }
}
