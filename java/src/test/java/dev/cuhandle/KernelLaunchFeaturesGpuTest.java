package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static dev.cuhandle.KernelLaunchArgumentsTest.assertContains;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 11 item 4, every launch a kernel can need: structures passed by value, dynamic shared
 * memory above 48 KiB, cooperative launches with a grid-wide barrier, thread-block clusters with
 * distributed shared memory, named attributes, parameter information without a launch. Results
 * are checked against the CPU on fresh random data (the seed is in every failure message). The
 * module (kernels/test/launch_features.cu) is sm_90 only: these tests need an H100/H200-class GPU.
 * The tests marked {@link StandInCapable} check the argument checks and the driver calls on the CPU
 * stand-in too (it models an H200).
 */
@GpuTest
class KernelLaunchFeaturesGpuTest extends GpuTestSupport {
    private static final String MODULE = "/kernels/launch_features.fatbin";
    private static final int STRUCT_BYTES = 24;
    private final long seed = System.nanoTime();
    private final Random random = new Random(seed);
    private Handle handle;
    private Library library;

    @BeforeEach
    void handleAndModule() {
        clearCurrent();
        handle = Handle.create(0);
        library = Library.loadResource(KernelLaunchFeaturesGpuTest.class, MODULE);
    }

    @AfterEach
    void closeAll() {
        closeQuietly(library);
        closeQuietly(handle);
        clearCurrent();
    }

    private String seedText() {
        return " (seed " + seed + ")";
    }

    /** {float a; double b; int c;} as nvcc lays it out: a at 0, b at 8, c at 16, 24 bytes. */
    private static ByteBuffer mixed(float a, double b, int c) {
        ByteBuffer s = ByteBuffer.allocate(STRUCT_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        s.putFloat(0, a).putDouble(8, b).putInt(16, c);
        return s;
    }

    // ---------------------------------------------------------------- structures by value

    @Test
    void aStructurePassedByValueReachesTheKernel() {
        int n = 1000 + random.nextInt(5000);
        float a = random.nextFloat() * 10 - 5;
        double b = random.nextDouble() * 1e6;
        int c = random.nextInt(1000);
        try (DeviceBuffer out = handle.allocate((long) n * Double.BYTES)) {
            library.kernel("cuh_test_struct_by_value").newLaunch().grid((n + 255) / 256).block(256)
                    .arg(0, mixed(a, b, c)).arg(1, out).arg(2, n).launch(handle);
            double[] got = new double[n];
            out.download(got);
            for (int i = 0; i < n; i++) {
                assertEquals((double) a * i + b - c, got[i], 0.0, "out[" + i + "] for a=" + a + " b=" + b + " c=" + c + seedText());
            }
        }
    }

    @Test
    @StandInCapable
    void aStructureOfTheWrongSizeIsRefusedBeforeTheLaunch() {
        Kernel k = library.kernel("cuh_test_struct_by_value");
        assumeTrue(k.parameterCount() >= 0, "the driver cannot report parameter sizes (before CUDA 12.4)");
        assertEquals(STRUCT_BYTES, k.parameterSize(0), "sizeof(CuhMixed)");
        try (DeviceBuffer out = handle.allocate(8)) {
            KernelLaunch launch = k.newLaunch().arg(0, ByteBuffer.allocate(16)).arg(1, out).arg(2, 1);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> launch.launch(handle));
            assertContains(e.getMessage(), "cuh_test_struct_by_value", "parameter 0", "24 bytes", "16 bytes");
        }
    }

    @Test
    @StandInCapable
    void theStructureBytesAreHandedToTheDriverAtTheParameterOffsets() {
        assumeTrue(StandIn.active(), "reads back what the stand-in driver received");
        try (DeviceBuffer out = handle.allocate(8)) {
            ByteBuffer s = mixed(1.5f, -2.25, 77);
            s.position(0);
            library.kernel("cuh_test_struct_by_value").newLaunch().arg(0, s).arg(1, out).arg(2, 1).launch(handle);
            assertEquals(0, s.position(), "the caller's buffer position does not move");
            assertEquals(Float.floatToIntBits(1.5f), StandIn.control(16, 0), "a at offset 0");
            long b = Double.doubleToLongBits(-2.25);
            assertEquals((int) b, StandIn.control(16, 8), "b's low word at offset 8");
            assertEquals((int) (b >>> 32), StandIn.control(16, 12), "b's high word at offset 12");
            assertEquals(77, StandIn.control(16, 16), "c at offset 16");
            assertEquals(1, StandIn.control(16, 32), "n after the pointer (offset 24 + 8)");
        }
    }

