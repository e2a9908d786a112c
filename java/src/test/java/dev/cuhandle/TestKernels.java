package dev.cuhandle;

/** The test-only kernels (kernels/test/test_kernels.cu), compiled by the build into the test class path. */
public final class TestKernels {
    public static final String FATBIN = "/kernels/test_kernels.fatbin";
    public static final String PTX = "/kernels/test_kernels.ptx";

    private TestKernels() {}

    public static Library load() {
        return Library.loadResource(TestKernels.class, FATBIN);
    }

    public static Library loadPtx() {
        return Library.loadResource(TestKernels.class, PTX);
    }
}
