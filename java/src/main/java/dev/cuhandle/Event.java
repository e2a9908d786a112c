package dev.cuhandle;

/**
 * A CUDA event of one context: record it on a handle's stream, wait for it, time between two. Recorded
 * (or waited for, {@link Handle#waitFor(Event)}) inside a graph capture, it belongs to the graph's
 * recorded calls: the graph keeps it reachable and a replay after it was closed is refused (rule L7).
 *
 * <pre>{@code
 * try (Event start = h.createEvent(); Event end = h.createEvent()) {
 *     start.record(h);
 *     h.launch(saxpy, Dim3.of(blocks), Dim3.of(256), 0, n, 2f, x, y);
 *     end.record(h);
 *     end.synchronize();
 *     float ms = end.elapsedSince(start);          // the kernel's time on the GPU
 * }
 * }</pre>
 */
public final class Event extends NativeResource implements AutoCloseable {
    private final long contextId;

    Event(Handle handle, long pointer) {
        super(pointer, "Event", NativeApi::eventDestroy);
        this.contextId = handle.contextId();
    }

    /**
     * Enters the event for a call made with {@code handle} ({@link Capture#enterFor}). Here, not at the caller, so that
     * verifying {@link Handle#waitFor} passes no Event where a NativeResource is expected: that check would make a
     * process's first {@code Handle.create} load this class (issue 35's cold start).
     */
    long enterFor(Handle handle) {
        return Capture.enterFor(handle, this);
    }

    /**
     * Records the event on {@code handle}'s current stream ({@code cuEventRecord}): it completes when the
     * work queued there before it is done. Returns without waiting.
     *
     * @param handle a handle of the event's context
     * @throws NullPointerException if {@code handle} is {@code null}
     * @throws IllegalArgumentException if the handle belongs to another context than the event
     * @throws IllegalStateException if the event or the handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void record(Handle handle) {
        if (handle.contextId() != contextId) {
            throw new IllegalArgumentException("the event belongs to context id " + contextId + ", the handle to " + handle.contextId());
        }
        long e = Capture.enterFor(handle, this);
        try {
            long h = handle.enter();
            try {
                NativeApi.eventRecord(e, h);
            } finally {
                handle.exit();
            }
        } finally {
            exit();
        }
    }

    /**
     * Waits until the work recorded before the event is done ({@code cuEventSynchronize}); returns at once
     * for an event never recorded.
     *
     * @throws IllegalStateException if the event is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails (e.g. a sticky error
     *     of the recorded work)
     */
    public void synchronize() {
        Capture.refuseOnThisThread("Event.synchronize");
        long e = enter();
        try {
            NativeApi.eventSynchronize(e);
        } finally {
            exit();
        }
    }

    /**
     * Time between two recorded events ({@code cuEventElapsedTime}), with a resolution of about half a
     * microsecond.
     *
     * @param start the earlier event, of the same context
     * @return milliseconds from {@code start} to this event
     * @throws NullPointerException if {@code start} is {@code null}
     * @throws IllegalArgumentException if {@code start} belongs to another context
     * @throws IllegalStateException if either event is closed
     * @throws CudaException if an event was not recorded ({@link CudaError#INVALID_HANDLE}) or has not
     *     completed ({@link CudaError#NOT_READY}), or the driver fails
     */
    public float elapsedSince(Event start) {
        if (start.contextId != contextId) {
            throw new IllegalArgumentException("the start event belongs to context id " + start.contextId + ", this event to " + contextId);
        }
        long e = enter();
        try {
            long s = start.enter();
            try {
                return NativeApi.eventElapsed(s, e);
            } finally {
                start.exit();
            }
        } finally {
            exit();
        }
    }

    /**
     * Whether the work recorded before the event is done ({@code cuEventQuery}); never waits. An event never
     * recorded counts as done.
     *
     * @return {@code true} when done, {@code false} while the work is queued or running
     * @throws IllegalStateException if the event is closed, or this thread is capturing a graph (a query
     *     there would invalidate the capture)
     * @throws CudaException if the recorded work failed (a sticky error of the context), the context was
     *     destroyed or reset, or the driver fails
     */
    public boolean query() {
        Capture.refuseOnThisThread("Event.query");
        long e = enter();
        try {
            return NativeApi.eventQuery(e);
        } finally {
            exit();
        }
    }

    /**
     * Destroys the event after calls in flight return; work still queued that records or waits for it is
     * unaffected (the driver releases it afterwards). Idempotent.
     *
     * @throws IllegalStateException if this thread is capturing a graph
     */
    @Override
    public void close() {
        Capture.close(this, "Event.close");
    }
}
