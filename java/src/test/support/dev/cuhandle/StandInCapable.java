package dev.cuhandle;

import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a {@link GpuTest} (method or class) that is meaningful on the CPU stand-in driver
 * (tests/standin-driver): it needs no kernel to execute and no real GPU timing, only the driver's
 * object model (contexts, streams, events, memory and copies). In the Maven {@code standin} test
 * run only these GPU tests run; on a real GPU every GPU test runs regardless.
 */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@Inherited
public @interface StandInCapable {}
