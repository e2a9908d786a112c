package dev.cuhandle;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Loads libcuhandle: from {@code -Dcuhandle.library.path} if set (an absolute path: it is trusted configuration,
 * see docs/security.md), else from its per-user cached copy ({@link NativeLibraryCache}, written by the first start),
 * else, when that cannot be used, extracted from the JAR to a temporary file ({@link NativeExtraction}). Every path
 * tried, and every folder refused with why, is reported.
 */
final class NativeLoader {
    static final String PATH_PROPERTY = "cuhandle.library.path";
    static final String TMPDIR_PROPERTY = "cuhandle.tmpdir";

    private NativeLoader() {}

    /**
     * Where the library came from, for the environment report, and how long the steps took (two
     * {@code System.nanoTime()} differences, for the cold-start benchmark's breakdown).
     */
    static final class Loaded {
        final String source;
        /** Finding and writing the temporary copy; 0 with {@code -Dcuhandle.library.path}. */
        final long extractNanos;
        /** {@code System.load}: mapping the library and its dependencies, running its initialisers. */
        final long systemLoadNanos;

        Loaded(String source, long extractNanos, long systemLoadNanos) {
            this.source = source;
            this.extractNanos = extractNanos;
            this.systemLoadNanos = systemLoadNanos;
        }
    }

    static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        String o = os.contains("linux") ? "linux" : os.replace(" ", "");
        String a = (arch.equals("amd64") || arch.equals("x86_64")) ? "x86-64" : arch;
        return o + "-" + a.replace("x86-64", "x86_64");
    }

    static String resourceName() {
        return "/META-INF/native/" + platform() + "/libcuhandle.so";
    }

    static Loaded load() {
        List<String> tried = new ArrayList<>();
        String override = System.getProperty(PATH_PROPERTY);
        if (override != null && !override.isEmpty()) {
            Path p = Paths.get(override);
            if (!p.isAbsolute()) {
                // It chooses the code this process runs: a relative path would depend on the working directory.
                tried.add(override + " (-D" + PATH_PROPERTY + "): not an absolute path; name the file from the root");
                throw failure(tried, null);
            }
            try {
                long t0 = System.nanoTime();
                System.load(p.toString());
                return new Loaded(p + " (from -D" + PATH_PROPERTY + ")", 0, System.nanoTime() - t0);
            } catch (UnsatisfiedLinkError e) {
                tried.add(p + " (-D" + PATH_PROPERTY + "): " + e.getMessage());
                throw failure(tried, e);
            }
        }
        String resource = resourceName();
        long t0 = System.nanoTime();
        List<String> notCached = new ArrayList<>();
        Loaded cached = NativeLibraryCache.load(resource, t0, notCached);
        if (cached != null) {
            return cached;
        }
        if (!notCached.isEmpty()) {
            tried.add("the per-user cache: " + String.join("; ", notCached));
        }
        return NativeExtraction.fromJar(resource, t0, tried, notCached);
    }

    static CudaException failure(List<String> tried, Throwable cause) {
        String message = "the cuhandle native library could not be loaded; tried: " + String.join("; ", tried)
                + ". Set -D" + PATH_PROPERTY + "=/path/to/libcuhandle.so to use another copy, or -D" + TMPDIR_PROPERTY
                + "=/a/directory/that/allows/exec if the temporary directory is mounted noexec";
        int code = cause == null ? CudaError.FILE_NOT_FOUND.code() : CudaError.SHARED_OBJECT_INIT_FAILED.code();
        return new CudaException(code, "loading libcuhandle", message, cause);
    }
}
