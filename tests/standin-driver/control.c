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

static int count_live_greens(void) {
    int n = 0;
    for (size_t i = 0; i < g_greens.n; i++)
        if (!((Green *)g_greens.items[i])->destroyed) n++;
    return n;
}

/* Commands 71-77 name a green context by its CUcontext's id (cuCtxGetId): NOT_FOUND if none has it. */
static int green_query(int command, int id, int *result) {
    Green *g = green_by_context_id((uint64_t)id);
    if (!g) return NOT_FOUND;
    switch (command) {
    case 71: *result = g->sm_count; break;
    case 72: *result = (int)g->streams; break;
    case 73: *result = (int)g->launches; break;
    case 75: *result = g->destroyed ? 0 : green_shared_sms(g); break;
    case 76: *result = sm_set_first(&g->sms); break;
    default: *result = !g->destroyed; break; /* 77 */
    }
    return SUCCESS;
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
        g_green_violations = g_detached_calls = 0;
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
    case 70: *result = (int)g_green_violations; return SUCCESS;
    case 71:
    case 72:
    case 73:
    case 75:
    case 76:
    case 77: return green_query(command, arg, result);
    case 74: *result = count_live_greens(); return SUCCESS;
    case 78: /* the SMs the last launch could use: first << 16 | count (0 before any launch) */
        *result = sm_set_count(&g_last_launch_sms) ? sm_set_first(&g_last_launch_sms) << 16 | sm_set_count(&g_last_launch_sms) : 0;
        return SUCCESS;
    case 79: *result = (int)g_detached_calls; return SUCCESS;
    case 80: *result = (int)g_detached.n; return SUCCESS;
    case 60: *result = (int)__atomic_load_n(&g_file_loads, __ATOMIC_RELAXED); return SUCCESS;
    /* Identity, for Cuda.isStandIn(): "STAN"; a real driver refuses the attribute (INVALID_VALUE). */
    case 61: *result = 0x5354414E; return SUCCESS;
    case 62: *result = g_init_thread == thread_id(); return SUCCESS;
    default: return INVALID_VALUE;
    }
}
