/*
 * faults_helpers.h -- what the test_faults_*.c suites share (one file,
 * test_faults.c, before the suite was split): the ledger read back, options,
 * and the write watcher (tw_*). All functions are static inline: a suite that
 * uses none of one compiles without a warning.  The suites' description:
 *
 * test_faults_*.c -- the fault library (faults/) against the fault build of
 * the engine: every injector's fault is where the ledger says it is, one
 * seed replays the same faults, and the counts agree with the ledger.
 *
 * How a write fault is proven: the suite wraps flt_hooks in a watcher of
 * its own (tw_*).  Before the fault library's before() runs, the watcher
 * copies the page the engine meant to write and the block's old contents
 * from disk; after the write completed it reads the block(s) again.  Each
 * such event is then checked against the ledger line of the same rank.
 * Writes of one batch window run their before()s together and their I/O
 * after, so an event whose blocks another write of its window also
 * touched cannot be judged from the disk and is left out (counted as
 * unverifiable; every test still needs verified events).
 *
 * sync_error drops (Linux's "fsync failed, dirty data dropped"): a
 * watcher arms the fault for one fsync of the data file and copies the
 * file around it, so the test sees every unsynced page go back to what the
 * last good fsync made durable, one ledger line each; and a stress of
 * failed fsyncs on every file proves the reopened engine holds exactly the
 * prefix recovery reports, never less than what it called durable.
 *
 * The helpers every suite shares are testutil.h/crashutil.h.
 */
#ifndef TESTS_FAULTS_HELPERS_H
#define TESTS_FAULTS_HELPERS_H

#include <signal.h>
#include <sys/wait.h>

#include <fiu-control.h>
#include <fiu.h>

#include "crashutil.h"
#include "faults.h"

#define PS     4096u
#define T_OPTS .timeout = 300, .fini = cu_fini

/* ---- the ledger, read back ------------------------------------------------ */

typedef struct lg {
    char **lines;
    size_t n, cap;
} lg;

static inline void lg_cb(void *ctx, const char *line) {
    lg *l = ctx;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->lines = realloc(l->lines, l->cap * sizeof *l->lines);
        cr_assert(l->lines != NULL);
    }
    l->lines[l->n++] = strdup(line);
}

static inline lg lg_read(const char *run) {
    lg l = {0};
    int rc = flt_ledger_read(run, lg_cb, &l);
    cr_assert_eq(rc, 0, "flt_ledger_read(%s): %d", run, rc);
    return l;
}

static inline void lg_free(lg *l) {
    for (size_t i = 0; i < l->n; i++) free(l->lines[i]);
    free(l->lines);
    memset(l, 0, sizeof *l);
}

/* The ledger lines of RUN that contain NEEDLE. */
static inline size_t lg_lines_with(const char *run, const char *needle) {
    lg l = lg_read(run);
    size_t n = 0;
    for (size_t i = 0; i < l.n; i++) n += strstr(l.lines[i], needle) != NULL;
    lg_free(&l);
    return n;
}

/* The number after "KEY": in LINE, or -1 when absent. */
static inline int64_t jnum(const char *line, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    if (!p) return -1;
    p += strlen(pat);
    if (*p == '"') return -1;
    return strtoll(p, NULL, 10);
}

/* The string after "KEY": in LINE into BUF, or NULL when absent. */
static inline const char *jstr(const char *line, const char *key, char *buf, size_t cap) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    const char *p = strstr(line, pat);
    if (!p) return NULL;
    p += strlen(pat);
    size_t n = 0;
    while (p[n] && p[n] != '"' && n + 1 < cap) {
        buf[n] = p[n];
        n++;
    }
    buf[n] = 0;
    return buf;
}

static inline int line_is(const char *line, const char *key, const char *val) {
    char b[256];
    return jstr(line, key, b, sizeof b) && !strcmp(b, val);
}

static inline uint64_t jmask(const char *line) {
    char b[32];
    return jstr(line, "mask", b, sizeof b) ? strtoull(b, NULL, 16) : 0;
}

static inline size_t lg_count(const lg *l, const char *cls) {
    size_t n = 0;
    for (size_t i = 0; i < l->n; i++) n += line_is(l->lines[i], "class", cls);
    return n;
}

