// Over 500 lines on purpose. One concept: the driver's list of CUresult values, a constant for each of the 101
// (code, C name, stickiness and cuda.h's description condensed, about five lines apiece), and 80 lines of
// accessors. Split, it would be worse: the list is read and tested against cuda.h as one list in cuda.h's order
// (CudaHeaderNumbersTest); descriptions moved to a resource would be a file read by a class initialiser that must
// never fail (rule H12 of docs/design.md); two enums would make one CUresult two types. A new CUDA adds lines here.
package dev.cuhandle;

/**
 * Every {@code CUresult} value of the CUDA driver API, as declared in {@code cuda.h} of <b>CUDA 13.0</b>
 * ({@code CUDA_VERSION 13000}): 101 values, from {@code CUDA_SUCCESS} (0) to {@code CUDA_ERROR_UNKNOWN} (999).
 *
 * <p>Sources. The set of names and codes is the CUDA 13.0 {@code cudaError_enum} exactly as bindgen generated it
 * from the 13.0 {@code cuda.h} in the {@code cudarc} 0.19.10 driver bindings ({@code src/driver/sys/mod.rs}, the
 * variant gated on {@code feature = "cuda-13000"}). Each {@link #description()} condenses the doc comment of that
 * enumerator in {@code cuda.h}: the text is that of the CUDA 13.1.1 {@code cuda.h} (as extracted verbatim by
 * NVIDIA's cuda-python), whose {@code CUresult} differs from 13.0 only by adding {@code CUDA_ERROR_STREAM_DETACHED}
 * (917), and was cross-checked against the CUDA 11.8 {@code cuda.h} for every code that already existed there. Newer
 * codes (917 and up) are no constants: {@link #fromCode(int)} returns {@code null}, {@link #nameOf(int)} says unknown.
 *
 * <p>{@link #isSticky()} is {@code true} exactly for the errors whose {@code cuda.h} documentation says the process
 * (or, for {@link #ASSERT}, the context) is left unusable: "This leaves the process in an inconsistent state and any
 * further CUDA work will return the same error. To continue using CUDA, the process must be terminated and
 * relaunched." ({@link #CONTAINED}, {@link #ILLEGAL_ADDRESS}, {@link #LAUNCH_TIMEOUT},
 * {@link #HARDWARE_STACK_ERROR}, {@link #ILLEGAL_INSTRUCTION}, {@link #MISALIGNED_ADDRESS},
 * {@link #INVALID_ADDRESS_SPACE}, {@link #INVALID_PC}, {@link #LAUNCH_FAILED}, {@link #TENSOR_MEMORY_LEAK},
 * {@link #EXTERNAL_DEVICE}), plus {@link #MPS_CLIENT_TERMINATED} ("To continue using CUDA, the process must be
 * terminated and relaunched.") and {@link #ASSERT} ("The context cannot be used anymore, and must be destroyed.").
 * {@link #ECC_UNCORRECTABLE} is not sticky by this rule: its documentation only says an uncorrectable ECC error was
 * detected.
 *
 * <pre>{@code
 * CudaError e = CudaError.fromCode(700);                          // ILLEGAL_ADDRESS
 * System.out.println(e.cName() + ": " + e.description());          // CUDA_ERROR_ILLEGAL_ADDRESS: ...
 * boolean restart = e.isSticky();                                  // true: the process must end to use CUDA again
 * }</pre>
 */
public enum CudaError {
    /** {@code CUDA_SUCCESS} = 0. */
    SUCCESS(0, "CUDA_SUCCESS", false,
            "The API call returned with no errors. For query calls this also means that the "
            + "operation being queried is complete (see cuEventQuery() and cuStreamQuery())."),

    /** {@code CUDA_ERROR_INVALID_VALUE} = 1. */
    INVALID_VALUE(1, "CUDA_ERROR_INVALID_VALUE", false,
            "One or more of the parameters passed to the API call is not within an acceptable "
            + "range of values."),

    /** {@code CUDA_ERROR_OUT_OF_MEMORY} = 2. */
    OUT_OF_MEMORY(2, "CUDA_ERROR_OUT_OF_MEMORY", false,
            "The API call failed because it was unable to allocate enough memory or other "
            + "resources to perform the requested operation."),

    /** {@code CUDA_ERROR_NOT_INITIALIZED} = 3. */
    NOT_INITIALIZED(3, "CUDA_ERROR_NOT_INITIALIZED", false,
            "The CUDA driver has not been initialized with cuInit() or initialization has failed."),

