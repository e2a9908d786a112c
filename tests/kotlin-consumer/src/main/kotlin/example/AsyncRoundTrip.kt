package example

import dev.cuhandle.Handle
import kotlinx.coroutines.future.await

/**
 * A copy of `xs` through pinned and device memory, suspending instead of blocking: `await()`
 * (kotlinx-coroutines' CompletableFuture bridge) resumes the coroutine when cuhandle's future
 * completes. The buffers stay valid while a copy is in flight: `use` closes them only after the
 * awaits returned (and close() would wait for a copy still running).
 */
suspend fun roundTrip(h: Handle, xs: FloatArray): FloatArray =
    h.allocateHost(4L * xs.size).use { host ->
        h.allocate(4L * xs.size).use { device ->
            host.put(0, xs, 0, xs.size)
            h.uploadAsync(host, device).await()
            h.downloadAsync(device, host).await()
            FloatArray(xs.size).also { host.get(0, it, 0, it.size) }
        }
    }
