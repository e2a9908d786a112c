package dev.cuhandle;

import java.util.ArrayList;
import java.util.List;

/**
 * Buffers of one operation: made by {@code owner}, used by {@code runner}. {@link #ready()}
 * waits for the owner's stream when they differ; {@link #close()} waits for the runner's
 * stream when they differ (the free is ordered on the owner's stream) and closes them all.
 */
final class SoakBuffers implements AutoCloseable {
    final Handle owner;
    final Handle runner;
    private final List<DeviceBuffer> list = new ArrayList<>();

    SoakBuffers(Handle owner, Handle runner) {
        this.owner = owner;
        this.runner = runner;
    }

    DeviceBuffer add(DeviceBuffer b) {
        list.add(b);
        return b;
    }

    void ready() {
        if (owner != runner) {
            owner.synchronize();
        }
    }

    @Override
    public void close() {
        try {
            if (owner != runner && !runner.isClosed()) {
                runner.synchronize();
            }
        } finally {
            for (DeviceBuffer b : list) {
                b.close();
            }
        }
    }
}