    /** {@code CUDA_ERROR_DEINITIALIZED} = 4. */
    DEINITIALIZED(4, "CUDA_ERROR_DEINITIALIZED", false,
            "The CUDA driver is in the process of shutting down."),

    /** {@code CUDA_ERROR_PROFILER_DISABLED} = 5. */
    PROFILER_DISABLED(5, "CUDA_ERROR_PROFILER_DISABLED", false,
            "The profiler is not initialized for this run. This can happen when the application "
            + "is running with external profiling tools like visual profiler."),

    /** {@code CUDA_ERROR_PROFILER_NOT_INITIALIZED} = 6. */
    PROFILER_NOT_INITIALIZED(6, "CUDA_ERROR_PROFILER_NOT_INITIALIZED", false,
            "Deprecated as of CUDA 5.0: it is no longer an error to attempt to enable/disable "
            + "profiling via cuProfilerStart or cuProfilerStop without initialization."),

    /** {@code CUDA_ERROR_PROFILER_ALREADY_STARTED} = 7. */
    PROFILER_ALREADY_STARTED(7, "CUDA_ERROR_PROFILER_ALREADY_STARTED", false,
            "Deprecated as of CUDA 5.0: it is no longer an error to call cuProfilerStart() when "
            + "profiling is already enabled."),

    /** {@code CUDA_ERROR_PROFILER_ALREADY_STOPPED} = 8. */
    PROFILER_ALREADY_STOPPED(8, "CUDA_ERROR_PROFILER_ALREADY_STOPPED", false,
            "Deprecated as of CUDA 5.0: it is no longer an error to call cuProfilerStop() when "
            + "profiling is already disabled."),

    /** {@code CUDA_ERROR_STUB_LIBRARY} = 34. */
    STUB_LIBRARY(34, "CUDA_ERROR_STUB_LIBRARY", false,
            "The CUDA driver that the application has loaded is a stub library. Applications that"
            + " run with the stub rather than a real driver get this error from CUDA API calls."),

    /** {@code CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER} = 36. */
    CALL_REQUIRES_NEWER_DRIVER(36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER", false,
            "The API call requires a newer CUDA driver than the one currently installed. Users "
            + "should install an updated NVIDIA CUDA driver to allow the API call to succeed."),

    /** {@code CUDA_ERROR_DEVICE_UNAVAILABLE} = 46. */
    DEVICE_UNAVAILABLE(46, "CUDA_ERROR_DEVICE_UNAVAILABLE", false,
            "The requested CUDA device is unavailable at the current time. Devices are often "
            + "unavailable due to use of CU_COMPUTEMODE_EXCLUSIVE_PROCESS or "
            + "CU_COMPUTEMODE_PROHIBITED."),

    /** {@code CUDA_ERROR_NO_DEVICE} = 100. */
    NO_DEVICE(100, "CUDA_ERROR_NO_DEVICE", false,
            "No CUDA-capable devices were detected by the installed CUDA driver."),

    /** {@code CUDA_ERROR_INVALID_DEVICE} = 101. */
    INVALID_DEVICE(101, "CUDA_ERROR_INVALID_DEVICE", false,
            "The device ordinal supplied by the user does not correspond to a valid CUDA device, "
            + "or the action requested is invalid for the specified device."),

    /** {@code CUDA_ERROR_DEVICE_NOT_LICENSED} = 102. */
    DEVICE_NOT_LICENSED(102, "CUDA_ERROR_DEVICE_NOT_LICENSED", false,
            "The Grid license is not applied."),

    /** {@code CUDA_ERROR_INVALID_IMAGE} = 200. */
    INVALID_IMAGE(200, "CUDA_ERROR_INVALID_IMAGE", false,
            "The device kernel image is invalid. This can also indicate an invalid CUDA module."),

    /** {@code CUDA_ERROR_INVALID_CONTEXT} = 201. */
    INVALID_CONTEXT(201, "CUDA_ERROR_INVALID_CONTEXT", false,
            "Most frequently, there is no context bound to the current thread. It can also mean "
            + "that the context passed to the API call is not a valid handle (e.g. it was destroyed"
            + " with cuCtxDestroy(), mixes API versions, or is a green context that was not "
            + "converted with cuCtxFromGreenCtx)."),

