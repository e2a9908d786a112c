/*
 * Error log management (CUDA 12.9+): cuLogsRegisterCallback and cuLogsUnregisterCallback. Every
 * entry point that fails through RETURN logs one line on the failing thread, after it unlocked,
 * naming the function that returned (the entry point, or a shared helper behind it) and the code:
 * "<function>: <CUDA_ERROR_NAME> (<code>), reported by the CPU stand-in driver". The real driver's lines are more specific; what cuhandle does with them (attach
 * the failing thread's lines to the call's exception) is the same. CUDA_ERROR_NOT_READY is an
 * answer, not a failure, and is not logged.
 */
#include "standin.h"

typedef void (*CUlogsCallback)(void *data, int logLevel, char *message, size_t length);

#define MAX_LOG_CALLBACKS 8

/* Slots are filled under G and read without it (log_failure runs after the unlock): the function is
 * atomic, so an unregister racing a failure's log is a clean before-or-after; the data is written
 * before the function is published. A slot is never reused, so its address stays a unique handle. */
static _Atomic(CUlogsCallback) g_log_fns[MAX_LOG_CALLBACKS];
static void *g_log_data[MAX_LOG_CALLBACKS];
static _Atomic int g_log_callback_count;

EXPORT CUresult cuLogsRegisterCallback(CUlogsCallback callbackFunc, void *userData, void **callback_out) {
    if (!callbackFunc) return INVALID_VALUE;
    LOCK();
    int n = atomic_load(&g_log_callback_count);
    if (n == MAX_LOG_CALLBACKS) RETURN(OUT_OF_MEMORY);
    g_log_data[n] = userData;
    atomic_store(&g_log_fns[n], callbackFunc);
    atomic_store(&g_log_callback_count, n + 1);
    if (callback_out) *callback_out = (void *)&g_log_fns[n];
    RETURN(SUCCESS);
}

EXPORT CUresult cuLogsUnregisterCallback(void *callback) {
    LOCK();
    int n = atomic_load(&g_log_callback_count);
    for (int i = 0; i < n; i++)
        if (callback == (void *)&g_log_fns[i]) {
            if (!atomic_exchange(&g_log_fns[i], NULL)) RETURN(INVALID_VALUE); /* unregistered before */
            RETURN(SUCCESS);
        }
    RETURN(INVALID_VALUE);
}

void log_failure(const char *entry_point, CUresult rc) {
    int n = atomic_load(&g_log_callback_count);
    if (n == 0 || rc == SUCCESS || rc == NOT_READY) return;
    const char *name = NULL;
    cuGetErrorName(rc, &name);
    char line[256];
    int len = snprintf(line, sizeof line, "%s: %s (%d), reported by the CPU stand-in driver", entry_point, name ? name : "CUDA_ERROR_UNKNOWN", rc);
    if (len < 0) return;
    for (int i = 0; i < n; i++) {
        CUlogsCallback fn = atomic_load(&g_log_fns[i]);
        if (fn) fn(g_log_data[i], 0 /* CU_LOG_LEVEL_ERROR */, line, (size_t)len < sizeof line ? (size_t)len : sizeof line - 1);
    }
}
