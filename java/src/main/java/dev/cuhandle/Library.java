package dev.cuhandle;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.ref.WeakReference;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A module loaded once per process with {@code cuLibraryLoadData} (rule H10): its kernels launch
 * in any handle's context on any device, with no per-context module maps. {@link #close()}
 * unloads it; kernels of a closed library throw {@link IllegalStateException}.
 *
 * <pre>{@code
 * // A fatbin compiled by nvcc at build time and shipped as a resource; loaded once per process.
 * Kernel scale = Library.loadResource(App.class, "/kernels/scale.fatbin").kernel("scale");
 * try (Handle h = Handle.create(); DeviceBuffer x = h.upload(xs)) {
 *     h.launch(scale, Dim3.of((n + 255) / 256), Dim3.of(256), 0, x, 2f, n);
 *     x.download(xs);
 * }
 * // Or CUDA C++ compiled at run time by NVRTC, for h's device:
 * try (Library lib = Library.compile(h, source, CompileOptions.defaults())) {
 *     h.launch(lib.kernel("saxpy"), grid, block, 0, n, 2f, x, y);
 * }
 * }</pre>
 */
public final class Library extends NativeResource implements AutoCloseable {
    /** Where the image came from, for messages ("resource /kernels/x.fatbin", "file ...", "a 1234-byte image"). */
    private final String origin;
    /** Views of this library's variables handed out so far: closed when the library unloads. */
    private final VariableViews variableViews;
    /** Per kernel (raw {@code CUkernel}): what every {@link Kernel} object of it shares. */
    private final ConcurrentHashMap<Long, KernelState> kernels = new ConcurrentHashMap<>();
    /** The image {@link #compile} made (shared with the compile cache: never handed out), or null. */
    private final byte[] compiledImage;
    /** The architecture it was compiled for, or null. */
    private final String compiledArchitecture;

    private Library(long pointer, String origin, byte[] compiledImage, String compiledArchitecture) {
        this(pointer, new VariableViews(), origin, compiledImage, compiledArchitecture);
    }

    private Library(long pointer, VariableViews views, String origin, byte[] compiledImage, String compiledArchitecture) {
        // The unload closes the views first. It runs once calls in flight have returned (NativeObject), so a
        // view that a global() or view() in flight during close() hands out is closed too; it captures the
        // view list, not this library, so the cleaner can still find the library unreachable.
        super(pointer, "Library", library -> {
            views.closeAll();
            NativeApi.libraryUnload(library);
        });
        this.variableViews = views;
        this.origin = origin;
        this.compiledImage = compiledImage;
        this.compiledArchitecture = compiledArchitecture;
    }

    /** The views of a library's variables, weakly: a view nobody holds needs no closing. */
    private static final class VariableViews {
        private final List<WeakReference<DeviceBuffer>> views = new ArrayList<>();

        synchronized void add(DeviceBuffer view) {
            views.removeIf(r -> r.get() == null);
            views.add(new WeakReference<>(view));
        }

        void closeAll() {
            List<WeakReference<DeviceBuffer>> all;
            synchronized (this) {
                all = new ArrayList<>(views);
                views.clear();
            }
            for (WeakReference<DeviceBuffer> r : all) {
                DeviceBuffer view = r.get();
                if (view != null) {
                    view.close();
                }
            }
        }
    }

    /**
     * Loads a module image: PTX text, a cubin or a fatbin ({@code cuLibraryLoadData}). PTX is compiled by the
     * driver's JIT.
     *
     * @param image the module image; the array is copied, so it may be reused afterwards
     * @return the loaded library; close it when its kernels are no longer needed
     * @throws NullPointerException if {@code image} is {@code null}
     * @throws IllegalArgumentException if the bytes are empty or no module image (e.g. a truncated cubin or
     *     fatbin)
     * @throws CudaException if the driver rejects the image (the message holds the JIT log) or cannot be used
     */
    public static Library load(byte[] image) {
        return load(image, LoadOptions.defaults());
    }

