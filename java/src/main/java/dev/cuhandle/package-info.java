/**
 * GPU computing from Java over the CUDA driver API: a cuBLAS-style {@link dev.cuhandle.Handle} bound to
 * one context and usable from any thread, device memory ({@link dev.cuhandle.DeviceBuffer}), kernels
 * loaded once per process ({@link dev.cuhandle.Library}, {@link dev.cuhandle.Kernel}) and launched in
 * any context ({@link dev.cuhandle.KernelLaunch}), events, and built-in BLAS level 1
 * ({@link dev.cuhandle.Blas}).
 *
 * <p>Failures of the driver are {@link dev.cuhandle.CudaException}s; bad arguments are
 * {@link java.lang.IllegalArgumentException}s; using a closed object is an
 * {@link java.lang.IllegalStateException}. Sizes and offsets of device memory are in bytes; BLAS
 * lengths and increments, and array offsets and lengths of copies, are in elements.
 */
package dev.cuhandle;
