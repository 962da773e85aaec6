/*
 * frame.c -- the fault library's frame (frame.h): class names, the
 * per-thread state and PRNG streams (with the hooks' own buffers), the
 * draws, the ledger helper and the counts.  Everything else in faults/ stands on it; it calls none of them.
 * It keeps FL1 (flt_record) and FL2 (flt_thread_start, flt_below) of
 * faults.c.
 */
#include <stdlib.h>
#include <string.h>

#include "frame.h"

/* ---- names ---- */

static const char *const class_names[FLT_CLASS_COUNT] = {
#define FLT_NAME(id, key, opt) key,
    FLT_CLASSES(FLT_NAME)
#undef FLT_NAME
};
static const char *const class_options[FLT_CLASS_COUNT] = {
#define FLT_OPT(id, key, opt) opt,
    FLT_CLASSES(FLT_OPT)
#undef FLT_OPT
};

const char *flt_class_name(int cls) { return cls >= 0 && cls < FLT_CLASS_COUNT ? class_names[cls] : NULL; }

const char *flt_class_option(int cls) { return cls >= 0 && cls < FLT_CLASS_COUNT ? class_options[cls] : NULL; }

/* ---- per-thread state ---- */

static _Atomic uint64_t ctx_gen; /* 0 is never a context's gen */
static __thread uint64_t tls_gen;
static __thread flt_thr *tls_thr;

void flt_frame_init(flt_ctx *f) {
    f->gen = atomic_fetch_add(&ctx_gen, 1) + 1;
    pthread_mutex_init(&f->mu, NULL);
    pthread_mutex_init(&f->dmg_mu, NULL);
}

flt_thr *flt_thr_get(flt_ctx *f) {
    if (tls_gen == f->gen) return tls_thr;
    flt_thr *t = calloc(1, sizeof *t);
    if (!t) return NULL; /* callers then inject nothing */
    t->thread = -1;
    atomic_init(&t->op, -1);
    pthread_mutex_lock(&f->mu);
    t->next = f->threads;
    f->threads = t;
    pthread_mutex_unlock(&f->mu);
    tls_gen = f->gen;
    tls_thr = t;
    return t;
}

void flt_thread_start(flt_ctx *f, int thread) {
    if (!f) return;
    flt_thr *t = flt_thr_get(f);
    if (!t) return;
    /* A negative index joins the shared streams of thread -1. */
    t->thread = thread < 0 ? -1 : thread;
    for (int c = 0; c < FLT_STREAM_COUNT; c++) flt_rng_seed(&t->rng[c], f->o.seed, t->thread, c);
    atomic_store_explicit(&t->op, -1, memory_order_relaxed);
}

void flt_thread_reseed(flt_ctx *f, uint64_t seed) {
    if (!f) return;
    flt_thr *t = flt_thr_get(f);
    if (!t) return;
    for (int c = 0; c < FLT_STREAM_COUNT; c++) flt_rng_seed(&t->rng[c], seed, t->thread, c);
}

void flt_op(flt_ctx *f, uint64_t op) {
    if (!f) return;
    flt_thr *t = flt_thr_get(f);
    if (t) atomic_store_explicit(&t->op, (int64_t)op, memory_order_relaxed);
}

uint64_t flt_below(flt_ctx *f, flt_thr *t, int cls, uint64_t n) {
    if (t && t->thread >= 0) return flt_rng_below(&t->rng[cls], n);
    pthread_mutex_lock(&f->mu);
    uint64_t v = flt_rng_below(&f->anon_rng[cls], n);
    pthread_mutex_unlock(&f->mu);
    return v;
}

/* The classes that fail an I/O call, which fault_files narrows. */
static int is_io_class(int cls) {
    return cls == FLT_READ_ERROR || cls == FLT_WRITE_ERROR || cls == FLT_NOSPACE || cls == FLT_SHORT_IO ||
           cls == FLT_SYNC_ERROR;
}

int flt_draw(flt_ctx *f, flt_thr *t, int cls) {
    uint64_t n = f->o.one_in[cls];
    if (!n || flt_paused(f)) return 0;
    if (t && t->file_off && is_io_class(cls)) return 0; /* not a kind of fault_files: no opportunity */
    return flt_below(f, t, cls, n) == 0;
}