    /** {@code CUDA_ERROR_CONTEXT_ALREADY_CURRENT} = 202. */
    CONTEXT_ALREADY_CURRENT(202, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT", false,
            "The context supplied as a parameter to the API call was already the active context. "
            + "Deprecated as of CUDA 3.2: it is no longer an error to push the active context via "
            + "cuCtxPushCurrent()."),

    /** {@code CUDA_ERROR_MAP_FAILED} = 205. */
    MAP_FAILED(205, "CUDA_ERROR_MAP_FAILED", false,
            "A map or register operation has failed."),

    /** {@code CUDA_ERROR_UNMAP_FAILED} = 206. */
    UNMAP_FAILED(206, "CUDA_ERROR_UNMAP_FAILED", false,
            "An unmap or unregister operation has failed."),

    /** {@code CUDA_ERROR_ARRAY_IS_MAPPED} = 207. */
    ARRAY_IS_MAPPED(207, "CUDA_ERROR_ARRAY_IS_MAPPED", false,
            "The specified array is currently mapped and thus cannot be destroyed."),

    /** {@code CUDA_ERROR_ALREADY_MAPPED} = 208. */
    ALREADY_MAPPED(208, "CUDA_ERROR_ALREADY_MAPPED", false,
            "The resource is already mapped."),

    /** {@code CUDA_ERROR_NO_BINARY_FOR_GPU} = 209. */
    NO_BINARY_FOR_GPU(209, "CUDA_ERROR_NO_BINARY_FOR_GPU", false,
            "There is no kernel image available that is suitable for the device. This can occur "
            + "when code generation options for a CUDA source file do not include the corresponding"
            + " device configuration."),

    /** {@code CUDA_ERROR_ALREADY_ACQUIRED} = 210. */
    ALREADY_ACQUIRED(210, "CUDA_ERROR_ALREADY_ACQUIRED", false,
            "A resource has already been acquired."),

    /** {@code CUDA_ERROR_NOT_MAPPED} = 211. */
    NOT_MAPPED(211, "CUDA_ERROR_NOT_MAPPED", false,
            "A resource is not mapped."),

    /** {@code CUDA_ERROR_NOT_MAPPED_AS_ARRAY} = 212. */
    NOT_MAPPED_AS_ARRAY(212, "CUDA_ERROR_NOT_MAPPED_AS_ARRAY", false,
            "A mapped resource is not available for access as an array."),

    /** {@code CUDA_ERROR_NOT_MAPPED_AS_POINTER} = 213. */
    NOT_MAPPED_AS_POINTER(213, "CUDA_ERROR_NOT_MAPPED_AS_POINTER", false,
            "A mapped resource is not available for access as a pointer."),

    /** {@code CUDA_ERROR_ECC_UNCORRECTABLE} = 214. */
    ECC_UNCORRECTABLE(214, "CUDA_ERROR_ECC_UNCORRECTABLE", false,
            "An uncorrectable ECC error was detected during execution."),

    /** {@code CUDA_ERROR_UNSUPPORTED_LIMIT} = 215. */
    UNSUPPORTED_LIMIT(215, "CUDA_ERROR_UNSUPPORTED_LIMIT", false,
            "The CUlimit passed to the API call is not supported by the active device."),

    /** {@code CUDA_ERROR_CONTEXT_ALREADY_IN_USE} = 216. */
    CONTEXT_ALREADY_IN_USE(216, "CUDA_ERROR_CONTEXT_ALREADY_IN_USE", false,
            "The CUcontext passed to the API call can only be bound to a single CPU thread at a "
            + "time but is already bound to a CPU thread."),

    /** {@code CUDA_ERROR_PEER_ACCESS_UNSUPPORTED} = 217. */
    PEER_ACCESS_UNSUPPORTED(217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", false,
            "Peer access is not supported across the given devices."),

    /** {@code CUDA_ERROR_INVALID_PTX} = 218. */
    INVALID_PTX(218, "CUDA_ERROR_INVALID_PTX", false,
            "A PTX JIT compilation failed."),

    /** {@code CUDA_ERROR_INVALID_GRAPHICS_CONTEXT} = 219. */
    INVALID_GRAPHICS_CONTEXT(219, "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT", false,
            "An error with the OpenGL or DirectX context."),

    /** {@code CUDA_ERROR_NVLINK_UNCORRECTABLE} = 220. */
    NVLINK_UNCORRECTABLE(220, "CUDA_ERROR_NVLINK_UNCORRECTABLE", false,
            "An uncorrectable NVLink error was detected during the execution."),

