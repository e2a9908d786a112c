package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Rule K4 (issue 11 items 1 and 2): a library's {@code __device__} and {@code __constant__}
 * variables exist once per context, its {@code __managed__} variables once per process. Two
 * contexts on one GPU (the primary one and a user context) stand in for two devices. The tests
 * marked {@link StandInCapable} check the lookups, per-context copies through copies and the
 * lifetime rules on the CPU stand-in too; the others need kernels to run.
 */
@GpuTest
class LibraryVariablesGpuTest extends GpuTestSupport {
    private static final String MODULE = "/kernels/variables.fatbin";
    private final Random random = new Random();
    private long userContext;
    private Handle primary;
    private Handle other;
    private Library library;

    @BeforeEach
    void twoContextsAndTheModule() {
        clearCurrent();
        userContext = newUserContext(0);
        primary = Handle.create(0);
        other = Handle.wrap(userContext);
        library = Library.loadResource(LibraryVariablesGpuTest.class, MODULE);
    }

    @AfterEach
    void closeAll() {
        closeQuietly(library);
        closeQuietly(other);
        closeQuietly(primary);
        NativeTestApi.destroyContext(userContext);
        clearCurrent();
    }

    private static int readInt(DeviceBuffer b) {
        int[] out = new int[1];
        b.download(out);
        return out[0];
    }

    @Test
    @StandInCapable
    void eachContextHasItsOwnCopyOfADeviceVariable() {
        DeviceBuffer inPrimary = library.global(primary, "cuh_test_counter");
        DeviceBuffer inOther = library.global(other, "cuh_test_counter");
        assertEquals(4, inPrimary.byteLength(), "sizeof(int)");
        int value = 1 + random.nextInt(1_000_000);
        inPrimary.upload(new int[] {value});
        assertEquals(value, readInt(inPrimary));
        assertEquals(0, readInt(inOther), "written through the primary context, invisible in the other one");
        assertEquals(inPrimary.address(), library.global(primary, "cuh_test_counter").address(), "one copy per context");
        assertEquals(16, library.global(primary, "cuh_test_coefficients").byteLength(), "__constant__ float[4]");
    }

    @Test
    @StandInCapable
    void anUnknownVariableIsACudaExceptionNamingTheVariableAndTheLibrary() {
        CudaException e = assertThrows(CudaException.class, () -> library.global(primary, "no_such_variable"));
        assertTrue(e.getMessage().contains("'no_such_variable'") && e.getMessage().contains(MODULE), e.getMessage());
        e = assertThrows(CudaException.class, () -> library.managed("cuh_test_counter"));
        assertTrue(e.getMessage().contains("__managed__") && e.getMessage().contains("'cuh_test_counter'"), "a __device__ variable is not managed: " + e.getMessage());
    }

    @Test
    @StandInCapable
    void viewsAndManagedVariablesDieWithTheirLibrary() {
        DeviceBuffer view = library.global(primary, "cuh_test_counter");
        ManagedVariable managed = library.managed("cuh_test_managed");
        DeviceBuffer managedView = managed.view(other);
        view.close(); // a view owns nothing: closing it leaves the variable usable
        assertEquals(0, readInt(library.global(primary, "cuh_test_counter")));
        library.close();
        assertThrows(IllegalStateException.class, () -> readInt(library.global(primary, "cuh_test_counter")));
        assertThrows(IllegalStateException.class, () -> readInt(managedView), "never a dangling address");
        assertThrows(IllegalStateException.class, () -> managed.getInt(0));
        assertThrows(IllegalStateException.class, () -> managed.setInt(0, 1));
    }

