/*
 * Green contexts (CUDA 12.4+): a device's SMs as a resource, split into groups; descriptors of a
 * set of SMs; green contexts with their own CUcontext limited to those SMs, their streams, and
 * their destruction, which detaches the streams (CUDA_ERROR_STREAM_DETACHED).
 *
 * A CUdevResource is the caller's memory in the 12.4 layout: `type`, 92 bytes the driver keeps
 * for itself, then the union whose first member is the SM resource. The stand-in keeps in those
 * 92 bytes which SMs the resource holds (a bitmask), of which device, and where it came from, so
 * that a resource is a plain value the caller may copy, as with the driver, and groups split from
 * one resource (and their remainder) are disjoint.
 */
#include "standin.h"

#include <stddef.h>

#define RESOURCE_TYPE_SM 1

#define GREEN_CTX_DEFAULT_STREAM 1u

/* "STRS": the stand-in wrote this resource. */
#define RESOURCE_MAGIC 0x53545253u

enum ResourceOrigin { FROM_DEVICE = 1, SPLIT_GROUP = 2, SPLIT_REMAINDER = 3 };

/* What the stand-in keeps in the resource's internal bytes. */
typedef struct {
    uint32_t magic;
    int32_t dev;
    uint32_t origin; /* enum ResourceOrigin */
    uint32_t reserved;
    SmSet sms;
} ResourceInternals;

/* cuda.h's CUdevResource, 12.4 ABI (13.0 adds minSmPartitionSize, smCoscheduledAlignment and flags
 * after smCount, and a pointer at the union's end, within the same 144 bytes). */
typedef struct {
    int type;
    unsigned char internal[92];
    union {
        struct {
            unsigned smCount, minSmPartitionSize, smCoscheduledAlignment, flags;
        } sm;
        unsigned char oversize[48];
    } res;
} DevResource;

_Static_assert(sizeof(DevResource) == 144, "CUdevResource is 144 bytes in the 12.4 ABI");
_Static_assert(offsetof(DevResource, res) == 96, "CUdevResource.sm starts at byte 96");
_Static_assert(sizeof(ResourceInternals) <= 92, "the stand-in's bookkeeping fits the driver's internal bytes");

/* A descriptor (cuDevResourceGenerateDesc): the SMs a green context will get. The driver has no
 * call to destroy one, so they live for the process. */
typedef struct {
    int dev;
    SmSet sms;
} Desc;

static Vec g_descs;

/* Compute capability 9.0+: groups of at least 8 SMs, a multiple of 8; older devices: of 2. */
static unsigned sm_granularity(void) { return env_int("CUHANDLE_STANDIN_CC", 90) >= 90 ? 8 : 2; }

static void write_resource(DevResource *r, int dev, enum ResourceOrigin origin, const SmSet *sms) {
    memset(r, 0, sizeof *r);
    r->type = RESOURCE_TYPE_SM;
    ResourceInternals in = {.magic = RESOURCE_MAGIC, .dev = dev, .origin = origin, .sms = *sms};
    memcpy(r->internal, &in, sizeof in);
    r->res.sm.smCount = (unsigned)sm_set_count(sms);
    if (driver_version() >= 13000) { /* the 13.0 header's fields; 12.x drivers leave these bytes 0 */
        r->res.sm.minSmPartitionSize = sm_granularity();
        r->res.sm.smCoscheduledAlignment = sm_granularity();
    }
}

/* Reads a resource the caller hands in: an SM resource the stand-in wrote, intact. */
static int read_resource(const DevResource *r, ResourceInternals *out) {
    if (r->type != RESOURCE_TYPE_SM) return INVALID_RESOURCE_TYPE;
    memcpy(out, r->internal, sizeof *out);
    if (out->magic != RESOURCE_MAGIC || check_device(out->dev)) return INVALID_VALUE;
    if ((unsigned)sm_set_count(&out->sms) != r->res.sm.smCount) return INVALID_VALUE;
    return SUCCESS;
}

/* A green context handle the caller handed in: one ever created, not destroyed. */
static int check_green(const void *p, Green **out) {
    if (!p || !vec_has(&g_greens, p)) return bad_handle(INVALID_HANDLE);
    Green *g = (Green *)p;
    if (g->destroyed) return CONTEXT_IS_DESTROYED;
    *out = g;
    return SUCCESS;
}

