package dev.cuhandle;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.ref.Reference;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * A module loaded once per process with {@code cuLibraryLoadData} (rule H10): its kernels launch
 * in any handle's context on any device, with no per-context module maps. {@link #close()}
 * unloads it; kernels of a closed library throw {@link IllegalStateException}.
 */
public final class Library implements AutoCloseable {
    private final NativeObject state;

    private Library(long pointer) {
        this.state = NativeObject.register(this, pointer, "Library", NativeApi::libraryUnload);
    }

    /** Loads PTX text, a cubin or a fatbin. A rejected image throws a {@link CudaException} with the JIT log. */
    public static Library load(byte[] image) {
        Objects.requireNonNull(image, "image");
        Native.ensureLoaded();
        return new Library(NativeApi.libraryLoad(image));
    }

    /**
     * Loads PTX text, a cubin or a fatbin from a file.
     *
     * @param file the module image
     * @return the loaded library
     * @throws java.io.UncheckedIOException if the file cannot be read (its {@code IOException} is the cause)
     * @throws IllegalArgumentException if the bytes are no module image
     * @throws CudaException if the driver rejects the image (with the JIT log) or cannot be used
     */
    public static Library load(Path file) {
        Objects.requireNonNull(file, "file");
        try {
            return load(Files.readAllBytes(file));
        } catch (IOException e) {
            throw new UncheckedIOException("reading module image " + file, e);
        }
    }

    /**
     * Loads a class-path resource (e.g. {@code "/kernels/my.fatbin"}) seen from {@code anchor}'s class loader.
     *
     * @param anchor the class whose loader finds the resource ({@code getResourceAsStream} rules)
     * @param resource the resource name
     * @return the loaded library
     * @throws IllegalArgumentException if there is no such resource, or it is no module image
     * @throws java.io.UncheckedIOException if reading the resource fails
     * @throws CudaException if the driver rejects the image or cannot be used
     */
    public static Library loadResource(Class<?> anchor, String resource) {
        Objects.requireNonNull(anchor, "anchor");
        Objects.requireNonNull(resource, "resource");
        try (InputStream in = anchor.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalArgumentException("class path resource " + resource + " not found (relative to " + anchor.getName() + ")");
            }
            return load(in.readAllBytes());
        } catch (IOException e) {
            throw new UncheckedIOException("reading resource " + resource, e);
        }
    }

    /** The kernel called {@code name}; an unknown name throws {@link IllegalArgumentException} listing the kernels. */
    public Kernel kernel(String name) {
        Objects.requireNonNull(name, "name");
        if (name.isEmpty() || name.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("kernel name '" + name.replace("\0", "\\0") + "' " + (name.isEmpty() ? "is empty" : "contains a NUL character")
                    + "; expected a kernel's (extern \"C\" or mangled) name");
        }
        long lib = enter();
        try {
            long[] info = NativeApi.kernelGet(lib, name);
            return new Kernel(this, name, info[0], java.util.Arrays.copyOfRange(info, 1, info.length));
        } finally {
            exit();
        }
    }

    /** Names of the kernels, or an empty list where the driver cannot enumerate them (before 12.4). */
    public List<String> kernelNames() {
        long lib = enter();
        try {
            String[] names = NativeApi.libraryKernelNames(lib);
            return names == null ? Collections.emptyList() : Collections.unmodifiableList(Arrays.asList(names));
        } finally {
            exit();
        }
    }

    long enter() {
        return state.enter();
    }

    void exit() {
        state.exit();
        Reference.reachabilityFence(this);
    }

    public boolean isClosed() {
        return state.isClosed();
    }

    /** Unloads the library after launches in flight return. Idempotent. */
    @Override
    public void close() {
        state.close();
        Reference.reachabilityFence(this);
    }
}
