package dev.cuhandle;

import java.util.ArrayList;
import java.util.List;

/**
 * What a handle made while {@link Handle#trackResources() Handle.trackResources()} was on (buffers, pinned buffers, events,
 * graphs), so that its owner can close whatever is still open in one call
 * ({@link Handle#closeTrackedResources() Handle.closeTrackedResources()}): a Spark task's handle closes them when the task ends.
 * Closed ones are pruned as the list grows, so a loop that makes and closes objects keeps it short.
 */
final class TrackedResources {
    /** The list is pruned of closed objects when it reaches this size, then at twice what stayed. */
    private static final int FIRST_PRUNE = 64;
    private final List<NativeResource> made = new ArrayList<>();
    private int pruneAt = FIRST_PRUNE;

    /**
     * Notes {@code resource}, which must be a {@link NativeResource} (typed by its interface for the reason given at
     * {@code HandleMemory.track}); returns it.
     *
     * @throws ClassCastException if it is none (a cuhandle bug: every caller passes one of its own objects)
     */
    synchronized <T extends AutoCloseable> T add(T resource) {
        NativeResource noted = (NativeResource) resource;
        if (made.size() >= pruneAt) {
            made.removeIf(NativeResource::isClosed);
            pruneAt = Math.max(FIRST_PRUNE, 2 * made.size());
        }
        made.add(noted);
        return resource;
    }

    /**
     * Closes every noted object still open, the newest first (a graph before the buffers it recorded), and
     * forgets them all. Every close is attempted; the first failure is thrown after, the others suppressed.
     *
     * @return how many were open and closed here
     */
    int closeAll() {
        List<NativeResource> snapshot;
        synchronized (this) {
            snapshot = new ArrayList<>(made);
            made.clear();
            pruneAt = FIRST_PRUNE;
        }
        int closed = 0;
        RuntimeException first = null;
        for (int i = snapshot.size() - 1; i >= 0; i--) {
            NativeResource r = snapshot.get(i);
            if (r.isClosed()) {
                continue;
            }
            try {
                ((AutoCloseable) r).close();
                closed++;
            } catch (Exception e) {
                RuntimeException failure = e instanceof RuntimeException ? (RuntimeException) e : new IllegalStateException(e);
                if (first == null) {
                    first = failure;
                } else {
                    first.addSuppressed(failure);
                }
            }
        }
        if (first != null) {
            throw first;
        }
        return closed;
    }
}
