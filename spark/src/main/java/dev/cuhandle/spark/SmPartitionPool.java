package dev.cuhandle.spark;

import dev.cuhandle.Handle;
import dev.cuhandle.SmPartition;
import dev.cuhandle.SmPartitions;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One device's SM partitions in an executor JVM ({@value GpuSmPartitions#SM_PARTITIONS_KEY}), and how many task
 * handles each partition holds now. A task's handle goes to the partition with the fewest (the lowest index among
 * equals): a free partition whenever one is free, otherwise the least shared one.
 *
 * <p>Why share and not wait when more tasks run at once than there are partitions: admission
 * ({@link GpuAdmission}) already decides how many tasks use a GPU at once; a second wait would only repeat it, and
 * would stop a barrier stage of more tasks than partitions for good (its tasks do not wait for admission and all
 * hold their handles until the barrier). Handles that share a partition still have a stream each (rule H9); they
 * share its SMs, not those of the other partitions.
 */
final class SmPartitionPool {
    private final SmPartitions parts;
    private final int[] holders;
    private boolean closed;

    SmPartitionPool(SmPartitions parts) {
        this.parts = parts;
        this.holders = new int[parts.size()];
    }

    /** A task's handle on a partition and its place in the count; {@link #release()} counts it out once. */
    static final class Slot {
        private final SmPartitionPool pool;
        private final int index;
        private final Handle handle;
        private final AtomicBoolean released = new AtomicBoolean();

        private Slot(SmPartitionPool pool, int index, Handle handle) {
            this.pool = pool;
            this.index = index;
            this.handle = handle;
        }

        Handle handle() {
            return handle;
        }

        int index() {
            return index;
        }

        /** Counts the handle out of its partition (after the handle has closed); later calls do nothing. */
        void release() {
            if (released.compareAndSet(false, true)) {
                pool.release(index);
            }
        }
    }

    /**
     * A new handle on the least-held partition, counted in; null once the pool is closed (the caller asks for the
     * device's new pool). The handle is made under the pool's lock so that {@link #close()} cannot release the
     * partition between the choice and the handle (a handle made keeps its partition alive on its own); making one
     * is a stream creation, microseconds against a task's milliseconds.
     *
     * @throws dev.cuhandle.CudaException if the handle cannot be made; nothing is counted then
     */
    synchronized Slot take() {
        if (closed) {
            return null;
        }
        int best = 0;
        for (int i = 1; i < holders.length; i++) {
            if (holders[i] < holders[best]) {
                best = i;
            }
        }
        Handle handle = Handle.create(parts.get(best));
        holders[best]++;
        return new Slot(this, best, handle);
    }

    private synchronized void release(int index) {
        holders[index]--;
    }

    /** Task handles per partition now, in partition order. */
    synchronized int[] holders() {
        return holders.clone();
    }

    SmPartitions partitions() {
        return parts;
    }

    /**
     * Ends the split's references (executor shutdown): handles still open keep their partitions alive, and their
     * slots still count out here; no new handle is made from this pool.
     */
    synchronized void close() {
        if (!closed) {
            closed = true;
            parts.close();
        }
    }
}