    @Test
    @StandInCapable
    void parameterInformationIsThereWithoutALaunch() {
        clearCurrent(); // looked up with nothing current: the driver is asked in the primary context
        Kernel k = library.kernel("cuh_test_struct_by_value");
        assumeTrue(Cuda.driverVersion() >= 12040, "cuKernelGetParamInfo needs CUDA 12.4");
        assertEquals(3, k.parameterCount());
        assertEquals(STRUCT_BYTES, k.parameterSize(0));
        assertEquals(8, k.parameterSize(1));
        assertEquals(4, k.parameterSize(2));
        assertEquals(0L, current(), "asking left nothing current (H4)");
    }

    // ---------------------------------------------------------------- dynamic shared memory

    @Test
    void aHundredKibOfDynamicSharedMemoryWorks() {
        Device d = handle.device();
        int bytes = 100 * 1024;
        assumeTrue(d.maxSharedMemoryPerBlockOptin() >= bytes, "device allows only " + d.maxSharedMemoryPerBlockOptin() + " bytes with opt-in");
        int n = bytes / Float.BYTES;
        float[] in = new float[n];
        for (int i = 0; i < n; i++) {
            in[i] = random.nextFloat();
        }
        try (DeviceBuffer x = handle.upload(in); DeviceBuffer y = handle.allocate((long) n * Float.BYTES)) {
            Kernel k = library.kernel("cuh_test_big_shared");
            k.newLaunch().block(1024).sharedBytes(bytes).arg(0, x).arg(1, y).arg(2, n).launch(handle);
            float[] got = new float[n];
            y.download(got);
            for (int i = 0; i < n; i++) {
                assertEquals(2.0f * in[n - 1 - i], got[i], 0.0f, "out[" + i + "]" + seedText());
            }
            assertTrue(k.attribute(KernelAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, d.ordinal()) >= bytes, "the launch opted the kernel in");
        }
    }

    @Test
    @StandInCapable
    void aLaunchAbove48KibOptsTheKernelInOnItsDevice() {
        Device d = handle.device();
        Kernel k = library.kernel("cuh_test_big_shared");
        int bytes = d.maxSharedMemoryPerBlock() + 4096;
        assumeTrue(bytes <= d.maxSharedMemoryPerBlockOptin(), "no opt-in beyond the default on this device");
        try (DeviceBuffer x = handle.allocate(bytes); DeviceBuffer y = handle.allocate(bytes)) {
            KernelLaunch launch = k.newLaunch().block(256).sharedBytes(bytes).arg(0, x).arg(1, y).arg(2, bytes / Float.BYTES);
            launch.launch(handle);
            assertEquals(bytes, k.attribute(KernelAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, d.ordinal()));
            launch.launch(handle); // set once: the second launch needs no new opt-in
            handle.synchronize();
        }
    }

