package dev.cuhandle;

import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongConsumer;

/**
 * A cuBLAS-style handle: bound to one driver context, with a default stream, usable from any thread
 * (rules H1-H9 of docs/design.md). No operation changes which context is current on the calling
 * thread. Close it (try-with-resources); an unreachable unclosed handle is released by a cleaner
 * with a warning.
 *
 * <pre>{@code
 * try (Handle h = Handle.create();                  // the current context, else the selected device's primary
 *      DeviceBuffer x = h.upload(xs);
 *      DeviceBuffer y = h.upload(ys)) {
 *     Blas.saxpy(h, n, 2f, x, 1, y, 1);             // queued on the handle's own stream
 *     y.download(ys);                               // waits for it, in stream order
 * }                                                 // closes the buffers, then releases the context
 * }</pre>
 *
 * <p>{@link #create(int)} binds to a device's primary context, {@link #wrap(long)} borrows a context
 * made elsewhere.
 *
 * <p>Its copies between Java arrays and the device ({@code upload}, {@code copyToDevice},
 * {@code copyToHost} and their asynchronous forms) run as those of {@link DeviceBuffer} do: see
 * <a href="DeviceBuffer.html#arrays">Copies between Java arrays and the device</a> and
 * <a href="DeviceBuffer.html#async">Asynchronous array copies</a>.
 */
public final class Handle extends HandleTransfers implements AutoCloseable {
    private final long rawContext;
    private final long contextId;
    private final Device device;
    private final boolean ownsPrimaryContext;
    private final int partitionSms;
    /** Futures of this handle not yet settled (Completions keeps it): close() skips their scan at 0. */
    final AtomicInteger pendingFutures = new AtomicInteger();
    /** The graph capture in progress ({@link #capture(Runnable)}), or null. */
    volatile Capture capture;
    /** The thread switching the handle's stream ({@link #setStream}, {@link #resetStream}), or null: other threads' calls wait. */
    private volatile Thread switchingStream;
    /** One stream switch, or a capture's start ({@link Capture}), at a time; taken before entering, so that a waiting thread holds no call open. */
    final Object streamSwitch = new Object();

    /** Releases a native handle: the cleaner's action. */
    private static final LongConsumer DESTROY = new Destroy();

    /**
     * {@link #DESTROY}'s class. A class, not {@code NativeApi::handleDestroy}: the first method reference of a JVM costs
     * milliseconds of {@code java.lang.invoke} set-up, and this runs in the first {@code Handle.create} (issue 35).
     */
    private static final class Destroy implements LongConsumer {
        @Override
        public void accept(long handle) {
            NativeApi.handleDestroy(handle);
        }
    }

    private Handle(long[] created, Device device) {
        super(created[0], "Handle", DESTROY);
        this.rawContext = created[1];
        this.contextId = created[2];
        this.ownsPrimaryContext = created[4] != 0;
        this.partitionSms = (int) created[5];
        this.device = device;
    }

    /** How many values a native create writes into the array it is given: its pointer and five properties. */
    static final int CREATED_VALUES = 6;

    /**
     * The handle of a native handle just created: {@code created} is its pointer followed by its properties (raw
     * context, context id, device ordinal, 1 if it retains the primary context, SMs of its partition), in one
     * native call. It owns the pointer from here (also when this fails).
     */
    private static Handle of(long[] created) {
        Device d;
        try {
            d = Cuda.device((int) created[3]);
        } catch (RuntimeException | Error e) {
            // Never registered: released here, not by the cleaner with a misleading leak warning.
            NativeObject.freeNow(created[0], DESTROY, e);
            throw e;
        }
        return new Handle(created, d);
    }

    /**
     * Creates a handle like {@code cublasCreate}: binds to the context current on this thread (rule H1;
     * retained if it is a primary context, borrowed otherwise), or, with none current, to the primary context
     * of {@link Cuda#getDevice()} (rule H2), which it retains. The caller's current context is not changed.
     *
     * @return a new handle; close it
     * @throws CudaException if the driver cannot be loaded or initialised, the selected device does not exist
     *     ({@link CudaError#INVALID_DEVICE}), or the current context is unusable
     */
    public static Handle create() {
        loadForCreate();
        long[] created = new long[CREATED_VALUES];
        NativeApi.handleCreateCurrent(Cuda.getDevice(), created);
        return Handle.of(created);
    }

