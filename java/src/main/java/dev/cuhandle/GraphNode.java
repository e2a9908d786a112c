package dev.cuhandle;

/**
 * A kernel launch recorded in a {@link Graph}, named during the capture with {@link Handle#capturedLaunch()},
 * whose arguments, grid and block the graph can change without a new capture ({@link Graph#update(GraphNode)}).
 * It belongs to the graph its capture returned; a node of a capture that failed belongs to none.
 *
 * <pre>{@code
 * GraphNode[] scale = new GraphNode[1];
 * Graph g = h.capture(() -> {
 *     h.launch(axpy, grid, block, 0, y, x, 2f, n);
 *     scale[0] = h.capturedLaunch();
 * });
 * g.update(scale[0]).arg(2, 3f);   // y += 3 * x from the next replay on
 * }</pre>
 */
public final class GraphNode {
    /** The driver's node ({@code CUgraphNode}) in the graph's template. */
    final long node;
    /** The values the node gets from the next replay on: the captured launch's, changed by updates (guarded by the graph). */
    final KernelLaunch values;
    /** Per argument, the root of the buffer the executable graph's node passes now (guarded by the graph). */
    final DeviceBuffer[] applied;
    /** Whether {@link #values} differ from what the executable graph has (guarded by the graph). */
    boolean pending;
    private volatile Graph graph;

    GraphNode(long node, KernelLaunch values) {
        this.node = node;
        this.values = values;
        this.applied = new DeviceBuffer[values.argCount()];
        for (int i = 0; i < applied.length; i++) {
            DeviceBuffer b = values.buffer(i);
            applied[i] = b == null ? null : b.root();
        }
    }

    /** Makes this node one of {@code owner}'s, once its capture returned it. */
    void bind(Graph owner) {
        graph = owner;
    }

    /** The graph this node belongs to, or null (its capture failed or runs still). */
    Graph graph() {
        return graph;
    }

    /**
     * The kernel the node launches.
     *
     * @return the kernel
     */
    public Kernel kernel() {
        return values.kernel();
    }

    @Override
    public String toString() {
        return "GraphNode[" + values.kernel().name() + ", " + values.argCount() + " arguments" + (graph == null ? ", no graph]" : "]");
    }
}
