package dev.cuhandle;

import java.util.Objects;

/**
 * BLAS level 1 on a {@link Handle}, for {@code float} (s) and {@code double} (d), with cuBLAS-like
 * signatures and reference-BLAS semantics.
 *
 * <pre>{@code
 * Blas.saxpy(h, n, 2f, x, 1, y, 1);               // y = 2x + y
 * float dot = Blas.sdot(h, n, x, 1, y, 1);        // waits for the result
 * Blas.sdot(h, n, x, 1, y, 1, result);            // into a device buffer, in stream order, no wait
 * long i = Blas.isamax(h, n, x, 1);               // 1-based, as in BLAS
 * }</pre>
 *
 * <ul>
 * <li>{@code n <= 0}: nothing is done; reductions return 0.</li>
 * <li>Increments may be negative: element i of a vector with increment {@code inc < 0} is at
 * {@code (n-1-i)*|inc|} from its start, as in reference BLAS. A vector that is only read may have
 * increment 0 (every element is its first). In axpy, copy and swap a written vector (y, and x of
 * swap) with increment 0 is an {@link IllegalArgumentException}.</li>
 * <li>The single-vector operations scal, nrm2, asum and iamax do nothing for {@code incx <= 0}, 0
 * included: scal leaves x unchanged, nrm2, asum and iamax return (or write) 0. This is the
 * behaviour of the Fortran 77 reference BLAS routines ({@code sscal.f}, {@code snrm2.f},
 * {@code sasum.f}, {@code isamax.f} and their d versions). The Fortran 90 reference nrm2
 * ({@code snrm2.f90}, {@code dnrm2.f90}, which replaced {@code snrm2.f} in LAPACK 3.9.1) differs: it
 * walks a negative increment backwards and returns the norm, and with increment 0 counts the first
 * element n times.</li>
 * <li>Vectors start at the start of their {@link DeviceBuffer} (use {@link DeviceBuffer#slice} for
 * an offset, a multiple of the element size) and must hold {@code 1 + (n-1)*|inc|} elements. A
 * device result must be aligned to its size (4 or 8 bytes; 8 for iamax).</li>
 * <li>Reductions return a host value (waiting for it), or, with a result {@link DeviceBuffer},
 * write it there in stream order without waiting. Reductions are deterministic: the same input
 * gives a bit-identical result on every run (fixed grid per device, fixed summation order).</li>
 * <li>{@code isamax}/{@code idamax} return a 1-based index like BLAS; NaN follows reference BLAS:
 * if the first element is NaN the answer is 1, otherwise NaN elements are never chosen.</li>
 * <li>{@code snrm2} accumulates squares in double and {@code dnrm2} uses Blue's scaled
 * accumulators, so neither overflows nor underflows for representable results.</li>
 * </ul>
 */
public final class Blas {
    private Blas() {}

