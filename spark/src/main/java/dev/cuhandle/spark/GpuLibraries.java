package dev.cuhandle.spark;

import dev.cuhandle.CompileOptions;
import dev.cuhandle.Library;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * Kernel libraries loaded once per executor JVM and shared by all its tasks.
 *
 * <p>A {@link Library} is context-independent (rule H10 of docs/design.md): loaded once, its
 * kernels launch in any handle's context on any device. Tasks are short and many, so loading the
 * image in every task (10,000 tasks, 10,000 loads) wastes time and driver memory; tasks ask this
 * cache instead, by class-path resource name ({@link #resource}), by CUDA source
 * ({@link #compiled}, keyed by a SHA-256 of the source and options), or by a key of their own
 * ({@link #get}). The first task loads; tasks that ask meanwhile wait for that one load; a load
 * that fails is not remembered, so a later task tries again.
 *
 * <p>The libraries belong to the cache: do not close them. They are closed when the executor
 * shuts down, by {@link CuhandleSparkPlugin} where {@code spark.plugins} names it, otherwise by a
 * JVM shutdown hook; a library closed by anyone is loaded anew on its next request.
 */
public final class GpuLibraries {
    private static final System.Logger LOG = System.getLogger("dev.cuhandle.spark");
    private static final ConcurrentHashMap<String, Entry> CACHE = new ConcurrentHashMap<>();
    private static final AtomicLong LOADS = new AtomicLong();
    private static final AtomicBoolean SHUTDOWN_HOOK = new AtomicBoolean();

    private GpuLibraries() {}

    /** One key's library: loaded once, under this entry's monitor, by the first caller. */
    private static final class Entry {
        private Library library;

        synchronized Library get(String key, Supplier<Library> loader) {
            if (library == null) {
                Library loaded = Objects.requireNonNull(loader.get(), () -> "the loader of library '" + key + "' returned null");
                LOADS.incrementAndGet();
                library = loaded;
                registerShutdownHook();
            }
            return library;
        }

        synchronized void close() {
            if (library != null) {
                library.close();
            }
        }
    }

    /**
     * The library of class-path resource {@code resource} (a fatbin, cubin or PTX file), loaded with
     * {@link Library#loadResource(Class, String)} on first use in this JVM. The key is what the name resolves
     * to from {@code anchor} (its class loader's URL of the resource): a relative name resolves against the
     * anchor's package, so two packages that each ship a {@code kernels.ptx} get their own images, and the
     * same file asked for by several names or classes is loaded once.
     *
     * @param anchor the class whose loader finds the resource
     * @param resource the resource name, e.g. {@code "/kernels/score.fatbin"}
     * @return the shared library; do not close it
     * @throws NullPointerException if an argument is {@code null}
     * @throws IllegalArgumentException if there is no such resource, or it is no module image
     * @throws dev.cuhandle.CudaException if the driver rejects the image or cannot be used
     */
    public static Library resource(Class<?> anchor, String resource) {
        Objects.requireNonNull(anchor, "anchor");
        Objects.requireNonNull(resource, "resource");
        java.net.URL url = anchor.getResource(resource);
        // No such resource: loadResource throws the error that says so (nothing is cached under a name).
        String key = url == null ? "missing resource " + anchor.getName() + " " + resource : "resource " + url.toExternalForm();
        return get(key, () -> Library.loadResource(anchor, resource));
    }

    /**
     * The library compiled from {@code cudaSource} with NVRTC ({@link Library#compile(String, CompileOptions)}),
     * once per JVM for each distinct source and options: the key is a SHA-256 of the source, the program
     * name, the flags, the architecture and the headers.
     *
     * @param cudaSource the CUDA C++ source; kernels must be {@code extern "C"}
     * @param options how to compile
     * @return the shared library; do not close it
     * @throws NullPointerException if an argument is {@code null}
     * @throws dev.cuhandle.CompileException if the source does not compile
     * @throws dev.cuhandle.CudaException if NVRTC is not installed or the driver rejects the result
     */
    public static Library compiled(String cudaSource, CompileOptions options) {
        Objects.requireNonNull(cudaSource, "cudaSource");
        Objects.requireNonNull(options, "options");
        return get("source " + sourceHash(cudaSource, options), () -> Library.compile(cudaSource, options));
    }

    /**
     * The library stored under {@code key}, loaded by {@code loader} if this JVM has none under that key
     * (or only a closed one). Concurrent callers with the same key wait for one load.
     *
     * @param key what identifies the image, e.g. a name and version
     * @param loader loads the library; runs at most once per key while its result stays open
     * @return the shared library; do not close it
     * @throws NullPointerException if an argument is {@code null} or the loader returns {@code null}
     */
    public static Library get(String key, Supplier<Library> loader) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(loader, "loader");
        while (true) {
            Entry entry = CACHE.computeIfAbsent(key, k -> new Entry());
            Library library = entry.get(key, loader);
            if (!library.isClosed()) {
                return library;
            }
            CACHE.remove(key, entry); // closed (executor shutdown, or by its user): load anew
        }
    }

    /**
     * How many libraries this JVM has loaded through the cache since it started: one per key unless a
     * library was closed and loaded again. For monitoring and tests.
     *
     * @return the number of loads
     */
    public static long loads() {
        return LOADS.get();
    }

    /**
     * Closes every cached library and empties the cache; later requests load again. Called when the
     * executor shuts down; tasks still running then see {@link IllegalStateException} from launches of the
     * closed libraries' kernels.
     *
     * @return how many libraries were closed
     */
    public static int closeAll() {
        List<Entry> entries = new ArrayList<>();
        for (Map.Entry<String, Entry> e : CACHE.entrySet()) {
            if (CACHE.remove(e.getKey(), e.getValue())) {
                entries.add(e.getValue());
            }
        }
        for (Entry entry : entries) {
            try {
                entry.close();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "closing a cached kernel library failed", e);
            }
        }
        return entries.size();
    }

    private static void registerShutdownHook() {
        if (SHUTDOWN_HOOK.compareAndSet(false, true)) {
            Runtime.getRuntime().addShutdownHook(new Thread(GpuLibraries::closeAll, "cuhandle-spark-libraries"));
        }
    }

    /**
     * SHA-256 of everything that decides the compiled image, each part length-prefixed so that no two inputs collide by
     * concatenation. Not dev.cuhandle's compile-cache key (package-private {@code RuntimeCompiler.key}): that one also
     * hashes NVRTC's version and the resolved architecture, which cost NVRTC and device queries (and fail without
     * NVRTC) on every request, and are the same for every request of one JVM, which is all this cache serves.
     */
    static String sourceHash(String source, CompileOptions options) {
        MessageDigest sha;
        try {
            sha = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e); // every Java SE has it
        }
        List<String> parts = new ArrayList<>();
        parts.add(source);
        parts.add(options.programName());
        parts.add(String.valueOf(options.architecture()));
        parts.add(String.valueOf(options.ptxOnly()));
        List<String> flags = options.nvrtcFlags();
        parts.add("flags " + flags.size());
        parts.addAll(flags);
        parts.add("headers " + options.headers().size());
        // By name, as dev.cuhandle's own image cache keys them: their order does not matter to NVRTC.
        new TreeMap<>(options.headers()).forEach((name, text) -> {
            parts.add(name);
            parts.add(text);
        });
        for (String part : parts) {
            byte[] bytes = part.getBytes(StandardCharsets.UTF_8);
            sha.update((bytes.length + ":").getBytes(StandardCharsets.US_ASCII));
            sha.update(bytes);
        }
        StringBuilder hex = new StringBuilder(64);
        for (byte b : sha.digest()) {
            hex.append(Character.forDigit((b >> 4) & 0xF, 16)).append(Character.forDigit(b & 0xF, 16));
        }
        return hex.toString();
    }
}
