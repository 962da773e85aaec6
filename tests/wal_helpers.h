/*
 * wal_helpers.h -- what the test_wal_*.c suites share (one file,
 * test_wal.c, before the suite was split): the I/O hook that counts and fails
 * operations, the fixture, the model of what was appended, reading back and
 * raw file access. All functions are static inline: a suite that uses none
 * of one compiles without a warning.  The suites' description:
 *
 * test_wal_*.c -- engine/wal.c against the contract of wal.h, once per I/O
 * backend (io_uring and psync).
 *
 * What the tests prove:
 *   - records of every size (empty to larger than a segment) read back
 *     exactly, across blocks, segments and generations, including headers
 *     that straddle a block or a segment boundary;
 *   - group commit: concurrent flushers share fsyncs (fewer fsyncs than
 *     flush calls) and lose no record;
 *   - W3: a torn tail (truncated or zeroed) and a hole below every witness
 *     are trimmed quietly; a bit flip or hole in the synced middle is
 *     ENG_CORRUPTION with a report naming the segment (the log's last
 *     fsync group, sector by sector:
 *     test_wal_last_fsync_group_damage_reported.c);
 *   - W1: flushing a partly filled block again never changes the bytes of
 *     the records already in it;
 *   - generations: after a reopen, stale blocks of the old generation that
 *     sit at their right position and chain correctly are not records;
 *   - recycled segments keep stale content that is never read as records;
 *     the archive receives identical copies of what was removed;
 *   - W4: a failed write or fsync poisons the log, and fsync is not retried.
 *
 * Each test makes its own temp dir (removed by tu_cleanup) and its own I/O
 * context with a hook that counts operations and can fail one kind.
 */
#ifndef TESTS_WAL_HELPERS_H
#define TESTS_WAL_HELPERS_H

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"
#include "engine.h"
#include "format.h"
#include "io.h"
#include "status.h"
#include "testutil.h"
#include "wal.h"

#define SEG  (64u << 10)
#define SEG0 "wal/0000000000000000"

/* ---- I/O hook: counts every operation, fails one kind on demand ---------- */

static struct {
    atomic_int counts[ENG_IO_KIND_COUNT];
    atomic_int fail_kind; /* -1: none */
    atomic_int fail_err;  /* positive errno */
} H;

static inline int hook_before(void *ctx, eng_io_op *op) {
    (void)ctx;
    if (op->kind >= 0 && op->kind < ENG_IO_KIND_COUNT) atomic_fetch_add(&H.counts[op->kind], 1);
    if (op->kind == atomic_load(&H.fail_kind)) return -atomic_load(&H.fail_err);
    return 0;
}

static const eng_io_hooks HOOKS = {.ctx = NULL, .before = hook_before, .after = NULL};

static inline int hook_count(int kind) { return atomic_load(&H.counts[kind]); }

static inline void hook_fail(int kind, int err) {
    atomic_store(&H.fail_err, err);
    atomic_store(&H.fail_kind, kind);
}

/* ---- fixture ------------------------------------------------------------------- */

typedef struct fx {
    const char *dir;
    io_ctx *io;
    int backend;
    tu_reports reps;
    eng_reporter rep;
} fx;

static inline void fx_init(fx *f, int backend) {
    for (int i = 0; i < ENG_IO_KIND_COUNT; i++) atomic_store(&H.counts[i], 0);
    atomic_store(&H.fail_kind, -1);
    f->dir = tu_tmpdir();
    f->backend = backend;
    int rc = io_ctx_create(backend, &HOOKS, &f->io);
    if (rc == ENG_NOTSUP && backend == ENG_IO_URING)
        cr_skip_test("io_uring refused by the kernel: %s", strerror(errno));
    cr_assert_eq(rc, ENG_OK, "io_ctx_create(%s): %s", tu_backend_name(backend), eng_strerror(rc));
    tu_reports_init(&f->reps);
    f->rep = (eng_reporter){.fn = tu_collect, .ctx = &f->reps};
}

static inline void fx_done(fx *f) { io_ctx_destroy(f->io); }

static inline wal *wopen(fx *f, uint32_t gen, uint64_t start, uint64_t prev, size_t bufsize, const char *archive) {
    wal_config c = {
        .io = f->io,
        .dir = f->dir,
        .seg_size = SEG,
        .buffer_size = bufsize,
        .gen = gen,
        .start_lsn = start,
        .prev_lsn = prev,
        .archive_dir = archive,
        .reporter = f->rep,
    };
    wal *w = NULL;
    int rc = wal_open(&c, &w);
    cr_assert_eq(rc, ENG_OK, "wal_open(gen %u, start %llu): %s", gen, (unsigned long long)start, eng_strerror(rc));
    return w;
}

