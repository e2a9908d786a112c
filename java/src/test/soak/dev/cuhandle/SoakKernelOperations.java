package dev.cuhandle;

import dev.cuhandle.BlasTestSupport.Prec;
import dev.cuhandle.BlasTestSupport.Reduction;
import dev.cuhandle.BlasTestSupport.Vec;

/**
 * The soak's kernel operations: {@code cuh_test_add_one} launched through {@link Handle#launch} and a
 * reused {@link KernelLaunch} on a slice at a random offset, alone, between two events, or on the private
 * handle switched to the legacy stream; the elements around the slice must not change.
 */
final class SoakKernelOperations extends SoakOperations {
    /** The worker's reusable launch of {@code cuh_test_add_one}. */
    private final KernelLaunch launch;

    SoakKernelOperations(SoakWorker worker) {
        super(worker);
        this.launch = worker.c.addOne.newLaunch();
    }

    void addOneOn(Handle runner, DeviceBuffer view, int n) {
        int block = 32 * (1 + rnd.nextInt(32));
        int grid = Math.max(1, Math.min(1024, (n + block - 1) / block));
        if (rnd.nextBoolean()) {
            runner.launch(c.addOne, Dim3.of(grid), Dim3.of(block), 0, view, n);
        } else {
            launch.grid(grid).block(block).sharedBytes(0).arg(0, view).arg(1, n);
            runner.launch(launch);
        }
    }

    /** add_one {@code times} times on a slice at a random element offset; the rest must not change. */
    void kernelCheck(Handle runner, Handle owner, Runnable beforeAfter, String opName) {
        int n = elems();
        int lead = lead();
        int trail = rnd.nextInt(4);
        float[] all = randomFloats(lead + n + trail);
        float[] expected = all.clone();
        int times = 1 + rnd.nextInt(3);
        for (int i = lead; i < lead + n; i++) {
            for (int t = 0; t < times; t++) {
                expected[i] += 1.0f;
            }
        }
        try (SoakBuffers b = new SoakBuffers(owner, runner)) {
            DeviceBuffer whole = b.add(owner.upload(all));
            b.ready();
            DeviceBuffer view = whole.slice(4L * lead, 4L * n);
            for (int t = 0; t < times; t++) {
                addOneOn(runner, view, n);
            }
            if (beforeAfter != null) {
                beforeAfter.run();
            }
            float[] out = new float[all.length];
            runner.copyToHost(whole, out, 0, out.length);
            same(SoakMain.ADD_ONE + " x" + times + " on " + n + " floats at element " + lead + crossing(owner, runner), expected, out);
        }
        valid(opName);
    }

    void kernel() {
        Handle runner = runner();
        kernelCheck(runner, ownerFor(runner), null, "kernel " + SoakMain.ADD_ONE);
    }

    void events() {
        Handle runner = runner();
        Handle maker = rnd.nextInt(3) == 0 ? (runner == shared ? priv() : shared) : runner; // events of the same context
        try (Event start = maker.createEvent(); Event end = maker.createEvent()) {
            start.record(runner);
            kernelCheck(runner, ownerFor(runner), () -> {
                end.record(runner);
                end.synchronize();
                float ms = end.elapsedSince(start);
                if (!(ms >= 0) || Float.isInfinite(ms)) {
                    throw new Mismatch("event elapsed time " + ms + " ms; expected a finite value >= 0 (both recorded on one stream, in order)");
                }
                start.synchronize();
            }, "events record/synchronize/elapsed");
        }
    }

    /** The private handle on the legacy default stream for one kernel check, then back. */
    void privateStream() {
        priv().setStream(0);
        try {
            kernelCheck(priv(), priv(), null, "private handle on the legacy stream");
        } finally {
            priv().resetStream();
        }
    }
}
