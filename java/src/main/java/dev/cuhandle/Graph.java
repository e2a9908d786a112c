package dev.cuhandle;

import java.lang.ref.Reference;
import java.util.List;
import java.util.Objects;

/**
 * A CUDA graph of a handle's calls, recorded by {@link Handle#capture(Runnable)}, replayed with
 * {@link #launch(Handle)} ({@code cuGraphLaunch}): one launch for all recorded kernels, copies and
 * memsets. Close it (try-with-resources); an unreachable unclosed graph is released by a cleaner
 * with a warning.
 *
 * <p>Lifetimes: a graph keeps the handle that captured it and every {@link DeviceBuffer} and
 * {@link Library} its recorded calls used reachable, and each replay holds them open for the
 * launch, like a kernel launch does: one closed since the capture makes the replay an
 * {@link IllegalStateException} instead of a use of freed memory, and closing one waits for the
 * replays already queued (frees wait for the context's work). Device addresses passed as plain
 * numbers (a {@code Long} kernel argument) are the caller's to keep valid. The capturing handle
 * must stay open because recorded reductions use its workspace; replay graphs that hold
 * reductions on that handle only, since its workspace is reused in its stream's order.
 */
public final class Graph implements AutoCloseable {
    private final NativeObject state;
    private final Handle capturedBy;
    private final long contextId;
    private final long nodeCount;
    /** Root buffers and libraries the recorded calls use. */
    private final List<Object> resources;

    Graph(Handle capturedBy, long pointer, List<Object> resources) {
        long[] info;
        try {
            info = NativeApi.graphInfo(pointer);
        } catch (RuntimeException | Error e) {
            NativeObject.freeNow(pointer, NativeApi::graphDestroy, e);
            throw e;
        }
        this.capturedBy = capturedBy;
        this.contextId = info[0];
        this.nodeCount = info[1];
        this.resources = resources;
        this.state = NativeObject.register(this, pointer, "Graph", NativeApi::graphDestroy);
    }

    /**
     * The number of nodes the capture recorded (one per kernel launch, copy or memset).
     *
     * @return the node count
     */
    public long nodeCount() {
        return nodeCount;
    }

    /**
     * Whether the graph was closed (or cleaned).
     *
     * @return {@code true} once closed
     */
    public boolean isClosed() {
        return state.isClosed();
    }

    /**
     * Replays the recorded calls on {@code handle}'s current stream, after the work queued there
     * before; returns without waiting. Replays of one graph run one after another.
     *
     * @param handle a handle of the context the graph was captured in
     * @throws NullPointerException if {@code handle} is {@code null}
     * @throws IllegalArgumentException if {@code handle} is bound to another context
     * @throws IllegalStateException if the graph, {@code handle}, the capturing handle, or a buffer or
     *     library the graph uses is closed, or another thread captures on {@code handle}
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void launch(Handle handle) {
        Objects.requireNonNull(handle, "handle");
        if (handle.contextId() != contextId) {
            throw new IllegalArgumentException("the graph was captured in context id " + contextId + " but the handle is bound to context id "
                    + handle.contextId() + "; a graph replays only in its own context");
        }
        long g = state.enter();
        try {
            long h = handle.enter();
            try {
                capturedBy.enter();
                try {
                    launchHoldingResources(g, h, handle, 0);
                } finally {
                    capturedBy.exit();
                }
            } finally {
                handle.exit();
            }
        } finally {
            state.exit();
            Reference.reachabilityFence(this);
        }
    }

    /** Enters resources {@code index..} (recursively, so that each entered one is exited), then launches. */
    private void launchHoldingResources(long g, long h, Handle handle, int index) {
        if (index == resources.size()) {
            NativeApi.graphLaunch(g, h);
            return;
        }
        Object resource = resources.get(index);
        DeviceBuffer buffer = resource instanceof DeviceBuffer ? (DeviceBuffer) resource : null;
        Library library = buffer == null ? (Library) resource : null;
        try {
            if (buffer != null) {
                buffer.enterFor(handle);
            } else {
                library.enter();
            }
        } catch (IllegalStateException e) {
            throw new IllegalStateException("the graph uses a " + (buffer != null ? "DeviceBuffer" : "Library") + " that was closed after the capture;"
                    + " a graph can only be replayed while the buffers and libraries of its recorded calls are open", e);
        }
        try {
            launchHoldingResources(g, h, handle, index + 1);
        } finally {
            if (buffer != null) {
                buffer.exit();
            } else {
                library.exit();
            }
        }
    }

    /**
     * Closes the graph: waits for calls in flight and for the context's queued work (replays of it
     * included), then destroys it. Idempotent; later replays throw {@link IllegalStateException}.
     *
     * @throws IllegalStateException if this thread is capturing a graph (closing waits for the GPU)
     */
    @Override
    public void close() {
        Capture.refuseOnThisThread("Graph.close");
        state.close();
        Reference.reachabilityFence(this);
    }

    @Override
    public String toString() {
        return "Graph[" + nodeCount + " nodes, context id " + contextId + (isClosed() ? ", closed]" : "]");
    }
}
