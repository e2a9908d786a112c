package dev.cuhandle;

/** A CUDA event of one context: record it on a handle's stream, wait for it, time between two. */
public final class Event implements AutoCloseable {
    private final NativeObject state;
    private final long contextId;

    Event(Handle handle, long pointer) {
        this.contextId = handle.contextId();
        this.state = NativeObject.register(this, pointer, "Event", NativeApi::eventDestroy);
    }

    /** Records the event on {@code handle}'s stream. */
    public void record(Handle handle) {
        if (handle.contextId() != contextId) {
            throw new IllegalArgumentException("the event belongs to context id " + contextId + ", the handle to " + handle.contextId());
        }
        long e = state.enter();
        try {
            long h = handle.enter();
            try {
                NativeApi.eventRecord(e, h);
            } finally {
                handle.exit();
            }
        } finally {
            state.exit();
        }
    }

    /** Waits until the work recorded before the event is done. */
    public void synchronize() {
        long e = state.enter();
        try {
            NativeApi.eventSynchronize(e);
        } finally {
            state.exit();
        }
    }

    /** Milliseconds between {@code start} and this event (both recorded and complete). */
    public float elapsedSince(Event start) {
        if (start.contextId != contextId) {
            throw new IllegalArgumentException("the start event belongs to context id " + start.contextId + ", this event to " + contextId);
        }
        long e = state.enter();
        try {
            long s = start.state.enter();
            try {
                return NativeApi.eventElapsed(s, e);
            } finally {
                start.state.exit();
            }
        } finally {
            state.exit();
        }
    }

    @Override
    public void close() {
        state.close();
    }
}
