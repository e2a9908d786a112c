package dev.cuhandle;

import java.lang.reflect.AnnotatedElement;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.platform.commons.support.AnnotationSupport;
import org.junit.platform.commons.support.HierarchyTraversalMode;

/**
 * Enables {@link GpuTest}s only where a GPU is usable; see {@link GpuTest}. On the CPU stand-in
 * driver ({@link StandIn#active()}) only those marked {@link StandInCapable} run.
 */
public final class GpuCondition implements ExecutionCondition {
    public static final String REQUIRE_GPU = "cuhandle.requireGpu";
    /** Runs every GPU test on the stand-in, marked or not: for finding tests that could be marked. */
    public static final String RUN_ALL_ON_STAND_IN = "cuhandle.standIn.runAll";
    static final String NEEDS_REAL_GPU = "needs a real GPU: kernels do not execute on the CPU stand-in driver";
    private static final AtomicBoolean ANNOUNCED = new AtomicBoolean();
    private static final AtomicInteger STAND_IN_RUN = new AtomicInteger();
    private static final AtomicInteger STAND_IN_DISABLED = new AtomicInteger();
    private static final AtomicInteger STAND_IN_DISABLED_CLASSES = new AtomicInteger();

    @Override
    public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
        if (StandIn.active()) {
            return onStandIn(context);
        }
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

    private static ConditionEvaluationResult onStandIn(ExtensionContext context) {
        if (ANNOUNCED.compareAndSet(false, true)) {
            System.err.println("[cuhandle] GPU tests run on the CPU stand-in driver " + Cuda.driverPath()
                    + ": only those marked @StandInCapable; the others are disabled (" + NEEDS_REAL_GPU + ")");
            // The count is only known at the end; the shutdown hook runs after the last test.
            Runtime.getRuntime().addShutdownHook(new Thread(() -> System.err.println("[cuhandle] on the CPU stand-in driver "
                    + STAND_IN_RUN.get() + " GPU tests ran, " + STAND_IN_DISABLED.get() + " were disabled, and "
                    + STAND_IN_DISABLED_CLASSES.get() + " GPU test classes were disabled as a whole")));
        }
        if (Boolean.getBoolean(RUN_ALL_ON_STAND_IN)) {
            return ConditionEvaluationResult.enabled("-D" + RUN_ALL_ON_STAND_IN + "=true");
        }
        boolean capable;
        if (context.getTestMethod().isPresent()) {
            capable = marked(context.getRequiredTestMethod()) || marked(context.getRequiredTestClass());
            (capable ? STAND_IN_RUN : STAND_IN_DISABLED).incrementAndGet();
        } else {
            // Class level: run the class if it or any of its test methods is marked; each method is
            // then decided on its own.
            Class<?> testClass = context.getRequiredTestClass();
            capable = marked(testClass)
                    || !AnnotationSupport.findAnnotatedMethods(testClass, StandInCapable.class, HierarchyTraversalMode.TOP_DOWN).isEmpty();
            if (!capable) {
                STAND_IN_DISABLED_CLASSES.incrementAndGet();
            }
        }
        return capable ? ConditionEvaluationResult.enabled("marked @StandInCapable: runs on the CPU stand-in driver")
                : ConditionEvaluationResult.disabled(NEEDS_REAL_GPU);
    }

    private static boolean marked(AnnotatedElement element) {
        return AnnotationSupport.isAnnotated(element, StandInCapable.class);
    }
}