    /** {@code CUDA_ERROR_JIT_COMPILER_NOT_FOUND} = 221. */
    JIT_COMPILER_NOT_FOUND(221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND", false,
            "The PTX JIT compiler library was not found."),

    /** {@code CUDA_ERROR_UNSUPPORTED_PTX_VERSION} = 222. */
    UNSUPPORTED_PTX_VERSION(222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", false,
            "The provided PTX was compiled with an unsupported toolchain."),

    /** {@code CUDA_ERROR_JIT_COMPILATION_DISABLED} = 223. */
    JIT_COMPILATION_DISABLED(223, "CUDA_ERROR_JIT_COMPILATION_DISABLED", false,
            "The PTX JIT compilation was disabled."),

    /** {@code CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY} = 224. */
    UNSUPPORTED_EXEC_AFFINITY(224, "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY", false,
            "The CUexecAffinityType passed to the API call is not supported by the active device."),

    /** {@code CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC} = 225. */
    UNSUPPORTED_DEVSIDE_SYNC(225, "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC", false,
            "The code to be compiled by the PTX JIT contains an unsupported call to "
            + "cudaDeviceSynchronize."),

    /** {@code CUDA_ERROR_CONTAINED} = 226. */
    CONTAINED(226, "CUDA_ERROR_CONTAINED", true,
            "An exception occurred on the device that is now contained by the GPU's error "
            + "containment capability (e.g. certain invalid accesses of peer GPU memory over "
            + "NVLink, or certain classes of hardware errors). This leaves the process in an "
            + "inconsistent state: any further CUDA work returns the same error, and the process "
            + "must be terminated and relaunched."),

    /** {@code CUDA_ERROR_INVALID_SOURCE} = 300. */
    INVALID_SOURCE(300, "CUDA_ERROR_INVALID_SOURCE", false,
            "The device kernel source is invalid. This includes compilation/linker errors "
            + "encountered in device code or user error."),

    /** {@code CUDA_ERROR_FILE_NOT_FOUND} = 301. */
    FILE_NOT_FOUND(301, "CUDA_ERROR_FILE_NOT_FOUND", false,
            "The file specified was not found."),

    /** {@code CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND} = 302. */
    SHARED_OBJECT_SYMBOL_NOT_FOUND(302, "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND", false,
            "A link to a shared object failed to resolve."),

    /** {@code CUDA_ERROR_SHARED_OBJECT_INIT_FAILED} = 303. */
    SHARED_OBJECT_INIT_FAILED(303, "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED", false,
            "Initialization of a shared object failed."),

    /** {@code CUDA_ERROR_OPERATING_SYSTEM} = 304. */
    OPERATING_SYSTEM(304, "CUDA_ERROR_OPERATING_SYSTEM", false,
            "An OS call failed."),

    /** {@code CUDA_ERROR_INVALID_HANDLE} = 400. */
    INVALID_HANDLE(400, "CUDA_ERROR_INVALID_HANDLE", false,
            "A resource handle passed to the API call was not valid. Resource handles are opaque "
            + "types like CUstream and CUevent."),

    /** {@code CUDA_ERROR_ILLEGAL_STATE} = 401. */
    ILLEGAL_STATE(401, "CUDA_ERROR_ILLEGAL_STATE", false,
            "A resource required by the API call is not in a valid state to perform the requested"
            + " operation."),

    /** {@code CUDA_ERROR_LOSSY_QUERY} = 402. */
    LOSSY_QUERY(402, "CUDA_ERROR_LOSSY_QUERY", false,
            "An attempt was made to introspect an object in a way that would discard semantically"
            + " important information, either because the object uses functionality newer than the "
            + "API version used to introspect it or because optional return arguments were omitted."),

    /** {@code CUDA_ERROR_NOT_FOUND} = 500. */
    NOT_FOUND(500, "CUDA_ERROR_NOT_FOUND", false,
            "A named symbol was not found. Examples of symbols are global/constant variable "
            + "names, driver function names, texture names, and surface names."),

    /** {@code CUDA_ERROR_NOT_READY} = 600. */
    NOT_READY(600, "CUDA_ERROR_NOT_READY", false,
            "Asynchronous operations issued previously have not completed yet. This is not "
            + "actually an error but must be indicated differently than CUDA_SUCCESS; it may be "
            + "returned by cuEventQuery() and cuStreamQuery()."),

