/*
 * test_mvcc.c -- transactions, snapshots, hint bits and vacuum (issue 6;
 * DESIGN 3.4, 3.5): what each promises in engine.h, proven from outside.
 *
 * A version's fate is what a reader sees; these tests never look inside
 * a page's cells.  They model every key's generation (cu_val(i, gen):
 * the value is a pure function of index and generation; -1 = absent) and
 * compare gets, eng_get_at and iterators, latest and under snapshots,
 * against the model.  Crashes are children (crashutil.h's cu_fork) that
 * die inside an I/O hook; torn pages are built by hand from the bytes
 * before and after a write-back, 512-byte sector by sector.
 *
 * Tests:
 *   batch_failed_by_read_error_leaves_no_trace      a read of the 2nd op's
 *       leaf fails (cold 16-page cache): eng_write fails; aborted (handle
 *       goes on) or poisoned, none of the batch is visible now or after
 *       reopen; vacuum leaves exactly the live versions.  Per I/O backend.
 *   batch_cut_by_crash_leaves_no_trace               a 30,000-op batch
 *       (overwrites, deletes, inserts) killed mid-way (_exit or SIGKILL
 *       from a write hook: before its record is whole, after pages were
 *       evicted, or at a data write): once its record is in the log,
 *       recovery counts it in txns_aborted; none of it is visible (to a
 *       read-only open too), verify is clean, vacuum leaves exactly the
 *       live versions, and a second reopen agrees.
 *   snapshot_reads_old_values_across_writes_and_vacuum
 *       two snapshots held across 4,000 batches (overwrites and deletes
 *       of keys they saw, new keys), a checkpoint and vacuums: eng_get_at
 *       and snapshot iterators (both ways) return exactly their state, the
 *       latest view the new one; after release, vacuum removes the old
 *       versions (removed > 0, a second pass finds only live versions),
 *       verify is clean, reopen agrees.
 *   hint_only_page_torn_by_crash_reads_back_clean    (hint_fpi 0) and
 *   hint_only_page_torn_by_crash_repaired_by_image   (hint_fpi 1):
 *       checksums on; load, close, reopen, read every row (hints_set
 *       grows), checkpoint (hint_pages_written grows); the state at the
 *       checkpoint's data fsync is taken as the crash, and every page the
 *       write-back changed is torn at 512-byte sectors (prefix, suffix,
 *       random mixes of old and new): each torn copy opens with no report,
 *       verify is clean, every value is right.
 *   hint_only_writes_log_wal_only_when_asked         (parameterized)
 *       read-everything + checkpoint against checkpoint alone on an
 *       identical database: without wal_log_hints and hint_fpi (checksums
 *       off or on) the WAL grows by exactly the same bytes and
 *       hint_wal_records stays 0; with wal_log_hints, or hint_fpi with
 *       checksums, it logs hint records.
 *   vacuum_freeze_min_age_0_freezes_every_version
 *   first_vacuum_after_load_sets_hints_not_freezes   (default min age)
 *   vacuum_freezes_only_versions_older_than_min_age  (whole batches, by age)
 *   vacuum_freezes_nothing_a_snapshot_must_not_see
 *       each: reopen afterwards is clean and reads every value.
 *   readers_during_a_batch_see_it_whole_and_hide_nothing_after_commit
 *       a reader thread gets and scans while a 20,000-op batch is applied
 *       (its pages evicted and read back): no scan sees part of it, no
 *       get sees the state before it once one saw the state after it, and
 *       the hints readers set on its versions in progress hide nothing
 *       after the commit (now and after reopen).
 *   commit_hint_never_reaches_disk_before_the_commit
 *       sync off: a batch is read (hints) and its leaves are evicted, then
 *       a crash: the batch is wholly present or absent (present if its
 *       sequence was durable), never kept in part by hinted pages.
 *   large_values_snapshot_keeps_old_chains_and_vacuum_frees_them
 *       overflow values overwritten and deleted under a snapshot read back
 *       exactly; after release vacuum frees their pages, and six
 *       overwrite + vacuum cycles do not grow the file (pages reused).
 *   snapshot_read_concurrently_with_writes_and_vacuums_stays_exact
 *       a thread reads a snapshot (gets and scans) over and over while
 *       the writer overwrites, deletes, inserts, vacuums (freezing all it
 *       may) and checkpoints: every answer is the snapshot's.
 *   crash_during_vacuum_changes_nothing_readers_see
 *       vacuum (removing, freezing, evicting through a 16-page cache) cut
 *       by a crash before a WAL write, before a data write, or with the
 *       data write torn at 512-byte sectors: every value is right, verify
 *       clean, and a second vacuum leaves exactly the live versions.
 *   crash_among_hints_and_aborts_keeps_exact_commits  (parameterized:
 *       checksums, wal_log_hints, hint_fpi) small batches with read errors
 *       injected into writes (aborted, or poisoned when in doubt), reads
 *       setting hints, a 16-page cache and frequent checkpoints, SIGKILL:
 *       recovery keeps exactly the acknowledged commits, the batch in
 *       doubt whole or not at all, no aborted batch.
 *   same_key_twice_in_a_batch_last_op_wins
 *       put+put, put+delete, delete+put, put+delete+put of one key in one
 *       batch (on old and new keys, leaves splitting): the last op wins
 *       for readers; a snapshot from before sees none of it; vacuum leaves
 *       only live versions; verify is clean; reopen agrees.
 *   key_written_twice_in_a_committed_batch_recovers_after_crash
 *       the same batch acknowledged (sync commit), then a crash: the
 *       database opens and reads the last op's values.
 *   aborted_delete_stays_undone_and_its_overflow_pages_are_freed
 *       a batch (delete, a 20,000-byte value, a put whose leaf read fails)
 *       aborts without poisoning: the deleted key stays visible through
 *       reads, hints, checkpoint and vacuum; vacuum frees the aborted
 *       value's overflow pages and the next value as large reuses them.
 *   iterator_reads_the_state_at_its_open
 *       an iterator half-way through while everything is overwritten,
 *       some keys deleted and vacuum runs: it goes on with the state at
 *       its open, both ways.
 * Seeds derive from CU_SEED (environment); messages name them.
 */
#include <stdatomic.h>

#include "crashutil.h"

#define T_OPTS .timeout = 120, .fini = cu_fini

#define PS 4096u

/* ---- the model and its checks -------------------------------------------- */

/* gen[i] >= 0: key i holds cu_val(i, gen[i]); -1: absent. */
static size_t mv_val(uint8_t buf[CU_VMAX], uint64_t i, int32_t gen) {
    return cu_val(buf, i, (uint32_t)gen, 0, 0);
}

static int32_t *gens_new(uint64_t n) {
    int32_t *g = malloc(n * sizeof *g);
    cr_assert(g != NULL);
    for (uint64_t i = 0; i < n; i++) g[i] = -1;
    return g;
}

static int32_t *gens_dup(const int32_t *g, uint64_t n) {
    int32_t *c = malloc(n * sizeof *c);
    cr_assert(c != NULL);
    memcpy(c, g, n * sizeof *c);
    return c;
}

static uint64_t gens_live(const int32_t *g, uint64_t n) {
    uint64_t c = 0;
    for (uint64_t i = 0; i < n; i++) c += g[i] >= 0;
    return c;
}

/* Every key 0..N-1 (and key N) read through eng_get_at(S) must match G. */
static void check_gets(eng_db *db, const eng_snapshot *s, const int32_t *g, uint64_t n, const char *what) {
    eng_buf b = { 0 };
    char k[CU_KLEN + 1];
    uint8_t want[CU_VMAX];
    for (uint64_t i = 0; i <= n; i++) {
        size_t kl = cu_key(k, i);
        int rc = eng_get_at(db, s, k, kl, &b);
        if (i == n || g[i] < 0) {
            uint32_t h[3] = { 0, 0, 0 };
            if (rc == ENG_OK && b.len >= sizeof h) memcpy(h, b.data, sizeof h);
            cr_assert_eq(rc, ENG_NOTFOUND, "%s: key %llu should be absent, get returned %s (len %zu, header: "
                         "index %u gen %u)", what, (unsigned long long)i, eng_strerror(rc), b.len, h[0], h[1]);
            continue;
        }
        cr_assert_eq(rc, ENG_OK, "%s: key %llu (gen %d): get returned %s", what, (unsigned long long)i, g[i],
                     eng_strerror(rc));
        size_t wl = mv_val(want, i, g[i]);
        uint32_t h[3] = { 0, 0, 0 };
        if (b.len >= sizeof h) memcpy(h, b.data, sizeof h);
        cr_assert(tu_bytes_eq(b.data, b.len, want, wl),
                  "%s: key %llu: wrong value (want gen %d, found index %u gen %u, len %zu want %zu)", what,
                  (unsigned long long)i, g[i], h[0], h[1], b.len, wl);
    }
    eng_buf_free(&b);
}

/* An iterator on snapshot S (NULL: its own) must list exactly the live
 * keys of G with their values, forward and backward. */
static void check_scan(eng_db *db, const eng_snapshot *s, const int32_t *g, uint64_t n, const char *what) {
    eng_iter *it = NULL;
    eng_iter_options io = { 0 };
    io.snapshot = s;
    int rc = eng_iter_open(db, &io, &it);
    cr_assert_eq(rc, ENG_OK, "%s: eng_iter_open: %s", what, eng_strerror(rc));
    uint8_t want[CU_VMAX];
    uint64_t next = 0, seen = 0;
    for (rc = eng_iter_first(it); rc == ENG_OK; rc = eng_iter_next(it), seen++) {
        while (next < n && g[next] < 0) next++;
        size_t kl, vl;
        const void *k = eng_iter_key(it, &kl), *v = eng_iter_value(it, &vl);
        int64_t idx = cu_key_index(k, kl);
        cr_assert(next < n, "%s: fwd scan: key %lld after the last live key", what, (long long)idx);
        cr_assert_eq(idx, (int64_t)next, "%s: fwd scan: key %lld where key %llu (gen %d) was due", what,
                     (long long)idx, (unsigned long long)next, g[next]);
        size_t wl = mv_val(want, next, g[next]);
        cr_assert(tu_bytes_eq(v, vl, want, wl), "%s: fwd scan: key %llu: wrong value (want gen %d)", what,
                  (unsigned long long)next, g[next]);
        next++;
    }
    cr_assert_eq(rc, ENG_NOTFOUND, "%s: fwd scan ended with %s", what, eng_strerror(rc));
    cr_assert_eq(seen, gens_live(g, n), "%s: fwd scan saw %llu keys, %llu live", what, (unsigned long long)seen,
                 (unsigned long long)gens_live(g, n));
    int64_t prev = (int64_t)n;
    seen = 0;
    for (rc = eng_iter_last(it); rc == ENG_OK; rc = eng_iter_prev(it), seen++) {
        prev--;
        while (prev >= 0 && g[prev] < 0) prev--;
        size_t kl, vl;
        const void *k = eng_iter_key(it, &kl), *v = eng_iter_value(it, &vl);
        int64_t idx = cu_key_index(k, kl);
        cr_assert(prev >= 0, "%s: bwd scan: key %lld before the first live key", what, (long long)idx);
        cr_assert_eq(idx, prev, "%s: bwd scan: key %lld where key %lld was due", what, (long long)idx,
                     (long long)prev);
        size_t wl = mv_val(want, (uint64_t)prev, g[prev]);
        cr_assert(tu_bytes_eq(v, vl, want, wl), "%s: bwd scan: key %lld: wrong value", what, (long long)prev);
    }
    cr_assert_eq(rc, ENG_NOTFOUND, "%s: bwd scan ended with %s", what, eng_strerror(rc));
    cr_assert_eq(seen, gens_live(g, n), "%s: bwd scan saw %llu keys", what, (unsigned long long)seen);
    eng_iter_close(it);
}

static void check_all(eng_db *db, const eng_snapshot *s, const int32_t *g, uint64_t n, const char *what) {
    check_gets(db, s, g, n, what);
    check_scan(db, s, g, n, what);
}

/* ---- writing -------------------------------------------------------------- */

typedef struct batch {
    eng_op *ops;
    char (*keys)[CU_KLEN + 1];
    uint8_t (*vals)[CU_VMAX];
    size_t n, cap;
} batch;

static void batch_init(batch *b, size_t cap) {
    b->ops = calloc(cap, sizeof *b->ops);
    b->keys = calloc(cap, sizeof *b->keys);
    b->vals = calloc(cap, sizeof *b->vals);
    cr_assert(b->ops && b->keys && b->vals);
    b->n = 0;
    b->cap = cap;
}
static void batch_free(batch *b) {
    free(b->ops);
    free(b->keys);
    free(b->vals);
    memset(b, 0, sizeof *b);
}
/* Put key I at GEN, or delete it when GEN < 0. */
static void batch_add(batch *b, uint64_t i, int32_t gen) {
    cr_assert(b->n < b->cap);
    size_t j = b->n++;
    size_t kl = cu_key(b->keys[j], i);
    if (gen < 0) {
        b->ops[j] = (eng_op){ .kind = ENG_OP_DELETE, .key = b->keys[j], .klen = kl };
    } else {
        size_t vl = mv_val(b->vals[j], i, gen);
        b->ops[j] = (eng_op){ .kind = ENG_OP_PUT, .key = b->keys[j], .klen = kl, .val = b->vals[j], .vlen = vl };
    }
}

/* Keys FROM..TO-1 at generation 0 in batches of PER: G records them.
 * Returns the last sequence. */
static uint64_t load_keys(eng_db *db, int32_t *g, uint64_t from, uint64_t to, size_t per) {
    batch b;
    batch_init(&b, per);
    uint64_t seq = 0;
    for (uint64_t i = from; i < to;) {
        b.n = 0;
        for (; i < to && b.n < per; i++) {
            batch_add(&b, i, 0);
            if (g) g[i] = 0;
        }
        int rc = eng_write(db, b.ops, b.n, &seq);
        cr_assert_eq(rc, ENG_OK, "load: eng_write of keys up to %llu: %s", (unsigned long long)i, eng_strerror(rc));
    }
    batch_free(&b);
    return seq;
}

/* ---- options and small helpers ----------------------------------------------- */

