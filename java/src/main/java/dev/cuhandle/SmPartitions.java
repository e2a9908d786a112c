package dev.cuhandle;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The SM partitions one split of a device made ({@link Device#splitSms(int)}, {@link Device#splitSmsByCount(int...)}),
 * with the device's SMs as the split saw them. Closing it ends the split's references: each partition is destroyed
 * once nothing made on it (a handle, buffer, event or graph) is left, so closing early is safe.
 *
 * <pre>{@code
 * try (SmPartitions parts = Cuda.device(0).splitSms(4)) {        // H200: 4 x 32 SMs, 4 SMs left over
 *     System.out.println(parts);                                  // sizes, granularity and remainder
 *     try (Handle h = Handle.create(parts.get(3))) {
 *         h.launch(kernel, Dim3.of(blocks), Dim3.of(256), 0, args);
 *     }
 * }
 * }</pre>
 */
public final class SmPartitions implements AutoCloseable {
    private final Device device;
    private final List<SmPartition> parts;
    private final int deviceSms;
    private final int minimumSms;
    private final int remainderSms;

    private SmPartitions(Device device, List<SmPartition> parts, int deviceSms, int minimumSms, int remainderSms) {
        this.device = device;
        this.parts = Collections.unmodifiableList(parts);
        this.deviceSms = deviceSms;
        this.minimumSms = minimumSms;
        this.remainderSms = remainderSms;
    }

    /**
     * The partitions of a native split's result: [device SMs, smallest partition, SMs left over, count, then per
     * partition: pointer, SMs, context id]. Owns every pointer from here, also when this fails.
     */
    static SmPartitions of(Device device, long[] result) {
        int count = (int) result[3];
        List<SmPartition> parts = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            parts.add(new SmPartition(result[4 + 3 * i], device, i, (int) result[5 + 3 * i], result[6 + 3 * i]));
        }
        return new SmPartitions(device, parts, (int) result[0], (int) result[1], (int) result[2]);
    }

    /**
     * The number of partitions.
     *
     * @return at least 1
     */
    public int size() {
        return parts.size();
    }

    /**
     * Partition {@code index}.
     *
     * @param index from 0 to {@link #size()} - 1
     * @return the partition
     * @throws IndexOutOfBoundsException if there is no such partition
     */
    public SmPartition get(int index) {
        if (index < 0 || index >= parts.size()) {
            throw new IndexOutOfBoundsException("partition " + index + " does not exist; this split made " + parts.size()
                    + " partitions, numbered from 0");
        }
        return parts.get(index);
    }

    /**
     * The partitions, in order.
     *
     * @return an unmodifiable list
     */
    public List<SmPartition> list() {
        return parts;
    }

    /**
     * The device that was split.
     *
     * @return the device
     */
    public Device device() {
        return device;
    }

    /**
     * The device's streaming multiprocessors.
     *
     * @return the SM count, 132 on an H200
     */
    public int deviceSms() {
        return deviceSms;
    }

    /**
     * The smallest partition the device makes, which is also the step partition sizes go in on the devices measured
     * (8 SMs on compute capability 9.0).
     *
     * @return the smallest partition's SM count
     */
    public int minimumSms() {
        return minimumSms;
    }

    /**
     * The SMs no partition holds: they still run the work of ordinary handles of the device.
     *
     * @return the SMs left over (4 when an H200's 132 SMs are split in two or four)
     */
    public int remainderSms() {
        return remainderSms;
    }

    /**
     * Ends the split's references to its partitions. Each partition is destroyed once no handle, buffer, event or
     * graph made on it is left. Idempotent.
     */
    @Override
    public void close() {
        for (SmPartition part : parts) {
            part.release();
        }
    }

    @Override
    public String toString() {
        StringBuilder sizes = new StringBuilder();
        for (SmPartition part : parts) {
            sizes.append(sizes.length() == 0 ? "" : " + ").append(part.sms());
        }
        return "SmPartitions[device " + device.ordinal() + ": " + deviceSms + " SMs = " + sizes + " + " + remainderSms
                + " left over; partitions come in steps of " + minimumSms + " SMs]";
    }
}