    /**
     * Scales a vector in place, {@code x = alpha * x} (float, 4-byte elements), like {@code cublasSscal}.
     * Queued on the handle's stream; returns without waiting for the result.
     *
     * @param h the handle whose context and stream run the operation
     * @param n number of elements; {@code n <= 0} does nothing
     * @param alpha the scale factor
     * @param x the vector x, starting at the start of the buffer
     * @param incx increment of x in elements; {@code incx <= 0}, 0 included, does nothing (x is left unchanged), as the
     *     Fortran 77 reference scal does
     * @throws NullPointerException if the handle or a buffer is {@code null}
     * @throws IllegalArgumentException if a buffer is too short for {@code n} elements with its increment
     *     ({@code 1 + (n-1)*|inc|} elements), does not start at an address aligned to the element size, or
     *     belongs to another context than the handle
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public static void sscal(Handle h, long n, float alpha, DeviceBuffer x, long incx) {
        BlasCall.update(h, 4, BlasCall.SCAL, n, alpha, x, incx, null, 0);
    }

    /**
     * Scales a vector in place, {@code x = alpha * x} (double, 8-byte elements), like {@code cublasDscal}.
     * Queued on the handle's stream; returns without waiting for the result.
     *
     * @param h the handle whose context and stream run the operation
     * @param n number of elements; {@code n <= 0} does nothing
     * @param alpha the scale factor
     * @param x the vector x, starting at the start of the buffer
     * @param incx increment of x in elements; {@code incx <= 0}, 0 included, does nothing (x is left unchanged), as the
     *     Fortran 77 reference scal does
     * @throws NullPointerException if the handle or a buffer is {@code null}
     * @throws IllegalArgumentException if a buffer is too short for {@code n} elements with its increment
     *     ({@code 1 + (n-1)*|inc|} elements), does not start at an address aligned to the element size, or
     *     belongs to another context than the handle
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public static void dscal(Handle h, long n, double alpha, DeviceBuffer x, long incx) {
        BlasCall.update(h, 8, BlasCall.SCAL, n, alpha, x, incx, null, 0);
    }

    /**
     * Adds a scaled vector, {@code y = alpha * x + y} (float, 4-byte elements), like {@code cublasSaxpy}.
     * With {@code alpha == 0}, y is not touched (as in reference BLAS). Queued on the handle's stream;
     * returns without waiting for the result.
     *
     * @param h the handle whose context and stream run the operation
     * @param n number of elements; {@code n <= 0} does nothing
     * @param alpha the factor of x
     * @param x the vector x (read), starting at the start of the buffer
     * @param incx increment of x in elements, may be negative; 0 reads the first element n times
     * @param y the vector y (written), starting at the start of the buffer
     * @param incy increment of y in elements, may be negative; 0 is refused because y is written
     * @throws NullPointerException if the handle or a buffer is {@code null}
     * @throws IllegalArgumentException if a buffer is too short for {@code n} elements with its increment
     *     ({@code 1 + (n-1)*|inc|} elements), does not start at an address aligned to the element size, or
     *     belongs to another context than the handle; or {@code incy} is 0
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public static void saxpy(Handle h, long n, float alpha, DeviceBuffer x, long incx, DeviceBuffer y, long incy) {
        BlasCall.update(h, 4, BlasCall.AXPY, n, alpha, x, incx, y, incy);
    }

    /**
     * Adds a scaled vector, {@code y = alpha * x + y} (double, 8-byte elements), like {@code cublasDaxpy}.
     * With {@code alpha == 0}, y is not touched (as in reference BLAS). Queued on the handle's stream;
     * returns without waiting for the result.
     *
     * @param h the handle whose context and stream run the operation
     * @param n number of elements; {@code n <= 0} does nothing
     * @param alpha the factor of x
     * @param x the vector x (read), starting at the start of the buffer
     * @param incx increment of x in elements, may be negative; 0 reads the first element n times
     * @param y the vector y (written), starting at the start of the buffer
     * @param incy increment of y in elements, may be negative; 0 is refused because y is written
     * @throws NullPointerException if the handle or a buffer is {@code null}
     * @throws IllegalArgumentException if a buffer is too short for {@code n} elements with its increment
     *     ({@code 1 + (n-1)*|inc|} elements), does not start at an address aligned to the element size, or
     *     belongs to another context than the handle; or {@code incy} is 0
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public static void daxpy(Handle h, long n, double alpha, DeviceBuffer x, long incx, DeviceBuffer y, long incy) {
        BlasCall.update(h, 8, BlasCall.AXPY, n, alpha, x, incx, y, incy);
    }

    /**
     * Copies a vector, {@code y = x} (float, 4-byte elements), like {@code cublasScopy}. Queued on the
     * handle's stream; returns without waiting for the result.
     *
     * @param h the handle whose context and stream run the operation
     * @param n number of elements; {@code n <= 0} does nothing
     * @param x the vector x (read), starting at the start of the buffer
     * @param incx increment of x in elements, may be negative; 0 reads the first element n times
     * @param y the vector y (written), starting at the start of the buffer
     * @param incy increment of y in elements, may be negative; 0 is refused because y is written
     * @throws NullPointerException if the handle or a buffer is {@code null}
     * @throws IllegalArgumentException if a buffer is too short for {@code n} elements with its increment
     *     ({@code 1 + (n-1)*|inc|} elements), does not start at an address aligned to the element size, or
     *     belongs to another context than the handle; or {@code incy} is 0
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public static void scopy(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy) {
        BlasCall.update(h, 4, BlasCall.COPY, n, 0, x, incx, y, incy);
    }

    /**
     * Copies a vector, {@code y = x} (double, 8-byte elements), like {@code cublasDcopy}. Queued on the
     * handle's stream; returns without waiting for the result.
     *
     * @param h the handle whose context and stream run the operation
     * @param n number of elements; {@code n <= 0} does nothing
     * @param x the vector x (read), starting at the start of the buffer
     * @param incx increment of x in elements, may be negative; 0 reads the first element n times
     * @param y the vector y (written), starting at the start of the buffer
     * @param incy increment of y in elements, may be negative; 0 is refused because y is written
     * @throws NullPointerException if the handle or a buffer is {@code null}
     * @throws IllegalArgumentException if a buffer is too short for {@code n} elements with its increment
     *     ({@code 1 + (n-1)*|inc|} elements), does not start at an address aligned to the element size, or
     *     belongs to another context than the handle; or {@code incy} is 0
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public static void dcopy(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy) {
        BlasCall.update(h, 8, BlasCall.COPY, n, 0, x, incx, y, incy);
    }

    /**
     * Exchanges two vectors, {@code x <-> y} (float, 4-byte elements), like {@code cublasSswap}. Queued on
     * the handle's stream; returns without waiting for the result.
     *
     * @param h the handle whose context and stream run the operation
     * @param n number of elements; {@code n <= 0} does nothing
     * @param x the vector x (written), starting at the start of the buffer
     * @param incx increment of x in elements, may be negative; 0 is refused because x is written
     * @param y the vector y (written), starting at the start of the buffer
     * @param incy increment of y in elements, may be negative; 0 is refused because y is written
     * @throws NullPointerException if the handle or a buffer is {@code null}
     * @throws IllegalArgumentException if a buffer is too short for {@code n} elements with its increment
     *     ({@code 1 + (n-1)*|inc|} elements), does not start at an address aligned to the element size, or
     *     belongs to another context than the handle; or {@code incx} or {@code incy} is 0
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public static void sswap(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy) {
        BlasCall.update(h, 4, BlasCall.SWAP, n, 0, x, incx, y, incy);
    }

    /**
     * Exchanges two vectors, {@code x <-> y} (double, 8-byte elements), like {@code cublasDswap}. Queued on
     * the handle's stream; returns without waiting for the result.
     *
     * @param h the handle whose context and stream run the operation
     * @param n number of elements; {@code n <= 0} does nothing
     * @param x the vector x (written), starting at the start of the buffer
     * @param incx increment of x in elements, may be negative; 0 is refused because x is written
     * @param y the vector y (written), starting at the start of the buffer
     * @param incy increment of y in elements, may be negative; 0 is refused because y is written
     * @throws NullPointerException if the handle or a buffer is {@code null}
     * @throws IllegalArgumentException if a buffer is too short for {@code n} elements with its increment
     *     ({@code 1 + (n-1)*|inc|} elements), does not start at an address aligned to the element size, or
     *     belongs to another context than the handle; or {@code incx} or {@code incy} is 0
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public static void dswap(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy) {
        BlasCall.update(h, 8, BlasCall.SWAP, n, 0, x, incx, y, incy);
    }

    /**
     * The dot product {@code sum(x[i] * y[i])} (float, 4-byte elements), like {@code cublasSdot} in host
     * pointer mode. Waits for the handle's stream (this and all earlier work on it) and returns the value.
     * Deterministic: the same input gives a bit-identical result on every run.
     *
     * @param h the handle whose context and stream run the operation
     * @param n number of elements; {@code n <= 0} returns 0
     * @param x the vector x (read), starting at the start of the buffer
     * @param incx increment of x in elements, may be negative; 0 reads the first element n times
     * @param y the vector y (read), starting at the start of the buffer
     * @param incy increment of y in elements, may be negative; 0 reads the first element n times
     * @return the dot product (accumulated in double), 0 when {@code n <= 0}
     * @throws NullPointerException if the handle or a buffer is {@code null}
     * @throws IllegalArgumentException if a buffer is too short for {@code n} elements with its increment
     *     ({@code 1 + (n-1)*|inc|} elements), does not start at an address aligned to the element size, or
     *     belongs to another context than the handle
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public static float sdot(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy) {
        return (float) BlasCall.reduce(h, 4, BlasCall.DOT, n, x, incx, y, incy, null);
    }

    /**
     * The dot product {@code sum(x[i] * y[i])} (double, 8-byte elements), like {@code cublasDdot} in host
     * pointer mode. Waits for the handle's stream (this and all earlier work on it) and returns the value.
     * Deterministic: the same input gives a bit-identical result on every run.
     *
     * @param h the handle whose context and stream run the operation
     * @param n number of elements; {@code n <= 0} returns 0
     * @param x the vector x (read), starting at the start of the buffer
     * @param incx increment of x in elements, may be negative; 0 reads the first element n times
     * @param y the vector y (read), starting at the start of the buffer
     * @param incy increment of y in elements, may be negative; 0 reads the first element n times
     * @return the dot product, 0 when {@code n <= 0}
     * @throws NullPointerException if the handle or a buffer is {@code null}
     * @throws IllegalArgumentException if a buffer is too short for {@code n} elements with its increment
     *     ({@code 1 + (n-1)*|inc|} elements), does not start at an address aligned to the element size, or
     *     belongs to another context than the handle
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public static double ddot(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy) {
        return BlasCall.reduce(h, 8, BlasCall.DOT, n, x, incx, y, incy, null);
    }

    /**
     * Writes the dot product {@code sum(x[i] * y[i])} (float) to the first 4 bytes of {@code result}, like
     * {@code cublasSdot} in device pointer mode. The result is written in stream order and this method
     * returns without waiting: read it after a {@link Handle#synchronize()} or in later work on the same
     * stream. {@code n <= 0} writes 0.
     *
     * @param h the handle whose context and stream run the operation
     * @param n number of elements; {@code n <= 0} writes 0
     * @param x the vector x (read), starting at the start of the buffer
     * @param incx increment of x in elements, may be negative; 0 reads the first element n times
     * @param y the vector y (read), starting at the start of the buffer
     * @param incy increment of y in elements, may be negative; 0 reads the first element n times
     * @param result receives the dot product as a float in its first 4 bytes; its start must be aligned to 4
     *     bytes
     * @throws NullPointerException if the handle or a buffer is {@code null}
     * @throws IllegalArgumentException if a buffer is too short for {@code n} elements with its increment
     *     ({@code 1 + (n-1)*|inc|} elements), does not start at an address aligned to the element size, or
     *     belongs to another context than the handle; or {@code result} is shorter than the result or
     *     misaligned
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public static void sdot(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy, DeviceBuffer result) {
        BlasCall.reduce(h, 4, BlasCall.DOT, n, x, incx, y, incy, Objects.requireNonNull(result, "result"));
    }

    /**
     * Writes the dot product {@code sum(x[i] * y[i])} (double) to the first 8 bytes of {@code result}, like
     * {@code cublasDdot} in device pointer mode. The result is written in stream order and this method
     * returns without waiting: read it after a {@link Handle#synchronize()} or in later work on the same
     * stream. {@code n <= 0} writes 0.
     *
     * @param h the handle whose context and stream run the operation
     * @param n number of elements; {@code n <= 0} writes 0
     * @param x the vector x (read), starting at the start of the buffer
     * @param incx increment of x in elements, may be negative; 0 reads the first element n times
     * @param y the vector y (read), starting at the start of the buffer
     * @param incy increment of y in elements, may be negative; 0 reads the first element n times
     * @param result receives the dot product as a double in its first 8 bytes; its start must be aligned to 8
     *     bytes
     * @throws NullPointerException if the handle or a buffer is {@code null}
     * @throws IllegalArgumentException if a buffer is too short for {@code n} elements with its increment
     *     ({@code 1 + (n-1)*|inc|} elements), does not start at an address aligned to the element size, or
     *     belongs to another context than the handle; or {@code result} is shorter than the result or
     *     misaligned
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public static void ddot(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy, DeviceBuffer result) {
        BlasCall.reduce(h, 8, BlasCall.DOT, n, x, incx, y, incy, Objects.requireNonNull(result, "result"));
    }

    /**
     * Euclidean norm {@code sqrt(sum(x[i]^2))} (float, 4-byte elements), like {@code cublasSnrm2} in host
     * pointer mode. Squares are accumulated in double, so the result neither overflows nor underflows when
     * representable. Waits for the handle's stream (this and all earlier work on it) and returns the value.
     *
     * @param h the handle whose context and stream run the operation
     * @param n number of elements; {@code n <= 0} returns 0
     * @param x the vector x, starting at the start of the buffer
     * @param incx increment of x in elements; {@code incx <= 0} returns 0, as the Fortran 77 reference nrm2 does
     *     (the Fortran 90 one of LAPACK 3.9.1 and later walks a negative increment backwards instead)
     * @return the euclidean norm, 0 when {@code n <= 0} or {@code incx <= 0}
     * @throws NullPointerException if the handle or a buffer is {@code null}
     * @throws IllegalArgumentException if a buffer is too short for {@code n} elements with its increment
     *     ({@code 1 + (n-1)*|inc|} elements), does not start at an address aligned to the element size, or
     *     belongs to another context than the handle
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public static float snrm2(Handle h, long n, DeviceBuffer x, long incx) {
        return (float) BlasCall.reduce(h, 4, BlasCall.NRM2, n, x, incx, null, 0, null);
    }

    /**
     * Euclidean norm {@code sqrt(sum(x[i]^2))} (double, 8-byte elements), like {@code cublasDnrm2} in host
     * pointer mode. Uses Blue's scaled accumulators, so the result neither overflows nor underflows when
     * representable. Waits for the handle's stream (this and all earlier work on it) and returns the value.
     *
     * @param h the handle whose context and stream run the operation
     * @param n number of elements; {@code n <= 0} returns 0
     * @param x the vector x, starting at the start of the buffer
     * @param incx increment of x in elements; {@code incx <= 0} returns 0, as the Fortran 77 reference nrm2 does
     *     (the Fortran 90 one of LAPACK 3.9.1 and later walks a negative increment backwards instead)
     * @return the euclidean norm, 0 when {@code n <= 0} or {@code incx <= 0}
     * @throws NullPointerException if the handle or a buffer is {@code null}
     * @throws IllegalArgumentException if a buffer is too short for {@code n} elements with its increment
     *     ({@code 1 + (n-1)*|inc|} elements), does not start at an address aligned to the element size, or
     *     belongs to another context than the handle
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public static double dnrm2(Handle h, long n, DeviceBuffer x, long incx) {
        return BlasCall.reduce(h, 8, BlasCall.NRM2, n, x, incx, null, 0, null);
    }

    /**
     * Writes the euclidean norm {@code sqrt(sum(x[i]^2))} (float) to the first 4 bytes of {@code result},
     * like {@code cublasSnrm2} in device pointer mode. Squares are accumulated in double, so the result
     * neither overflows nor underflows when representable. The result is written in stream order and this
     * method returns without waiting: read it after a {@link Handle#synchronize()} or in later work on the
     * same stream. {@code n <= 0} or {@code incx <= 0} writes 0.
     *
     * @param h the handle whose context and stream run the operation
     * @param n number of elements; {@code n <= 0} writes 0
     * @param x the vector x, starting at the start of the buffer
     * @param incx increment of x in elements; {@code incx <= 0} writes 0, as the Fortran 77 reference nrm2 returns 0
     *     (the Fortran 90 one of LAPACK 3.9.1 and later walks a negative increment backwards instead)
     * @param result receives the euclidean norm as a float in its first 4 bytes; its start must be aligned to
     *     4 bytes
     * @throws NullPointerException if the handle or a buffer is {@code null}
     * @throws IllegalArgumentException if a buffer is too short for {@code n} elements with its increment
     *     ({@code 1 + (n-1)*|inc|} elements), does not start at an address aligned to the element size, or
     *     belongs to another context than the handle; or {@code result} is shorter than the result or
     *     misaligned
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public static void snrm2(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer result) {
        BlasCall.reduce(h, 4, BlasCall.NRM2, n, x, incx, null, 0, Objects.requireNonNull(result, "result"));
    }

    /**
     * Writes the euclidean norm {@code sqrt(sum(x[i]^2))} (double) to the first 8 bytes of {@code result},
     * like {@code cublasDnrm2} in device pointer mode. Uses Blue's scaled accumulators, so the result neither
     * overflows nor underflows when representable. The result is written in stream order and this method
     * returns without waiting: read it after a {@link Handle#synchronize()} or in later work on the same
     * stream. {@code n <= 0} or {@code incx <= 0} writes 0.
     *
     * @param h the handle whose context and stream run the operation
     * @param n number of elements; {@code n <= 0} writes 0
     * @param x the vector x, starting at the start of the buffer
     * @param incx increment of x in elements; {@code incx <= 0} writes 0, as the Fortran 77 reference nrm2 returns 0
     *     (the Fortran 90 one of LAPACK 3.9.1 and later walks a negative increment backwards instead)
     * @param result receives the euclidean norm as a double in its first 8 bytes; its start must be aligned
     *     to 8 bytes
     * @throws NullPointerException if the handle or a buffer is {@code null}
     * @throws IllegalArgumentException if a buffer is too short for {@code n} elements with its increment
     *     ({@code 1 + (n-1)*|inc|} elements), does not start at an address aligned to the element size, or
     *     belongs to another context than the handle; or {@code result} is shorter than the result or
     *     misaligned
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public static void dnrm2(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer result) {
        BlasCall.reduce(h, 8, BlasCall.NRM2, n, x, incx, null, 0, Objects.requireNonNull(result, "result"));
    }

    /**
     * Sum of absolute values {@code sum(|x[i]|)} (float, 4-byte elements), like {@code cublasSasum} in host
     * pointer mode. Sums are accumulated in double. Waits for the handle's stream (this and all earlier work
     * on it) and returns the value.
     *
     * @param h the handle whose context and stream run the operation
     * @param n number of elements; {@code n <= 0} returns 0
     * @param x the vector x, starting at the start of the buffer
     * @param incx increment of x in elements; {@code incx <= 0} returns 0
     * @return the sum of absolute values, 0 when {@code n <= 0} or {@code incx <= 0}
     * @throws NullPointerException if the handle or a buffer is {@code null}
     * @throws IllegalArgumentException if a buffer is too short for {@code n} elements with its increment
     *     ({@code 1 + (n-1)*|inc|} elements), does not start at an address aligned to the element size, or
     *     belongs to another context than the handle
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public static float sasum(Handle h, long n, DeviceBuffer x, long incx) {
        return (float) BlasCall.reduce(h, 4, BlasCall.ASUM, n, x, incx, null, 0, null);
    }

    /**
     * Sum of absolute values {@code sum(|x[i]|)} (double, 8-byte elements), like {@code cublasDasum} in host
     * pointer mode. Waits for the handle's stream (this and all earlier work on it) and returns the value.
     *
     * @param h the handle whose context and stream run the operation
     * @param n number of elements; {@code n <= 0} returns 0
     * @param x the vector x, starting at the start of the buffer
     * @param incx increment of x in elements; {@code incx <= 0} returns 0
     * @return the sum of absolute values, 0 when {@code n <= 0} or {@code incx <= 0}
     * @throws NullPointerException if the handle or a buffer is {@code null}
     * @throws IllegalArgumentException if a buffer is too short for {@code n} elements with its increment
     *     ({@code 1 + (n-1)*|inc|} elements), does not start at an address aligned to the element size, or
     *     belongs to another context than the handle
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public static double dasum(Handle h, long n, DeviceBuffer x, long incx) {
        return BlasCall.reduce(h, 8, BlasCall.ASUM, n, x, incx, null, 0, null);
    }

    /**
     * Writes the sum of absolute values {@code sum(|x[i]|)} (float) to the first 4 bytes of {@code result},
     * like {@code cublasSasum} in device pointer mode. Sums are accumulated in double. The result is written
     * in stream order and this method returns without waiting: read it after a {@link Handle#synchronize()}
     * or in later work on the same stream. {@code n <= 0} or {@code incx <= 0} writes 0.
     *
     * @param h the handle whose context and stream run the operation
     * @param n number of elements; {@code n <= 0} writes 0
     * @param x the vector x, starting at the start of the buffer
     * @param incx increment of x in elements; {@code incx <= 0} writes 0
     * @param result receives the sum of absolute values as a float in its first 4 bytes; its start must be
     *     aligned to 4 bytes
     * @throws NullPointerException if the handle or a buffer is {@code null}
     * @throws IllegalArgumentException if a buffer is too short for {@code n} elements with its increment
     *     ({@code 1 + (n-1)*|inc|} elements), does not start at an address aligned to the element size, or
     *     belongs to another context than the handle; or {@code result} is shorter than the result or
     *     misaligned
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public static void sasum(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer result) {
        BlasCall.reduce(h, 4, BlasCall.ASUM, n, x, incx, null, 0, Objects.requireNonNull(result, "result"));
    }

    /**
     * Writes the sum of absolute values {@code sum(|x[i]|)} (double) to the first 8 bytes of {@code result},
     * like {@code cublasDasum} in device pointer mode. The result is written in stream order and this method
     * returns without waiting: read it after a {@link Handle#synchronize()} or in later work on the same
     * stream. {@code n <= 0} or {@code incx <= 0} writes 0.
     *
     * @param h the handle whose context and stream run the operation
     * @param n number of elements; {@code n <= 0} writes 0
     * @param x the vector x, starting at the start of the buffer
     * @param incx increment of x in elements; {@code incx <= 0} writes 0
     * @param result receives the sum of absolute values as a double in its first 8 bytes; its start must be
     *     aligned to 8 bytes
     * @throws NullPointerException if the handle or a buffer is {@code null}
     * @throws IllegalArgumentException if a buffer is too short for {@code n} elements with its increment
     *     ({@code 1 + (n-1)*|inc|} elements), does not start at an address aligned to the element size, or
     *     belongs to another context than the handle; or {@code result} is shorter than the result or
     *     misaligned
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public static void dasum(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer result) {
        BlasCall.reduce(h, 8, BlasCall.ASUM, n, x, incx, null, 0, Objects.requireNonNull(result, "result"));
    }

    /**
     * The index of the first element of largest absolute value (float, 4-byte elements), like
     * {@code cublasIsamax} in host pointer mode. The index is 1-based, as in BLAS. As in reference BLAS, a
     * NaN first element gives 1, and other NaN elements are never chosen. Waits for the handle's stream (this
     * and all earlier work on it) and returns the value.
     *
     * @param h the handle whose context and stream run the operation
     * @param n number of elements; {@code n <= 0} returns 0
     * @param x the vector x, starting at the start of the buffer
     * @param incx increment of x in elements; {@code incx <= 0} returns 0
     * @return the 1-based index of the first element of largest {@code |x[i]|}, 0 when {@code n <= 0} or
     *     {@code incx <= 0}
     * @throws NullPointerException if the handle or a buffer is {@code null}
     * @throws IllegalArgumentException if a buffer is too short for {@code n} elements with its increment
     *     ({@code 1 + (n-1)*|inc|} elements), does not start at an address aligned to the element size, or
     *     belongs to another context than the handle
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public static long isamax(Handle h, long n, DeviceBuffer x, long incx) {
        return (long) BlasCall.reduce(h, 4, BlasCall.IAMAX, n, x, incx, null, 0, null);
    }

    /**
     * The index of the first element of largest absolute value (double, 8-byte elements), like
     * {@code cublasIdamax} in host pointer mode. The index is 1-based, as in BLAS. As in reference BLAS, a
     * NaN first element gives 1, and other NaN elements are never chosen. Waits for the handle's stream (this
     * and all earlier work on it) and returns the value.
     *
     * @param h the handle whose context and stream run the operation
     * @param n number of elements; {@code n <= 0} returns 0
     * @param x the vector x, starting at the start of the buffer
     * @param incx increment of x in elements; {@code incx <= 0} returns 0
     * @return the 1-based index of the first element of largest {@code |x[i]|}, 0 when {@code n <= 0} or
     *     {@code incx <= 0}
     * @throws NullPointerException if the handle or a buffer is {@code null}
     * @throws IllegalArgumentException if a buffer is too short for {@code n} elements with its increment
     *     ({@code 1 + (n-1)*|inc|} elements), does not start at an address aligned to the element size, or
     *     belongs to another context than the handle
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public static long idamax(Handle h, long n, DeviceBuffer x, long incx) {
        return (long) BlasCall.reduce(h, 8, BlasCall.IAMAX, n, x, incx, null, 0, null);
    }

    /**
     * Writes the 1-based index of the first element of largest absolute value (float elements) as a 64-bit
     * integer ({@code long long}) to the first 8 bytes of {@code result}, like {@code cublasIsamax} in device
     * pointer mode (whose result is a 32-bit int). The index is 1-based, as in BLAS. As in reference BLAS, a
     * NaN first element gives 1, and other NaN elements are never chosen. The result is written in stream
     * order and this method returns without waiting: read it after a {@link Handle#synchronize()} or in later
     * work on the same stream. {@code n <= 0} or {@code incx <= 0} writes 0.
     *
     * @param h the handle whose context and stream run the operation
     * @param n number of elements; {@code n <= 0} writes 0
     * @param x the vector x, starting at the start of the buffer
     * @param incx increment of x in elements; {@code incx <= 0} writes 0
     * @param result receives the index in its first 8 bytes; its start must be aligned to 8 bytes
     * @throws NullPointerException if the handle or a buffer is {@code null}
     * @throws IllegalArgumentException if a buffer is too short for {@code n} elements with its increment
     *     ({@code 1 + (n-1)*|inc|} elements), does not start at an address aligned to the element size, or
     *     belongs to another context than the handle; or {@code result} is shorter than the result or
     *     misaligned
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public static void isamax(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer result) {
        BlasCall.reduce(h, 4, BlasCall.IAMAX, n, x, incx, null, 0, Objects.requireNonNull(result, "result"));
    }

    /**
     * Writes the 1-based index of the first element of largest absolute value (double elements) as a 64-bit
     * integer ({@code long long}) to the first 8 bytes of {@code result}, like {@code cublasIdamax} in device
     * pointer mode (whose result is a 32-bit int). The index is 1-based, as in BLAS. As in reference BLAS, a
     * NaN first element gives 1, and other NaN elements are never chosen. The result is written in stream
     * order and this method returns without waiting: read it after a {@link Handle#synchronize()} or in later
     * work on the same stream. {@code n <= 0} or {@code incx <= 0} writes 0.
     *
     * @param h the handle whose context and stream run the operation
     * @param n number of elements; {@code n <= 0} writes 0
     * @param x the vector x, starting at the start of the buffer
     * @param incx increment of x in elements; {@code incx <= 0} writes 0
     * @param result receives the index in its first 8 bytes; its start must be aligned to 8 bytes
     * @throws NullPointerException if the handle or a buffer is {@code null}
     * @throws IllegalArgumentException if a buffer is too short for {@code n} elements with its increment
     *     ({@code 1 + (n-1)*|inc|} elements), does not start at an address aligned to the element size, or
     *     belongs to another context than the handle; or {@code result} is shorter than the result or
     *     misaligned
     * @throws IllegalStateException if the handle or a buffer is closed
     * @throws CudaException if the context was destroyed or reset, or the driver fails
     */
    public static void idamax(Handle h, long n, DeviceBuffer x, long incx, DeviceBuffer result) {
        BlasCall.reduce(h, 8, BlasCall.IAMAX, n, x, incx, null, 0, Objects.requireNonNull(result, "result"));
    }
}