    /**
     * Issue 20 (5): what Library.global's Javadoc says about closing a view is what happens: it releases only
     * that view (later uses of it throw), while the variable keeps its contents and the library and other views
     * go on working.
     */
    @Test
    @StandInCapable
    void closingAVariablesViewReleasesOnlyThatView() {
        DeviceBuffer first = library.global(primary, "cuh_test_counter");
        DeviceBuffer second = library.global(primary, "cuh_test_counter");
        int value = 1 + random.nextInt(1_000_000);
        first.upload(new int[] {value});
        first.close();
        assertTrue(first.isClosed());
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> readInt(first));
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
        assertEquals(value, readInt(second), "the variable keeps its contents; another view still works");
        assertEquals(value, readInt(library.global(primary, "cuh_test_counter")), "a new view sees them too");
        assertTrue(!library.isClosed() && !second.isClosed());
    }

    /**
     * Issue 20 (4): views that global() and ManagedVariable.view() hand out while close() runs on another thread
     * are closed with the library, never left open over unloaded memory. Before, the library closed the views
     * it knew of and then waited for the calls in flight, whose views it never saw (dozens per round).
     */
    @Test
    @StandInCapable
    void viewsHandedOutWhileTheLibraryClosesAreClosedWithIt() throws Exception {
        library.close();
        for (int round = 0; round < 40; round++) {
            Library lib = Library.loadResource(LibraryVariablesGpuTest.class, MODULE);
            ManagedVariable managed = lib.managed("cuh_test_managed");
            java.util.List<DeviceBuffer> views = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
            java.util.concurrent.CountDownLatch started = new java.util.concurrent.CountDownLatch(2);
            java.util.List<Thread> threads = new java.util.ArrayList<>();
            for (int t = 0; t < 2; t++) {
                boolean viaManaged = t == 1;
                Thread thread = new Thread(() -> {
                    started.countDown();
                    try {
                        while (true) {
                            views.add(viaManaged ? managed.view(primary) : lib.global(primary, "cuh_test_counter"));
                        }
                    } catch (IllegalStateException closed) {
                        // the library closed: this thread is done
                    }
                });
                thread.start();
                threads.add(thread);
            }
            started.await();
            Thread.sleep(1 + random.nextInt(3));
            lib.close();
            for (Thread thread : threads) {
                thread.join(10_000);
                assertTrue(!thread.isAlive(), "the lookup threads end once the library is closed");
            }
            long open;
            synchronized (views) {
                open = views.stream().filter(v -> !v.isClosed()).count();
            }
            assertEquals(0, open, "round " + round + ": views still open after the library was closed, of " + views.size() + " handed out");
        }
    }

    @Test
    @StandInCapable
    void aManagedVariableHasOneAddressForEveryContextAndTheHost() {
        ManagedVariable m = library.managed("cuh_test_managed");
        assertEquals(4, m.byteLength());
        assertEquals(m.address(), m.view(primary).address());
        assertEquals(m.address(), m.view(other).address());
        int value = random.nextInt();
        m.setInt(0, value);
        assertEquals(value, m.getInt(0));
        assertEquals(value, readInt(m.view(other)), "the host's write, seen through another context");
        m.setFloat(0, 1.5f);
        assertEquals(1.5f, m.getFloat(0));
        assertThrows(IllegalArgumentException.class, () -> m.getLong(0), "8 bytes of a 4-byte variable");
        assertThrows(IllegalArgumentException.class, () -> m.setInt(1, 0));
        assertThrows(IllegalArgumentException.class, () -> m.getInt(-4));
    }

    /**
     * Context-independent loading (docs/handles.md, section 4): a context created after the library
     * was loaded gets the module too, with its own {@code __device__} variable at its initial value,
     * and the library's kernels run there on that copy; destroying a context takes its copy with it,
     * while a {@code __managed__} variable (one per process) keeps its value and is updated by kernels
     * of the new context.
     */
    @Test
    @StandInCapable
    void aContextCreatedAfterLoadingHasTheModuleWithFreshVariables_managedOnesSurviveContexts() {
        int value = 1 + random.nextInt(1_000_000);
        library.global(other, "cuh_test_counter").upload(new int[] {value});
        ManagedVariable managed = library.managed("cuh_test_managed");
        managed.setInt(0, value);
        other.close();
        NativeTestApi.destroyContext(userContext);
        userContext = newUserContext(0);
        other = Handle.wrap(userContext);
        assertEquals(0, readInt(library.global(other, "cuh_test_counter")),
                "a context created after the library was loaded starts with the variable's initial value");
        assertEquals(value, managed.getInt(0), "a __managed__ variable outlives the context that wrote it");
        assertEquals(value, readInt(managed.view(other)), "... and the new context sees it");

        // The library's kernels run there: they update the new context's own copy (from its initial
        // 0) and the process's one managed variable. On the stand-in, where kernels do not run, the
        // launches must reach the driver.
        int delta = 1 + random.nextInt(1000);
        int managedDelta = 1 + random.nextInt(1000);
        HandleGpuTestBase.LaunchCount launches = new HandleGpuTestBase.LaunchCount();
        other.launch(library.kernel("cuh_test_counter_add"), Dim3.of(1), Dim3.of(1), 0, delta);
        other.launch(library.kernel("cuh_test_managed_add"), Dim3.of(1), Dim3.of(1), 0, managedDelta);
        try (DeviceBuffer out = other.allocate(4)) {
            other.launch(library.kernel("cuh_test_counter_read"), Dim3.of(1), Dim3.of(1), 0, out);
            launches.assertAccepted(3, "kernels launched in a context created after loading");
            if (!StandIn.active()) {
                assertEquals(delta, readInt(out), "a kernel of the library, run in a context created after loading, read that context's copy");
                assertEquals(value + managedDelta, managed.getInt(0), "a kernel run in the new context updated the managed variable");
            }
        }
    }

    @Test
    void aPrimaryResetGivesTheNewPrimaryContextFreshVariables_theOldViewsFailCleanly() {
        int value = 1 + random.nextInt(1_000_000);
        DeviceBuffer before = library.global(primary, "cuh_test_counter");
        before.upload(new int[] {value});
        assertEquals(value, readInt(before));
        NativeTestApi.resetPrimary(0);
        clearCurrent();
        assertThrows(CudaException.class, () -> readInt(before), "a view into the reset context fails, never reads freed memory");
        try (Handle fresh = Handle.create(0)) {
            assertEquals(0, readInt(library.global(fresh, "cuh_test_counter")),
                    "the re-created primary context gets the library's module again, with the variable's initial value");
            fresh.launch(library.kernel("cuh_test_counter_add"), Dim3.of(1), Dim3.of(1), 0, value);
            assertEquals(value, readInt(library.global(fresh, "cuh_test_counter")), "and the library's kernels update it there");
        }
    }

    @Test
    void kernelsInEachContextUpdateOnlyThatContextsCopy() {
        Kernel add = library.kernel("cuh_test_counter_add");
        Kernel read = library.kernel("cuh_test_counter_read");
        int a = random.nextInt(1000);
        int b = random.nextInt(1000);
        primary.launch(add, Dim3.of(1), Dim3.of(1), 0, a);
        primary.launch(add, Dim3.of(1), Dim3.of(1), 0, b);
        other.launch(add, Dim3.of(1), Dim3.of(1), 0, b);
        try (DeviceBuffer outPrimary = primary.allocate(4); DeviceBuffer outOther = other.allocate(4)) {
            primary.launch(read, Dim3.of(1), Dim3.of(1), 0, outPrimary);
            other.launch(read, Dim3.of(1), Dim3.of(1), 0, outOther);
            assertEquals(a + b, readInt(outPrimary));
            assertEquals(b, readInt(outOther));
        }
        assertEquals(a + b, readInt(library.global(primary, "cuh_test_counter")), "the view sees what the kernels wrote");
    }

    @Test
    void aConstantVariableWrittenThroughItsViewReachesTheKernels() {
        float[] coefficients = {random.nextFloat(), random.nextFloat(), random.nextFloat(), random.nextFloat()};
        library.global(primary, "cuh_test_coefficients").upload(coefficients);
        int n = 10_000 + random.nextInt(1000);
        int k = random.nextInt(4);
        float[] x = new float[n];
        float[] expected = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = random.nextFloat() * 2 - 1;
            expected[i] = x[i] * coefficients[k];
        }
        try (DeviceBuffer d = primary.upload(x)) {
            primary.launch(library.kernel("cuh_test_scale_by_coefficient"), Dim3.of(64), Dim3.of(256), 0, d, n, k);
            d.download(x);
        }
        assertArrayEquals(expected, x, "x * coefficient[" + k + "], one rounding on both sides");
    }

    @Test
    void aManagedVariableIsSharedByKernelsOfEveryContextAndTheHost() {
        ManagedVariable m = library.managed("cuh_test_managed");
        int start = random.nextInt(1000);
        int a = random.nextInt(1000);
        int b = random.nextInt(1000);
        m.setInt(0, start);
        Kernel add = library.kernel("cuh_test_managed_add");
        primary.launch(add, Dim3.of(1), Dim3.of(1), 0, a);
        primary.synchronize(); // the next user of the variable must come after this kernel
        other.launch(add, Dim3.of(1), Dim3.of(1), 0, b);
        other.synchronize(); // and the host after that one
        assertEquals(start + a + b, m.getInt(0));
    }
}