    /**
     * Creates a handle bound to (and retaining) the primary context of {@code device} (rule H3). The caller's
     * current context is not changed.
     *
     * @param device the device number, from 0 to {@link Cuda#deviceCount()} - 1
     * @return a new handle; close it to release the primary context
     * @throws CudaException if the device does not exist ({@link CudaError#INVALID_DEVICE}), or the driver
     *     cannot be loaded, initialised or fails
     */
    public static Handle create(int device) {
        loadForCreate();
        long[] created = new long[CREATED_VALUES];
        NativeApi.handleCreateDevice(device, created);
        return Handle.of(created);
    }

    /**
     * The library, for a create that retains or binds a context (the driver's initialisation starts on
     * {@link DriverStart}'s thread when this loads it), and the classes {@link #of} initialised after the native
     * call (the cleaner and its thread, Cuda's empty device cache), initialised first: on a process's first create
     * the caller does this while the driver initialises, where it would wait. The device's properties are still
     * read after the native call, which needs the driver.
     */
    private static void loadForCreate() {
        DriverStart.ensureLoaded();
        NativeObject.initialise();
        Cuda.initialise();
    }

    /**
     * Creates a handle on an SM partition ({@link Device#splitSms(int)}): its work runs only on the partition's SMs,
     * so work of other partitions' handles cannot take them, and it keeps the partition alive. Every handle rule holds
     * (docs/design.md, rule P1): any thread may use it, no call leaves a context current, it has a stream of its own.
     * Only {@link #makeCurrent()} is refused, because NVIDIA allows a partition's context to be current on one
     * thread at a time.
     *
     * @param partition a partition of a split that may be closed already
     * @return a new handle; close it
     * @throws NullPointerException if {@code partition} is {@code null}
     * @throws IllegalStateException if the partition was released (its split closed) and nothing kept it alive
     * @throws CudaException if the driver fails
     */
    public static Handle create(SmPartition partition) {
        long p = partition.enter();
        try {
            long[] created = new long[CREATED_VALUES];
            NativeApi.handleCreatePartition(p, created);
            return Handle.of(created);
        } finally {
            partition.exit();
        }
    }

    /**
     * The streaming multiprocessors of the SM partition the handle runs on ({@link #create(SmPartition)}).
     *
     * @return the partition's SM count, or 0 for a handle of an ordinary context
     */
    public int partitionSms() {
        return partitionSms;
    }

    /**
     * Binds to an existing context without owning it (H3): the caller keeps it alive for as long as the handle
     * and its buffers are used, as cuBLAS requires of the context current at {@code cublasCreate}.
     *
     * <p>A context destroyed under the handle anyway is detected on a best-effort basis only. Before every use
     * the handle asks the driver for the context's id ({@code cuCtxGetId}); on the drivers measured (580,
     * CUDA 13.0) a destroyed context answers {@code CUDA_ERROR_CONTEXT_IS_DESTROYED} and every later call
     * throws a {@link CudaException}. NVIDIA documents that a destroyed context must not be passed to later
     * driver calls (undefined behaviour, {@code cuCtxDestroy}), so another driver may behave otherwise. A
     * primary context reset under a handle that retains it ({@link #create()}, {@link #create(int)}) is
     * different: a reset does not release the retained context, which stays a context the driver knows, so
     * asking for its id is defined; that the id changes with the reset, which the handle detects, was
     * measured on driver 580 (docs/handles.md, section 1).
     *
     * <p>Values that cannot be a driver context (0, negative, inside the first page of memory,
     * not 8-byte aligned) are refused before the driver sees them. A value that looks like a
     * context but is not one the driver created (a stale or random address) cannot be checked
     * without the driver dereferencing it: passing one is undefined behaviour, as in C.
     *
     * @param rawContext a {@code CUcontext} from the driver (JCuda's {@code getNativePointer()}, say)
     * @return a handle bound to that context
     * @throws IllegalArgumentException if {@code rawContext} cannot be a context
     * @throws CudaException if the driver rejects the context (for example, destroyed)
     */
    public static Handle wrap(long rawContext) {
        Native.ensureLoaded();
        long[] created = new long[CREATED_VALUES];
        NativeApi.handleWrap(rawContext, created);
        return Handle.of(created);
    }