flt_event flt_event_for(flt_ctx *f, flt_thr *t, int cls, const char *point) {
    flt_event e = flt_event_none(class_names[cls], point);
    e.phase = f->o.phase_recovery ? "recovery" : NULL;
    if (t) {
        e.op = atomic_load_explicit(&t->op, memory_order_relaxed);
        e.thread = t->thread;
    }
    return e;
}

/* 1 if NAME is one of the comma-separated names of LIST (spaces around a
 * name are ignored). */
int flt_list_has(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *s = list; *s;) {
        while (*s == ' ' || *s == ',') s++;
        const char *e = s;
        while (*e && *e != ',') e++;
        const char *t = e;
        while (t > s && t[-1] == ' ') t--;
        if ((size_t)(t - s) == n && n && memcmp(s, name, n) == 0) return 1;
        s = e;
    }
    return 0;
}

const char *flt_list_invalid(const char *list, int (*known)(const char *name, size_t n)) {
    int names = 0;
    for (const char *s = list; *s;) {
        while (*s == ' ' || *s == ',') s++;
        if (!*s) break;
        size_t n = strcspn(s, ",");
        while (n && s[n - 1] == ' ') n--;
        if (!known(s, n)) return s;
        names++;
        s += strcspn(s, ",");
    }
    return names ? NULL : list;
}

flt_event flt_page_event(flt_ctx *f, flt_thr *t, int cls, const char *point, uint64_t block, uint64_t offset,
                         uint64_t len) {
    flt_event e = flt_event_for(f, t, cls, point);
    e.file = "data";
    e.block = (int64_t)block;
    e.offset = (int64_t)offset;
    e.len = (int64_t)len;
    return e;
}

int flt_record(flt_ctx *f, int cls, const flt_event *e) { return flt_record_seq(f, cls, e, NULL); }

int flt_record_seq(flt_ctx *f, int cls, const flt_event *e, uint64_t *seq) {
    int rc = flt_ledger_append_seq(f->ledger, e, seq);
    if (rc == 0) atomic_fetch_add_explicit(&f->injected[cls], 1, memory_order_relaxed);
    return rc;
}

/* ---- counts ---- */

void flt_get_counts(flt_ctx *f, flt_counts *out) {
    memset(out, 0, sizeof *out);
    if (!f) return;
    for (int c = 0; c < FLT_CLASS_COUNT; c++) out->injected[c] = atomic_load(&f->injected[c]);
    out->delays = atomic_load(&f->delays);
    for (int i = 0; i < FLT_MAX_POINTS; i++) {
        out->point_hits[i] = atomic_load(&f->point_hits[i]);
        out->point_checks[i] = atomic_load(&f->point_checks[i]);
    }
}

flt_ledger *flt_get_ledger(flt_ctx *f) { return f ? f->ledger : NULL; }

flt_journal *flt_get_journal(flt_ctx *f) { return f ? f->journal : NULL; }

/* ---- the hooks' own buffers (frame.h) ---- */

void *flt_buf_take(flt_thr *t, size_t len) {
    if (!t) return NULL;
    flt_buf *spare = NULL;
    for (size_t i = 0; i < t->nbufs; i++) {
        flt_buf *b = &t->bufs[i];
        if (b->used) continue;
        if (b->cap >= len) {
            b->used = 1;
            return b->p;
        }
        spare = b;
    }
    if (!spare) {
        flt_buf *nb = realloc(t->bufs, (t->nbufs + 1) * sizeof *nb);
        if (!nb) return NULL;
        t->bufs = nb;
        spare = &t->bufs[t->nbufs++];
        *spare = (flt_buf){0};
    }
    void *p = NULL;
    if (posix_memalign(&p, 4096, len ? len : 1) != 0) return NULL;
    free(spare->p);
    spare->p = p;
    spare->cap = len;
    spare->used = 1;
    return p;
}

void flt_buf_give(flt_thr *t, const void *p) {
    if (!t) return;
    for (size_t i = 0; i < t->nbufs; i++)
        if (t->bufs[i].used && t->bufs[i].p == p) {
            t->bufs[i].used = 0;
            return;
        }
}

void flt_thr_free_bufs(flt_thr *t) {
    for (size_t i = 0; i < t->nbufs; i++) free(t->bufs[i].p);
    free(t->bufs);
    t->bufs = NULL;
    t->nbufs = 0;
}
