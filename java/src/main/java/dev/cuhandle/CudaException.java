package dev.cuhandle;

/**
 * A CUDA driver call failed, or the driver could not be used at all (rules H11, H12).
 *
 * <p>Carries the numeric {@code CUresult}, its {@link CudaError} constant (null for a code newer
 * than this library), the operation that failed, a message with the driver's description and, where the
 * driver keeps an error log (CUDA 12.9 and newer), what it logged about this failure ({@link #driverLog()}),
 * which often names the parameter at fault.
 *
 * <pre>{@code
 * try (DeviceBuffer scratch = h.allocate(bytes)) {
 *     run(h, scratch);
 * } catch (CudaException e) {
 *     if (e.error() != CudaError.OUT_OF_MEMORY) {
 *         throw e;                                 // e.operation() names the failed call, e.isSticky() whether CUDA is lost
 *     }
 *     runInHalves(h);                              // the pool was trimmed and the allocation retried once already
 * }
 * }</pre>
 */
public class CudaException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * The raw {@code CUresult}.
     *
     * @serial
     */
    private final int code;
    /**
     * The operation that failed, e.g. {@code cuLaunchKernel}.
     *
     * @serial
     */
    private final String operation;
    /**
     * The driver's description of the failure, without the operation.
     *
     * @serial
     */
    private final String detail;
    /**
     * What the driver logged about the failure on the failing thread; empty when it logged nothing.
     *
     * @serial
     */
    private final String driverLog;

    /**
     * A failure of {@code operation} with {@code CUresult} {@code code}. Thrown by the native layer for
     * driver failures and by the Java side for driver-level conditions; applications rarely create one. The
     * exception's message is {@code operation + " failed: " + message}.
     *
     * @param code the raw {@code CUresult} (or the closest one when the driver could not be used at all)
     * @param operation what was being done, e.g. {@code cuMemAlloc}
     * @param message the driver's name and description of the error, and what was asked for
     */
    public CudaException(int code, String operation, String message) {
        this(code, operation, message, "");
    }

    /**
     * As {@link #CudaException(int, String, String)}, with what the driver logged about the failure appended to
     * the message ({@code "; the driver's log: " + driverLog}) when there is any. Thrown by the native layer.
     */
    CudaException(int code, String operation, String message, String driverLog) {
        super(operation + " failed: " + message + (driverLog.isEmpty() ? "" : "; the driver's log: " + driverLog));
        this.code = code;
        this.operation = operation;
        this.detail = message;
        this.driverLog = driverLog;
    }

    /** A new exception with the same code, operation, message and driver log, caused by this one. */
    CudaException rethrown() {
        CudaException again = new CudaException(code, operation, detail, driverLog);
        again.initCause(this);
        return again;
    }

    /**
     * The same failure reported as a failure of {@code outer}, which it was part of: the code and the driver's
     * log are kept (the log once, at the end of the message), this exception's operation and description become
     * the new description, and this exception is the cause.
     */
    CudaException within(String outer) {
        CudaException wrapped = new CudaException(code, outer, operation + " failed: " + detail, driverLog());
        wrapped.initCause(this);
        return wrapped;
    }

    CudaException(int code, String operation, String message, Throwable cause) {
        this(code, operation, message);
        initCause(cause);
    }

    /**
     * The raw {@code CUresult} value.
     *
     * @return the code, e.g. 700 for {@link CudaError#ILLEGAL_ADDRESS}
     */
    public int code() {
        return code;
    }

    /**
     * The error constant of {@link #code()}.
     *
     * @return the constant, or {@code null} when the code is unknown to this version of cuhandle
     */
    public CudaError error() {
        return CudaError.fromCode(code);
    }

    /**
     * What the driver logged about this failure on the thread that made the failing call: drivers for CUDA 12.9
     * and newer explain many failures in an error log, often naming the argument at fault, where the code's
     * description is generic. The lines are also part of {@link #getMessage()}.
     *
     * <pre>{@code
     * } catch (CudaException e) {
     *     log.error("{} failed: {} ({})", e.operation(), e.error(), e.driverLog().isEmpty() ? "no driver log" : e.driverLog());
     * }
     * }</pre>
     *
     * @return the driver's log lines about the failure, joined by {@code "; "}; empty when the driver logged none
     *     or keeps no error log (before CUDA 12.9)
     */
    public String driverLog() {
        return driverLog == null ? "" : driverLog; // null: deserialized from a version without the field
    }

    /**
     * What was being done, e.g. {@code cuLaunchKernel} or {@code loading the CUDA driver library}.
     *
     * @return the operation that failed
     */
    public String operation() {
        return operation;
    }

    /**
     * Whether this error leaves the context unusable (illegal address, launch failure, ...; see
     * {@link CudaError#isSticky()}): every later call of every handle on that context fails, naming the
     * original cause. Measured on driver 580 (H200): the driver then fails every other context of the process
     * too, and a primary-context reset does not recover it; only a new process does.
     *
     * @return {@code true} for a sticky error, {@code false} otherwise and for unknown codes
     */
    public boolean isSticky() {
        CudaError e = error();
        return e != null && e.isSticky();
    }
}
