/*
 * testutil.h -- small static-inline helpers shared by the engine's
 * Criterion suites (test_engine_kv, test_corruption_detected,
 * test_checksums_off_no_crash, test_concurrency).  Not part of the engine.
 *
 *   - temp dirs: tu_tmpdir() makes /tmp/engtest-XXXXXX and registers it
 *     (tu_tmpdir_db(): a database path "db" in a new one);
 *     tu_cleanup() (used as the tests' .fini, so it also runs after a failed
 *     assertion) removes every registered dir with nftw.
 *   - a deterministic PRNG (splitmix64) and key/value generators (and
 *     tu_key_index, the inverse of tu_key).
 *   - raw page read/write of DIR/data at a block, directory copy (pristine
 *     snapshots for corruption rounds).
 *   - a corruption-report collector (eng_corruption_fn; mutex-guarded).
 *   - an in-memory model of the store: a sorted array of key/value pairs.
 *   - TU_BACKEND_TEST: a Criterion test run once per I/O backend
 *     (TU_BACKEND_TEST_FN: its body sees the backend as an int).
 */
#ifndef TESTS_TESTUTIL_H
#define TESTS_TESTUTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "common/rng.h"
#include "engine.h"

/* ---- one test per I/O backend ------------------------------------------ */

/* Defines a parameterized test whose parameter `backend` (int *) is
 * ENG_IO_URING, then ENG_IO_PSYNC.  Extra arguments are Criterion test
 * options (.timeout = ..., .fini = ...). */
