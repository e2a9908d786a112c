package dev.cuhandle;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Run-time compilation behind {@link Library#compile}: chooses the architecture (native, from NVRTC's supported
 * list and the devices' compute capabilities), serves identical compilations from {@link CompiledImageCache}
 * (then, where enabled, from {@link DiskImageCache}), and otherwise compiles with NVRTC ({@code rust/src/core/nvrtc}).
 */
final class RuntimeCompiler {
    /** Up to this many images or this many bytes of them stay cached (least recently used go first). */
    static final int CACHE_ENTRIES = 256;
    static final long CACHE_BYTES = 64L << 20;

    private static final CompiledImageCache CACHE = new CompiledImageCache(CACHE_ENTRIES, CACHE_BYTES);
    /** NVRTC compilations this process ran (cache misses), for tests. */
    private static final AtomicLong COMPILES = new AtomicLong();

    private RuntimeCompiler() {}

    /** Compiles (or takes from the cache) and loads a fresh library; {@code handle} may be null (every device). */
    static Library compile(Handle handle, String source, CompileOptions options) {
        Objects.requireNonNull(source, "source");
        Objects.requireNonNull(options, "options");
        if (handle != null && handle.isClosed()) {
            throw new IllegalStateException("the handle is closed");
        }
        Native.ensureLoaded();
        String target = target(options, options.architecture() != null ? null : capabilities(handle));
        return Library.loadCompiled(image(source, options, target), target);
    }

    /** 10 * major + minor of the handle's device, or of every device when there is no handle. */
    private static int[] capabilities(Handle handle) {
        if (handle != null) {
            return new int[] {capability(handle.device())};
        }
        int[] all = new int[Cuda.deviceCount()];
        for (int i = 0; i < all.length; i++) {
            all[i] = capability(Cuda.device(i));
        }
        return all;
    }

    private static int capability(Device d) {
        return 10 * d.computeCapabilityMajor() + d.computeCapabilityMinor();
    }

    /** The architecture NVRTC compiles for, e.g. {@code sm_90}; loads NVRTC (a CudaException when absent). */
    static String target(CompileOptions options, int[] capabilities) {
        Native.ensureLoaded();
        return NativeApi.nvrtcTarget(options.architecture(), capabilities, options.ptxOnly());
    }

    /** NVRTC's version and file, e.g. {@code ["11.8", "/usr/lib/x86_64-linux-gnu/libnvrtc.so.11.8.89"]}. */
    static String[] nvrtc() {
        Native.ensureLoaded();
        return NativeApi.nvrtcDescribe();
    }

    /**
     * The image for {@code source} compiled for {@code target}: from the cache when the same inputs were compiled
     * before, else compiled now and cached. The array is the cached one: never hand it to users.
     */
    static byte[] image(String source, CompileOptions options, String target) {
        Native.ensureLoaded();
        String[] nvrtc = NativeApi.nvrtcDescribe();
        List<String> flags = options.nvrtcFlags();
        String key = key(nvrtc[0], target, options.programName(), source, options.headers(), flags);
        byte[] cached = CACHE.get(key);
        if (cached != null) {
            return cached;
        }
        byte[] stored = DiskImageCache.get(key);
        if (stored != null) {
            CACHE.put(key, stored);
            return stored;
        }
        // Two threads missing at once both compile (the same bytes); compilations are rare, and a
        // lock held across one compile would make every other one wait for it (issue 26).
        String[] names = options.headers().keySet().toArray(new String[0]);
        String[] sources = options.headers().values().toArray(new String[0]);
        Object result = NativeApi.nvrtcCompile(source, options.programName(), names, sources, flags.toArray(new String[0]), target);
        COMPILES.incrementAndGet();
        if (result instanceof String[]) {
            String[] failure = (String[]) result; // NVRTC's result number, its name, the log
            throw new CompileException(Integer.parseInt(failure[0]), failure[1], options.programName(), target, failure[2]);
        }
        byte[] image = (byte[]) result;
        CACHE.put(key, image);
        DiskImageCache.put(key, image);
        return image;
    }

    /**
     * SHA-256 of every input of a compilation: NVRTC's version, the architecture, program name, source, headers
     * (sorted by name: their order does not matter to NVRTC) and flags (in order: it can matter). Each string is
     * length-prefixed, so no two different inputs give the same byte stream.
     */
    static String key(String nvrtcVersion, String target, String programName, String source, Map<String, String> headers, List<String> flags) {
        List<String> parts = new ArrayList<>(List.of("cuhandle-nvrtc-1", nvrtcVersion, target, programName, source));
        parts.add(Integer.toString(headers.size()));
        for (Map.Entry<String, String> h : new TreeMap<>(headers).entrySet()) {
            parts.add(h.getKey());
            parts.add(h.getValue());
        }
        parts.add(Integer.toString(flags.size()));
        parts.addAll(flags);
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            for (String part : parts) {
                byte[] bytes = part.getBytes(StandardCharsets.UTF_8);
                sha.update(ByteBuffer.allocate(4).putInt(bytes.length).array());
                sha.update(bytes);
            }
            StringBuilder hex = new StringBuilder();
            for (byte b : sha.digest()) {
                hex.append(String.format("%02x", b));
            }
            return hex.toString();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required of every Java platform", e);
        }
    }

    /** How many NVRTC compilations ran in this process (cache hits do not count). */
    static long compileCount() {
        return COMPILES.get();
    }

    /** Empties the cache (tests). */
    static void clearCache() {
        CACHE.clear();
    }

    static int cachedImages() {
        return CACHE.size();
    }
}