    /** {@code CUDA_ERROR_ILLEGAL_ADDRESS} = 700. */
    ILLEGAL_ADDRESS(700, "CUDA_ERROR_ILLEGAL_ADDRESS", true,
            "While executing a kernel, the device encountered a load or store instruction on an "
            + "invalid memory address. This leaves the process in an inconsistent state: any "
            + "further CUDA work returns the same error, and the process must be terminated and "
            + "relaunched."),

    /** {@code CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES} = 701. */
    LAUNCH_OUT_OF_RESOURCES(701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", false,
            "A launch did not occur because it did not have appropriate resources, usually "
            + "because too many (or wrongly sized) arguments were passed to the kernel or the "
            + "launch specifies too many threads for the kernel's register count."),

    /** {@code CUDA_ERROR_LAUNCH_TIMEOUT} = 702. */
    LAUNCH_TIMEOUT(702, "CUDA_ERROR_LAUNCH_TIMEOUT", true,
            "The device kernel took too long to execute (only possible if timeouts are enabled, "
            + "see CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT). This leaves the process in an "
            + "inconsistent state: any further CUDA work returns the same error, and the process "
            + "must be terminated and relaunched."),

    /** {@code CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING} = 703. */
    LAUNCH_INCOMPATIBLE_TEXTURING(703, "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING", false,
            "A kernel launch uses an incompatible texturing mode."),

    /** {@code CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED} = 704. */
    PEER_ACCESS_ALREADY_ENABLED(704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", false,
            "A call to cuCtxEnablePeerAccess() is trying to re-enable peer access to a context "
            + "which already has peer access to it enabled."),

    /** {@code CUDA_ERROR_PEER_ACCESS_NOT_ENABLED} = 705. */
    PEER_ACCESS_NOT_ENABLED(705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED", false,
            "cuCtxDisablePeerAccess() is trying to disable peer access which has not been enabled"
            + " yet via cuCtxEnablePeerAccess()."),

    /** {@code CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE} = 708. */
    PRIMARY_CONTEXT_ACTIVE(708, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE", false,
            "The primary context for the specified device has already been initialized."),

    /** {@code CUDA_ERROR_CONTEXT_IS_DESTROYED} = 709. */
    CONTEXT_IS_DESTROYED(709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", false,
            "The context current to the calling thread has been destroyed using cuCtxDestroy, or "
            + "is a primary context which has not yet been initialized."),

    /** {@code CUDA_ERROR_ASSERT} = 710. */
    ASSERT(710, "CUDA_ERROR_ASSERT", true,
            "A device-side assert triggered during kernel execution. The context cannot be used "
            + "anymore and must be destroyed; all existing device memory allocations from this "
            + "context are invalid and must be reconstructed if the program is to continue using "
            + "CUDA."),

    /** {@code CUDA_ERROR_TOO_MANY_PEERS} = 711. */
    TOO_MANY_PEERS(711, "CUDA_ERROR_TOO_MANY_PEERS", false,
            "The hardware resources required to enable peer access have been exhausted for one or"
            + " more of the devices passed to cuCtxEnablePeerAccess()."),

    /** {@code CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED} = 712. */
    HOST_MEMORY_ALREADY_REGISTERED(712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", false,
            "The memory range passed to cuMemHostRegister() has already been registered."),

    /** {@code CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED} = 713. */
    HOST_MEMORY_NOT_REGISTERED(713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", false,
            "The pointer passed to cuMemHostUnregister() does not correspond to any currently "
            + "registered memory region."),

    /** {@code CUDA_ERROR_HARDWARE_STACK_ERROR} = 714. */
    HARDWARE_STACK_ERROR(714, "CUDA_ERROR_HARDWARE_STACK_ERROR", true,
            "While executing a kernel, the device encountered a stack error, due to stack "
            + "corruption or exceeding the stack size limit. This leaves the process in an "
            + "inconsistent state: any further CUDA work returns the same error, and the process "
            + "must be terminated and relaunched."),

    /** {@code CUDA_ERROR_ILLEGAL_INSTRUCTION} = 715. */
    ILLEGAL_INSTRUCTION(715, "CUDA_ERROR_ILLEGAL_INSTRUCTION", true,
            "While executing a kernel, the device encountered an illegal instruction. This leaves"
            + " the process in an inconsistent state: any further CUDA work returns the same error,"
            + " and the process must be terminated and relaunched."),

