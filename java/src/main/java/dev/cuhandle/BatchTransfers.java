package dev.cuhandle;

import java.util.concurrent.CompletableFuture;

/**
 * Copies between many Java arrays of one type and as many device buffers in one staged pass, for
 * {@link Handle#uploadAll(float[][], DeviceBuffer[])} and friends (rules T1 and L4): the checks, naming the index
 * of what is wrong (K2), and the asynchronous forms. The native side ({@code rust/src/core/transfer/batch.rs})
 * lays the arrays end to end through the pinned staging slots of a single-array copy, so that many small arrays
 * share one chunk, and hands the copies of a chunk to the driver in one {@code cuMemcpyBatchAsync} call where the
 * driver has it (CUDA 12.8+), or one copy per array piece elsewhere. Each array is read or written once, piece by
 * piece, and never while the thread waits for the GPU.
 */
final class BatchTransfers {
    /**
     * System property: {@code false} keeps batches off {@code cuMemcpyBatchAsync} (one driver copy per array
     * piece, as on drivers before 12.8); read at each batch. For comparisons and tests.
     */
    static final String BATCH_ENTRY = "cuhandle.transfer.batchEntry";

    private BatchTransfers() {}

    /** The names of a batch's two lists in messages, by direction. */
    private static String arraysName(boolean upload) {
        return upload ? "src" : "dst";
    }

    private static String buffersName(boolean upload) {
        return upload ? "dst" : "src";
    }

    /**
     * Copies {@code arrays[i]} to the start of {@code buffers[i]} ({@code upload}) or back, for every {@code i},
     * on the handle's current stream. An upload returns once every array has been read, a download once every
     * element is in its array.
     */
    static void copy(Handle handle, DeviceBuffer[] buffers, Object[] arrays, boolean upload) {
        Capture.refuseOnThisThread(upload ? "a batch copy from Java arrays to the device" : "a batch copy from the device to Java arrays");
        Batch batch = check(buffers, arrays, upload);
        if (batch.buffers.length == 0) {
            handle.enter(); // nothing to copy, but a closed handle is still refused
            handle.exit();
            return;
        }
        handle.awaitQueuedWorkCancellably();
        long h = handle.enter();
        long[] entered = new long[batch.buffers.length];
        try {
            enterAll(handle, batch, entered);
            run(h, batch, entered, ArrayTransfers.HANDLE_STREAM, false);
        } finally {
            exitAll(batch.buffers, entered);
            handle.exit();
        }
    }

    /**
     * Starts the copy of {@link #copy} on a cuhandle thread and returns its future at once, on the stream the
     * handle has at this call. The handle and buffers stay entered until the copy is done (their close waits).
     */
    static CompletableFuture<Void> copyAsync(Handle handle, DeviceBuffer[] buffers, Object[] arrays, boolean upload) {
        Capture.refuseOnThisThread(upload ? "an asynchronous batch copy from Java arrays to the device"
                : "an asynchronous batch copy from the device to Java arrays");
        Batch batch = check(buffers, arrays, upload);
        if (batch.buffers.length == 0) {
            handle.enter(); // nothing to copy, but a closed handle is still refused
            handle.exit();
            return CompletableFuture.completedFuture(null);
        }
        long h = handle.enter();
        long[] entered = new long[batch.buffers.length];
        long stream;
        try {
            enterAll(handle, batch, entered);
            stream = NativeApi.handleStream(h);
        } catch (RuntimeException | Error e) {
            exitAll(batch.buffers, entered);
            handle.exit();
            throw e;
        }
        return TransferThreads.future(() -> run(h, batch, entered, stream, true), () -> {
            exitAll(batch.buffers, entered);
            handle.exit();
        });
    }

    /** A checked batch: copies of the caller's two lists (so that later changes to them do not reach the copy). */
    private static final class Batch {
        final DeviceBuffer[] buffers;
        final Object[] arrays;
        final ArrayTransfers.Kind kind;
        final long[] lengths;
        final long totalBytes;
        final boolean upload;