static eng_options mv_opts(int backend, size_t cache_pages) {
    eng_options o;
    eng_options_init(&o);
    o.io_backend = backend;
    o.page_size = PS;
    o.cache_size = cache_pages * PS;
    o.sync_mode = ENG_SYNC_OFF;
    o.wal_segment_size = 256u << 10;
    o.checkpoint_wal_bytes = 0; /* only explicit checkpoints: WAL figures stay comparable */
    return o;
}

static void fresh_dir(const char *path) {
    tu_rm_rf(path);
    cr_assert(mkdir(path, 0700) == 0, "mkdir %s: %s", path, strerror(errno));
}

static eng_stats stats_of(eng_db *db) {
    eng_stats st;
    memset(&st, 0, sizeof st);
    int rc = eng_get_stats(db, &st);
    cr_assert_eq(rc, ENG_OK, "eng_get_stats: %s", eng_strerror(rc));
    return st;
}

static eng_vacuum_stats vacuum(eng_db *db, const char *what) {
    eng_vacuum_stats vs;
    memset(&vs, 0, sizeof vs);
    int rc = eng_vacuum(db, &vs);
    cr_assert_eq(rc, ENG_OK, "%s: eng_vacuum: %s", what, eng_strerror(rc));
    cr_log_info("%s: vacuum: leaves %llu versions %llu removed %llu frozen %llu hinted %llu horizon %llu", what,
                (unsigned long long)vs.leaves, (unsigned long long)vs.versions, (unsigned long long)vs.removed,
                (unsigned long long)vs.frozen, (unsigned long long)vs.hinted, (unsigned long long)vs.horizon);
    return vs;
}

/* Versions a vacuum pass left behind.  engine.h does not say whether
 * eng_vacuum_stats.versions counts the versions examined or those kept;
 * either reading is accepted when it gives LIVE (what removed can tell
 * apart: it must be the examined count minus removed, or the kept count). */
static int vacuum_kept_is(const eng_vacuum_stats *v, uint64_t live) {
    return v->versions == live || (v->versions >= v->removed && v->versions - v->removed == live);
}

/* Vacuum with no snapshot held: afterwards only live versions remain, so
 * this pass must leave exactly LIVE of them, and a second pass must find
 * nothing to remove and LIVE versions. */
static void vacuum_leaves_only_live(eng_db *db, uint64_t live, const char *what) {
    eng_vacuum_stats a = vacuum(db, what);
    cr_assert(vacuum_kept_is(&a, live), "%s: vacuum counted %llu versions and removed %llu; %llu keys are live",
              what, (unsigned long long)a.versions, (unsigned long long)a.removed, (unsigned long long)live);
    eng_vacuum_stats b = vacuum(db, what);
    cr_assert_eq(b.removed, 0, "%s: a second vacuum removed %llu more versions", what, (unsigned long long)b.removed);
    cr_assert_eq(b.versions, live, "%s: a second vacuum saw %llu versions, %llu keys are live", what,
                 (unsigned long long)b.versions, (unsigned long long)live);
}

static eng_db *open_checked(const char *dir, const eng_options *o, tu_reports *rep, const char *what) {
    eng_options oo = *o;
    if (rep) {
        oo.on_corruption = tu_collect;
        oo.on_corruption_ctx = rep;
    }
    eng_db *db = NULL;
    int rc = eng_open(dir, &oo, &db);
    char buf[2048] = "";
    cr_assert_eq(rc, ENG_OK, "%s: eng_open: %s\n%s", what, eng_strerror(rc),
                 rep ? tu_reports_str(rep, buf, sizeof buf) : "");
    return db;
}

static int ends_with(const char *s, const char *suffix) {
    size_t a = s ? strlen(s) : 0, b = strlen(suffix);
    return s && a >= b && !strcmp(s + a - b, suffix);
}
static int is_data_file(const eng_io_op *op) { return ends_with(op->path, "/data"); }
static int is_wal_file(const eng_io_op *op) { return op->path && strstr(op->path, "/wal/") != NULL; }

/* In a crash child (it never asserts): DIR opened with O, or _exit. */
static eng_db *child_open(const char *dir, const eng_options *o) {
    eng_db *db = NULL;
    if (eng_open(dir, o, &db)) _exit(CU_EXIT_FAIL);
    return db;
}

/* ========================================================================= */
/* 1a. A batch failed by a read error of its second op leaves no trace.      */
/* ========================================================================= */

#define RE_KEYS 3000u
#define RE_MAXB 8

/* The hook records the data-file blocks read (mode 1) or fails reads of
 * the listed blocks (mode 2). */
static struct {
    int mode;
    uint64_t blocks[RE_MAXB];
    size_t n;
    uint64_t failed;
} RE;

static int re_before(void *ctx, eng_io_op *op) {
    (void)ctx;
    if (!RE.mode || op->kind != ENG_IO_READ || !is_data_file(op)) return 0;
    uint64_t first = op->offset / PS, last = (op->offset + (op->len ? op->len : 1) - 1) / PS;
    for (uint64_t b = first; b <= last; b++) {
        int listed = 0;
        for (size_t i = 0; i < RE.n; i++) listed |= RE.blocks[i] == b;
        if (RE.mode == 1 && !listed && RE.n < RE_MAXB) RE.blocks[RE.n++] = b;
        if (RE.mode == 2 && listed) {
            RE.failed++;
            return -EIO;
        }
    }
    return 0;
}

/* Options with a 16-page cache and RE's hook, RE cleared. */
static eng_options re_opts(int backend) {
    static eng_io_hooks hooks = { NULL, re_before, NULL };
    memset(&RE, 0, sizeof RE);
    eng_options o = mv_opts(backend, 16);
    o.io_hooks = &hooks;
    return o;
}

/* Loads keys 0..RE_KEYS-1 into a fresh database at DIR (G records them)
 * and lists in RE the data blocks a cold get of key FAIL reads (after
 * reopen) that cold gets of the NKEEP keys KEEP, made first, did not:
 * FAIL's leaf, which mode 2 then fails to read.  Leaves the database
 * closed, RE.mode 0 and at least one block listed. */
static void re_load_and_list_blocks(const char *dir, const eng_options *o, int32_t *g, const uint64_t *keep,
                                    size_t nkeep, uint64_t fail, const char *what) {
    eng_db *db = tu_open(dir, o);
    load_keys(db, g, 0, RE_KEYS, 100);
    tu_close(db);

    db = tu_open(dir, o);
    eng_buf vb = { 0 };
    char k[CU_KLEN + 1];
    RE.mode = 1;
    for (size_t i = 0; i < nkeep; i++) cr_assert_eq(eng_get(db, k, cu_key(k, keep[i]), &vb), ENG_OK);
    size_t n1 = RE.n;
    uint64_t r1[RE_MAXB];
    memcpy(r1, RE.blocks, sizeof r1);
    RE.n = 0;
    cr_assert_eq(eng_get(db, k, cu_key(k, fail), &vb), ENG_OK);
    RE.mode = 0;
    cr_assert(RE.n > 0, "%s: a cold get of key %llu read no data block", what, (unsigned long long)fail);
    for (size_t i = 0; i < RE.n; i++)
        for (size_t j = 0; j < n1; j++)
            cr_assert_neq(RE.blocks[i], r1[j], "%s: key %llu shares block %llu with a key read before it", what,
                          (unsigned long long)fail, (unsigned long long)r1[j]);
    eng_buf_free(&vb);
    tu_close(db);
}

TU_BACKEND_TEST_FN(mvcc, batch_failed_by_read_error_leaves_no_trace, T_OPTS) {
    const char *dir = tu_tmpdir_db();
    char what[160];
    snprintf(what, sizeof what, "%s", tu_backend_name(backend));
    eng_options o = re_opts(backend);
    const uint64_t k1 = 100, k2 = 1500, k3 = 2900, n = RE_KEYS + 10;
    int32_t *g = gens_new(n);

    /* Which blocks does a get of k2 read that a get of k1 did not (cold
     * cache, after reopen)?  Those hold the second op's leaf. */
    re_load_and_list_blocks(dir, &o, g, &k1, 1, k2, what);

    /* The batch: overwrite k1, overwrite k2, delete k3, on a cold cache
     * whose read of k2's leaf fails. */
    eng_db *db = tu_open(dir, &o);
    eng_stats s0 = stats_of(db);
    batch b;
    batch_init(&b, 4);
    batch_add(&b, k1, 1);
    batch_add(&b, k2, 1);
    batch_add(&b, k3, -1);
    RE.mode = 2;
    uint64_t seq = 0;
    int rc = eng_write(db, b.ops, b.n, &seq);
    RE.mode = 0;
    cr_assert(RE.failed > 0, "%s: the failing read was never issued (the write returned %s)", what, eng_strerror(rc));
    cr_assert_neq(rc, ENG_OK, "%s: eng_write succeeded although a read it needed failed", what);
    int poisoned = eng_poisoned(db);
    cr_log_info("%s: the batch failed with %s after %llu failed reads; %s", what, eng_strerror(rc),
                (unsigned long long)RE.failed, poisoned ? "poisoned (in doubt)" : "aborted, handle goes on");
    if (!poisoned) {
        eng_stats s1 = stats_of(db);
        cr_assert_gt(s1.txn_aborts, s0.txn_aborts, "%s: aborted batch not counted in txn_aborts", what);
        check_all(db, NULL, g, n, "after the aborted batch, same handle");
        /* The handle goes on: the next batch commits, with a later sequence. */
        uint64_t seq2 = 0;
        b.n = 0;
        batch_add(&b, k1, 2);
        rc = eng_write(db, b.ops, b.n, &seq2);
        cr_assert_eq(rc, ENG_OK, "%s: write after the aborted batch: %s", what, eng_strerror(rc));
        g[k1] = 2;
        cr_assert_gt(seq2, s0.last_seq + 1, "%s: the aborted batch did not consume its sequence (next got %llu)",
                     what, (unsigned long long)seq2);
        check_all(db, NULL, g, n, "after the next batch");
        tu_close(db);
    } else {
        eng_buf tmp = { 0 };
        char k[CU_KLEN + 1];
        cr_assert_eq(eng_get(db, k, cu_key(k, k1), &tmp), ENG_POISONED, "%s: poisoned handle still reads", what);
        eng_buf_free(&tmp);
        eng_close(db);
    }
    batch_free(&b);

    tu_reports rep;
    tu_reports_init(&rep);
    db = open_checked(dir, &o, &rep, "reopen after the failed batch");
    eng_recovery_info ri;
    eng_get_recovery_info(db, &ri);
    check_all(db, NULL, g, n, "reopened after the failed batch");
    cu_verify_clean(db, "reopened after the failed batch");
    vacuum_leaves_only_live(db, gens_live(g, n), "vacuum after the failed batch");
    cu_verify_clean(db, "after vacuum");
    tu_close(db);
    db = open_checked(dir, &o, &rep, "reopen after vacuum");
    check_all(db, NULL, g, n, "reopened after vacuum");
    cu_verify_clean(db, "reopened after vacuum");
    tu_close(db);
    cr_assert_eq(rep.total, 0, "%s: %zu corruption reports", what, rep.total);
    free(g);
}

/* ========================================================================= */
/* 1b. A large batch cut by a crash leaves no trace after recovery.          */
/* ========================================================================= */

#define CB_BASE 2000u     /* keys committed before the batch */
#define CB_OVER 1000u     /* the batch overwrites keys 0..CB_OVER-1 */
#define CB_DEL 500u       /* and deletes the next CB_DEL */
#define CB_OPS 30000u     /* and inserts new keys up to this many ops */
#define CB_NEW (CB_OPS - CB_OVER - CB_DEL)
#define CB_ROUNDS 6

/* Where a round crashes (the commit comes after every op of the batch,
 * so each point lies before it):
 *   CB_EARLY  _exit before WAL write N, anywhere before the first data
 *             write: the batch's own record may be cut, so recovery may
 *             never learn of the batch;
 *   CB_LOGGED _exit before the Nth WAL write after the first data write:
 *             a page of the batch reached the data file, so (write-ahead)
 *             its record and page changes are in the log;
 *   CB_DATA   SIGKILL before data write N: pages of the uncommitted batch
 *             are already in the data file. */
enum { CB_COUNT = 0, CB_EARLY, CB_LOGGED, CB_DATA };

typedef struct cb_hook {
    int armed;
    int how;
    uint64_t target;
    uint64_t wal_writes, data_writes;
    uint64_t wal_before_data; /* WAL writes before the first data write */
} cb_hook;

static int cb_before(void *ctx, eng_io_op *op) {
    cb_hook *h = ctx;
    if (!h->armed || op->kind != ENG_IO_WRITE) return 0;
    if (is_wal_file(op)) {
        h->wal_writes++;
        if (!h->data_writes) h->wal_before_data++;
        if (h->how == CB_EARLY && h->wal_writes == h->target) _exit(CU_EXIT_HOOK);
        if (h->how == CB_LOGGED && h->data_writes && h->wal_writes - h->wal_before_data == h->target)
            _exit(CU_EXIT_HOOK);
    } else if (is_data_file(op)) {
        h->data_writes++;
        if (h->how == CB_DATA && h->data_writes == h->target) kill(getpid(), SIGKILL);
    }
    return 0;
}

static eng_options cb_opts(int backend) {
    eng_options o = mv_opts(backend, 16);
    o.sync_mode = ENG_SYNC_COMMIT;
    o.wal_buffer_size = 64u << 10; /* the batch's log reaches the file as it goes */
    return o;
}

/* The child: opens DIR, writes the one big batch with the hook armed,
 * reports the counts (pipe) when it survives. */
static void cb_child(const char *dir, int backend, cb_hook *h, int fd) {
    static eng_io_hooks hooks;
    hooks = (eng_io_hooks){ h, cb_before, NULL };
    eng_options o = cb_opts(backend);
    o.io_hooks = &hooks;
    eng_db *db = child_open(dir, &o);
    batch b;
    b.ops = calloc(CB_OPS, sizeof *b.ops);
    b.keys = calloc(CB_OPS, sizeof *b.keys);
    b.vals = calloc(CB_OPS, sizeof *b.vals);
    if (!b.ops || !b.keys || !b.vals) _exit(CU_EXIT_FAIL);
    b.n = 0;
    b.cap = CB_OPS;
    for (uint64_t i = 0; i < CB_OVER; i++) batch_add(&b, i, 1);
    for (uint64_t i = CB_OVER; i < CB_OVER + CB_DEL; i++) batch_add(&b, i, -1);
    for (uint64_t i = 0; i < CB_NEW; i++) batch_add(&b, CB_BASE + i, 0);
    h->armed = 1;
    int rc = eng_write(db, b.ops, b.n, NULL);
    h->armed = 0;
    uint64_t msg[4] = { (uint64_t)rc, h->wal_writes, h->data_writes, h->wal_before_data };
    if (cu_write_all(fd, msg, sizeof msg)) _exit(CU_EXIT_FAIL);
    if (rc) _exit(CU_EXIT_FAIL);
    eng_close(db);
    _exit(CU_EXIT_DONE);
}