    /**
     * Loads a module image with JIT and library options ({@code cuLibraryLoadData}).
     *
     * @param image the module image; the array is copied, so it may be reused afterwards
     * @param options JIT and library options, e.g. {@code LoadOptions.defaults().logVerbose(true)}
     * @return the loaded library; close it when its kernels are no longer needed
     * @throws NullPointerException if an argument is {@code null}
     * @throws IllegalArgumentException if the bytes are empty or no module image
     * @throws CudaException if the driver rejects the image or an option (the message holds the JIT log) or
     *     cannot be used
     */
    public static Library load(byte[] image, LoadOptions options) {
        Objects.requireNonNull(image, "image");
        return load(image, options, "a " + image.length + "-byte image");
    }

    private static Library load(byte[] image, LoadOptions options, String origin) {
        Objects.requireNonNull(options, "options");
        Native.ensureLoaded();
        return new Library(NativeApi.libraryLoad(image, options.optimizationLevel(), options.maxRegisters(), options.isLogVerbose(),
                options.isBinaryPreserved()), origin, null, null);
    }

    /** Loads what {@link #compile} made for {@code architecture}; the library keeps {@code image} (not copied: never modify it). */
    static Library loadCompiled(byte[] image, String architecture) {
        Native.ensureLoaded();
        return new Library(NativeApi.libraryLoad(image, -1, -1, false, false), "a " + image.length + "-byte image compiled for " + architecture, image,
                architecture);
    }

    /**
     * Loads PTX text, a cubin or a fatbin from a file. The native side reads the file once, checks its structure
     * as for an in-memory image, and hands the driver those very bytes ({@code cuLibraryLoadData}): no second read
     * could load something other than what was checked. No copy of the image passes through Java. A module image
     * is code that runs on the GPU with this process's rights: load files only from folders you trust
     * (docs/security.md).
     *
     * @param file the module image
     * @return the loaded library
     * @throws java.io.UncheckedIOException if the file does not exist or is no regular file (the cause is a
     *     {@link java.nio.file.NoSuchFileException} or an {@code IOException} naming it)
     * @throws IllegalArgumentException if the file cannot be read (the reason is named) or is no module image
     * @throws CudaException if the driver rejects the image (with the JIT log) or cannot be used
     */
    public static Library load(Path file) {
        return load(file, LoadOptions.defaults());
    }

    /**
     * Loads a module file with JIT options; see {@link #load(Path)}.
     * {@link LoadOptions#binaryIsPreserved(boolean)} does not apply to files.
     *
     * @param file the module image
     * @param options JIT options
     * @return the loaded library
     * @throws NullPointerException if an argument is {@code null}
     * @throws java.io.UncheckedIOException if the file does not exist or is no regular file
     * @throws IllegalArgumentException if the file cannot be read (the reason is named) or is no module image
     * @throws CudaException if the driver rejects the image or an option (with the JIT log) or cannot be used
     */
    public static Library load(Path file, LoadOptions options) {
        Objects.requireNonNull(file, "file");
        Objects.requireNonNull(options, "options");
        if (!Files.isRegularFile(file)) {
            IOException why = Files.exists(file) ? new IOException(file + " is not a regular file") : new NoSuchFileException(file.toString());
            throw new UncheckedIOException("reading module image " + file, why);
        }
        Native.ensureLoaded();
        String path = file.toAbsolutePath().toString();
        return new Library(NativeApi.libraryLoadFile(path, options.optimizationLevel(), options.maxRegisters(), options.isLogVerbose()), "file " + file,
                null, null);
    }

    /**
     * The driver JIT's information log of this library's load ({@code CU_JIT_INFO_LOG_BUFFER}): what the JIT
     * compiled and, with {@link LoadOptions#logVerbose(boolean)}, registers and spills per kernel. With lazy
     * loading the JIT may run at the first kernel lookup, so the log can grow after the load.
     *
     * @return the log text; empty when the JIT said nothing (e.g. machine code used as is)
     * @throws IllegalStateException if the library is closed
     */
    public String jitLog() {
        long lib = enter();
        try {
            return NativeApi.libraryInfoLog(lib);
        } finally {
            exit();
        }
    }

