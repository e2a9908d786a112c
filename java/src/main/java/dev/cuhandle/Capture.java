package dev.cuhandle;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * One graph capture of a handle ({@link Handle#capture(Runnable)}): confines it to its thread, refuses
 * calls that cannot be captured (rule C1), and notes the buffers, host buffers, libraries and events the
 * recorded calls use, which the {@link Graph} then keeps reachable and checks open on every replay (L7).
 */
final class Capture {
    /** The capture the current thread runs, for the refusals of calls that wait for the GPU. */
    private static final ThreadLocal<Capture> ON_THIS_THREAD = new ThreadLocal<>();

    final Handle handle;
    final Thread thread;
    /**
     * Root buffers, host buffers, libraries and events used by recorded calls, each with the number of uses noted
     * (identity map; only the capturing thread adds): the graph drops a buffer that updates replaced everywhere.
     */
    private final Map<Object, Integer> used = new IdentityHashMap<>();
    /** Calls this thread entered the handle with during the capture ({@link Handle#enter()} counts them). */
    int calls;
    /** The kernel launch recorded last and {@link #calls} right after it, for {@link Handle#capturedLaunch()}. */
    private KernelLaunch lastLaunch;
    private int lastLaunchAt;
    /** {@link KernelLaunch#generation} right after the launch: a later launch or change of the object shows. */
    private int lastLaunchGeneration;
    /** The node named for {@link #lastLaunch}, returned again until another call. */
    private GraphNode named;
    /** Conditional bodies being recorded (GraphConditionals), whose launches cannot be named. */
    int conditionalDepth;
    /** The nodes named in this capture, which belong to its graph. */
    private final List<GraphNode> nodes = new ArrayList<>();

    private Capture(Handle handle) {
        this.handle = handle;
        this.thread = Thread.currentThread();
    }

    /** Whether this thread is inside {@link Handle#capture}, where event queries would break the capture. */
    static boolean activeOnThisThread() {
        return ON_THIS_THREAD.get() != null;
    }

    /**
     * Throws if the current thread is capturing: {@code operation} waits for the GPU or frees
     * memory, which stream capture forbids (the driver would also invalidate the capture).
     */
    static void refuseOnThisThread(String operation) {
        Capture running = ON_THIS_THREAD.get();
        if (running != null) {
            throw new IllegalStateException(operation + " cannot be called while this thread captures a graph (Handle.capture): it waits for the GPU,"
                    + " asks it something, or allocates or frees memory, which a graph cannot record; call it before or after the capture"
                    + " (the capture goes on)");
        }
    }

    /**
     * Closes {@code resource} ({@code operation} names its close), refused on a thread that captures a graph
     * (rule C1: a release waits for the GPU or frees memory). Every public close goes through here: the rule is
     * the capture's, and the lifecycle base knows nothing of it.
     */
    static void close(NativeResource resource, String operation) {
        refuseOnThisThread(operation);
        resource.closeNative();
    }

    /** The refusal of a call on the capturing handle from another thread. */
    IllegalStateException otherThreadRefused() {
        return new IllegalStateException("the handle is capturing a graph on thread '" + thread.getName() + "'; calls on it from other threads"
                + " are refused until the capture ends (Handle.capture is confined to one thread)");
    }

    /** Notes a root buffer, host buffer, library or event that a recorded call uses. */
    void uses(Object resource) {
        used.merge(resource, 1, Integer::sum);
    }

    /** Notes that {@code launch} was just recorded on {@code handle} if this thread captures there. */
    static void launched(Handle handle, KernelLaunch launch) {
        Capture running = recording(handle);
        if (running != null) {
            running.lastLaunch = launch;
            running.lastLaunchAt = running.calls;
            running.lastLaunchGeneration = launch.generation;
            running.named = null;
        }
    }

    /** The node of the launch recorded last ({@link Handle#capturedLaunch()}), refused unless it was the last call. */
    GraphNode lastLaunch() {
        if (conditionalDepth > 0) {
            throw new IllegalStateException("Handle.capturedLaunch names launches of the graph itself, not of a conditional body"
                    + " (Handle.whileLoop, Handle.ifThen); name it outside the body (the capture goes on)");
        }
        boolean unchanged = lastLaunch != null && lastLaunchAt == calls && lastLaunch.generation == lastLaunchGeneration;
        if (named != null && unchanged) {
            return named;
        }
        if (!unchanged) {
            throw new IllegalStateException("Handle.capturedLaunch names the kernel launch recorded last, right after it; "
                    + (lastLaunch == null ? "this capture recorded no kernel launch yet"
                            : lastLaunchAt != calls ? "another call on the handle followed the last launch"
                                    : "its launch object was launched again or changed since (on another handle, say)")
                    + " (the capture goes on)");
        }
        long h = handle.enter();
        try {
            named = new GraphNode(NativeApi.captureLastNode(h), lastLaunch.copy());
            nodes.add(named);
            lastLaunchAt = calls; // this call's own entry is no other call
            return named;
        } finally {
            handle.exit();
        }
    }

    /**
     * The capture that records this thread's calls on {@code handle}, or null. Only the capturing thread's calls
     * are recorded: another thread's call sees {@code handle.capture} set when it entered the handle before the
     * capture began (the capture waits for it, and its work runs uncaptured before {@code cuStreamBeginCapture}),
     * or when it notes a resource before entering the handle, which then refuses it.
     */
    static Capture recording(Handle handle) {
        Capture running = handle.capture;
        return running != null && running.thread == Thread.currentThread() ? running : null;
    }

    /**
     * Notes {@code resource} for the graph if this thread's call on {@code handle} is recorded. Never from another
     * thread: {@link #used} is not thread-safe, and what that thread's call uses is no part of the graph.
     */
    static void noteUse(Handle handle, Object resource) {
        Capture running = recording(handle);
        if (running != null) {
            running.uses(resource);
        }
    }

    /**
     * Enters {@code resource} (an event, a host buffer) for a call made with {@code handle}, and notes it if
     * this thread's call is recorded ({@link #noteUse}), so that the graph keeps it (L7). A {@link DeviceBuffer}
     * enters through its own {@link DeviceBuffer#enterFor}, which also checks the context and notes the buffer
     * a view was sliced from.
     */
    static long enterFor(Handle handle, NativeResource resource) {
        long pointer = resource.enter();
        noteUse(handle, resource);
        return pointer;
    }

    /** Runs {@code work} on {@code handle} under capture and returns the instantiated graph. */
    static Graph record(Handle handle, Runnable work) {
        Objects.requireNonNull(work, "work");
        if (ON_THIS_THREAD.get() != null) {
            throw new IllegalStateException("this thread is already capturing a graph (Handle.capture); captures cannot be nested");
        }
        Capture capture = new Capture(handle);
        long h = start(handle, capture); // held for the whole capture: a close on another thread waits for it
        try {
            ON_THIS_THREAD.set(capture);
            long graph;
            try {
                work.run();
            } catch (Throwable failure) {
                end(handle, h, failure);
                throw failure;
            }
            try {
                graph = NativeApi.captureEnd(h); // ends and restores on failure too
            } finally {
                ON_THIS_THREAD.remove();
                handle.capture = null;
            }
            return Graph.of(handle, graph, capture.uses(), capture.nodes);
        } finally {
            capture.lastLaunch = null;
            KernelLaunch.releaseForThread(); // kept for capturedLaunch() while the capture ran (Handle.launch)
            handle.exit();
        }
    }

    /**
     * Enters {@code handle} and begins {@code capture} on it once the calls other threads began have returned.
     * Under the handle's stream-switch lock, taken before entering as a switch takes it: a switch holds its own
     * entry while it waits for the other calls, so a capture start waiting at the same time would wait for the
     * switch and the switch for it, for ever.
     */
    private static long start(Handle handle, Capture capture) {
        synchronized (handle.streamSwitch) {
            long h = handle.enter();
            try {
                synchronized (handle) {
                    if (handle.capture != null) {
                        throw new IllegalStateException("the handle is already capturing a graph on thread '" + handle.capture.thread.getName() + "'");
                    }
                    handle.capture = capture;
                }
                try {
                    // From here other threads' new calls are refused; calls they began earlier may
                    // still read the handle's stream, so wait for them before switching it.
                    handle.awaitOtherCalls();
                    NativeApi.captureBegin(h);
                } catch (RuntimeException | Error e) {
                    handle.capture = null;
                    throw e;
                }
                return h;
            } catch (RuntimeException | Error e) {
                handle.exit();
                throw e;
            }
        }
    }

    /** Ends a failed capture, destroying what it recorded; a failure to end is added to {@code failure}. */
    private static void end(Handle handle, long h, Throwable failure) {
        try {
            NativeApi.captureAbort(h);
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
        } finally {
            ON_THIS_THREAD.remove();
            handle.capture = null;
        }
    }

    /** What the recorded calls use, with the number of uses each. */
    private Map<Object, Integer> uses() {
        return used;
    }
}
