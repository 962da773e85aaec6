/*
 * report_line.c -- the run directory's report and observation lines
 * (report_line.h): formatters, and a parser of flat JSON objects that
 * takes a line apart token by token and rejects what is not one.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "report_line.h"

/* ---- observation kinds ---- */

static const struct {
    int kind;
    const char *name;
} obs_kinds[] = {
    {VD_OBS_ERROR, "error"},
    {VD_OBS_WRONG_VALUE, "wrong_value"},
    {VD_OBS_LOST, "lost"},
    {VD_OBS_RESURRECTED, "resurrected"},
    {VD_OBS_LOST_COMMIT, "lost_commit"},
    {VD_OBS_CRASH, "crash"},
    {VD_OBS_HANG, "hang"},
};
#define NKINDS (sizeof obs_kinds / sizeof obs_kinds[0])

const char *orc_obs_kind_name(int kind) {
    for (size_t i = 0; i < NKINDS; i++)
        if (obs_kinds[i].kind == kind) return obs_kinds[i].name;
    return "?";
}

int orc_obs_kind_from_name(const char *name) {
    for (size_t i = 0; i < NKINDS; i++)
        if (!strcmp(obs_kinds[i].name, name)) return obs_kinds[i].kind;
    return -1;
}

/* ---- formatting ---- */

typedef struct out {
    char *p;
    size_t n, cap;
    int over;
} out;

static void put(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out *o, const char *fmt, ...) {
    if (o->over) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(o->p + o->n, o->cap - o->n, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= o->cap - o->n)
        o->over = 1;
    else
        o->n += (size_t)k;
}

/* S as a JSON string body (no quotes, common/json.h's rule); a body that
 * does not fit whole sets over. */
static void put_str(out *o, const char *s) {
    if (o->over) return;
    size_t k = json_escape(o->p + o->n, o->cap - o->n, s);
    if (k >= o->cap - o->n)
        o->over = 1;
    else
        o->n += k;
}

int orc_report_line_format(char *buf, size_t cap, const vd_report *r) {
    out o = {buf, 0, cap, cap == 0};
    put(&o, "{\"layer\":\"");
    put_str(&o, r->layer);
    put(&o, "\",\"file\":\"");
    put_str(&o, r->file);
    put(&o, "\",\"block\":%lld,\"offset\":%lld,\"entry\":%d,\"after_crash\":%d", (long long)r->block,
        (long long)r->offset, (int)r->entry, r->after_crash);
    if (r->detail[0]) { /* the engine's words: a later process prints them for a report it judges */
        put(&o, ",\"detail\":\"");
        put_str(&o, r->detail);
        put(&o, "\"");
    }
    put(&o, "}\n");
    return o.over ? -1 : (int)o.n;
}

int orc_obs_line_format(char *buf, size_t cap, const vd_observation *ob) {
    out o = {buf, 0, cap, cap == 0};
    put(&o, "{\"kind\":\"%s\",\"thread\":%d,\"op\":%lld,\"status\":%d,\"key\":%llu}\n", orc_obs_kind_name(ob->kind),
        ob->thread, (long long)ob->op, ob->status, (unsigned long long)ob->key);
    return o.over ? -1 : (int)o.n;
}

/* ---- parsing: one flat JSON object ---- */

typedef struct val {
    int is_str;
    char s[128]; /* a string, truncated to fit */
    int neg;
    uint64_t mag; /* an integer: its magnitude */
} val;

typedef int (*field_fn)(void *ctx, const char *key, const val *v);

static const char *ws(const char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
    return p;
}

