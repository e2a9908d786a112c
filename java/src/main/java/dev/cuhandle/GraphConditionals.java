package dev.cuhandle;

import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;

/**
 * Conditional nodes in a captured graph (CUDA 12.4+ IF and WHILE, docs/guide/graphs.md): the node is added to the
 * capture's graph after what was recorded so far, its body is captured from the calls the body code makes, and a
 * built-in kernel recorded into the graph sets its condition on the GPU ({@code cudaGraphSetConditional}).
 *
 * <p>The setter kernel is PTX written here by hand, loaded once per process and linked by the driver's JIT, which
 * resolves {@code cudaGraphSetConditional} (a device-runtime builtin of the 12.3+ headers) when it loads the module:
 * neither the build's nvcc 11.8 nor NVRTC is needed, and every driver that has conditional nodes has the builtin.
 * One thread runs it: it reads the condition's value (an int, or a float or double against a threshold), zeroes it
 * where {@link GraphCondition#thenZero()} asked, counts the iteration of a loop and stops it at its maximum, and sets
 * the condition.
 */
final class GraphConditionals {
    /** {@code CUgraphConditionalNodeType}: IF, WHILE. */
    private static final int IF = 0;
    private static final int WHILE = 1;
    private static final String SETTER = "cuh_graph_set_condition";
    /** The setter: {@code (condition, counter or 0, max iterations, mode, value or 0, threshold)}. */
    private static final String SETTER_PTX =
            ".version 7.0\n"
            + ".target sm_70\n"
            + ".address_size 64\n"
            + "\n"
            + ".extern .func cudaGraphSetConditional\n"
            + "(\n"
            + "  .param .b64 cudaGraphSetConditional_param_0,\n"
            + "  .param .b32 cudaGraphSetConditional_param_1\n"
            + ")\n"
            + ";\n"
            + "\n"
            + ".visible .entry cuh_graph_set_condition(\n"
            + "  .param .u64 cuh_condition,\n"
            + "  .param .u64 cuh_counter,\n"
            + "  .param .u32 cuh_max,\n"
            + "  .param .u32 cuh_mode,\n"
            + "  .param .u64 cuh_value,\n"
            + "  .param .f64 cuh_threshold\n"
            + ")\n"
            + "{\n"
            + "  .reg .pred %p<6>;\n"
            + "  .reg .b32 %r<8>;\n"
            + "  .reg .b64 %rd<8>;\n"
            + "  .reg .f32 %f<2>;\n"
            + "  .reg .f64 %fd<4>;\n"
            + "\n"
            + "  ld.param.u64 %rd1, [cuh_condition];\n"
            + "  ld.param.u64 %rd2, [cuh_counter];\n"
            + "  ld.param.u32 %r1, [cuh_max];\n"
            + "  ld.param.u32 %r2, [cuh_mode];\n"
            + "  ld.param.u64 %rd3, [cuh_value];\n"
            + "  ld.param.f64 %fd1, [cuh_threshold];\n"
            + "  and.b32 %r6, %r2, 16;\n" // GraphCondition.ZERO_AFTER_READ
            + "  setp.ne.u32 %p5, %r6, 0;\n"
            + "  and.b32 %r2, %r2, 15;\n"
            + "  mov.u32 %r7, 0;\n"
            + "  mov.u64 %rd6, 0;\n"
            + "  mov.u32 %r3, 1;\n"
            + "  setp.eq.u32 %p1, %r2, 1;\n"
            + "  @!%p1 bra NOT_INT;\n"
            + "  cvta.to.global.u64 %rd4, %rd3;\n"
            + "  ld.global.u32 %r4, [%rd4];\n"
            + "  @%p5 st.global.u32 [%rd4], %r7;\n"
            + "  setp.ne.u32 %p2, %r4, 0;\n"
            + "  selp.u32 %r3, 1, 0, %p2;\n"
            + "  bra.uni COUNT;\n"
            + "NOT_INT:\n"
            + "  setp.eq.u32 %p1, %r2, 2;\n"
            + "  @!%p1 bra NOT_FLOAT;\n"
            + "  cvta.to.global.u64 %rd4, %rd3;\n"
            + "  ld.global.f32 %f1, [%rd4];\n"
            + "  @%p5 st.global.u32 [%rd4], %r7;\n"
            + "  cvt.f64.f32 %fd2, %f1;\n"
            + "  setp.gt.f64 %p2, %fd2, %fd1;\n"
            + "  selp.u32 %r3, 1, 0, %p2;\n"
            + "  bra.uni COUNT;\n"
            + "NOT_FLOAT:\n"
            + "  setp.eq.u32 %p1, %r2, 3;\n"
            + "  @!%p1 bra COUNT;\n"
            + "  cvta.to.global.u64 %rd4, %rd3;\n"
            + "  ld.global.f64 %fd3, [%rd4];\n"
            + "  @%p5 st.global.u64 [%rd4], %rd6;\n"
            + "  setp.gt.f64 %p2, %fd3, %fd1;\n"
            + "  selp.u32 %r3, 1, 0, %p2;\n"
            + "COUNT:\n"
            + "  setp.eq.u64 %p3, %rd2, 0;\n"
            + "  @%p3 bra SET;\n"
            + "  cvta.to.global.u64 %rd5, %rd2;\n"
            + "  ld.global.u32 %r5, [%rd5];\n"
            + "  add.u32 %r5, %r5, 1;\n"
            + "  st.global.u32 [%rd5], %r5;\n"
            + "  setp.ge.u32 %p4, %r5, %r1;\n"
            + "  selp.u32 %r3, 0, %r3, %p4;\n"
            + "SET:\n"
            + "  {\n"
            + "  .param .b64 param0;\n"
            + "  st.param.b64 [param0+0], %rd1;\n"
            + "  .param .b32 param1;\n"
            + "  st.param.b32 [param1+0], %r3;\n"
            + "  call.uni cudaGraphSetConditional, (param0, param1);\n"
            + "  }\n"
            + "  ret;\n"
            + "}\n";
    private static Kernel setter;