        Batch(DeviceBuffer[] buffers, Object[] arrays, ArrayTransfers.Kind kind, long[] lengths, long totalBytes, boolean upload) {
            this.buffers = buffers;
            this.arrays = arrays;
            this.kind = kind;
            this.lengths = lengths;
            this.totalBytes = totalBytes;
            this.upload = upload;
        }
    }

    /** Checks the lists (K2): no null list or element, as many buffers as arrays, each buffer large enough. */
    private static Batch check(DeviceBuffer[] buffers, Object[] arrays, boolean upload) {
        String arraysName = arraysName(upload);
        String buffersName = buffersName(upload);
        if (arrays == null) {
            throw new NullPointerException(arraysName + " (the array of Java arrays) is null");
        }
        if (buffers == null) {
            throw new NullPointerException(buffersName + " (the array of device buffers) is null");
        }
        DeviceBuffer[] b = buffers.clone();
        Object[] a = arrays.clone();
        if (a.length != b.length) {
            throw new IllegalArgumentException(arraysName + " holds " + a.length + " arrays but " + buffersName + " holds " + b.length
                    + " buffers; expected one buffer per array");
        }
        ArrayTransfers.Kind kind = ArrayTransfers.Kind.ofArrayClass(a.getClass().getComponentType());
        long[] lengths = new long[a.length];
        long total = 0;
        for (int i = 0; i < a.length; i++) {
            if (a[i] == null) {
                throw new NullPointerException(arraysName + "[" + i + "] is null");
            }
            if (b[i] == null) {
                throw new NullPointerException(buffersName + "[" + i + "] is null");
            }
            long bytes = (long) java.lang.reflect.Array.getLength(a[i]) * kind.bytes;
            if (bytes > b[i].byteLength()) {
                throw new IllegalArgumentException(buffersName + "[" + i + "] holds " + b[i].byteLength() + " bytes, but " + arraysName + "[" + i
                        + "] has " + bytes / kind.bytes + " elements (" + bytes + " bytes); expected a buffer of at least " + bytes + " bytes");
            }
            lengths[i] = bytes;
            total += bytes;
        }
        return new Batch(b, a, kind, lengths, total, upload);
    }

    /**
     * Enters every buffer for the call (open, of the handle's context: K3), naming the index of one that is not;
     * on failure the ones entered so far are left again.
     */
    private static void enterAll(Handle handle, Batch batch, long[] entered) {
        for (int i = 0; i < batch.buffers.length; i++) {
            try {
                entered[i] = batch.buffers[i].enterFor(handle);
            } catch (IllegalStateException e) {
                exitAll(batch.buffers, entered);
                throw new IllegalStateException(buffersName(batch.upload) + "[" + i + "]: " + e.getMessage(), e);
            } catch (IllegalArgumentException e) {
                exitAll(batch.buffers, entered);
                throw new IllegalArgumentException(buffersName(batch.upload) + "[" + i + "]: " + e.getMessage(), e);
            }
        }
    }

    /** Leaves the buffers entered by {@link #enterAll} (an entry of 0 was never entered) and clears the entries. */
    private static void exitAll(DeviceBuffer[] buffers, long[] entered) {
        for (int i = 0; i < entered.length; i++) {
            DeviceBuffer.exit(buffers[i], entered[i]);
            entered[i] = 0;
        }
    }

    /** Runs the batch on entered pointers, in one native call on this thread. */
    private static void run(long h, Batch batch, long[] entered, long stream, boolean waitForDevice) {
        long[] offsets = new long[entered.length];
        for (int i = 0; i < offsets.length; i++) {
            offsets[i] = batch.buffers[i].byteOffset();
        }
        TransferPlan plan = TransferPlan.of(batch.totalBytes, batch.kind.bytes);
        boolean batched = Boolean.parseBoolean(System.getProperty(BATCH_ENTRY, "true").trim());
        NativeApi.batchCopy(h, entered, offsets, batch.lengths, batch.arrays, batch.kind.code, batch.upload, stream, plan.chunkBytes,
                plan.depth, plan.slotBytes, plan.idleSlots, waitForDevice, plan.criticalCopy, batched);
    }
}