#define TU_BACKEND_TEST(Suite, Name, ...)                         \
    ParameterizedTestParameters(Suite, Name) {                    \
        static int tu_backends_[] = {ENG_IO_URING, ENG_IO_PSYNC}; \
        return cr_make_param_array(int, tu_backends_, 2);         \
    }                                                             \
    ParameterizedTest(int *backend, Suite, Name, ##__VA_ARGS__)

/* The same, with the body a function of `backend`, the backend itself
 * (an int, not a pointer to it). */
#define TU_BACKEND_TEST_FN(Suite, Name, ...)                                        \
    static void Suite##_##Name##_fn_(int backend);                                  \
    TU_BACKEND_TEST(Suite, Name, ##__VA_ARGS__) { Suite##_##Name##_fn_(*backend); } \
    static void Suite##_##Name##_fn_(int backend)

static inline const char *tu_backend_name(int b) {
    return b == ENG_IO_URING ? "io_uring" : b == ENG_IO_PSYNC ? "psync" : "?";
}

/* ---- temp dirs ------------------------------------------------------------ */

#define TU_MAX_DIRS 16
static char tu_dirs_[TU_MAX_DIRS][64];
static int tu_ndirs_;

static inline int tu_rm_cb_(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* Remove PATH and everything under it (no error if missing). */
static inline void tu_rm_rf(const char *path) { nftw(path, tu_rm_cb_, 16, FTW_DEPTH | FTW_PHYS); }

/* Make a fresh temp dir; the returned string lives until tu_cleanup(). */
static inline const char *tu_tmpdir(void) {
    cr_assert(tu_ndirs_ < TU_MAX_DIRS, "too many temp dirs");
    char *d = tu_dirs_[tu_ndirs_];
    snprintf(d, 64, "/tmp/engtest-XXXXXX");
    cr_assert(mkdtemp(d) != NULL, "mkdtemp: %s", strerror(errno));
    tu_ndirs_++;
    return d;
}

/* Criterion .fini: remove every temp dir made by this test. */
static inline void tu_cleanup(void) {
    for (int i = 0; i < tu_ndirs_; i++) tu_rm_rf(tu_dirs_[i]);
    tu_ndirs_ = 0;
}

/* "DIR/NAME" into a static-ish caller buffer. */
static inline const char *tu_path(char *buf, size_t cap, const char *dir, const char *name) {
    snprintf(buf, cap, "%s/%s", dir, name);
    return buf;
}

/* A fresh temp dir (tu_tmpdir) and in it the path of a database, "db",
 * not made yet.  The returned string lives until tu_cleanup(). */
static inline const char *tu_tmpdir_db(void) {
    static char dbs[TU_MAX_DIRS][80];
    const char *root = tu_tmpdir();
    return tu_path(dbs[tu_ndirs_ - 1], sizeof dbs[0], root, "db");
}

/* Copy the regular files (recursively, sub-dirs too) of SRC into DST,
 * replacing DST's previous contents (LOCK included: the engine wants it
 * to exist when it may not create the database). */
static inline void tu_copy_dir(const char *src, const char *dst) {
    tu_rm_rf(dst);
    cr_assert(mkdir(dst, 0700) == 0 || errno == EEXIST, "mkdir %s: %s", dst, strerror(errno));
    DIR *d = opendir(src);
    cr_assert(d != NULL, "opendir %s: %s", src, strerror(errno));
    struct dirent *e;
    static char buf[1 << 16];
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char s[4096], t[4096];
        snprintf(s, sizeof s, "%s/%s", src, e->d_name);
        snprintf(t, sizeof t, "%s/%s", dst, e->d_name);
        struct stat st;
        cr_assert(lstat(s, &st) == 0);
        if (S_ISDIR(st.st_mode)) {
            tu_copy_dir(s, t);
            continue;
        }
        if (!S_ISREG(st.st_mode)) continue;
        int in = open(s, O_RDONLY), out = open(t, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        cr_assert(in >= 0 && out >= 0, "copy %s -> %s: %s", s, t, strerror(errno));
        ssize_t n;
        while ((n = read(in, buf, sizeof buf)) > 0) cr_assert(write(out, buf, (size_t)n) == n, "write %s", t);
        cr_assert(n == 0, "read %s", s);
        close(in);
        close(out);
    }
    closedir(d);
}

/* ---- PRNG: splitmix64 (common/rng.h) ------------------------------------------ */

typedef struct tu_rng {
    uint64_t s;
} tu_rng;

static inline uint64_t tu_next(tu_rng *r) { return rng_next(&r->s); }
/* Uniform-ish in [0, n); n > 0 (by remainder, as the suites' seeds replay). */
static inline uint64_t tu_below(tu_rng *r, uint64_t n) { return rng_mod(&r->s, n); }
/* Uniform-ish in [lo, hi]. */
static inline uint64_t tu_range(tu_rng *r, uint64_t lo, uint64_t hi) { return lo + tu_below(r, hi - lo + 1); }

/* Deterministic bytes: BUF[0..LEN) is a pure function of SEED. */
static inline void tu_fill(void *buf, size_t len, uint64_t seed) {
    uint8_t *p = buf;
    tu_rng r = {seed};
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t v = tu_next(&r);
        memcpy(p + i, &v, 8);
    }
    if (i < len) {
        uint64_t v = tu_next(&r);
        memcpy(p + i, &v, len - i);
    }
}

/* Key number I as fixed-width text "k00000042" (9 bytes + NUL): sorts in
 * numeric order. */
static inline size_t tu_key(char *buf, uint64_t i) {
    return (size_t)snprintf(buf, 16, "k%08llu", (unsigned long long)i);
}

/* I if K is tu_key's key number I and I < N; else -1. */
static inline int64_t tu_key_index(const void *k, size_t kl, uint64_t n) {
    const uint8_t *c = k;
    if (kl != 9 || c[0] != 'k') return -1;
    uint64_t v = 0;
    for (size_t j = 1; j < 9; j++) {
        if (c[j] < '0' || c[j] > '9') return -1;
        v = v * 10 + (uint64_t)(c[j] - '0');
    }
    return v < n ? (int64_t)v : -1;
}

/* ---- raw pages of DIR/data ---------------------------------------------------- */

static inline void tu_read_page(const char *dir, uint64_t block, uint32_t page_size, void *buf) {
    char p[4096];
    int fd = open(tu_path(p, sizeof p, dir, "data"), O_RDONLY);
    cr_assert(fd >= 0, "open %s: %s", p, strerror(errno));
    ssize_t n = pread(fd, buf, page_size, (off_t)(block * page_size));
    cr_assert(n == (ssize_t)page_size, "pread block %llu: %zd", (unsigned long long)block, n);
    close(fd);
}

static inline void tu_write_page(const char *dir, uint64_t block, uint32_t page_size, const void *buf) {
    char p[4096];
    int fd = open(tu_path(p, sizeof p, dir, "data"), O_WRONLY);
    cr_assert(fd >= 0, "open %s: %s", p, strerror(errno));
    ssize_t n = pwrite(fd, buf, page_size, (off_t)(block * page_size));
    cr_assert(n == (ssize_t)page_size, "pwrite block %llu: %zd", (unsigned long long)block, n);
    close(fd);
}

static inline uint64_t tu_file_size(const char *dir, const char *name) {
    char p[4096];
    struct stat st;
    cr_assert(stat(tu_path(p, sizeof p, dir, name), &st) == 0, "stat %s", p);
    return (uint64_t)st.st_size;
}

static inline uint64_t tu_data_nblocks(const char *dir, uint32_t page_size) {
    return tu_file_size(dir, "data") / page_size;
}

/* ---- corruption-report collector ----------------------------------------------- */

#define TU_MAX_REPORTS 256
typedef struct tu_reports {
    pthread_mutex_t mu;
    size_t n;     /* reports stored (<= TU_MAX_REPORTS) */
    size_t total; /* reports received */
    eng_corruption r[TU_MAX_REPORTS];
} tu_reports;

static inline void tu_reports_init(tu_reports *c) {
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
}
static inline void tu_reports_reset(tu_reports *c) {
    pthread_mutex_lock(&c->mu);
    c->n = c->total = 0;
    pthread_mutex_unlock(&c->mu);
}
/* eng_corruption_fn */
static inline void tu_collect(void *ctx, const eng_corruption *rep) {
    tu_reports *c = ctx;
    pthread_mutex_lock(&c->mu);
    if (c->n < TU_MAX_REPORTS) c->r[c->n++] = *rep;
    c->total++;
    pthread_mutex_unlock(&c->mu);
}
/* 1 if some stored report has LAYER (or any if < 0), FILE and BLOCK (or
 * any if < 0). */
static inline int tu_reports_has(tu_reports *c, int layer, const char *file, int64_t block) {
    int found = 0;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->n && !found; i++)
        found = (layer < 0 || c->r[i].layer == layer) && (!file || !strcmp(c->r[i].file, file)) &&
                (block < 0 || c->r[i].block == block);
    pthread_mutex_unlock(&c->mu);
    return found;
}
/* All stored reports, one line each, into BUF (for failure messages). */
static inline const char *tu_reports_str(tu_reports *c, char *buf, size_t cap) {
    size_t off = 0;
    buf[0] = 0;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->n && i < 8 && off + 2 < cap; i++) {
        off += (size_t)eng_corruption_format(&c->r[i], buf + off, cap - off - 1);
        if (off >= cap - 1) {
            off = cap - 1;
            break;
        }
        buf[off++] = '\n';
        buf[off] = 0;
    }
    if (c->n == 0) snprintf(buf, cap, "(no reports)");
    pthread_mutex_unlock(&c->mu);
    return buf;
}

