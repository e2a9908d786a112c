package dev.cuhandle;

/**
 * CUDA source did not compile with NVRTC, or NVRTC failed compiling it. Carries NVRTC's own result
 * ({@link #nvrtcResult()} and {@link #nvrtcResultName()}: {@code NVRTC_ERROR_COMPILATION} (6) for errors in the
 * source), NVRTC's full log ({@link #getLog()}, whose messages name the program and line:
 * {@code saxpy.cu(12): error: identifier "x" is undefined}), the program name and the architecture compiled for.
 *
 * <p>It stays a {@link CudaException}, so code that handles every CUDA failure alike keeps working: its
 * {@link #code()} is {@link CudaError#INVALID_SOURCE} (300), the driver's nearest result, and its operation
 * {@code nvrtcCompileProgram}; NVRTC's own result is {@link #nvrtcResult()}. NVRTC missing or unusable is a
 * plain {@code CudaException} (code {@link CudaError#FILE_NOT_FOUND} ...), and options NVRTC refuses
 * ({@code NVRTC_ERROR_INVALID_OPTION}) are {@link IllegalArgumentException}s.
 *
 * <pre>{@code
 * try (Library lib = Library.compile(source, CompileOptions.defaults().programName("saxpy.cu"))) {
 *     h.launch(lib.kernel("saxpy"), Dim3.of(blocks), Dim3.of(256), 0, n, 2f, x, y);
 * } catch (CompileException e) {
 *     System.err.println(e.getLog());   // saxpy.cu(12): error: identifier "x" is undefined
 * }
 * }</pre>
 */
public final class CompileException extends CudaException {
    /** {@code NVRTC_ERROR_COMPILATION}: the source has errors; the log says which. */
    public static final int NVRTC_ERROR_COMPILATION = 6;
    /** {@code NVRTC_ERROR_BUILTIN_OPERATION_FAILURE}: typically libnvrtc-builtins could not be loaded. */
    public static final int NVRTC_ERROR_BUILTIN_OPERATION_FAILURE = 7;

    private static final long serialVersionUID = 2L;
    /** The part of the log the message repeats; the rest is in {@link #getLog()}. */
    private static final int LOG_IN_MESSAGE = 4000;

    /**
     * NVRTC's result ({@code nvrtcResult}).
     *
     * @serial
     */
    private final int nvrtcResult;
    /**
     * Its name as NVRTC gives it ({@code nvrtcGetErrorString}).
     *
     * @serial
     */
    private final String nvrtcResultName;
    /**
     * NVRTC's full log.
     *
     * @serial
     */
    private final String log;
    /**
     * The program name the log uses.
     *
     * @serial
     */
    private final String programName;
    /**
     * The architecture compiled for, e.g. {@code sm_90}.
     *
     * @serial
     */
    private final String architecture;

    CompileException(int nvrtcResult, String nvrtcResultName, String programName, String architecture, String log) {
        super(CudaError.INVALID_SOURCE.code(), "nvrtcCompileProgram", describe(nvrtcResult, nvrtcResultName, programName, architecture, log));
        this.nvrtcResult = nvrtcResult;
        this.nvrtcResultName = nvrtcResultName;
        this.log = log;
        this.programName = programName;
        this.architecture = architecture;
    }

    private static String describe(int result, String name, String programName, String architecture, String log) {
        String what = result == NVRTC_ERROR_COMPILATION ? programName + " did not compile for " + architecture
                : "NVRTC failed compiling " + programName + " for " + architecture
                        + (result == NVRTC_ERROR_BUILTIN_OPERATION_FAILURE
                                ? " (it could not use libnvrtc-builtins, which must lie next to libnvrtc and be of the same version)" : "");
        if (log.isEmpty()) {
            return name + " (" + result + "): " + what;
        }
        String shown = log.length() <= LOG_IN_MESSAGE ? log : log.substring(0, LOG_IN_MESSAGE) + "\n... (" + (log.length() - LOG_IN_MESSAGE)
                + " more characters: see CompileException.getLog())";
        return name + " (" + result + "): " + what + ":\n" + shown;
    }

    /**
     * NVRTC's result: {@link #NVRTC_ERROR_COMPILATION} for errors in the source, another {@code nvrtcResult} when
     * NVRTC itself failed (out of memory, builtins missing ...).
     *
     * @return the {@code nvrtcResult} value
     */
    public int nvrtcResult() {
        return nvrtcResult;
    }

    /**
     * The name of {@link #nvrtcResult()} as NVRTC gives it.
     *
     * @return e.g. {@code "NVRTC_ERROR_COMPILATION"}
     */
    public String nvrtcResultName() {
        return nvrtcResultName;
    }

    /**
     * NVRTC's complete log: every error and warning with the program name and line number.
     *
     * @return the log, never {@code null} (empty when NVRTC wrote none)
     */
    public String getLog() {
        return log;
    }

    /**
     * The program name ({@link CompileOptions#programName(String)}) the log refers to.
     *
     * @return the name, e.g. {@code "program.cu"}
     */
    public String programName() {
        return programName;
    }

    /**
     * The architecture the source was compiled for.
     *
     * @return e.g. {@code "sm_90"} or {@code "compute_90"}
     */
    public String architecture() {
        return architecture;
    }
}