/* Run the child on DIR; returns its wait status, *msg its report (rc,
 * WAL writes, data writes, WAL writes before the first data write) if it
 * sent one. */
static int cb_run(const char *dir, int backend, cb_hook *h, uint64_t msg[4], int *reported) {
    int fd;
    pid_t pid = cu_fork_piped(&fd);
    if (pid == 0) cb_child(dir, backend, h, fd);
    *reported = cu_read_all(fd, msg, 4 * sizeof *msg) == 4 * sizeof *msg;
    close(fd);
    return cu_wait(pid);
}

Test(mvcc, batch_cut_by_crash_leaves_no_trace, T_OPTS) {
    const int backend = ENG_IO_PSYNC;
    const char *root = tu_tmpdir();
    char dir[256], base[256];
    tu_path(dir, sizeof dir, root, "db");
    tu_path(base, sizeof base, root, "base");
    eng_options o = cb_opts(backend);
    const uint64_t n = CB_BASE + CB_NEW + 1;
    int32_t *g = gens_new(n);
    fresh_dir(base);
    eng_db *db = tu_open(base, &o);
    load_keys(db, g, 0, CB_BASE, 100);
    tu_close(db);

    /* Dry run: how many WAL and data writes the batch makes. */
    tu_copy_dir(base, dir);
    cb_hook h = { 0 };
    uint64_t msg[4] = { 0 };
    int reported = 0;
    int st = cb_run(dir, backend, &h, msg, &reported);
    char sb[64];
    cr_assert(reported && WIFEXITED(st) && WEXITSTATUS(st) == CU_EXIT_DONE, "dry run: %s, eng_write %s",
              cu_status_str(st, sb, sizeof sb), reported ? eng_strerror((int)msg[0]) : "(no report)");
    uint64_t wal_w = msg[1], data_w = msg[2], wal_early = msg[3], wal_late = wal_w - wal_early;
    cr_log_info("dry run: the %u-op batch made %llu WAL writes (%llu before its first data write) and %llu data "
                "writes", CB_OPS, (unsigned long long)wal_w, (unsigned long long)wal_early,
                (unsigned long long)data_w);
    cr_assert_geq(wal_early, 1, "the batch wrote no log before its first data write");
    cr_assert_geq(wal_late, 4, "the batch made only %llu WAL writes after its first data write",
                  (unsigned long long)wal_late);
    cr_assert_geq(data_w, 4, "the batch made only %llu data writes (16-page cache): nothing evicted mid-batch",
                  (unsigned long long)data_w);

    for (int r = 0; r < CB_ROUNDS; r++) {
        uint64_t seed = cu_seed(0xb100 + (uint64_t)r);
        tu_rng rng = { seed };
        cb_hook c = { 0 };
        c.how = 1 + r % 3;
        /* Never later than half-way through the batch's writes. */
        uint64_t of = c.how == CB_EARLY ? wal_early : c.how == CB_LOGGED ? wal_late : data_w;
        c.target = tu_range(&rng, 1, c.how == CB_EARLY ? of : of / 2);
        char what[200];
        snprintf(what, sizeof what, "round %d seed 0x%llx: %s before %s write %llu of %llu", r,
                 (unsigned long long)seed, c.how == CB_DATA ? "SIGKILL" : "_exit",
                 c.how == CB_EARLY ? "WAL" : c.how == CB_LOGGED ? "the post-eviction WAL" : "data",
                 (unsigned long long)c.target, (unsigned long long)of);
        tu_copy_dir(base, dir);
        st = cb_run(dir, backend, &c, msg, &reported);
        cr_assert(!reported, "%s: the batch returned (%s) instead of dying", what, eng_strerror((int)msg[0]));
        if (c.how != CB_DATA)
            cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == CU_EXIT_HOOK, "%s: child ended with %s", what,
                      cu_status_str(st, sb, sizeof sb));
        else
            cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "%s: child ended with %s", what,
                      cu_status_str(st, sb, sizeof sb));

        tu_reports rep;
        tu_reports_init(&rep);
        /* A read-only open replays in memory: it must see the same. */
        eng_options ro = o;
        ro.read_only = 1;
        ro.cache_size = 4096 * PS;
        db = open_checked(dir, &ro, &rep, what);
        check_all(db, NULL, g, n, "read-only open after the crash");
        eng_close(db);
        db = open_checked(dir, &o, &rep, what);
        eng_recovery_info ri;
        eng_get_recovery_info(db, &ri);
        cr_log_info("%s: recovery: records %llu, committed %llu, aborted %llu, recovered_seq %llu", what,
                    (unsigned long long)ri.records, (unsigned long long)ri.txns_committed,
                    (unsigned long long)ri.txns_aborted, (unsigned long long)ri.recovered_seq);
        if (c.how != CB_EARLY)
            cr_assert_geq(ri.txns_aborted, 1, "%s: recovery counted no aborted transaction", what);
        cr_assert_eq(ri.txns_committed, 0, "%s: recovery counted %llu committed transactions after the last "
                     "checkpoint; none committed there", what, (unsigned long long)ri.txns_committed);
        cr_assert_eq(ri.batch_ops_completed, 0, "%s: recovery completed %u ops of a cut batch", what,
                     ri.batch_ops_completed);
        cr_assert(ri.recovered_seq == CB_BASE / 100 || ri.recovered_seq == CB_BASE / 100 + 1,
                  "%s: recovered_seq %llu, %u batches were committed before the cut one", what,
                  (unsigned long long)ri.recovered_seq, CB_BASE / 100);
        check_all(db, NULL, g, n, what);
        cu_verify_clean(db, what);
        vacuum_leaves_only_live(db, CB_BASE, what);
        cu_verify_clean(db, what);
        /* The database goes on: a new batch commits after the aborted one. */
        uint64_t seq = 0;
        char k[CU_KLEN + 1];
        uint8_t v[CU_VMAX];
        int rc = eng_put(db, k, cu_key(k, 0), v, mv_val(v, 0, 7), &seq);
        cr_assert_eq(rc, ENG_OK, "%s: put after recovery: %s", what, eng_strerror(rc));
        tu_close(db);
        int32_t keep = g[0];
        g[0] = 7;
        db = open_checked(dir, &o, &rep, what);
        check_all(db, NULL, g, n, what);
        cu_verify_clean(db, what);
        tu_close(db);
        g[0] = keep;
        cr_assert_eq(rep.total, 0, "%s: %zu corruption reports", what, rep.total);
    }
    free(g);
}

/* ========================================================================= */
/* 2. Snapshots held across thousands of writes and vacuums.                 */
/* ========================================================================= */

#define SN_BASE 3000u
#define SN_BATCHES 4000u
#define SN_MAX (SN_BASE + SN_BATCHES * 5u)

Test(mvcc, snapshot_reads_old_values_across_writes_and_vacuum, T_OPTS) {
    uint64_t seed = cu_seed(0x5a);
    tu_rng rng = { seed };
    const char *dir = tu_tmpdir_db();
    eng_options o = mv_opts(ENG_IO_PSYNC, 64); /* a small cache: versions go to disk and back */
    const uint64_t n = SN_MAX;
    int32_t *g = gens_new(n);
    eng_db *db = tu_open(dir, &o);
    uint64_t last = load_keys(db, g, 0, SN_BASE, 100);
    uint64_t next_new = SN_BASE;

    eng_snapshot *s1 = NULL, *s2 = NULL;
    int rc = eng_snapshot_acquire(db, &s1);
    cr_assert_eq(rc, ENG_OK, "eng_snapshot_acquire: %s", eng_strerror(rc));
    cr_assert_eq(eng_snapshot_seq(s1), last, "snapshot seq %llu, last commit %llu",
                 (unsigned long long)eng_snapshot_seq(s1), (unsigned long long)last);
    int32_t *g1 = gens_dup(g, n), *g2 = NULL;

    batch b;
    batch_init(&b, 8);
    uint64_t removed_held = 0;
    for (uint32_t w = 0; w < SN_BATCHES; w++) {
        b.n = 0;
        size_t ops = (size_t)tu_range(&rng, 1, 5);
        for (size_t j = 0; j < ops; j++) {
            uint64_t roll = tu_below(&rng, 100), i;
            /* a key the snapshots saw, most of the time; a new key 30% */
            i = roll < 30 ? next_new : tu_below(&rng, roll < 85 ? SN_BASE : next_new);
            /* one op per key per batch keeps the model simple */
            int dup = 0;
            for (size_t q = 0; q < b.n; q++) dup |= cu_key_index(b.ops[q].key, b.ops[q].klen) == (int64_t)i;
            if (dup) continue;
            if (i == next_new) next_new++;
            /* generation w + 1 is unique to this batch; deletes only of live keys */
            g[i] = roll >= 80 && g[i] >= 0 ? -1 : (int32_t)(w + 1);
            batch_add(&b, i, g[i]);
        }
        if (b.n == 0) continue;
        rc = eng_write(db, b.ops, b.n, NULL);
        cr_assert_eq(rc, ENG_OK, "seed 0x%llx: write %u: %s", (unsigned long long)seed, w, eng_strerror(rc));
        if (w == SN_BATCHES / 2) {
            rc = eng_snapshot_acquire(db, &s2);
            cr_assert_eq(rc, ENG_OK);
            g2 = gens_dup(g, n);
        }
        if (w == SN_BATCHES * 3 / 4) {
            eng_vacuum_stats vs = vacuum(db, "vacuum while both snapshots are held");
            removed_held += vs.removed;
            cr_assert_eq(eng_checkpoint(db), ENG_OK);
            check_all(db, s1, g1, next_new, "snapshot 1 after a vacuum and a checkpoint");
        }
    }
    batch_free(&b);
    eng_stats st = stats_of(db);
    cr_assert_eq(st.snapshots_active, 2, "snapshots_active %llu", (unsigned long long)st.snapshots_active);
    cr_assert_eq(st.oldest_snapshot_seq, eng_snapshot_seq(s1), "oldest_snapshot_seq %llu, snapshot 1 is %llu",
                 (unsigned long long)st.oldest_snapshot_seq, (unsigned long long)eng_snapshot_seq(s1));
    eng_vacuum_stats vs = vacuum(db, "second vacuum with both snapshots held");
    cr_assert_leq(vs.horizon, eng_snapshot_seq(s1) + 1, "vacuum horizon %llu is past snapshot 1 (%llu)",
                  (unsigned long long)vs.horizon, (unsigned long long)eng_snapshot_seq(s1));

    char what[200];
    snprintf(what, sizeof what, "seed 0x%llx: snapshot 1 (seq %llu), after %u batches and two vacuums",
             (unsigned long long)seed, (unsigned long long)eng_snapshot_seq(s1), SN_BATCHES);
    check_all(db, s1, g1, next_new, what);
    snprintf(what, sizeof what, "seed 0x%llx: snapshot 2 (seq %llu)", (unsigned long long)seed,
             (unsigned long long)eng_snapshot_seq(s2));
    check_all(db, s2, g2, next_new, what);
    snprintf(what, sizeof what, "seed 0x%llx: latest", (unsigned long long)seed);
    check_all(db, NULL, g, next_new, what);

    /* Release the newer one: snapshot 1 still holds everything back. */
    eng_snapshot_release(db, s2);
    vacuum(db, "vacuum with snapshot 1 held");
    check_all(db, s1, g1, next_new, "snapshot 1 after snapshot 2 was released and a vacuum");
    eng_snapshot_release(db, s1);
    st = stats_of(db);
    cr_assert_eq(st.snapshots_active, 0);

    eng_vacuum_stats after = vacuum(db, "vacuum after release");
    cr_assert_gt(after.removed, 0, "seed 0x%llx: vacuum after the snapshots were released removed nothing",
                 (unsigned long long)seed);
    uint64_t live = gens_live(g, next_new);
    cr_assert(vacuum_kept_is(&after, live), "vacuum counted %llu versions and removed %llu; %llu keys live",
              (unsigned long long)after.versions, (unsigned long long)after.removed, (unsigned long long)live);
    vacuum_leaves_only_live(db, live, "vacuums after release");
    cr_log_info("seed 0x%llx: removed %llu while held, %llu after release", (unsigned long long)seed,
                (unsigned long long)removed_held, (unsigned long long)after.removed);
    cu_verify_clean(db, "after release and vacuum");
    check_all(db, NULL, g, next_new, "latest after release and vacuum");
    tu_close(db);

    tu_reports rep;
    tu_reports_init(&rep);
    db = open_checked(dir, &o, &rep, "reopen");
    check_all(db, NULL, g, next_new, "reopened");
    cu_verify_clean(db, "reopened");
    tu_close(db);
    cr_assert_eq(rep.total, 0);
    free(g);
    free(g1);
    free(g2);
}

/* ========================================================================= */
/* 3. A page whose only change is hint bits, torn by a crash, reads clean.    */
/* ========================================================================= */

#define TH_KEYS 3000u
#define TH_RANDOM_TEARS 12
#define TH_MAXW 4096

static struct {
    int armed;
    int captured;
    const char *src;
    char crash[256];
    uint64_t written[TH_MAXW];
    size_t nwritten;
} TH;

/* The crash point: every write-back of the checkpoint has been issued and
 * the data file is about to be synced.  The directory as it is then
 * (new data pages, the log with whatever the write-back logged, the old
 * control file) is what a power cut there leaves, but for torn pages. */
static int th_before(void *ctx, eng_io_op *op) {
    (void)ctx;
    if (!TH.armed || !is_data_file(op)) return 0;
    if (op->kind == ENG_IO_WRITE) {
        for (uint64_t b = op->offset / PS; b < (op->offset + op->len + PS - 1) / PS && TH.nwritten < TH_MAXW; b++)
            TH.written[TH.nwritten++] = b;
    } else if (op->kind == ENG_IO_SYNC && !TH.captured) {
        tu_copy_dir(TH.src, TH.crash);
        TH.captured = 1;
    }
    return 0;
}