    /**
     * The device of the handle's context.
     *
     * @return the device
     */
    public Device device() {
        return device;
    }

    /**
     * The raw {@code CUcontext} the handle is bound to (for interop).
     *
     * @return the context as a number
     */
    public long rawContext() {
        return rawContext;
    }

    /**
     * The context's unique id ({@code cuCtxGetId}), read at creation; a reset or re-created context at the
     * same address has another id (rule H8).
     *
     * @return the context id
     */
    public long contextId() {
        return contextId;
    }

    /**
     * Whether the handle retained its device's primary context (and releases it on close), rather than
     * borrowing a context.
     *
     * @return {@code true} for a retained primary context
     */
    public boolean ownsPrimaryContext() {
        return ownsPrimaryContext;
    }

    /**
     * Enters a call: returns the native pointer; pair with {@link #exit()}. Refuses a call from another
     * thread while this one captures a graph, and waits while the stream is being switched.
     */
    @Override
    long enter() {
        long pointer = state.enter();
        Capture running = capture;
        if (running != null) {
            if (running.thread != Thread.currentThread()) {
                state.exit();
                throw running.otherThreadRefused();
            }
            running.calls++; // for capturedLaunch(): whether the launch recorded last was the last call
        }
        Thread switching = switchingStream;
        if (switching != null && switching != Thread.currentThread()) {
            state.exit();
            awaitStreamSwitch();
            return enter();
        }
        return pointer;
    }

    /**
     * Waits until the stream switch in progress has ended. A switch is short (it synchronises the
     * stream being left), and the call that waits here holds nothing open meanwhile.
     */
    private void awaitStreamSwitch() {
        if (switchingStream != null) { // checked first: the common case makes no lambda
            Parking.until(() -> switchingStream == null, this);
        }
    }

    /**
     * Runs a stream switch with no other call on this handle in flight: calls that began before
     * finish first and calls that begin meanwhile wait, so every call's work and the use it notes
     * on memory (rule L3) go to one stream, the old or the new.
     */
    private void switchStream(java.util.function.LongConsumer operation) {
        synchronized (streamSwitch) {
            long h = enter();
            try {
                switchingStream = Thread.currentThread();
                state.awaitCallsAtMost(1);
                operation.accept(h);
            } finally {
                switchingStream = null;
                exit();
            }
        }
    }

    /** Waits until no call but the caller's own is in flight (see {@link Capture}). */
    void awaitOtherCalls() {
        state.awaitCallsAtMost(1);
    }

    /**
     * Checks that the handle's context still exists and is the one the handle was bound to (rule H8).
     *
     * @throws IllegalStateException if the handle is closed
     * @throws CudaException if the context was destroyed, replaced or reset
     */
    public void validate() {
        // As stream() does, not through call(LongConsumer): that would need a class or a method reference for this call,
        // and a process's first calls make no method reference (issue 35).
        long h = enter();
        try {
            NativeApi.handleValidate(h);
        } finally {
            exit();
        }
    }

    /**
     * Makes the handle's context current on this thread and leaves it so ({@code cuCtxSetCurrent}), for raw
     * driver calls: the one operation that changes the caller's current context (rule H4).
     *
     * @throws IllegalStateException if the handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void makeCurrent() {
        call(NativeApi::handleMakeCurrent);
    }

    /**
     * Waits for all work queued on the handle's current stream ({@code cuStreamSynchronize}).
     *
     * @throws IllegalStateException if the handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails (including an
     *     asynchronous failure of earlier work, such as a sticky error of a kernel)
     * @throws RuntimeException what the handle's {@link WaitCancellation} says, if it has one and ends the wait
     */
    public void synchronize() {
        Capture.refuseOnThisThread("Handle.synchronize");
        awaitQueuedWorkCancellably();
        long h = enter();
        try {
            NativeApi.handleSynchronize(h);
        } finally {
            exit();
        }
    }

