/*
 * Libraries (cuLibraryLoadData and cuLibraryLoadFromFile with their JIT options and logs), their
 * variables and kernels, and kernel attributes.
 */
#include "standin.h"

/* Writes `message` into the log buffer option `buffer_option` (5: error log, 3: info log) and its size option. */
static void write_log(void **options_values, int *options, unsigned n, int buffer_option, const char *message) {
    char *buffer = NULL;
    size_t size = 0;
    for (unsigned i = 0; options && options_values && i < n; i++) {
        if (options[i] == buffer_option) buffer = options_values[i];
        if (options[i] == buffer_option + 1) size = (size_t)(uintptr_t)options_values[i];
    }
    if (buffer && size) snprintf(buffer, size, "%s", message);
}

static void jit_log(void **options_values, int *options, unsigned n, const char *message) {
    write_log(options_values, options, n, 5, message); /* CU_JIT_ERROR_LOG_BUFFER */
}

/* Known JIT options only, with values the real driver accepts; anything else is INVALID_VALUE. */
static int check_jit_options(int *options, void **values, unsigned n, int *verbose) {
    *verbose = 0;
    for (unsigned i = 0; options && values && i < n; i++) {
        uintptr_t v = (uintptr_t)values[i];
        switch (options[i]) {
        case 0: if (v < 1 || v > 255) return INVALID_VALUE; break;   /* CU_JIT_MAX_REGISTERS */
        case 7: if (v > 4) return INVALID_VALUE; break;              /* CU_JIT_OPTIMIZATION_LEVEL */
        case 12: *verbose = v != 0; break;                           /* CU_JIT_LOG_VERBOSE */
        case 3: case 4: case 5: case 6: break;                       /* the log buffers */
        default: return INVALID_VALUE;
        }
    }
    return SUCCESS;
}

EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code, int *jitOptions, void **jitOptionsValues,
                                  unsigned int numJitOptions, int *libraryOptions, void **libraryOptionValues,
                                  unsigned int numLibraryOptions) {
    ENTER();
    if (!library || !code) RETURN(INVALID_VALUE);
    for (unsigned i = 0; i < numLibraryOptions; i++) /* CU_LIBRARY_BINARY_IS_PRESERVED (1) only */
        if (!libraryOptions || !libraryOptionValues || libraryOptions[i] != 1) RETURN(INVALID_VALUE);
    int verbose;
    if (check_jit_options(jitOptions, jitOptionsValues, numJitOptions, &verbose)) RETURN(INVALID_VALUE);
    /* Byte by byte, so a short NUL-terminated PTX text is never read past its end. */
    const unsigned char *b = code;
    Library *lib = calloc(1, sizeof *lib);
    if (!lib) RETURN(OUT_OF_MEMORY);
    if (b[0] == 0x50 && b[1] == 0xED && b[2] == 0x55 && b[3] == 0xBA) { /* 0xBA55ED50 little-endian */
        lib->kind = IMAGE_FATBIN;
        /* Kernels and parameters come from the fatbin's PTX where it has one (nvcc's
         * -gencode ...,code=compute_XX); without one, any name is a kernel of unknown signature. */
        char *ptx = fatbin_ptx(b);
        lib->parsed = ptx && parse_ptx(lib, ptx) && lib->nkernels > 0;
        if (lib->parsed) parse_ptx_variables(lib, ptx);
        free(ptx);
        if (!lib->parsed) { /* forget what a half-parsed PTX declared */
            for (size_t i = 0; i < lib->nkernels; i++) vec_remove(&g_kernels, lib->kernels[i]);
            lib->nkernels = 0;
        }
    } else if (b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F') {
        lib->kind = IMAGE_CUBIN;
    } else if (strstr(code, ".version") && strstr(code, ".target")) {
        lib->kind = IMAGE_PTX;
        lib->parsed = 1;
        if (!parse_ptx(lib, code)) {
            jit_log(jitOptionsValues, jitOptions, numJitOptions, "stand-in: a .entry declaration could not be parsed");
            for (size_t i = 0; i < lib->nkernels; i++) vec_remove(&g_kernels, lib->kernels[i]);
            RETURN(INVALID_PTX);
        }
        parse_ptx_variables(lib, code);
    } else {
        free(lib);
        RETURN(INVALID_IMAGE);
    }
    vec_push(&g_libraries, lib);
    *library = lib;
    char info[160];
    snprintf(info, sizeof info, "stand-in JIT: %s image, %zu kernels%s", lib->kind == IMAGE_PTX ? "PTX" : lib->kind == IMAGE_CUBIN ? "cubin" : "fatbin",
             lib->nkernels, verbose ? " (verbose)" : "");
    write_log(jitOptionsValues, jitOptions, numJitOptions, 3, info); /* CU_JIT_INFO_LOG_BUFFER */
    RETURN(SUCCESS);
}