static size_t val_gen0(void *ctx, uint64_t i, uint8_t buf[CU_VMAX]) {
    (void)ctx;
    return mv_val(buf, i, 0);
}

static void hint_only_page_torn_run(int hint_fpi) {
    const char *root = tu_tmpdir();
    char dir[256], torn[256];
    snprintf(dir, sizeof dir, "%s/db", root);
    snprintf(torn, sizeof torn, "%s/torn", root);
    memset(&TH, 0, sizeof TH);
    snprintf(TH.crash, sizeof TH.crash, "%s/crash", root);
    TH.src = dir;
    static eng_io_hooks hooks = { NULL, th_before, NULL };
    eng_options o = mv_opts(ENG_IO_PSYNC, 1024); /* everything stays cached: only the checkpoint writes */
    o.data_checksums = 1;
    o.hint_fpi = hint_fpi;
    o.wal_segment_size = 64u << 10;
    o.io_hooks = &hooks;
    const char *mode = hint_fpi ? "hint_fpi=1" : "hint_fpi=0";

    eng_db *db = tu_open(dir, &o);
    load_keys(db, NULL, 0, TH_KEYS, 100);
    tu_close(db);

    db = tu_open(dir, &o);
    eng_stats s0 = stats_of(db);
    cr_assert(s0.data_checksums, "checksums are off");
    cu_check_prefix(db, val_gen0, NULL, "cold read of every row");
    eng_buf vb = { 0 };
    char k[CU_KLEN + 1];
    for (uint64_t i = 0; i < TH_KEYS; i++)
        cr_assert_eq(eng_get(db, k, cu_key(k, i), &vb), ENG_OK);
    eng_buf_free(&vb);
    eng_stats s1 = stats_of(db);
    cr_assert_gt(s1.hints_set, s0.hints_set, "%s: reading every row set no hint bits", mode);
    cr_assert_eq(s1.page_writes, s0.page_writes, "%s: reads wrote pages before the checkpoint", mode);

    char p[512];
    size_t old_len;
    uint8_t *old = cu_read_file(tu_path(p, sizeof p, dir, "data"), &old_len);
    TH.armed = 1;
    int rc = eng_checkpoint(db);
    TH.armed = 0;
    cr_assert_eq(rc, ENG_OK, "%s: checkpoint: %s", mode, eng_strerror(rc));
    cr_assert(TH.captured, "%s: the checkpoint never synced the data file", mode);
    eng_stats s2 = stats_of(db);
    cr_log_info("%s: %llu hints set; checkpoint wrote %llu pages, %llu hint-only, %llu hint WAL records (%llu bytes)",
                mode, (unsigned long long)(s1.hints_set - s0.hints_set),
                (unsigned long long)(s2.page_writes - s1.page_writes),
                (unsigned long long)(s2.hint_pages_written - s1.hint_pages_written),
                (unsigned long long)(s2.hint_wal_records - s1.hint_wal_records),
                (unsigned long long)(s2.hint_wal_bytes - s1.hint_wal_bytes));
    cr_assert_gt(s2.hint_pages_written, s1.hint_pages_written, "%s: the checkpoint wrote no hint-only page", mode);
    if (hint_fpi)
        cr_assert_gt(s2.hint_wal_records, s1.hint_wal_records, "%s: with checksums on, no image was logged", mode);
    else
        cr_assert_eq(s2.hint_wal_records, s1.hint_wal_records, "%s: hint-only writes were logged", mode);
    cu_verify_clean(db, "after the checkpoint");
    tu_close(db);

    size_t new_len;
    uint8_t *neu = cu_read_file(tu_path(p, sizeof p, TH.crash, "data"), &new_len);
    cr_assert_eq(new_len, old_len, "%s: the data file changed size across a hint-only write-back", mode);
    uint64_t nblocks = new_len / PS, ndiff = 0, sect_hist[PS / 512 + 1] = { 0 };
    uint64_t *diff = calloc(nblocks, sizeof *diff);
    cr_assert(diff != NULL);
    for (uint64_t blk = 0; blk < nblocks; blk++) {
        if (!memcmp(old + blk * PS, neu + blk * PS, PS)) continue;
        int nsect = 0;
        for (uint32_t s = 0; s < PS / 512; s++) nsect += memcmp(old + blk * PS + s * 512, neu + blk * PS + s * 512, 512) != 0;
        sect_hist[nsect]++;
        diff[ndiff++] = blk;
    }
    cr_assert_gt(ndiff, 0, "%s: the write-back changed no page", mode);
    for (uint64_t d = 0; d < ndiff; d++) {
        int w = 0;
        for (size_t i = 0; i < TH.nwritten && !w; i++) w = TH.written[i] == diff[d];
        cr_assert(w, "%s: block %llu changed on disk but was never written", mode, (unsigned long long)diff[d]);
    }
    char hist[256];
    size_t hl = 0;
    for (uint32_t s = 0; s <= PS / 512; s++)
        if (sect_hist[s]) hl += (size_t)snprintf(hist + hl, sizeof hist - hl, " %u:%llu", s, (unsigned long long)sect_hist[s]);
    cr_log_info("%s: %llu pages changed; sectors changed per page (count:pages):%s", mode, (unsigned long long)ndiff,
                hist);

    /* Tear patterns over the 8 sectors of a page: bit s set = sector s new.
     * Prefixes (a write cut short), suffixes (written out of order), all
     * old, all new, then random mixes (per page). */
    const uint32_t nsect = PS / 512, all = (1u << nsect) - 1;
    int npat = 2 * (int)(nsect - 1) + 2 + TH_RANDOM_TEARS;
    uint64_t seed = cu_seed(0x70 + (uint64_t)hint_fpi);
    tu_rng rng = { seed };
    uint8_t page[PS];
    for (int pat = 0; pat < npat; pat++) {
        char what[200];
        snprintf(what, sizeof what, "%s seed 0x%llx tear pattern %d", mode, (unsigned long long)seed, pat);
        tu_copy_dir(TH.crash, torn);
        for (uint64_t d = 0; d < ndiff; d++) {
            uint32_t mask;
            if (pat < (int)nsect - 1) mask = (1u << (pat + 1)) - 1;                       /* prefix new */
            else if (pat < 2 * (int)(nsect - 1)) mask = all & ~((1u << (pat - (int)nsect + 2)) - 1); /* suffix new */
            else if (pat == 2 * (int)(nsect - 1)) mask = 0;
            else if (pat == 2 * (int)(nsect - 1) + 1) mask = all;
            else mask = (uint32_t)tu_below(&rng, all + 1);
            uint64_t blk = diff[d];
            for (uint32_t s = 0; s < nsect; s++)
                memcpy(page + s * 512, ((mask >> s) & 1 ? neu : old) + blk * PS + s * 512, 512);
            tu_write_page(torn, blk, PS, page);
        }
        tu_reports rep;
        tu_reports_init(&rep);
        eng_options oo = o;
        oo.io_hooks = NULL;
        eng_db *t = open_checked(torn, &oo, &rep, what);
        eng_recovery_info ri;
        eng_get_recovery_info(t, &ri);
        cu_check_prefix(t, val_gen0, NULL, what);
        cu_verify_clean(t, what);
        char buf[2048];
        cr_assert_eq(rep.total, 0, "%s: %zu corruption reports:\n%s", what, rep.total,
                     tu_reports_str(&rep, buf, sizeof buf));
        if (pat == 0) cr_log_info("%s: recovery restored %llu images", what, (unsigned long long)ri.images_restored);
        tu_close(t);
    }
    free(diff);
    free(old);
    free(neu);
}

Test(mvcc, hint_only_page_torn_by_crash_reads_back_clean, T_OPTS) {
    hint_only_page_torn_run(0);
}

Test(mvcc, hint_only_page_torn_by_crash_repaired_by_image, T_OPTS) {
    hint_only_page_torn_run(1);
}

/* ========================================================================= */
/* 4. Hint-only changes log WAL only when asked to.                          */
/* ========================================================================= */

typedef struct hint_case {
    int checksums, log_hints, fpi;
    int expect_wal;
} hint_case;

ParameterizedTestParameters(mvcc, hint_only_writes_log_wal_only_when_asked) {
    static hint_case cases[] = {
        { 0, 0, 0, 0 }, /* the issue's case: checksums off, wal_log_hints off */
        { 1, 0, 0, 0 }, /* checksums on: hints in the first sector need no WAL */
        { 0, 0, 1, 0 }, /* PostgreSQL's rule needs checksums or wal_log_hints */
        { 0, 1, 0, 1 }, /* wal_log_hints: compact hint records */
        { 1, 0, 1, 1 }, /* PostgreSQL's rule: an image */
    };
    return cr_make_param_array(hint_case, cases, sizeof cases / sizeof cases[0]);
}

/* Load, close, reopen: READS gets every row, then a checkpoint.  Returns
 * the stats just before (*before) and after the checkpoint. */
static eng_stats hint_round(const char *dir, const hint_case *c, int reads, eng_stats *before) {
    eng_options o = mv_opts(ENG_IO_PSYNC, 1024);
    o.data_checksums = c->checksums;
    o.wal_log_hints = c->log_hints;
    o.hint_fpi = c->fpi;
    eng_db *db = tu_open(dir, &o);
    load_keys(db, NULL, 0, 2000, 100);
    tu_close(db);
    db = tu_open(dir, &o);
    *before = stats_of(db);
    if (reads) {
        eng_buf vb = { 0 };
        char k[CU_KLEN + 1];
        for (uint64_t i = 0; i < 2000; i++) cr_assert_eq(eng_get(db, k, cu_key(k, i), &vb), ENG_OK);
        eng_buf_free(&vb);
    }
    cr_assert_eq(eng_checkpoint(db), ENG_OK);
    eng_stats after = stats_of(db);
    tu_close(db);
    return after;
}

ParameterizedTest(hint_case *c, mvcc, hint_only_writes_log_wal_only_when_asked, T_OPTS) {
    const char *root = tu_tmpdir();
    char a[256], b[256], what[128];
    snprintf(a, sizeof a, "%s/reads", root);
    snprintf(b, sizeof b, "%s/noreads", root);
    snprintf(what, sizeof what, "data_checksums=%d wal_log_hints=%d hint_fpi=%d", c->checksums, c->log_hints, c->fpi);
    eng_stats a0, b0;
    eng_stats a1 = hint_round(a, c, 1, &a0), b1 = hint_round(b, c, 0, &b0);
    uint64_t da = a1.wal_bytes - a0.wal_bytes, db = b1.wal_bytes - b0.wal_bytes;
    cr_log_info("%s: checkpoint after reading everything: %llu WAL bytes, %llu hint records (%llu bytes), "
                "%llu hint-only pages; checkpoint alone: %llu WAL bytes",
                what, (unsigned long long)da, (unsigned long long)(a1.hint_wal_records - a0.hint_wal_records),
                (unsigned long long)(a1.hint_wal_bytes - a0.hint_wal_bytes),
                (unsigned long long)(a1.hint_pages_written - a0.hint_pages_written), (unsigned long long)db);
    cr_assert_gt(a1.hints_set, a0.hints_set, "%s: reading every row set no hints", what);
    cr_assert_gt(a1.hint_pages_written, a0.hint_pages_written, "%s: no hint-only page was written", what);
    cr_assert_eq(b1.hint_pages_written, b0.hint_pages_written, "%s: hint-only pages without reads", what);
    if (!c->expect_wal) {
        cr_assert_eq(a1.hint_wal_records, a0.hint_wal_records, "%s: hint-only writes logged records", what);
        cr_assert_eq(a1.hint_wal_bytes, a0.hint_wal_bytes, "%s: hint-only writes logged bytes", what);
        cr_assert_eq(da, db, "%s: the checkpoint logged %llu bytes after reads, %llu without", what,
                     (unsigned long long)da, (unsigned long long)db);
    } else {
        cr_assert_gt(a1.hint_wal_records, a0.hint_wal_records, "%s: hint-only writes logged nothing", what);
        cr_assert_gt(a1.hint_wal_bytes, a0.hint_wal_bytes, "%s: no hint WAL bytes", what);
        cr_assert_gt(da, db, "%s: the checkpoint logged %llu bytes after reads, %llu without", what,
                     (unsigned long long)da, (unsigned long long)db);
    }
}

/* ========================================================================= */
/* 5. Vacuum: freezing by age, hints, snapshots; reopen is clean after it.   */
/* ========================================================================= */

#define VF_BATCHES 50u
#define VF_PER 100u
#define VF_KEYS (VF_BATCHES * VF_PER)

/* Fresh database with FREEZE_MIN_AGE (UINT64_MAX: the default), loaded with VF_BATCHES batches. */
static eng_db *vf_load(const char *dir, uint64_t freeze_min_age, int32_t *g, eng_options *o) {
    *o = mv_opts(ENG_IO_PSYNC, 256);
    if (freeze_min_age != UINT64_MAX) o->vacuum_freeze_min_age = freeze_min_age;
    eng_db *db = tu_open(dir, o);
    uint64_t last = load_keys(db, g, 0, VF_KEYS, VF_PER);
    cr_assert_eq(last, VF_BATCHES, "the load's last sequence is %llu, not %u", (unsigned long long)last, VF_BATCHES);
    return db;
}

static void vf_reopen_clean(const char *dir, const eng_options *o, const int32_t *g, uint64_t n, const char *what) {
    tu_reports rep;
    tu_reports_init(&rep);
    eng_db *db = open_checked(dir, o, &rep, what);
    check_all(db, NULL, g, n, what);
    cu_verify_clean(db, what);
    tu_close(db);
    cr_assert_eq(rep.total, 0, "%s: %zu corruption reports", what, rep.total);
}

/* The end of a test that held snapshot S over DB (at DIR, opened with O):
 * release it; a vacuum then leaves only the live versions of G, verify is
 * clean, and after a clean close a reopen agrees with G. */
static void release_vacuum_reopen_clean(eng_db *db, eng_snapshot *s, const char *dir, const eng_options *o,
                                        const int32_t *g, uint64_t n, const char *what) {
    char w[200];
    eng_snapshot_release(db, s);
    snprintf(w, sizeof w, "%s: vacuum after release", what);
    vacuum_leaves_only_live(db, gens_live(g, n), w);
    cu_verify_clean(db, w);
    tu_close(db);
    snprintf(w, sizeof w, "%s: reopened", what);
    vf_reopen_clean(dir, o, g, n, w);
}