    /** {@code CUDA_ERROR_MISALIGNED_ADDRESS} = 716. */
    MISALIGNED_ADDRESS(716, "CUDA_ERROR_MISALIGNED_ADDRESS", true,
            "While executing a kernel, the device encountered a load or store instruction on a "
            + "memory address which is not aligned. This leaves the process in an inconsistent "
            + "state: any further CUDA work returns the same error, and the process must be "
            + "terminated and relaunched."),

    /** {@code CUDA_ERROR_INVALID_ADDRESS_SPACE} = 717. */
    INVALID_ADDRESS_SPACE(717, "CUDA_ERROR_INVALID_ADDRESS_SPACE", true,
            "While executing a kernel, the device encountered an instruction which can only "
            + "operate on memory in certain address spaces (global, shared, or local) but was "
            + "supplied an address outside them. This leaves the process in an inconsistent state: "
            + "any further CUDA work returns the same error, and the process must be terminated and"
            + " relaunched."),

    /** {@code CUDA_ERROR_INVALID_PC} = 718. */
    INVALID_PC(718, "CUDA_ERROR_INVALID_PC", true,
            "While executing a kernel, the device program counter wrapped its address space. This"
            + " leaves the process in an inconsistent state: any further CUDA work returns the same"
            + " error, and the process must be terminated and relaunched."),

    /** {@code CUDA_ERROR_LAUNCH_FAILED} = 719. */
    LAUNCH_FAILED(719, "CUDA_ERROR_LAUNCH_FAILED", true,
            "An exception occurred on the device while executing a kernel, commonly from "
            + "dereferencing an invalid device pointer or accessing out-of-bounds shared memory. "
            + "This leaves the process in an inconsistent state: any further CUDA work returns the "
            + "same error, and the process must be terminated and relaunched."),

    /** {@code CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE} = 720. */
    COOPERATIVE_LAUNCH_TOO_LARGE(720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", false,
            "The number of blocks launched per grid for a kernel launched via "
            + "cuLaunchCooperativeKernel or cuLaunchCooperativeKernelMultiDevice exceeds the "
            + "maximum allowed by cuOccupancyMaxActiveBlocksPerMultiprocessor(WithFlags) times the "
            + "device's multiprocessor count."),

    /** {@code CUDA_ERROR_TENSOR_MEMORY_LEAK} = 721. */
    TENSOR_MEMORY_LEAK(721, "CUDA_ERROR_TENSOR_MEMORY_LEAK", true,
            "An exception occurred on the device while exiting a kernel using tensor memory: the "
            + "tensor memory was not completely deallocated. This leaves the process in an "
            + "inconsistent state: any further CUDA work returns the same error, and the process "
            + "must be terminated and relaunched."),

    /** {@code CUDA_ERROR_NOT_PERMITTED} = 800. */
    NOT_PERMITTED(800, "CUDA_ERROR_NOT_PERMITTED", false,
            "The attempted operation is not permitted."),

    /** {@code CUDA_ERROR_NOT_SUPPORTED} = 801. */
    NOT_SUPPORTED(801, "CUDA_ERROR_NOT_SUPPORTED", false,
            "The attempted operation is not supported on the current system or device."),

    /** {@code CUDA_ERROR_SYSTEM_NOT_READY} = 802. */
    SYSTEM_NOT_READY(802, "CUDA_ERROR_SYSTEM_NOT_READY", false,
            "The system is not yet ready to start any CUDA work. Verify that the system "
            + "configuration is valid and all required driver daemons are actively running."),

    /** {@code CUDA_ERROR_SYSTEM_DRIVER_MISMATCH} = 803. */
    SYSTEM_DRIVER_MISMATCH(803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", false,
            "There is a mismatch between the versions of the display driver and the CUDA driver. "
            + "Refer to the compatibility documentation for supported versions."),

    /** {@code CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE} = 804. */
    COMPAT_NOT_SUPPORTED_ON_DEVICE(804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", false,
            "The system was upgraded to run with forward compatibility but the visible hardware "
            + "detected by CUDA does not support this configuration. Refer to the compatibility "
            + "documentation, or make only supported hardware visible via CUDA_VISIBLE_DEVICES."),

    /** {@code CUDA_ERROR_MPS_CONNECTION_FAILED} = 805. */
    MPS_CONNECTION_FAILED(805, "CUDA_ERROR_MPS_CONNECTION_FAILED", false,
            "The MPS client failed to connect to the MPS control daemon or the MPS server."),

    /** {@code CUDA_ERROR_MPS_RPC_FAILURE} = 806. */
    MPS_RPC_FAILURE(806, "CUDA_ERROR_MPS_RPC_FAILURE", false,
            "The remote procedural call between the MPS server and the MPS client failed."),

