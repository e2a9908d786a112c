package dev.cuhandle;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * Why the environment report ({@code java -jar cuhandle.jar}) found the machine unhealthy, and what the user
 * can do next. Advice names only what can help in that case: a machine whose driver library loads but that
 * has no GPU is never told to update its driver (the CUDA toolkit's packages bring the driver library even
 * where no GPU exists).
 */
enum Diagnosis {
    /** libcuhandle.so did not load. */
    NATIVE_LIBRARY(
            "cuhandle's native library needs Linux x86-64 with glibc 2.17 or newer; the 'native library' line above says what failed.",
            "If the temporary folder is mounted noexec, extract elsewhere: -Dcuhandle.tmpdir=<a folder only you can write to>"
                    + " (docs/security.md in cuhandle's repository)."),
    /** No libcuda was found or it would not load. */
    NO_DRIVER(
            "Run nvidia-smi. If there is no such command, this machine has no NVIDIA driver: install the driver for your GPU"
                    + " (CUDA 12.0 or newer: your distribution's nvidia-driver package, or https://www.nvidia.com/drivers),"
                    + " then run this again.",
            "If the driver is installed somewhere unusual, name its library: -Dcuhandle.driver.path=/absolute/path/libcuda.so.1"),
    /** The driver predates CUDA 12.0. */
    OLD_DRIVER(
            "Update the NVIDIA driver to one for CUDA 12.0 or newer (version 525 or later), then run this again;"
                    + " nvidia-smi shows the version installed now."),
    /** The driver loaded, but there is no device. */
    NO_DEVICE(
            "The driver library loaded but sees no GPU, so the driver itself needs no update. Run nvidia-smi: it should list"
                    + " your GPU. If it does not, the GPU is not visible here: start a container with the GPU passed in"
                    + " (docker run --gpus all, with the NVIDIA Container Toolkit), pass the GPU through to a virtual machine,"
                    + " or check that CUDA_VISIBLE_DEVICES is unset or names a GPU that exists."),
    /** The driver failed otherwise. */
    DRIVER_ERROR(
            "Run nvidia-smi and read the kernel log (sudo dmesg | grep -i nvrm) for the driver's own explanation; a driver"
                    + " upgraded without a reboot fails like this until the machine restarts."),
    /** The GPU computed wrong results. */
    SELF_TEST(false,
            "The GPU computed wrong results. Run this again; if it repeats, report it with this output and nvidia-smi -q."
                    + " (On the CPU stand-in driver of cuhandle's own tests kernels do not execute, so this is expected there.)"),
    /** Something the report did not expect. */
    UNEXPECTED(
            "Run this again; if it repeats, report it with this output.");

    /** The last step for a machine without a GPU, or without Java, that the user wants to check. */
    static final String GPU_BUNDLE = "To check a GPU host that has no Java or Maven: in a clone of cuhandle run scripts/gpu-bundle.sh,"
            + " copy the .gpu-bundle folder to the host and run .gpu-bundle/run-main there.";

    private final List<String> steps;

    Diagnosis(String... steps) {
        this(true, steps);
    }

    Diagnosis(boolean bundleHelps, String... steps) {
        List<String> all = new ArrayList<>(Arrays.asList(steps));
        if (bundleHelps) {
            all.add(GPU_BUNDLE);
        }
        this.steps = Collections.unmodifiableList(all);
    }

    /**
     * What to do next, in order.
     *
     * @return the steps, one sentence or two each
     */
    List<String> nextSteps() {
        return steps;
    }

    /**
     * The diagnosis of a failure to load or use the driver.
     *
     * @param e what the driver call threw
     * @return the matching diagnosis
     */
    static Diagnosis ofDriverFailure(CudaException e) {
        if (e.error() == null) {
            return DRIVER_ERROR;
        }
        switch (e.error()) {
            case FILE_NOT_FOUND:
                return NO_DRIVER;
            case NOT_SUPPORTED:
                return e.getMessage() != null && e.getMessage().contains("needs CUDA 12.0 or newer") ? OLD_DRIVER : DRIVER_ERROR;
            case NO_DEVICE:
                return NO_DEVICE;
            default:
                return DRIVER_ERROR;
        }
    }
}
