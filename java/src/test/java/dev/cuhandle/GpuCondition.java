package dev.cuhandle;

import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;

/** Enables {@link GpuTest}s only where a GPU is usable; see {@link GpuTest}. */
public final class GpuCondition implements ExecutionCondition {
    public static final String REQUIRE_GPU = "cuhandle.requireGpu";
    private static final AtomicBoolean ANNOUNCED = new AtomicBoolean();

    @Override
    public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
        String reason = Cuda.unavailableReason();
        if (reason == null) {
            return ConditionEvaluationResult.enabled("a CUDA GPU is available");
        }
        if (Boolean.getBoolean(REQUIRE_GPU)) {
            throw new AssertionError("-D" + REQUIRE_GPU + "=true but no GPU is usable: " + reason);
        }
        if (ANNOUNCED.compareAndSet(false, true)) {
            System.err.println("[cuhandle] GPU tests are SKIPPED on this machine: " + reason);
        }
        return ConditionEvaluationResult.disabled("no usable CUDA GPU: " + reason);
    }
}