    /** {@code CUDA_ERROR_MPS_SERVER_NOT_READY} = 807. */
    MPS_SERVER_NOT_READY(807, "CUDA_ERROR_MPS_SERVER_NOT_READY", false,
            "The MPS server is not ready to accept new MPS client requests. This can be returned "
            + "while the MPS server is recovering from a fatal failure."),

    /** {@code CUDA_ERROR_MPS_MAX_CLIENTS_REACHED} = 808. */
    MPS_MAX_CLIENTS_REACHED(808, "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED", false,
            "The hardware resources required to create an MPS client have been exhausted."),

    /** {@code CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED} = 809. */
    MPS_MAX_CONNECTIONS_REACHED(809, "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED", false,
            "The hardware resources required to support device connections have been exhausted."),

    /** {@code CUDA_ERROR_MPS_CLIENT_TERMINATED} = 810. */
    MPS_CLIENT_TERMINATED(810, "CUDA_ERROR_MPS_CLIENT_TERMINATED", true,
            "The MPS client has been terminated by the server. To continue using CUDA, the "
            + "process must be terminated and relaunched."),

    /** {@code CUDA_ERROR_CDP_NOT_SUPPORTED} = 811. */
    CDP_NOT_SUPPORTED(811, "CUDA_ERROR_CDP_NOT_SUPPORTED", false,
            "The module is using CUDA Dynamic Parallelism, but the current configuration, like "
            + "MPS, does not support it."),

    /** {@code CUDA_ERROR_CDP_VERSION_MISMATCH} = 812. */
    CDP_VERSION_MISMATCH(812, "CUDA_ERROR_CDP_VERSION_MISMATCH", false,
            "A module contains an unsupported interaction between different versions of CUDA "
            + "Dynamic Parallelism."),

    /** {@code CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED} = 900. */
    STREAM_CAPTURE_UNSUPPORTED(900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", false,
            "The operation is not permitted when the stream is capturing."),

    /** {@code CUDA_ERROR_STREAM_CAPTURE_INVALIDATED} = 901. */
    STREAM_CAPTURE_INVALIDATED(901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", false,
            "The current capture sequence on the stream has been invalidated due to a previous "
            + "error."),

    /** {@code CUDA_ERROR_STREAM_CAPTURE_MERGE} = 902. */
    STREAM_CAPTURE_MERGE(902, "CUDA_ERROR_STREAM_CAPTURE_MERGE", false,
            "The operation would have resulted in a merge of two independent capture sequences."),

    /** {@code CUDA_ERROR_STREAM_CAPTURE_UNMATCHED} = 903. */
    STREAM_CAPTURE_UNMATCHED(903, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED", false,
            "The capture was not initiated in this stream."),

    /** {@code CUDA_ERROR_STREAM_CAPTURE_UNJOINED} = 904. */
    STREAM_CAPTURE_UNJOINED(904, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED", false,
            "The capture sequence contains a fork that was not joined to the primary stream."),

    /** {@code CUDA_ERROR_STREAM_CAPTURE_ISOLATION} = 905. */
    STREAM_CAPTURE_ISOLATION(905, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION", false,
            "A dependency would have been created which crosses the capture sequence boundary. "
            + "Only implicit in-stream ordering dependencies are allowed to cross the boundary."),

    /** {@code CUDA_ERROR_STREAM_CAPTURE_IMPLICIT} = 906. */
    STREAM_CAPTURE_IMPLICIT(906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", false,
            "A disallowed implicit dependency on a current capture sequence from "
            + "cudaStreamLegacy."),

    /** {@code CUDA_ERROR_CAPTURED_EVENT} = 907. */
    CAPTURED_EVENT(907, "CUDA_ERROR_CAPTURED_EVENT", false,
            "The operation is not permitted on an event which was last recorded in a capturing "
            + "stream."),

    /** {@code CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD} = 908. */
    STREAM_CAPTURE_WRONG_THREAD(908, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", false,
            "A stream capture sequence not initiated with the CU_STREAM_CAPTURE_MODE_RELAXED "
            + "argument to cuStreamBeginCapture was passed to cuStreamEndCapture in a different "
            + "thread."),

    /** {@code CUDA_ERROR_TIMEOUT} = 909. */
    TIMEOUT(909, "CUDA_ERROR_TIMEOUT", false,
            "The timeout specified for the wait operation has lapsed."),

