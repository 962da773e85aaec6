/*
 * test_wal.c -- engine/wal.c against the contract of wal.h, once per I/O
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
 *     fsync group, sector by sector: test_wal_tail.c);
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
#include "io.h"
#include "status.h"
#include "testutil.h"
#include "wal.h"

#define SEG (64u << 10)
#define SEG0 "wal/0000000000000000"

/* ---- I/O hook: counts every operation, fails one kind on demand ---------- */

static struct {
    atomic_int counts[ENG_IO_KIND_COUNT];
    atomic_int fail_kind; /* -1: none */
    atomic_int fail_err;  /* positive errno */
} H;

static int hook_before(void *ctx, eng_io_op *op)
{
    (void)ctx;
    if (op->kind >= 0 && op->kind < ENG_IO_KIND_COUNT)
        atomic_fetch_add(&H.counts[op->kind], 1);
    if (op->kind == atomic_load(&H.fail_kind))
        return -atomic_load(&H.fail_err);
    return 0;
}

static const eng_io_hooks HOOKS = { .ctx = NULL, .before = hook_before, .after = NULL };

static int hook_count(int kind)
{
    return atomic_load(&H.counts[kind]);
}

static void hook_fail(int kind, int err)
{
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

static void fx_init(fx *f, int backend)
{
    for (int i = 0; i < ENG_IO_KIND_COUNT; i++)
        atomic_store(&H.counts[i], 0);
    atomic_store(&H.fail_kind, -1);
    f->dir = tu_tmpdir();
    f->backend = backend;
    int rc = io_ctx_create(backend, &HOOKS, &f->io);
    if (rc == ENG_NOTSUP && backend == ENG_IO_URING)
        cr_skip_test("io_uring refused by the kernel: %s", strerror(errno));
    cr_assert_eq(rc, ENG_OK, "io_ctx_create(%s): %s", tu_backend_name(backend), eng_strerror(rc));
    tu_reports_init(&f->reps);
    f->rep = (eng_reporter){ .fn = tu_collect, .ctx = &f->reps };
}

static void fx_done(fx *f)
{
    io_ctx_destroy(f->io);
}

static wal *wopen(fx *f, uint32_t gen, uint64_t start, uint64_t prev, size_t bufsize,
                  const char *archive)
{
    wal_config c = {
        .io = f->io, .dir = f->dir, .seg_size = SEG, .buffer_size = bufsize, .gen = gen,
        .start_lsn = start, .prev_lsn = prev, .archive_dir = archive, .reporter = f->rep,
    };
    wal *w = NULL;
    int rc = wal_open(&c, &w);
    cr_assert_eq(rc, ENG_OK, "wal_open(gen %u, start %llu): %s", gen, (unsigned long long)start,
                 eng_strerror(rc));
    return w;
}

static void wflush(wal *w)
{
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

static void model_free(model *m)
{
    free(m->r);
    memset(m, 0, sizeof *m);
}

/* Drop the records from index N on (they were trimmed away). */
static void model_cut(model *m, size_t n)
{
    if (n < m->n)
        m->n = n;
}

/* A reopen at START rewrites the block holding it in generation GEN
 * (W1 keeps the bytes, the header is new), so records starting in that
 * block now report GEN (wal_record.gen: the block the record starts in). */
static void model_reopen(model *m, uint64_t start, uint32_t gen)
{
    if (start % WAL_BLOCK == 0)
        return;
    for (size_t i = 0; i < m->n; i++)
        if (m->r[i].lsn / WAL_BLOCK == start / WAL_BLOCK)
            m->r[i].gen = gen;
}

static uint8_t *payload(size_t len, uint64_t seed)
{
    uint8_t *p = malloc(len ? len : 1);
    cr_assert(p != NULL);
    tu_fill(p, len, seed);
    return p;
}

/* Append a record of LEN bytes whose content follows from SEED. */
static const mrec *add(wal *w, model *m, uint32_t gen, size_t len, uint64_t seed)
{
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
    if (m->n > 0)
        cr_assert_geq(r->lsn, m->r[m->n - 1].end, "records overlap");
    m->n++;
    return r;
}

/* ---- reading back ------------------------------------------------------------------ */

typedef struct rd_result {
    int rc;          /* what ended the walk */
    size_t n;        /* records read */
    uint64_t end, last;
    uint32_t max_gen;
    int trimmed;
} rd_result;

/* Read the log from START/PREV; the records must be exactly M->r[FROM..],
 * in order, byte for byte, until the walk ends (with any status). */
static rd_result read_log(fx *f, uint64_t start, uint64_t prev, const model *m, size_t from)
{
    wal_reader *r = NULL;
    int rc = wal_reader_open(f->io, f->dir, SEG, start, prev, &f->rep, &r);
    cr_assert_eq(rc, ENG_OK, "wal_reader_open: %s", eng_strerror(rc));
    rd_result res = { 0 };
    wal_record rec;
    while ((rc = wal_reader_next(r, &rec)) == ENG_OK) {
        size_t i = from + res.n;
        cr_assert_lt(i, m->n, "record %zu at LSN %llu was never appended", i,
                     (unsigned long long)rec.lsn);
        const mrec *e = &m->r[i];
        cr_assert_eq(rec.lsn, e->lsn, "record %zu: lsn %llu, appended at %llu", i,
                     (unsigned long long)rec.lsn, (unsigned long long)e->lsn);
        cr_assert_eq(rec.end, e->end, "record %zu: end", i);
        cr_assert_eq(rec.type, e->type, "record %zu: type", i);
        cr_assert_eq(rec.len, e->len, "record %zu: length %zu, appended %zu", i, rec.len, e->len);
        cr_assert_eq(rec.gen, e->gen, "record %zu: generation %u, appended in %u", i, rec.gen, e->gen);
        if (i > 0)
            cr_assert_eq(rec.prev, m->r[i - 1].lsn, "record %zu: prev", i);
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
static void expect_clean(fx *f, const model *m, uint64_t start, uint64_t prev, size_t from)
{
    rd_result res = read_log(f, start, prev, m, from);
    char buf[2048];
    cr_assert_eq(res.rc, ENG_NOTFOUND, "log ended with %s after %zu records: %s",
                 eng_strerror(res.rc), res.n, tu_reports_str(&f->reps, buf, sizeof buf));
    cr_assert_eq(res.n, m->n - from, "read %zu records, appended %zu", res.n, m->n - from);
    cr_assert_eq(res.end, m->r[m->n - 1].end);
    cr_assert_eq(res.last, m->r[m->n - 1].lsn);
    cr_assert_eq(res.trimmed, 0, "a clean end reported as trimmed");
    cr_assert_eq(f->reps.total, 0, "reports on a clean log: %s", tu_reports_str(&f->reps, buf, sizeof buf));
}

/* ---- raw file access ------------------------------------------------------------------- */

static void seg_path(char *out, size_t cap, const fx *f, uint64_t lsn)
{
    snprintf(out, cap, "%s/wal/%016llx", f->dir, (unsigned long long)(lsn & ~(uint64_t)(SEG - 1)));
}

/* Read LEN bytes of the stream at LSN (one segment) straight from the file. */
static void raw_read(const fx *f, uint64_t lsn, void *buf, size_t len)
{
    char p[4096];
    seg_path(p, sizeof p, f, lsn);
    int fd = open(p, O_RDONLY);
    cr_assert(fd >= 0, "open %s: %s", p, strerror(errno));
    memset(buf, 0, len);
    ssize_t n = pread(fd, buf, len, (off_t)(lsn & (SEG - 1)));
    cr_assert(n >= 0, "pread %s", p);
    close(fd);
}

static void raw_write(const fx *f, uint64_t lsn, const void *buf, size_t len)
{
    char p[4096];
    seg_path(p, sizeof p, f, lsn);
    int fd = open(p, O_WRONLY);
    cr_assert(fd >= 0, "open %s: %s", p, strerror(errno));
    cr_assert_eq(pwrite(fd, buf, len, (off_t)(lsn & (SEG - 1))), (ssize_t)len);
    close(fd);
}

static void raw_zero(const fx *f, uint64_t lsn, size_t len)
{
    uint8_t *z = calloc(1, len);
    raw_write(f, lsn, z, len);
    free(z);
}

static int seg_file_exists(const fx *f, uint64_t base)
{
    char p[4096];
    seg_path(p, sizeof p, f, base);
    return access(p, F_OK) == 0;
}

static uint64_t blk_of_t(uint64_t x)
{
    return x - x % WAL_BLOCK;
}

static uint64_t rd64le(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Payload length that makes a record appended at insert position INS end
 * exactly at block offset TARGET (8-aligned, >= 64) of this block or the
 * next one (its 8-aligned end: a record that fills a sector's data ends at
 * the trailer before TARGET). */
static size_t len_to_reach(uint64_t ins, uint32_t target)
{
    uint64_t start = ins % WAL_BLOCK == 0 ? ins + WAL_BLOCK_HDR : ins;
    uint64_t t = start - start % WAL_BLOCK + target;
    if (wal_payload_between(start, t) < WAL_REC_HDR)
        t += WAL_BLOCK;
    return (size_t)(wal_payload_between(start, t) - WAL_REC_HDR);
}

/* ==========================================================================
 * Round trips
 * ======================================================================== */

TU_BACKEND_TEST(wal, random_sizes_round_trip_across_segments_and_generations, .fini = tu_cleanup,
                .timeout = 120)
{
    fx f;
    fx_init(&f, *backend);
    model m = { 0 };
    tu_rng rng = { 42 };
    uint64_t start = 0, prev = 0;
    uint64_t appended_bytes = 0;

    for (uint32_t gen = 1; gen <= 3; gen++) {
        wal *w = wopen(&f, gen, start, prev, 4 * WAL_BLOCK, NULL);
        model_reopen(&m, start, gen);
        for (int i = 0; i < 120; i++) {
            size_t len = (i % 25 == 24) ? (size_t)tu_range(&rng, SEG + 1, SEG + 40000)
                                        : (size_t)tu_below(&rng, 3 * WAL_BLOCK + 1);
            add(w, &m, gen, len, tu_next(&rng));
            appended_bytes += WAL_REC_HDR + len;
            if (i % 10 == 9)
                wflush(w);
        }
        wflush(w);
        wal_stats st;
        wal_get_stats(w, &st);
        cr_assert_eq(st.records, 120);
        cr_assert_geq(st.syncs, 12);
        wal_close(w);

        /* recovery: the whole log so far, and where to go on */
        rd_result res = read_log(&f, 0, 0, &m, 0);
        cr_assert_eq(res.rc, ENG_NOTFOUND, "gen %u: %s after %zu records", gen, eng_strerror(res.rc), res.n);
        cr_assert_eq(res.n, m.n);
        cr_assert_eq(res.trimmed, 0);
        cr_assert_eq(res.max_gen, gen);
        start = res.end;
        prev = res.last;
    }
    expect_clean(&f, &m, 0, 0, 0);
    cr_assert_gt(m.r[m.n - 1].end / SEG, 10, "the log should span many segments");
    for (uint64_t s = 0; s <= m.r[m.n - 1].end / SEG; s++)
        cr_assert(seg_file_exists(&f, s * SEG), "segment %llu missing", (unsigned long long)s);
    /* a reader may start at any record boundary */
    size_t mid = m.n / 2;
    expect_clean(&f, &m, m.r[mid].lsn, m.r[mid - 1].lsn, mid);
    (void)appended_bytes;
    model_free(&m);
    fx_done(&f);
}

TU_BACKEND_TEST(wal, records_spanning_blocks_and_segments_read_back_exactly, .fini = tu_cleanup)
{
    fx f;
    fx_init(&f, *backend);
    model m = { 0 };
    wal *w = wopen(&f, 1, 0, 0, 8 * WAL_BLOCK, NULL);
    uint64_t seed = 1;

    /* a header straddling a block boundary: 4 bytes before it (then the
     * last sector's trailer), 28 after the next block's header */
    add(w, &m, 1, len_to_reach(wal_insert_lsn(w), WAL_BLOCK - 8), seed++);
    const mrec *r = add(w, &m, 1, 5000, seed++);
    cr_assert_eq(r->lsn % WAL_BLOCK, WAL_BLOCK - 8);
    /* an empty record whose header straddles */
    add(w, &m, 1, len_to_reach(wal_insert_lsn(w), WAL_BLOCK - 16), seed++);
    r = add(w, &m, 1, 0, seed++);
    cr_assert_eq(r->lsn % WAL_BLOCK, WAL_BLOCK - 16);
    /* a record ending exactly at a block end: the next opens the block */
    add(w, &m, 1, len_to_reach(wal_insert_lsn(w), 1024), seed++);
    r = add(w, &m, 1, len_to_reach(wal_insert_lsn(w), WAL_BLOCK), seed++);
    cr_assert_eq(r->lsn % WAL_BLOCK, 1024);
    cr_assert_eq(r->end % WAL_BLOCK, 0);
    r = add(w, &m, 1, 100, seed++);
    cr_assert_eq(r->lsn % WAL_BLOCK, WAL_BLOCK_HDR);
    wflush(w);

    /* a header straddling the segment boundary */
    while (wal_insert_lsn(w) < SEG - 2 * WAL_BLOCK)
        add(w, &m, 1, 1000, seed++);
    add(w, &m, 1, len_to_reach(wal_insert_lsn(w), WAL_BLOCK - 8), seed++);
    cr_assert_lt(wal_insert_lsn(w), SEG);
    if (wal_insert_lsn(w) < SEG - 8)
        add(w, &m, 1, len_to_reach(wal_insert_lsn(w), WAL_BLOCK - 8), seed++);
    r = add(w, &m, 1, 3 * WAL_BLOCK, seed++);
    cr_assert_eq(r->lsn, SEG - 8, "the header should straddle the segment boundary");
    /* a record spanning blocks and a whole segment, and one larger than
     * the buffer (which must grow) */
    r = add(w, &m, 1, SEG + 5000, seed++);
    cr_assert_lt(r->lsn / SEG, (r->end - 1) / SEG);
    add(w, &m, 1, 7, seed++);
    wflush(w);
    wal_close(w);

    expect_clean(&f, &m, 0, 0, 0);
    cr_assert(seg_file_exists(&f, 0) && seg_file_exists(&f, SEG) && seg_file_exists(&f, 2 * SEG));
    model_free(&m);
    fx_done(&f);
}

/* ==========================================================================
 * Group commit
 * ======================================================================== */

#define GC_THREADS 4
#define GC_ROUNDS 60
#define GC_FREE 300

typedef struct gc_thread {
    wal *w;
    int tid;
    pthread_barrier_t *bar; /* NULL: free running */
    int first, count;       /* sequence numbers [first, first + count) */
    int flushes, failures;
    uint64_t lsn[GC_ROUNDS + GC_FREE];
} gc_thread;

static uint64_t gc_seed(int tid, int seq)
{
    return ((uint64_t)tid << 32) | (uint64_t)seq;
}

static size_t gc_len(int tid, int seq)
{
    return 16 + (size_t)(tu_mix64(gc_seed(tid, seq)) % 3000);
}

/* Payload of thread TID's record SEQ: (tid, seq) then seeded bytes. */
static uint8_t *gc_payload(int tid, int seq, size_t *len)
{
    *len = gc_len(tid, seq);
    uint8_t *p = payload(*len, gc_seed(tid, seq));
    uint64_t id[2] = { (uint64_t)tid, (uint64_t)seq };
    memcpy(p, id, sizeof id);
    return p;
}

static void *gc_main(void *arg)
{
    gc_thread *t = arg;
    for (int seq = t->first; seq < t->first + t->count; seq++) {
        size_t len;
        uint8_t *p = gc_payload(t->tid, seq, &len);
        uint64_t end;
        int rc = wal_append(t->w, WAL_REC_BATCH, p, len, &t->lsn[seq], &end);
        free(p);
        if (t->bar)
            pthread_barrier_wait(t->bar); /* every thread has appended */
        if (rc == ENG_OK) {
            rc = wal_flush(t->w, end);
            t->flushes++;
        }
        if (rc != ENG_OK || wal_durable_lsn(t->w) < end)
            t->failures++;
    }
    return NULL;
}

static void gc_run(gc_thread *th, wal *w, pthread_barrier_t *bar, int first, int count)
{
    pthread_t tids[GC_THREADS];
    for (int i = 0; i < GC_THREADS; i++) {
        th[i].w = w;
        th[i].tid = i;
        th[i].bar = bar;
        th[i].first = first;
        th[i].count = count;
        th[i].flushes = th[i].failures = 0;
        cr_assert_eq(pthread_create(&tids[i], NULL, gc_main, &th[i]), 0);
    }
    for (int i = 0; i < GC_THREADS; i++)
        pthread_join(tids[i], NULL);
    for (int i = 0; i < GC_THREADS; i++)
        cr_assert_eq(th[i].failures, 0, "thread %d: an append or flush failed, or returned early", i);
}

TU_BACKEND_TEST(wal, concurrent_flushers_share_fsyncs_and_lose_nothing, .fini = tu_cleanup,
                .timeout = 120)
{
    fx f;
    fx_init(&f, *backend);
    wal *w = wopen(&f, 1, 0, 0, 8 * WAL_BLOCK, NULL);
    static gc_thread th[GC_THREADS];

    /* Phase 1, deterministic: in each round every thread appends, then all
     * four flush.  The first flusher's snapshot holds all four records, so
     * one fsync (two when the round crosses into a new segment) serves the
     * four calls; the others find their record durable. */
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, GC_THREADS);
    int syncs0 = hook_count(ENG_IO_SYNC);
    gc_run(th, w, &bar, 0, GC_ROUNDS);
    pthread_barrier_destroy(&bar);
    int flushes = 0;
    for (int i = 0; i < GC_THREADS; i++)
        flushes += th[i].flushes;
    int syncs = hook_count(ENG_IO_SYNC) - syncs0;
    cr_assert_gt(syncs, 0);
    cr_assert_lt(syncs, flushes, "%d fsyncs for %d flush calls: no group commit", syncs, flushes);
    cr_assert_leq(syncs, GC_ROUNDS + (int)(wal_insert_lsn(w) / SEG) + 1,
                  "%d fsyncs for %d rounds: flushers did not coalesce", syncs, GC_ROUNDS);

    /* Phase 2, free running: appends, buffer-full write-outs and flushes race. */
    gc_run(th, w, NULL, GC_ROUNDS, GC_FREE);
    wal_close(w);

    /* Every record of every thread reads back, each thread's in order. */
    wal_reader *r;
    cr_assert_eq(wal_reader_open(f.io, f.dir, SEG, 0, 0, &f.rep, &r), ENG_OK);
    int next[GC_THREADS] = { 0 };
    size_t total = 0;
    wal_record rec;
    int rc;
    while ((rc = wal_reader_next(r, &rec)) == ENG_OK) {
        cr_assert_geq(rec.len, 16);
        uint64_t id[2];
        memcpy(id, rec.payload, sizeof id);
        cr_assert_lt(id[0], GC_THREADS, "bad thread id %llu", (unsigned long long)id[0]);
        int tid = (int)id[0], seq = (int)id[1];
        cr_assert_eq(seq, next[tid], "thread %d: record %d where %d was due", tid, seq, next[tid]);
        cr_assert_eq(rec.lsn, th[tid].lsn[seq], "thread %d record %d: lsn", tid, seq);
        size_t len;
        uint8_t *p = gc_payload(tid, seq, &len);
        cr_assert_eq(rec.len, len);
        cr_assert(memcmp(p, rec.payload, len) == 0, "thread %d record %d: payload differs", tid, seq);
        free(p);
        next[tid]++;
        total++;
    }
    cr_assert_eq(rc, ENG_NOTFOUND, "the log ended with %s", eng_strerror(rc));
    for (int i = 0; i < GC_THREADS; i++)
        cr_assert_eq(next[i], GC_ROUNDS + GC_FREE, "thread %d: %d records read", i, next[i]);
    cr_assert_eq(total, (size_t)GC_THREADS * (GC_ROUNDS + GC_FREE));
    wal_reader_close(r);
    fx_done(&f);
}

/* ==========================================================================
 * Where the log ends (W3)
 * ======================================================================== */

/* Records of random sizes in segment 0, flushed one by one (so each block
 * written carries the witness of everything before it); returns the open
 * log. */
static wal *small_log(fx *f, model *m, int n, size_t last_len)
{
    wal *w = wopen(f, 1, 0, 0, 8 * WAL_BLOCK, NULL);
    tu_rng rng = { 7 };
    for (int i = 0; i < n; i++) {
        add(w, m, 1, i == n - 1 ? last_len : (size_t)tu_range(&rng, 100, 1500), tu_next(&rng));
        wflush(w);
    }
    cr_assert_lt(wal_insert_lsn(w), SEG);
    return w;
}

static void expect_trim_at(fx *f, const model *m, size_t keep)
{
    rd_result res = read_log(f, 0, 0, m, 0);
    char buf[2048];
    cr_assert_eq(res.rc, ENG_NOTFOUND, "expected a trim, got %s: %s", eng_strerror(res.rc),
                 tu_reports_str(&f->reps, buf, sizeof buf));
    cr_assert_eq(res.n, keep, "read %zu records, expected %zu", res.n, keep);
    cr_assert_eq(res.end, m->r[keep - 1].end);
    cr_assert_eq(res.last, m->r[keep - 1].lsn);
    cr_assert_eq(res.trimmed, 1, "the torn bytes were not reported as trimmed");
    cr_assert_eq(f->reps.total, 0, "a torn tail was reported: %s", tu_reports_str(&f->reps, buf, sizeof buf));
}

TU_BACKEND_TEST(wal, tail_truncated_mid_record_is_trimmed_and_log_reopens_there, .fini = tu_cleanup)
{
    fx f;
    fx_init(&f, *backend);
    model m = { 0 };
    wal *w = small_log(&f, &m, 30, 2500);
    wal_close(w);
    const mrec *last = &m.r[m.n - 1];
    char p[4096];
    seg_path(p, sizeof p, &f, 0);
    cr_assert_eq(truncate(p, (off_t)(last->lsn + last->len / 2)), 0);
    expect_trim_at(&f, &m, m.n - 1);

    /* recovery goes on from the trimmed end in a new generation */
    model_cut(&m, m.n - 1);
    w = wopen(&f, 2, m.r[m.n - 1].end, m.r[m.n - 1].lsn, 8 * WAL_BLOCK, NULL);
    model_reopen(&m, m.r[m.n - 1].end, 2);
    for (int i = 0; i < 20; i++)
        add(w, &m, 2, 700 + (size_t)i * 13, 1000 + (uint64_t)i);
    wflush(w);
    wal_close(w);
    expect_clean(&f, &m, 0, 0, 0);
    model_free(&m);
    fx_done(&f);
}

TU_BACKEND_TEST(wal, last_sectors_zeroed_are_a_torn_tail, .fini = tu_cleanup)
{
    fx f;
    fx_init(&f, *backend);
    model m = { 0 };
    wal *w = small_log(&f, &m, 30, 3000);
    uint64_t ins = wal_insert_lsn(w);
    wal_close(w);
    /* the last sector holding bytes of the last record, never synced
     * before that record's own flush: zero is its state before the write */
    uint64_t s0 = (ins - 1) & ~(uint64_t)(WAL_SECTOR - 1);
    cr_assert_gt(s0, m.r[m.n - 1].lsn);
    raw_zero(&f, s0, WAL_SECTOR);
    expect_trim_at(&f, &m, m.n - 1);
    model_free(&m);
    fx_done(&f);
}

TU_BACKEND_TEST(wal, bit_flip_in_synced_middle_is_corruption_naming_the_segment, .fini = tu_cleanup)
{
    fx f;
    fx_init(&f, *backend);
    model m = { 0 };
    wal *w = small_log(&f, &m, 40, 800);
    wal_close(w);

    /* a payload byte of a record in the middle, in the block it starts in */
    size_t victim = 12;
    while (m.r[victim].lsn % WAL_BLOCK + WAL_REC_HDR + 40 >= WAL_BLOCK)
        victim++;
    uint64_t at = m.r[victim].lsn + WAL_REC_HDR + 40;
    uint8_t b;
    raw_read(&f, at, &b, 1);
    b ^= 0x10;
    raw_write(&f, at, &b, 1);

    rd_result res = read_log(&f, 0, 0, &m, 0);
    char buf[2048];
    cr_assert_eq(res.rc, ENG_CORRUPTION, "a flipped bit in synced WAL gave %s after %zu records",
                 eng_strerror(res.rc), res.n);
    cr_assert_eq(res.n, victim);
    cr_assert(tu_reports_has(&f.reps, ENG_LAYER_WAL, SEG0, (int64_t)(m.r[victim].lsn / WAL_BLOCK)),
              "no wal_record report for %s block %llu: %s", SEG0,
              (unsigned long long)(m.r[victim].lsn / WAL_BLOCK), tu_reports_str(&f.reps, buf, sizeof buf));
    cr_assert_eq(f.reps.r[0].offset, (int64_t)m.r[victim].lsn);
    cr_assert_neq(f.reps.r[0].expected, f.reps.r[0].found, "expected/found should be the checksums");
    cr_assert(strstr(f.reps.r[0].detail, "checksum") != NULL, "detail: %s", f.reps.r[0].detail);
    model_free(&m);
    fx_done(&f);
}

/* The record at L lies in the last block, and that block was rewritten
 * (W1) after L was durable: its own header's witness is above L.  Even
 * with no later block, this is damage to synced WAL, not a torn tail. */
TU_BACKEND_TEST(wal, bit_flip_in_record_witnessed_by_its_own_block_is_corruption, .fini = tu_cleanup)
{
    fx f;
    fx_init(&f, *backend);
    model m = { 0 };
    wal *w = wopen(&f, 1, 0, 0, 4 * WAL_BLOCK, NULL);
    const mrec *a = add(w, &m, 1, 200, 1);
    uint64_t a_lsn = a->lsn;
    wflush(w);
    add(w, &m, 1, 200, 2);
    wflush(w); /* block 0 rewritten with witness = end of A */
    wal_close(w);
    cr_assert_lt(m.r[1].end, WAL_BLOCK, "both records in block 0");
    uint8_t b;
    raw_read(&f, a_lsn + WAL_REC_HDR + 5, &b, 1);
    b ^= 1;
    raw_write(&f, a_lsn + WAL_REC_HDR + 5, &b, 1);
    rd_result res = read_log(&f, 0, 0, &m, 0);
    cr_assert_eq(res.rc, ENG_CORRUPTION, "a flipped bit in a synced record gave %s", eng_strerror(res.rc));
    cr_assert_eq(res.n, 0);
    cr_assert(tu_reports_has(&f.reps, ENG_LAYER_WAL, SEG0, 0));
    model_free(&m);
    fx_done(&f);
}

/* Records appended after a flush and only written out (no fsync): their
 * blocks carry the witness of the flush, which lies below them. */
static void hole_log(fx *f, model *m, int synced_flushes, uint64_t *durable)
{
    wal *w = wopen(f, 1, 0, 0, 16 * WAL_BLOCK, NULL);
    for (int i = 0; i < 10; i++) {
        add(w, m, 1, 900, 500 + (uint64_t)i);
        wflush(w);
    }
    *durable = wal_durable_lsn(w);
    for (int i = 0; i < 30; i++) {
        add(w, m, 1, 1100, 600 + (uint64_t)i);
        if (synced_flushes)
            wflush(w);
    }
    cr_assert_eq(wal_write_out(w), ENG_OK);
    cr_assert_lt(wal_insert_lsn(w), SEG);
    wal_close(w);
}

TU_BACKEND_TEST(wal, hole_below_every_witness_is_a_trim_not_an_error, .fini = tu_cleanup)
{
    fx f;
    fx_init(&f, *backend);
    model m = { 0 };
    uint64_t durable;
    hole_log(&f, &m, 0, &durable);
    uint64_t hole = (durable / WAL_BLOCK + 3) * WAL_BLOCK; /* well after the synced part */
    cr_assert_lt(hole + WAL_BLOCK, m.r[m.n - 1].lsn, "valid blocks must follow the hole");
    raw_zero(&f, hole, WAL_BLOCK);
    size_t keep = 0;
    while (m.r[keep].end <= hole)
        keep++;
    expect_trim_at(&f, &m, keep);
    model_free(&m);
    fx_done(&f);
}

TU_BACKEND_TEST(wal, hole_below_a_later_witness_is_corruption, .fini = tu_cleanup)
{
    fx f;
    fx_init(&f, *backend);
    model m = { 0 };
    uint64_t durable;
    hole_log(&f, &m, 1, &durable);
    uint64_t hole = 3 * WAL_BLOCK; /* synced, and later flushes wrote witnesses past it */
    raw_zero(&f, hole, WAL_BLOCK);
    size_t keep = 0;
    while (m.r[keep].end <= hole)
        keep++;
    rd_result res = read_log(&f, 0, 0, &m, 0);
    cr_assert_eq(res.rc, ENG_CORRUPTION, "a lost synced block gave %s", eng_strerror(res.rc));
    cr_assert_eq(res.n, keep);
    cr_assert(tu_reports_has(&f.reps, ENG_LAYER_WAL, SEG0, -1));
    model_free(&m);
    fx_done(&f);
}

/* ==========================================================================
 * W3 (a): the log's last fsync group.  Nothing is written after it, so no
 * later witness can tell its damage from a tear: the sectors' own checks
 * must.  Tears follow the power-loss model of wal.h (each sector of an
 * unsynced write old or new; old = an earlier write, zeros or stale).
 * ======================================================================== */

static void reps_clear(fx *f)
{
    f->reps.n = f->reps.total = 0;
}

/* LSN of byte I (from 0) of the record at LSN. */
static uint64_t rec_byte_lsn(uint64_t lsn, uint64_t i)
{
    uint64_t x = wal_stream_advance(lsn, i);
    if (x % WAL_SECTOR >= WAL_SECTOR_DATA)
        x += WAL_SECTOR - x % WAL_SECTOR;
    if (x % WAL_BLOCK == 0)
        x += WAL_BLOCK_HDR;
    return x;
}

static void flip_at(const fx *f, uint64_t lsn, uint8_t mask)
{
    uint8_t b;
    raw_read(f, lsn, &b, 1);
    b ^= mask;
    raw_write(f, lsn, &b, 1);
}

/* Index of the record a damaged byte at LSN X stops the reader at: the
 * first whose bytes (padding included) reach past X.  A block header's
 * byte stops it at the record that runs into the block or, if none does,
 * the block's first record: the same rule. */
static size_t victim_of(const model *m, uint64_t x)
{
    size_t i = 0;
    while (i < m->n && m->r[i].end <= x)
        i++;
    return i;
}

static void expect_reported(fx *f, const model *m, size_t victim, const char *what)
{
    rd_result res = read_log(f, 0, 0, m, 0);
    char buf[2048];
    cr_assert_eq(res.rc, ENG_CORRUPTION, "%s: the log ended with %s after %zu records (trimmed=%d): damage to "
                 "synced records passed for a torn tail", what, eng_strerror(res.rc), res.n, res.trimmed);
    cr_assert_eq(res.n, victim, "%s: %zu records read before the report, expected %zu", what, res.n, victim);
    cr_assert(tu_reports_has(&f->reps, ENG_LAYER_WAL, SEG0, -1), "%s: no wal_record report naming %s: %s", what,
              SEG0, tu_reports_str(&f->reps, buf, sizeof buf));
    if (victim < m->n)
        cr_assert_eq(f->reps.r[0].offset, (int64_t)m->r[victim].lsn, "%s: the report names offset %lld", what,
                     (long long)f->reps.r[0].offset);
}

TU_BACKEND_TEST(wal, bit_flip_in_last_fsync_group_is_reported_not_trimmed, .fini = tu_cleanup)
{
    fx f;
    fx_init(&f, *backend);
    model m = { 0 };
    wal *w = wopen(&f, 1, 0, 0, 8 * WAL_BLOCK, NULL);
    tu_rng rng = { 0x12 };
    for (int i = 0; i < 10; i++) {
        add(w, &m, 1, (size_t)tu_range(&rng, 100, 900), tu_next(&rng));
        wflush(w);
    }
    size_t g0 = m.n;
    for (int i = 0; i < 6; i++)
        add(w, &m, 1, (size_t)tu_range(&rng, 300, 1500), tu_next(&rng));
    wflush(w); /* one fsync for the group; nothing is ever written after it */
    wal_close(w);
    expect_clean(&f, &m, 0, 0, 0);

    /* every record of the group, the very last one included */
    for (size_t v = g0; v < m.n; v++) {
        uint64_t at = rec_byte_lsn(m.r[v].lsn, WAL_REC_HDR + tu_below(&rng, m.r[v].len));
        uint8_t mask = (uint8_t)(1u << tu_below(&rng, 8));
        char what[128];
        snprintf(what, sizeof what, "record %zu of %zu, bit 0x%02x at LSN %llu", v, m.n, mask,
                 (unsigned long long)at);
        flip_at(&f, at, mask);
        reps_clear(&f);
        expect_reported(&f, &m, v, what);
        flip_at(&f, at, mask);
    }
    reps_clear(&f);
    expect_clean(&f, &m, 0, 0, 0);
    model_free(&m);
    fx_done(&f);
}

TU_BACKEND_TEST(wal, bit_flip_in_every_sector_of_the_last_block_is_reported, .fini = tu_cleanup)
{
    fx f;
    fx_init(&f, *backend);
    model m = { 0 };
    wal *w = wopen(&f, 1, 0, 0, 8 * WAL_BLOCK, NULL);
    tu_rng rng = { 0x13 };
    /* synced records one by one into block 1, up to its last sector */
    while (wal_insert_lsn(w) < WAL_BLOCK + 3000) {
        add(w, &m, 1, (size_t)tu_range(&rng, 100, 400), tu_next(&rng));
        wflush(w);
    }
    add(w, &m, 1, len_to_reach(wal_insert_lsn(w), 3792), tu_next(&rng));
    wflush(w);
    wal_close(w);
    uint64_t ins = m.r[m.n - 1].end, b = WAL_BLOCK;
    cr_assert_eq(ins, b + 3792);

    static const uint32_t offs[] = { 3, 100, 300, WAL_SECTOR_DATA - 1, WAL_SECTOR_DATA + 1 };
    for (uint32_t s = 0; s < WAL_BLOCK / WAL_SECTOR; s++) {
        for (size_t k = 0; k < sizeof offs / sizeof offs[0]; k++) {
            uint64_t x = b + s * WAL_SECTOR + offs[k];
            uint8_t mask = (uint8_t)(1u << tu_below(&rng, 8));
            char what[160];
            snprintf(what, sizeof what, "sector %u of the last block, byte %u (LSN %llu), bit 0x%02x", s, offs[k],
                     (unsigned long long)x, mask);
            flip_at(&f, x, mask);
            reps_clear(&f);
            if (offs[k] >= WAL_SECTOR_DATA || x >= ins) {
                /* A trailer, or the zeros after the last record: no record
                 * is lost; a report is allowed (wal.h W3: such damage
                 * cannot be told from damage to a record there). */
                rd_result res = read_log(&f, 0, 0, &m, 0);
                cr_assert(res.rc == ENG_NOTFOUND || res.rc == ENG_CORRUPTION, "%s: %s", what, eng_strerror(res.rc));
                cr_assert_eq(res.n, m.n, "%s: %zu of %zu records read", what, res.n, m.n);
            } else {
                expect_reported(&f, &m, victim_of(&m, x), what);
            }
            flip_at(&f, x, mask);
        }
    }
    reps_clear(&f);
    expect_clean(&f, &m, 0, 0, 0);
    model_free(&m);
    fx_done(&f);
}

/* A log synced to S1 in the middle of block 1, then a second group
 * appended and written in one flush: block 1 rewritten in place (W1) and
 * block 2 written partly.  OLD/NEW get blocks 1 and 2 as they were before
 * and after that write (block 2 before: zeros). */
typedef struct torn_fx {
    model m;
    size_t synced;
    uint64_t s1;
    uint8_t old1[WAL_BLOCK], new1[WAL_BLOCK], old2[WAL_BLOCK], new2[WAL_BLOCK];
} torn_fx;

static void torn_setup(fx *f, torn_fx *t)
{
    memset(t, 0, sizeof *t);
    wal *w = wopen(f, 1, 0, 0, 16 * WAL_BLOCK, NULL);
    tu_rng rng = { 0x14 };
    while (wal_insert_lsn(w) < WAL_BLOCK + 700) {
        add(w, &t->m, 1, (size_t)tu_range(&rng, 100, 600), tu_next(&rng));
        wflush(w);
    }
    t->synced = t->m.n;
    t->s1 = wal_insert_lsn(w);
    cr_assert_lt(t->s1, WAL_BLOCK + 1500);
    raw_read(f, WAL_BLOCK, t->old1, WAL_BLOCK);
    while (wal_insert_lsn(w) < 2 * WAL_BLOCK + 1500)
        add(w, &t->m, 1, (size_t)tu_range(&rng, 100, 700), tu_next(&rng));
    cr_assert_lt(wal_insert_lsn(w), 3 * WAL_BLOCK);
    wflush(w); /* one write of blocks 1 and 2, then its fsync */
    wal_close(w);
    raw_read(f, WAL_BLOCK, t->new1, WAL_BLOCK);
    raw_read(f, 2 * WAL_BLOCK, t->new2, WAL_BLOCK);
}

/* Put blocks 1 and 2 on disk as the tear MASK1/MASK2 leaves them: sector
 * i new where bit i is set, else old. */
static void torn_apply(fx *f, const torn_fx *t, unsigned mask1, unsigned mask2)
{
    uint8_t b1[WAL_BLOCK], b2[WAL_BLOCK];
    for (unsigned i = 0; i < WAL_BLOCK / WAL_SECTOR; i++) {
        memcpy(b1 + i * WAL_SECTOR, ((mask1 >> i) & 1 ? t->new1 : t->old1) + i * WAL_SECTOR, WAL_SECTOR);
        memcpy(b2 + i * WAL_SECTOR, ((mask2 >> i) & 1 ? t->new2 : t->old2) + i * WAL_SECTOR, WAL_SECTOR);
    }
    raw_write(f, WAL_BLOCK, b1, WAL_BLOCK);
    raw_write(f, 2 * WAL_BLOCK, b2, WAL_BLOCK);
}

static void expect_torn_trimmed(fx *f, const torn_fx *t, unsigned mask1, unsigned mask2)
{
    reps_clear(f);
    rd_result res = read_log(f, 0, 0, &t->m, 0);
    char buf[2048];
    cr_assert_eq(res.rc, ENG_NOTFOUND, "tear 0x%02x/0x%02x: the log ended with %s after %zu records: a tear "
                 "passed for damage: %s", mask1, mask2, eng_strerror(res.rc), res.n,
                 tu_reports_str(&f->reps, buf, sizeof buf));
    cr_assert_eq(f->reps.total, 0, "tear 0x%02x/0x%02x was reported: %s", mask1, mask2,
                 tu_reports_str(&f->reps, buf, sizeof buf));
    cr_assert_geq(res.n, t->synced, "tear 0x%02x/0x%02x: %zu records read, %zu were synced", mask1, mask2, res.n,
                  t->synced);
    if (mask1 == 0xff && mask2 == 0xff)
        cr_assert_eq(res.n, t->m.n);
}

TU_BACKEND_TEST(wal, tear_of_unsynced_tail_at_every_sector_subset_is_trimmed, .fini = tu_cleanup, .timeout = 120)
{
    fx f;
    fx_init(&f, *backend);
    static torn_fx t;
    torn_setup(&f, &t);
    /* the in-place rewrite of block 1, whose earlier version was synced */
    for (unsigned m1 = 0; m1 < 256; m1++) {
        torn_apply(&f, &t, m1, 0);
        expect_torn_trimmed(&f, &t, m1, 0);
    }
    /* block 2, a fresh block, under a complete block 1 */
    for (unsigned m2 = 0; m2 < 256; m2++) {
        torn_apply(&f, &t, 0xff, m2);
        expect_torn_trimmed(&f, &t, 0xff, m2);
    }
    /* both torn at once */
    tu_rng rng = { 0x15 };
    for (int i = 0; i < 128; i++) {
        unsigned m1 = (unsigned)tu_below(&rng, 256), m2 = (unsigned)tu_below(&rng, 256);
        torn_apply(&f, &t, m1, m2);
        expect_torn_trimmed(&f, &t, m1, m2);
    }
    model_free(&t.m);
    fx_done(&f);
}

TU_BACKEND_TEST(wal, zeroed_and_stale_sectors_after_the_end_are_trimmed, .fini = tu_cleanup)
{
    fx f;
    fx_init(&f, *backend);
    model m = { 0 };
    wal *w = wopen(&f, 1, 0, 0, 8 * WAL_BLOCK, NULL);
    tu_rng rng = { 0x16 };
    while (wal_insert_lsn(w) < 3 * WAL_BLOCK + 900) {
        add(w, &m, 1, (size_t)tu_range(&rng, 100, 900), tu_next(&rng));
        wflush(w);
    }
    wal_close(w);
    uint64_t ins = m.r[m.n - 1].end, b = blk_of_t(ins);
    uint32_t first = (uint32_t)((ins - b + WAL_SECTOR - 1) / WAL_SECTOR); /* first sector wholly after the end */
    uint8_t blk[WAL_BLOCK], stale[WAL_BLOCK], orig[WAL_BLOCK];
    raw_read(&f, b, orig, WAL_BLOCK);
    raw_read(&f, WAL_BLOCK, stale, WAL_BLOCK); /* valid sectors, from another position */

    for (int kind = 0; kind < 3; kind++) {
        memcpy(blk, orig, WAL_BLOCK);
        for (uint32_t s = first; s < WAL_BLOCK / WAL_SECTOR; s++) {
            uint32_t from = kind == 2 ? (uint32_t)tu_below(&rng, 8) : s; /* a stale sector from anywhere */
            if (kind == 0)
                memset(blk + s * WAL_SECTOR, 0, WAL_SECTOR);
            else
                memcpy(blk + s * WAL_SECTOR, stale + from * WAL_SECTOR, WAL_SECTOR);
        }
        raw_write(&f, b, blk, WAL_BLOCK);
        /* and a whole stale block after it: valid, at another position */
        if (kind == 0)
            raw_zero(&f, b + WAL_BLOCK, WAL_BLOCK);
        else
            raw_write(&f, b + WAL_BLOCK, stale, WAL_BLOCK);
        reps_clear(&f);
        rd_result res = read_log(&f, 0, 0, &m, 0);
        char buf[2048];
        cr_assert_eq(res.rc, ENG_NOTFOUND, "kind %d: %s: %s", kind, eng_strerror(res.rc),
                     tu_reports_str(&f.reps, buf, sizeof buf));
        cr_assert_eq(res.n, m.n, "kind %d: %zu of %zu records", kind, res.n, m.n);
        cr_assert_eq(f.reps.total, 0);
        cr_assert_eq(res.trimmed, kind != 0, "kind %d: trimmed = %d", kind, res.trimmed);
    }
    model_free(&m);
    fx_done(&f);
}

TU_BACKEND_TEST(wal, flip_in_unsynced_tail_may_be_reported_but_loses_no_synced_record, .fini = tu_cleanup,
                .timeout = 120)
{
    fx f;
    fx_init(&f, *backend);
    static torn_fx t;
    torn_setup(&f, &t);
    tu_rng rng = { 0x17 };
    int reported = 0;
    for (int i = 0; i < 300; i++) {
        unsigned m1 = (unsigned)tu_below(&rng, 256), m2 = (unsigned)tu_below(&rng, 256);
        torn_apply(&f, &t, m1, m2);
        uint64_t x = t.s1 + tu_below(&rng, 3 * WAL_BLOCK - t.s1);
        flip_at(&f, x, (uint8_t)(1u << tu_below(&rng, 8)));
        reps_clear(&f);
        rd_result res = read_log(&f, 0, 0, &t.m, 0);
        char buf[2048];
        cr_assert(res.rc == ENG_NOTFOUND || res.rc == ENG_CORRUPTION, "flip at %llu: %s", (unsigned long long)x,
                  eng_strerror(res.rc));
        cr_assert_geq(res.n, t.synced, "tear 0x%02x/0x%02x, flip at LSN %llu: %zu records read, %zu were synced",
                      m1, m2, (unsigned long long)x, res.n, t.synced);
        if (res.rc == ENG_CORRUPTION) {
            reported++;
            cr_assert(tu_reports_has(&f.reps, ENG_LAYER_WAL, SEG0, -1), "%s",
                      tu_reports_str(&f.reps, buf, sizeof buf));
        } else {
            cr_assert_eq(f.reps.total, 0);
        }
    }
    cr_assert_gt(reported, 0, "no flip was reported: the sectors' checks do nothing");
    model_free(&t.m);
    fx_done(&f);
}

/* ==========================================================================
 * W1: a partly filled block is rewritten, its records never change
 * ======================================================================== */

TU_BACKEND_TEST(wal, w1_rewriting_a_partial_block_keeps_earlier_records_identical, .fini = tu_cleanup)
{
    fx f;
    fx_init(&f, *backend);
    model m = { 0 };
    wal *w = wopen(&f, 1, 0, 0, 4 * WAL_BLOCK, NULL);
    const mrec *a = add(w, &m, 1, 300, 11);
    wflush(w);
    uint8_t blk1[WAL_BLOCK], blk2[WAL_BLOCK];
    raw_read(&f, 0, blk1, WAL_BLOCK);
    uint64_t a_lsn = a->lsn, a_end = a->end;
    /* zero-padded past the insert position (but for the trailer of the
     * sector A ends in) */
    for (size_t i = a_end; i < WAL_BLOCK; i++)
        cr_assert(blk1[i] == 0 || (i < 512 && i >= WAL_SECTOR_DATA), "byte %zu past the insert position is not zero", i);

    for (int round = 0; round < 5; round++) {
        add(w, &m, 1, 200 + (size_t)round * 300, 20 + (uint64_t)round);
        wflush(w);
        raw_read(&f, 0, blk2, WAL_BLOCK);
        cr_assert(memcmp(blk1 + a_lsn, blk2 + a_lsn, a_end - a_lsn) == 0,
                  "round %d: record A's bytes changed on disk", round);
        /* the header: position, generation, continuation and magic stay;
         * only the witness (and its checksum, and the trailers of sectors
         * that gained bytes) moves forward */
        cr_assert(memcmp(blk1, blk2, 8) == 0 && memcmp(blk1 + 16, blk2 + 16, 8) == 0);
        cr_assert_geq(rd64le(blk2 + 8), rd64le(blk1 + 8));
    }
    cr_assert_gt(rd64le(blk2 + 8), a_end, "the witness should have moved past A");
    wal_close(w);
    expect_clean(&f, &m, 0, 0, 0);
    model_free(&m);
    fx_done(&f);
}

/* ==========================================================================
 * Generations
 * ======================================================================== */

/* Each record fills one block's payload exactly (starting at block + 32),
 * so after a reopen the new generation's record can sit at the very LSN
 * of an old one and the old next block chains to it perfectly: only the
 * generation tells them apart. */
#define ONE_BLOCK_LEN (WB_PAYLOAD_T - WAL_REC_HDR)
#define WB_PAYLOAD_T WAL_BLOCK_PAYLOAD

TU_BACKEND_TEST(wal, reopen_in_new_generation_never_reads_stale_blocks_beyond_the_old_end,
                .fini = tu_cleanup)
{
    fx f;
    fx_init(&f, *backend);
    model m = { 0 };
    wal *w = wopen(&f, 1, 0, 0, 16 * WAL_BLOCK, NULL);
    for (int i = 0; i < 2; i++) {
        add(w, &m, 1, ONE_BLOCK_LEN, 100 + (uint64_t)i);
        wflush(w);
    }
    for (int i = 2; i < 10; i++)
        add(w, &m, 1, ONE_BLOCK_LEN, 100 + (uint64_t)i);
    cr_assert_eq(wal_write_out(w), ENG_OK); /* written, never synced */
    wal_close(w);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(m.r[i].lsn, (uint64_t)i * WAL_BLOCK + WAL_BLOCK_HDR);

    /* the write of block 2 was lost: the log ends after record 1 */
    raw_zero(&f, 2 * WAL_BLOCK, WAL_BLOCK);
    rd_result res = read_log(&f, 0, 0, &m, 0);
    cr_assert_eq(res.rc, ENG_NOTFOUND);
    cr_assert_eq(res.n, 2);
    cr_assert_eq(res.end, 2 * WAL_BLOCK);
    cr_assert_eq(res.trimmed, 1);
    cr_assert_eq(res.max_gen, 1);

    /* generation 2 writes a new record 2 at the old one's LSN */
    model_cut(&m, 2);
    w = wopen(&f, 2, res.end, res.last, 16 * WAL_BLOCK, NULL);
    const mrec *r2 = add(w, &m, 2, ONE_BLOCK_LEN, 999);
    cr_assert_eq(r2->lsn, 2 * WAL_BLOCK + WAL_BLOCK_HDR);
    wflush(w);
    wal_close(w);

    /* the trap is armed: block 3 is a valid generation-1 block at its own
     * position whose record names the new record 2 as its predecessor */
    uint8_t blk[WAL_BLOCK];
    raw_read(&f, 3 * WAL_BLOCK, blk, WAL_BLOCK);
    cr_assert_eq(rd64le(blk), 3 * WAL_BLOCK);
    cr_assert_eq(blk[16], 1, "stale block 3 should be generation 1");
    cr_assert_eq(rd64le(blk + WAL_BLOCK_HDR + 8), r2->lsn);

    res = read_log(&f, 0, 0, &m, 0);
    char buf[2048];
    cr_assert_eq(res.rc, ENG_NOTFOUND, "%s: %s", eng_strerror(res.rc), tu_reports_str(&f.reps, buf, sizeof buf));
    cr_assert_eq(res.n, 3, "stale generation-1 records were read after the new end");
    cr_assert_eq(res.end, 3 * WAL_BLOCK);
    cr_assert_eq(res.max_gen, 2);
    cr_assert_eq(f.reps.total, 0);
    model_free(&m);
    fx_done(&f);
}

/* ==========================================================================
 * Removing, recycling, archiving
 * ======================================================================== */

static uint8_t *slurp(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY);
    cr_assert(fd >= 0, "open %s: %s", path, strerror(errno));
    struct stat st;
    cr_assert_eq(fstat(fd, &st), 0);
    uint8_t *p = malloc((size_t)st.st_size + 1);
    cr_assert_eq(pread(fd, p, (size_t)st.st_size, 0), st.st_size);
    close(fd);
    *len = (size_t)st.st_size;
    return p;
}

/* Six and a bit segments of records, flushed as they go. */
static wal *long_log(fx *f, model *m, const char *archive)
{
    wal *w = wopen(f, 1, 0, 0, 4 * WAL_BLOCK, archive);
    uint64_t seed = 1;
    while (wal_insert_lsn(w) < 6 * SEG + 5000) {
        add(w, m, 1, 3000, seed++);
        if (seed % 4 == 0)
            wflush(w);
    }
    wflush(w);
    return w;
}

TU_BACKEND_TEST(wal, recycled_segment_stale_content_is_never_read_as_records, .fini = tu_cleanup)
{
    fx f;
    fx_init(&f, *backend);
    model m = { 0 };
    wal *w = long_log(&f, &m, NULL);
    cr_assert_eq(wal_remove_before(w, 4 * SEG), ENG_OK);
    wal_stats st;
    wal_get_stats(w, &st);
    cr_assert_eq(st.segments_recycled, 2);
    cr_assert_eq(st.segments_removed, 2);
    for (uint64_t s = 0; s < 4; s++)
        cr_assert(!seg_file_exists(&f, s * SEG), "segment %llu still there", (unsigned long long)s);
    cr_assert(seg_file_exists(&f, 7 * SEG) && seg_file_exists(&f, 8 * SEG), "no recycled spares");

    /* the stream enters the first spare and stops exactly at the end of
     * its third block: the next record would start in a stale block */
    uint64_t seed = 10000;
    while (wal_insert_lsn(w) < 7 * SEG + 2 * WAL_BLOCK)
        add(w, &m, 1, 3000, seed++);
    add(w, &m, 1, len_to_reach(wal_insert_lsn(w), WAL_BLOCK), seed++);
    uint64_t end = wal_insert_lsn(w);
    cr_assert_eq(end % WAL_BLOCK, 0);
    cr_assert_lt(end, 8 * SEG);
    wflush(w);
    wal_get_stats(w, &st);
    cr_assert_eq(st.segments_created, 7, "the spare should be reused, not created");
    wal_close(w);

    /* the spare keeps stale blocks right after the end: intact WAL blocks
     * (magic, checksum) of the same generation, from another position */
    uint8_t blk[WAL_BLOCK];
    raw_read(&f, end, blk, WAL_BLOCK);
    cr_assert_eq(blk[22] | blk[23] << 8, 0xA11E, "the stale block should look like a WAL block");
    cr_assert_eq(blk[16], 1);
    cr_assert_neq(rd64le(blk), end);

    size_t from = 0;
    while (m.r[from].lsn < 4 * SEG)
        from++;
    rd_result res = read_log(&f, m.r[from].lsn, m.r[from - 1].lsn, &m, from);
    char buf[2048];
    cr_assert_eq(res.rc, ENG_NOTFOUND, "%s: %s", eng_strerror(res.rc), tu_reports_str(&f.reps, buf, sizeof buf));
    cr_assert_eq(res.n, m.n - from);
    cr_assert_eq(res.end, m.r[m.n - 1].end);
    cr_assert_eq(res.trimmed, 1, "stale bytes after the end are trimmed bytes");
    cr_assert_eq(f.reps.total, 0);

    /* reading from before the removal point finds the segments gone */
    res = read_log(&f, 0, 0, &m, 0);
    cr_assert_eq(res.rc, ENG_NOTFOUND);
    cr_assert_eq(res.n, 0);
    model_free(&m);
    fx_done(&f);
}

TU_BACKEND_TEST(wal, archive_receives_identical_copies_of_removed_segments, .fini = tu_cleanup)
{
    fx f;
    fx_init(&f, *backend);
    const char *arch = tu_tmpdir();
    model m = { 0 };
    wal *w = long_log(&f, &m, arch);
    uint8_t *orig[4];
    size_t olen[4], total = 0;
    for (int s = 0; s < 4; s++) {
        char p[4096];
        seg_path(p, sizeof p, &f, (uint64_t)s * SEG);
        orig[s] = slurp(p, &olen[s]);
        total += olen[s];
    }
    int dirsyncs = hook_count(ENG_IO_DIRSYNC);
    cr_assert_eq(wal_remove_before(w, 4 * SEG + 100), ENG_OK);
    cr_assert_geq(hook_count(ENG_IO_DIRSYNC) - dirsyncs, 2, "archive dir and wal dir must be synced");
    for (int s = 0; s < 4; s++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%016llx", arch, (unsigned long long)s * SEG);
        size_t len;
        uint8_t *copy = slurp(p, &len);
        cr_assert_eq(len, olen[s], "segment %d: archived %zu bytes of %zu", s, len, olen[s]);
        cr_assert(memcmp(copy, orig[s], len) == 0, "segment %d: the archive copy differs", s);
        free(copy);
        free(orig[s]);
        cr_assert(!seg_file_exists(&f, (uint64_t)s * SEG));
    }
    wal_stats st;
    wal_get_stats(w, &st);
    cr_assert_eq(st.segments_archived, 4);
    cr_assert_eq(st.archive_bytes, total);
    /* the log still works and reads from the first kept record */
    add(w, &m, 1, 10, 5);
    wflush(w);
    wal_close(w);
    size_t from = 0;
    while (m.r[from].lsn < 4 * SEG)
        from++;
    rd_result res = read_log(&f, m.r[from].lsn, m.r[from - 1].lsn, &m, from);
    cr_assert_eq(res.rc, ENG_NOTFOUND);
    cr_assert_eq(res.n, m.n - from);
    model_free(&m);
    fx_done(&f);
}

TU_BACKEND_TEST(wal, remove_before_keeps_segments_not_yet_durable, .fini = tu_cleanup)
{
    fx f;
    fx_init(&f, *backend);
    model m = { 0 };
    wal *w = wopen(&f, 1, 0, 0, 4 * WAL_BLOCK, NULL);
    add(w, &m, 1, 100, 1);
    wflush(w);
    while (wal_insert_lsn(w) < 3 * SEG)
        add(w, &m, 1, 3000, m.n + 1); /* written out as the buffer fills, not synced */
    cr_assert_eq(wal_remove_before(w, 3 * SEG), ENG_OK);
    cr_assert(seg_file_exists(&f, 0), "a segment with unsynced records was removed");
    wflush(w);
    cr_assert_eq(wal_remove_before(w, 2 * SEG), ENG_OK);
    cr_assert(!seg_file_exists(&f, 0) && seg_file_exists(&f, 2 * SEG));
    wal_close(w);
    model_free(&m);
    fx_done(&f);
}

/* ==========================================================================
 * W4: failures poison
 * ======================================================================== */

static void expect_poisoned(wal *w)
{
    uint8_t x = 1;
    uint64_t s, e;
    cr_assert_eq(wal_append(w, WAL_REC_BATCH, &x, 1, &s, &e), ENG_POISONED);
    cr_assert_eq(wal_flush(w, wal_insert_lsn(w)), ENG_POISONED);
    cr_assert_eq(wal_flush(w, 0), ENG_POISONED);
    cr_assert_eq(wal_write_out(w), ENG_POISONED);
}

TU_BACKEND_TEST(wal, w4_failed_write_fails_the_flush_and_poisons_the_log, .fini = tu_cleanup)
{
    fx f;
    fx_init(&f, *backend);
    model m = { 0 };
    wal *w = wopen(&f, 1, 0, 0, 4 * WAL_BLOCK, NULL);
    add(w, &m, 1, 500, 1);
    wflush(w);
    uint64_t durable = wal_durable_lsn(w);
    add(w, &m, 1, 500, 2);
    hook_fail(ENG_IO_WRITE, EIO);
    int rc = wal_flush(w, wal_insert_lsn(w));
    cr_assert_eq(rc, ENG_IOERR, "flush over a failing write returned %s", eng_strerror(rc));
    cr_assert_eq(wal_durable_lsn(w), durable, "a failed flush moved durable_lsn");
    hook_fail(-1, 0);
    expect_poisoned(w);
    wal_close(w);
    model_cut(&m, 1);
    expect_clean(&f, &m, 0, 0, 0);
    model_free(&m);
    fx_done(&f);
}

TU_BACKEND_TEST(wal, w4_failed_write_out_in_append_poisons, .fini = tu_cleanup)
{
    fx f;
    fx_init(&f, *backend);
    model m = { 0 };
    wal *w = wopen(&f, 1, 0, 0, 4 * WAL_BLOCK, NULL);
    hook_fail(ENG_IO_WRITE, ENOSPC);
    uint8_t *p = payload(3000, 1);
    int rc = ENG_OK;
    for (int i = 0; i < 10 && rc == ENG_OK; i++)
        rc = wal_append(w, WAL_REC_BATCH, p, 3000, NULL, NULL);
    free(p);
    cr_assert_eq(rc, ENG_NOSPACE, "the buffer-full write-out failure gave %s", eng_strerror(rc));
    hook_fail(-1, 0);
    expect_poisoned(w);
    wal_close(w);
    model_free(&m);
    fx_done(&f);
}

TU_BACKEND_TEST(wal, w4_failed_fsync_poisons_and_is_never_retried, .fini = tu_cleanup)
{
    fx f;
    fx_init(&f, *backend);
    model m = { 0 };
    wal *w = wopen(&f, 1, 0, 0, 4 * WAL_BLOCK, NULL);
    add(w, &m, 1, 500, 1);
    hook_fail(ENG_IO_SYNC, EIO);
    int syncs = hook_count(ENG_IO_SYNC);
    cr_assert_eq(wal_flush(w, wal_insert_lsn(w)), ENG_IOERR);
    cr_assert_eq(hook_count(ENG_IO_SYNC) - syncs, 1, "exactly one fsync attempt");
    cr_assert_eq(wal_durable_lsn(w), 0);
    hook_fail(-1, 0);
    expect_poisoned(w);
    cr_assert_eq(hook_count(ENG_IO_SYNC) - syncs, 1, "the fsync was retried");
    wal_close(w);
    model_free(&m);
    fx_done(&f);
}

/* ==========================================================================
 * Odds and ends
 * ======================================================================== */

TU_BACKEND_TEST(wal, reader_of_a_missing_log_ends_at_its_start, .fini = tu_cleanup)
{
    fx f;
    fx_init(&f, *backend);
    model m = { 0 };
    rd_result res = read_log(&f, 0, 0, &m, 0);
    cr_assert_eq(res.rc, ENG_NOTFOUND);
    cr_assert_eq(res.n, 0);
    cr_assert_eq(res.end, 0);
    cr_assert_eq(res.trimmed, 0);
    cr_assert_eq(wal_guess_seg_size(f.dir), 0);
    fx_done(&f);
}

TU_BACKEND_TEST(wal, wrong_predecessor_in_synced_log_is_corruption, .fini = tu_cleanup)
{
    fx f;
    fx_init(&f, *backend);
    model m = { 0 };
    wal *w = small_log(&f, &m, 20, 400);
    wal_close(w);
    rd_result res = read_log(&f, m.r[5].lsn, m.r[3].lsn, &m, 5);
    cr_assert_eq(res.rc, ENG_CORRUPTION, "a broken chain in synced WAL gave %s", eng_strerror(res.rc));
    cr_assert_eq(res.n, 0);
    model_free(&m);
    fx_done(&f);
}

TU_BACKEND_TEST(wal, guess_seg_size_from_segment_names, .fini = tu_cleanup)
{
    fx f;
    fx_init(&f, *backend);
    model m = { 0 };
    wal *w = wopen(&f, 1, 0, 0, 4 * WAL_BLOCK, NULL);
    add(w, &m, 1, 1000, 1);
    wflush(w);
    cr_assert_eq(wal_guess_seg_size(f.dir), SEG, "one small segment rounds up to the minimum");
    while (wal_insert_lsn(w) < 2 * SEG + 100)
        add(w, &m, 1, 5000, m.n + 1);
    wflush(w);
    cr_assert_eq(wal_guess_seg_size(f.dir), SEG);
    wal_close(w);
    model_free(&m);
    fx_done(&f);
}

Test(wal_sector, crc32c_is_the_standard_function_and_trailers_check_their_sector)
{
    cr_assert_eq(crc32c(0, "123456789", 9), 0xE3069283u, "CRC32C check value");
    cr_assert_eq(crc32c(crc32c(0, "1234", 4), "56789", 5), 0xE3069283u, "continuation");
    uint8_t s[WAL_SECTOR];
    memset(s, 0, sizeof s);
    cr_assert(wal_sector_valid(s), "an all-zero sector is \"never written\", valid");
    tu_fill(s, WAL_SECTOR_DATA, 99);
    cr_assert_not(wal_sector_valid(s), "data under a zero trailer");
    wal_sector_seal(s);
    cr_assert(wal_sector_valid(s));
    for (unsigned bit = 0; bit < 8 * WAL_SECTOR; bit++) {
        s[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        cr_assert_not(wal_sector_valid(s), "a flip of bit %u passes the sector's check", bit);
        s[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
}

TU_BACKEND_TEST(wal, bad_arguments_are_rejected, .fini = tu_cleanup)
{
    fx f;
    fx_init(&f, *backend);
    wal_config c = { .io = f.io, .dir = f.dir, .seg_size = SEG, .buffer_size = 4 * WAL_BLOCK, .gen = 1 };
    wal *w = NULL;
    wal_config bad = c;
    bad.seg_size = 3 * SEG;
    cr_assert_eq(wal_open(&bad, &w), ENG_INVALID);
    bad = c;
    bad.buffer_size = WAL_BLOCK;
    cr_assert_eq(wal_open(&bad, &w), ENG_INVALID);
    bad = c;
    bad.start_lsn = WAL_BLOCK + 8; /* inside a block header */
    cr_assert_eq(wal_open(&bad, &w), ENG_INVALID);
    cr_assert_eq(wal_open(&c, &w), ENG_OK);
    uint64_t s, e;
    cr_assert_eq(wal_append(w, 0, "x", 1, &s, &e), ENG_INVALID);
    cr_assert_eq(wal_append(w, WAL_REC_TYPE_MAX + 1, "x", 1, &s, &e), ENG_INVALID);
    cr_assert_eq(wal_append(w, WAL_REC_BATCH, NULL, 0, &s, &e), ENG_OK);
    cr_assert_eq(s, WAL_BLOCK_HDR);
    cr_assert_eq(e, WAL_BLOCK_HDR + WAL_REC_HDR);
    wal_close(w);
    wal_reader *r;
    cr_assert_eq(wal_reader_open(f.io, f.dir, SEG, 12, 0, NULL, &r), ENG_INVALID);
    fx_done(&f);
}
