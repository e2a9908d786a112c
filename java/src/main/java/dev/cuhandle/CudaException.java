package dev.cuhandle;

/**
 * A CUDA driver call failed, or the driver could not be used at all (rules H11, H12).
 *
 * <p>Carries the numeric {@code CUresult}, its {@link CudaError} constant (null for a code newer
 * than this library), the operation that failed and a message with the driver's description.
 */
public class CudaException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int code;
    private final String operation;
    private final String detail;

    /** Called by the native layer and by the Java side for driver-level failures. */
    public CudaException(int code, String operation, String message) {
        super(operation + " failed: " + message);
        this.code = code;
        this.operation = operation;
        this.detail = message;
    }

    /** A new exception with the same code, operation and message, caused by this one. */
    CudaException rethrown() {
        return new CudaException(code, operation, detail, this);
    }

    CudaException(int code, String operation, String message, Throwable cause) {
        this(code, operation, message);
        initCause(cause);
    }

    /** The raw {@code CUresult} value. */
    public int code() {
        return code;
    }

    /** The error constant, or null when the code is unknown to this version of cuhandle. */
    public CudaError error() {
        return CudaError.fromCode(code);
    }

    /** What was being done, e.g. {@code cuLaunchKernel} or {@code loading the CUDA driver library}. */
    public String operation() {
        return operation;
    }

    /**
     * True for errors that leave the context unusable (illegal address, launch failure, ...):
     * every later call of every handle on that context fails, naming the original cause. Measured
     * on driver 580 (H200): the driver then fails every other context of the process too, and a
     * primary-context reset does not recover it; only a new process does.
     */
    public boolean isSticky() {
        CudaError e = error();
        return e != null && e.isSticky();
    }
}
