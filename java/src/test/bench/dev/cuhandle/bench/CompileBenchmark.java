package dev.cuhandle.bench;

import static dev.cuhandle.bench.CallTiming.median;

import dev.cuhandle.CompileOptions;
import dev.cuhandle.DeviceBuffer;
import dev.cuhandle.Handle;
import dev.cuhandle.Kernel;
import dev.cuhandle.KernelLaunch;
import dev.cuhandle.Library;

/**
 * Run-time compilation costs (issue 11): NVRTC compile and load of a ~50-line kernel, cold (a source
 * the in-process cache has not seen; the very first also loads NVRTC) and cached (same source again:
 * cache hit plus {@code cuLibraryLoadData}), and the first launch of a freshly loaded library against
 * a warm one (lazy loading makes the driver finish loading the kernel then). CSV lines
 * {@code cuhandle,<what>,<n>,0,<median>,0} with the unit in the name.
 */
public final class CompileBenchmark {
    private CompileBenchmark() {}

    /** A tiled 1-D stencil with a reduction: about 50 lines, some shared memory, loops and branches. */
    static String source(int salt) {
        return "// salt " + salt + ": a different source each cold run, so the in-process cache misses\n" + """
                #define TILE 256
                #define RADIUS 3

                __device__ float weight(int k) {
                    const float w[2 * RADIUS + 1] = {0.05f, 0.1f, 0.2f, 0.3f, 0.2f, 0.1f, 0.05f};
                    return w[k + RADIUS];
                }

                __device__ float warp_sum(float v) {
                    for (int offset = 16; offset > 0; offset /= 2) {
                        v += __shfl_down_sync(0xffffffffu, v, offset);
                    }
                    return v;
                }

                extern "C" __global__ void stencil_sum(const float* in, float* out, float* total, int n) {
                    __shared__ float tile[TILE + 2 * RADIUS];
                    __shared__ float partial[TILE / 32];
                    int g = blockIdx.x * TILE + threadIdx.x;
                    int l = threadIdx.x + RADIUS;
                    tile[l] = g < n ? in[g] : 0.0f;
                    if (threadIdx.x < RADIUS) {
                        int left = g - RADIUS;
                        int right = g + TILE;
                        tile[l - RADIUS] = left >= 0 && left < n ? in[left] : 0.0f;
                        tile[l + TILE] = right < n ? in[right] : 0.0f;
                    }
                    __syncthreads();
                    float v = 0.0f;
                    #pragma unroll
                    for (int k = -RADIUS; k <= RADIUS; k++) {
                        v += weight(k) * tile[l + k];
                    }
                    if (g < n) {
                        out[g] = v;
                    } else {
                        v = 0.0f;
                    }
                    v = warp_sum(v);
                    if ((threadIdx.x & 31) == 0) {
                        partial[threadIdx.x / 32] = v;
                    }
                    __syncthreads();
                    if (threadIdx.x < 32) {
                        float p = threadIdx.x < TILE / 32 ? partial[threadIdx.x] : 0.0f;
                        p = warp_sum(p);
                        if (threadIdx.x == 0) {
                            atomicAdd(total, p);
                        }
                    }
                }
                """;
    }

    private static double launchAndWaitUs(Handle h, KernelLaunch launch) {
        long t0 = System.nanoTime();
        launch.launch(h);
        h.synchronize();
        return (System.nanoTime() - t0) / 1e3;
    }

    /**
     * Prints the CSV lines.
     *
     * @param args ignored
     */
    public static void main(String[] args) {
        int n = 1 << 20;
        int runs = 7;
        try (Handle h = Handle.create(0); DeviceBuffer in = h.allocate(4L * n); DeviceBuffer out = h.allocate(4L * n);
                DeviceBuffer total = h.allocate(4)) {
            CompileOptions options = CompileOptions.defaults();
            long t0 = System.nanoTime();
            Library.compile(h, source(-1), options).close();
            System.out.printf("cuhandle,compile_first_in_process_ms,1,0,%.3f,0%n", (System.nanoTime() - t0) / 1e6);

            double[] cold = new double[runs];
            double[] firstLaunch = new double[runs];
            double[] warmLaunch = new double[runs];
            for (int r = 0; r < runs; r++) {
                long c0 = System.nanoTime();
                try (Library lib = Library.compile(h, source(r), options)) {
                    cold[r] = (System.nanoTime() - c0) / 1e6;
                    Kernel k = lib.kernel("stencil_sum");
                    KernelLaunch launch = k.newLaunch().grid((n + 255) / 256).block(256).arg(0, in).arg(1, out).arg(2, total).arg(3, n);
                    firstLaunch[r] = launchAndWaitUs(h, launch);
                    warmLaunch[r] = launchAndWaitUs(h, launch);
                }
            }
            double[] cached = new double[runs];
            for (int r = 0; r < runs; r++) {
                long c0 = System.nanoTime();
                Library.compile(h, source(0), options).close();
                cached[r] = (System.nanoTime() - c0) / 1e6;
            }
            System.out.printf("cuhandle,compile_cold_ms,%d,0,%.3f,0%n", runs, median(cold));
            System.out.printf("cuhandle,compile_cached_ms,%d,0,%.3f,0%n", runs, median(cached));
            System.out.printf("cuhandle,first_launch_after_compile_us,%d,0,%.1f,0%n", runs, median(firstLaunch));
            System.out.printf("cuhandle,second_launch_after_compile_us,%d,0,%.1f,0%n", runs, median(warmLaunch));
        }
    }
}
