package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Which context ran a launch (docs/handles.md, "Activate per call and restore"). Comparing results
 * cannot tell: on one device a kernel of one context can write another context's memory. A
 * {@code __device__} variable can: it has one copy per context (rule K4). {@code cuh_test_counter}
 * is set to a different random value in the primary context and in a user context on the same
 * device, and {@code cuh_test_counter_read} copies the copy it sees to a buffer, so the value read
 * names the context whose instance of the module ran.
 *
 * <p>cuhandle's launches (on the handle's own stream; from driver 13.0 without activating the
 * handle's context, launch.rs) must read the handle's context's value whatever is current. The
 * raw {@code CUkernel} launches are the driver's own choice, as cuLaunchKernel documents it: the
 * context of the stream, or the current context on the NULL stream. The NULL-stream launch is also
 * the control that shows the two values tell the contexts apart.
 *
 * <p>Every launch prints one line for the GPU log, {@code [launch-context] key=value ...}.
 */
@GpuTest
class LaunchContextIdentityGpuTest extends HandleGpuTestBase {
    private static final String MODULE = "/kernels/variables.fatbin";
    private static final String VARIABLE = "cuh_test_counter";
    private static final String LOG = "[launch-context] ";

    private long user;
    private Handle primary;
    private Handle other;
    private Library library;
    private Kernel read;
    private int primaryValue;
    private int userValue;

    @BeforeEach
    void twoContextsWithDifferentValues() {
        user = newUserContext(0);
        primary = Handle.create(0);
        other = Handle.wrap(user);
        assertNotEquals(primary.contextId(), other.contextId(), "two contexts");
        library = Library.loadResource(LaunchContextIdentityGpuTest.class, MODULE);
        read = library.kernel("cuh_test_counter_read");
        Random random = new Random();
        primaryValue = 1 + random.nextInt(1_000_000);
        userValue = primaryValue + 1 + random.nextInt(1_000_000);
        library.global(primary, VARIABLE).upload(new int[] {primaryValue});
        library.global(other, VARIABLE).upload(new int[] {userValue});
        // Both own streams exist from here on, so cuhandle's launches take the own-stream path.
        primary.synchronize();
        other.synchronize();
    }

    @AfterEach
    void closeAll() {
        clearCurrent();
        closeQuietly(library);
        closeQuietly(other);
        closeQuietly(primary);
        destroyQuietly(user);
    }

    @Test
    void cuhandleLaunches_readTheHandlesContextsVariable_whateverIsCurrent() {
        for (Handle h : new Handle[] {primary, other}) {
            for (String current : new String[] {"nothing", "the-other-context", "the-handles-context"}) {
                long callers = "nothing".equals(current) ? 0 : ("the-handles-context".equals(current) ? h.rawContext() : otherThan(h).rawContext());
                try (DeviceBuffer out = h.allocate(4)) {
                    makeOnlyCurrent(callers);
                    h.launch(read, Dim3.of(1), Dim3.of(1), 0, out);
                    assertEquals(hex(callers), hex(current()), "H4: the launch left the caller's context current");
                    int seen = readInt(out);
                    clearCurrent();
                    report("cuhandle", "the-handles-own", current, nameOf(h), seen);
                    assertEquals(valueOf(h), seen, "a launch through the " + nameOf(h) + " context's handle with " + current
                            + " current read the " + nameOf(seen) + " context's copy of " + VARIABLE);
                }
            }
        }
    }

    @Test
    void rawKernelLaunches_runInTheStreamsContext_orOnTheNullStreamInTheCurrentOne() {
        long kernel = read.rawKernel();
        try (DeviceBuffer outPrimary = primary.allocate(4); DeviceBuffer outUser = other.allocate(4)) {
            // The primary handle's stream with the user context current: the stream's context.
            makeOnlyCurrent(user);
            assertEquals(0, DriverProbeTestApi.launchWithOnePointer(kernel, primary.stream(), outPrimary.address()),
                    "cuLaunchKernel(CUkernel) on the primary handle's stream with the user context current");
            clearCurrent();
            primary.synchronize();
            int seen = readInt(outPrimary);
            report("raw-cukernel", "the-primary-handles", "user", "primary", seen);
            assertEquals(primaryValue, seen, "cuLaunchKernel documents that a CUkernel launches in the stream's context; it read the "
                    + nameOf(seen) + " context's copy");

            // The NULL stream with the user context current: the current context (the control).
            makeOnlyCurrent(user);
            assertEquals(0, DriverProbeTestApi.launchWithOnePointer(kernel, 0, outUser.address()),
                    "cuLaunchKernel(CUkernel) on the NULL stream with the user context current");
            assertEquals(0, DriverProbeTestApi.synchronizeCurrent(), "cuCtxSynchronize in the user context");
            clearCurrent();
            seen = readInt(outUser);
            report("raw-cukernel", "null", "user", "user", seen);
            assertEquals(userValue, seen, "on the NULL stream a CUkernel launches in the current context (the user context); it read the "
                    + nameOf(seen) + " context's copy");
        }
    }

    private Handle otherThan(Handle h) {
        return h == primary ? other : primary;
    }

    private String nameOf(Handle h) {
        return h == primary ? "primary" : "user";
    }

    private int valueOf(Handle h) {
        return h == primary ? primaryValue : userValue;
    }

    private String nameOf(int value) {
        return value == primaryValue ? "primary" : value == userValue ? "user" : "neither (" + value + ")";
    }

    /** One line per launch: how it was made, what was current, which context's copy it read. */
    private void report(String via, String stream, String current, String expectedContext, int seen) {
        String path = "cuhandle".equals(via) ? (Cuda.driverVersion() >= 13000 ? " path=without-activation" : " path=activated") : "";
        System.out.println(LOG + "driver=" + Cuda.driverVersion() + " via=" + via + path + " stream=" + stream + " current=" + current
                + " expected=" + expectedContext + " read=" + nameOf(seen) + " primary_value=" + primaryValue + " user_value=" + userValue
                + " value_read=" + seen);
    }

    private static int readInt(DeviceBuffer b) {
        int[] out = new int[1];
        b.download(out);
        return out[0];
    }
}
