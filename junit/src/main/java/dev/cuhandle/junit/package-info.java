/**
 * JUnit 5 support for code that uses cuhandle: {@link dev.cuhandle.junit.RequiresGpu} marks tests
 * that need a CUDA GPU, so that they skip with the reason on machines without one (or fail, with
 * {@code -Dcuhandle.requireGpu=true}); {@code @RequiresGpu(kernels = true)} also skips them on the
 * CPU stand-in driver, where kernels do not execute.
 */
package dev.cuhandle.junit;