Test(mvcc, vacuum_freeze_min_age_0_freezes_every_version, T_OPTS) {
    const char *dir = tu_tmpdir_db();
    int32_t *g = gens_new(VF_KEYS + 1);
    eng_options o;
    eng_db *db = vf_load(dir, 0, g, &o);
    eng_vacuum_stats v = vacuum(db, "min age 0");
    cr_assert_eq(v.versions, VF_KEYS, "vacuum saw %llu versions", (unsigned long long)v.versions);
    cr_assert_eq(v.removed, 0);
    cr_assert_eq(v.frozen, VF_KEYS, "min age 0 froze %llu of %u versions", (unsigned long long)v.frozen, VF_KEYS);
    v = vacuum(db, "min age 0, again");
    cr_assert_eq(v.frozen, 0, "a second vacuum froze %llu versions again", (unsigned long long)v.frozen);
    cu_verify_clean(db, "after freezing");
    check_all(db, NULL, g, VF_KEYS + 1, "after freezing");
    tu_close(db);
    vf_reopen_clean(dir, &o, g, VF_KEYS + 1, "reopened after freezing");
    /* Freezing is logged: after a crash-free reopen nothing is left to freeze. */
    db = tu_open(dir, &o);
    v = vacuum(db, "after reopen");
    cr_assert_eq(v.frozen, 0, "after reopen, vacuum froze %llu versions again", (unsigned long long)v.frozen);
    tu_close(db);
    free(g);
}

Test(mvcc, first_vacuum_after_load_sets_hints_not_freezes, T_OPTS) {
    const char *dir = tu_tmpdir_db();
    int32_t *g = gens_new(VF_KEYS + 1);
    eng_options o;
    eng_db *db = vf_load(dir, UINT64_MAX, g, &o);
    cr_assert_geq(o.vacuum_freeze_min_age, 1000, "the default freeze min age is %llu",
                  (unsigned long long)o.vacuum_freeze_min_age);
    cr_assert_eq(eng_checkpoint(db), ENG_OK);
    eng_stats s0 = stats_of(db);
    eng_vacuum_stats v = vacuum(db, "default min age");
    eng_stats s1 = stats_of(db);
    cr_assert_eq(v.versions, VF_KEYS);
    cr_assert_eq(v.frozen, 0, "vacuum froze %llu versions younger than the min age", (unsigned long long)v.frozen);
    cr_assert_gt(v.hinted, 0, "the first vacuum after a load set no hints");
    cr_assert_gt(s1.hints_set, s0.hints_set, "stats.hints_set did not grow");
    cr_assert_gt(s1.vacuums, s0.vacuums);
    /* Setting hints logs nothing by default (hint_fpi 0, wal_log_hints 0). */
    cr_assert_eq(s1.hint_wal_records, s0.hint_wal_records);
    cu_verify_clean(db, "after vacuum");
    tu_close(db);
    vf_reopen_clean(dir, &o, g, VF_KEYS + 1, "reopened after the hinting vacuum");
    free(g);
}

Test(mvcc, vacuum_freezes_only_versions_older_than_min_age, T_OPTS) {
    const char *dir = tu_tmpdir_db();
    int32_t *g = gens_new(VF_KEYS + 1);
    eng_options o;
    const uint64_t age = 20;
    eng_db *db = vf_load(dir, age, g, &o);
    eng_vacuum_stats v = vacuum(db, "min age 20");
    /* Batch s (sequence s, 1..50) is frozen when it is older than AGE below
     * the horizon: about 50 - 20 batches, always whole ones. */
    cr_assert_eq(v.frozen % VF_PER, 0, "vacuum froze %llu versions: not whole batches", (unsigned long long)v.frozen);
    uint64_t fb = v.frozen / VF_PER;
    cr_assert(v.horizon >= VF_BATCHES && v.horizon <= VF_BATCHES + 1, "horizon %llu with no snapshot after %u commits",
              (unsigned long long)v.horizon, VF_BATCHES);
    cr_assert(fb + 1 >= v.horizon - age - 1 && fb <= v.horizon - age,
              "vacuum froze %llu batches; horizon %llu, min age %llu", (unsigned long long)fb,
              (unsigned long long)v.horizon, (unsigned long long)age);
    tu_close(db);
    vf_reopen_clean(dir, &o, g, VF_KEYS + 1, "reopened after a partial freeze");
    /* With min age 0 the rest is frozen, and only the rest. */
    o.vacuum_freeze_min_age = 0;
    db = tu_open(dir, &o);
    eng_vacuum_stats w = vacuum(db, "min age 0 after a partial freeze");
    cr_assert_eq(w.frozen, VF_KEYS - v.frozen, "the second vacuum froze %llu, %llu were left",
                 (unsigned long long)w.frozen, (unsigned long long)(VF_KEYS - v.frozen));
    tu_close(db);
    vf_reopen_clean(dir, &o, g, VF_KEYS + 1, "reopened after freezing the rest");
    free(g);
}

Test(mvcc, vacuum_freezes_nothing_a_snapshot_must_not_see, T_OPTS) {
    const char *dir = tu_tmpdir_db();
    const uint64_t n = 2 * VF_KEYS + 1;
    int32_t *g = gens_new(n);
    eng_options o = mv_opts(ENG_IO_PSYNC, 256);
    o.vacuum_freeze_min_age = 0;
    eng_db *db = tu_open(dir, &o);
    load_keys(db, g, 0, VF_KEYS, VF_PER);
    eng_snapshot *s = NULL;
    cr_assert_eq(eng_snapshot_acquire(db, &s), ENG_OK);
    int32_t *gs = gens_dup(g, n);
    /* After the snapshot: new keys, and overwrites and deletes of old ones. */
    load_keys(db, g, VF_KEYS, 2 * VF_KEYS, VF_PER);
    batch b;
    batch_init(&b, VF_PER);
    for (uint64_t i = 0; i < VF_KEYS; i += VF_PER) {
        b.n = 0;
        for (uint64_t j = i; j < i + VF_PER; j += 10) {
            g[j] = 1;
            batch_add(&b, j, 1);
            g[j + 1] = -1;
            batch_add(&b, j + 1, -1);
        }
        cr_assert_eq(eng_write(db, b.ops, b.n, NULL), ENG_OK);
    }
    batch_free(&b);
    eng_vacuum_stats v = vacuum(db, "min age 0, snapshot held");
    cr_assert_leq(v.horizon, eng_snapshot_seq(s) + 1, "horizon %llu past the snapshot (%llu)",
                  (unsigned long long)v.horizon, (unsigned long long)eng_snapshot_seq(s));
    cr_assert_leq(v.frozen, VF_KEYS, "vacuum froze %llu versions; only %u were committed before the snapshot",
                  (unsigned long long)v.frozen, VF_KEYS);
    check_all(db, s, gs, n, "the snapshot after a freezing vacuum");
    check_all(db, NULL, g, n, "latest after a freezing vacuum");
    cr_assert_eq(eng_checkpoint(db), ENG_OK);
    check_all(db, s, gs, n, "the snapshot after a freezing vacuum and a checkpoint");
    eng_snapshot_release(db, s);
    eng_vacuum_stats w = vacuum(db, "min age 0 after release");
    cr_assert_gt(w.frozen, 0, "after release nothing more was frozen");
    cr_assert_gt(w.removed, 0, "after release no old version was removed");
    cu_verify_clean(db, "after release and vacuum");
    check_all(db, NULL, g, n, "latest after release and vacuum");
    tu_close(db);
    vf_reopen_clean(dir, &o, g, n, "reopened");
    free(g);
    free(gs);
}

/* ========================================================================= */
/* 6. Readers running while a batch is applied see it whole, and the hints  */
/*    they set on its versions (in progress) never hide it once committed.  */
/* ========================================================================= */

#define RB_BASE 2000u
#define RB_OPS 20000u

typedef struct rb_state {
    eng_db *db;
    atomic_int done;
    /* filled by the reader, judged by the test thread */
    uint64_t gets, scans, after_gets, partial_scans, bad_gets, regressions, errors;
    char first_bad[200];
} rb_state;

/* State of key I in a get: 0 before the batch, 1 after, -1 neither. */
static int rb_classify(uint64_t i, int rc, const eng_buf *b) {
    uint8_t want[CU_VMAX];
    if (i >= RB_BASE && rc == ENG_NOTFOUND) return 0;
    if (rc != ENG_OK) return -1;
    if (i < RB_BASE && tu_bytes_eq(b->data, b->len, want, mv_val(want, i, 0))) return 0;
    if (tu_bytes_eq(b->data, b->len, want, mv_val(want, i, 1))) return 1;
    return -1;
}

static void *rb_reader(void *arg) {
    rb_state *s = arg;
    tu_rng rng = { cu_seed(0x4b) };
    eng_buf b = { 0 };
    char k[CU_KLEN + 1];
    int seen_after = 0;
    while (!atomic_load(&s->done)) {
        /* gets: once one saw the commit, none may see the state before it */
        for (int j = 0; j < 200; j++) {
            uint64_t i = tu_below(&rng, RB_OPS);
            int rc = eng_get(s->db, k, cu_key(k, i), &b);
            int c = rb_classify(i, rc, &b);
            s->gets++;
            if (c < 0) {
                if (!s->bad_gets++)
                    snprintf(s->first_bad, sizeof s->first_bad, "get of key %llu: %s, len %zu", (unsigned long long)i,
                             eng_strerror(rc), b.len);
            } else if (c == 1) {
                seen_after = 1;
                s->after_gets++;
            } else if (seen_after) {
                if (!s->regressions++)
                    snprintf(s->first_bad, sizeof s->first_bad, "key %llu read as before the batch after another "
                             "key was read as after it", (unsigned long long)i);
            }
        }
        /* a scan (its own snapshot) sees all of the batch or none of it */
        eng_iter *it = NULL;
        if (eng_iter_open(s->db, NULL, &it)) { s->errors++; continue; }
        uint64_t n = 0, before = 0, after = 0;
        int rc;
        for (rc = eng_iter_first(it); rc == ENG_OK; rc = eng_iter_next(it), n++) {
            size_t kl, vl;
            const void *kk = eng_iter_key(it, &kl), *v = eng_iter_value(it, &vl);
            int64_t i = cu_key_index(kk, kl);
            eng_buf vb = { (void *)v, vl, vl };
            int c = i < 0 ? -1 : rb_classify((uint64_t)i, ENG_OK, &vb);
            before += c == 0;
            after += c == 1;
        }
        eng_iter_close(it);
        s->scans++;
        if (rc != ENG_NOTFOUND) s->errors++;
        else if (!((before == RB_BASE && after == 0 && n == RB_BASE) || (after == RB_OPS && n == RB_OPS))) {
            if (!s->partial_scans++)
                snprintf(s->first_bad, sizeof s->first_bad, "a scan saw %llu keys: %llu as before the batch, %llu "
                         "as after it", (unsigned long long)n, (unsigned long long)before, (unsigned long long)after);
        }
    }
    eng_buf_free(&b);
    return NULL;
}

Test(mvcc, readers_during_a_batch_see_it_whole_and_hide_nothing_after_commit, T_OPTS) {
    const char *dir = tu_tmpdir_db();
    eng_options o = mv_opts(ENG_IO_PSYNC, 64); /* the batch's pages are evicted and read back while it runs */
    int32_t *g = gens_new(RB_OPS + 1);
    eng_db *db = tu_open(dir, &o);
    load_keys(db, g, 0, RB_BASE, 100);
    batch b;
    batch_init(&b, RB_OPS);
    for (uint64_t i = 0; i < RB_OPS; i++) {
        batch_add(&b, i, 1);
        g[i] = 1;
    }
    static rb_state s;
    memset(&s, 0, sizeof s);
    s.db = db;
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, rb_reader, &s), 0);
    usleep(20000);
    int rc = eng_write(db, b.ops, b.n, NULL);
    usleep(50000); /* readers go on after the commit too */
    atomic_store(&s.done, 1);
    pthread_join(th, NULL);
    batch_free(&b);
    cr_assert_eq(rc, ENG_OK, "the batch: %s", eng_strerror(rc));
    cr_log_info("reader: %llu gets (%llu after the commit), %llu scans", (unsigned long long)s.gets,
                (unsigned long long)s.after_gets, (unsigned long long)s.scans);
    cr_assert_eq(s.bad_gets + s.regressions + s.partial_scans + s.errors, 0,
                 "readers: %llu wrong gets, %llu regressions, %llu partial scans, %llu errors; first: %s",
                 (unsigned long long)s.bad_gets, (unsigned long long)s.regressions,
                 (unsigned long long)s.partial_scans, (unsigned long long)s.errors, s.first_bad);
    check_all(db, NULL, g, RB_OPS + 1, "after the batch, with the hints the readers set");
    cr_assert_eq(eng_checkpoint(db), ENG_OK);
    tu_close(db);
    vf_reopen_clean(dir, &o, g, RB_OPS + 1, "reopened after the batch");
    free(g);
}

/* ========================================================================= */
/* 7. A hint that says "committed" never reaches the data file before the   */
/*    commit itself reaches the log (PostgreSQL's rule for async commits:   */
/*    else a crash keeps part of a batch that recovery aborts).             */
/* ========================================================================= */

#define HC_BASE 3000u
#define HC_KEYS 40u
#define HC_STRIDE 70u

