package dev.cuhandle;

import static dev.cuhandle.bench.CallTiming.medianNsPerCall;

import dev.cuhandle.bench.BenchSupport;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.function.LongConsumer;

/**
 * Where a {@code Handle.create(0)} + {@code close()} goes (issue 35), in one fresh JVM with device 0's primary
 * context kept active: the whole as HandleBenchmark times it (from the JVM's first creates), the whole again once
 * compiled, the native create and destroy alone (no Java handle), the driver's retain + release through two JNI
 * calls, bare JNI calls with and without jni's attach guard, and the Java half alone: a {@link NativeObject}
 * registered with the cleaner and closed, with a free action that does nothing. Prints one line
 * {@code parts,<run>,cpu_start=..,<part>=<ns>,...,cpu_end=..} (medians of 7 or 9 repetitions; the CPUs are the
 * main thread's at the start and the end). {@code run} is the first argument, a label for A/B runs.
 */
public final class CreateCloseParts {
    private CreateCloseParts() {}

    private static final LongConsumer NOTHING = new LongConsumer() {
        @Override
        public void accept(long pointer) {
            // The Java half alone: nothing native to free.
        }
    };

    /** The CPU the calling thread last ran on (/proc/self/stat's 39th field), or "?". */
    private static String cpu() {
        try {
            String stat = new String(Files.readAllBytes(Paths.get("/proc/self/stat")), StandardCharsets.US_ASCII);
            return stat.substring(stat.lastIndexOf(')') + 2).split(" ")[36];
        } catch (Exception e) {
            return "?";
        }
    }

    /** Runs the measurements; prints one line on stdout. */
    public static void main(String[] args) {
        BenchSupport.requireGpu("CreateCloseParts");
        String run = args.length > 0 ? args[0] : "1";
        NativeTestApi.setCurrent(0);
        StringBuilder out = new StringBuilder("parts," + run + ",cpu_start=" + cpu());
        try (Handle keepAlive = Handle.create(0)) {
            out.append(String.format(",cc_bench=%.1f", medianNsPerCall(10_000, 7, () -> Handle.create(0).close())));
            out.append(String.format(",bare=%.1f", medianNsPerCall(200_000, 7, () -> NativeTestApi.withoutEnv(0))));
            out.append(String.format(",bare_env=%.1f", medianNsPerCall(200_000, 7, () -> NativeTestApi.noop(1))));
            out.append(String.format(",cc_warm=%.1f", medianNsPerCall(100_000, 9, () -> Handle.create(0).close())));
            out.append(String.format(",native_cc=%.1f", medianNsPerCall(100_000, 9, () -> NativeTestApi.createAndDestroyNatively(0))));
            out.append(String.format(",retain_release_jni=%.1f", medianNsPerCall(100_000, 9, () -> {
                NativeTestApi.retainPrimary(0);
                NativeTestApi.releasePrimary(0);
            })));
            out.append(String.format(",java_object=%.1f", medianNsPerCall(100_000, 9, () -> {
                Object owner = new Object();
                NativeObject.register(owner, 1L, "part", NOTHING).close();
                Reference.reachabilityFence(owner); // as NativeResource.closeNative: the cleaner must not take it first
            })));
            out.append(String.format(",cc_warm_again=%.1f", medianNsPerCall(100_000, 9, () -> Handle.create(0).close())));
        }
        System.out.println(out.append(",cpu_end=").append(cpu()));
    }
}
