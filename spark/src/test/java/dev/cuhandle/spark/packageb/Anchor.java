package dev.cuhandle.spark.packageb;

/** A class of package b, whose relative resource name {@code kernels.ptx} resolves to this package's image (kernel {@code other}). */
public final class Anchor {
    private Anchor() {}
}