Test(mvcc, commit_hint_never_reaches_disk_before_the_commit, T_OPTS) {
    const char *dir = tu_tmpdir_db();
    /* sync off, a log buffer that holds the batch, a cache far smaller
     * than the table: the batch's leaves are evicted (written) while its
     * commit may still be only in memory. */
    eng_options o = mv_opts(ENG_IO_PSYNC, 16);
    o.wal_buffer_size = 1u << 20;
    int32_t *g = gens_new(HC_BASE + 1);
    eng_db *db = tu_open(dir, &o);
    load_keys(db, g, 0, HC_BASE, 100);
    tu_close(db);

    for (int r = 0; r < 2; r++) {
        int fd;
        pid_t pid = cu_fork_piped(&fd);
        if (pid == 0) {
            eng_db *c = child_open(dir, &o);
            batch b;
            batch_init(&b, HC_KEYS);
            for (uint64_t j = 0; j < HC_KEYS; j++) batch_add(&b, j * HC_STRIDE, 1 + r);
            uint64_t seq = 0;
            if (eng_write(c, b.ops, b.n, &seq)) _exit(CU_EXIT_FAIL);
            eng_buf vb = { 0 };
            char k[CU_KLEN + 1];
            /* read the batch (hints, if allowed), then everything (evictions) */
            for (uint64_t j = 0; j < HC_KEYS; j++)
                if (eng_get(c, k, cu_key(k, j * HC_STRIDE), &vb)) _exit(CU_EXIT_FAIL);
            for (uint64_t i = 0; i < HC_BASE; i++)
                if (eng_get(c, k, cu_key(k, i), &vb)) _exit(CU_EXIT_FAIL);
            eng_stats st;
            eng_get_stats(c, &st);
            uint64_t msg[4] = { seq, eng_durable_seq(c), st.page_writes, st.hints_set };
            if (cu_write_all(fd, msg, sizeof msg)) _exit(CU_EXIT_FAIL);
            _exit(CU_EXIT_HOOK); /* a crash: no sync, no close */
        }
        uint64_t msg[4] = { 0 };
        size_t got = cu_read_all(fd, msg, sizeof msg);
        close(fd);
        int st = cu_wait(pid);
        char sb[64];
        cr_assert(got == sizeof msg && WIFEXITED(st) && WEXITSTATUS(st) == CU_EXIT_HOOK, "round %d: child: %s", r,
                  cu_status_str(st, sb, sizeof sb));
        cr_log_info("round %d: batch seq %llu, durable seq %llu at the crash, %llu page writes, %llu hints set", r,
                    (unsigned long long)msg[0], (unsigned long long)msg[1], (unsigned long long)msg[2],
                    (unsigned long long)msg[3]);
        cr_assert_gt(msg[2], 0, "round %d: nothing was evicted", r);

        tu_reports rep;
        tu_reports_init(&rep);
        db = open_checked(dir, &o, &rep, "reopen after the crash");
        eng_buf vb = { 0 };
        char k[CU_KLEN + 1];
        uint8_t want[CU_VMAX];
        uint64_t present = 0;
        for (uint64_t j = 0; j < HC_KEYS; j++) {
            uint64_t i = j * HC_STRIDE;
            cr_assert_eq(eng_get(db, k, cu_key(k, i), &vb), ENG_OK);
            if (tu_bytes_eq(vb.data, vb.len, want, mv_val(want, i, 1 + r))) present++;
            else cr_assert(tu_bytes_eq(vb.data, vb.len, want, mv_val(want, i, g[i])), "key %llu: neither value",
                           (unsigned long long)i);
        }
        eng_buf_free(&vb);
        cr_assert(present == 0 || present == HC_KEYS,
                  "round %d: %llu of the batch's %u keys survived the crash (durable seq %llu, batch %llu): "
                  "committed hints reached the data file before the commit", r, (unsigned long long)present, HC_KEYS,
                  (unsigned long long)msg[1], (unsigned long long)msg[0]);
        if (msg[1] >= msg[0])
            cr_assert_eq(present, HC_KEYS, "round %d: the batch was durable yet is gone", r);
        if (present)
            for (uint64_t j = 0; j < HC_KEYS; j++) g[j * HC_STRIDE] = 1 + r;
        check_all(db, NULL, g, HC_BASE + 1, "after the crash");
        cu_verify_clean(db, "after the crash");
        tu_close(db);
        cr_assert_eq(rep.total, 0, "round %d: %zu corruption reports", r, rep.total);
    }
    free(g);
}

/* ========================================================================= */
/* 8. Large values (overflow chains): a snapshot keeps its old ones across   */
/*    overwrites, deletes and vacuums; vacuum frees their pages after        */
/*    release and the file stops growing under overwrite + vacuum cycles.    */
/* ========================================================================= */

#define LV_KEYS 60u
#define LV_MAX 13000u

static size_t lv_val(uint8_t *buf, uint64_t i, int32_t gen) {
    size_t len = 1500 + (size_t)(tu_mix64(i * 31u + (uint64_t)gen) % (LV_MAX - 1500));
    uint32_t h[2] = { (uint32_t)i, (uint32_t)gen };
    memcpy(buf, h, sizeof h);
    tu_fill(buf + sizeof h, len - sizeof h, tu_mix64(i * 7919u + (uint64_t)gen * 104729u));
    return len;
}

static void lv_check(eng_db *db, const eng_snapshot *s, const int32_t *g, const char *what) {
    static uint8_t want[LV_MAX];
    eng_buf b = { 0 };
    char k[CU_KLEN + 1];
    for (uint64_t i = 0; i < LV_KEYS; i++) {
        int rc = eng_get_at(db, s, k, cu_key(k, i), &b);
        if (g[i] < 0) {
            cr_assert_eq(rc, ENG_NOTFOUND, "%s: key %llu should be absent: %s", what, (unsigned long long)i,
                         eng_strerror(rc));
            continue;
        }
        cr_assert_eq(rc, ENG_OK, "%s: key %llu: %s", what, (unsigned long long)i, eng_strerror(rc));
        size_t wl = lv_val(want, i, g[i]);
        cr_assert(tu_bytes_eq(b.data, b.len, want, wl), "%s: key %llu: wrong value (len %zu, want gen %d len %zu)",
                  what, (unsigned long long)i, b.len, g[i], wl);
    }
    eng_buf_free(&b);
    eng_iter *it = NULL;
    eng_iter_options io = { 0 };
    io.snapshot = s;
    cr_assert_eq(eng_iter_open(db, &io, &it), ENG_OK);
    uint64_t next = 0;
    int rc;
    for (rc = eng_iter_first(it); rc == ENG_OK; rc = eng_iter_next(it)) {
        while (next < LV_KEYS && g[next] < 0) next++;
        size_t kl, vl;
        const void *kk = eng_iter_key(it, &kl), *v = eng_iter_value(it, &vl);
        cr_assert(next < LV_KEYS && cu_key_index(kk, kl) == (int64_t)next, "%s: scan: key %lld where %llu was due",
                  what, (long long)cu_key_index(kk, kl), (unsigned long long)next);
        size_t wl = lv_val(want, next, g[next]);
        cr_assert(tu_bytes_eq(v, vl, want, wl), "%s: scan: key %llu: wrong value", what, (unsigned long long)next);
        next++;
    }
    cr_assert_eq(rc, ENG_NOTFOUND);
    while (next < LV_KEYS && g[next] < 0) next++;
    cr_assert_eq(next, LV_KEYS, "%s: scan ended before key %llu", what, (unsigned long long)next);
    eng_iter_close(it);
}

/* Put every key of G with its generation (deletes for -1), 5 per batch. */
static void lv_write(eng_db *db, const int32_t *g, const int32_t *old) {
    static uint8_t vals[5][LV_MAX];
    static char keys[5][CU_KLEN + 1];
    eng_op ops[5];
    size_t n = 0;
    for (uint64_t i = 0; i < LV_KEYS; i++) {
        if (old && old[i] == g[i]) continue;
        if (g[i] < 0 && (!old || old[i] < 0)) continue;
        size_t kl = cu_key(keys[n], i);
        if (g[i] < 0) ops[n] = (eng_op){ .kind = ENG_OP_DELETE, .key = keys[n], .klen = kl };
        else ops[n] = (eng_op){ .kind = ENG_OP_PUT, .key = keys[n], .klen = kl, .val = vals[n],
                                .vlen = lv_val(vals[n], i, g[i]) };
        if (++n == 5 || i == LV_KEYS - 1) {
            int rc = eng_write(db, ops, n, NULL);
            cr_assert_eq(rc, ENG_OK, "large values: eng_write: %s", eng_strerror(rc));
            n = 0;
        }
    }
    if (n) cr_assert_eq(eng_write(db, ops, n, NULL), ENG_OK);
}

Test(mvcc, large_values_snapshot_keeps_old_chains_and_vacuum_frees_them, T_OPTS) {
    const char *dir = tu_tmpdir_db();
    eng_options o = mv_opts(ENG_IO_PSYNC, 64);
    int32_t g[LV_KEYS], gs[LV_KEYS], prev[LV_KEYS];
    for (uint64_t i = 0; i < LV_KEYS; i++) g[i] = 0;
    eng_db *db = tu_open(dir, &o);
    lv_write(db, g, NULL);
    eng_snapshot *s = NULL;
    cr_assert_eq(eng_snapshot_acquire(db, &s), ENG_OK);
    memcpy(gs, g, sizeof g);
    /* overwrite all, delete some, overwrite some again */
    memcpy(prev, g, sizeof g);
    for (uint64_t i = 0; i < LV_KEYS; i++) g[i] = i % 6 == 5 ? -1 : 1;
    lv_write(db, g, prev);
    memcpy(prev, g, sizeof g);
    for (uint64_t i = 0; i < LV_KEYS; i += 3) if (g[i] >= 0) g[i] = 2;
    lv_write(db, g, prev);
    vacuum(db, "large values, snapshot held");
    cr_assert_eq(eng_checkpoint(db), ENG_OK);
    lv_check(db, s, gs, "the snapshot's large values after overwrites and a vacuum");
    lv_check(db, NULL, g, "latest large values");
    eng_snapshot_release(db, s);
    eng_vacuum_stats v = vacuum(db, "large values after release");
    cr_assert_gt(v.removed, 0, "nothing removed after release");
    cr_assert_gt(v.overflow_pages_freed, 0, "vacuum freed no overflow page of the %llu versions it removed",
                 (unsigned long long)v.removed);
    cu_verify_clean(db, "large values after vacuum");
    lv_check(db, NULL, g, "latest large values after vacuum");

    /* Overwrite-all + vacuum cycles: freed pages are reused. */
    uint64_t nb1 = 0;
    for (int c = 0; c < 6; c++) {
        memcpy(prev, g, sizeof g);
        for (uint64_t i = 0; i < LV_KEYS; i++) g[i] = 10 + c;
        lv_write(db, g, prev);
        vacuum(db, "overwrite cycle");
        if (c == 0) nb1 = eng_debug_nblocks(db);
    }
    uint64_t nb = eng_debug_nblocks(db);
    cr_log_info("blocks after the first overwrite cycle %llu, after the sixth %llu", (unsigned long long)nb1,
                (unsigned long long)nb);
    cr_assert_leq(nb, nb1 + nb1 / 4, "the data file grew from %llu to %llu blocks over five overwrite + vacuum "
                  "cycles of the same %u values", (unsigned long long)nb1, (unsigned long long)nb, LV_KEYS);
    lv_check(db, NULL, g, "after the cycles");
    cu_verify_clean(db, "after the cycles");
    tu_close(db);
    tu_reports rep;
    tu_reports_init(&rep);
    db = open_checked(dir, &o, &rep, "reopen");
    lv_check(db, NULL, g, "reopened");
    cu_verify_clean(db, "reopened");
    tu_close(db);
    cr_assert_eq(rep.total, 0);
}

/* ========================================================================= */
/* 9. A snapshot read from another thread while the writer overwrites and   */
/*    vacuum runs, again and again, sees exactly its state every time.      */
/* ========================================================================= */

#define CV_KEYS 2000u

typedef struct cv_state {
    eng_db *db;
    const eng_snapshot *s;
    atomic_int done;
    uint64_t passes, bad;
    char first_bad[200];
} cv_state;

static void *cv_reader(void *arg) {
    cv_state *c = arg;
    eng_buf b = { 0 };
    char k[CU_KLEN + 1];
    uint8_t want[CU_VMAX];
    while (!atomic_load(&c->done)) {
        for (uint64_t i = 0; i < CV_KEYS; i++) {
            int rc = eng_get_at(c->db, c->s, k, cu_key(k, i), &b);
            if (rc != ENG_OK || !tu_bytes_eq(b.data, b.len, want, mv_val(want, i, 0))) {
                if (!c->bad++)
                    snprintf(c->first_bad, sizeof c->first_bad, "pass %llu: key %llu: %s, len %zu",
                             (unsigned long long)c->passes, (unsigned long long)i, eng_strerror(rc), b.len);
            }
        }
        eng_iter *it = NULL;
        eng_iter_options io = { 0 };
        io.snapshot = c->s;
        uint64_t n = 0;
        int rc = eng_iter_open(c->db, &io, &it);
        if (rc == ENG_OK) {
            for (rc = eng_iter_first(it); rc == ENG_OK; rc = eng_iter_next(it), n++) {
                size_t kl, vl;
                const void *kk = eng_iter_key(it, &kl), *v = eng_iter_value(it, &vl);
                if (cu_key_index(kk, kl) != (int64_t)n || !tu_bytes_eq(v, vl, want, mv_val(want, n, 0))) {
                    rc = -1;
                    break;
                }
            }
            eng_iter_close(it);
        }
        if ((rc != ENG_NOTFOUND || n != CV_KEYS) && !c->bad++)
            snprintf(c->first_bad, sizeof c->first_bad, "pass %llu: snapshot scan stopped at %llu (%s)",
                     (unsigned long long)c->passes, (unsigned long long)n, rc < 0 ? "wrong key or value" :
                     eng_strerror(rc));
        c->passes++;
    }
    eng_buf_free(&b);
    return NULL;
}

Test(mvcc, snapshot_read_concurrently_with_writes_and_vacuums_stays_exact, T_OPTS) {
    uint64_t seed = cu_seed(0xc5);
    tu_rng rng = { seed };
    const char *dir = tu_tmpdir_db();
    eng_options o = mv_opts(ENG_IO_PSYNC, 48);
    o.vacuum_freeze_min_age = 0; /* vacuum freezes all it may, right behind the snapshot */
    int32_t *g = gens_new(CV_KEYS * 2 + 1);
    eng_db *db = tu_open(dir, &o);
    load_keys(db, g, 0, CV_KEYS, 100);
    static cv_state c;
    memset(&c, 0, sizeof c);
    c.db = db;
    eng_snapshot *s = NULL;
    cr_assert_eq(eng_snapshot_acquire(db, &s), ENG_OK);
    c.s = s;
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, cv_reader, &c), 0);
    batch b;
    batch_init(&b, 16);
    uint64_t next_new = CV_KEYS;
    for (int32_t w = 1; w <= 1500; w++) {
        b.n = 0;
        for (int j = 0; j < 8; j++) {
            uint64_t i = j == 0 ? next_new++ : tu_below(&rng, CV_KEYS);
            int dup = 0;
            for (size_t q = 0; q < b.n; q++) dup |= cu_key_index(b.ops[q].key, b.ops[q].klen) == (int64_t)i;
            if (dup) continue;
            g[i] = g[i] >= 0 && tu_below(&rng, 4) == 0 ? -1 : w;
            batch_add(&b, i, g[i]);
        }
        cr_assert_eq(eng_write(db, b.ops, b.n, NULL), ENG_OK);
        if (w % 300 == 0) vacuum(db, "vacuum under a concurrent snapshot reader");
        if (w % 500 == 0) cr_assert_eq(eng_checkpoint(db), ENG_OK);
    }
    batch_free(&b);
    while (c.passes < 2 && !c.bad) usleep(1000);
    atomic_store(&c.done, 1);
    pthread_join(th, NULL);
    cr_log_info("seed 0x%llx: the snapshot reader made %llu passes", (unsigned long long)seed,
                (unsigned long long)c.passes);
    cr_assert_eq(c.bad, 0, "seed 0x%llx: the snapshot reader saw %llu wrong answers; first: %s",
                 (unsigned long long)seed, (unsigned long long)c.bad, c.first_bad);
    check_all(db, NULL, g, next_new, "latest after the concurrent run");
    release_vacuum_reopen_clean(db, s, dir, &o, g, next_new, "after the concurrent run");
    free(g);
}