/* The K-th line (0-based) of class CLS (and POINT, if not NULL), or NULL. */
static inline const char *lg_nth_at(const lg *l, const char *cls, const char *point, size_t k) {
    for (size_t i = 0; i < l->n; i++)
        if (line_is(l->lines[i], "class", cls) && (!point || line_is(l->lines[i], "point", point)) && k-- == 0)
            return l->lines[i];
    return NULL;
}

static inline const char *lg_nth(const lg *l, const char *cls, size_t k) { return lg_nth_at(l, cls, NULL, k); }

static inline int point_index(const char *name) {
    for (size_t i = 0; i < eng_fault_point_count(); i++)
        if (!strcmp(eng_fault_point_name(i), name)) return (int)i;
    cr_assert_fail("no fault point %s", name);
    return -1;
}

/* Counts == ledger lines: per class, and per libfiu point (hits), with
 * every hit also a check. */
static inline void check_counts(flt_ctx *f, const char *run) {
    flt_counts c;
    flt_get_counts(f, &c);
    lg l = lg_read(run);
    for (int cls = 0; cls < FLT_CLASS_COUNT; cls++)
        cr_assert_eq(c.injected[cls], lg_count(&l, flt_class_name(cls)), "class %s: counted %llu, ledger %zu",
                     flt_class_name(cls), (unsigned long long)c.injected[cls], lg_count(&l, flt_class_name(cls)));
    for (size_t i = 0; i < eng_fault_point_count(); i++) {
        size_t lines = 0;
        for (size_t k = 0; k < l.n; k++) lines += line_is(l.lines[k], "point", eng_fault_point_name(i));
        cr_assert_eq(c.point_hits[i], lines, "point %s: %llu hits, %zu ledger lines", eng_fault_point_name(i),
                     (unsigned long long)c.point_hits[i], lines);
        cr_assert(c.point_checks[i] >= c.point_hits[i], "point %s: fewer checks than hits", eng_fault_point_name(i));
    }
    lg_free(&l);
}

/* ---- options ------------------------------------------------------------------ */

static inline flt_options fopts(const char *run, const char *db, uint64_t seed) {
    flt_options o;
    flt_options_init(&o);
    o.seed = seed;
    o.run_dir = run;
    o.db_dir = db;
    return o;
}

static inline flt_ctx *fopen_ok(const flt_options *o) {
    flt_ctx *f = NULL;
    int rc = flt_open(o, &f);
    cr_assert_eq(rc, ENG_OK, "flt_open: %s", eng_strerror(rc));
    cr_assert(f != NULL);
    return f;
}

/* Engine options: 4 KiB pages, the smallest cache (16 frames), sync off,
 * HOOKS installed, reports into C. */
static inline eng_options eopts(int backend, const eng_io_hooks *hooks, tu_reports *c) {
    eng_options o = tu_opts(backend, PS, 16, c);
    o.io_hooks = hooks;
    o.checkpoint_wal_bytes = 0;
    return o;
}

static inline void kv(uint64_t i, uint32_t gen, char *k, size_t *kl, uint8_t *v, size_t *vl) {
    *kl = (size_t)snprintf(k, 32, "key%08llu", (unsigned long long)i);
    *vl = 150 + (size_t)(i * 7 + gen) % 100;
    tu_fill(v, *vl, i * 1000003u + gen);
}

/* Put keys 0..N-1 with the values of generation GEN (kv). */
static inline void put_keys(eng_db *db, uint64_t n, uint32_t gen) {
    char k[32];
    uint8_t v[512];
    size_t kl, vl;
    for (uint64_t i = 0; i < n; i++) {
        kv(i, gen, k, &kl, v, &vl);
        cr_assert_eq(eng_put(db, k, kl, v, vl, NULL), ENG_OK);
    }
}

/* Fill DIR with N keys and close it (no faults, no hooks). */
static inline void populate(const char *dir, int backend, uint64_t n) {
    eng_options o = eopts(backend, NULL, NULL);
    eng_db *db = tu_open(dir, &o);
    put_keys(db, n, 0);
    tu_close(db);
}

/* ---- the watcher: what each write meant to do and what the disk got -------------- */

typedef struct tw_ev {
    const eng_io_op *op; /* identity of the op between before() and after() */
    uint64_t orig_off, final_off;
    size_t final_len;
    int skip, buf_replaced, done, conflict;
    uint8_t intended[PS];                /* the engine's bytes */
    uint8_t old_orig[PS], old_final[PS]; /* disk before the write */
    uint8_t new_orig[PS], new_final[PS]; /* disk after it */
} tw_ev;