static inline void wflush(wal *w) {
    int rc = wal_flush(w, wal_insert_lsn(w));
    cr_assert_eq(rc, ENG_OK, "wal_flush: %s", eng_strerror(rc));
    cr_assert_eq(wal_durable_lsn(w), wal_insert_lsn(w));
}

/* ---- the model: what was appended ------------------------------------------------ */

typedef struct mrec {
    uint64_t lsn, end, seed;
    size_t len;
    int type;
    uint32_t gen;
} mrec;

typedef struct model {
    mrec *r;
    size_t n, cap;
} model;

static inline void model_free(model *m) {
    free(m->r);
    memset(m, 0, sizeof *m);
}

/* Drop the records from index N on (they were trimmed away). */
static inline void model_cut(model *m, size_t n) {
    if (n < m->n) m->n = n;
}

/* A reopen at START rewrites the block holding it in generation GEN
 * (W1 keeps the bytes, the header is new), so records starting in that
 * block now report GEN (wal_record.gen: the block the record starts in). */
static inline void model_reopen(model *m, uint64_t start, uint32_t gen) {
    if (start % WAL_BLOCK == 0) return;
    for (size_t i = 0; i < m->n; i++)
        if (m->r[i].lsn / WAL_BLOCK == start / WAL_BLOCK) m->r[i].gen = gen;
}

static inline uint8_t *payload(size_t len, uint64_t seed) {
    uint8_t *p = malloc(len ? len : 1);
    cr_assert(p != NULL);
    tu_fill(p, len, seed);
    return p;
}

/* Append a record of LEN bytes whose content follows from SEED. */
static inline const mrec *add(wal *w, model *m, uint32_t gen, size_t len, uint64_t seed) {
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 256;
        m->r = realloc(m->r, m->cap * sizeof *m->r);
        cr_assert(m->r != NULL);
    }
    mrec *r = &m->r[m->n];
    r->len = len;
    r->seed = seed;
    r->type = 1 + (int)(seed % WAL_REC_TYPE_MAX);
    r->gen = gen;
    uint8_t *p = payload(len, seed);
    int rc = wal_append(w, r->type, p, len, &r->lsn, &r->end);
    free(p);
    cr_assert_eq(rc, ENG_OK, "wal_append(%zu bytes): %s", len, eng_strerror(rc));
    cr_assert_eq(r->lsn % 8, 0);
    cr_assert_eq(wal_insert_lsn(w), r->end);
    if (m->n > 0) cr_assert_geq(r->lsn, m->r[m->n - 1].end, "records overlap");
    m->n++;
    return r;
}

/* ---- reading back ------------------------------------------------------------------ */

typedef struct rd_result {
    int rc;   /* what ended the walk */
    size_t n; /* records read */
    uint64_t end, last;
    uint32_t max_gen;
    int trimmed;
} rd_result;

/* Read the log from START/PREV; the records must be exactly M->r[FROM..],
 * in order, byte for byte, until the walk ends (with any status). */
static inline rd_result read_log(fx *f, uint64_t start, uint64_t prev, const model *m, size_t from) {
    wal_reader *r = NULL;
    int rc = wal_reader_open(f->io, f->dir, SEG, start, prev, &f->rep, &r);
    cr_assert_eq(rc, ENG_OK, "wal_reader_open: %s", eng_strerror(rc));
    rd_result res = {0};
    wal_record rec;
    while ((rc = wal_reader_next(r, &rec)) == ENG_OK) {
        size_t i = from + res.n;
        cr_assert_lt(i, m->n, "record %zu at LSN %llu was never appended", i, (unsigned long long)rec.lsn);
        const mrec *e = &m->r[i];
        cr_assert_eq(rec.lsn, e->lsn, "record %zu: lsn %llu, appended at %llu", i, (unsigned long long)rec.lsn,
                     (unsigned long long)e->lsn);
        cr_assert_eq(rec.end, e->end, "record %zu: end", i);
        cr_assert_eq(rec.type, e->type, "record %zu: type", i);
        cr_assert_eq(rec.len, e->len, "record %zu: length %zu, appended %zu", i, rec.len, e->len);
        cr_assert_eq(rec.gen, e->gen, "record %zu: generation %u, appended in %u", i, rec.gen, e->gen);
        if (i > 0) cr_assert_eq(rec.prev, m->r[i - 1].lsn, "record %zu: prev", i);
        uint8_t *p = payload(e->len, e->seed);
        cr_assert(e->len == 0 || memcmp(rec.payload, p, e->len) == 0, "record %zu: payload differs", i);
        free(p);
        res.n++;
    }
    res.rc = rc;
    cr_assert_eq(wal_reader_next(r, &rec), rc, "the end is not sticky");
    wal_reader_end(r, &res.end, &res.last, &res.max_gen, &res.trimmed);
    wal_reader_close(r);
    return res;
}

