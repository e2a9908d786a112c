package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/** H6's protocol in isolation (no GPU): close waits for calls in flight; later calls throw. */
class LifetimeTest {
    @Test
    void closeWaitsForCallsInFlightAndIsIdempotent() throws Exception {
        Lifetime life = new Lifetime();
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicBoolean callFinished = new AtomicBoolean();
        Thread caller = new Thread(() -> {
            life.enter("thing");
            try {
                inside.countDown();
                release.await();
                callFinished.set(true);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                life.exit();
            }
        });
        caller.start();
        assertTrue(inside.await(5, TimeUnit.SECONDS));
        AtomicBoolean closed = new AtomicBoolean();
        Thread closer = new Thread(() -> closed.set(life.close()));
        closer.start();
        closer.join(200);
        assertTrue(closer.isAlive(), "close must wait while a call is in flight");
        assertTrue(life.isClosed(), "new calls are refused as soon as close starts");
        assertThrows(IllegalStateException.class, () -> life.enter("thing"));
        release.countDown();
        closer.join(5000);
        assertTrue(callFinished.get() && closed.get());
        assertFalse(life.close(), "the second close does nothing");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> life.enter("Handle"));
        assertTrue(e.getMessage().contains("Handle is closed"));
        assertTrue(e.getMessage().contains("it was closed by its close(); use it only inside its try-with-resources block"), e.getMessage());
        assertTrue(life.isClosed(), "a refused enter leaves the object closed");
    }

    @Test
    void theClosedMessageSaysWhatClosedTheObjectAndWhatToDo() {
        assertEquals("DeviceBuffer is closed: it was closed by its close() or by its handle's closeTrackedResources() (a slice is closed with the buffer"
                + " it was sliced from); use it only inside its try-with-resources block, or allocate or upload a new one",
                Lifetime.closedMessage("DeviceBuffer"));
        assertTrue(Lifetime.closedMessage("wrapped DeviceBuffer").contains("closeTrackedResources()"));
        assertTrue(Lifetime.closedMessage("variable 'counter' of the library from file k.fatbin").contains("its library's close()"));
        assertTrue(Lifetime.closedMessage("Library").contains("keep it open while its kernels and variables are in use"));
        assertTrue(Lifetime.closedMessage("Event").startsWith("Event is closed: it was closed by its close() or by its handle's closeTrackedResources()"));
    }
}