#define TW_MAX 8
#define TW_WIN 256

typedef struct tw {
    const eng_io_hooks *inner;
    eng_io_hooks hooks;
    tw_ev ev[TW_MAX];
    size_t nev;
    int after_seen;
    struct {
        uint64_t off;
        size_t len;
        int skip;
        const eng_io_op *op;
    } win[TW_WIN];
    size_t nwin;
    uint8_t scratch[PS];
} tw;

static inline int is_data_write(const eng_io_op *op) {
    size_t n = op->path ? strlen(op->path) : 0;
    return op->kind == ENG_IO_WRITE && op->file_id == 0 && n >= 5 && !strcmp(op->path + n - 5, "/data") &&
           op->len == PS;
}

static inline void read_block(const char *path, uint64_t off, uint8_t *buf) {
    memset(buf, 0, PS);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return;
    ssize_t n = pread(fd, buf, PS, (off_t)off);
    (void)n; /* short (past the end): the rest reads as zeros */
    close(fd);
}

static inline int tw_before(void *ctx, eng_io_op *op) {
    tw *w = ctx;
    if (w->after_seen) {
        w->nwin = 0;
        w->after_seen = 0;
    }
    int data = is_data_write(op);
    uint64_t off0 = op->offset;
    size_t len0 = op->len;
    const void *buf0 = op->buf;
    tw_ev *e = NULL;
    if (data && w->nev < TW_MAX) {
        e = &w->ev[w->nev];
        memcpy(e->intended, op->buf, PS);
        read_block(op->path, off0, e->old_orig);
    }
    int rc = w->inner->before(w->inner->ctx, op);
    if (data && w->nwin < TW_WIN) w->win[w->nwin++] = (__typeof__(w->win[0])){op->offset, op->len, op->skip, op};
    if (rc == 0 && e && (op->skip || op->offset != off0 || op->len != len0 || op->buf != buf0)) {
        e->op = op;
        e->orig_off = off0;
        e->final_off = op->offset;
        e->final_len = op->len;
        e->skip = op->skip;
        e->buf_replaced = op->buf != buf0;
        read_block(op->path, op->offset, e->old_final);
        w->nev++;
    }
    return rc;
}

static inline int overlaps(uint64_t off, size_t len, uint64_t block) {
    return len && off < (block + 1) * PS && off + len > block * PS;
}

static inline void tw_after(void *ctx, eng_io_op *op) {
    tw *w = ctx;
    w->after_seen = 1;
    w->inner->after(w->inner->ctx, op);
    for (size_t i = 0; i < w->nev; i++) {
        tw_ev *e = &w->ev[i];
        if (e->done || e->op != op) continue;
        read_block(op->path, e->orig_off, e->new_orig);
        read_block(op->path, e->final_off, e->new_final);
        uint64_t bo = e->orig_off / PS, bf = e->final_off / PS;
        for (size_t k = 0; k < w->nwin; k++) {
            if (w->win[k].op == op || w->win[k].skip) continue;
            if (overlaps(w->win[k].off, w->win[k].len, bo) || overlaps(w->win[k].off, w->win[k].len, bf))
                e->conflict = 1;
        }
        e->done = 1;
        e->op = NULL;
    }
}

static inline tw *tw_new(const eng_io_hooks *inner) {
    tw *w = calloc(1, sizeof *w);
    cr_assert(w != NULL);
    w->inner = inner;
    w->hooks = (eng_io_hooks){.ctx = w, .before = tw_before, .after = tw_after};
    return w;
}

static inline size_t tw_verifiable(const tw *w) {
    size_t n = 0;
    for (size_t i = 0; i < w->nev; i++) n += w->ev[i].done && !w->ev[i].conflict;
    return n;
}

/* Puts (and a checkpoint every 25 ops) through a 16-frame cache until the
 * watcher holds WANT verifiable events or NOPS ops were done.  A poisoned
 * handle is reopened (recovery runs through the hooks too). */
