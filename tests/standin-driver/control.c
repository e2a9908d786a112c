/*
 * The tests' control channel: cuDeviceGetAttribute with 0x40000000 | command << 20 | arg (see
 * README.md and dev.cuhandle.StandIn).
 */
#include "standin.h"

static int count_of(const Vec *v, int user_streams_only) {
    int n = 0;
    for (size_t i = 0; i < v->n; i++)
        if (!user_streams_only || ((Stream *)v->items[i])->kind == USER_STREAM) n++;
    return n;
}

/* Commands of cuDeviceGetAttribute's magic attribute (README.md); called with the lock held. */
int control(int command, int arg, int *result) {
    int previous;
    size_t bytes = 0;
    switch (command) {
    case 1:
        previous = (int)(g_work_ns / 1000000);
        g_work_ns = (int64_t)arg * 1000000;
        *result = previous;
        return SUCCESS;
    case 2:
        *result = g_fail_next_sync;
        g_fail_next_sync = arg;
        return SUCCESS;
    case 3: *result = (int)g_use_after_free; return SUCCESS;
    case 4: *result = (int)g_allocs.n; return SUCCESS;
    case 5:
        for (size_t i = 0; i < g_allocs.n; i++) bytes += ((Alloc *)g_allocs.items[i])->size;
        *result = (int)((bytes + 1023) / 1024);
        return SUCCESS;
    case 6:
        if (check_device(arg)) return INVALID_DEVICE;
        *result = g_primary[arg] ? g_primary[arg]->retains : 0;
        return SUCCESS;
    case 7:
        g_use_after_free = g_launches = g_out_of_bounds = g_bad_handles = g_launches_outside_current = g_memory_calls_outside_current = g_batch_copies = 0;
        *result = 0;
        return SUCCESS;
    case 8: *result = (int)g_launches; return SUCCESS;
    case 15: *result = g_last_launch_flags; return SUCCESS;
    case 16:
        if (arg < 0 || (size_t)arg + 4 > sizeof g_last_params) return INVALID_VALUE;
        memcpy(result, g_last_params + arg, 4);
        return SUCCESS;
    case 9: *result = (int)g_out_of_bounds; return SUCCESS;
    case 10: *result = (int)g_bad_handles; return SUCCESS;
    case 11: *result = count_of(&g_streams, 1); return SUCCESS;
    case 12: *result = count_of(&g_events, 0); return SUCCESS;
    case 13:
        *result = g_fail_allocs;
        g_fail_allocs = arg;
        return SUCCESS;
    case 14:
        *result = g_fail_host_allocs;
        g_fail_host_allocs = arg;
        return SUCCESS;
    case 40: *result = (int)g_graphs.n; return SUCCESS;
    case 41: *result = (int)g_graph_execs.n; return SUCCESS;
    case 42: *result = (int)g_launches_outside_current; return SUCCESS;
    case 43: *result = count_host_blocks(0); return SUCCESS;
    case 44: *result = count_host_blocks(1); return SUCCESS;
    case 45: *result = (int)g_deferred_runs; return SUCCESS;
    case 46: *result = (int)g_pools.n; return SUCCESS;
    case 47: *result = (int)g_memory_calls_outside_current; return SUCCESS;
    case 48: *result = (int)g_batch_copies; return SUCCESS;
    case 60: *result = (int)__atomic_load_n(&g_file_loads, __ATOMIC_RELAXED); return SUCCESS;
    /* Identity, for Cuda.isStandIn(): "STAN"; a real driver refuses the attribute (INVALID_VALUE). */
    case 61: *result = 0x5354414E; return SUCCESS;
    default: return INVALID_VALUE;
    }
}
