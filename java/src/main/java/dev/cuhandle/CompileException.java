package dev.cuhandle;

/**
 * CUDA source did not compile ({@code NVRTC_ERROR_COMPILATION}): {@link #getLog()} holds NVRTC's full log, whose
 * messages name the program and line ({@code saxpy.cu(12): error: identifier "x" is undefined}).
 *
 * <p>A {@link CudaException} with code {@link CudaError#INVALID_SOURCE} (300, "the device kernel source is
 * invalid"), so code that handles every CUDA failure alike keeps working; catch this subclass for the log.
 * Failures of NVRTC itself (absent, out of memory) are plain {@code CudaException}s, and options NVRTC refuses
 * are {@link IllegalArgumentException}s.
 */
public final class CompileException extends CudaException {
    private static final long serialVersionUID = 1L;
    /** The part of the log the message repeats; the rest is in {@link #getLog()}. */
    private static final int LOG_IN_MESSAGE = 4000;

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

    CompileException(String programName, String architecture, String log) {
        super(CudaError.INVALID_SOURCE.code(), "nvrtcCompileProgram", describe(programName, architecture, log));
        this.log = log;
        this.programName = programName;
        this.architecture = architecture;
    }

    private static String describe(String programName, String architecture, String log) {
        String shown = log.length() <= LOG_IN_MESSAGE ? log : log.substring(0, LOG_IN_MESSAGE) + "\n... (" + (log.length() - LOG_IN_MESSAGE)
                + " more characters: see CompileException.getLog())";
        return "CUDA_ERROR_INVALID_SOURCE (300): " + programName + " did not compile for " + architecture + ":\n" + shown;
    }

    /**
     * NVRTC's complete log: every error and warning with the program name and line number.
     *
     * @return the log, never {@code null}
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
