package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Rules L2 and L5 on the object every wrapper's liveness goes through (no GPU, no native code):
 * the cleaning action is a close (it waits for calls in flight), every close returns only once
 * the release is done, and a close from inside the release fails instead of waiting for itself.
 */
class NativeObjectTest {
    private static final long POINTER = 0x1234_5678L;

    /** Issue 9 (1): the cleaner used to free at once, even with a call in flight. */
    @Test
    void theCleaningActionWaitsForCallsInFlightBeforeFreeing() throws Exception {
        AtomicInteger frees = new AtomicInteger();
        // The owner stays reachable to the end: otherwise the real Cleaner may run the same action
        // as the pretend one below after a GC, and the object is freed twice by the test itself.
        Object owner = new Object();
        NativeObject object = NativeObject.register(owner, POINTER, "Thing", p -> frees.incrementAndGet());
        assertEquals(POINTER, object.enter());
        Thread cleaner = new Thread(object::run, "pretend-cleaner"); // what the Cleaner runs once the owner is unreachable
        cleaner.start();
        cleaner.join(300);
        assertTrue(cleaner.isAlive(), "the cleaning action must wait while a call is in flight");
        assertEquals(0, frees.get(), "nothing may be freed under a call in flight");
        assertTrue(object.isClosed(), "cleaning closes the object: new calls are refused at once");
        assertThrows(IllegalStateException.class, object::enter);
        object.exit();
        cleaner.join(5_000);
        assertFalse(cleaner.isAlive());
        assertEquals(1, frees.get(), "freed exactly once after the call left");
        java.lang.ref.Reference.reachabilityFence(owner);
    }

    /** Issue 9 (7): a second, concurrent close() used to return while the first was still releasing. */
    @Test
    void aConcurrentCloseReturnsOnlyAfterTheReleaseIsComplete() throws Exception {
        CountDownLatch releasing = new CountDownLatch(1);
        AtomicLong releasedAt = new AtomicLong();
        NativeObject object = NativeObject.register(new Object(), POINTER, "Thing", p -> {
            releasing.countDown();
            sleep(300);
            releasedAt.set(System.nanoTime());
        });
        Thread first = new Thread(object::close, "first-closer");
        first.start();
        assertTrue(releasing.await(5, TimeUnit.SECONDS));
        object.close(); // the second close, while the first is inside the release
        long secondReturned = System.nanoTime();
        assertTrue(releasedAt.get() != 0 && releasedAt.get() <= secondReturned, "the second close returned before the release finished");
        first.join(5_000);
        object.close(); // and a third, later one returns at once
    }

    /** Issue 9 (7): a close from inside the object's own release fails fast instead of spinning for ever. */
    @Test
    void aCloseFromInsideTheReleaseFailsFast() throws Exception {
        AtomicReference<NativeObject> self = new AtomicReference<>();
        AtomicReference<Throwable> inner = new AtomicReference<>();
        NativeObject object = NativeObject.register(new Object(), POINTER, "Thing", p -> {
            try {
                self.get().close();
            } catch (Throwable t) {
                inner.set(t);
            }
        });
        self.set(object);
        Thread closer = new Thread(object::close);
        closer.start();
        closer.join(5_000);
        assertFalse(closer.isAlive(), "close() from inside the release must not hang");
        assertTrue(inner.get() instanceof IllegalStateException, String.valueOf(inner.get()));
        assertTrue(inner.get().getMessage().contains("cannot wait for itself"), inner.get().getMessage());
    }

    /** Issue 9 (8): a wrapper whose constructor fails releases the pointer itself, not through the cleaner. */
    @Test
    void freeNowReleasesAndKeepsTheConstructorsFailurePrimary() {
        RuntimeException failure = new RuntimeException("constructor failed");
        AtomicInteger frees = new AtomicInteger();
        NativeObject.freeNow(POINTER, p -> frees.incrementAndGet(), failure);
        assertEquals(1, frees.get());
        NativeObject.freeNow(POINTER, p -> {
            throw new IllegalStateException("free failed too");
        }, failure);
        assertEquals(1, failure.getSuppressed().length, "a failing free is attached to the constructor's failure");
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