/* ========================================================================= */
/* 10. A crash in the middle of a vacuum (removing, freeing overflow pages, */
/*     freezing, hinting; pages evicted as it goes), with the page being    */
/*     written torn at 512-byte sectors in some rounds, changes nothing a   */
/*     reader sees, and verify is clean after recovery.                     */
/* ========================================================================= */

#define CV2_KEYS 3000u
#define CV2_ROUNDS 9

typedef struct vk_hook {
    int armed;
    int how; /* 0 count; 1 _exit before WAL write N; 2 _exit before data write N; 3 tear data write N, then die */
    uint64_t target, wal_writes, data_writes;
    int dying;
    tu_rng rng;
} vk_hook;

static int vk_before(void *ctx, eng_io_op *op) {
    vk_hook *h = ctx;
    if (!h->armed || op->kind != ENG_IO_WRITE) return 0;
    if (is_wal_file(op)) {
        if (++h->wal_writes == h->target && h->how == 1) _exit(CU_EXIT_HOOK);
    } else if (is_data_file(op)) {
        if (++h->data_writes == h->target && h->how >= 2) {
            if (h->how == 2) _exit(CU_EXIT_HOOK);
            /* keep 1..7 of the first page's 8 sectors */
            op->len = 512u * (size_t)tu_range(&h->rng, 1, PS / 512 - 1);
            h->dying = 1;
        }
    }
    return 0;
}
static void vk_after(void *ctx, eng_io_op *op) {
    (void)op;
    if (((vk_hook *)ctx)->dying) _exit(CU_EXIT_HOOK);
}

static eng_options vk_opts(void) {
    eng_options o = mv_opts(ENG_IO_PSYNC, 16);
    o.vacuum_freeze_min_age = 0;
    return o;
}

static int vk_run(const char *dir, vk_hook *h, uint64_t counts[2]) {
    int fd;
    pid_t pid = cu_fork_piped(&fd);
    if (pid == 0) {
        static eng_io_hooks hooks;
        hooks = (eng_io_hooks){ h, vk_before, vk_after };
        eng_options o = vk_opts();
        o.io_hooks = &hooks;
        eng_db *db = child_open(dir, &o);
        eng_vacuum_stats vs;
        h->armed = 1;
        int rc = eng_vacuum(db, &vs);
        if (rc == ENG_OK) rc = eng_checkpoint(db);
        h->armed = 0;
        uint64_t m[2] = { h->wal_writes, h->data_writes };
        if (rc || cu_write_all(fd, m, sizeof m)) _exit(CU_EXIT_FAIL);
        _exit(eng_close(db) ? CU_EXIT_FAIL : CU_EXIT_DONE);
    }
    counts[0] = counts[1] = 0;
    cu_read_all(fd, counts, 2 * sizeof *counts);
    close(fd);
    return cu_wait(pid);
}

Test(mvcc, crash_during_vacuum_changes_nothing_readers_see, T_OPTS) {
    const char *root = tu_tmpdir();
    char dir[256], base[256];
    tu_path(dir, sizeof dir, root, "db");
    tu_path(base, sizeof base, root, "base");
    eng_options o = vk_opts();
    int32_t *g = gens_new(CV2_KEYS + 1);
    fresh_dir(base);
    eng_db *db = tu_open(base, &o);
    load_keys(db, g, 0, CV2_KEYS, 100);
    /* overwrite half, delete a sixth: versions for vacuum to remove */
    batch b;
    batch_init(&b, 100);
    for (uint64_t i = 0; i < CV2_KEYS; i += 100) {
        b.n = 0;
        for (uint64_t j = i; j < i + 100; j++) {
            if (j % 2 == 0) continue;
            g[j] = j % 3 == 0 ? -1 : 1;
            batch_add(&b, j, g[j]);
        }
        cr_assert_eq(eng_write(db, b.ops, b.n, NULL), ENG_OK);
    }
    batch_free(&b);
    tu_close(db); /* a checkpoint: vacuum's first change of each page logs its image */

    tu_copy_dir(base, dir);
    vk_hook h = { 0 };
    uint64_t counts[2];
    int st = vk_run(dir, &h, counts);
    char sb[64];
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == CU_EXIT_DONE, "dry run: %s", cu_status_str(st, sb, sizeof sb));
    cr_log_info("dry run: vacuum + checkpoint made %llu WAL writes and %llu data writes",
                (unsigned long long)counts[0], (unsigned long long)counts[1]);
    cr_assert_geq(counts[0], 2, "vacuum wrote almost no log");
    cr_assert_geq(counts[1], 4, "vacuum wrote almost no pages");

    for (int r = 0; r < CV2_ROUNDS; r++) {
        uint64_t seed = cu_seed(0x7ac + (uint64_t)r);
        tu_rng rng = { seed };
        vk_hook c = { 0 };
        c.how = 1 + r % 3;
        c.target = tu_range(&rng, 1, c.how == 1 ? counts[0] : counts[1]);
        c.rng.s = tu_next(&rng);
        char what[200];
        snprintf(what, sizeof what, "round %d seed 0x%llx: %s %s write %llu of %llu", r, (unsigned long long)seed,
                 c.how == 3 ? "tear, then crash at" : "crash before", c.how == 1 ? "WAL" : "data",
                 (unsigned long long)c.target, (unsigned long long)(c.how == 1 ? counts[0] : counts[1]));
        tu_copy_dir(base, dir);
        uint64_t unused[2];
        st = vk_run(dir, &c, unused);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == CU_EXIT_HOOK, "%s: child ended with %s", what,
                  cu_status_str(st, sb, sizeof sb));
        tu_reports rep;
        tu_reports_init(&rep);
        db = open_checked(dir, &o, &rep, what);
        eng_recovery_info ri;
        eng_get_recovery_info(db, &ri);
        check_all(db, NULL, g, CV2_KEYS + 1, what);
        cu_verify_clean(db, what);
        vacuum_leaves_only_live(db, gens_live(g, CV2_KEYS + 1), what);
        cu_verify_clean(db, what);
        tu_close(db);
        char buf[2048];
        cr_assert_eq(rep.total, 0, "%s: %zu corruption reports (images restored %llu):\n%s", what, rep.total,
                     (unsigned long long)ri.images_restored, tu_reports_str(&rep, buf, sizeof buf));
        vf_reopen_clean(dir, &o, g, CV2_KEYS + 1, what);
    }
    free(g);
}

/* ========================================================================= */
/* 11. Crashes in a workload of small batches, aborted batches (read errors  */
/*     injected into writes), reads that set hints and evictions, with      */
/*     hints logged (wal_log_hints, hint_fpi) or not: recovery keeps        */
/*     exactly the acknowledged commits, the batch in flight whole or not   */
/*     at all, and no aborted one.                                          */
/* ========================================================================= */

#define CW_KEYS 1500u
#define CW_MAXB 4000u
#define CW_ROUNDS 3

typedef struct cw_case { int checksums, log_hints, fpi; } cw_case;

static struct {
    int armed;
    tu_rng rng;
    uint64_t injected;
} CW;

static int cw_before(void *ctx, eng_io_op *op) {
    (void)ctx;
    if (CW.armed && op->kind == ENG_IO_READ && is_data_file(op) && tu_below(&CW.rng, 40) == 0) {
        CW.injected++;
        return -EIO;
    }
    return 0;
}

/* Batch W of round SEED: 1..4 ops on keys below CW_KEYS (put at gen W or
 * delete), no key twice. */
static void cw_batch(uint64_t seed, uint32_t w, batch *b) {
    tu_rng r = { tu_mix64(seed ^ (uint64_t)w * 0x9e37u) };
    b->n = 0;
    size_t ops = (size_t)tu_range(&r, 1, 4);
    for (size_t j = 0; j < ops; j++) {
        uint64_t i = tu_below(&r, CW_KEYS);
        int dup = 0;
        for (size_t q = 0; q < b->n; q++) dup |= cu_key_index(b->ops[q].key, b->ops[q].klen) == (int64_t)i;
        if (!dup) batch_add(b, i, tu_below(&r, 5) == 0 ? -1 : (int32_t)w);
    }
}

static eng_options cw_opts(const cw_case *c) {
    eng_options o = mv_opts(ENG_IO_PSYNC, 16);
    o.sync_mode = ENG_SYNC_COMMIT;
    o.checkpoint_wal_bytes = 128u << 10; /* checkpoints among the hints */
    o.data_checksums = c->checksums;
    o.wal_log_hints = c->log_hints;
    o.hint_fpi = c->fpi;
    return o;
}

enum { CW_COMMITTED = 1, CW_ABORTED = 2, CW_POISONED = 3 };

static void cw_child(const char *dir, const cw_case *c, uint64_t seed, int fd) {
    static eng_io_hooks hooks = { NULL, cw_before, NULL };
    eng_options o = cw_opts(c);
    o.io_hooks = &hooks;
    CW.rng.s = seed;
    eng_db *db = child_open(dir, &o);
    batch b;
    batch_init(&b, 4);
    eng_buf vb = { 0 };
    char k[CU_KLEN + 1];
    tu_rng r = { seed ^ 0x77 };
    for (uint32_t w = 1; w <= CW_MAXB; w++) {
        cw_batch(seed, w, &b);
        CW.armed = 1;
        int rc = eng_write(db, b.ops, b.n, NULL);
        CW.armed = 0;
        uint32_t m[2] = { w, rc == ENG_OK ? CW_COMMITTED : eng_poisoned(db) ? CW_POISONED : CW_ABORTED };
        if (cu_write_all(fd, m, sizeof m)) _exit(CU_EXIT_FAIL);
        if (m[1] == CW_POISONED) _exit(CU_EXIT_DONE);
        /* reads set hints on what they meet, and the 16-page cache evicts */
        for (int j = 0; j < 6; j++) {
            int g = eng_get(db, k, cu_key(k, tu_below(&r, CW_KEYS)), &vb);
            if (g != ENG_OK && g != ENG_NOTFOUND) _exit(CU_EXIT_FAIL);
        }
    }
    _exit(CU_EXIT_DONE);
}

