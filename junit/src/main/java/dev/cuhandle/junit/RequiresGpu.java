package dev.cuhandle.junit;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Marks a JUnit 5 test method or class that needs a usable CUDA GPU.
 *
 * <p>Where {@link dev.cuhandle.Cuda#unavailableReason()} gives a reason (no driver, no device, no
 * native library), the test is skipped with that reason, and the reason is printed once per JVM to
 * standard error as {@code [cuhandle] GPU tests are SKIPPED: <reason>}. With the system property or
 * JUnit configuration parameter {@code cuhandle.requireGpu=true} such a test fails instead, so that a
 * GPU machine that lost its GPU cannot pass by skipping. The tests also carry the tag {@code gpu},
 * for selecting or excluding them (Maven Surefire's {@code groups}, the console launcher's
 * {@code --include-tag}).
 *
 * <pre>{@code
 * @Test
 * @RequiresGpu
 * void scalesOnTheGpu() { ... }
 * }</pre>
 *
 * @see GpuExtension
 */
@Documented
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@Tag("gpu")
@ExtendWith(GpuExtension.class)
public @interface RequiresGpu {}