    private GraphConditionals() {}

    /** The setter kernel, its library loaded on first use and kept for the process. */
    private static synchronized Kernel setter() {
        if (setter == null) {
            byte[] text = SETTER_PTX.getBytes(StandardCharsets.US_ASCII);
            byte[] image = java.util.Arrays.copyOf(text, text.length + 1); // PTX is passed NUL-terminated
            setter = Library.load(image).kernel(SETTER);
        }
        return setter;
    }

    /** The capture this thread runs on {@code handle}, or an IllegalStateException naming {@code operation}. */
    private static Capture capturing(Handle handle, String operation) {
        Capture running = Capture.recording(handle);
        if (running == null) {
            throw new IllegalStateException(operation + " records a conditional node into a graph; call it inside Handle.capture's work, on the"
                    + " capturing thread and handle");
        }
        return running;
    }

    /** Records a WHILE loop of at most {@code maxIterations}, its count in {@code iterations}, its body from {@code body}. */
    static void whileLoop(Handle handle, int maxIterations, DeviceBuffer iterations, Consumer<GraphLoop> body) {
        Capture capture = capturing(handle, "Handle.whileLoop");
        long condition = createCondition(handle, 1); // refuses an old driver first; the body runs once, then while the setter says so
        Kernel set = setter();
        // The count starts at 0 on every run of the loop; the setter adds one per iteration.
        handle.memset(iterations.slice(0, 4), 0);
        // The condition starts at 1 on every run of the loop, not only on each launch of the graph
        // (CU_GRAPH_COND_ASSIGN_DEFAULT): a loop nested in another ended with it 0, and would
        // otherwise be skipped from the outer loop's second iteration on (seen on the H200).
        launchSetter(handle, set, condition, null, maxIterations, GraphCondition.TRUE);
        begin(handle, capture, WHILE, condition);
        GraphLoop loop = new GraphLoop(maxIterations);
        Throwable failure = null;
        try {
            body.accept(loop);
            launchSetter(handle, set, condition, iterations, maxIterations, loop.condition());
        } catch (Throwable t) {
            failure = t;
            throw t;
        } finally {
            end(handle, capture, failure);
        }
    }

    /** Records an IF node whose body, from {@code body}, runs where {@code condition} holds when the graph reaches it. */
    static void ifThen(Handle handle, GraphCondition condition, Runnable body) {
        Capture capture = capturing(handle, "Handle.ifThen");
        long handleOfCondition = createCondition(handle, 0); // refuses an old driver first
        Kernel set = setter();
        launchSetter(handle, set, handleOfCondition, null, 0, condition); // before the node, after the work that computes the value
        begin(handle, capture, IF, handleOfCondition);
        Throwable failure = null;
        try {
            body.run();
        } catch (Throwable t) {
            failure = t;
            throw t;
        } finally {
            end(handle, capture, failure);
        }
    }

    private static long createCondition(Handle handle, int defaultValue) {
        long h = handle.enter();
        try {
            return NativeApi.captureCreateCondition(h, defaultValue);
        } finally {
            handle.exit();
        }
    }

    private static void begin(Handle handle, Capture capture, int kind, long condition) {
        long h = handle.enter();
        try {
            NativeApi.captureBeginConditional(h, kind, condition);
            capture.conditionalDepth++;
        } finally {
            handle.exit();
        }
    }

    /** Ends the innermost body's capture; a failure to end is added to {@code failure}, or thrown if there is none. */
    private static void end(Handle handle, Capture capture, Throwable failure) {
        capture.conditionalDepth--;
        try {
            long h = handle.enter();
            try {
                NativeApi.captureEndConditional(h);
            } finally {
                handle.exit();
            }
        } catch (RuntimeException e) {
            if (failure == null) {
                throw e;
            }
            failure.addSuppressed(e);
        }
    }

    /** Records the setter: one thread that reads {@code when} and sets {@code condition} (counting in {@code counter} up to {@code max}). */
    private static void launchSetter(Handle handle, Kernel set, long condition, DeviceBuffer counter, int max, GraphCondition when) {
        KernelLaunch launch = set.newLaunch().grid(1).block(1).arg(0, condition).arg(2, max).arg(3, when.mode).arg(5, when.threshold);
        if (counter != null) {
            launch.arg(1, counter);
        } else {
            launch.argPointer(1, 0);
        }
        if (when.value != null) {
            launch.arg(4, when.value);
        } else {
            launch.argPointer(4, 0);
        }
        launch.launch(handle);
    }
}