static int hexval(char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* A string whose opening quote is at P[-1]: into OUT[0..CAP) (truncated,
 * NUL-terminated); returns the byte after the closing quote, or NULL. */
static const char *str(const char *p, char *out, size_t cap) {
    size_t n = 0;
    for (;;) {
        unsigned char c = (unsigned char)*p++;
        if (c == '"') break;
        if (c == 0 || c < 0x20) return NULL;
        if (c == '\\') {
            char e = *p++;
            switch (e) {
            case '"':
            case '\\':
            case '/': c = (unsigned char)e; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'u': {
                int v = 0;
                for (int i = 0; i < 4; i++) {
                    int h = hexval(*p++);
                    if (h < 0) return NULL;
                    v = v * 16 + h;
                }
                if (v == 0 || v >= 0x80) return NULL; /* nothing the formatters write */
                c = (unsigned char)v;
                break;
            }
            default: return NULL;
            }
        }
        if (n + 1 < cap) out[n++] = (char)c;
    }
    out[n] = 0;
    return p;
}

/* Parse LINE as {"key": string-or-integer, ...}, calling FN per field.
 * 0, or -1 (malformed, or FN refused a field). */
static int parse_flat(const char *line, field_fn fn, void *ctx) {
    if (!line) return -1;
    const char *p = ws(line);
    if (*p++ != '{') return -1;
    p = ws(p);
    if (*p == '}') return *ws(p + 1) ? -1 : 0;
    for (;;) {
        char key[32];
        val v;
        memset(&v, 0, sizeof v);
        if (*p++ != '"' || !(p = str(p, key, sizeof key))) return -1;
        p = ws(p);
        if (*p++ != ':') return -1;
        p = ws(p);
        if (*p == '"') {
            v.is_str = 1;
            if (!(p = str(p + 1, v.s, sizeof v.s))) return -1;
        } else {
            if (*p == '-') v.neg = 1, p++;
            if (*p < '0' || *p > '9') return -1;
            char *end;
            errno = 0;
            v.mag = strtoull(p, &end, 10);
            if (errno == ERANGE) return -1;
            p = end;
        }
        if (fn(ctx, key, &v)) return -1;
        p = ws(p);
        if (*p == ',') {
            p = ws(p + 1);
            continue;
        }
        if (*p != '}') return -1;
        return *ws(p + 1) ? -1 : 0;
    }
}

/* S into D[0..CAP), truncated. */
static void copy(char *d, size_t cap, const char *s) {
    size_t n = strlen(s);
    if (n >= cap) n = cap - 1;
    memcpy(d, s, n);
    d[n] = 0;
}

/* An integer field into [LO, HI]; 0 or -1. */
static int as_int(const val *v, long long lo, long long hi, long long *out) {
    if (v->is_str) return -1;
    if (v->neg) {
        if (v->mag > (uint64_t)LLONG_MAX + 1) return -1;
        *out = v->mag == (uint64_t)LLONG_MAX + 1 ? LLONG_MIN : -(long long)v->mag;
    } else {
        if (v->mag > (uint64_t)LLONG_MAX) return -1;
        *out = (long long)v->mag;
    }
    return *out < lo || *out > hi ? -1 : 0;
}

typedef struct report_parse {
    vd_report *r;
    int have_layer;
} report_parse;

static int report_field(void *ctx, const char *key, const val *v) {
    report_parse *rp = ctx;
    vd_report *r = rp->r;
    long long x;
    if (!strcmp(key, "layer")) {
        if (!v->is_str) return -1;
        copy(r->layer, sizeof r->layer, v->s);
        rp->have_layer = 1;
    } else if (!strcmp(key, "file")) {
        if (!v->is_str) return -1;
        copy(r->file, sizeof r->file, v->s);
    } else if (!strcmp(key, "block")) {
        if (as_int(v, INT64_MIN, INT64_MAX, &x)) return -1;
        r->block = x;
    } else if (!strcmp(key, "offset")) {
        if (as_int(v, INT64_MIN, INT64_MAX, &x)) return -1;
        r->offset = x;
    } else if (!strcmp(key, "entry")) {
        if (as_int(v, INT32_MIN, INT32_MAX, &x)) return -1;
        r->entry = (int32_t)x;
    } else if (!strcmp(key, "after_crash")) {
        if (as_int(v, INT_MIN, INT_MAX, &x)) return -1;
        r->after_crash = (int)x;
    } else if (!strcmp(key, "detail")) {
        if (!v->is_str) return -1;
        copy(r->detail, sizeof r->detail, v->s);
    }
    return 0; /* an unknown key: ignored */
}

int orc_report_line_parse(const char *line, vd_report *out) {
    memset(out, 0, sizeof *out);
    out->block = out->offset = -1;
    out->entry = -1;
    report_parse rp = {out, 0};
    if (parse_flat(line, report_field, &rp) || !rp.have_layer) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    return 0;
}

static int obs_field(void *ctx, const char *key, const val *v) {
    vd_observation *o = ctx;
    long long x;
    if (!strcmp(key, "kind")) {
        if (!v->is_str) return -1;
        o->kind = orc_obs_kind_from_name(v->s);
        if (o->kind < 0) return -1;
    } else if (!strcmp(key, "thread")) {
        if (as_int(v, INT_MIN, INT_MAX, &x)) return -1;
        o->thread = (int)x;
    } else if (!strcmp(key, "op")) {
        if (as_int(v, INT64_MIN, INT64_MAX, &x)) return -1;
        o->op = x;
    } else if (!strcmp(key, "status")) {
        if (as_int(v, INT_MIN, INT_MAX, &x)) return -1;
        o->status = (int)x;
    } else if (!strcmp(key, "key")) {
        if (v->is_str || v->neg) return -1;
        o->key = v->mag;
    }
    return 0;
}

int orc_obs_line_parse(const char *line, vd_observation *out) {
    memset(out, 0, sizeof *out);
    out->thread = -1;
    out->op = -1;
    if (parse_flat(line, obs_field, out) || out->kind <= 0) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    return 0;
}
