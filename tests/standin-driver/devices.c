/*
 * Error names and descriptions, cuInit, the driver version, devices and their attributes,
 * primary contexts, and cuGetProcAddress for the optional entry points.
 */
#include "standin.h"

static const struct {
    int code;
    const char *name, *text;
} ERRORS[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {202, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT", "context already current"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "device not ready"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
    {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
    {710, "CUDA_ERROR_ASSERT", "device-side assert triggered"},
    {712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "part or all of the requested memory range is already mapped"},
    {713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "pointer does not correspond to a registered memory region"},
    {714, "CUDA_ERROR_HARDWARE_STACK_ERROR", "hardware stack error"},
    {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered"},
    {716, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
    {717, "CUDA_ERROR_INVALID_ADDRESS_SPACE", "operation not supported on global/shared address space"},
    {718, "CUDA_ERROR_INVALID_PC", "invalid program counter"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {721, "CUDA_ERROR_TENSOR_MEMORY_LEAK", "tensor memory not completely freed"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {914, "CUDA_ERROR_INVALID_RESOURCE_TYPE", "invalid resource type"},
    {915, "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION", "invalid resource configuration"},
    {917, "CUDA_ERROR_STREAM_DETACHED", "the stream is detached from its green context"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static CUresult describe(CUresult code, const char **out, int text) {
    if (!out) return INVALID_VALUE;
    for (size_t i = 0; i < sizeof ERRORS / sizeof ERRORS[0]; i++)
        if (ERRORS[i].code == code) {
            *out = text ? ERRORS[i].text : ERRORS[i].name;
            return SUCCESS;
        }
    *out = NULL;
    return INVALID_VALUE;
}

EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr) { return describe(error, pStr, 0); }

EXPORT CUresult cuGetErrorString(CUresult error, const char **pStr) { return describe(error, pStr, 1); }

EXPORT CUresult cuInit(unsigned int flags) {
    if (flags != 0) return INVALID_VALUE;
    int n = env_int("CUHANDLE_STANDIN_DEVICES", 1);
    if (n <= 0) return NO_DEVICE;
    LOCK();
    if (!g_initialised) {
        /* A real driver's first cuInit takes ~100 ms (docs/runs); this models it for cold-start runs. */
        int ms = env_int("CUHANDLE_STANDIN_INIT_MS", 0);
        if (ms > 0) sleep_until(now_ns() + (int64_t)ms * 1000000);
        g_init_thread = thread_id();
        g_devices = n > MAX_DEVICES ? MAX_DEVICES : n;
        int sms = env_int("CUHANDLE_STANDIN_SMS", DEFAULT_SMS);
        g_sms = sms >= 1 && sms <= MAX_SMS ? sms : DEFAULT_SMS;
        g_initialised = 1;
    }
    RETURN(SUCCESS);
}

EXPORT CUresult cuDriverGetVersion(int *driverVersion) {
    if (!driverVersion) return INVALID_VALUE;
    *driverVersion = driver_version();
    return SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    ENTER();
    if (!device) RETURN(INVALID_VALUE);
    if (check_device(ordinal)) RETURN(INVALID_DEVICE);
    *device = ordinal; /* handles equal ordinals */
    RETURN(SUCCESS);
}

EXPORT CUresult cuDeviceGetCount(int *count) {
    ENTER();
    if (!count) RETURN(INVALID_VALUE);
    *count = g_devices;
    RETURN(SUCCESS);
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
    ENTER();
    if (!name || len <= 0) RETURN(INVALID_VALUE);
    if (check_device(dev)) RETURN(INVALID_DEVICE);
    snprintf(name, (size_t)len, "cuhandle stand-in device %d", dev);
    RETURN(SUCCESS);
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
    ENTER();
    if (!bytes) RETURN(INVALID_VALUE);
    if (check_device(dev)) RETURN(INVALID_DEVICE);
    *bytes = TOTAL_MEMORY;
    RETURN(SUCCESS);
}

EXPORT CUresult cuDeviceGetAttribute(int *pi, int attrib, CUdevice dev) {
    ENTER();
    if (!pi) RETURN(INVALID_VALUE);
    if (check_device(dev)) RETURN(INVALID_DEVICE);
    if (attrib & 0x40000000) /* the tests' control channel, see control() */
        RETURN(control((attrib >> 20) & 0x3FF, attrib & 0xFFFFF, pi));
    if (attrib <= 0 || attrib > 200) RETURN(INVALID_VALUE);
    int v = 0; /* H200-like values; anything not listed is 0 */
    switch (attrib) {
    case 1: v = 1024; break;       /* MAX_THREADS_PER_BLOCK */
    case 2: v = 1024; break;       /* MAX_BLOCK_DIM_X */
    case 3: v = 1024; break;       /* MAX_BLOCK_DIM_Y */
    case 4: v = 64; break;         /* MAX_BLOCK_DIM_Z */
    case 5: v = 2147483647; break; /* MAX_GRID_DIM_X */
    case 6: v = 65535; break;      /* MAX_GRID_DIM_Y */
    case 7: v = 65535; break;      /* MAX_GRID_DIM_Z */
    case 8: v = DEFAULT_SHARED; break; /* MAX_SHARED_MEMORY_PER_BLOCK */
    case 16: v = g_sms; break;     /* MULTIPROCESSOR_COUNT */
    case 75: v = env_int("CUHANDLE_STANDIN_CC", 90) / 10; break; /* COMPUTE_CAPABILITY_MAJOR */
    case 76: v = env_int("CUHANDLE_STANDIN_CC", 90) % 10; break; /* COMPUTE_CAPABILITY_MINOR */
    case 95: v = env_int("CUHANDLE_STANDIN_COOPERATIVE", 1); break; /* COOPERATIVE_LAUNCH */
    case 97: v = OPTIN_SHARED; break; /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
    case 115: v = env_int("CUHANDLE_STANDIN_POOLS", 1); break; /* MEMORY_POOLS_SUPPORTED */
    case 120: v = env_int("CUHANDLE_STANDIN_CC", 90) >= 90; break; /* CLUSTER_LAUNCH */
    default: v = 0;
    }
    *pi = v;
    RETURN(SUCCESS);
}

/* A retain of `dev`'s primary context (a valid device): cuDevicePrimaryCtxRetain, and every green
 * context for its lifetime (cuGreenCtxCreate retains it, cuGreenCtxDestroy releases it). */
Ctx *primary_retain(int dev) {
    Ctx *c = g_primary[dev];
    if (!c) {
        /* A real driver's first retain (creating the context) takes ~100 ms; this models it. */
        int ms = env_int("CUHANDLE_STANDIN_RETAIN_MS", 0);
        if (ms > 0) sleep_until(now_ns() + (int64_t)ms * 1000000);
        c = g_primary[dev] = new_ctx(dev, 1);
    } else if (!c->active) { /* reactivated: same pointer, new id, as the real driver does */
        c->active = 1;
        c->id = g_next_id++;
    }
    c->retains++;
    return c;
}

/* Undoes one primary_retain (the caller checked there is one); the last one deactivates it. */
void primary_release(int dev) {
    Ctx *c = g_primary[dev];
    if (--c->retains == 0) {
        release_resources(c);
        c->active = 0;
    }
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
    ENTER();
    if (!pctx) RETURN(INVALID_VALUE);
    if (check_device(dev)) RETURN(INVALID_DEVICE);
    *pctx = primary_retain(dev);
    RETURN(SUCCESS);
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
    ENTER();
    if (check_device(dev)) RETURN(INVALID_DEVICE);
    Ctx *c = g_primary[dev];
    if (!c || c->retains == 0) RETURN(INVALID_CONTEXT);
    primary_release(dev);
    RETURN(SUCCESS);
}

EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
    ENTER();
    if (!flags || !active) RETURN(INVALID_VALUE);
    if (check_device(dev)) RETURN(INVALID_DEVICE);
    *flags = 0;
    *active = g_primary[dev] && g_primary[dev]->active;
    RETURN(SUCCESS);
}

/* The real driver destroys the primary context and recreates it at the next use; here it keeps
 * its pointer, loses its resources and gets a new id, and stays active iff it is still retained. */
EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
    ENTER();
    if (check_device(dev)) RETURN(INVALID_DEVICE);
    Ctx *c = g_primary[dev];
    if (c) {
        release_resources(c);
        c->id = g_next_id++;
        c->active = c->retains > 0;
    }
    RETURN(SUCCESS);
}

/* The mode CUDA_MODULE_LOADING asks for; lazy (the default of CUDA 12.2+ drivers) otherwise. The
 * stand-in loads the same way in both. */
EXPORT CUresult cuModuleGetLoadingMode(int *mode) {
    if (!mode) return INVALID_VALUE;
    const char *asked = getenv("CUDA_MODULE_LOADING");
    *mode = asked && strcmp(asked, "EAGER") == 0 ? 1 /* CU_MODULE_EAGER_LOADING */ : 2 /* CU_MODULE_LAZY_LOADING */;
    return SUCCESS;
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags, int *symbolStatus) {
    (void)cudaVersion;
    (void)flags;
    if (!symbol || !pfn) return INVALID_VALUE;
    static const struct {
        const char *name;
        void *fn;
        int since;
    } OPTIONAL[] = {
        {"cuKernelGetParamInfo", (void *)cuKernelGetParamInfo, 12040},
        {"cuLibraryGetKernelCount", (void *)cuLibraryGetKernelCount, 12040},
        {"cuLibraryEnumerateKernels", (void *)cuLibraryEnumerateKernels, 12040},
        {"cuKernelGetName", (void *)cuKernelGetName, 12030},
        {"cuOccupancyMaxPotentialClusterSize", (void *)cuOccupancyMaxPotentialClusterSize, 11080},
        {"cuMemAllocAsync", (void *)cuMemAllocAsync, 11020},
        {"cuLogsRegisterCallback", (void *)cuLogsRegisterCallback, 12090},
        {"cuLogsUnregisterCallback", (void *)cuLogsUnregisterCallback, 12090},
        {"cuModuleGetLoadingMode", (void *)cuModuleGetLoadingMode, 11070},
        {"cuDeviceGetDevResource", (void *)cuDeviceGetDevResource, 12040},
        {"cuDevSmResourceSplitByCount", (void *)cuDevSmResourceSplitByCount, 12040},
        {"cuDevResourceGenerateDesc", (void *)cuDevResourceGenerateDesc, 12040},
        {"cuGreenCtxCreate", (void *)cuGreenCtxCreate, 12040},
        {"cuCtxFromGreenCtx", (void *)cuCtxFromGreenCtx, 12040},
        {"cuGreenCtxDestroy", (void *)cuGreenCtxDestroy, 12040},
        {"cuGreenCtxStreamCreate", (void *)cuGreenCtxStreamCreate, 12040},
        {"cuStreamGetGreenCtx", (void *)cuStreamGetGreenCtx, 12040},
        {"cuMemcpyBatchAsync", (void *)cuMemcpyBatchAsync, 12080},
        {"cuGraphConditionalHandleCreate", (void *)cuGraphConditionalHandleCreate, 12030},
        {"cuGraphAddNode", (void *)cuGraphAddNode, 12020},
        {"cuStreamBeginCaptureToGraph", (void *)cuStreamBeginCaptureToGraph, 12030},
    };
    int version = driver_version();
    for (size_t i = 0; i < sizeof OPTIONAL / sizeof OPTIONAL[0]; i++)
        if (strcmp(symbol, OPTIONAL[i].name) == 0 && version >= OPTIONAL[i].since) {
            *pfn = OPTIONAL[i].fn;
            if (symbolStatus) *symbolStatus = 0; /* CU_GET_PROC_ADDRESS_SUCCESS */
            return SUCCESS;
        }
    *pfn = NULL;
    if (symbolStatus) *symbolStatus = 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
    return NOT_FOUND;
}