    /**
     * Sends later work to a raw {@code CUstream} of this handle's context (0 or 1 = the legacy
     * default stream), like {@code cublasSetStream}. The previous stream is synchronised first.
     * Calls on this handle from other threads wait while the stream is switched, and those already
     * running finish first.
     *
     * <p>The stream must stay alive until the handle leaves it ({@link #setStream}, {@link #resetStream}
     * or {@link #close()}, each of which synchronises it first): device memory that work on it used
     * is freed in stream order after that work (rule L3 of docs/design.md), so cuhandle may queue on
     * it until then. Work you queue on the stream yourself with raw device addresses is not tracked:
     * synchronise before closing a buffer it uses.
     *
     * <p>{@code CU_STREAM_PER_THREAD} (2) is refused: it is a different stream on every calling
     * thread, so the handle could not order its reductions, {@link #synchronize()} or
     * {@link #close()} on it. Values that cannot be a stream (negative, inside the first page, not
     * 8-byte aligned) are refused before the driver sees them; a stream of another context is
     * refused by asking the driver. A value that looks like a stream but is not a live one cannot
     * be checked: passing one is undefined behaviour, as in C.
     *
     * @param rawStream a {@code CUstream} of this handle's context, or 0
     * @throws IllegalArgumentException if the value cannot be a stream of this context
     * @throws CudaException if the driver rejects the stream
     */
    public void setStream(long rawStream) {
        Capture.refuseOnThisThread("Handle.setStream");
        switchStream(h -> NativeApi.handleSetStream(h, rawStream));
    }

    /**
     * Sends later work back to the handle's default non-blocking stream (rule H9), after synchronising
     * the current one.
     *
     * @throws IllegalStateException if the handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public void resetStream() {
        Capture.refuseOnThisThread("Handle.resetStream");
        switchStream(NativeApi::handleResetStream);
    }

    /**
     * The raw {@code CUstream} work goes to: the one given to {@link #setStream(long)}, or the handle's
     * own non-blocking stream (rule H9). No other live handle uses that stream: it is leased on first
     * use and goes back to its context's free list when the handle is closed, to be reused by later
     * handles, never destroyed (the driver keeps a destroyed stream's device memory cached while the
     * context lives), so a context holds at most as many as handles were ever alive at once.
     *
     * @return the stream as a number (0 or 1 for the legacy default stream)
     * @throws IllegalStateException if the handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public long stream() {
        long h = enter();
        try {
            return NativeApi.handleStream(h);
        } finally {
            exit();
        }
    }

    /**
     * Launches {@code kernel} on this handle's stream with {@code args}, each a {@link DeviceBuffer} (passed
     * as its device address), Integer, Long, Float, Double, Short, Byte or a {@link java.nio.ByteBuffer} (a
     * structure by value, see {@link KernelLaunch#arg(int, java.nio.ByteBuffer)}), in parameter order. Returns
     * without waiting for the kernel. Convenient; for hot loops use a reusable {@link KernelLaunch}, which
     * allocates nothing per launch.
     *
     * @param kernel the kernel, of an open library
     * @param grid the grid size in blocks
     * @param block the block size in threads
     * @param sharedBytes dynamic shared memory per block, in bytes
     * @param args the kernel's arguments, at most {@link KernelLaunch#MAX_ARGS}
     * @throws NullPointerException if {@code kernel}, {@code grid}, {@code block} or {@code args} is
     *     {@code null}
     * @throws IllegalArgumentException if an argument has an unsupported type or is {@code null}, the
     *     arguments do not match the kernel's parameters (where they are known: see {@link Kernel}), the grid,
     *     block or shared memory exceed the device's limits, or a buffer belongs to another context
     * @throws IllegalStateException if the handle, the kernel's library or a buffer argument is closed
     * @throws CudaException if the context was destroyed or reset, or the driver refuses the launch
     */
    public void launch(Kernel kernel, Dim3 grid, Dim3 block, int sharedBytes, Object... args) {
        KernelLaunch launch = KernelLaunch.forThread(kernel);
        launch.grid(grid.x, grid.y, grid.z).block(block.x, block.y, block.z).sharedBytes(sharedBytes);
        try {
            launch.setArgs(args);
            launch.launch(this);
        } finally {
            // The thread's launch object must not keep the kernel, its library or buffers alive; under a capture it
            // keeps them until the capture ends, for capturedLaunch() to copy them.
            if (Capture.recording(this) == null) {
                launch.release();
            }
        }
    }

