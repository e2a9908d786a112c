package dev.cuhandle;

import java.lang.ref.Reference;
import java.util.function.LongConsumer;

/**
 * What every public object that owns a native object shares ({@link Handle}, {@link DeviceBuffer},
 * {@link HostBuffer}, {@link Event}, {@link Library}, {@link Graph}, {@link HostRegistration}): the
 * native object and its liveness ({@link NativeObject}), the entry around each native call made on
 * the object's behalf, and the close. As in netty's split of {@code Native} from its wrappers, the
 * raw calls live in {@link NativeApi} and take pointers; only these objects hand pointers out, and
 * only between {@link #enter()} and {@link #exit()}.
 *
 * <p>The protocol, for every native call: {@code long p = enter(); try { NativeApi.x(p, ...); }
 * finally { exit(); }}. Entering fails once the object is closed; {@link #exit()} keeps the object
 * reachable until the call has returned, so the cleaner never runs during one (rule L2 of
 * docs/design.md), as the JDK's direct buffers fence themselves around each access. A close waits
 * for the calls in flight and returns once the release is done (rule L5).
 */
abstract class NativeResource {
    /** The native object and its liveness; shared by a buffer and the views sliced from it. */
    final NativeObject state;

    /**
     * Owns {@code pointer}: {@code free} releases it exactly once, on {@code close()} or, if the
     * object becomes unreachable unclosed, on the cleaner thread with a warning (rule H7). A
     * subclass does whatever can fail (reading the native object's properties) before it calls
     * this constructor, in a factory method that frees the pointer itself on failure
     * ({@link NativeObject#freeNow}); nothing after this call may fail.
     */
    NativeResource(long pointer, String what, LongConsumer free) {
        this.state = NativeObject.register(this, pointer, what, free);
    }

    /**
     * {@link #NativeResource(long, String, LongConsumer)}, without the warning when {@code quiet}: for
     * objects another one closes (views of a library's variables, which the library closes with itself).
     */
    NativeResource(long pointer, String what, LongConsumer free, boolean quiet) {
        this.state = quiet ? NativeObject.registerQuiet(this, pointer, what, free) : NativeObject.register(this, pointer, what, free);
    }

    /** Shares the native object of another (a view of a buffer, which its buffer owns). */
    NativeResource(NativeObject shared) {
        this.state = shared;
    }

    /**
     * Enters a native call and returns the pointer; pair with {@link #exit()} in a finally block.
     * A subclass may add guards of its own (a handle adds its capture and stream-switch guards).
     *
     * @throws IllegalStateException if the object is closed
     */
    long enter() {
        return state.enter();
    }

    /** Runs a native operation on the entered pointer, within {@link #enter()} and {@link #exit()} (a static method reference allocates nothing). */
    final void call(LongConsumer operation) {
        long pointer = enter();
        try {
            operation.accept(pointer);
        } finally {
            exit();
        }
    }

    /** Leaves a call; keeps this object reachable until here, so the cleaner never runs during a call (L2). */
    final void exit() {
        state.exit();
        Reference.reachabilityFence(this);
    }

    /** The pointer without entering, for an owner that holds the object open otherwise (a graph's replay). */
    final long nativePointer() {
        return state.pointer();
    }

    /**
     * Closes: waits for the calls in flight, releases once, and returns when the release is done,
     * also when another thread closes at the same time. Idempotent. When a close may run at all is
     * decided above this class: every public close goes through {@link Capture#close}, which refuses
     * to run on a thread that captures a graph (rule C1 of docs/design.md; the release waits for the GPU
     * or frees memory), a rule of the capture, which the lifecycle base knows nothing of.
     */
    final void closeNative() {
        state.close();
        Reference.reachabilityFence(this);
    }

    /**
     * Whether the object was closed, or released by the cleaner (for a view of a buffer: whether
     * the buffer it views was). Every later use throws {@link IllegalStateException}.
     *
     * @return {@code true} once closed
     */
    public boolean isClosed() {
        return state.isClosed();
    }
}
