package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Events: timing between two events around GPU work, stream order, context checks and close. */
@GpuTest
@StandInCapable // the spins occupy the stream in simulated time, so event timing and waiting are checked
class EventGpuTest extends KernelGpuTestBase {

    /**
     * Spins {@code cycles} SM clock cycles on {@code h}'s stream. On the CPU stand-in driver, where
     * kernels do not execute, the same launch occupies the stream for as long as the GPU needs at
     * least ({@link #SPIN_CYCLES_10MS} per 10 ms) in simulated time: the stand-in's work time is set
     * for this one launch and restored.
     */
    static void spinCycles(Handle h, long cycles) {
        if (!StandIn.active()) {
            h.launch(spin(), Dim3.of(1), Dim3.of(1), 0, cycles);
            return;
        }
        int launchesBefore = StandIn.launches();
        int previous = StandIn.setWorkMillis((int) Math.round(cycles * 10.0 / SPIN_CYCLES_10MS));
        try {
            h.launch(spin(), Dim3.of(1), Dim3.of(1), 0, cycles);
        } finally {
            StandIn.setWorkMillis(previous);
        }
        assertEquals(1, StandIn.launches() - launchesBefore, "spin of " + cycles + " cycles: launches the stand-in driver accepted");
    }

    /** Milliseconds between two events recorded around a spin of {@code cycles} SM clock cycles. */
    private static float timeSpin(Handle h, long cycles) {
        try (Event start = h.createEvent(); Event end = h.createEvent()) {
            start.record(h);
            spinCycles(h, cycles);
            end.record(h);
            end.synchronize();
            return end.elapsedSince(start);
        }
    }

    @Test
    void elapsedTimeAroundASpinKernelIsPositiveAndPlausible() {
        try (Handle h = Handle.create(0)) {
            spinCycles(h, 1000); // warm up: the first launch of a kernel may load it
            h.synchronize();
            float ms = timeSpin(h, SPIN_CYCLES_10MS);
            System.out.println("[kernel-tests] spin of " + SPIN_CYCLES_10MS + " cycles: " + ms + " ms");
            assertTrue(ms > 0f, "elapsed " + ms + " ms should be > 0");
            // At most ~1.98 GHz: 2e7 cycles take at least ~10 ms; allow clock variation, but not 0 or absurd values.
            assertTrue(ms >= 5f && ms < 10_000f, "elapsed " + ms + " ms for " + SPIN_CYCLES_10MS + " cycles");
            assertEquals(0L, current());
        }
    }

    @Test
    void longerWorkTakesLonger() {
        try (Handle h = Handle.create(0)) {
            spinCycles(h, 1000);
            h.synchronize();
            float shortMs = timeSpin(h, SPIN_CYCLES_10MS);
            float longMs = timeSpin(h, 4 * SPIN_CYCLES_10MS);
            assertTrue(longMs > 2 * shortMs, "4x the cycles took " + longMs + " ms, 1x took " + shortMs + " ms");
        }
    }

    @Test
    void eventSynchronizeWaitsForTheWorkBeforeIt() {
        try (Handle h = Handle.create(0); Event done = h.createEvent()) {
            spinCycles(h, 1000);
            h.synchronize();
            long t0 = System.nanoTime();
            spinCycles(h, 4 * SPIN_CYCLES_10MS); // >= ~40 ms
            done.record(h);
            long afterRecord = System.nanoTime();
            done.synchronize();
            long afterWait = System.nanoTime();
            double waitedMs = (afterWait - t0) / 1e6;
            assertTrue(waitedMs >= 20, "Event.synchronize() returned after " + waitedMs + " ms; the spin takes >= ~40 ms");
            double launchMs = (afterRecord - t0) / 1e6;
            assertTrue(launchMs < waitedMs / 2, "launch and record are asynchronous: they took " + launchMs + " ms of " + waitedMs + " ms");
        }
    }

    @Test
    void eventsWorkOnAWrappedUserContext() {
        long user = 0;
        Handle h = null;
        try {
            user = newUserContext(0);
            h = Handle.wrap(user);
            float ms = timeSpin(h, SPIN_CYCLES_10MS);
            assertTrue(ms > 0f, "elapsed " + ms + " ms on a user context");
            assertEquals(0L, current());
        } finally {
            closeQuietly(h);
            destroyQuietly(user);
        }
    }

    @Test
    void recordingOnAHandleOfAnotherContextIsAnIllegalArgument() {
        long user = 0;
        Handle onUser = null;
        try (Handle onPrimary = Handle.create(0); Event primaryEvent = onPrimary.createEvent()) {
            user = newUserContext(0);
            onUser = Handle.wrap(user);
            Handle u = onUser;
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> primaryEvent.record(u));
            assertContains(e.getMessage(), String.valueOf(onPrimary.contextId()), String.valueOf(onUser.contextId()));
            primaryEvent.record(onPrimary); // fine on its own context
            primaryEvent.synchronize();
        } finally {
            closeQuietly(onUser);
            destroyQuietly(user);
        }
    }

    @Test
    void aClosedEventIsAnIllegalStateAndCloseIsIdempotent() {
        try (Handle h = Handle.create(0)) {
            Event start = h.createEvent();
            Event end = h.createEvent();
            start.record(h);
            end.record(h);
            end.synchronize();
            assertTrue(end.elapsedSince(start) >= 0f);
            start.close();
            start.close();
            assertThrows(IllegalStateException.class, () -> start.record(h));
            assertThrows(IllegalStateException.class, start::synchronize);
            assertThrows(IllegalStateException.class, () -> end.elapsedSince(start), "a closed start event");
            assertThrows(IllegalStateException.class, () -> start.elapsedSince(end), "a closed end event");
            end.close();
        }
    }

    @Test
    void creatingAnEventOnAClosedHandleIsAnIllegalState() {
        Handle h = Handle.create(0);
        h.close();
        assertThrows(IllegalStateException.class, h::createEvent);
    }
}
