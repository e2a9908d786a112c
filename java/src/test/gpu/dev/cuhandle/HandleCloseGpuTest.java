package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Rule H6: close is idempotent, waits for calls in flight on other threads, makes later calls
 * throw {@link IllegalStateException}, releases the primary-context retain exactly once and never
 * disturbs another handle on the same context; a JVM that exits with handles open exits cleanly.
 */
@GpuTest
@StandInCapable // close-while-busy waits on simulated stream time; the exit children run on the stand-in too
class HandleCloseGpuTest extends HandleGpuTestBase {
    private final Random random = new Random(0x4836L);

    @Test
    void h6_closeTwice_isIdempotent() {
        Handle h = Handle.create(0);
        checkAddOne(h, random, 100, 1, "before close");
        assertFalse(h.isClosed());
        h.close();
        assertTrue(h.isClosed());
        assertDoesNotThrow(h::close, "H6: a second close() must do nothing");
        assertDoesNotThrow(h::close, "H6: a third close() must do nothing");
        assertTrue(h.isClosed());
        assertTrue(h.toString().contains("closed"), h.toString());
        assertEquals(0L, current());
    }

    @Test
    void h6_callsAfterClose_throwIllegalStateException() {
        Handle h = Handle.create(0);
        DeviceBuffer kept = h.upload(new float[] {1, 2, 3, 4});
        Handle other = Handle.create(0);
        DeviceBuffer foreign = other.allocate(16);
        try {
            h.close();
            List<String> wrong = new ArrayList<>();
            expectClosed(wrong, "validate()", h::validate);
            expectClosed(wrong, "synchronize()", h::synchronize);
            expectClosed(wrong, "stream()", h::stream);
            expectClosed(wrong, "setStream(0)", () -> h.setStream(0));
            expectClosed(wrong, "resetStream()", h::resetStream);
            expectClosed(wrong, "makeCurrent()", h::makeCurrent);
            expectClosed(wrong, "allocate()", () -> h.allocate(16));
            expectClosed(wrong, "upload(float[])", () -> h.upload(new float[4]));
            expectClosed(wrong, "copyToDevice()", () -> h.copyToDevice(new float[4], 0, kept, 4));
            expectClosed(wrong, "copyToHost()", () -> h.copyToHost(kept, new float[4], 0, 4));
            expectClosed(wrong, "DeviceBuffer.download() of a buffer of the closed handle", () -> kept.download(new float[4]));
            expectClosed(wrong, "memset()", () -> h.memset(kept, 0));
            expectClosed(wrong, "copy()", () -> h.copy(kept, kept));
            expectClosed(wrong, "launch(varargs)", () -> h.launch(emptyKernel(), Dim3.of(1), Dim3.of(1), 0));
            expectClosed(wrong, "launch(KernelLaunch)", () -> h.launch(emptyKernel().newLaunch().argCount(0)));
            expectClosed(wrong, "createEvent()", h::createEvent);
            expectClosed(wrong, "wrapPointer()", () -> h.wrapPointer(kept.address(), 16));
            if (!wrong.isEmpty()) {
                fail("H6: calls after close must throw IllegalStateException:\n  " + String.join("\n  ", wrong));
            }
            assertEquals(0L, current(), "H4: failed calls leave nothing current");
            // Other handles and their buffers are untouched.
            checkAddOne(other, random, 256, 1, "H6: another handle on the same context after close");
            other.memset(foreign, 0);
            // Closing a buffer whose handle is closed frees it without an exception.
            assertDoesNotThrow(kept::close, "H6: closing a buffer after its handle closed");
            assertTrue(kept.isClosed());
        } finally {
            closeQuietly(kept);
            closeQuietly(foreign);
            closeQuietly(other);
        }
    }

    private static void expectClosed(List<String> wrong, String what, Step call) {
        try {
            call.run();
            wrong.add(what + " returned normally");
        } catch (IllegalStateException expected) {
            if (expected.getMessage() == null || !expected.getMessage().contains("closed")) {
                wrong.add(what + " threw IllegalStateException without saying it is closed: " + expected.getMessage());
            }
        } catch (Throwable t) {
            wrong.add(what + " threw " + t);
        }
    }

