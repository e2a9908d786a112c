package dev.cuhandle.junit;

import dev.cuhandle.Cuda;
import java.lang.reflect.AnnotatedElement;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.platform.commons.support.AnnotationSupport;

/**
 * The JUnit 5 condition behind {@link RequiresGpu}: enables a test where a CUDA GPU is usable and
 * otherwise skips it with the reason, or fails it when {@value #REQUIRE_GPU} is {@code true}.
 *
 * <p>Registered by {@link RequiresGpu}; it can also be registered directly with
 * {@code @ExtendWith(GpuExtension.class)}. Whether a GPU is usable is asked once per JVM
 * ({@link Cuda#unavailableReason()}), and for tests marked {@code @RequiresGpu(kernels = true)}
 * whether the driver is the CPU stand-in ({@link Cuda#isStandIn()}), where kernels do not execute.
 * A native library that the JVM refused to load for want of {@code --enable-native-access} fails the
 * test instead of skipping it: that is a mistake in the build, not a machine without a GPU.
 */
public final class GpuExtension implements ExecutionCondition {
    /**
     * The system property or JUnit configuration parameter that turns skipped GPU tests into
     * failures when set to {@code true}.
     */
    public static final String REQUIRE_GPU = "cuhandle.requireGpu";

    /** The reason given on the stand-in to tests that need kernels to execute. */
    static final String STAND_IN = "kernels do not execute on the CPU stand-in driver";

    /**
     * The flag that the core's loading error names when the JVM denied native access (Native's
     * message; scripts/check_new_user_path.py runs that case on Java 25): only that case carries it.
     */
    static final String NATIVE_ACCESS_FLAG = "--enable-native-access";

    private static final AtomicBoolean ANNOUNCED = new AtomicBoolean();
    private static final AtomicBoolean ANNOUNCED_STAND_IN = new AtomicBoolean();

    /** Creates the condition; JUnit does this for {@link RequiresGpu}. */
    public GpuExtension() {}

    /**
     * Decides whether the test in {@code context} runs.
     *
     * @param context the test's or test class's context
     * @return enabled where a GPU is usable, disabled with the reason otherwise
     * @throws AssertionError if no GPU is usable and {@value #REQUIRE_GPU} is {@code true} (JUnit
     *     reports the test as failed)
     */
    @Override
    public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
        String reason = Reason.VALUE;
        // A configuration parameter falls back to the system property of the same name.
        boolean requireGpu = context.getConfigurationParameter(REQUIRE_GPU).map(Boolean::parseBoolean).orElse(false);
        if (reason == null && needsKernels(context) && StandIn.VALUE) {
            if (!requireGpu && ANNOUNCED_STAND_IN.compareAndSet(false, true)) {
                System.err.println("[cuhandle] GPU tests that need kernels are SKIPPED: " + STAND_IN);
            }
            return decide(STAND_IN, requireGpu);
        }
        ConditionEvaluationResult result = decide(reason, requireGpu);
        if (result.isDisabled() && ANNOUNCED.compareAndSet(false, true)) {
            System.err.println("[cuhandle] GPU tests are SKIPPED: " + reason);
        }
        return result;
    }

    /**
     * The decision itself, apart from JUnit's context and the real driver.
     *
     * @param reason why no GPU is usable, or {@code null} when one is
     * @param requireGpu whether a missing GPU is a failure instead of a skip
     * @return enabled when {@code reason} is {@code null}, else disabled with the reason
     * @throws AssertionError when {@code reason} is not {@code null} and {@code requireGpu} is set, or
     *     when the reason is denied native access (the build's mistake, never a missing GPU)
     */
    static ConditionEvaluationResult decide(String reason, boolean requireGpu) {
        if (reason == null) {
            return ConditionEvaluationResult.enabled("a CUDA GPU is available");
        }
        if (reason.contains(NATIVE_ACCESS_FLAG)) {
            throw new AssertionError("the JVM refused cuhandle native access, so GPU tests cannot run: " + reason);
        }
        if (requireGpu) {
            throw new AssertionError("-D" + REQUIRE_GPU + "=true but no CUDA GPU is usable: " + reason);
        }
        return ConditionEvaluationResult.disabled("no usable CUDA GPU: " + reason);
    }

    /**
     * Whether the test's method, or its class or an enclosing class, asks for kernels. The nearest
     * annotation of each element counts, so a class-wide {@code kernels = true} covers its methods.
     */
    private static boolean needsKernels(ExtensionContext context) {
        if (kernels(context.getElement())) {
            return true;
        }
        for (Class<?> c = context.getTestClass().orElse(null); c != null; c = c.getEnclosingClass()) {
            if (kernels(Optional.of(c))) {
                return true;
            }
        }
        return false;
    }

    private static boolean kernels(Optional<? extends AnnotatedElement> element) {
        return AnnotationSupport.findAnnotation(element, RequiresGpu.class).map(RequiresGpu::kernels).orElse(false);
    }

    /** Asked once, on first use, and only where a test needs kernels and a GPU is usable. */
    private static final class StandIn {
        static final boolean VALUE = Cuda.isStandIn();
    }

    /** Asked once, on first use: loading the native library and the driver is not repeated per test. */
    private static final class Reason {
        static final String VALUE = Cuda.unavailableReason();
    }
}
