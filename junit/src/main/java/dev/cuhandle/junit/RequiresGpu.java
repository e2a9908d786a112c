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
 * <p>With {@code kernels = true} the test also needs kernels to execute: on cuhandle's CPU stand-in
 * driver ({@link dev.cuhandle.Cuda#isStandIn()}), where kernels are launched but do not run, it is
 * skipped with the reason "kernels do not execute on the CPU stand-in driver", or fails with
 * {@code cuhandle.requireGpu=true}. Mark so every test that checks what a kernel computed; leave
 * lifecycle, argument and copy tests without it, so that they run on the stand-in.
 *
 * <p>A usable GPU that the JVM refuses to load the native library for ({@code
 * --illegal-native-access=deny} without {@code --enable-native-access}) is a configuration error, not
 * a missing GPU: such tests fail, naming the flag, whatever {@code cuhandle.requireGpu} says.
 *
 * <pre>{@code
 * @Test
 * @RequiresGpu(kernels = true)
 * void scalesOnTheGpu() { ... }      // checks a kernel's result
 *
 * @Test
 * @RequiresGpu
 * void closesTwice() { ... }         // runs on the stand-in too
 * }</pre>
 *
 * @see GpuExtension
 */
@Documented
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@Tag("gpu")
@ExtendWith(GpuExtension.class)
public @interface RequiresGpu {
    /**
     * Whether the test needs kernels to execute, not only a driver and a device: {@code true} skips it
     * on the CPU stand-in driver (or fails it with {@code cuhandle.requireGpu=true}). Where the method
     * and its class both carry the annotation, either one asking for kernels is enough.
     *
     * @return {@code true} for tests that check what a kernel computed; {@code false} by default
     */
    boolean kernels() default false;
}
