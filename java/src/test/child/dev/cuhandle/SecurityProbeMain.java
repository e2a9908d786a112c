package dev.cuhandle;

import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * Child-JVM probe of the security tests (issue 26); prints one fact per line and never crashes.
 *
 * <ul>
 *   <li>{@code load}: where libcuhandle came from, then what the first driver use does (the driver and the
 *       folders it is searched in are chosen by the child's options and environment);
 *   <li>{@code compile}: what a compile with NVRTC does ({@code -Dcuhandle.nvrtc.path} decides which NVRTC);
 *   <li>{@code compileKernel}: compiles a small kernel with NVRTC (its first compile, when NVRTC loads its builtins);
 *   <li>{@code compileLog}: compiles a source whose {@code #line} file name holds a line break and a fake record,
 *       with a warning, so that NVRTC's log quotes that name (issue 38: the log must not forge records);
 *   <li>{@code sparse FOLDER}: plants a 1.5 GB sparse file as the compile cache's entry for a fresh source in
 *       FOLDER, then compiles that source with the cache on (run with a small heap).
 * </ul>
 */
public final class SecurityProbeMain {
    /** The planted entry's size: more than the child's heap, less than a Java array's limit. */
    static final long SPARSE_BYTES = 1536L << 20;

    private SecurityProbeMain() {}

    public static void main(String[] args) throws Exception {
        try {
            switch (args[0]) {
                case "load":
                    System.out.println("source=" + Cuda.nativeLibrarySource());
                    System.out.println("available=" + Cuda.isAvailable());
                    System.out.println("deviceCount=" + Cuda.deviceCount());
                    break;
                case "compile":
                    System.out.println("nvrtc=" + String.join(" ", RuntimeCompiler.nvrtc()));
                    break;
                case "compileKernel":
                    compile("extern \"C\" __global__ void scale(float* x) { x[threadIdx.x] *= 2.0f; }\n");
                    break;
                case "compileLog":
                    compile("#line 1 \"x.cu\\nSEVERE: forged record\\nINFO: forged too\"\n"
                            + "extern \"C\" __global__ void scale(float* x) { int unused = 1; x[threadIdx.x] *= 2.0f; }\n");
                    break;
                case "sparse":
                    sparse(Paths.get(args[1]));
                    break;
                default:
                    System.out.println("unexpected=unknown mode " + args[0]);
            }
        } catch (CudaException e) {
            System.out.println("exception=" + e.getClass().getSimpleName());
            System.out.println("error=" + e.error());
            System.out.println("message=" + e.getMessage());
        } catch (Throwable t) {
            System.out.println("unexpected=" + t);
        }
        if (Native.isLoaded()) {
            NativeLog.awaitPublished(5_000); // native warnings reach the console before the JVM ends
        }
    }

    private static void compile(String source) throws Exception {
        byte[] image = RuntimeCompiler.image(source, CompileOptions.defaults().architecture("compute_75"), "compute_75");
        System.out.println("ptx=" + new String(image, java.nio.charset.StandardCharsets.US_ASCII).contains(".entry scale"));
    }

    private static void sparse(Path folder) throws Exception {
        String source = "// sparse entry test " + System.nanoTime() + "\nextern \"C\" __global__ void scale(float* x) { x[threadIdx.x] *= 2.0f; }\n";
        CompileOptions options = CompileOptions.defaults().architecture("compute_75");
        String key = RuntimeCompiler.key(RuntimeCompiler.nvrtc()[0], "compute_75", options.programName(), source, options.headers(), options.nvrtcFlags());
        Files.createDirectories(folder, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        Path entry = folder.resolve(key + ".img");
        try (RandomAccessFile f = new RandomAccessFile(entry.toFile(), "rw")) {
            f.setLength(SPARSE_BYTES); // a hole: no disk space used
        }
        System.out.println("planted=" + Files.size(entry));
        System.setProperty(DiskImageCache.DIR_PROPERTY, folder.toString());
        long before = RuntimeCompiler.compileCount();
        byte[] image = RuntimeCompiler.image(source, options, "compute_75");
        System.out.println("compiled=" + (RuntimeCompiler.compileCount() - before));
        System.out.println("ptx=" + new String(image, java.nio.charset.StandardCharsets.US_ASCII).contains(".entry scale"));
        System.out.println("entryNow=" + (Files.exists(entry) ? Files.size(entry) : -1));
    }
}
