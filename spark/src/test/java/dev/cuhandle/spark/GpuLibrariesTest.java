package dev.cuhandle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cuhandle.CompileOptions;
import dev.cuhandle.Library;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The per-JVM library cache: one load per key, failures not remembered, closed libraries loaded anew. */
class GpuLibrariesTest {
    private static final String IMAGE = "/kernels/score_rows.fatbin";

    @BeforeAll
    static void standIn() {
        TestSpark.requireStandIn();
    }

    private static Supplier<Library> counting(AtomicInteger loads) {
        return () -> {
            loads.incrementAndGet();
            return Library.loadResource(GpuLibrariesTest.class, IMAGE);
        };
    }

    @Test
    void manyThreadsAskingAtOnceShareOneLoad() throws Exception {
        String key = "concurrent " + UUID.randomUUID();
        AtomicInteger loads = new AtomicInteger();
        int threads = 8;
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<Library>> got = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                got.add(pool.submit(() -> {
                    start.await();
                    return GpuLibraries.get(key, counting(loads));
                }));
            }
            start.countDown();
            Library first = got.get(0).get();
            for (Future<Library> f : got) {
                assertSame(first, f.get());
            }
            assertEquals(1, loads.get());
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aFailedLoadIsNotRememberedAndAClosedLibraryIsLoadedAgain() {
        String key = "failing " + UUID.randomUUID();
        assertThrows(IllegalStateException.class, () -> GpuLibraries.get(key, () -> {
            throw new IllegalStateException("image not there yet");
        }));
        AtomicInteger loads = new AtomicInteger();
        Library loaded = GpuLibraries.get(key, counting(loads));
        assertEquals(1, loads.get(), "the key loads after a failure");
        loaded.close();
        Library again = GpuLibraries.get(key, counting(loads));
        assertNotSame(loaded, again);
        assertEquals(2, loads.get(), "a closed library is loaded anew");
        assertTrue(!again.isClosed());
    }

    @Test
    void resourcesAreKeyedByNameAndCountedAsLoads() {
        long before = GpuLibraries.loads();
        Library a = GpuLibraries.resource(GpuLibrariesTest.class, IMAGE);
        Library b = GpuLibraries.resource(TaskLifecycleTest.class, IMAGE);
        assertSame(a, b);
        assertTrue(GpuLibraries.loads() - before <= 1, "at most one load (another test may have loaded it first)");
        assertThrows(IllegalArgumentException.class, () -> GpuLibraries.resource(GpuLibrariesTest.class, "/kernels/missing.fatbin"));
    }

    @Test
    void compiledSourcesAreKeyedByEverythingThatDecidesTheImage() {
        CompileOptions plain = CompileOptions.defaults();
        String source = "extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }";
        assertEquals(GpuLibraries.sourceHash(source, plain), GpuLibraries.sourceHash(source, CompileOptions.defaults()));
        assertNotEquals(GpuLibraries.sourceHash(source, plain), GpuLibraries.sourceHash(source + " ", plain));
        assertNotEquals(GpuLibraries.sourceHash(source, plain), GpuLibraries.sourceHash(source, plain.define("N", "4")));
        assertNotEquals(GpuLibraries.sourceHash(source, plain), GpuLibraries.sourceHash(source, plain.architecture("sm_80")));
        // The same strings as a flag pair or as a header must not collide.
        assertNotEquals(GpuLibraries.sourceHash(source, plain.flag("a.h", "b")), GpuLibraries.sourceHash(source, plain.header("a.h", "b")));
        // Header order does not decide the image (NVRTC looks headers up by name): one library for both orders.
        assertEquals(GpuLibraries.sourceHash(source, plain.header("a.h", "1").header("b.h", "2")),
                GpuLibraries.sourceHash(source, plain.header("b.h", "2").header("a.h", "1")));

        long before = GpuLibraries.loads();
        Library first = GpuLibraries.compiled(source, plain);
        assertSame(first, GpuLibraries.compiled(source, CompileOptions.defaults()));
        assertEquals(1, GpuLibraries.loads() - before, "one NVRTC compile and load for two requests");
    }

    /**
     * Issue 33 (1): the cache was keyed by the resource name alone, so two packages that each ship a relative
     * {@code kernels.ptx} got the first one's image. Keyed by what the name resolves to, each package gets its own,
     * and the same file named absolutely from another class is the same library.
     */
    @Test
    void relativeResourcesOfTwoPackagesAreTwoImagesAndOneFileIsOneLibrary() {
        long loads = GpuLibraries.loads();
        Library a = GpuLibraries.resource(dev.cuhandle.spark.packagea.Anchor.class, "kernels.ptx");
        Library b = GpuLibraries.resource(dev.cuhandle.spark.packageb.Anchor.class, "kernels.ptx");
        assertEquals(List.of("touch"), new ArrayList<>(a.kernelNames()));
        assertEquals(List.of("other"), new ArrayList<>(b.kernelNames()));
        assertNotNull(b.kernel("other"));
        assertSame(a, GpuLibraries.resource(GpuLibrariesTest.class, "/dev/cuhandle/spark/packagea/kernels.ptx"), "the same file by its absolute name");
        assertEquals(loads + 2, GpuLibraries.loads(), "two images loaded");
    }
}
