package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * Rule L7 for code (issue 20, point 6): {@link Library#close()} never unloads code or variables the GPU still
 * uses. It waits for the kernels of the library still queued or running, for graph replays still queued that
 * launch them, and for copies to its variables, on the streams that work is on. (On the H200, driver 580, the
 * unload itself then waited for all other work of the context too: a library closed next to another handle's
 * 3 s kernel of another library took 3,000 ms, seen in the GPU run of 2026-12-01; NVIDIA does not document
 * whether {@code cuLibraryUnload} waits, so cuhandle waits for what uses the library itself.) On the CPU
 * stand-in the kernels take simulated time; on the GPU they spin.
 */
@GpuTest
class LibraryCloseGpuTest extends HandleGpuTestBase {
    private static final double LONG = 0.6;

    @Test
    @StandInCapable
    void closeWaitsForItsKernelsStillRunning() {
        try (Handle h = Handle.create(0)) {
            Library lib = TestKernels.load();
            Kernel spin = lib.kernel("cuh_test_spin");
            long start = System.nanoTime();
            launchFor(h, spin, LONG);
            lib.close();
            long millis = (System.nanoTime() - start) / 1_000_000;
            assertTrue(millis >= LONG * 1000 * 0.8, "close() returned " + millis + " ms after a " + LONG + " s kernel of the library was queued");
            assertThrows(IllegalStateException.class, () -> h.launch(spin, Dim3.of(1), Dim3.of(1), 0, 1L));
            h.synchronize(); // the context is healthy: nothing ran unloaded code
        }
    }

    @Test
    @StandInCapable
    void closeWaitsForAGraphReplayOfItsKernels() {
        try (Handle h = Handle.create(0)) {
            Library lib = TestKernels.load();
            Kernel spin = lib.kernel("cuh_test_spin");
            try (Graph g = h.capture(() -> launchFor(h, spin, LONG))) {
                long start = System.nanoTime();
                replayFor(h, g, LONG);
                lib.close();
                long millis = (System.nanoTime() - start) / 1_000_000;
                assertTrue(millis >= LONG * 1000 * 0.8, "close() returned " + millis + " ms after a replay of the library's " + LONG + " s kernel was queued");
                assertThrows(IllegalStateException.class, () -> g.launch(h), "a replay after the library was closed is refused");
            }
            h.synchronize();
        }
    }

    @Test
    @StandInCapable
    void closeWaitsForCopiesToItsVariables() {
        try (Handle h = Handle.create(0)) {
            Library lib = Library.loadResource(TestKernels.class, "/kernels/variables.fatbin");
            DeviceBuffer counter = lib.global(h, "cuh_test_counter");
            try (Handle other = Handle.create(0); DeviceBuffer source = other.allocate(4)) {
                long start = System.nanoTime();
                int previous = StandIn.active() ? StandIn.setWorkMillis((int) (LONG * 1000)) : 0;
                try {
                    if (!StandIn.active()) {
                        spin(other, LONG); // on the GPU, the copy waits behind a spin on the same stream
                    }
                    other.copy(source, counter);
                } finally {
                    if (StandIn.active()) {
                        StandIn.setWorkMillis(previous);
                    }
                }
                lib.close();
                long millis = (System.nanoTime() - start) / 1_000_000;
                assertTrue(millis >= LONG * 1000 * 0.8, "close() returned " + millis + " ms after a copy into its variable was queued behind " + LONG + " s of work");
                assertTrue(counter.isClosed(), "the variable's view is closed with the library");
                other.synchronize();
            }
        }
    }

    /** Queues {@code spin} for about {@code seconds} on {@code h} (the stand-in: simulated time for that launch). */
    private static void launchFor(Handle h, Kernel spin, double seconds) {
        long cycles = (long) (seconds * SPIN_CYCLES_PER_SECOND);
        if (!StandIn.active()) {
            h.launch(spin, Dim3.of(1), Dim3.of(1), 0, cycles);
            return;
        }
        int previous = StandIn.setWorkMillis((int) (seconds * 1000));
        try {
            h.launch(spin, Dim3.of(1), Dim3.of(1), 0, cycles);
        } finally {
            StandIn.setWorkMillis(previous);
        }
    }

    /** Replays {@code g}; on the stand-in its launch takes about {@code seconds} of simulated time. */
    private static void replayFor(Handle h, Graph g, double seconds) {
        if (!StandIn.active()) {
            g.launch(h);
            return;
        }
        int previous = StandIn.setWorkMillis((int) (seconds * 1000));
        try {
            g.launch(h);
        } finally {
            StandIn.setWorkMillis(previous);
        }
    }
}
