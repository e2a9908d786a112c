package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * SM partitions (docs/design.md, rule P1): a split reports what it made, handles of a partition keep every handle
 * rule from many threads with nothing current before or after any call, the partition lives while anything made on
 * it does and is then destroyed without a detached stream left behind, its context is current on one thread at a
 * time, and two partitions' blocks run on disjoint SMs. On the CPU stand-in (which models green contexts: SM counts,
 * streams, launches per partition, one-thread-current violations) the same tests check the structure; results of
 * kernels are checked on the GPU against the CPU.
 */
@GpuTest
class SmPartitionGpuTest {
    @BeforeEach
    void partitionsAreSupported() {
        Native.ensureLoaded();
        String why = Cuda.device(0).smPartitionSupport();
        assumeTrue(why.isEmpty(), "SM partitions are not supported here: " + why);
        if (StandIn.active()) {
            StandIn.resetCounters();
        }
    }

    @AfterEach
    void nothingLeftCurrent() {
        assertEquals(0L, GpuTestSupport.current(), "a partition call left a context current on the test thread");
        if (StandIn.active()) {
            assertEquals(0, StandIn.greenCurrentViolations(), "a partition's context was current on two threads at once");
            assertEquals(0, StandIn.detachedStreamCalls(), "a call reached a stream of a destroyed partition");
        }
    }

    @Test
    @StandInCapable
    void aSplitReportsItsPartitionsGranularityAndRemainder() {
        Device d = Cuda.device(0);
        int minimum;
        try (SmPartitions two = d.splitSms(2)) {
            assertEquals(2, two.size());
            minimum = two.minimumSms();
            assertTrue(minimum >= 1, two.toString());
            assertEquals(d.multiprocessorCount(), two.deviceSms(), "the split sees the device's SMs");
            assertEquals(two.get(0).sms(), two.get(1).sms(), "equal partitions");
            assertEquals(0, two.get(0).sms() % minimum, "partitions come in steps of the smallest: " + two);
            assertEquals(two.deviceSms(), two.get(0).sms() + two.get(1).sms() + two.remainderSms(), two.toString());
            assertTrue(two.remainderSms() < 2 * minimum, "as large as the granularity allows: " + two);
            assertNotEquals(two.get(0).contextId(), two.get(1).contextId(), "each partition is a context of its own");
            assertEquals(1, two.get(1).index());
            if (StandIn.active()) {
                assertEquals(64, two.get(0).sms(), "the stand-in models an H200: 132 SMs = 64 + 64 + 4");
                assertEquals(4, two.remainderSms());
                assertEquals(64, StandIn.greenSms(two.get(0).contextId()));
                assertEquals(0, StandIn.greenSharedSms(two.get(0).contextId()), "one split's partitions share no SM");
            }
        }
        try (SmPartitions counted = d.splitSmsByCount(60, 1)) {
            assertEquals((60 + minimum - 1) / minimum * minimum, counted.get(0).sms(), "60 SMs rounded up to the granularity: " + counted);
            assertEquals(minimum, counted.get(1).sms(), "one SM asked for: the smallest partition");
        }
    }

    @Test
    @StandInCapable
    void splitsTheDeviceCannotMakeAndMisuseAreRefusedSayingWhy() {
        Device d = Cuda.device(0);
        assertThrows(IllegalArgumentException.class, () -> d.splitSms(0));
        assertThrows(IllegalArgumentException.class, () -> d.splitSmsByCount());
        assertThrows(IllegalArgumentException.class, () -> d.splitSmsByCount(8, -1));
        assertThrows(NullPointerException.class, () -> Handle.create((SmPartition) null));
        try (SmPartitions one = d.splitSms(1)) {
            int most = one.deviceSms() / one.minimumSms();
            IllegalArgumentException tooMany = assertThrows(IllegalArgumentException.class, () -> d.splitSms(most + 1));
            assertTrue(tooMany.getMessage().contains("1 to " + most + " partitions"), tooMany.getMessage());
            IllegalArgumentException tooLarge = assertThrows(IllegalArgumentException.class,
                    () -> d.splitSmsByCount(one.deviceSms() - one.minimumSms(), 2 * one.minimumSms()));
            assertTrue(tooLarge.getMessage().contains("partition 1 of") && tooLarge.getMessage().contains("does not fit"), tooLarge.getMessage());
            assertThrows(IndexOutOfBoundsException.class, () -> one.get(1));
            try (Handle h = Handle.create(one.get(0))) {
                assertEquals(one.get(0).sms(), h.partitionSms());
                assertEquals(one.get(0).contextId(), h.contextId());
                IllegalStateException e = assertThrows(IllegalStateException.class, h::makeCurrent);
                assertTrue(e.getMessage().contains("one thread at a time"), e.getMessage());
            }
        }
        try (Handle ordinary = Handle.create(0)) {
            assertEquals(0, ordinary.partitionSms());
        }
    }

