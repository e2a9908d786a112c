/*
 * What the stand-in reads from a module image: the kernels, their parameters and static shared
 * memory, and the module-scope variables of PTX, found as text or as the (LZ4-compressed or plain)
 * PTX member of a fatbin.
 */
#include "standin.h"

Kernel *new_kernel(Library *lib, const char *name, size_t name_len) {
    Kernel *k = calloc(1, sizeof *k);
    char *copy_of_name = malloc(name_len + 1);
    if (!k || !copy_of_name) abort();
    memcpy(copy_of_name, name, name_len);
    copy_of_name[name_len] = 0;
    k->lib = lib;
    k->name = copy_of_name;
    k->nparams = -1;
    Kernel **ks = realloc(lib->kernels, (lib->nkernels + 1) * sizeof *ks);
    if (!ks) abort();
    lib->kernels = ks;
    ks[lib->nkernels++] = k;
    vec_push(&g_kernels, k);
    return k;
}

static size_t ptx_type_size(const char *t, size_t len) {
    static const struct {
        const char *name;
        size_t size;
    } TYPES[] = {{".u8", 1}, {".s8", 1}, {".b8", 1}, {".u16", 2}, {".s16", 2}, {".b16", 2}, {".f16", 2},
                 {".u32", 4}, {".s32", 4}, {".b32", 4}, {".f32", 4}, {".u64", 8}, {".s64", 8}, {".b64", 8}, {".f64", 8}};
    for (size_t i = 0; i < sizeof TYPES / sizeof TYPES[0]; i++)
        if (strlen(TYPES[i].name) == len && strncmp(TYPES[i].name, t, len) == 0) return TYPES[i].size;
    return 0;
}

static int is_ident(char ch) { return isalnum((unsigned char)ch) || ch == '_' || ch == '$' || ch == '.'; }

/* One `.param` declaration, e.g. ".param .u64 .ptr .align 4 name" or ".param .align 8 .b8 name[16]". */
static int parse_param(const char *p, const char *end, size_t *size, size_t *align) {
    size_t elem = 0, count = 1, al = 0;
    int saw_param = 0;
    while (p < end) {
        while (p < end && isspace((unsigned char)*p)) p++;
        const char *tok = p;
        while (p < end && !isspace((unsigned char)*p)) p++;
        size_t len = (size_t)(p - tok);
        if (len == 0) break;
        if (len == 6 && strncmp(tok, ".param", 6) == 0) saw_param = 1;
        else if (len == 6 && strncmp(tok, ".align", 6) == 0) al = strtoul(p, NULL, 10);
        else if (ptx_type_size(tok, len)) elem = ptx_type_size(tok, len);
        else {
            const char *bracket = memchr(tok, '[', len);
            if (bracket) count = strtoul(bracket + 1, NULL, 10);
        }
    }
    if (!saw_param || !elem || !count) return 0;
    *size = elem * count;
    *align = al ? al : elem;
    return 1;
}

/* The static shared memory of the entry whose body follows `p`: the sizes of the `.shared` declarations
 * between its braces, e.g. ".shared .align 4 .b8 _ZZ1kE1s[32768];" (not `.extern .shared` arrays of no size:
 * those are dynamic shared memory). */
static size_t body_shared_bytes(const char *p) {
    const char *open = strchr(p, '{');
    if (!open) return 0;
    int depth = 0;
    size_t total = 0;
    for (const char *q = open; *q; q++) {
        if (*q == '{') depth++;
        else if (*q == '}' && --depth == 0) break;
        else if (strncmp(q, ".shared", 7) == 0 && isspace((unsigned char)q[7]) && (q == open || isspace((unsigned char)q[-1]))) {
            const char *line_start = q;
            while (line_start > open && line_start[-1] != '\n') line_start--;
            const char *end = strchr(q, ';');
            if (!end || memmem(line_start, (size_t)(q - line_start), ".extern", 7)) continue;
            size_t elem = 0, count = 1;
            for (const char *t = q + 7; t < end;) {
                while (t < end && isspace((unsigned char)*t)) t++;
                const char *tok = t;
                while (t < end && !isspace((unsigned char)*t)) t++;
                size_t len = (size_t)(t - tok);
                if (ptx_type_size(tok, len)) elem = ptx_type_size(tok, len);
                const char *bracket = memchr(tok, '[', len);
                if (bracket) count = strtoul(bracket + 1, NULL, 10);
            }
            total += elem * count;
            q = end;
        }
    }
    return total;
}

/* Finds every `.entry NAME( ... )` and its parameters; returns 0 if a declaration is malformed. */
int parse_ptx(Library *lib, const char *text) {
    const char *p = text;
    while ((p = strstr(p, ".entry")) != NULL) {
        if ((p > text && !isspace((unsigned char)p[-1])) || !isspace((unsigned char)p[6])) {
            p += 6;
            continue;
        }
        p += 6;
        while (isspace((unsigned char)*p)) p++;
        const char *name = p;
        while (is_ident(*p)) p++;
        size_t name_len = (size_t)(p - name);
        while (isspace((unsigned char)*p)) p++;
        const char *close = *p == '(' ? strchr(p, ')') : NULL;
        if (!name_len || !close) return 0;
        Kernel *k = new_kernel(lib, name, name_len);
        k->offsets = calloc(MAX_PARAMS, sizeof(size_t));
        k->sizes = calloc(MAX_PARAMS, sizeof(size_t));
        if (!k->offsets || !k->sizes) abort();
        k->nparams = 0;
        size_t offset = 0;
        for (const char *seg = p + 1; seg < close;) {
            const char *comma = memchr(seg, ',', (size_t)(close - seg));
            const char *seg_end = comma ? comma : close;
            size_t size, align;
            if (parse_param(seg, seg_end, &size, &align)) {
                if (k->nparams == MAX_PARAMS) return 0;
                offset = (offset + align - 1) / align * align;
                k->offsets[k->nparams] = offset;
                k->sizes[k->nparams++] = size;
                offset += size;
            }
            seg = seg_end + 1;
        }
        p = close + 1;
        k->static_shared = body_shared_bytes(p);
    }
    return 1;
}

