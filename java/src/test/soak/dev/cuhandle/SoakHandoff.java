package dev.cuhandle;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

/** A buffer one thread hands to another through the shared handle. */
final class SoakHandoff {
    final DeviceBuffer buffer;
    final float[] data;
    final long created = System.nanoTime();
    final AtomicBoolean claimed = new AtomicBoolean();
    final CountDownLatch done = new CountDownLatch(1);

    SoakHandoff(DeviceBuffer buffer, float[] data) {
        this.buffer = buffer;
        this.data = data;
    }
}
