package dev.cuhandle;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One worker thread of the soak: until the deadline it draws an operation by weight and runs it on the
 * shared or its private handle, counting mismatches and unexpected exceptions as failures, and checks
 * after each that no context was left current on the thread (rule H4). At the end it resolves the
 * buffers it handed to other threads and closes its private handle.
 */
final class SoakWorker extends SoakOperations implements Runnable {
    private final Map<String, Runnable> ops = new LinkedHashMap<>();
    /** Operation names, each as often as its weight: a uniform draw picks by weight. */
    private final String[] table;
    private final SoakMemoryOperations memory;
    /** This worker's own handle; {@link SoakHandleOperations} replaces it now and then. */
    Handle priv;
    private String currentOp = "?";

    SoakWorker(SoakShared c, int index) {
        super(c, index);
        SoakBlasOperations blas = new SoakBlasOperations(this);
        SoakKernelOperations kernels = new SoakKernelOperations(this);
        this.memory = new SoakMemoryOperations(this);
        SoakHandleOperations handles = new SoakHandleOperations(this);
        SoakInvalidOperations invalid = new SoakInvalidOperations(this);
        List<String> t = new ArrayList<>();
        op(t, 16, "blas-update", blas::blasUpdate);
        op(t, 16, "blas-reduce", blas::blasReduce);
        op(t, 8, "kernel", kernels::kernel);
        op(t, 4, "events", kernels::events);
        op(t, 6, "memset-copy", memory::memsetCopy);
        op(t, 6, "arrays", memory::arrays);
        op(t, 3, "handoff-give", memory::handoffGive);
        op(t, 3, "handoff-take", memory::handoffTake);
        op(t, 2, "short-handle", handles::shortLivedHandle);
        op(t, 2, "handle-misc", handles::handleMisc);
        op(t, 1, "private-stream", kernels::privateStream);
        op(t, 1, "recreate-private", handles::recreatePrivate);
        op(t, 1, "leak", handles::leak);
        op(t, 24, "invalid", invalid::invalid);
        this.table = t.toArray(new String[0]);
    }

    private void op(List<String> t, int weight, String opName, Runnable body) {
        ops.put(opName, body);
        for (int i = 0; i < weight; i++) {
            t.add(opName);
        }
    }

    @Override
    public void run() {
        try {
            priv = newHandle();
            while (System.nanoTime() < c.deadline) {
                memory.resolveHandoffs(false);
                String opName = table[rnd.nextInt(table.length)];
                currentOp = opName;
                try {
                    ops.get(opName).run();
                } catch (Mismatch m) {
                    stats.mismatches.increment();
                    stats.failure("mismatch", name, currentOp, m.getMessage(), m);
                } catch (Throwable t) {
                    stats.unexpected.increment();
                    stats.failure("unexpected exception", name, currentOp, String.valueOf(t), t);
                }
                long cur = NativeTestApi.currentContext();
                if (cur != 0) {
                    stats.mismatches.increment();
                    stats.failure("mismatch", name, currentOp, "H4: context 0x" + Long.toHexString(cur)
                            + " is current on the worker thread after the operation; no call may leave one current", null);
                    NativeTestApi.setCurrent(0);
                }
            }
            memory.resolveHandoffs(true);
        } catch (Throwable t) {
            stats.unexpected.increment();
            stats.failure("unexpected exception", name, "worker loop", String.valueOf(t), t);
        } finally {
            if (priv != null) {
                try {
                    priv.close();
                } catch (Throwable t) {
                    stats.unexpected.increment();
                    stats.failure("unexpected exception", name, "closing the private handle", String.valueOf(t), t);
                }
            }
        }
    }
}