/* Module-scope variables: lines whose first token (after .visible/.extern/.weak) is .global or
 * .const, e.g. ".visible .global .attribute(.managed) .align 4 .u32 m;" or
 * ".const .align 4 .b8 coef[16];". Instructions such as "ld.global.u32" never start that way. */
void parse_ptx_variables(Library *lib, const char *text) {
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        const char *end = strchr(line, '\n');
        if (!end) end = line + strlen(line);
        const char *p = line;
        int is_var = 0, managed = 0;
        size_t elem = 0, count = 1, name_len = 0;
        const char *name = NULL;
        while (p < end) {
            while (p < end && isspace((unsigned char)*p)) p++;
            const char *tok = p;
            while (p < end && !isspace((unsigned char)*p) && *p != ';' && *p != '=') p++;
            size_t len = (size_t)(p - tok);
            if (len == 0) break;
            if ((len == 8 && !strncmp(tok, ".visible", 8)) || (len == 7 && !strncmp(tok, ".extern", 7)) || (len == 5 && !strncmp(tok, ".weak", 5))) continue;
            if (!is_var) {
                if ((len == 7 && !strncmp(tok, ".global", 7)) || (len == 6 && !strncmp(tok, ".const", 6))) {
                    is_var = 1;
                    continue;
                }
                break;
            }
            if (len >= 10 && !strncmp(tok, ".attribute", 10)) managed = memmem(tok, len, ".managed", 8) != NULL;
            else if (len == 6 && !strncmp(tok, ".align", 6)) {
                while (p < end && isspace((unsigned char)*p)) p++;
                while (p < end && isdigit((unsigned char)*p)) p++;
            } else if (ptx_type_size(tok, len)) elem = ptx_type_size(tok, len);
            else if (tok[0] != '.') {
                const char *bracket = memchr(tok, '[', len);
                name = tok;
                name_len = bracket ? (size_t)(bracket - tok) : len;
                if (bracket) count = strtoul(bracket + 1, NULL, 10);
                break;
            }
        }
        if (!is_var || !name || !name_len || !elem || !count) continue;
        Var *vars = realloc(lib->vars, (lib->nvars + 1) * sizeof *vars);
        char *copy = malloc(name_len + 1);
        if (!vars || !copy) abort();
        memcpy(copy, name, name_len);
        copy[name_len] = 0;
        lib->vars = vars;
        vars[lib->nvars++] = (Var){copy, elem * count, managed};
    }
}

/* LZ4 block decompression (nvcc compresses fatbin entries with it); 0 on malformed input. */
static size_t lz4_block(const unsigned char *in, size_t in_len, unsigned char *out, size_t cap) {
    const unsigned char *ip = in, *end = in + in_len;
    size_t op = 0;
    while (ip < end) {
        unsigned token = *ip++;
        size_t lit = token >> 4;
        if (lit == 15) {
            unsigned char b;
            do {
                if (ip >= end) return 0;
                b = *ip++;
                lit += b;
            } while (b == 255);
        }
        if (lit > (size_t)(end - ip) || lit > cap - op) return 0;
        memcpy(out + op, ip, lit);
        ip += lit;
        op += lit;
        if (ip >= end) break; /* the last sequence has literals only */
        if (end - ip < 2) return 0;
        size_t offset = ip[0] | (size_t)ip[1] << 8;
        ip += 2;
        size_t match = token & 15;
        if (match == 15) {
            unsigned char b;
            do {
                if (ip >= end) return 0;
                b = *ip++;
                match += b;
            } while (b == 255);
        }
        match += 4;
        if (offset == 0 || offset > op || match > cap - op) return 0;
        for (size_t i = 0; i < match; i++, op++) out[op] = out[op - offset];
    }
    return op;
}

static uint64_t le(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* The first PTX entry of a fatbin as NUL-terminated text (malloc'ed), or NULL. The fatbin's own
 * sizes were checked by cuhandle (image.rs) before it reaches any driver. Entry header: kind u16
 * (1 = PTX), version u16, header size u32, payload size u64, compressed size u32 at 16, flags u64
 * at 40 (0x2000 = LZ4-compressed), uncompressed size u64 at 56. */
char *fatbin_ptx(const unsigned char *b) {
    uint64_t at = le(b + 6, 2), end = at + le(b + 8, 8);
    while (at + 16 <= end) {
        const unsigned char *e = b + at;
        uint64_t header = le(e + 4, 4), payload = le(e + 8, 8);
        if (header < 16 || header + payload > end - at) return NULL;
        if (le(e, 2) == 1) {
            const unsigned char *data = e + header;
            int compressed = header >= 64 && (le(e + 40, 8) & 0x2000);
            size_t size = compressed ? le(e + 56, 8) : payload;
            if (size > (256u << 20)) return NULL;
            char *text = calloc(1, size + 1);
            if (!text) return NULL;
            if (!compressed) memcpy(text, data, size);
            else if (!lz4_block(data, le(e + 16, 4) <= payload ? le(e + 16, 4) : payload, (unsigned char *)text, size)) {
                free(text);
                return NULL;
            }
            return text;
        }
        at += header + payload;
    }
    return NULL;
}
