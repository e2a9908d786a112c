package dev.cuhandle;

/** The test-only kernels (kernels/test/test_kernels.cu), compiled by the build into the test class path. */
public final class TestKernels {
    public static final String FATBIN = "/kernels/test_kernels.fatbin";
    public static final String PTX = "/kernels/test_kernels.ptx";
    /** The launch-check kernels (kernels/test/kernel_checks.cu) as a fatbin (sm_70 to sm_90 and PTX), a cubin (sm_90) and PTX. */
    public static final String CHECKS_FATBIN = "/kernels/kernel_checks.fatbin";
    public static final String CHECKS_CUBIN = "/kernels/kernel_checks.cubin";
    public static final String CHECKS_PTX = "/kernels/kernel_checks.ptx";

    private TestKernels() {}

    public static Library load() {
        return Library.loadResource(TestKernels.class, FATBIN);
    }

    public static Library loadPtx() {
        return Library.loadResource(TestKernels.class, PTX);
    }
}