/* The whole model reads back and the log ends cleanly right after it. */
static inline void expect_clean(fx *f, const model *m, uint64_t start, uint64_t prev, size_t from) {
    rd_result res = read_log(f, start, prev, m, from);
    char buf[2048];
    cr_assert_eq(res.rc, ENG_NOTFOUND, "log ended with %s after %zu records: %s", eng_strerror(res.rc), res.n,
                 tu_reports_str(&f->reps, buf, sizeof buf));
    cr_assert_eq(res.n, m->n - from, "read %zu records, appended %zu", res.n, m->n - from);
    cr_assert_eq(res.end, m->r[m->n - 1].end);
    cr_assert_eq(res.last, m->r[m->n - 1].lsn);
    cr_assert_eq(res.trimmed, 0, "a clean end reported as trimmed");
    cr_assert_eq(f->reps.total, 0, "reports on a clean log: %s", tu_reports_str(&f->reps, buf, sizeof buf));
}

/* ---- raw file access ------------------------------------------------------------------- */

static inline void seg_path(char *out, size_t cap, const fx *f, uint64_t lsn) {
    snprintf(out, cap, "%s/wal/%016llx", f->dir, (unsigned long long)(lsn & ~(uint64_t)(SEG - 1)));
}

/* Read LEN bytes of the stream at LSN (one segment) straight from the file. */
static inline void raw_read(const fx *f, uint64_t lsn, void *buf, size_t len) {
    char p[4096];
    seg_path(p, sizeof p, f, lsn);
    int fd = open(p, O_RDONLY);
    cr_assert(fd >= 0, "open %s: %s", p, strerror(errno));
    memset(buf, 0, len);
    ssize_t n = pread(fd, buf, len, (off_t)(lsn & (SEG - 1)));
    cr_assert(n >= 0, "pread %s", p);
    close(fd);
}

static inline void raw_write(const fx *f, uint64_t lsn, const void *buf, size_t len) {
    char p[4096];
    seg_path(p, sizeof p, f, lsn);
    int fd = open(p, O_WRONLY);
    cr_assert(fd >= 0, "open %s: %s", p, strerror(errno));
    cr_assert_eq(pwrite(fd, buf, len, (off_t)(lsn & (SEG - 1))), (ssize_t)len);
    close(fd);
}

static inline void raw_zero(const fx *f, uint64_t lsn, size_t len) {
    uint8_t *z = calloc(1, len);
    raw_write(f, lsn, z, len);
    free(z);
}

static inline int seg_file_exists(const fx *f, uint64_t base) {
    char p[4096];
    seg_path(p, sizeof p, f, base);
    return access(p, F_OK) == 0;
}

static inline uint64_t blk_of_t(uint64_t x) { return x - x % WAL_BLOCK; }

static inline uint64_t rd64le(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* Payload length that makes a record appended at insert position INS end
 * exactly at block offset TARGET (8-aligned, >= 64) of this block or the
 * next one (its 8-aligned end: a record that fills a sector's data ends at
 * the trailer before TARGET). */
static inline size_t len_to_reach(uint64_t ins, uint32_t target) {
    uint64_t start = ins % WAL_BLOCK == 0 ? ins + WAL_BLOCK_HDR : ins;
    uint64_t t = start - start % WAL_BLOCK + target;
    if (wal_payload_between(start, t) < WAL_REC_HDR) t += WAL_BLOCK;
    return (size_t)(wal_payload_between(start, t) - WAL_REC_HDR);
}

/* ---- a small log ------------------------------------------------------------- */

/* Records of random sizes in segment 0, flushed one by one (so each block
 * written carries the witness of everything before it); returns the open
 * log. */
static inline wal *small_log(fx *f, model *m, int n, size_t last_len) {
    wal *w = wopen(f, 1, 0, 0, 8 * WAL_BLOCK, NULL);
    tu_rng rng = {7};
    for (int i = 0; i < n; i++) {
        add(w, m, 1, i == n - 1 ? last_len : (size_t)tu_range(&rng, 100, 1500), tu_next(&rng));
        wflush(w);
    }
    cr_assert_lt(wal_insert_lsn(w), SEG);
    return w;
}

#endif /* TESTS_WAL_HELPERS_H */
