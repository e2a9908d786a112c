package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Rule T1 under load: 16 threads copy arrays of random types, lengths and offsets to and from the
 * device at once, synchronously and asynchronously, half of them on one shared handle and half on
 * handles of their own; every copy's data is checked. The copies share the context's staging pool
 * and the helper threads, so a slot handed to two copies, a range copied twice or not at all, or a
 * chunk read before its DMA shows up as a mismatch. Expected: 0 mismatches and 0 failures.
 */
@GpuTest
@StandInCapable
class ArrayTransferStressGpuTest extends KernelGpuTestBase {
    private static final int THREADS = 16;

    @Test
    void sixteenThreadsOnSharedAndPrivateHandles_smallChunks() throws Exception {
        try (TransferProperties p = TransferProperties.tiny()) {
            stress(StandIn.active() ? 25 : 200, 40_000);
        }
    }

    @Test
    void sixteenThreadsOnSharedAndPrivateHandles_defaultPlan() throws Exception {
        stress(StandIn.active() ? 6 : 40, StandIn.active() ? 600_000 : 4_000_000);
    }

    private static void stress(int iterations, int maxLength) throws Exception {
        long seed = System.nanoTime();
        System.out.println("[transfer-stress] " + THREADS + " threads x " + iterations + " copies up to " + maxLength + " elements, seed " + seed + "L");
        AtomicInteger mismatches = new AtomicInteger();
        AtomicInteger copies = new AtomicInteger();
        ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        try (Handle shared = Handle.create(0)) {
            for (int t = 0; t < THREADS; t++) {
                int id = t;
                Thread thread = new Thread(() -> {
                    Random r = new Random(seed + id);
                    Handle own = null;
                    try {
                        own = id % 2 == 0 ? null : Handle.create(0);
                        Handle h = own == null ? shared : own;
                        try (DeviceBuffer d = h.allocate(8L * maxLength + 64)) {
                            start.await();
                            for (int i = 0; i < iterations; i++) {
                                String what = copyOnce(h, d, r, maxLength, i % 3 == 2);
                                copies.incrementAndGet();
                                if (what != null) {
                                    mismatches.incrementAndGet();
                                    problems.add("thread " + id + (own == null ? " (shared handle)" : " (own handle)") + ": " + what);
                                }
                            }
                        }
                    } catch (Throwable e) {
                        problems.add("thread " + id + " failed: " + e);
                        e.printStackTrace();
                    } finally {
                        closeQuietly(own);
                    }
                }, "transfer-stress-" + t);
                threads.add(thread);
                thread.start();
            }
            start.countDown();
            for (Thread thread : threads) {
                thread.join(TimeUnit.MINUTES.toMillis(5));
            }
        }
        System.out.println("[transfer-stress] " + copies.get() + " round trips, " + mismatches.get() + " mismatches");
        assertEquals(0, problems.size(), "problems: " + problems);
        assertEquals(THREADS * iterations, copies.get(), "round trips finished");
    }

    /** One round trip of a random type, length and offsets; the problem found, or null. */
    private static String copyOnce(Handle h, DeviceBuffer d, Random r, int maxLength, boolean async) throws Exception {
        ArrayTypes type = ArrayTypes.values()[r.nextInt(ArrayTypes.values().length)];
        int length = r.nextInt(4) == 0 ? r.nextInt(16) : r.nextInt(maxLength);
        int offset = r.nextInt(9);
        Object src = type.random(r, offset + length);
        Object back = type.allocate(length + 3);
        if (async) {
            type.uploadAsync(h, src, offset, d, length).get(2, TimeUnit.MINUTES);
            type.downloadAsync(h, d, back, 3, length).get(2, TimeUnit.MINUTES);
        } else {
            type.copyToDevice(h, src, offset, d, length);
            type.copyToHost(h, d, back, 3, length);
        }
        byte[] expected = type.bytesOf(src, offset, length);
        byte[] actual = type.bytesOf(back, 3, length);
        int at = ArrayTypes.firstDifference(expected, actual);
        return at < 0 ? null : (async ? "async " : "") + type + " length " + length + " offset " + offset + ": first wrong byte " + at;
    }
}