    @Test
    @StandInCapable
    void aPartitionLivesWhileAnythingMadeOnItDoesAndLeavesNoDetachedStream() {
        Device d = Cuda.device(0);
        int liveBefore = StandIn.active() ? StandIn.liveGreenContexts() : 0;
        SmPartitions parts = d.splitSms(2);
        long id = parts.get(0).contextId();
        Handle h = Handle.create(parts.get(0));
        Handle other = Handle.create(parts.get(0));
        DeviceBuffer kept = h.allocate(4096);
        Event event = h.createEvent();
        parts.close();
        parts.close(); // idempotent
        assertThrows(IllegalStateException.class, () -> Handle.create(parts.get(0)), "a released partition makes no new handle");
        float[] values = randomFloats(1024, 7);
        h.copyToDevice(values, 0, kept, values.length);
        event.record(h);
        h.close();
        float[] back = new float[values.length];
        other.copyToHost(kept, back, 0, back.length);
        assertArrayEquals(values, back, "another handle of the partition uses the buffer after its own handle closed");
        other.close();
        if (StandIn.active()) {
            assertTrue(StandIn.greenAlive(id), "the buffer and the event keep the partition alive after its handles and split closed");
        }
        event.synchronize();
        kept.close();
        event.close();
        if (StandIn.active()) {
            assertFalse(StandIn.greenAlive(id), "the last thing made on the partition destroyed it");
            assertEquals(liveBefore, StandIn.liveGreenContexts(), "both partitions are gone");
            assertEquals(0, StandIn.detachedStreams(), "the partition's streams were destroyed before it: none is left detached");
        }
    }

