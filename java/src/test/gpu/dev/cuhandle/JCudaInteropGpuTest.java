package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.reflect.Method;
import java.util.Random;
import jcuda.NativePointerObject;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.JCudaDriver;
import org.junit.jupiter.api.Test;

/** Interop (issue: prove it with JCuda): JCuda owns the context and the memory, cuhandle launches on them. */
@GpuTest
class JCudaInteropGpuTest {
    private static long raw(NativePointerObject o) throws Exception {
        Method m = NativePointerObject.class.getDeclaredMethod("getNativePointer");
        m.setAccessible(true);
        return (long) m.invoke(o);
    }

    @Test
    void jcudaContextAndMemory_cuhandleHandleLaunchesOnThem() throws Exception {
        try {
            JCudaDriver.setExceptionsEnabled(true);
            JCudaDriver.cuInit(0);
        } catch (UnsatisfiedLinkError e) {
            assumeTrue(false, "JCuda's natives cannot load with this driver: " + e);
        }
        int n = 100_003;
        float[] host = new float[n];
        Random random = new Random();
        for (int i = 0; i < n; i++) {
            host[i] = random.nextFloat();
        }
        CUdevice device = new CUdevice();
        JCudaDriver.cuDeviceGet(device, 0);
        CUcontext ctx = new CUcontext();
        JCudaDriver.cuCtxCreate(ctx, 0, device);
        CUdeviceptr memory = new CUdeviceptr();
        try {
            JCudaDriver.cuMemAlloc(memory, 4L * n);
            JCudaDriver.cuMemcpyHtoD(memory, Pointer.to(host), 4L * n);
            try (Handle h = Handle.wrap(raw(ctx));
                 Library lib = TestKernels.load();
                 DeviceBuffer x = h.wrapPointer(raw(memory), 4L * n)) {
                assertFalse(h.ownsPrimaryContext());
                h.launch(lib.kernel("cuh_test_add_one"), Dim3.of((n + 255) / 256), Dim3.of(256), 0, x, n);
                h.synchronize();
            }
            float[] back = new float[n];
            JCudaDriver.cuMemcpyDtoH(Pointer.to(back), memory, 4L * n);
            for (int i = 0; i < n; i++) {
                assertEquals(host[i] + 1f, back[i], "element " + i);
            }
            CUcontext current = new CUcontext();
            JCudaDriver.cuCtxGetCurrent(current);
            assertEquals(raw(ctx), raw(current), "cuhandle left JCuda's context current (H4)");
        } finally {
            JCudaDriver.cuMemFree(memory);
            JCudaDriver.cuCtxDestroy(ctx);
        }
    }
}
