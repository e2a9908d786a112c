package dev.cuhandle;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
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
 *
 * <p>Changes without a new capture: a kernel launch named during the capture with {@link Handle#capturedLaunch()}
 * gets new scalar arguments, buffers, grid or block through {@link #update(GraphNode)}; the next {@link #launch(Handle)}
 * applies them ({@code cuGraphExecKernelNodeSetParams}) and replays. A buffer passed by an update is kept like a
 * captured one; the buffer it replaced is released from the graph once no recorded call uses it.
 *
 * <p>Loops and branches that the GPU decides (CUDA 12.4+ drivers): {@link Handle#whileLoop} and {@link Handle#ifThen},
 * called inside the capture, record conditional nodes whose bodies run as often as a {@link GraphCondition} says,
 * without coming back to the host.
 */
public final class Graph extends NativeResource implements AutoCloseable {
    private final Handle capturedBy;
    private final long contextId;
    private final long nodeCount;
    /** What the replays use now; replaced (never changed) when applied updates change it. */
    private volatile Uses uses;
    /** Each root buffer, host buffer, library and event the graph's calls use, with its number of uses (guarded by this). */
    private final Map<Object, Integer> useCounts;
    /** Nodes with changes not applied yet (guarded by this); {@link #pending} says whether there are any. */
    private final List<GraphNode> changedNodes = new ArrayList<>();
    private volatile boolean pending;

    /** The root buffers, host buffers, libraries and events the graph's calls use, and the native pointers of each kind. */
    private static final class Uses {
        final List<Object> resources;
        /** Native pointers of the device and host buffers and libraries among {@link #resources}, for the replay's use tracking. */
        final long[] bufferPointers;
        final long[] hostPointers;
        final long[] libraryPointers;

        Uses(List<Object> resources) {
            this.resources = resources;
            this.bufferPointers = pointersOf(resources, DeviceBuffer.class);
            this.hostPointers = pointersOf(resources, HostBuffer.class);
            this.libraryPointers = pointersOf(resources, Library.class);
        }

        private static long[] pointersOf(List<Object> resources, Class<? extends NativeResource> type) {
            return resources.stream().filter(type::isInstance).mapToLong(r -> type.cast(r).nativePointer()).toArray();
        }
    }

    private Graph(Handle capturedBy, long pointer, long[] info, Map<Object, Integer> useCounts) {
        super(pointer, "Graph", NativeApi::graphDestroy);
        this.capturedBy = capturedBy;
        this.contextId = info[0];
        this.nodeCount = info[1];
        this.useCounts = new IdentityHashMap<>(useCounts);
        this.uses = new Uses(new ArrayList<>(useCounts.keySet()));
    }

    /**
     * The graph {@code pointer} that {@code capturedBy} instantiated; its recorded calls use {@code useCounts}' keys
     * (that many times each), and {@code nodes} were named in its capture.
     */
    static Graph of(Handle capturedBy, long pointer, Map<Object, Integer> useCounts, List<GraphNode> nodes) {
        long[] info;
        try {
            info = NativeApi.graphInfo(pointer);
        } catch (RuntimeException | Error e) {
            NativeObject.freeNow(pointer, NativeApi::graphDestroy, e);
            throw e;
        }
        Graph graph = new Graph(capturedBy, pointer, info, useCounts);
        for (GraphNode node : nodes) {
            node.bind(graph);
        }
        return graph;
    }

    /** The id of the context the graph was captured in. */
    long contextId() {
        return contextId;
    }

    /** Throws if the graph is closed: its changes could never apply. */
    void checkOpen() {
        if (isClosed()) {
            throw new IllegalStateException("the graph is closed; a closed graph cannot change or replay");
        }
    }

    /**
     * Changes to kernel node {@code node} of this graph without a new capture: its scalar arguments, buffers, grid and
     * block, applied by the next {@link #launch(Handle)} (see {@link GraphUpdate}).
     *
     * <pre>{@code
     * g.update(scale).arg(1, 3f).arg(2, nextInput);
     * g.launch(h);
     * }</pre>
     *
     * @param node a node named in this graph's capture ({@link Handle#capturedLaunch()})
     * @return the node's changes, to chain
     * @throws NullPointerException if {@code node} is {@code null}
     * @throws IllegalArgumentException if {@code node} belongs to another graph, or to none (its capture failed)
     * @throws IllegalStateException if the graph is closed
     */
    public GraphUpdate update(GraphNode node) {
        Objects.requireNonNull(node, "node");
        Graph owner = node.graph();
        if (owner != this) {
            throw new IllegalArgumentException(owner == null
                    ? "the node belongs to no graph: its capture failed or has not ended; name nodes in the capture of the graph that changes them"
                    : "the node belongs to another graph (" + owner + "); a graph changes only the nodes named in its own capture");
        }
        checkOpen();
        return new GraphUpdate(this, node);
    }

    /** Notes that {@code node} has changes to apply (the caller holds this graph's lock). */
    void changed(GraphNode node) {
        if (!node.pending) {
            node.pending = true;
            changedNodes.add(node);
            pending = true;
        }
    }

    /**
     * Applies the nodes' pending changes for the replays from now on, with {@code handle} (which each change enters
     * for its call). Buffers an update brings in are added to what replays use before the driver sees them, and the
     * buffers they replaced leave it after, so a replay another thread queues meanwhile holds open whatever the
     * graph's nodes may pass; changes of scalars, grid and block alone leave what replays use as it is. A change
     * that fails (a grid the device refuses, a closed buffer) stays pending, the later ones too: the replay throws
     * until an update corrects it.
     */
    private synchronized void applyChanges(Handle handle, long g) {
        List<Object> during = null;
        for (GraphNode node : changedNodes) {
            for (int i = 0; i < node.applied.length; i++) {
                DeviceBuffer b = node.values.buffer(i);
                DeviceBuffer root = b == null ? null : b.root();
                if (root == node.applied[i]) {
                    continue;
                }
                if (during == null) {
                    during = new ArrayList<>(uses.resources);
                }
                if (root != null && !useCounts.containsKey(root) && !during.contains(root)) {
                    during.add(root);
                }
            }
        }
        if (during != null) {
            uses = new Uses(during);
        }
        int applied = 0;
        try {
            for (; applied < changedNodes.size(); applied++) {
                GraphNode node = changedNodes.get(applied);
                node.values.applyToNode(handle, g, node.node);
                node.pending = false;
                for (int i = 0; i < node.applied.length; i++) {
                    DeviceBuffer b = node.values.buffer(i);
                    DeviceBuffer root = b == null ? null : b.root();
                    if (root != node.applied[i]) {
                        countUse(node.applied[i], -1);
                        countUse(root, 1);
                        node.applied[i] = root;
                    }
                }
            }
        } finally {
            changedNodes.subList(0, applied).clear();
            pending = !changedNodes.isEmpty();
            if (during != null) {
                uses = new Uses(new ArrayList<>(useCounts.keySet()));
            }
        }
    }

    private void countUse(DeviceBuffer root, int change) {
        if (root != null) {
            useCounts.merge(root, change, (a, b) -> a + b == 0 ? null : a + b);
        }
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
     * before; returns without waiting. Replays of one graph run one after another. Changes made with
     * {@link #update(GraphNode)} since the last replay are applied first, for this replay and the later ones.
     *
     * @param handle a handle of the context the graph was captured in
     * @throws NullPointerException if {@code handle} is {@code null}
     * @throws IllegalArgumentException if {@code handle} is bound to another context, or a pending change does not
     *     fit the kernel or the device (it stays pending; nothing is replayed)
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
            if (pending) {
                // Before entering the handle: applying enters it itself, and a nested entry could wait for a stream
                // switch that waits for this thread's outer entry (see capturedBy below).
                applyChanges(handle, g);
            }
            long h = handle.enter();
            try {
                // Only held open (recorded reductions use its workspace), not entered as a call: Handle.enter's
                // guards would make this thread, which holds `handle` entered, wait for a stream switch of
                // capturedBy; when it is `handle` itself (a replay on the capturing handle, the usual case) the
                // switch waits for this thread's entry in turn, and neither returns.
                capturedBy.state.enter();
                try {
                    launchHoldingResources(g, h, handle, uses);
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
    private static void launchHoldingResources(long g, long h, Handle handle, Uses uses) {
        List<Object> resources = uses.resources;
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
            NativeApi.graphLaunch(g, h, uses.bufferPointers, uses.hostPointers, uses.libraryPointers);
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