    interface Step {
        void run() throws Exception;
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void h6_closeWaitsForACallInFlightOnAnotherThread() throws Exception {
        Handle h = Handle.create(0);
        spin(h, 0.001); // loads the kernel and creates the stream outside the timed part
        h.synchronize();

        CountDownLatch aboutToSynchronize = new CountDownLatch(1);
        AtomicReference<Throwable> callerFailure = new AtomicReference<>();
        AtomicLong syncReturnedAt = new AtomicLong();
        AtomicLong syncTookNanos = new AtomicLong();
        Thread caller = new Thread(() -> {
            try {
                spin(h, 0.5);
                aboutToSynchronize.countDown();
                long t0 = System.nanoTime();
                h.synchronize();
                long t1 = System.nanoTime();
                syncTookNanos.set(t1 - t0);
                syncReturnedAt.set(t1);
            } catch (Throwable t) {
                callerFailure.set(t);
                aboutToSynchronize.countDown();
            }
        }, "h6-caller");
        caller.start();
        assertTrue(aboutToSynchronize.await(30, TimeUnit.SECONDS), "the caller thread never got to synchronize()");
        Thread.sleep(100); // let the caller enter synchronize(), which waits ~0.4 s more for the spin kernel

        AtomicReference<Throwable> closeFailure = new AtomicReference<>();
        AtomicLong closeReturnedAt = new AtomicLong();
        Thread closer = new Thread(() -> {
            try {
                h.close();
                closeReturnedAt.set(System.nanoTime());
            } catch (Throwable t) {
                closeFailure.set(t);
            }
        }, "h6-closer");
        closer.start();

        // As soon as close has started, new calls are refused, while the old call is still in flight.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (!h.isClosed() && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertTrue(h.isClosed(), "close() should mark the handle closed at once, before waiting");
        boolean callerStillInside = syncReturnedAt.get() == 0;
        Throwable late = null;
        try {
            h.validate();
        } catch (Throwable t) {
            late = t;
        }
        assertTrue(late instanceof IllegalStateException, "H6: a call that starts after close() began must throw IllegalStateException, got " + late);
        if (!callerStillInside) {
            System.out.println("[h6] note: the caller's synchronize() had already returned when close() started; the in-flight window was not hit");
        }

        caller.join(30_000);
        closer.join(30_000);
        assertFalse(caller.isAlive(), "the caller thread is stuck");
        assertFalse(closer.isAlive(), "close() is stuck");
        assertNull(callerFailure.get(), () -> "H6: the call in flight must complete normally when another thread closes the handle, but it threw "
                + callerFailure.get());
        assertNull(closeFailure.get(), () -> "H6: close() threw " + closeFailure.get());
        assertTrue(syncTookNanos.get() > TimeUnit.MILLISECONDS.toNanos(150),
                "the spin kernel should have kept synchronize() busy for ~0.5 s, but it returned after " + syncTookNanos.get() / 1_000_000 + " ms");
        assertTrue(callerStillInside, "close() started after the in-flight call had already returned; the scenario was not exercised");
        // The caller's clock is read after synchronize() has returned, i.e. after the call left the handle: a
        // closer that the exit woke may read its own clock first when the caller is descheduled in between (a loaded
        // 2-core machine saw 153 us). A close that did not wait would return while the ~0.4 s left of the kernel
        // still runs, so a 50 ms allowance keeps the check able to fail.
        long earlyNanos = syncReturnedAt.get() - closeReturnedAt.get();
        assertTrue(earlyNanos <= TimeUnit.MILLISECONDS.toNanos(50), "H6: close() returned " + earlyNanos / 1_000
                + " us before the call in flight on another thread returned; it must wait for it");
        System.out.println("[h6] synchronize() in flight took " + syncTookNanos.get() / 1_000_000 + " ms; close() returned "
                + (closeReturnedAt.get() - syncReturnedAt.get()) / 1_000 + " us after it");
    }