    /**
     * Launches a prepared launch object on this handle's stream; same as
     * {@link KernelLaunch#launch(Handle) launch.launch(this)}.
     *
     * @param launch the launch, with kernel, shape and arguments set
     * @throws NullPointerException if {@code launch} is {@code null}
     * @throws IllegalArgumentException if the launch does not fit the kernel or the device, or a buffer
     *     argument belongs to another context
     * @throws IllegalStateException if the handle, the kernel's library or a buffer argument is closed
     * @throws CudaException if the context was destroyed or reset, or the driver refuses the launch
     */
    public void launch(KernelLaunch launch) {
        launch.launch(this);
    }

    /**
     * Records this handle's calls made by {@code work} into a CUDA graph instead of running them, for
     * replay with {@link Graph#launch(Handle)} at a fraction of the launch cost (stream capture,
     * {@code cuStreamBeginCapture}). BLAS calls that write to device memory, kernel launches,
     * {@link #memset(DeviceBuffer, int)}, {@link #copy(DeviceBuffer, DeviceBuffer)} and device-result
     * reductions are recorded; none of them runs now.
     *
     * <p>The capture runs on a private stream of the context (never the handle's own stream, which frees of
     * memory allocated on it reach in stream order from any thread), in the driver's thread-local mode, and
     * is confined to the calling thread:
     * calls on this handle from other threads are refused with an {@link IllegalStateException} until
     * it ends, and it starts once the calls other threads already began have returned. Calls that cannot
     * be recorded are refused, on this thread and before the driver sees them, with an
     * {@link IllegalStateException} that names them, and the capture goes on (rule C1 of docs/design.md):
     * {@link #synchronize()}, {@link #whenDone()}, {@link #setStream(long)}, {@link #resetStream()},
     * {@link #allocate(long)} and {@code upload}, {@link #allocateHost(long)}, {@link #trimMemory()}, copies
     * between the device and Java arrays or ByteBuffers, BLAS reductions that return their value,
     * {@link Event#synchronize()}, {@link Event#query()}, {@link HostRegistration#register(Handle, java.nio.ByteBuffer)},
     * and closing a handle, buffer, host buffer, host registration, event, library or graph. Buffers and libraries
     * must therefore exist before the capture. Nothing another thread does (frees, the cleaner, other handles'
     * captures) affects this one. Asynchronous copies
     * with {@link HostBuffer}s are recorded; their futures are complete at once. Another handle used inside
     * {@code work} runs its calls at once, uncaptured.
     *
     * <p>The graph keeps what it recorded (rule L7): every {@link DeviceBuffer}, {@link HostBuffer},
     * {@link Library} and {@link Event} its calls used stays reachable while the graph is, a replay after one
     * of them was closed is an {@link IllegalStateException}, and memory released while replays are queued
     * is reused only after them.
     *
     * <p>If {@code work} throws, or ending the capture fails, the capture is ended, what was recorded
     * is destroyed and the exception propagates; the handle is usable afterwards.
     *
     * <p>A kernel launch that {@code work} names with {@link #capturedLaunch()} right after making it can
     * change its arguments, grid and block later without a new capture ({@link Graph#update(GraphNode)}). Inside
     * {@code work}, {@link #whileLoop} and {@link #ifThen} record loops and branches that the GPU decides.
     *
     * @param work the calls to record, made on this thread
     * @return the instantiated graph; close it
     * @throws NullPointerException if {@code work} is {@code null}
     * @throws IllegalStateException if the handle is closed or already capturing, this thread is
     *     capturing with another handle, or {@code work} made a call that cannot be captured
     * @throws CudaException if the driver refuses the capture or the graph (for example a call the
     *     driver cannot capture, {@link CudaError#STREAM_CAPTURE_INVALIDATED})
     */
    public Graph capture(Runnable work) {
        return track(Capture.record(this, work));
    }

