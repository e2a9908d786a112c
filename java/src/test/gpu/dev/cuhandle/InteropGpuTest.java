package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Interop with code that uses the driver API directly (the role JCuda would play): a context
 * created with cuCtxCreate is wrapped in a Handle, memory from cuMemAlloc is launched on as raw
 * pointers and as wrapped buffers, raw streams carry the work, and the caller's current context is
 * never changed (H3, H4, H9, K1).
 */
@GpuTest
class InteropGpuTest extends KernelGpuTestBase {

    /**
     * The full interop story: a raw context current on the thread (as a driver-API program has it),
     * raw memory in it, a handle wrapping it, kernels launched on the raw pointer through both
     * launch paths, results checked; the raw context stays current throughout.
     */
    @Test
    void aWrappedRawContextLaunchesOnRawMemory() {
        Random r = freshRandom("wrapped raw context");
        int n = 100_000;
        float[] x = randomFloats(r, n);
        long ctx = 0;
        long raw = 0;
        Handle h = null;
        try {
            ctx = NativeTestApi.createContext(0); // current now, like after cuCtxCreate in a driver-API program
            assertEquals(ctx, current());
            raw = NativeTestApi.memAlloc(4L * n);
            h = Handle.wrap(ctx);
            assertEquals(ctx, h.rawContext());
            assertEquals(NativeTestApi.contextId(ctx), h.contextId());
            assertFalse(h.ownsPrimaryContext(), "a wrapped context is borrowed");
            assertEquals(ctx, current(), "H4: Handle.wrap leaves the caller's context current");

            try (DeviceBuffer view = h.wrapPointer(raw, 4L * n)) {
                h.copyToDevice(x, 0, view, n);
                // Raw pointer through a reusable launch ...
                h.launch(addOne().newLaunch().grid(gridFor(n).x).block(BLOCK).argPointer(0, raw).arg(1, n));
                // ... and through the varargs path (a Long is an 8-byte argument, like a pointer).
                h.launch(addOne(), gridFor(n), Dim3.of(BLOCK), 0, raw, n);
                assertEquals(ctx, current(), "H4: launches leave the caller's context current");
                float[] out = new float[n];
                view.download(out);
                assertExact(plusOne(plusOne(x, 0, n), 0, n), out, "two launches of cuh_test_add_one on raw memory");
            }
            assertEquals(ctx, current(), "H4");

            // The same with nothing current on the thread.
            clearCurrent();
            try (DeviceBuffer view = h.wrapPointer(raw, 4L * n)) {
                h.launch(addOne(), gridFor(n), Dim3.of(BLOCK), 0, raw, n);
                float[] out = new float[n];
                view.download(out);
                assertExact(plusOne(plusOne(plusOne(x, 0, n), 0, n), 0, n), out, "a third launch with nothing current");
            }
            assertEquals(0L, current(), "H4: nothing current stays nothing current");
            h.close();
            h = null;
            // The context is still alive and the memory still ours: free it the raw way.
            NativeTestApi.setCurrent(ctx);
            NativeTestApi.memFree(raw);
            raw = 0;
        } finally {
            closeQuietly(h);
            if (raw != 0 && ctx != 0) {
                try {
                    clearCurrent();
                    NativeTestApi.setCurrent(ctx);
                    NativeTestApi.memFree(raw);
                } catch (RuntimeException e) {
                    System.out.println("[kernel-tests] freeing raw memory failed: " + e);
                }
            }
            destroyQuietly(ctx);
        }
    }

    /** Raw memory allocated in a primary-context handle's context via makeCurrent + cuMemAlloc. */
    @Test
    void makeCurrentLetsRawCodeAllocateInTheHandlesContext() {
        Random r = freshRandom("makeCurrent + cuMemAlloc");
        int n = 5000;
        float[] x = randomFloats(r, n);
        try (Handle h = Handle.create(0)) {
            h.makeCurrent();
            long raw;
            try {
                assertEquals(h.rawContext(), current(), "makeCurrent leaves the handle's context current");
                raw = NativeTestApi.memAlloc(4L * n);
            } finally {
                clearCurrent();
            }
            try {
                try (DeviceBuffer w = h.wrapPointer(raw, 4L * n)) {
                    h.copyToDevice(x, 0, w, n);
                    h.launch(addOne(), gridFor(n), Dim3.of(BLOCK), 0, w, n);
                    float[] out = new float[n];
                    w.download(out);
                    assertExact(plusOne(x, 0, n), out, "add_one on raw memory of the primary context");
                }
            } finally {
                rawFree(h, raw);
            }
            assertEquals(0L, current());
        }
    }

    /** A handle of the primary context used while a user context is current leaves that one current (H4). */
    @Test
    void aPrimaryHandleUsedWhileAUserContextIsCurrentChangesNothing() {
        Random r = freshRandom("user context current");
        long user = 0;
        try {
            user = NativeTestApi.createContext(0); // current
            try (Handle h = Handle.create(0)) {
                // H1 would bind Handle.create() to the current user context; create(0) is explicit (H3).
                assertTrue(h.ownsPrimaryContext(), "create(0) binds to the primary context");
                assertTrue(h.rawContext() != user);
                assertEquals(user, current());
                int n = 3000;
                float[] x = randomFloats(r, n);
                try (DeviceBuffer b = h.upload(x)) {
                    h.launch(addOne(), gridFor(n), Dim3.of(BLOCK), 0, b, n);
                    float[] out = new float[n];
                    b.download(out);
                    assertExact(plusOne(x, 0, n), out, "add_one on the primary context while a user context is current");
                }
                assertEquals(user, current(), "H4: the user context is still current");
            }
            assertEquals(user, current(), "H4: after close too");
        } finally {
            destroyQuietly(user);
        }
    }

    /** Work on a raw stream of the handle's context (like cublasSetStream), then back to the handle's own. */
    @Test
    void launchesGoToARawStream() {
        Random r = freshRandom("raw stream");
        int n = 20_000;
        float[] x = randomFloats(r, n);
        long stream = 0;
        try (Handle h = Handle.create(0)) {
            h.makeCurrent();
            try {
                stream = NativeTestApi.streamCreate();
            } finally {
                clearCurrent();
            }
            long own = h.stream();
            h.setStream(stream);
            assertEquals(stream, h.stream());
            try (DeviceBuffer b = h.upload(x)) {
                for (int i = 0; i < 3; i++) {
                    h.launch(addOne(), gridFor(n), Dim3.of(BLOCK), 0, b, n);
                }
                float[] out = new float[n];
                b.download(out);
                assertExact(plusOne(plusOne(plusOne(x, 0, n), 0, n), 0, n), out, "three launches on a raw stream");
                h.resetStream();
                assertEquals(own, h.stream());
                h.launch(addOne(), gridFor(n), Dim3.of(BLOCK), 0, b, n);
                b.download(out);
                assertExact(plusOne(plusOne(plusOne(plusOne(x, 0, n), 0, n), 0, n), 0, n), out, "and one more on the handle's stream");
            }
            h.synchronize();
            h.makeCurrent();
            try {
                NativeTestApi.streamDestroy(stream);
                stream = 0;
            } finally {
                clearCurrent();
            }
        } finally {
            if (stream != 0) {
                System.out.println("[kernel-tests] leaking raw stream " + hex(stream) + " after a failure");
            }
        }
    }
}