/* ---- in-memory model: sorted array --------------------------------------------- */

typedef struct tu_kv {
    uint8_t *k;
    size_t kl;
    uint8_t *v;
    size_t vl;
} tu_kv;

typedef struct tu_model {
    tu_kv *a;
    size_t n, cap;
} tu_model;

static inline int tu_keycmp(const void *a, size_t al, const void *b, size_t bl) {
    int c = memcmp(a, b, al < bl ? al : bl);
    if (c) return c;
    return (al > bl) - (al < bl);
}

/* Index of the first entry >= K; *exact = 1 if equal. */
static inline size_t tu_model_lb(const tu_model *m, const void *k, size_t kl, int *exact) {
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tu_keycmp(m->a[mid].k, m->a[mid].kl, k, kl) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (exact) *exact = lo < m->n && tu_keycmp(m->a[lo].k, m->a[lo].kl, k, kl) == 0;
    return lo;
}

static inline const tu_kv *tu_model_get(const tu_model *m, const void *k, size_t kl) {
    int ex;
    size_t i = tu_model_lb(m, k, kl, &ex);
    return ex ? &m->a[i] : NULL;
}

static inline void *tu_dup(const void *p, size_t n) {
    void *q = malloc(n ? n : 1);
    cr_assert(q != NULL);
    if (n) memcpy(q, p, n);
    return q;
}

static inline void tu_model_put(tu_model *m, const void *k, size_t kl, const void *v, size_t vl) {
    int ex;
    size_t i = tu_model_lb(m, k, kl, &ex);
    if (ex) {
        free(m->a[i].v);
        m->a[i].v = tu_dup(v, vl);
        m->a[i].vl = vl;
        return;
    }
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 256;
        m->a = realloc(m->a, m->cap * sizeof *m->a);
        cr_assert(m->a != NULL);
    }
    memmove(&m->a[i + 1], &m->a[i], (m->n - i) * sizeof *m->a);
    m->a[i] = (tu_kv){tu_dup(k, kl), kl, tu_dup(v, vl), vl};
    m->n++;
}

/* Returns 1 if the key was present. */
static inline int tu_model_del(tu_model *m, const void *k, size_t kl) {
    int ex;
    size_t i = tu_model_lb(m, k, kl, &ex);
    if (!ex) return 0;
    free(m->a[i].k);
    free(m->a[i].v);
    memmove(&m->a[i], &m->a[i + 1], (m->n - i - 1) * sizeof *m->a);
    m->n--;
    return 1;
}

static inline void tu_model_free(tu_model *m) {
    for (size_t i = 0; i < m->n; i++) {
        free(m->a[i].k);
        free(m->a[i].v);
    }
    free(m->a);
    memset(m, 0, sizeof *m);
}

/* ---- engine helpers -------------------------------------------------------------- */

/* Options with BACKEND, a cache of CACHE_PAGES pages of PAGE_SIZE (0 = the
 * default cache), reports into C (may be NULL). */
