package dev.cuhandle;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Child JVM of {@link AsyncFaultGpuTest} (rule A1): a kernel faults (writes to address 16) in a
 * context of its own, with a {@code whenDone()} future and a download's future outstanding behind
 * it, and an asynchronous array download's. A sticky fault ends CUDA for the context, possibly more, so it never runs in the test JVM.
 * Prints {@link #RESULT} lines and exits 0 when the futures completed exceptionally with a sticky
 * {@link CudaException} within 10 s, 1 otherwise.
 */
public final class AsyncFaultChild {
    static final String RESULT = "[async-fault] ";

    private AsyncFaultChild() {}

    public static void main(String[] args) throws Exception {
        Library lib = TestKernels.load();
        Kernel fault = lib.kernel("cuh_test_fault");
        long ctx = NativeTestApi.createContext(0);
        NativeTestApi.setCurrent(0);
        Handle h = Handle.wrap(ctx);
        DeviceBuffer d = h.allocate(4096);
        HostBuffer host = h.allocateHost(4096);
        h.synchronize();
        CompletableFuture<Void> done;
        CompletableFuture<Void> download;
        CompletableFuture<Void> arrayDownload;
        try {
            h.launch(fault.newLaunch().grid(1).block(1).argPointer(0, 16L));
            done = h.whenDone();
            download = h.downloadAsync(d, host);
            arrayDownload = h.downloadAsync(d, new float[1024], 0, 1024);
        } catch (CudaException e) {
            System.out.println(RESULT + "observation: queuing after the faulting launch threw at once: " + e);
            System.exit(2);
            return;
        }
        boolean ok = outcome("whenDone()", done) & outcome("downloadAsync", download) & outcome("downloadAsync(float[])", arrayDownload);
        long start = System.nanoTime();
        host.close(); // the download's buffers were released when its future settled: no wait, no crash
        System.out.println(RESULT + "host.close() after the fault took " + (System.nanoTime() - start) / 1000 + " us");
        h.close();
        System.out.println(RESULT + (ok ? "PASS" : "FAIL"));
        System.out.flush();
        System.exit(ok ? 0 : 1);
    }

    private static boolean outcome(String what, CompletableFuture<Void> future) throws InterruptedException {
        try {
            future.get(10, TimeUnit.SECONDS);
            System.out.println(RESULT + "FAIL: the future of " + what + " completed normally after the fault");
            return false;
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            boolean sticky = cause instanceof CudaException && ((CudaException) cause).isSticky();
            System.out.println(RESULT + (sticky ? "ok: " : "FAIL: ") + what + " failed with " + cause);
            return sticky;
        } catch (TimeoutException e) {
            System.out.println(RESULT + "FAIL: the future of " + what + " was still pending 10 s after the fault");
            return false;
        }
    }
}