static inline void write_workload(const char *dir, int backend, flt_ctx *f, tw *w, size_t want, uint64_t nops) {
    eng_options o = eopts(backend, &w->hooks, NULL);
    flt_pause(f, 1); /* a clean open: the events are the workload's writes */
    eng_db *db = tu_open(dir, &o);
    flt_pause(f, 0);
    flt_thread_start(f, 0);
    char k[32];
    uint8_t v[512];
    size_t kl, vl;
    for (uint64_t i = 0; i < nops && tw_verifiable(w) < want; i++) {
        flt_op(f, i);
        kv(i % 400, (uint32_t)(i / 400), k, &kl, v, &vl);
        int rc = (i % 25 == 24) ? eng_checkpoint(db) : eng_put(db, k, kl, v, vl, NULL);
        if (rc == ENG_POISONED) {
            eng_close(db);
            db = NULL;
            flt_pause(f, 1);
            int orc = eng_open(dir, &o, &db);
            flt_pause(f, 0);
            if (orc != ENG_OK) break;
        }
    }
    flt_pause(f, 1);
    if (db) eng_close(db);
}

/* Run one write class at odds 1 in ONE_IN; returns the verified events
 * with the ledger lines of the class (in *l). */
static inline tw *run_write_class(int cls, uint64_t one_in, int backend, uint64_t seed, lg *l, const char **dir_out) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    populate(dir, backend, 200);
    flt_options fo = fopts(run, dir, seed);
    fo.one_in[cls] = one_in;
    flt_ctx *f = fopen_ok(&fo);
    tw *w = tw_new(flt_hooks(f));
    write_workload(dir, backend, f, w, 3, 3000);
    check_counts(f, run);
    flt_close(f);
    *l = lg_read(run);
    cr_assert(tw_verifiable(w) >= 1, "%s: no verifiable event (events %zu, ledger lines %zu)", flt_class_name(cls),
              w->nev, lg_count(l, flt_class_name(cls)));
    cr_assert(lg_count(l, flt_class_name(cls)) >= w->nev, "%s: more events than ledger lines", flt_class_name(cls));
    if (dir_out) *dir_out = dir;
    return w;
}

/* Ledger fields common to page-write faults. */
static inline void check_line_page(const char *line, const tw_ev *e, const char *cls) {
    cr_assert(line != NULL, "%s: event without a ledger line", cls);
    cr_assert(line_is(line, "file", "data"), "%s: file: %s", cls, line);
    cr_assert(line_is(line, "point", "hook/write"), "%s: point: %s", cls, line);
    cr_assert_eq(jnum(line, "block"), (int64_t)(e->orig_off / PS), "%s: block: %s", cls, line);
    cr_assert_eq(jnum(line, "op") >= 0, 1, "%s: op: %s", cls, line);
    cr_assert_eq(jnum(line, "thread"), 0, "%s: thread: %s", cls, line);
}

/* ---- one flipped bit (write, cache, disk and log flips; the damage table) -- */

static inline int one_bit_diff(const uint8_t *a, const uint8_t *b, size_t n, size_t *byte, uint8_t *mask) {
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t x = a[i] ^ b[i];
        if (x) {
            *byte = i;
            *mask = x;
            bits += __builtin_popcount(x);
        }
    }
    return bits;
}

/* ---- sync_error's route: hook/sync or engine/io/fsync ---------------------- */

/* The first seed from FROM on whose first sync_error firing on thread 0
 * goes to POINT ("hook/sync" or "engine/io/fsync": the library splits
 * firings between the two by a draw of the class's stream).  Probed by
 * calling the library's before() and after() on an fsync of a file that
 * does not exist (nothing to drop). */
static inline uint64_t seed_for_sync_route(uint64_t from, const char *point) {
    int want_fiu = !strcmp(point, "engine/io/fsync");
    for (uint64_t seed = from; seed < from + 64; seed++) {
        const char *run = tu_tmpdir(), *dir = tu_tmpdir();
        flt_options fo = fopts(run, dir, seed);
        fo.one_in[FLT_SYNC_ERROR] = 1;
        flt_ctx *f = fopen_ok(&fo);
        flt_thread_start(f, 0);
        const eng_io_hooks *h = flt_hooks(f);
        char path[4096];
        eng_io_op op = {.kind = ENG_IO_SYNC, .file_id = 99, .path = tu_path(path, sizeof path, dir, "none")};
        int rc = h->before(h->ctx, &op);
        op.result = rc;
        if (rc == 0) h->after(h->ctx, &op);
        flt_close(f);
        if ((rc == 0) == want_fiu) return seed;
    }
    cr_assert_fail("no seed sends sync_error to %s", point);
    return 0;
}

