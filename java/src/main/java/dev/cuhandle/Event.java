package dev.cuhandle;

import java.lang.ref.Reference;

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
        long e = enter();
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

    /** Waits until the work recorded before the event is done. */
    public void synchronize() {
        long e = enter();
        try {
            NativeApi.eventSynchronize(e);
        } finally {
            exit();
        }
    }

    /** Milliseconds between {@code start} and this event (both recorded and complete). */
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

    private long enter() {
        return state.enter();
    }

    /** Leaves a call; keeps this event reachable until here, so the cleaner never runs during a call (L2). */
    private void exit() {
        state.exit();
        Reference.reachabilityFence(this);
    }

    /** Destroys the event after calls in flight return. Idempotent. */
    @Override
    public void close() {
        state.close();
        Reference.reachabilityFence(this);
    }
}
