package dev.cuhandle;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The waits a {@link WaitCancellation} ends: for a future of GPU work, and for the work queued on a handle
 * so far through such a future ({@link Handle#whenDone()}). The completion thread completes the future, so
 * the waiting thread parks instead of spinning in the driver, and can stop (rule W1 of docs/design.md). A
 * failure of the work is thrown again with this thread's stack (the original is its cause).
 */
final class CancellableWaits {
    private CancellableWaits() {}

    /**
     * Returns once the work queued on {@code handle} so far is done, or throws what {@code cancellation}
     * says when the thread is interrupted (the flag stays set) or it asks to stop.
     *
     * @throws CudaException if the work failed on the GPU (the failure is its cause)
     */
    static void await(Handle handle, WaitCancellation cancellation) {
        stopIfAsked(cancellation);
        await(handle.whenDone(), cancellation);
    }

    /** {@link WaitCancellation#await(CompletableFuture)}: the future's value, or what the cancellation throws. */
    static <T> T await(CompletableFuture<T> future, WaitCancellation cancellation) {
        stopIfAsked(cancellation); // also where the work is done already: a completed future's get() looks at nothing
        CompletableFuture<T> waiting = future;
        try {
            while (true) {
                try {
                    return waiting.get(WaitCancellation.POLL_MILLIS, TimeUnit.MILLISECONDS);
                } catch (TimeoutException e) {
                    RuntimeException stop = cancellation.check(false);
                    if (stop != null) {
                        throw stop;
                    }
                    // cuhandle's own futures poll the GPU for up to 1 ms in each get(); a copy of one does not.
                    waiting = waiting == future ? future.copy() : waiting;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            RuntimeException stop = cancellation.check(true);
            RuntimeException thrown = stop != null ? stop : interrupted();
            if (thrown.getCause() == null) {
                thrown.initCause(e);
            }
            throw thrown;
        } catch (ExecutionException e) {
            throw failed(e.getCause());
        }
    }

    private static void stopIfAsked(WaitCancellation cancellation) {
        boolean interrupted = Thread.currentThread().isInterrupted();
        RuntimeException stop = cancellation.check(interrupted);
        if (stop == null && interrupted) {
            stop = interrupted();
        }
        if (stop != null) {
            throw stop;
        }
    }

    /**
     * Returns once the work queued on {@code handle} so far is done, whatever the cancellation says: for
     * {@link Handle#close()}, which must wait for it (rule H6) but need not spin in the driver to do so. An
     * interrupt is kept, not obeyed; a failure of the work is left for the close to report.
     */
    static void awaitQuietly(Handle handle) {
        CompletableFuture<Void> done;
        try {
            done = handle.whenDone();
        } catch (RuntimeException e) {
            return; // closed meanwhile, or the context is gone: the close says so
        }
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    done.get();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (ExecutionException e) {
                    break;
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private static CancellationException interrupted() {
        return new CancellationException("interrupted while waiting for the GPU");
    }

    private static RuntimeException failed(Throwable failure) {
        if (failure instanceof CudaException) {
            return ((CudaException) failure).within("waiting for GPU work");
        }
        if (failure instanceof Error) {
            throw (Error) failure;
        }
        return failure instanceof RuntimeException ? (RuntimeException) failure : new java.util.concurrent.CompletionException(failure);
    }
}
