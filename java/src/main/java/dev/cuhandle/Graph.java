package dev.cuhandle;

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
public final class Graph extends NativeResource implements AutoCloseable {
    private final Handle capturedBy;
    private final long contextId;
    private final long nodeCount;
    /** Root buffers, host buffers, libraries and events the recorded calls use. */
    private final List<Object> resources;
    /** Native pointers of the device and host buffers among {@link #resources}, for the replay's use tracking. */
    private final long[] bufferPointers;
    private final long[] hostPointers;
    private final long[] libraryPointers;

    private Graph(Handle capturedBy, long pointer, long[] info, List<Object> resources) {
        super(pointer, "Graph", NativeApi::graphDestroy);
        this.capturedBy = capturedBy;
        this.contextId = info[0];
        this.nodeCount = info[1];
        this.resources = resources;
        this.bufferPointers = pointersOf(resources, DeviceBuffer.class);
        this.hostPointers = pointersOf(resources, HostBuffer.class);
        this.libraryPointers = pointersOf(resources, Library.class);
    }

    /** The graph {@code pointer} that {@code capturedBy} instantiated; its recorded calls use {@code resources}. */
    static Graph of(Handle capturedBy, long pointer, List<Object> resources) {
        long[] info;
        try {
            info = NativeApi.graphInfo(pointer);
        } catch (RuntimeException | Error e) {
            NativeObject.freeNow(pointer, NativeApi::graphDestroy, e);
            throw e;
        }
        return new Graph(capturedBy, pointer, info, resources);
    }

    private static long[] pointersOf(List<Object> resources, Class<? extends NativeResource> type) {
        return resources.stream().filter(type::isInstance).mapToLong(r -> type.cast(r).nativePointer()).toArray();
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
        long g = enter();
        try {
            long h = handle.enter();
            try {
                // Only held open (recorded reductions use its workspace), not entered as a call: Handle.enter's
                // guards would make this thread, which holds `handle` entered, wait for a stream switch of
                // capturedBy; when it is `handle` itself (a replay on the capturing handle, the usual case) the
                // switch waits for this thread's entry in turn, and neither returns.
                capturedBy.state.enter();
                try {
                    launchHoldingResources(g, h, handle);
                } finally {
                    capturedBy.exit();
                }
            } finally {
                handle.exit();
            }
        } finally {
            exit();
        }
    }

    /** Enters every resource, launches, and exits the ones entered, also when entering one fails. */
    private void launchHoldingResources(long g, long h, Handle handle) {
        int entered = 0;
        try {
            for (; entered < resources.size(); entered++) {
                Object resource = resources.get(entered);
                try {
                    enter(resource, handle);
                } catch (IllegalStateException e) {
                    throw new IllegalStateException("the graph uses a " + resource.getClass().getSimpleName() + " that was closed after the capture;"
                            + " a graph can only be replayed while the buffers, host buffers, libraries and events of its recorded calls are open", e);
                }
            }
            NativeApi.graphLaunch(g, h, bufferPointers, hostPointers, libraryPointers);
        } finally {
            for (int i = 0; i < entered; i++) {
                exit(resources.get(i));
            }
        }
    }

    /** A replay enters a buffer for its handle (the context check), every other resource plainly. */
    private static void enter(Object resource, Handle handle) {
        if (resource instanceof DeviceBuffer) {
            ((DeviceBuffer) resource).enterFor(handle);
        } else {
            ((NativeResource) resource).enter();
        }
    }

    private static void exit(Object resource) {
        ((NativeResource) resource).exit();
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
        Capture.close(this, "Graph.close");
    }

    @Override
    public String toString() {
        return "Graph[" + nodeCount + " nodes, context id " + contextId + (isClosed() ? ", closed]" : "]");
    }
}
