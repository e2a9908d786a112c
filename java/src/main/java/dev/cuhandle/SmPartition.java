package dev.cuhandle;

/**
 * One SM partition of a device: a group of its streaming multiprocessors (a CUDA 12.4+ green context) that
 * handles created on it run on, and that no other partition's handles can take. Made by
 * {@link Device#splitSms(int)} or {@link Device#splitSmsByCount(int...)}; use it with
 * {@link Handle#create(SmPartition)}.
 *
 * <p>Every handle rule holds for a partition's handles (docs/design.md, rule P1): any thread may use them at once,
 * no call leaves anything current on the calling thread, each handle has a stream of its own in the partition,
 * and kernels, BLAS, copies, events, futures and graphs work on them. The partition stays alive while any handle,
 * buffer, event or graph made on it does, however early its {@link SmPartitions} is closed.
 *
 * <pre>{@code
 * try (SmPartitions parts = Cuda.device(0).splitSms(2);
 *      Handle heavy = Handle.create(parts.get(0));
 *      Handle light = Handle.create(parts.get(1))) {
 *     // heavy's long kernels run on parts.get(0).sms() SMs; light's short jobs keep the other partition
 * }
 * }</pre>
 */
public final class SmPartition extends NativeResource {
    private final Device device;
    private final int index;
    private final int sms;
    private final long contextId;

    SmPartition(long pointer, Device device, int index, int sms, long contextId) {
        super(pointer, "SmPartition", NativeApi::partitionRelease);
        this.device = device;
        this.index = index;
        this.sms = sms;
        this.contextId = contextId;
    }

    /**
     * The device the partition belongs to.
     *
     * @return the device
     */
    public Device device() {
        return device;
    }

    /**
     * The partition's place in its split, from 0.
     *
     * @return the index
     */
    public int index() {
        return index;
    }

    /**
     * The streaming multiprocessors the partition holds.
     *
     * @return the SM count (a multiple of the device's granularity, 8 on compute capability 9.0)
     */
    public int sms() {
        return sms;
    }

    /**
     * The unique id of the partition's context, as {@link Handle#contextId()} reports it for its handles.
     *
     * @return the context id
     */
    public long contextId() {
        return contextId;
    }

    /** Ends the split's own reference; handles, buffers and graphs made on the partition keep it alive. */
    void release() {
        closeNative();
    }

    @Override
    public String toString() {
        return "SmPartition[" + index + " of device " + device.ordinal() + ", " + sms + " SMs" + (isClosed() ? ", released]" : "]");
    }
}
