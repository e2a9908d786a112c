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
 * <pre>{@code
 * try (Graph g = h.capture(() -> {
 *         for (int i = 0; i < 100; i++) {
 *             Blas.saxpy(h, n, 2f, x, 1, y, 1);       // recorded, not run
 *         }
 *     })) {
 *     for (int step = 0; step < 1000; step++) {
 *         g.launch(h);                                // 100 kernels, one launch
 *     }
 * }
 * }</pre>
 *
 * <p>Calls that cannot be recorded ({@code synchronize}, {@code allocate}, copies to Java arrays,
 * reductions to a host value ...) are refused by name with an {@link IllegalStateException} during the
 * capture (rule C1), and the capture goes on.
 *
 * <p>Lifetimes (rule L7 of docs/design.md): a graph keeps the handle that captured it and every
 * {@link DeviceBuffer}, {@link HostBuffer}, {@link Library} and {@link Event} its recorded calls used
 * reachable, and each replay holds them open while it is queued, like a kernel launch does: one
 * closed since the capture makes the replay an {@link IllegalStateException} instead of a use of freed
 * memory. One closed while replays are still queued is released in stream order after them: a
 * buffer's memory is reused only once those replays are done (rule L3). Closing the graph never
 * waits: the driver releases it when its last replay has finished. Device addresses passed as plain
 * numbers (a {@code Long} kernel argument) are the caller's to keep valid. The capturing handle must
 * stay open because recorded reductions use its workspace; replay graphs that hold reductions on that
 * handle only, since its workspace is reused in its stream's order.
 */
public final class Graph implements AutoCloseable {
    private final NativeObject state;
    private final Handle capturedBy;
    private final long contextId;
    private final long nodeCount;
    /** Root buffers, host buffers, libraries and events the recorded calls use. */
    private final List<Object> resources;
    /** Native pointers of the device and host buffers among {@link #resources}, for the replay's use tracking. */
    private final long[] bufferPointers;
    private final long[] hostPointers;
    private final long[] libraryPointers;

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
        this.bufferPointers = resources.stream().filter(r -> r instanceof DeviceBuffer).mapToLong(r -> ((DeviceBuffer) r).nativePointer()).toArray();
        this.hostPointers = resources.stream().filter(r -> r instanceof HostBuffer).mapToLong(r -> ((HostBuffer) r).nativePointer()).toArray();
        this.libraryPointers = resources.stream().filter(r -> r instanceof Library).mapToLong(r -> ((Library) r).nativePointer()).toArray();
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
            NativeApi.graphLaunch(g, h, bufferPointers, hostPointers, libraryPointers);
            return;
        }
        Object resource = resources.get(index);
        try {
            enter(resource, handle);
        } catch (IllegalStateException e) {
            throw new IllegalStateException("the graph uses a " + resource.getClass().getSimpleName() + " that was closed after the capture;"
                    + " a graph can only be replayed while the buffers, host buffers, libraries and events of its recorded calls are open", e);
        }
        try {
            launchHoldingResources(g, h, handle, index + 1);
        } finally {
            exit(resource);
        }
    }

    private static void enter(Object resource, Handle handle) {
        if (resource instanceof DeviceBuffer) {
            ((DeviceBuffer) resource).enterFor(handle);
        } else if (resource instanceof HostBuffer) {
            ((HostBuffer) resource).enter();
        } else if (resource instanceof Event) {
            ((Event) resource).enter();
        } else {
            ((Library) resource).enter();
        }
    }

    private static void exit(Object resource) {
        if (resource instanceof DeviceBuffer) {
            ((DeviceBuffer) resource).exit();
        } else if (resource instanceof HostBuffer) {
            ((HostBuffer) resource).exit();
        } else if (resource instanceof Event) {
            ((Event) resource).exit();
        } else {
            ((Library) resource).exit();
        }
    }

    /**
     * Closes the graph: waits for calls in flight, then destroys it without waiting for the GPU (replays
     * still queued finish first; the driver frees the graph afterwards). Idempotent; later replays throw
     * {@link IllegalStateException}.
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
