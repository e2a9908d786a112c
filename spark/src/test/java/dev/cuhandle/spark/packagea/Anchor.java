package dev.cuhandle.spark.packagea;

/** A class of package a, whose relative resource name {@code kernels.ptx} resolves to this package's image (kernel {@code touch}). */
public final class Anchor {
    private Anchor() {}
}