    @Test
    @StandInCapable
    void handlesOfPartitionsWorkFromManyThreadsAtOnceWithNothingCurrent() throws Exception {
        int threads = 8;
        int rounds = StandIn.active() ? 40 : 400;
        try (SmPartitions parts = Cuda.device(0).splitSms(2); Handle a = Handle.create(parts.get(0)); Handle b = Handle.create(parts.get(1));
                Library kernels = TestKernels.load()) {
            Kernel addOne = kernels.kernel("cuh_test_add_one");
            Handle[] handles = {a, b};
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            AtomicInteger leftCurrent = new AtomicInteger();
            try {
                List<Future<?>> done = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    int seed = t;
                    Handle h = handles[t % 2];
                    done.add(pool.submit(() -> {
                        Random random = new Random(seed);
                        for (int r = 0; r < rounds; r++) {
                            int n = 1 + random.nextInt(5000);
                            float[] x = randomFloats(n, random.nextLong());
                            float[] y = randomFloats(n, random.nextLong());
                            try (DeviceBuffer dx = h.upload(x); DeviceBuffer dy = h.upload(y)) {
                                Blas.saxpy(h, n, 2f, dx, 1, dy, 1);
                                h.launch(addOne, Dim3.of((n + 255) / 256), Dim3.of(256), 0, dy, n);
                                float[] got = new float[n];
                                h.downloadAsync(dy, got, 0, n).get(60, TimeUnit.SECONDS);
                                if (!StandIn.active()) {
                                    for (int i = 0; i < n; i++) {
                                        float want = 2f * x[i] + y[i] + 1f;
                                        assertEquals(want, got[i], 1e-4f * Math.max(1f, Math.abs(want)), "element " + i + " of round " + r);
                                    }
                                } else {
                                    assertArrayEquals(y, got, "copies run on the stand-in (kernels do not)");
                                }
                            }
                            if (GpuTestSupport.current() != 0L) {
                                leftCurrent.incrementAndGet();
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> f : done) {
                    f.get(600, TimeUnit.SECONDS);
                }
            } finally {
                pool.shutdownNow();
            }
            assertEquals(0, leftCurrent.get(), "a call left a context current on a pool thread");
            if (StandIn.active()) {
                assertTrue(StandIn.greenLaunches(a.contextId()) >= (long) rounds * 2, "a's kernels ran on its partition's streams");
                assertTrue(StandIn.greenLaunches(b.contextId()) >= (long) rounds * 2, "b's kernels ran on its partition's streams");
                assertEquals(1, StandIn.greenStreams(a.contextId()), "one stream for the one handle of the partition (H9)");
            }
        }
    }

    @Test
    @StandInCapable
    void eventsFuturesAndGraphsWorkOnAPartitionHandle() throws Exception {
        try (SmPartitions parts = Cuda.device(0).splitSms(2); Handle h = Handle.create(parts.get(1)); Library kernels = TestKernels.load()) {
            Kernel addOne = kernels.kernel("cuh_test_add_one");
            float[] x = randomFloats(4096, 3);
            try (DeviceBuffer d = h.upload(x); Event start = h.createEvent(); Event end = h.createEvent()) {
                start.record(h);
                Graph graph = h.capture(() -> h.launch(addOne, Dim3.of(16), Dim3.of(256), 0, d, x.length));
                try (graph) {
                    for (int i = 0; i < 3; i++) {
                        graph.launch(h);
                    }
                }
                end.record(h);
                end.synchronize();
                assertTrue(end.elapsedSince(start) >= 0f);
                h.whenDone().get(60, TimeUnit.SECONDS);
                float[] got = new float[x.length];
                h.copyToHost(d, got, 0, got.length);
                if (!StandIn.active()) {
                    for (int i = 0; i < x.length; i++) {
                        assertEquals(x[i] + 3f, got[i], 1e-5f, "element " + i + " after three replays");
                    }
                }
            }
            if (StandIn.active()) {
                assertEquals(3, StandIn.greenLaunches(h.contextId()), "the replays' kernels ran on the partition");
            }
        }
    }

    @Test
    void twoPartitionsBlocksRunOnDisjointSms() {
        try (SmPartitions parts = Cuda.device(0).splitSms(2); Handle a = Handle.create(parts.get(0)); Handle b = Handle.create(parts.get(1));
                Library kernels = TestKernels.load()) {
            Kernel smids = kernels.kernel("cuh_test_smids");
            int blocks = 4 * Cuda.device(0).multiprocessorCount();
            long cycles = 200_000; // ~0.1 ms per block: long enough that the blocks spread over every SM they may use
            try (DeviceBuffer da = a.allocate(4L * blocks); DeviceBuffer db = b.allocate(4L * blocks)) {
                a.launch(smids, Dim3.of(blocks), Dim3.of(128), 0, da, cycles);
                b.launch(smids, Dim3.of(blocks), Dim3.of(128), 0, db, cycles);
                int[] ia = new int[blocks];
                int[] ib = new int[blocks];
                a.copyToHost(da, ia, 0, blocks);
                b.copyToHost(db, ib, 0, blocks);
                Set<Integer> sa = new HashSet<>();
                Set<Integer> sb = new HashSet<>();
                for (int i = 0; i < blocks; i++) {
                    sa.add(ia[i]);
                    sb.add(ib[i]);
                }
                System.out.println("[partitions] SMs used: partition 0 " + sa.size() + " of " + parts.get(0).sms() + ", partition 1 " + sb.size()
                        + " of " + parts.get(1).sms());
                assertTrue(sa.size() <= parts.get(0).sms() && sb.size() <= parts.get(1).sms(), "a partition's blocks ran on at most its SMs");
                Set<Integer> shared = new HashSet<>(sa);
                shared.retainAll(sb);
                assertTrue(shared.isEmpty(), "SMs used by both partitions: " + shared);
            }
        }
    }

    static float[] randomFloats(int n, long seed) {
        Random random = new Random(seed);
        float[] values = new float[n];
        for (int i = 0; i < n; i++) {
            values[i] = random.nextFloat() * 2f - 1f;
        }
        return values;
    }
}