    /**
     * Records a loop that runs on the GPU into the graph this thread is capturing on this handle (a CUDA 12.4+
     * conditional WHILE node): the calls {@code body} makes on this handle are recorded as the loop's body, which
     * runs once and then again while the condition the body sets ({@link GraphLoop#continueWhile(GraphCondition)})
     * holds, decided on the GPU after each iteration, at most {@code maxIterations} times per run of the graph; no
     * iteration comes back to the host. {@code iterations} receives, per run, the number of iterations made (an
     * {@code int} at its start; a memset recorded before the loop resets it).
     *
     * <pre>{@code
     * try (Graph solve = h.capture(() -> h.whileLoop(500, iterations, loop -> {
     *         h.launch(jacobiStep, grid, block, 0, a, b, x, xNext, residual, n);
     *         h.launch(jacobiStep, grid, block, 0, a, b, xNext, x, residual, n);
     *         loop.continueWhile(GraphCondition.floatAbove(residual, 1e-6f));
     *     }))) {
     *     solve.launch(h);    // up to 500 double steps, until the residual is at most 1e-6
     * }
     * }</pre>
     *
     * <p>The same calls are refused in the body as in the capture (rule C1); {@link #capturedLaunch()} is refused
     * inside a body. Loops and {@link #ifThen(GraphCondition, Runnable) IF}s nest. An exception from {@code body}
     * ends the body and propagates (the capture then fails as with any exception from its work).
     *
     * @param maxIterations the most iterations one run of the loop makes, at least 1
     * @param iterations a buffer of the handle's context of at least 4 bytes, for the iteration count
     * @param body records the loop's body on this handle and may set its condition
     * @throws NullPointerException if {@code iterations} or {@code body} is {@code null}
     * @throws IllegalArgumentException if {@code maxIterations} is below 1 or {@code iterations} has fewer than 4 bytes
     * @throws IllegalStateException if this thread is not capturing on this handle
     * @throws CudaException with {@link CudaError#NOT_SUPPORTED} if the driver predates CUDA 12.4 (the message names
     *     the version needed and the driver's), or if the driver fails
     */
    public void whileLoop(int maxIterations, DeviceBuffer iterations, java.util.function.Consumer<GraphLoop> body) {
        Objects.requireNonNull(iterations, "iterations");
        Objects.requireNonNull(body, "body");
        if (maxIterations < 1) {
            throw new IllegalArgumentException("maxIterations is " + maxIterations + "; a loop makes at least 1 iteration");
        }
        if (iterations.byteLength() < 4) {
            throw new IllegalArgumentException("the iteration count is an int (4 bytes); the buffer has " + iterations.byteLength() + " bytes");
        }
        GraphConditionals.whileLoop(this, maxIterations, iterations, body);
    }

    /**
     * Records a body that runs on the GPU only where {@code condition} holds into the graph this thread is capturing
     * on this handle (a CUDA 12.4+ conditional IF node). The condition is read on the GPU after the work recorded
     * before this call, on every run of the graph.
     *
     * @param condition what decides whether the body runs
     * @param body records the body's calls on this handle
     * @throws NullPointerException if {@code condition} or {@code body} is {@code null}
     * @throws IllegalStateException if this thread is not capturing on this handle
     * @throws CudaException with {@link CudaError#NOT_SUPPORTED} if the driver predates CUDA 12.4, or if the driver fails
     */
    public void ifThen(GraphCondition condition, Runnable body) {
        Objects.requireNonNull(condition, "condition");
        Objects.requireNonNull(body, "body");
        GraphConditionals.ifThen(this, condition, body);
    }

    /**
     * Names the kernel launch this thread's capture on this handle recorded last, so that the graph can
     * change its arguments, grid and block later without a new capture ({@link Graph#update(GraphNode)}).
     * Call it inside {@link #capture(Runnable)}'s {@code work}, right after the launch ({@link #launch(Kernel,
     * Dim3, Dim3, int, Object...)} or {@link KernelLaunch#launch(Handle)}), before any other call on this
     * handle; called again with no call in between it returns the same node. The node belongs to the graph
     * the capture returns.
     *
     * <pre>{@code
     * GraphNode[] step = new GraphNode[1];
     * try (Graph g = h.capture(() -> {
     *         h.launch(axpy, grid, block, 0, n, 0.5f, x, y);
     *         step[0] = h.capturedLaunch();
     *     })) {
     *     g.update(step[0]).arg(1, 0.25f).arg(3, otherY);   // applied by the next launch
     *     g.launch(h);
     * }
     * }</pre>
     *
     * @return the launch's node in the graph being captured
     * @throws IllegalStateException if this thread is not capturing on this handle, no kernel launch was
     *     recorded yet, or another call on this handle followed the last launch (rule C1: refused, the
     *     capture goes on)
     * @throws CudaException if the driver fails
     */
    public GraphNode capturedLaunch() {
        Capture running = Capture.recording(this);
        if (running == null) {
            throw new IllegalStateException("Handle.capturedLaunch names a kernel launch recorded by this thread's capture on this handle (Handle.capture),"
                    + " and there is none running; call it inside the capture's work, right after the launch");
        }
        return running.lastLaunch();
    }