/* Reads the file and loads it as cuLibraryLoadData does (which takes the lock itself). */
EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, int *jitOptions, void **jitOptionsValues,
                                      unsigned int numJitOptions, int *libraryOptions, void **libraryOptionValues,
                                      unsigned int numLibraryOptions) {
    if (!fileName) return INVALID_VALUE;
    __atomic_add_fetch(&g_file_loads, 1, __ATOMIC_RELAXED);
    FILE *f = fopen(fileName, "rb");
    if (!f) return 301; /* CUDA_ERROR_FILE_NOT_FOUND */
    size_t cap = 1 << 16, n = 0;
    unsigned char *data = malloc(cap + 1);
    size_t got;
    while (data && (got = fread(data + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            unsigned char *bigger = realloc(data, 2 * cap + 1);
            if (!bigger) { free(data); data = NULL; break; }
            data = bigger;
            cap *= 2;
        }
    }
    fclose(f);
    if (!data) return OUT_OF_MEMORY;
    if (n < 4) { free(data); return INVALID_IMAGE; }
    data[n] = 0; /* PTX text ends here */
    CUresult rc = cuLibraryLoadData(library, data, jitOptions, jitOptionsValues, numJitOptions, libraryOptions, libraryOptionValues, numLibraryOptions);
    free(data); /* the stand-in keeps nothing that points into the image */
    return rc;
}

EXPORT CUresult cuLibraryUnload(CUlibrary library) {
    ENTER();
    if (!vec_has(&g_libraries, library)) RETURN(bad_handle(INVALID_HANDLE));
    Library *lib = library;
    vec_remove(&g_libraries, lib);
    /* Never freed: launching a kernel of an unloaded library is an INVALID_HANDLE, not a crash. */
    for (size_t i = 0; i < lib->nkernels; i++) vec_remove(&g_kernels, lib->kernels[i]);
    for (size_t i = 0; i < g_allocs.n;) { /* its variables' storage, in every context */
        Alloc *a = g_allocs.items[i];
        if (a->library == lib) retire_alloc(a);
        else i++;
    }
    RETURN(SUCCESS);
}

/* The storage of variable `name` of `lib` in context `c` (managed: shared by all), made on first use. */
static int library_variable(Library *lib, const char *name, Ctx *c, int want_managed, CUdeviceptr *dptr, size_t *bytes) {
    for (size_t v = 0; v < lib->nvars; v++) {
        if (strcmp(lib->vars[v].name, name) != 0 || lib->vars[v].managed != want_managed) continue;
        for (size_t i = 0; i < g_allocs.n; i++) {
            Alloc *a = g_allocs.items[i];
            if (a->library == lib && a->variable == v && (want_managed || a->ctx == c)) {
                if (dptr) *dptr = a->base;
                if (bytes) *bytes = a->size;
                return SUCCESS;
            }
        }
        CUdeviceptr base;
        int rc = allocate(c, lib->vars[v].size, NULL, &base);
        if (rc) return rc;
        Alloc *a = g_allocs.items[g_allocs.n - 1];
        a->library = lib;
        a->variable = v;
        if (want_managed) a->ctx = NULL;
        if (dptr) *dptr = base;
        if (bytes) *bytes = a->size;
        return SUCCESS;
    }
    return NOT_FOUND;
}

/* cuLibraryGetGlobal (want_managed 0) and cuLibraryGetManaged (1): the checks, then library_variable. */
static CUresult library_get_variable(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name, int want_managed) {
    ENTER();
    if (!name) RETURN(INVALID_VALUE);
    if (!vec_has(&g_libraries, library)) RETURN(bad_handle(INVALID_HANDLE));
    Ctx *c;
    int rc = current_ctx(&c);
    if (rc) RETURN(rc);
    RETURN(library_variable(library, name, c, want_managed, dptr, bytes));
}

EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name) {
    return library_get_variable(dptr, bytes, library, name, 0);
}

EXPORT CUresult cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name) {
    return library_get_variable(dptr, bytes, library, name, 1);
}

EXPORT CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name) {
    ENTER();
    if (!pKernel || !name) RETURN(INVALID_VALUE);
    if (!vec_has(&g_libraries, library)) RETURN(bad_handle(INVALID_HANDLE));
    Library *lib = library;
    for (size_t i = 0; i < lib->nkernels; i++)
        if (strcmp(lib->kernels[i]->name, name) == 0) {
            *pKernel = lib->kernels[i];
            RETURN(SUCCESS);
        }
    /* Cubins, and fatbins without PTX, are not parsed: any name is a kernel of unknown parameters. */
    if (lib->parsed) RETURN(NOT_FOUND);
    *pKernel = new_kernel(lib, name, strlen(name));
    RETURN(SUCCESS);
}

int check_kernel(void *k) { return vec_has(&g_kernels, k) ? SUCCESS : bad_handle(INVALID_HANDLE); }

/* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: as set, else the default less the static shared memory. */
int max_dynamic_shared(const Kernel *k, int dev) {
    if (k->max_dynamic_shared[dev]) return k->max_dynamic_shared[dev] - 1;
    return k->static_shared < DEFAULT_SHARED ? (int)(DEFAULT_SHARED - k->static_shared) : 0;
}