EXPORT CUresult cuDeviceGetDevResource(CUdevice device, void *resource, int type) {
    ENTER();
    if (!resource) RETURN(INVALID_VALUE);
    if (check_device(device)) RETURN(INVALID_DEVICE);
    if (type != RESOURCE_TYPE_SM) RETURN(INVALID_RESOURCE_TYPE);
    SmSet all;
    sm_set_all(&all, g_sms);
    write_resource(resource, device, FROM_DEVICE, &all);
    RETURN(SUCCESS);
}

/* Takes the `n` lowest SMs of `from` into `to`. */
static void take_lowest(SmSet *from, SmSet *to, int n) {
    memset(to, 0, sizeof *to);
    for (int i = 0; i < MAX_SMS && n > 0; i++) {
        uint64_t bit = 1ull << (i % 64);
        if (from->bits[i / 64] & bit) {
            from->bits[i / 64] &= ~bit;
            to->bits[i / 64] |= bit;
            n--;
        }
    }
}

/* Groups of exactly minCount SMs rounded up to the granularity (0: the smallest group), the lowest
 * SMs first; `remaining` gets the rest. A group is not split again (NVIDIA documents that results
 * need a green context first); a remainder may be. */
EXPORT CUresult cuDevSmResourceSplitByCount(void *result, unsigned int *nbGroups, const void *input, void *remaining,
                                            unsigned int useFlags, unsigned int minCount) {
    ENTER();
    if (!nbGroups || !input || useFlags != 0) RETURN(INVALID_VALUE);
    ResourceInternals in;
    int rc = read_resource(input, &in);
    if (rc) RETURN(rc);
    if (in.origin == SPLIT_GROUP) RETURN(INVALID_VALUE);
    unsigned granularity = sm_granularity();
    unsigned size = minCount == 0 ? granularity : (minCount + granularity - 1) / granularity * granularity;
    if (minCount > (unsigned)MAX_SMS) size = MAX_SMS + 1; /* no overflow; certainly no group */
    unsigned possible = (unsigned)sm_set_count(&in.sms) / size;
    if (possible == 0) RETURN(INVALID_RESOURCE_CONFIGURATION);
    unsigned groups = possible;
    if (result) {
        if (*nbGroups == 0) RETURN(INVALID_VALUE);
        if (*nbGroups < groups) groups = *nbGroups;
    }
    SmSet left = in.sms; /* `input` may be one of the outputs: read before writing */
    DevResource *out = result;
    for (unsigned i = 0; i < groups; i++) {
        SmSet group;
        take_lowest(&left, &group, (int)size);
        if (out) write_resource(&out[i], in.dev, SPLIT_GROUP, &group);
    }
    if (remaining) write_resource(remaining, in.dev, SPLIT_REMAINDER, &left);
    *nbGroups = groups;
    RETURN(SUCCESS);
}

/* SM resources of one device, disjoint, together holding at least one SM. */
EXPORT CUresult cuDevResourceGenerateDesc(void **phDesc, void *resources, unsigned int nbResources) {
    ENTER();
    if (!phDesc || !resources || nbResources == 0) RETURN(INVALID_VALUE);
    const DevResource *r = resources;
    Desc d = {.dev = -1};
    for (unsigned i = 0; i < nbResources; i++) {
        ResourceInternals in;
        int rc = read_resource(&r[i], &in);
        if (rc) RETURN(rc);
        if (d.dev >= 0 && in.dev != d.dev) RETURN(INVALID_VALUE);
        d.dev = in.dev;
        for (size_t w = 0; w < sizeof d.sms.bits / sizeof d.sms.bits[0]; w++) {
            if (d.sms.bits[w] & in.sms.bits[w]) RETURN(INVALID_VALUE); /* the same SM twice */
            d.sms.bits[w] |= in.sms.bits[w];
        }
    }
    if (sm_set_count(&d.sms) == 0) RETURN(INVALID_RESOURCE_CONFIGURATION);
    Desc *desc = malloc(sizeof *desc);
    if (!desc) RETURN(OUT_OF_MEMORY);
    *desc = d;
    vec_push(&g_descs, desc);
    *phDesc = desc;
    RETURN(SUCCESS);
}

/* A CUcontext of its own (a new id), not made current; it retains the device's primary context
 * for its lifetime, as the driver documents. */