ParameterizedTestParameters(mvcc, crash_among_hints_and_aborts_keeps_exact_commits) {
    static cw_case cases[] = { { 1, 0, 0 }, { 0, 1, 0 }, { 1, 0, 1 } };
    return cr_make_param_array(cw_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(cw_case *c, mvcc, crash_among_hints_and_aborts_keeps_exact_commits, T_OPTS) {
    const char *dir = tu_tmpdir_db();
    int32_t *g = gens_new(CW_KEYS + 1), *alt = gens_new(CW_KEYS + 1);
    eng_options o = cw_opts(c);
    batch b;
    batch_init(&b, 4);
    for (int r = 0; r < CW_ROUNDS; r++) {
        uint64_t seed = cu_seed(0xc3 + (uint64_t)r * 17 + (uint64_t)c->log_hints * 3 + (uint64_t)c->fpi * 5);
        tu_rng rng = { seed };
        uint64_t kill_after = tu_range(&rng, 150, 600); /* acknowledgements */
        char what[200];
        snprintf(what, sizeof what, "checksums=%d wal_log_hints=%d hint_fpi=%d round %d seed 0x%llx", c->checksums,
                 c->log_hints, c->fpi, r, (unsigned long long)seed);
        int fd;
        pid_t pid = cu_fork_piped(&fd);
        if (pid == 0) cw_child(dir, c, seed, fd);
        /* Apply each reported batch to the model; kill the child after
         * KILL_AFTER reports (it may have committed one more). */
        uint32_t m[2], last = 0, aborted = 0, poisoned = 0;
        static uint8_t status[CW_MAXB + 2];
        memset(status, 0, sizeof status);
        while (cu_read_all(fd, m, sizeof m) == sizeof m) {
            cr_assert_eq(m[0], last + 1, "%s: reports out of order", what);
            last = m[0];
            status[m[0]] = (uint8_t)m[1];
            if (m[1] == CW_COMMITTED) {
                cw_batch(seed, m[0], &b);
                for (size_t j = 0; j < b.n; j++) {
                    int64_t i = cu_key_index(b.ops[j].key, b.ops[j].klen);
                    g[i] = b.ops[j].kind == ENG_OP_DELETE ? -1 : (int32_t)m[0];
                }
            } else if (m[1] == CW_ABORTED) {
                aborted++;
            } else {
                poisoned = 1;
            }
            if (last == kill_after) kill(pid, SIGKILL);
        }
        close(fd);
        cu_wait(pid);
        /* The batch in flight (after the last report, or the one that
         * poisoned the handle) is in doubt: all of it or none. */
        uint32_t doubt = poisoned ? last : last + 1;
        memcpy(alt, g, (CW_KEYS + 1) * sizeof *g);
        cw_batch(seed, doubt, &b);
        for (size_t j = 0; j < b.n; j++) {
            int64_t i = cu_key_index(b.ops[j].key, b.ops[j].klen);
            alt[i] = b.ops[j].kind == ENG_OP_DELETE ? -1 : (int32_t)doubt;
        }
        tu_reports rep;
        tu_reports_init(&rep);
        eng_db *db = open_checked(dir, &o, &rep, what);
        eng_recovery_info ri;
        eng_get_recovery_info(db, &ri);
        /* Which way did the batch in doubt go?  Judge by its first op that
         * makes a difference (none: the model without it must fit). */
        int64_t i0 = -1;
        for (size_t j = 0; j < b.n && i0 < 0; j++) {
            int64_t i = cu_key_index(b.ops[j].key, b.ops[j].klen);
            if (alt[i] != g[i]) i0 = i;
        }
        eng_buf vb = { 0 };
        char k[CU_KLEN + 1];
        uint8_t want[CU_VMAX];
        int rc = ENG_NOTFOUND, in = 0;
        if (i0 >= 0) {
            rc = eng_get(db, k, cu_key(k, (uint64_t)i0), &vb);
            in = alt[i0] < 0 ? rc == ENG_NOTFOUND
                             : rc == ENG_OK && tu_bytes_eq(vb.data, vb.len, want, mv_val(want, (uint64_t)i0, alt[i0]));
        }
        cr_log_info("%s: %u reports (%u aborted%s), batch %u in doubt %s; recovery: committed %llu aborted %llu", what,
                    last, aborted, poisoned ? ", then poisoned" : "", doubt, in ? "kept" : "dropped",
                    (unsigned long long)ri.txns_committed, (unsigned long long)ri.txns_aborted);
        cr_assert_gt(aborted, 0, "%s: no batch was aborted by the injected read errors", what);
        if (in) memcpy(g, alt, (CW_KEYS + 1) * sizeof *g);
        /* Name the batch behind any wrong answer before the generic check. */
        for (uint64_t i = 0; i < CW_KEYS; i++) {
            rc = eng_get(db, k, cu_key(k, i), &vb);
            uint32_t h[3] = { 0, 0, 0 };
            if (rc == ENG_OK && vb.len >= sizeof h) memcpy(h, vb.data, sizeof h);
            int ok = g[i] < 0 ? rc == ENG_NOTFOUND : rc == ENG_OK && h[1] == (uint32_t)g[i];
            static const char *sname[] = { "never reported", "committed", "aborted", "poisoned" };
            cr_assert(ok, "%s: key %llu: want %s%d, found %s gen %u, written by batch %u (%s%s); last report %u",
                      what, (unsigned long long)i, g[i] < 0 ? "absent " : "gen ", g[i], eng_strerror(rc), h[1], h[1],
                      h[1] <= CW_MAXB ? sname[status[h[1]]] : "?", h[1] == doubt ? ", in doubt" : "", last);
        }
        eng_buf_free(&vb);
        check_all(db, NULL, g, CW_KEYS + 1, what);
        cu_verify_clean(db, what);
        tu_close(db);
        char buf[2048];
        cr_assert_eq(rep.total, 0, "%s: %zu corruption reports:\n%s", what, rep.total,
                     tu_reports_str(&rep, buf, sizeof buf));
        /* the next round goes on from here: gens are generation = batch
         * number of its round, so restart from an empty database */
        tu_rm_rf(dir);
        for (uint64_t i = 0; i <= CW_KEYS; i++) g[i] = -1;
    }
    batch_free(&b);
    free(g);
    free(alt);
}

/* ========================================================================= */
/* 12. One key written more than once in a batch: the last op wins, for     */
/*     readers, snapshots, vacuum and recovery.                             */
/* ========================================================================= */

/* Both tests of a key written twice: a 64-page cache, sync commits (the
 * second crashes right after one). */
static eng_options twice_opts(void) {
    eng_options o = mv_opts(ENG_IO_PSYNC, 64);
    o.sync_mode = ENG_SYNC_COMMIT;
    return o;
}

Test(mvcc, same_key_twice_in_a_batch_last_op_wins, T_OPTS) {
    const char *dir = tu_tmpdir_db();
    eng_options o = twice_opts();
    const uint64_t n = 400;
    int32_t *g = gens_new(n + 1);
    tu_reports rep;
    tu_reports_init(&rep);
    eng_db *db = open_checked(dir, &o, &rep, "open");
    load_keys(db, g, 0, 200, 50);
    eng_snapshot *s = NULL;
    cr_assert_eq(eng_snapshot_acquire(db, &s), ENG_OK);
    int32_t *gs = gens_dup(g, n + 1);
    /* For key sets of 4: put,put / put,delete / delete,put / put,delete,put
     * on old keys (0..199) and new keys (200..399). */
    batch b;
    batch_init(&b, 64);
    int32_t gen = 10;
    for (uint64_t i = 0; i < n; i += 20) {
        b.n = 0;
        for (uint64_t j = i; j < i + 20; j++) {
            switch (j % 4) {
            case 0: batch_add(&b, j, gen); batch_add(&b, j, gen + 1); g[j] = gen + 1; break;
            case 1: batch_add(&b, j, gen); batch_add(&b, j, -1); g[j] = -1; break;
            case 2: batch_add(&b, j, -1); batch_add(&b, j, gen + 2); g[j] = gen + 2; break;
            case 3: batch_add(&b, j, gen); batch_add(&b, j, -1); batch_add(&b, j, gen + 3); g[j] = gen + 3; break;
            }
        }
        int rc = eng_write(db, b.ops, b.n, NULL);
        char buf[2048];
        cr_assert_eq(rc, ENG_OK, "batch at key %llu: %s\n%s", (unsigned long long)i, eng_strerror(rc),
                     tu_reports_str(&rep, buf, sizeof buf));
        gen += 10;
    }
    batch_free(&b);
    check_all(db, NULL, g, n, "latest after batches that write keys twice");
    check_all(db, s, gs, n, "a snapshot from before them");
    release_vacuum_reopen_clean(db, s, dir, &o, g, n, "after batches that write keys twice");
    free(gs);
    free(g);
}

/* An iterator reads the state at its open, whatever is written after. */
Test(mvcc, iterator_reads_the_state_at_its_open, T_OPTS) {
    const char *dir = tu_tmpdir_db();
    eng_options o = mv_opts(ENG_IO_PSYNC, 32);
    const uint64_t n = 3000;
    int32_t *g = gens_new(n + 1);
    eng_db *db = tu_open(dir, &o);
    load_keys(db, g, 0, 1500, 100);
    eng_iter *it = NULL;
    cr_assert_eq(eng_iter_open(db, NULL, &it), ENG_OK);
    /* read half of it, then change everything, vacuum, read the rest */
    int rc = eng_iter_first(it);
    uint64_t seen = 0;
    uint8_t want[CU_VMAX];
    for (; rc == ENG_OK && seen < 700; rc = eng_iter_next(it), seen++) {}
    batch b;
    batch_init(&b, 100);
    for (uint64_t i = 0; i < n; i += 100) {
        b.n = 0;
        for (uint64_t j = i; j < i + 100; j++) {
            g[j] = j % 5 == 0 && g[j] >= 0 ? -1 : 1;
            batch_add(&b, j, g[j]);
        }
        cr_assert_eq(eng_write(db, b.ops, b.n, NULL), ENG_OK);
    }
    batch_free(&b);
    vacuum(db, "vacuum while an iterator is open");
    for (; rc == ENG_OK; rc = eng_iter_next(it), seen++) {
        size_t kl, vl;
        const void *k = eng_iter_key(it, &kl), *v = eng_iter_value(it, &vl);
        cr_assert_eq(cu_key_index(k, kl), (int64_t)seen, "the iterator's key %llu is key %lld",
                     (unsigned long long)seen, (long long)cu_key_index(k, kl));
        cr_assert(tu_bytes_eq(v, vl, want, mv_val(want, seen, 0)), "key %llu: not the value at the iterator's open",
                  (unsigned long long)seen);
    }
    cr_assert_eq(rc, ENG_NOTFOUND, "iterator: %s", eng_strerror(rc));
    cr_assert_eq(seen, 1500, "the iterator saw %llu keys; 1500 existed at its open", (unsigned long long)seen);
    /* backwards too, from the end: still the old state */
    uint64_t back = 0;
    for (rc = eng_iter_last(it); rc == ENG_OK; rc = eng_iter_prev(it)) back++;
    cr_assert_eq(back, 1500, "backwards the iterator saw %llu keys", (unsigned long long)back);
    eng_iter_close(it);
    check_all(db, NULL, g, n, "latest");
    vacuum_leaves_only_live(db, gens_live(g, n), "vacuum after the iterator closed");
    tu_close(db);
    free(g);
}

/* The same, cut by a crash right after the acknowledgement: recovery
 * replays the batch (found: its redo reported P3 corruption, "version of
 * the same key not older", and the database would not open). */
Test(mvcc, key_written_twice_in_a_committed_batch_recovers_after_crash, T_OPTS) {
    const char *dir = tu_tmpdir_db();
    eng_options o = twice_opts();
    int32_t *g = gens_new(41);
    tu_close(tu_open(dir, &o));
    int fd;
    pid_t pid = cu_fork_piped(&fd);
    if (pid == 0) {
        eng_db *db = child_open(dir, &o);
        batch b;
        batch_init(&b, 4);
        batch_add(&b, 7, 1);
        batch_add(&b, 7, 2);
        batch_add(&b, 9, 1);
        batch_add(&b, 9, -1);
        uint32_t rc = (uint32_t)eng_write(db, b.ops, b.n, NULL);
        if (cu_write_all(fd, &rc, sizeof rc)) _exit(CU_EXIT_FAIL);
        _exit(CU_EXIT_HOOK); /* crash after the acknowledgement */
    }
    uint32_t rc = 99;
    cu_read_all(fd, &rc, sizeof rc);
    close(fd);
    cu_wait(pid);
    cr_assert_eq(rc, ENG_OK, "the batch: %s", eng_strerror((int)rc));
    g[7] = 2;
    vf_reopen_clean(dir, &o, g, 40, "reopened after a crash that followed a batch writing a key twice");
    free(g);
}

/* ========================================================================= */
/* 13. An aborted batch that deleted a key and wrote a large value: the      */
/*     deleted key stays visible (its xmax is an aborted id) through reads,  */
/*     hints and vacuum, and vacuum frees the aborted value's overflow pages.*/
/* ========================================================================= */

Test(mvcc, aborted_delete_stays_undone_and_its_overflow_pages_are_freed, T_OPTS) {
    const char *dir = tu_tmpdir_db();
    eng_options o = re_opts(ENG_IO_PSYNC);
    const uint64_t k1 = 100, kbig = 1000, k2 = 2900, n = RE_KEYS + 1;
    int32_t *g = gens_new(n);
    /* blocks a cold get of k2 reads that gets of k1 and kbig do not */
    const uint64_t keep[2] = { k1, kbig };
    re_load_and_list_blocks(dir, &o, g, keep, 2, k2, "aborted delete");

    eng_db *db = tu_open(dir, &o);
    eng_stats s0 = stats_of(db);
    static uint8_t big[20000];
    tu_fill(big, sizeof big, 0xb16);
    char kb1[CU_KLEN + 1], kbb[CU_KLEN + 1], kb2[CU_KLEN + 1];
    uint8_t v2[CU_VMAX];
    eng_op ops[3] = {
        { .kind = ENG_OP_DELETE, .key = kb1, .klen = cu_key(kb1, k1) },
        { .kind = ENG_OP_PUT, .key = kbb, .klen = cu_key(kbb, kbig), .val = big, .vlen = sizeof big },
        { .kind = ENG_OP_PUT, .key = kb2, .klen = cu_key(kb2, k2), .val = v2, .vlen = mv_val(v2, k2, 5) },
    };
    RE.mode = 2;
    int rc = eng_write(db, ops, 3, NULL);
    RE.mode = 0;
    cr_assert(RE.failed > 0 && rc != ENG_OK, "the read of the third op's leaf did not fail the batch (%s)",
              eng_strerror(rc));
    cr_assert(!eng_poisoned(db), "a read error before the third op changed anything poisoned the handle");
    eng_stats s1 = stats_of(db);
    cr_log_info("the aborted batch wrote %llu overflow pages", (unsigned long long)(s1.overflow_pages_written -
                                                                                   s0.overflow_pages_written));
    check_all(db, NULL, g, n, "after the aborted batch");          /* sets hints on the aborted xmax too */
    cr_assert_eq(eng_checkpoint(db), ENG_OK);
    eng_vacuum_stats v = vacuum(db, "after the aborted batch");
    cr_assert_gt(v.removed, 0, "vacuum removed nothing of the aborted batch");
    cr_assert_gt(v.overflow_pages_freed, 0, "vacuum freed none of the aborted large value's overflow pages");
    check_all(db, NULL, g, n, "after vacuum: the aborted delete is still undone");
    vacuum_leaves_only_live(db, gens_live(g, n), "vacuum again");
    /* the freed pages are reused: the same large value again does not grow
     * the file (with a cache of more than 16 pages: alloc_page takes from
     * the free list only while the operation pins under a quarter of it) */
    tu_close(db);
    eng_options ob = o;
    ob.cache_size = 256 * PS;
    db = tu_open(dir, &ob);
    uint64_t nb = eng_debug_nblocks(db);
    cr_assert_eq(eng_put(db, kbb, cu_key(kbb, kbig), big, sizeof big, NULL), ENG_OK);
    cr_assert_leq(eng_debug_nblocks(db), nb, "a value as large as the aborted one grew the file from %llu to %llu "
                  "blocks", (unsigned long long)nb, (unsigned long long)eng_debug_nblocks(db));
    cu_verify_clean(db, "after reuse");
    tu_close(db);
    db = tu_open(dir, &o);
    g[kbig] = -2; /* checked by hand below */
    eng_buf b = { 0 };
    cr_assert_eq(eng_get(db, kbb, cu_key(kbb, kbig), &b), ENG_OK);
    cr_assert(tu_bytes_eq(b.data, b.len, big, sizeof big), "the large value reads back wrong after reopen");
    eng_buf_free(&b);
    g[kbig] = -1;
    for (uint64_t i = 0; i < n; i++) if (i != kbig && g[i] >= 0) {
        uint8_t w[CU_VMAX];
        cr_assert_eq(eng_get(db, kb1, cu_key(kb1, i), &b), ENG_OK, "key %llu after reopen", (unsigned long long)i);
        cr_assert(tu_bytes_eq(b.data, b.len, w, mv_val(w, i, g[i])), "key %llu after reopen", (unsigned long long)i);
    }
    eng_buf_free(&b);
    cu_verify_clean(db, "reopened");
    tu_close(db);
    free(g);
}
