package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Issue 36: misuse the driver itself refuses carries the driver's own words. Each case below is a mistake a user can
 * make through the public API that cuhandle passes to the driver (it cannot know better without asking it); every
 * one that ends in a {@link CudaException} from the driver must carry the lines the driver logged about it
 * ({@link CudaException#driverLog()}), where the driver keeps a log (CUDA 12.9+). Prints one
 * {@code [driver-log-misuse]} line per case and the count.
 */
@GpuTest
class DriverLogMisuseGpuTest {
    /** A PTX module with a syntax error: the driver's JIT refuses it. */
    private static final String BAD_PTX = ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry broken()\n{\n\tthis is not ptx;\n}\n";

    interface Misuse {
        void run(Handle h, Library lib) throws Exception;
    }

    @Test
    @StandInCapable
    void everyMisuseTheDriverRefusesCarriesWhatItLogged() throws Exception {
        assumeTrue(Cuda.driverVersion() >= 12090, "driver " + Cuda.driverVersion() + " keeps no error log (CUDA 12.9+)");
        Map<String, Misuse> cases = new LinkedHashMap<>();
        cases.put("device memory of 1 PiB", (h, lib) -> h.allocate(1L << 50));
        cases.put("device memory of 2^52 bytes", (h, lib) -> h.allocate(1L << 52));
        cases.put("page-locked memory of 1 PiB", (h, lib) -> h.allocateHost(1L << 50));
        cases.put("page-locked memory of 2^52 bytes", (h, lib) -> h.allocateHost(1L << 52));
        cases.put("a kernel the library does not have", (h, lib) -> lib.kernel("cuh_no_such_kernel"));
        cases.put("another kernel the library does not have", (h, lib) -> lib.kernel("saxpy_but_misspelt"));
        cases.put("a variable the library does not have", (h, lib) -> lib.global(h, "cuh_no_such_variable"));
        cases.put("a kernel attribute that does not exist", (h, lib) -> lib.kernel("cuh_test_add_one").attribute(9999, 0));
        cases.put("setting a kernel attribute that does not exist", (h, lib) -> lib.kernel("cuh_test_add_one").setAttribute(9999, 1, 0));
        cases.put("a device attribute that does not exist", (h, lib) -> Cuda.device(0).attribute(9999));
        cases.put("a negative device attribute", (h, lib) -> Cuda.device(0).attribute(-5));
        cases.put("an image of random bytes", (h, lib) -> Library.load(KernelGpuTestBase.randomBytes(new java.util.Random(1), 4096)).close());
        cases.put("an image of zeros", (h, lib) -> Library.load(new byte[4096]).close());
        cases.put("PTX with a syntax error", (h, lib) -> Library.load(BAD_PTX.getBytes(StandardCharsets.US_ASCII)).close());
        cases.put("an ELF header and nothing else", (h, lib) -> Library.load(elfHeaderOnly()).close());
        cases.put("the time between two events never recorded", (h, lib) -> {
            try (Event a = h.createEvent(); Event b = h.createEvent()) {
                b.elapsedSince(a);
            }
        });
        cases.put("the time since an event never recorded", (h, lib) -> {
            try (Event a = h.createEvent(); Event b = h.createEvent()) {
                b.record(h);
                b.synchronize();
                b.elapsedSince(a);
            }
        });
        cases.put("page-locking a direct buffer twice", (h, lib) -> {
            ByteBuffer direct = ByteBuffer.allocateDirect(1 << 16);
            try (HostRegistration first = HostRegistration.register(h, direct); HostRegistration second = HostRegistration.register(h, direct)) {
                second.buffer();
            }
        });
        cases.put("page-locking a slice of a page-locked buffer", (h, lib) -> {
            ByteBuffer direct = ByteBuffer.allocateDirect(1 << 16);
            try (HostRegistration first = HostRegistration.register(h, direct);
                    HostRegistration second = HostRegistration.register(h, direct.slice(4096, 4096))) {
                second.buffer();
            }
        });
        cases.put("more dynamic shared memory than the kernel may opt in to", (h, lib) ->
                lib.kernel("cuh_test_add_one").setMaxDynamicSharedBytes(0, Cuda.device(0).maxSharedMemoryPerBlockOptin() + 4096));
        cases.put("a negative dynamic shared memory limit", (h, lib) -> lib.kernel("cuh_test_add_one").setMaxDynamicSharedBytes(0, -1));
        cases.put("a kernel attribute of a device that does not exist", (h, lib) -> lib.kernel("cuh_test_add_one").attribute(KernelAttribute.MAX_THREADS_PER_BLOCK, 99));
        cases.put("a kernel attribute of device -1", (h, lib) -> lib.kernel("cuh_test_add_one").attribute(KernelAttribute.NUM_REGS, -1));
        cases.put("setting a kernel attribute for a device that does not exist", (h, lib) ->
                lib.kernel("cuh_test_add_one").setAttribute(KernelAttribute.PREFERRED_SHARED_MEMORY_CARVEOUT, 50, 99));
        cases.put("a shared memory carveout of 200 percent", (h, lib) ->
                lib.kernel("cuh_test_add_one").setAttribute(KernelAttribute.PREFERRED_SHARED_MEMORY_CARVEOUT, 200, 0));
        cases.put("a cooperative grid of 1,000 blocks per SM", (h, lib) -> {
            try (DeviceBuffer x = h.allocate(4)) {
                lib.kernel("cuh_test_add_one").newLaunch().grid(1000 * Cuda.device(0).multiprocessorCount()).block(1024).cooperative(true)
                        .arg(0, x).arg(1, 1).launch(h);
                h.synchronize();
            }
        });
        cases.put("a variable name the library does not have, in another spelling", (h, lib) -> lib.global(h, "Cuh_Test_Counter"));
        cases.put("a device attribute past the last one", (h, lib) -> Cuda.device(0).attribute(100_000));

        List<String> logged = new ArrayList<>();
        List<String> withoutLog = new ArrayList<>();
        try (Handle h = Handle.create(0); Library lib = TestKernels.load()) {
            for (Map.Entry<String, Misuse> c : cases.entrySet()) {
                String outcome;
                try {
                    c.getValue().run(h, lib);
                    outcome = "no error";
                } catch (CudaException e) {
                    outcome = e.error() + (e.driverLog().isEmpty() ? ", no log" : ", log: " + e.driverLog());
                    (e.driverLog().isEmpty() ? withoutLog : logged).add(c.getKey() + " (" + e.error() + ")");
                } catch (RuntimeException e) {
                    outcome = "refused by cuhandle: " + e.getClass().getSimpleName() + ": " + e.getMessage();
                }
                System.out.println("[driver-log-misuse] " + c.getKey() + ": " + outcome);
            }
            // The handle is still usable: refusals are not faults.
            try (DeviceBuffer d = h.allocate(4096)) {
                h.memset(d, 1);
                h.synchronize();
            }
        }
        System.out.println("[driver-log-misuse] " + logged.size() + " of " + cases.size() + " misuses refused by the driver carried its log; "
                + withoutLog.size() + " did not: " + withoutLog);
        assertTrue(withoutLog.isEmpty(), "driver refusals without the driver's log: " + withoutLog);
        assertFalse(logged.isEmpty(), "no case reached the driver");
    }

    private static byte[] elfHeaderOnly() {
        byte[] b = new byte[64];
        b[0] = 0x7f;
        b[1] = 'E';
        b[2] = 'L';
        b[3] = 'F';
        b[4] = 2;
        b[5] = 1;
        b[6] = 1;
        return b;
    }
}