EXPORT CUresult cuGreenCtxCreate(void **phCtx, void *desc, CUdevice dev, unsigned int flags) {
    ENTER();
    if (!phCtx || flags != GREEN_CTX_DEFAULT_STREAM) RETURN(INVALID_VALUE);
    if (check_device(dev)) RETURN(INVALID_DEVICE);
    if (!desc || !vec_has(&g_descs, desc)) RETURN(bad_handle(INVALID_HANDLE));
    Desc *d = desc;
    if (d->dev != dev) RETURN(INVALID_VALUE);
    Green *g = calloc(1, sizeof *g);
    if (!g) RETURN(OUT_OF_MEMORY);
    g->sms = d->sms;
    g->sm_count = sm_set_count(&d->sms);
    primary_retain(dev);
    g->ctx = new_ctx(dev, 0);
    g->ctx->green = g;
    vec_push(&g_greens, g);
    *phCtx = g;
    RETURN(SUCCESS);
}

EXPORT CUresult cuCtxFromGreenCtx(CUcontext *pContext, void *hCtx) {
    ENTER();
    if (!pContext) RETURN(INVALID_VALUE);
    Green *g;
    int rc = check_green(hCtx, &g);
    if (rc) RETURN(rc);
    *pContext = g->ctx;
    RETURN(SUCCESS);
}

/* Its CUcontext goes as with cuCtxDestroy (memory, events; the calling thread's stack loses it);
 * its user streams are detached, not destroyed: every later call naming one is STREAM_DETACHED,
 * except cuStreamDestroy from CUDA 13.1 (streams.c); their captures end. The primary context's
 * retain is released. */
EXPORT CUresult cuGreenCtxDestroy(void *hCtx) {
    ENTER();
    Green *g;
    int rc = check_green(hCtx, &g);
    if (rc) RETURN(rc);
    Ctx *c = g->ctx;
    for (size_t i = 0; i < g_streams.n; i++) {
        Stream *s = g_streams.items[i];
        if (s->ctx != c || s->kind != USER_STREAM) continue;
        if (s->capture) {
            free(s->capture->ops);
            free(s->capture);
            s->capture = NULL;
        }
        vec_push(&g_detached, s);
    }
    release_resources(c); /* takes the streams out of g_streams */
    c->active = 0;
    drop_from_stack(c);
    g->destroyed = 1;
    primary_release(c->dev);
    RETURN(SUCCESS);
}

/* Needs no current context: the stream belongs to the green context's CUcontext. */
EXPORT CUresult cuGreenCtxStreamCreate(CUstream *phStream, void *greenCtx, unsigned int flags, int priority) {
    ENTER();
    (void)priority; /* priorities are not modelled */
    if (!phStream || flags != STREAM_NON_BLOCKING) RETURN(INVALID_VALUE);
    Green *g;
    int rc = check_green(greenCtx, &g);
    if (rc) RETURN(rc);
    if (g->ctx->sticky) RETURN(g->ctx->sticky);
    RETURN(new_user_stream(g->ctx, flags, phStream));
}

/* The green context of the stream's context (however the stream was made), NULL for others. */
EXPORT CUresult cuStreamGetGreenCtx(CUstream hStream, void **phCtx) {
    ENTER();
    if (!phCtx) RETURN(INVALID_VALUE);
    Stream *s;
    int rc = resolve_stream(hStream, 0, &s);
    if (rc) RETURN(rc);
    *phCtx = s->ctx->green;
    RETURN(SUCCESS);
}

/* A kernel launch queued on a stream of `c` (lock held): counted for its green context, and the
 * SMs it may run on recorded for the control channel. */
void note_launch(Ctx *c) {
    if (c->green) {
        c->green->launches++;
        g_last_launch_sms = c->green->sms;
    } else {
        sm_set_all(&g_last_launch_sms, g_sms);
    }
}

/* The green context whose CUcontext has id `id`, destroyed or not, or NULL. */
Green *green_by_context_id(uint64_t id) {
    for (size_t i = 0; i < g_greens.n; i++) {
        Green *g = g_greens.items[i];
        if (g->ctx->id == id) return g;
    }
    return NULL;
}

/* How many of `g`'s SMs another live green context also holds (0: its share is its own). */
int green_shared_sms(const Green *g) {
    SmSet shared = {{0}};
    for (size_t i = 0; i < g_greens.n; i++) {
        const Green *o = g_greens.items[i];
        if (o == g || o->destroyed || o->ctx->dev != g->ctx->dev) continue;
        for (size_t w = 0; w < sizeof shared.bits / sizeof shared.bits[0]; w++) shared.bits[w] |= g->sms.bits[w] & o->sms.bits[w];
    }
    return sm_set_count(&shared);
}

/* The lowest SM of a set, or -1 when empty. */
int sm_set_first(const SmSet *set) {
    for (int i = 0; i < MAX_SMS; i++)
        if (set->bits[i / 64] & (1ull << (i % 64))) return i;
    return -1;
}