    /** {@code CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE} = 910. */
    GRAPH_EXEC_UPDATE_FAILURE(910, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE", false,
            "The graph update was not performed because it included changes which violated "
            + "constraints specific to instantiated graph update."),

    /** {@code CUDA_ERROR_EXTERNAL_DEVICE} = 911. */
    EXTERNAL_DEVICE(911, "CUDA_ERROR_EXTERNAL_DEVICE", true,
            "An async error has occurred in a device outside of CUDA: an external device CUDA was"
            + " waiting on signaled that shared data is not valid for consumption. This leaves the "
            + "process in an inconsistent state: any further CUDA work returns the same error, and "
            + "the process must be terminated and relaunched."),

    /** {@code CUDA_ERROR_INVALID_CLUSTER_SIZE} = 912. */
    INVALID_CLUSTER_SIZE(912, "CUDA_ERROR_INVALID_CLUSTER_SIZE", false,
            "A kernel launch error due to cluster misconfiguration."),

    /** {@code CUDA_ERROR_FUNCTION_NOT_LOADED} = 913. */
    FUNCTION_NOT_LOADED(913, "CUDA_ERROR_FUNCTION_NOT_LOADED", false,
            "A function handle is not loaded when calling an API that requires a loaded function."),

    /** {@code CUDA_ERROR_INVALID_RESOURCE_TYPE} = 914. */
    INVALID_RESOURCE_TYPE(914, "CUDA_ERROR_INVALID_RESOURCE_TYPE", false,
            "One or more resources passed in are not valid resource types for the operation."),

    /** {@code CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION} = 915. */
    INVALID_RESOURCE_CONFIGURATION(915, "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION", false,
            "One or more resources are insufficient or non-applicable for the operation."),

    /** {@code CUDA_ERROR_KEY_ROTATION} = 916. */
    KEY_ROTATION(916, "CUDA_ERROR_KEY_ROTATION", false,
            "An error happened during the key rotation sequence."),

    /** {@code CUDA_ERROR_UNKNOWN} = 999. */
    UNKNOWN(999, "CUDA_ERROR_UNKNOWN", false,
            "An unknown internal error has occurred.");

    /** The constants by code, for lookup in constant time ({@code CUresult} values run from 0 to 999). */
    private static final CudaError[] BY_CODE = new CudaError[1000];

    static {
        for (CudaError e : values()) {
            BY_CODE[e.code] = e;
        }
    }

    private final int code;
    private final String cName;
    private final boolean sticky;
    private final String description;

    CudaError(int code, String cName, boolean sticky, String description) {
        this.code = code;
        this.cName = cName;
        this.sticky = sticky;
        this.description = description;
    }

    /**
     * The numeric {@code CUresult} value.
     *
     * @return the code, e.g. 100 for {@link #NO_DEVICE}
     */
    public int code() {
        return code;
    }

    /**
     * The full C enumerator name.
     *
     * @return the C name, e.g. {@code "CUDA_ERROR_NO_DEVICE"}
     */
    public String cName() {
        return cName;
    }

    /**
     * The {@code cuda.h} documentation of this value, condensed to plain text.
     *
     * @return one or two sentences of plain text
     */
    public String description() {
        return description;
    }

    /**
     * Whether {@code cuda.h} documents this error as leaving the process (or context) unusable, so
     * that any further CUDA work returns the same error until the process is relaunched.
     *
     * @return {@code true} for the sticky errors listed in the class documentation
     */
    public boolean isSticky() {
        return sticky;
    }

    /**
     * The constant for a {@code CUresult} code, in constant time.
     *
     * @param code a {@code CUresult} value
     * @return the constant, or {@code null} if the code is not a CUDA 13.0 {@code CUresult}
     */
    public static CudaError fromCode(int code) {
        return code >= 0 && code < BY_CODE.length ? BY_CODE[code] : null;
    }

    /**
     * The C name of a {@code CUresult} code, e.g. {@code "CUDA_ERROR_ILLEGAL_ADDRESS"} for 700, or
     * {@code "CUDA_ERROR_<code> (unknown to cuhandle)"} for a code this enum does not know.
     *
     * @param code a {@code CUresult} value
     * @return the C name, or the "unknown to cuhandle" form; never {@code null}
     */
    public static String nameOf(int code) {
        CudaError e = fromCode(code);
        return e != null ? e.cName : "CUDA_ERROR_" + code + " (unknown to cuhandle)";
    }
}