/* ---- the drop watcher: a failed fsync of the data file (dw_*) ------------- */

/* A watcher around the fault library's hooks that keeps it paused except
 * for the fsync of the data file when armed (so sync_fault_one_in = 1
 * fails exactly that one), lists the data-file writes that completed
 * since the last successful fsync of the data file, and copies the data
 * file right before and right after a failed one. */
#define DW_MAX 8192
typedef struct dw {
    const eng_io_hooks *inner;
    eng_io_hooks hooks;
    flt_ctx *f;
    int armed, failed, in_sync;
    struct {
        uint64_t off, len;
    } w[DW_MAX];
    size_t nw, nw_at_fail;
    uint8_t *pre, *post;
    size_t pre_len, post_len;
} dw;

static inline int is_data(const eng_io_op *op) {
    size_t n = op->path ? strlen(op->path) : 0;
    return op->file_id == 0 && n >= 5 && !strcmp(op->path + n - 5, "/data");
}

static inline size_t first_diff(const uint8_t *a, const uint8_t *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return i;
    return n;
}

static inline uint8_t *slurp(const char *path, size_t *len) {
    int fd = open(path, O_RDONLY);
    cr_assert(fd >= 0, "open %s: %s", path, strerror(errno));
    struct stat st;
    cr_assert(fstat(fd, &st) == 0);
    uint8_t *b = malloc((size_t)st.st_size + 1);
    cr_assert(b != NULL);
    cr_assert_eq(cu_read_all(fd, b, (size_t)st.st_size), (size_t)st.st_size);
    close(fd);
    *len = (size_t)st.st_size;
    return b;
}

static inline int dw_before(void *ctx, eng_io_op *op) {
    dw *w = ctx;
    if (!(w->armed && op->kind == ENG_IO_SYNC && is_data(op))) return w->inner->before(w->inner->ctx, op);
    w->pre = slurp(op->path, &w->pre_len);
    w->nw_at_fail = w->nw;
    flt_pause(w->f, 0);
    int rc = w->inner->before(w->inner->ctx, op);
    w->armed = 0;
    if (rc < 0) { /* hook/sync failed it here */
        flt_pause(w->f, 1);
        w->failed = 1;
        w->post = slurp(op->path, &w->post_len);
    } else {
        w->in_sync = 1; /* engine/io/fsync fails it in the engine: stay armed until after() */
    }
    return rc;
}

static inline void dw_after(void *ctx, eng_io_op *op) {
    dw *w = ctx;
    w->inner->after(w->inner->ctx, op);
    if (w->in_sync && op->kind == ENG_IO_SYNC) {
        flt_pause(w->f, 1);
        w->in_sync = 0;
        if (op->result < 0) {
            w->failed = 1;
            w->post = slurp(op->path, &w->post_len);
        }
    }
    if (!is_data(op)) return;
    if (op->kind == ENG_IO_WRITE && op->result >= 0 && !op->skip) {
        cr_assert(w->nw < DW_MAX);
        w->w[w->nw].off = op->offset;
        w->w[w->nw].len = op->len;
        w->nw++;
    } else if (op->kind == ENG_IO_SYNC && op->result == 0) {
        w->nw = 0; /* single-threaded: every listed write completed before it began */
    }
}

/* ---- the damage table (faults.h D1-D7) ---- */

#define DMG_CAP 512

/* The present seqs, sorted, into S (at most DMG_CAP); returns the count. */
static inline size_t dmg_list(flt_ctx *f, uint64_t *s) {
    size_t n = flt_damage_present(f, s, DMG_CAP);
    cr_assert(n <= DMG_CAP, "%zu present entries", n);
    for (size_t i = 1; i < n; i++) /* insertion sort: a handful of entries */
        for (size_t j = i; j > 0 && s[j - 1] > s[j]; j--) {
            uint64_t x = s[j];
            s[j] = s[j - 1];
            s[j - 1] = x;
        }
    /* CAP 0 counts without writing (the oracle's first call may size its array). */
    cr_assert_eq(flt_damage_present(f, NULL, 0), n);
    return n;
}

static inline int dmg_has(flt_ctx *f, uint64_t seq) {
    uint64_t s[DMG_CAP];
    size_t n = dmg_list(f, s);
    for (size_t i = 0; i < n; i++)
        if (s[i] == seq) return 1;
    return 0;
}

#endif /* TESTS_FAULTS_HELPERS_H */
