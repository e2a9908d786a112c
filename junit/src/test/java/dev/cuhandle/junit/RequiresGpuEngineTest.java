package dev.cuhandle.junit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;
import static org.junit.platform.testkit.engine.EventConditions.event;
import static org.junit.platform.testkit.engine.EventConditions.finishedWithFailure;
import static org.junit.platform.testkit.engine.EventConditions.skippedWithReason;
import static org.junit.platform.testkit.engine.TestExecutionResultConditions.message;

import dev.cuhandle.Cuda;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.platform.launcher.TagFilter;
import org.junit.platform.testkit.engine.EngineExecutionResults;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Events;

/**
 * {@link RequiresGpu} through the real Jupiter engine, on this machine's real driver: with a GPU the
 * marked test runs, without one it is skipped with {@link Cuda#unavailableReason()}, or fails when
 * {@code cuhandle.requireGpu=true}; and it carries the tag {@code gpu}.
 */
class RequiresGpuEngineTest {
    private static final String REASON = Cuda.unavailableReason();

    /** Marked on the method. Not run by Surefire itself (nested classes are excluded). */
    static class MethodFixture {
        @Test
        @RequiresGpu
        void needsGpu() {}
    }

    /** Marked on the class. */
    @RequiresGpu
    static class ClassFixture {
        @Test
        void needsGpu() {}
    }

    private static EngineExecutionResults run(Class<?> fixture, boolean requireGpu) {
        return EngineTestKit.engine("junit-jupiter")
                .selectors(selectClass(fixture))
                .configurationParameter(GpuExtension.REQUIRE_GPU, Boolean.toString(requireGpu))
                .execute();
    }

    /** The events that carry the decision: the test for a marked method, the class for a marked class. */
    private static Events decided(EngineExecutionResults results, Class<?> fixture) {
        return fixture == MethodFixture.class ? results.testEvents() : results.containerEvents();
    }

    @ParameterizedTest
    @ValueSource(classes = {MethodFixture.class, ClassFixture.class})
    void runsWithAGpuAndIsSkippedWithTheReasonWithoutOne(Class<?> fixture) {
        EngineExecutionResults results = run(fixture, false);
        if (REASON == null) {
            results.testEvents().assertStatistics(s -> s.started(1).succeeded(1).skipped(0));
        } else {
            decided(results, fixture).assertThatEvents().haveExactly(1, event(skippedWithReason("no usable CUDA GPU: " + REASON)));
            results.testEvents().assertStatistics(s -> s.started(0).succeeded(0).failed(0));
        }
    }

    @ParameterizedTest
    @ValueSource(classes = {MethodFixture.class, ClassFixture.class})
    void failsWithoutAGpuWhenAGpuIsRequired(Class<?> fixture) {
        EngineExecutionResults results = run(fixture, true);
        if (REASON == null) {
            results.testEvents().assertStatistics(s -> s.started(1).succeeded(1));
        } else {
            decided(results, fixture).assertThatEvents().haveExactly(1,
                    event(finishedWithFailure(message(m -> m.contains("-Dcuhandle.requireGpu=true but no CUDA GPU is usable: " + REASON)))));
            assertEquals(0, results.allEvents().skipped().count(), "nothing is skipped when a GPU is required");
        }
    }

    @Test
    void carriesTheGpuTag() {
        EngineExecutionResults excluded = EngineTestKit.engine("junit-jupiter")
                .selectors(selectClass(MethodFixture.class))
                .filters(TagFilter.excludeTags("gpu"))
                .execute();
        assertEquals(0, excluded.testEvents().count(), "excluding the tag gpu leaves no test");
        EngineExecutionResults included = EngineTestKit.engine("junit-jupiter")
                .selectors(selectClass(MethodFixture.class))
                .filters(TagFilter.includeTags("gpu"))
                .configurationParameter(GpuExtension.REQUIRE_GPU, "false")
                .execute();
        assertTrue(included.testEvents().count() > 0, "including the tag gpu selects the test");
    }
}
