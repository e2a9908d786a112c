package dev.cuhandle;

import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * Asynchronous copies between pinned {@link HostBuffer}s and device memory (rule A1), for
 * {@link Handle#uploadAsync(HostBuffer, long, DeviceBuffer, long)} and
 * {@link Handle#downloadAsync(DeviceBuffer, HostBuffer, long, long)}: queued with
 * {@code cuMemcpyHtoDAsync}/{@code cuMemcpyDtoHAsync} on the handle's stream and tracked by a future of
 * {@link Completions}, which releases the buffers once the GPU is done with them.
 */
final class PinnedCopies {
    private PinnedCopies() {}

    /**
     * Queues a copy between pinned and device memory and tracks it: the buffers stay entered (close waits)
     * until the copy's future settles, so the GPU never touches freed memory (rule A1). Nothing is pinned
     * across a wait (rule L4): the call returns as soon as the copy is queued. Inside a capture the copy is
     * recorded, the graph keeps both buffers (rule L7), and the future is complete at once: nothing was
     * queued to run.
     */
    static CompletableFuture<Void> copyAsync(Handle handle, HostBuffer host, long hostOffset, DeviceBuffer device, long bytes, boolean upload) {
        Objects.requireNonNull(host, upload ? "src" : "dst");
        Objects.requireNonNull(device, upload ? "dst" : "src");
        host.checkRange(hostOffset, bytes, 1);
        device.checkBytes(bytes, upload ? "destination" : "source");
        long h = handle.enter();
        try {
            if (Capture.recording(handle) != null) {
                return recordCopy(handle, h, host, hostOffset, device, bytes, upload);
            }
            long p = host.enter();
            long b;
            try {
                b = device.enterFor(handle);
            } catch (RuntimeException | Error e) {
                host.exit();
                throw e;
            }
            Runnable release = () -> {
                device.exit();
                host.exit();
            };
            try {
                NativeApi.pinnedCopyAsync(h, p, hostOffset, b, device.byteOffset(), bytes, upload);
            } catch (RuntimeException | Error e) {
                release.run();
                throw e;
            }
            try {
                return Completions.track(handle, h, release);
            } catch (RuntimeException | Error e) {
                // The copy is queued but cannot be tracked: wait for it here, so that releasing the
                // buffers cannot free memory the GPU still uses.
                try {
                    NativeApi.handleSynchronize(h);
                } catch (RuntimeException s) {
                    e.addSuppressed(s);
                }
                release.run();
                throw e;
            }
        } finally {
            handle.exit();
        }
    }

    /** {@link #copyAsync} inside a capture on this thread (the caller entered the handle as {@code h}). */
    private static CompletableFuture<Void> recordCopy(Handle handle, long h, HostBuffer host, long hostOffset, DeviceBuffer device, long bytes, boolean upload) {
        long p = Capture.enterFor(handle, host);
        try {
            long b = device.enterFor(handle);
            try {
                NativeApi.pinnedCopyAsync(h, p, hostOffset, b, device.byteOffset(), bytes, upload);
            } finally {
                device.exit();
            }
        } finally {
            host.exit();
        }
        return CompletableFuture.completedFuture(null);
    }
}