static inline eng_options tu_opts(int backend, uint32_t page_size, size_t cache_pages, tu_reports *c) {
    eng_options o;
    eng_options_init(&o);
    o.io_backend = backend;
    if (page_size) o.page_size = page_size;
    if (cache_pages) o.cache_size = cache_pages * (page_size ? page_size : 8192u);
    if (c) {
        o.on_corruption = tu_collect;
        o.on_corruption_ctx = c;
    }
    /* These suites judge the storage core's answers; the durability of
     * each write (and its fsync) is proven in test_recovery_*.c. */
    o.sync_mode = ENG_SYNC_OFF;
    return o;
}

static inline eng_db *tu_open(const char *dir, const eng_options *o) {
    eng_db *db = NULL;
    int rc = eng_open(dir, o, &db);
    cr_assert_eq(rc, ENG_OK, "eng_open(%s, %s): %s", dir, tu_backend_name(o->io_backend), eng_strerror(rc));
    cr_assert(db != NULL);
    return db;
}

static inline void tu_close(eng_db *db) {
    int rc = eng_close(db);
    cr_assert_eq(rc, ENG_OK, "eng_close: %s", eng_strerror(rc));
}

/* ---- comparing the engine against the model -------------------------------------- */

/* Byte ranges equal (safe for NULL pointers with length 0). */
static inline int tu_bytes_eq(const void *a, size_t al, const void *b, size_t bl) {
    return al == bl && (al == 0 || memcmp(a, b, al) == 0);
}

/* Full forward then backward scan of DB (unbounded) must list exactly the
 * model, in order, with the same values.  WHAT names the check in
 * messages. */
static inline void tu_check_scan(eng_db *db, const tu_model *m, const char *what) {
    eng_iter *it = NULL;
    eng_iter_options io = {0};
    int rc = eng_iter_open(db, &io, &it);
    cr_assert_eq(rc, ENG_OK, "%s: eng_iter_open: %s", what, eng_strerror(rc));
    size_t i = 0;
    for (rc = eng_iter_first(it); rc == ENG_OK; rc = eng_iter_next(it), i++) {
        cr_assert(eng_iter_valid(it), "%s: fwd: OK but not valid at %zu", what, i);
        cr_assert(i < m->n, "%s: fwd: more keys than the model (%zu)", what, m->n);
        size_t kl, vl;
        const void *k = eng_iter_key(it, &kl), *v = eng_iter_value(it, &vl);
        cr_assert(tu_bytes_eq(k, kl, m->a[i].k, m->a[i].kl), "%s: fwd: key %zu differs (len %zu vs %zu)", what, i, kl,
                  m->a[i].kl);
        cr_assert(tu_bytes_eq(v, vl, m->a[i].v, m->a[i].vl), "%s: fwd: value of key %zu differs (len %zu vs %zu)", what,
                  i, vl, m->a[i].vl);
    }
    cr_assert_eq(rc, ENG_NOTFOUND, "%s: fwd scan ended with %s at %zu", what, eng_strerror(rc), i);
    cr_assert(!eng_iter_valid(it), "%s: fwd: valid after running off", what);
    cr_assert_eq(i, m->n, "%s: fwd scan saw %zu keys, model has %zu", what, i, m->n);
    i = m->n;
    for (rc = eng_iter_last(it); rc == ENG_OK; rc = eng_iter_prev(it)) {
        cr_assert(i > 0, "%s: bwd: more keys than the model (%zu)", what, m->n);
        i--;
        size_t kl, vl;
        const void *k = eng_iter_key(it, &kl), *v = eng_iter_value(it, &vl);
        cr_assert(tu_bytes_eq(k, kl, m->a[i].k, m->a[i].kl), "%s: bwd: key %zu differs", what, i);
        cr_assert(tu_bytes_eq(v, vl, m->a[i].v, m->a[i].vl), "%s: bwd: value of key %zu differs", what, i);
    }
    cr_assert_eq(rc, ENG_NOTFOUND, "%s: bwd scan ended with %s at %zu", what, eng_strerror(rc), i);
    cr_assert_eq(i, 0, "%s: bwd scan missed %zu keys", what, i);
    eng_iter_close(it);
}

/* Every model key reads back with its value. */
static inline void tu_check_gets(eng_db *db, const tu_model *m, const char *what) {
    eng_buf b = {0};
    for (size_t i = 0; i < m->n; i++) {
        int rc = eng_get(db, m->a[i].k, m->a[i].kl, &b);
        cr_assert_eq(rc, ENG_OK, "%s: get of key %zu: %s", what, i, eng_strerror(rc));
        cr_assert(tu_bytes_eq(b.data, b.len, m->a[i].v, m->a[i].vl),
                  "%s: get of key %zu: value differs (len %zu vs %zu)", what, i, b.len, m->a[i].vl);
    }
    eng_buf_free(&b);
}

#endif /* TESTS_TESTUTIL_H */