    /**
     * Loads a class-path resource (e.g. {@code "/kernels/my.fatbin"}) seen from {@code anchor}'s class loader.
     *
     * @param anchor the class whose loader finds the resource ({@code getResourceAsStream} rules)
     * @param resource the resource name: with a leading {@code /} from the class path's root, without one
     *     relative to {@code anchor}'s package
     * @return the loaded library
     * @throws IllegalArgumentException if there is no such resource (when only the name with a leading {@code /}
     *     exists, the message says so), or it is no module image
     * @throws java.io.UncheckedIOException if reading the resource fails
     * @throws CudaException if the driver rejects the image or cannot be used
     */
    public static Library loadResource(Class<?> anchor, String resource) {
        Objects.requireNonNull(anchor, "anchor");
        Objects.requireNonNull(resource, "resource");
        try (InputStream in = anchor.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalArgumentException(resourceNotFound(anchor, resource));
            }
            return load(in.readAllBytes(), LoadOptions.defaults(), "resource " + resource);
        } catch (IOException e) {
            throw new UncheckedIOException("reading resource " + resource, e);
        }
    }

    /**
     * Why {@code resource} was not found, and how to name it: a name without a leading {@code /} is looked up in
     * {@code anchor}'s package ({@code Class.getResourceAsStream} rules), which is rarely where build tools put
     * kernels, so when the absolute name exists the message says so.
     */
    static String resourceNotFound(Class<?> anchor, String resource) {
        String message = "class path resource " + resource + " not found (relative to " + anchor.getName() + ")";
        if (!resource.startsWith("/") && anchor.getResource("/" + resource) != null) {
            String folder = anchor.getPackageName().replace('.', '/');
            return message + ": a name without a leading '/' is looked up in the anchor's package (" + (folder.isEmpty() ? "" : "/" + folder + "/")
                    + resource + "); did you mean /" + resource + "? It exists at the class path's root";
        }
        return message;
    }

    /**
     * Compiles CUDA C++ with NVRTC and loads the result, for the architecture of the machine's devices (all of
     * them; use {@link #compile(Handle, String, CompileOptions)} to target one device) or the one
     * {@link CompileOptions#architecture(String)} names. Machine code (a cubin) is produced where the NVRTC in use
     * knows that architecture; for a device newer than NVRTC, PTX for the newest architecture NVRTC knows, which
     * the driver JIT-compiles when loading. Devices of different generations get PTX for the oldest.
     * Kernels must be {@code extern "C"} to be found by their plain names.
     *
     * <p><b>Caching:</b> the compiled image of identical inputs (source, headers, options, architecture and NVRTC
     * version) is kept in a bounded in-process cache and reused without calling NVRTC again; every call still
     * loads and returns a new {@code Library}, which the caller closes independently of any other. With
     * {@code -Dcuhandle.compileCache=disk} (the user's cache folder) or {@code -Dcuhandle.compileCache.dir=<folder>}
     * images are also kept on disk and reused by later processes. That folder must be private: it is used only
     * while it and every folder above it are owned by this user (or root, above it) and writable by no one else
     * (a sticky folder such as {@code /tmp} may be above it); otherwise the disk cache is off, with one warning.
     * It holds at most {@code -Dcuhandle.compileCache.maxBytes} (default 256 MiB; least recently used entries go
     * first). See docs/security.md.
     *
     * <p><b>Threads:</b> callable from any thread. With NVRTC 12 or later compilations run concurrently; with
     * NVRTC 11.x they take turns in the process (those releases do not document concurrent use), and a compile
     * that waited 5 minutes for its turn fails with a {@link CudaException} ({@link CudaError#TIMEOUT}). Cache
     * hits and library loads never wait for compilations. Two threads compiling the same uncached inputs at once
     * may both compile.
     *
     * <p>NVRTC is optional: it is looked for on first use ({@code -Dcuhandle.nvrtc.path} or
     * {@code CUHANDLE_NVRTC_PATH}, an absolute path; else {@code libnvrtc.so.13}, {@code .12}, {@code libnvrtc.so},
     * {@code .11.2} in the usual CUDA folders, the absolute entries of {@code LD_LIBRARY_PATH} and the dynamic
     * linker's cache; never the current folder).
     *
     * @param cudaSource the CUDA C++ source
     * @param options how to compile, e.g. {@link CompileOptions#defaults()}
     * @return the loaded library; close it when its kernels are no longer needed
     * @throws NullPointerException if an argument is {@code null}
     * @throws CompileException if the source does not compile, or NVRTC fails compiling it: the exception carries
     *     NVRTC's result ({@code NVRTC_ERROR_COMPILATION} ...), its log, the program name and the architecture
     * @throws IllegalArgumentException if NVRTC refuses an option, or the named architecture is one it does not
     *     support
     * @throws CudaException if NVRTC is not installed (code {@link CudaError#FILE_NOT_FOUND}: the message lists
     *     the files tried and how to install it) or fails, or the driver cannot be used or rejects the image
     */
    public static Library compile(String cudaSource, CompileOptions options) {
        return RuntimeCompiler.compile(null, cudaSource, options);
    }

    /**
     * Compiles CUDA C++ with NVRTC for the device of {@code handle} and loads the result: machine code for its
     * compute capability where the NVRTC in use knows it, else PTX for the newest architecture NVRTC knows (the
     * driver JIT-compiles it). An {@link CompileOptions#architecture(String) architecture} in the options takes
     * precedence. The library itself, as every library, works in any context; only its code is targeted. Caching,
     * threads and NVRTC discovery are as for {@link #compile(String, CompileOptions)}.
     *
     * @param handle the handle whose device the code will run on
     * @param cudaSource the CUDA C++ source
     * @param options how to compile
     * @return the loaded library; close it when its kernels are no longer needed
     * @throws NullPointerException if an argument is {@code null}
     * @throws IllegalStateException if the handle is closed
     * @throws CompileException if the source does not compile, or NVRTC fails compiling it (NVRTC's result and log)
     * @throws IllegalArgumentException if NVRTC refuses an option or the named architecture
     * @throws CudaException if NVRTC is not installed or fails, or the driver rejects the image
     */
    public static Library compile(Handle handle, String cudaSource, CompileOptions options) {
        Objects.requireNonNull(handle, "handle");
        return RuntimeCompiler.compile(handle, cudaSource, options);
    }

    /**
     * The image that {@link #compile(String, CompileOptions)} produced and this library loaded, so that an
     * application can keep or ship it and later {@link #load(byte[])} it without NVRTC: a cubin (an ELF file) for
     * an {@code sm_XY} architecture, or PTX text (ASCII, without a terminating NUL) for a {@code compute_XY} one
     * ({@link #compiledArchitecture()}). A cubin runs on devices of its major compute capability and at least its
     * minor one; PTX on its architecture and newer ones (the driver JIT-compiles it). Available after
     * {@link #close()} too.
     *
     * @return a copy of the image
     * @throws IllegalStateException if this library was not made by {@code compile} (but loaded from an image)
     */
    public byte[] compiledImage() {
        if (compiledImage == null) {
            throw new IllegalStateException("the library from " + origin + " was loaded, not compiled by Library.compile: it has no compiled image");
        }
        return compiledImage.clone();
    }

    /**
     * The architecture {@link #compile(String, CompileOptions)} compiled this library's image for.
     *
     * @return e.g. {@code "sm_90"} (a cubin) or {@code "compute_90"} (PTX)
     * @throws IllegalStateException if this library was not made by {@code compile}
     */
    public String compiledArchitecture() {
        if (compiledArchitecture == null) {
            throw new IllegalStateException("the library from " + origin + " was loaded, not compiled by Library.compile: it has no compiled architecture");
        }
        return compiledArchitecture;
    }

    /**
     * The kernel called {@code name} ({@code cuLibraryGetKernel}). Names are {@code extern "C"} names or
     * mangled C++ names.
     *
     * @param name the kernel's name
     * @return the kernel (a new object on every call)
     * @throws NullPointerException if {@code name} is {@code null}
     * @throws IllegalArgumentException if the name is empty, contains a NUL character, or names no kernel of
     *     this library (the message lists the kernels where the driver can enumerate them)
     * @throws IllegalStateException if the library is closed
     * @throws CudaException if the driver fails, e.g. when lazy loading compiles the kernel now and
     *     compilation fails
     */
    public Kernel kernel(String name) {
        Objects.requireNonNull(name, "name");
        if (name.isEmpty() || name.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("kernel name '" + name.replace("\0", "\\0") + "' " + (name.isEmpty() ? "is empty" : "contains a NUL character")
                    + "; expected a kernel's (extern \"C\" or mangled) name");
        }
        long lib = enter();
        try {
            long[] info = NativeApi.kernelGet(lib, name);
            KernelState shared = kernels.computeIfAbsent(info[0], raw -> new KernelState(this, name, raw, Arrays.copyOfRange(info, 1, info.length)));
            return new Kernel(this, name, shared);
        } finally {
            exit();
        }
    }

    /**
     * Names of the library's kernels, sorted ({@code cuLibraryEnumerateKernels}).
     *
     * @return an unmodifiable list of names; empty where the driver cannot enumerate them (before CUDA 12.4)
     * @throws IllegalStateException if the library is closed
     */
    public List<String> kernelNames() {
        long lib = enter();
        try {
            String[] names = NativeApi.libraryKernelNames(lib);
            return names == null ? Collections.emptyList() : Collections.unmodifiableList(Arrays.asList(names));
        } finally {
            exit();
        }
    }

    /**
     * A {@code __device__} or {@code __constant__} variable of this library as it exists in
     * {@code handle}'s context ({@code cuLibraryGetGlobal}): each context has its own copy, so what
     * is written through a handle of one context is not seen through a handle of another. Copies to
     * and from the view run on the handle's stream, like those of any buffer; a kernel launched on
     * another stream that uses the variable must be ordered with them (one handle, or events).
     *
     * <p>The view does not own the variable's memory, and it keeps this library loaded while it is
     * reachable. Closing the view releases only the view: later uses of that view throw
     * {@link IllegalStateException}, while the variable, its contents and the library stay as they
     * are (a new {@code global} call gives a new view). Closing the library closes every view of
     * its variables: later uses throw {@link IllegalStateException}, never reach unloaded memory.
     *
     * @param handle the handle whose context's copy is wanted
     * @param name the variable's name in the module (C names as written; C++ names in a namespace
     *     are mangled)
     * @return a view of the variable's bytes ({@code sizeof} the variable)
     * @throws CudaException if the library has no such variable (the message names variable and
     *     library), or the driver fails
     * @throws IllegalStateException if this library or the handle is closed
     */
    public DeviceBuffer global(Handle handle, String name) {
        Objects.requireNonNull(handle, "handle");
        Objects.requireNonNull(name, "name");
        long lib = enter();
        try {
            long[] where;
            long h = handle.enter();
            try {
                where = NativeApi.libraryGlobal(h, lib, name);
            } catch (CudaException e) {
                throw named(e, name);
            } finally {
                handle.exit();
            }
            return variableView(handle, where[0], where[1], "variable '" + name + "' of the library from " + origin);
        } finally {
            exit();
        }
    }

    /** A view of variable memory of this library, closed by {@link #close()}; call with this library entered. */
    DeviceBuffer variableView(Handle handle, long address, long bytes, String what) {
        DeviceBuffer view = handle.wrapVariable(address, bytes, what, this);
        variableViews.add(view);
        return view;
    }

    /**
     * A {@code __managed__} variable of this library ({@code cuLibraryGetManaged}): one copy at one
     * address for the whole process, used by kernels in every context and on every device and
     * read and written by the host. The lookup happens in the context current on the calling
     * thread, or else in the primary context of {@link Cuda#getDevice()} (rules H1, H2).
     *
     * @param name the variable's name in the module
     * @return access to the variable
     * @throws CudaException if the library has no such variable (the message names variable and
     *     library), or the driver fails
     * @throws IllegalStateException if this library is closed
     */
    public ManagedVariable managed(String name) {
        Objects.requireNonNull(name, "name");
        long lib = enter();
        try {
            long[] where = NativeApi.libraryManaged(lib, Cuda.getDevice(), name);
            return new ManagedVariable(this, name, where[0], where[1]);
        } catch (CudaException e) {
            throw named(e, name);
        } finally {
            exit();
        }
    }

    private CudaException named(CudaException e, String variable) {
        return e.within("looking up variable '" + variable + "' of the library from " + origin);
    }

    /**
     * Unloads the library once the calls in flight on it (launches of its kernels, lookups, {@link #global},
     * {@link ManagedVariable#view}) have returned and the GPU work they queued is done: kernels still queued or
     * running, graph replays still queued that launch its kernels, and copies to or from its variables (the
     * host waits for the streams that work is on, and only for those; rule L7 of docs/design.md), so code or
     * variables the GPU still uses are never unloaded. Later calls throw {@link IllegalStateException}. Every
     * view of its variables is closed with it, also one that such a call in flight hands out: later uses of a
     * view throw {@link IllegalStateException}, never reach unloaded memory. Idempotent.
     */
    @Override
    public void close() {
        Capture.close(this, "Library.close");
    }

    @Override
    public String toString() {
        return "Library[from " + origin + (isClosed() ? ", closed]" : "]");
    }
}
