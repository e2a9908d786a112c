package dev.cuhandle.junit;

import dev.cuhandle.Cuda;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The JUnit 5 condition behind {@link RequiresGpu}: enables a test where a CUDA GPU is usable and
 * otherwise skips it with the reason, or fails it when {@value #REQUIRE_GPU} is {@code true}.
 *
 * <p>Registered by {@link RequiresGpu}; it can also be registered directly with
 * {@code @ExtendWith(GpuExtension.class)}. Whether a GPU is usable is asked once per JVM
 * ({@link Cuda#unavailableReason()}).
 */
public final class GpuExtension implements ExecutionCondition {
    /**
     * The system property or JUnit configuration parameter that turns skipped GPU tests into
     * failures when set to {@code true}.
     */
    public static final String REQUIRE_GPU = "cuhandle.requireGpu";

    private static final AtomicBoolean ANNOUNCED = new AtomicBoolean();

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
     * @throws AssertionError when {@code reason} is not {@code null} and {@code requireGpu} is set
     */
    static ConditionEvaluationResult decide(String reason, boolean requireGpu) {
        if (reason == null) {
            return ConditionEvaluationResult.enabled("a CUDA GPU is available");
        }
        if (requireGpu) {
            throw new AssertionError("-D" + REQUIRE_GPU + "=true but no CUDA GPU is usable: " + reason);
        }
        return ConditionEvaluationResult.disabled("no usable CUDA GPU: " + reason);
    }

    /** Asked once, on first use: loading the native library and the driver is not repeated per test. */
    private static final class Reason {
        static final String VALUE = Cuda.unavailableReason();
    }
}