    @Test
    @StandInCapable
    void sharedMemoryAboveTheOptInLimitIsRefusedNamingBothNumbers() {
        Device d = handle.device();
        int limit = d.maxSharedMemoryPerBlockOptin();
        Kernel k = library.kernel("cuh_test_big_shared");
        try (DeviceBuffer b = handle.allocate(4)) {
            KernelLaunch launch = k.newLaunch().sharedBytes(limit + 1).arg(0, b).arg(1, b).arg(2, 1);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> launch.launch(handle));
            assertContains(e.getMessage(), String.valueOf(limit + 1), String.valueOf(limit), "cuh_test_big_shared");
        }
        IllegalArgumentException e;
        e = assertThrows(IllegalArgumentException.class, () -> k.setMaxDynamicSharedBytes(d.ordinal(), limit + 1));
        assertContains(e.getMessage(), String.valueOf(limit + 1), String.valueOf(limit));
        k.setMaxDynamicSharedBytes(d.ordinal(), 64 * 1024);
        assertEquals(64 * 1024, k.attribute(KernelAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, d.ordinal()));
    }

    // ---------------------------------------------------------------- cooperative launches

    @Test
    void aCooperativeLaunchSynchronisesTheWholeGrid() {
        Device d = handle.device();
        assumeTrue(d.supportsCooperativeLaunch(), "device cannot launch cooperatively");
        int blocks = d.multiprocessorCount();
        int n = blocks * 256 * 3 + 1 + random.nextInt(1000);
        float[] in = new float[n];
        for (int i = 0; i < n; i++) {
            in[i] = random.nextFloat();
        }
        try (DeviceBuffer x = handle.upload(in); DeviceBuffer tmp = handle.allocate((long) n * 4); DeviceBuffer y = handle.allocate((long) n * 4)) {
            library.kernel("cuh_test_grid_rotate").newLaunch().cooperative(true).grid(blocks).block(256)
                    .arg(0, x).arg(1, tmp).arg(2, y).arg(3, n).launch(handle);
            float[] got = new float[n];
            y.download(got);
            float[] expected = new float[n];
            for (int i = 0; i < n; i++) {
                expected[i] = 2.0f * in[(i + 1) % n];
            }
            assertArrayEquals(expected, got, 0.0f, "rotated by one across the grid" + seedText());
        }
    }

    @Test
    @StandInCapable
    void aCooperativeGridLargerThanTheDeviceIsTheDriversError() {
        Device d = handle.device();
        assumeTrue(d.supportsCooperativeLaunch(), "device cannot launch cooperatively");
        try (DeviceBuffer b = handle.allocate(4)) {
            KernelLaunch launch = library.kernel("cuh_test_grid_rotate").newLaunch().cooperative(true).grid(d.multiprocessorCount() * 64).block(1024)
                    .arg(0, b).arg(1, b).arg(2, b).arg(3, 1);
            CudaException e = assertThrows(CudaException.class, () -> launch.launch(handle));
            assertEquals(CudaError.COOPERATIVE_LAUNCH_TOO_LARGE, e.error(), e.getMessage());
        }
        handle.synchronize(); // not sticky: the handle goes on
    }

    // ---------------------------------------------------------------- clusters

    @Test
    void clustersShareTheirBlocksSharedMemory() {
        Device d = handle.device();
        assumeTrue(d.computeCapabilityMajor() >= 9, "clusters need compute capability 9.0");
        int cluster = 2 + random.nextInt(3); // 2, 3 or 4 blocks
        int blocks = cluster * (8 + random.nextInt(8));
        float[] in = new float[blocks];
        for (int i = 0; i < blocks; i++) {
            in[i] = random.nextFloat();
        }
        try (DeviceBuffer x = handle.upload(in); DeviceBuffer rank = handle.allocate(blocks * 4L); DeviceBuffer out = handle.allocate(blocks * 4L)) {
            library.kernel("cuh_test_cluster_neighbour").newLaunch().grid(blocks).block(32).cluster(cluster, 1, 1)
                    .arg(0, x).arg(1, rank).arg(2, out).launch(handle);
            assertEachBlockReadItsNeighbour(in, rank, out, cluster);
        }
    }

    /** cuh_test_cluster_neighbour's results on the CPU: block b's rank in its cluster and the next block's value. */
    private void assertEachBlockReadItsNeighbour(float[] in, DeviceBuffer rank, DeviceBuffer out, int cluster) {
        int blocks = in.length;
        int[] ranks = new int[blocks];
        float[] got = new float[blocks];
        rank.download(ranks);
        out.download(got);
        for (int b = 0; b < blocks; b++) {
            int r = b % cluster;
            assertEquals(r, ranks[b], "rank of block " + b + " in clusters of " + cluster + seedText());
            assertEquals(in[b - r + (r + 1) % cluster], got[b], 0.0f, "block " + b + " read its neighbour's shared memory" + seedText());
        }
    }

    /**
     * Issue 20 (7): clusters above 8 blocks were refused when set, even after the kernel allowed non-portable
     * cluster sizes. Now the limit is the one the driver gives for the kernel and launch
     * (cuOccupancyMaxPotentialClusterSize: 8 without the attribute, 16 on an H200 with it).
     */
    @Test
    @StandInCapable
    void clustersAbove8BlocksRunOnceTheKernelAllowsNonPortableSizes() {
        Device d = handle.device();
        assumeTrue(d.computeCapabilityMajor() >= 9, "clusters need compute capability 9.0");
        Kernel k = library.kernel("cuh_test_cluster_neighbour");
        int cluster = 16;
        int blocks = cluster * (2 + random.nextInt(4));
        float[] in = new float[blocks];
        for (int i = 0; i < blocks; i++) {
            in[i] = random.nextFloat();
        }
        try (DeviceBuffer x = handle.upload(in); DeviceBuffer rank = handle.allocate(blocks * 4L); DeviceBuffer out = handle.allocate(blocks * 4L)) {
            KernelLaunch launch = k.newLaunch().grid(blocks).block(32).cluster(cluster, 1, 1).arg(0, x).arg(1, rank).arg(2, out);
            k.setAttribute(KernelAttribute.NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 0, d.ordinal());
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, () -> launch.launch(handle));
            assertContains(refused.getMessage(), "cuh_test_cluster_neighbour", "cluster (16, 1, 1)", "8 blocks", "NON_PORTABLE_CLUSTER_SIZE_ALLOWED");
            k.setAttribute(KernelAttribute.NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1, d.ordinal());
            launch.launch(handle);
            if (StandIn.active()) {
                assertEquals(1 | 4, StandIn.control(15, 0), "clustered, through cuLaunchKernelEx");
            } else {
                assertEachBlockReadItsNeighbour(in, rank, out, cluster);
            }
            // Beyond what the device allows with the attribute: refused naming the driver's limit.
            KernelLaunch tooLarge = k.newLaunch().grid(64).block(32).cluster(64, 1, 1).arg(0, x).arg(1, rank).arg(2, out);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> tooLarge.launch(handle));
            assertContains(e.getMessage(), "cluster (64, 1, 1)", "the kernel allows non-portable cluster sizes");
            handle.synchronize();
        }
    }

    @Test
    @StandInCapable
    void aGridThatIsNoMultipleOfTheClusterIsRefused() {
        assumeTrue(handle.device().computeCapabilityMajor() >= 9, "clusters need compute capability 9.0");
        try (DeviceBuffer b = handle.allocate(64)) {
            KernelLaunch launch = library.kernel("cuh_test_cluster_neighbour").newLaunch().grid(6).block(32).cluster(4, 1, 1).arg(0, b).arg(1, b).arg(2, b);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> launch.launch(handle));
            assertContains(e.getMessage(), "grid (6, 1, 1)", "cluster (4, 1, 1)", "cuh_test_cluster_neighbour");
        }
    }

    @Test
    @StandInCapable
    void attributeLaunchesGoThroughCuLaunchKernelEx() {
        assumeTrue(StandIn.active(), "reads back how the stand-in driver was called");
        try (DeviceBuffer b = handle.allocate(64 * 4)) {
            Kernel k = library.kernel("cuh_test_cluster_neighbour");
            KernelLaunch launch = k.newLaunch().grid(8).block(32).arg(0, b).arg(1, b).arg(2, b);
            launch.launch(handle);
            assertEquals(0, StandIn.control(15, 0), "a plain launch uses cuLaunchKernel");
            launch.cluster(2, 1, 1).launch(handle);
            assertEquals(1 | 4, StandIn.control(15, 0), "clustered, through cuLaunchKernelEx");
            launch.cluster(0, 0, 0).cooperative(true).launch(handle);
            assertEquals(1 | 2, StandIn.control(15, 0), "cooperative, through cuLaunchKernelEx");
            handle.synchronize();
        }
    }

    // ---------------------------------------------------------------- named attributes

    @Test
    @StandInCapable
    void namedAttributesCarryTheDriversNumbers() {
        Device d = handle.device();
        assertEquals(d.multiprocessorCount(), d.attribute(DeviceAttribute.MULTIPROCESSOR_COUNT));
        assertEquals(d.maxSharedMemoryPerBlockOptin(), d.attribute(DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
        assertEquals(d.supportsCooperativeLaunch() ? 1 : 0, d.attribute(DeviceAttribute.COOPERATIVE_LAUNCH));
        Kernel k = library.kernel("cuh_test_struct_by_value");
        assertEquals(k.registers(d.ordinal()), k.attribute(KernelAttribute.NUM_REGS, d.ordinal()));
        assertEquals(k.maxThreadsPerBlock(d.ordinal()), k.attribute(KernelAttribute.MAX_THREADS_PER_BLOCK, d.ordinal()));
    }
}