    @Test
    void h6_closingOneHandleLeavesAnotherOnTheSameContextWorking() {
        // Two handles on the primary context.
        Handle a = Handle.create(0);
        Handle b = Handle.create(0);
        try {
            assertEquals(hex(a.rawContext()), hex(b.rawContext()));
            assertTrue(a.stream() != b.stream(), "each handle owns its stream");
            DeviceBuffer fromA = a.upload(randomFloats(random, 64));
            checkAddOne(a, random, 512, 1, "handle a");
            a.close();
            fromA.close();
            b.validate();
            checkAddOne(b, random, 4096, 3, "H6: handle b on the primary context after handle a closed");
        } finally {
            closeQuietly(a);
            closeQuietly(b);
        }
        // Two handles on a user context.
        long user = newUserContext(0);
        try {
            Handle c = Handle.wrap(user);
            Handle d = Handle.wrap(user);
            try {
                checkAddOne(c, random, 512, 1, "handle c");
                c.close();
                checkAddOne(d, random, 4096, 2, "H6: handle d on the user context after handle c closed");
            } finally {
                closeQuietly(c);
                closeQuietly(d);
            }
            assertTrue(NativeTestApi.contextId(user) != 0, "the user context is alive after both handles closed");
        } finally {
            clearCurrent();
            destroyQuietly(user);
        }
    }

    /**
     * 100,000 create/close cycles release every primary-context retain exactly once. Run in a fresh
     * JVM ({@link PrimaryRetainCyclesChild}), where the primary context is inactive before the cycles
     * (asserted: only from there does "inactive again at the end" prove that no retain was left
     * behind); a release too many would take the keeper handle's retain and leave the primary context
     * inactive while the keeper is open (asserted active after the cycles, and the keeper computes).
     */
    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void h6_hundredThousandCreateCloseCycles_fromAnInactivePrimaryContext_releaseEveryRetainExactlyOnce(@TempDir Path dir) throws Exception {
        List<String> options = StandIn.active() ? List.of("-D" + StandIn.PROPERTY + "=true") : List.of();
        ChildRun run = new ChildRun(ChildJvm.run(dir, PrimaryRetainCyclesChild.class, options));
        run.assertNoCrash("H6: the create/close cycles");
        List<String> lines = run.linesStartingWith(PrimaryRetainCyclesChild.PREFIX);
        lines.forEach(System.out::println); // for the GPU log
        assertEquals(0, run.exitCode, "H6: the child's checks" + run.context());
        assertTrue(run.output.contains(PrimaryRetainCyclesChild.DONE), "the child did not finish" + run.context());
        assertTrue(lines.contains(PrimaryRetainCyclesChild.PREFIX + "before_active=0"),
                "the primary context must be inactive before the cycles, or the end state proves nothing" + run.context());
        assertTrue(lines.contains(PrimaryRetainCyclesChild.PREFIX + "with_keeper_active=1"), "the keeper handle activates the primary context" + run.context());
        assertTrue(lines.contains(PrimaryRetainCyclesChild.PREFIX + "after_cycles_with_keeper_active=1"),
                "H6: after " + PrimaryRetainCyclesChild.CYCLES + " cycles the keeper's retain is still held (no release too many)" + run.context());
        assertTrue(lines.contains(PrimaryRetainCyclesChild.PREFIX + "after_active=0"),
                "H6: once every handle is closed the primary context is inactive again (no retain left unreleased)" + run.context());
    }

    // ------------------------------------------------------------------ exit with handles open

    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void h6_jvmExitingWithHandlesOpen_exitsCleanly_returnFromMain(@TempDir Path dir) throws Exception {
        runChild(dir, "return");
    }

    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void h6_jvmExitingWithHandlesOpen_exitsCleanly_systemExit(@TempDir Path dir) throws Exception {
        runChild(dir, "exit");
    }

    private static void runChild(Path dir, String mode) throws Exception {
        ChildRun run = runHandleExitChild(dir, mode);
        run.assertNoCrash("H6: a JVM that exits with handles open (mode " + mode + ")");
        assertEquals(0, run.exitCode, "H6: a JVM that exits with handles open must exit with status 0 (mode " + mode + ")" + run.context());
        assertTrue(run.output.contains(HandleExitChild.READY), "the child did not get to the end of its work" + run.context());
        System.out.println("[h6] child JVM (" + mode + ") exited cleanly; its last lines:\n" + run.tail(3));
    }
}