    /**
     * Creates an event of this handle's context ({@code cuEventCreate}, timing enabled), for timing and
     * ordering.
     *
     * @return a new event; close it
     * @throws IllegalStateException if the handle is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public Event createEvent() {
        long h = enter();
        try {
            return track(new Event(this, NativeApi.eventCreate(h)));
        } finally {
            exit();
        }
    }

    /**
     * A future that completes when the GPU has finished the work queued on this handle's stream before this
     * call; returns at once. It completes exceptionally with a {@link CudaException} if that work faults
     * (a sticky error of the context) or the context is destroyed. Closing the handle completes it.
     *
     * <p>The future is completed by a cuhandle thread that hands the completion to a dispatch executor: the
     * continuations you attach without {@code Async} run there (never on a CUDA driver thread), so they may
     * call cuhandle, but a slow one delays nothing else only because the executor adds threads; use the
     * {@code *Async} variants with your own executor for long work.
     *
     * <p>A thread that waits for this future itself ({@code join()}, {@code get()}) first polls the GPU for up to
     * 1 ms, as {@code cuStreamSynchronize} spins, and completes the future on its own thread as soon as the work
     * is done: waiting then costs about what {@link #synchronize()} costs. The continuations attached by then run
     * on that waiting thread. Futures derived from this one ({@code thenApply} ...) do not poll.
     *
     * @return a future of the work queued so far
     * @throws IllegalStateException if the handle is closed, or this thread is capturing a graph (nothing of
     *     the capture runs until the graph is replayed: wait for the replay instead)
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public CompletableFuture<Void> whenDone() {
        Capture.refuseOnThisThread("Handle.whenDone");
        long h = enter();
        try {
            return Completions.track(this, h, () -> { });
        } finally {
            exit();
        }
    }

    /**
     * Makes the work queued on this handle from now on wait until {@code event}'s recorded work is done
     * ({@code cuStreamWaitEvent}), without blocking the calling thread: orders one handle's work after
     * another's (the event may belong to another context, even another device). An event never recorded
     * imposes no wait.
     *
     * @param event the event to wait for
     * @throws NullPointerException if {@code event} is {@code null}
     * @throws IllegalStateException if the handle or the event is closed
     * @throws CudaException if a context was destroyed or reset, or the driver fails
     */
    public void waitFor(Event event) {
        Objects.requireNonNull(event, "event");
        long h = enter();
        try {
            long e = event.enterFor(this);
            try {
                NativeApi.handleWaitEvent(h, e);
            } finally {
                event.exit();
            }
        } finally {
            exit();
        }
    }

    /**
     * Closes the handle (H6): waits for calls in flight on other threads, synchronises its stream (its own
     * work only: no other handle shares it), frees what it owns, gives the stream back to its context for
     * later handles and releases the primary-context retain once. Idempotent; later calls throw
     * {@link IllegalStateException}. Futures of {@link #whenDone()} and of the asynchronous copies of
     * {@link HostBuffer}s whose work was on the handle's stream are completed (exceptionally if the work
     * failed) before it returns. An asynchronous copy of a Java array holds the handle open until its last
     * chunk is done, so the close waits for it; its future completes just after.
     */
    @Override
    public void close() {
        awaitQueuedWorkBeforeClose();
        Capture.close(this, "Handle.close");
        Completions.settleAll(this); // its stream was synchronised: complete its futures now
    }

    @Override
    public String toString() {
        return "Handle[context 0x" + Long.toHexString(rawContext) + " id " + contextId + ", device " + device.ordinal()
                + (ownsPrimaryContext ? ", primary" : ", borrowed") + (isClosed() ? ", closed]" : "]");
    }
}