/* Needs a current context, like the real driver. Fatbin/cubin kernels answer INVALID_VALUE at
 * index 0, which callers read as "no (more) parameters": see README.md. */
EXPORT CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset, size_t *paramSize) {
    ENTER();
    int rc = check_kernel(kernel);
    if (rc) RETURN(rc);
    Ctx *c;
    if ((rc = current_ctx(&c))) RETURN(rc);
    Kernel *k = kernel;
    if (k->nparams < 0 || paramIndex >= (size_t)k->nparams) RETURN(INVALID_VALUE);
    if (paramOffset) *paramOffset = k->offsets[paramIndex];
    if (paramSize) *paramSize = k->sizes[paramIndex];
    RETURN(SUCCESS);
}

static size_t listed_kernels(Library *lib) { return lib->parsed ? lib->nkernels : 0; }

EXPORT CUresult cuLibraryGetKernelCount(unsigned int *count, CUlibrary library) {
    ENTER();
    if (!count) RETURN(INVALID_VALUE);
    if (!vec_has(&g_libraries, library)) RETURN(bad_handle(INVALID_HANDLE));
    *count = (unsigned)listed_kernels(library);
    RETURN(SUCCESS);
}

EXPORT CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int numKernels, CUlibrary library) {
    ENTER();
    if (!kernels) RETURN(INVALID_VALUE);
    if (!vec_has(&g_libraries, library)) RETURN(bad_handle(INVALID_HANDLE));
    Library *lib = library;
    if (numKernels != listed_kernels(lib)) RETURN(INVALID_VALUE);
    for (unsigned i = 0; i < numKernels; i++) kernels[i] = lib->kernels[i];
    RETURN(SUCCESS);
}

EXPORT CUresult cuKernelGetName(const char **name, CUkernel kernel) {
    ENTER();
    if (!name) RETURN(INVALID_VALUE);
    int rc = check_kernel(kernel);
    if (rc) RETURN(rc);
    *name = ((Kernel *)kernel)->name;
    RETURN(SUCCESS);
}

/* A kernel's instance in the current context: the kernel object itself here (cuLaunchKernel
 * accepts both, as the real driver does). */
EXPORT CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel) {
    ENTER();
    if (!pFunc) RETURN(INVALID_VALUE);
    int rc = check_kernel(kernel);
    if (rc) RETURN(rc);
    Ctx *c;
    if ((rc = current_ctx(&c))) RETURN(rc);
    *pFunc = kernel;
    RETURN(SUCCESS);
}

EXPORT CUresult cuKernelGetAttribute(int *pi, int attrib, CUkernel kernel, CUdevice dev) {
    ENTER();
    if (!pi) RETURN(INVALID_VALUE);
    int rc = check_kernel(kernel);
    if (rc) RETURN(rc);
    if (check_device(dev)) RETURN(INVALID_DEVICE);
    if (attrib < 0 || attrib > 20) RETURN(INVALID_VALUE);
    /* max threads per block, static shared memory, registers, max dynamic shared memory (set, or the 48 KiB
     * default less the static), non-portable clusters allowed; others 0 */
    Kernel *k = kernel;
    switch (attrib) {
    case 0: *pi = 1024; break;
    case 1: *pi = (int)k->static_shared; break;
    case 4: *pi = 32; break;
    case 8: *pi = max_dynamic_shared(k, dev); break;
    case 14: *pi = k->non_portable_clusters[dev]; break;
    default: *pi = 0;
    }
    RETURN(SUCCESS);
}

/* Only CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (8), up to the opt-in limit less the static shared
 * memory, and CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED (15), 0 or 1, as the driver. */
EXPORT CUresult cuKernelSetAttribute(int attrib, int val, CUkernel kernel, CUdevice dev) {
    ENTER();
    int rc = check_kernel(kernel);
    if (rc) RETURN(rc);
    if (check_device(dev)) RETURN(INVALID_DEVICE);
    Kernel *k = kernel;
    if (attrib == 8 && val >= 0 && (size_t)val + k->static_shared <= OPTIN_SHARED) k->max_dynamic_shared[dev] = val + 1;
    else if (attrib == 14 && (val == 0 || val == 1)) k->non_portable_clusters[dev] = val;
    else RETURN(INVALID_VALUE);
    RETURN(SUCCESS);
}

/* A function's attribute: cuKernelGetFunction returns the kernel itself here, so this sets the kernel's
 * attribute on the current context's device (the real driver keeps it per function). */
EXPORT CUresult cuFuncSetAttribute(CUfunction f, int attrib, int val) {
    ENTER();
    int rc = check_kernel(f);
    if (rc) RETURN(rc);
    Ctx *c;
    if ((rc = current_ctx(&c))) RETURN(rc);
    Kernel *k = f;
    if (attrib == 8 && val >= 0 && (size_t)val + k->static_shared <= OPTIN_SHARED) k->max_dynamic_shared[c->dev] = val + 1;
    else if (attrib == 14 && (val == 0 || val == 1)) k->non_portable_clusters[c->dev] = val;
    else RETURN(INVALID_VALUE);
    RETURN(SUCCESS);
}
