package dev.cuhandle;

/**
 * JIT and library options for {@link Library#load(byte[], LoadOptions)} and {@link Library#load(java.nio.file.Path,
 * LoadOptions)}: what the driver's JIT does with PTX (optimisation level, register limit, verbose log) and whether
 * the driver may keep reading the image instead of copying it. Immutable; each setter returns a new object.
 * The JIT options apply only where the driver compiles PTX; machine code (SASS) for the device is used as is.
 *
 * <pre>{@code
 * LoadOptions options = LoadOptions.defaults().maxRegisters(64).logVerbose(true);
 * try (Library lib = Library.load(Path.of("kernels.ptx"), options)) {
 *     System.out.println(lib.jitLog());            // registers and spills per kernel, from the driver's JIT
 * }
 * }</pre>
 */
public final class LoadOptions {
    private static final LoadOptions DEFAULTS = new LoadOptions(-1, -1, false, false);

    private final int optimizationLevel;
    private final int maxRegisters;
    private final boolean logVerbose;
    private final boolean binaryIsPreserved;

    private LoadOptions(int optimizationLevel, int maxRegisters, boolean logVerbose, boolean binaryIsPreserved) {
        this.optimizationLevel = optimizationLevel;
        this.maxRegisters = maxRegisters;
        this.logVerbose = logVerbose;
        this.binaryIsPreserved = binaryIsPreserved;
    }

    /**
     * The driver's defaults: optimisation level 4, no register limit, a terse log, the image copied.
     *
     * @return the default options
     */
    public static LoadOptions defaults() {
        return DEFAULTS;
    }

    /**
     * The JIT optimisation level ({@code CU_JIT_OPTIMIZATION_LEVEL}).
     *
     * @param level 0 (none) to 4 (the driver's default, most)
     * @return options with this level
     * @throws IllegalArgumentException if {@code level} is outside [0, 4]
     */
    public LoadOptions optimizationLevel(int level) {
        if (level < 0 || level > 4) {
            throw new IllegalArgumentException("JIT optimization level " + level + " is outside [0, 4]");
        }
        return new LoadOptions(level, maxRegisters, logVerbose, binaryIsPreserved);
    }

    /**
     * The most registers a thread of a JIT-compiled kernel may use ({@code CU_JIT_MAX_REGISTERS}).
     *
     * @param registers at least 1 (the JIT rounds to what the architecture allows)
     * @return options with this limit
     * @throws IllegalArgumentException if {@code registers} is below 1
     */
    public LoadOptions maxRegisters(int registers) {
        if (registers < 1) {
            throw new IllegalArgumentException("JIT max registers " + registers + " is below 1; expected a register count per thread");
        }
        return new LoadOptions(optimizationLevel, registers, logVerbose, binaryIsPreserved);
    }

    /**
     * Whether the JIT writes a verbose information log ({@code CU_JIT_LOG_VERBOSE}), read with
     * {@link Library#jitLog()}.
     *
     * @param verbose {@code true} for the verbose log
     * @return options with this setting
     */
    public LoadOptions logVerbose(boolean verbose) {
        return new LoadOptions(optimizationLevel, maxRegisters, verbose, binaryIsPreserved);
    }

    /**
     * Whether the driver reads the library's own native copy of the image until it is unloaded instead of copying
     * it ({@code CU_LIBRARY_BINARY_IS_PRESERVED}); saves one copy of large images. It applies to in-memory
     * images ({@link Library#load(byte[], LoadOptions)}); a file is read by the driver and this setting is
     * ignored there.
     *
     * @param preserved {@code true} to keep the image for the driver
     * @return options with this setting
     */
    public LoadOptions binaryIsPreserved(boolean preserved) {
        return new LoadOptions(optimizationLevel, maxRegisters, logVerbose, preserved);
    }

    int optimizationLevel() {
        return optimizationLevel;
    }

    int maxRegisters() {
        return maxRegisters;
    }

    boolean isLogVerbose() {
        return logVerbose;
    }

    boolean isBinaryPreserved() {
        return binaryIsPreserved;
    }

    @Override
    public String toString() {
        return "LoadOptions[optimizationLevel=" + (optimizationLevel < 0 ? "default" : optimizationLevel) + ", maxRegisters="
                + (maxRegisters < 0 ? "default" : maxRegisters) + ", logVerbose=" + logVerbose + ", binaryIsPreserved=" + binaryIsPreserved + "]";
    }
}
