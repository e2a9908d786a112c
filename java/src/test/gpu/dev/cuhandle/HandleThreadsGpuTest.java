package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Rule H5: a handle works from any thread, concurrently from many, with no per-thread setup. Each
 * thread checks on its own that nothing is current on it before and after (H4), and every result
 * is compared exactly with the CPU.
 */
@GpuTest
@StandInCapable // every launch is counted; buffers must come back unchanged
class HandleThreadsGpuTest extends HandleGpuTestBase {
    private static final int THREADS = 16;
    private static final int CALLS = 10_000;
    private static final int N = 1024;

    /** Of every 10 calls, 9 are launches and the 10th a cheap call (validate, stream, event). */
    private static boolean isLaunch(int call) {
        return call % 10 != 9;
    }

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void h5_sixteenThreadsShareOneHandle_tenThousandCallsEach() throws Exception {
        Kernel addOne = addOneKernel();
        try (Handle h = Handle.create(0)) {
            long ownStream = h.stream();
            Random random = new Random(0x4835L);
            float[][] inputs = new float[THREADS][];
            DeviceBuffer[] buffers = new DeviceBuffer[THREADS];
            try {
                for (int t = 0; t < THREADS; t++) {
                    inputs[t] = randomFloats(random, N);
                    buffers[t] = h.upload(inputs[t]);
                }
                LaunchCount accepted = new LaunchCount();
                long t0 = System.nanoTime();
                List<Integer> launches = onFreshThreads("h5-shared", THREADS, t -> {
                    DeviceBuffer mine = buffers[t];
                    KernelLaunch reusable = addOne.newLaunch().grid(gridFor(N).x).block(BLOCK).arg(0, mine).arg(1, N);
                    int launched = 0;
                    for (int call = 0; call < CALLS; call++) {
                        if (isLaunch(call)) {
                            if ((call & 1) == 0) {
                                h.launch(reusable);
                            } else {
                                h.launch(addOne, gridFor(N), Dim3.of(BLOCK), 0, mine, N);
                            }
                            launched++;
                        } else {
                            switch ((call / 10) % 3) {
                                case 0:
                                    h.validate();
                                    break;
                                case 1:
                                    long s = h.stream();
                                    if (s != ownStream) {
                                        throw new AssertionError("H5: stream() gave " + hex(s) + " on a thread, expected the handle's stream " + hex(ownStream));
                                    }
                                    break;
                                default:
                                    try (Event e = h.createEvent()) {
                                        e.record(h);
                                    }
                                    break;
                            }
                        }
                    }
                    return launched;
                });
                h.synchronize();
                long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                System.out.println("[h5] " + THREADS + " threads x " + CALLS + " calls on one handle: " + ms + " ms");
                accepted.assertAccepted(THREADS * (CALLS / 10 * 9), "H5: launches of all threads on one handle");
                for (int t = 0; t < THREADS; t++) {
                    int times = launches.get(t);
                    assertEquals(CALLS / 10 * 9, times, "launches made by thread " + t);
                    float[] out = new float[N];
                    h.copyToHost(buffers[t], out, 0, N);
                    assertExact(afterAddOnes(inputs[t], times), out, "H5: thread " + t + "'s buffer after " + times + " concurrent launches on one handle");
                }
                assertEquals(0L, current(), "H4: the test thread still has nothing current");
            } finally {
                for (DeviceBuffer b : buffers) {
                    closeQuietly(b);
                }
            }
        }
    }

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void h5_oneHandlePerThread_createdUsedAndClosedConcurrently() throws Exception {
        int launchesPerThread = 2_000;
        LaunchCount accepted = new LaunchCount();
        List<Long> contexts = onFreshThreads("h5-own", THREADS, t -> {
            Random random = new Random(1000 + t);
            float[] x = randomFloats(random, N);
            long context;
            try (Handle h = Handle.create()) {
                context = h.rawContext();
                assertTrue(h.ownsPrimaryContext(), "H2: a handle made on a fresh thread binds the primary context");
                try (DeviceBuffer b = h.upload(x)) {
                    KernelLaunch reusable = addOneKernel().newLaunch().grid(gridFor(N).x).block(BLOCK).arg(0, b).arg(1, N);
                    for (int i = 0; i < launchesPerThread; i++) {
                        if (i % 2 == 0) {
                            h.launch(reusable);
                        } else {
                            addOne(h, b, N);
                        }
                    }
                    float[] out = new float[N];
                    b.download(out);
                    assertExact(afterAddOnes(x, launchesPerThread), out, "H5: thread " + t + " with its own handle");
                }
            }
            return context;
        });
        accepted.assertAccepted(THREADS * launchesPerThread, "H5: launches of all threads, each on its own handle");
        long primary = NativeTestApi.retainPrimary(0);
        NativeTestApi.releasePrimary(0);
        for (int t = 0; t < THREADS; t++) {
            assertEquals(hex(primary), hex(contexts.get(t)), "thread " + t + "'s handle context");
        }
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void h5_handleOfAUserContextIsUsableFromThreadsThatNeverMadeItCurrent() throws Exception {
        long user = newUserContext(0);
        try (Handle h = Handle.wrap(user)) {
            Random random = new Random(0x55L);
            float[][] inputs = new float[8][];
            DeviceBuffer[] buffers = new DeviceBuffer[8];
            try {
                for (int t = 0; t < 8; t++) {
                    inputs[t] = randomFloats(random, N);
                    buffers[t] = h.upload(inputs[t]);
                }
                LaunchCount accepted = new LaunchCount();
                onFreshThreads("h5-user", 8, t -> {
                    for (int i = 0; i < 1000; i++) {
                        addOne(h, buffers[t], N);
                    }
                    float[] out = new float[N];
                    buffers[t].download(out);
                    assertExact(afterAddOnes(inputs[t], 1000), out, "H5: user-context handle used from thread " + t);
                    return null;
                });
                accepted.assertAccepted(8 * 1000, "H5: launches of 8 threads on a user-context handle");
            } finally {
                for (DeviceBuffer b : buffers) {
                    closeQuietly(b);
                }
            }
        } finally {
            clearCurrent();
            destroyQuietly(user);
        }
    }
}
