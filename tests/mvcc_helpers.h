/*
 * mvcc_helpers.h -- what the test_mvcc_*.c suites share (one file,
 * test_mvcc.c, before the suite was split): the model of generations and its
 * checks, batches, options and small helpers. All functions are static
 * inline: a suite that uses none of one compiles without a warning.  The
 * suites' description:
 *
 * test_mvcc_*.c -- transactions, snapshots, hint bits and vacuum
 * (docs/engine.md, sections "Write path, WAL and commit" and "Versions and
 * transactions"): what each promises in engine.h, proven from outside.
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
#ifndef TESTS_MVCC_HELPERS_H
#define TESTS_MVCC_HELPERS_H

#include <stdatomic.h>

#include "crashutil.h"

#define T_OPTS .timeout = 120, .fini = cu_fini

#define PS 4096u

/* ---- the model and its checks -------------------------------------------- */

/* gen[i] >= 0: key i holds cu_val(i, gen[i]); -1: absent. */
static inline size_t mv_val(uint8_t buf[CU_VMAX], uint64_t i, int32_t gen) {
    return cu_val(buf, i, (uint32_t)gen, 0, 0);
}

static inline int32_t *gens_new(uint64_t n) {
    int32_t *g = malloc(n * sizeof *g);
    cr_assert(g != NULL);
    for (uint64_t i = 0; i < n; i++) g[i] = -1;
    return g;
}

static inline int32_t *gens_dup(const int32_t *g, uint64_t n) {
    int32_t *c = malloc(n * sizeof *c);
    cr_assert(c != NULL);
    memcpy(c, g, n * sizeof *c);
    return c;
}

static inline uint64_t gens_live(const int32_t *g, uint64_t n) {
    uint64_t c = 0;
    for (uint64_t i = 0; i < n; i++) c += g[i] >= 0;
    return c;
}

/* Every key 0..N-1 (and key N) read through eng_get_at(S) must match G. */
static inline void check_gets(eng_db *db, const eng_snapshot *s, const int32_t *g, uint64_t n, const char *what) {
    eng_buf b = {0};
    char k[CU_KLEN + 1];
    uint8_t want[CU_VMAX];
    for (uint64_t i = 0; i <= n; i++) {
        size_t kl = cu_key(k, i);
        int rc = eng_get_at(db, s, k, kl, &b);
        if (i == n || g[i] < 0) {
            uint32_t h[3] = {0, 0, 0};
            if (rc == ENG_OK && b.len >= sizeof h) memcpy(h, b.data, sizeof h);
            cr_assert_eq(rc, ENG_NOTFOUND,
                         "%s: key %llu should be absent, get returned %s (len %zu, header: "
                         "index %u gen %u)",
                         what, (unsigned long long)i, eng_strerror(rc), b.len, h[0], h[1]);
            continue;
        }
        cr_assert_eq(rc, ENG_OK, "%s: key %llu (gen %d): get returned %s", what, (unsigned long long)i, g[i],
                     eng_strerror(rc));
        size_t wl = mv_val(want, i, g[i]);
        uint32_t h[3] = {0, 0, 0};
        if (b.len >= sizeof h) memcpy(h, b.data, sizeof h);
        cr_assert(tu_bytes_eq(b.data, b.len, want, wl),
                  "%s: key %llu: wrong value (want gen %d, found index %u gen %u, len %zu want %zu)", what,
                  (unsigned long long)i, g[i], h[0], h[1], b.len, wl);
    }
    eng_buf_free(&b);
}

/* An iterator on snapshot S (NULL: its own) must list exactly the live
 * keys of G with their values, forward and backward. */
static inline void check_scan(eng_db *db, const eng_snapshot *s, const int32_t *g, uint64_t n, const char *what) {
    eng_iter *it = NULL;
    eng_iter_options io = {0};
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
        cr_assert_eq(idx, (int64_t)next, "%s: fwd scan: key %lld where key %llu (gen %d) was due", what, (long long)idx,
                     (unsigned long long)next, g[next]);
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
        cr_assert_eq(idx, prev, "%s: bwd scan: key %lld where key %lld was due", what, (long long)idx, (long long)prev);
        size_t wl = mv_val(want, (uint64_t)prev, g[prev]);
        cr_assert(tu_bytes_eq(v, vl, want, wl), "%s: bwd scan: key %lld: wrong value", what, (long long)prev);
    }
    cr_assert_eq(rc, ENG_NOTFOUND, "%s: bwd scan ended with %s", what, eng_strerror(rc));
    cr_assert_eq(seen, gens_live(g, n), "%s: bwd scan saw %llu keys", what, (unsigned long long)seen);
    eng_iter_close(it);
}

static inline void check_all(eng_db *db, const eng_snapshot *s, const int32_t *g, uint64_t n, const char *what) {
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

static inline void batch_init(batch *b, size_t cap) {
    b->ops = calloc(cap, sizeof *b->ops);
    b->keys = calloc(cap, sizeof *b->keys);
    b->vals = calloc(cap, sizeof *b->vals);
    cr_assert(b->ops && b->keys && b->vals);
    b->n = 0;
    b->cap = cap;
}
static inline void batch_free(batch *b) {
    free(b->ops);
    free(b->keys);
    free(b->vals);
    memset(b, 0, sizeof *b);
}
/* Put key I at GEN, or delete it when GEN < 0. */
static inline void batch_add(batch *b, uint64_t i, int32_t gen) {
    cr_assert(b->n < b->cap);
    size_t j = b->n++;
    size_t kl = cu_key(b->keys[j], i);
    if (gen < 0) {
        b->ops[j] = (eng_op){.kind = ENG_OP_DELETE, .key = b->keys[j], .klen = kl};
    } else {
        size_t vl = mv_val(b->vals[j], i, gen);
        b->ops[j] = (eng_op){.kind = ENG_OP_PUT, .key = b->keys[j], .klen = kl, .val = b->vals[j], .vlen = vl};
    }
}

/* Keys FROM..TO-1 at generation 0 in batches of PER: G records them.
 * Returns the last sequence. */
static inline uint64_t load_keys(eng_db *db, int32_t *g, uint64_t from, uint64_t to, size_t per) {
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

static inline eng_options mv_opts(int backend, size_t cache_pages) {
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

static inline void fresh_dir(const char *path) {
    tu_rm_rf(path);
    cr_assert(mkdir(path, 0700) == 0, "mkdir %s: %s", path, strerror(errno));
}

static inline eng_stats stats_of(eng_db *db) {
    eng_stats st;
    memset(&st, 0, sizeof st);
    int rc = eng_get_stats(db, &st);
    cr_assert_eq(rc, ENG_OK, "eng_get_stats: %s", eng_strerror(rc));
    return st;
}

static inline eng_vacuum_stats vacuum(eng_db *db, const char *what) {
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
static inline int vacuum_kept_is(const eng_vacuum_stats *v, uint64_t live) {
    return v->versions == live || (v->versions >= v->removed && v->versions - v->removed == live);
}

/* Vacuum with no snapshot held: afterwards only live versions remain, so
 * this pass must leave exactly LIVE of them, and a second pass must find
 * nothing to remove and LIVE versions. */
static inline void vacuum_leaves_only_live(eng_db *db, uint64_t live, const char *what) {
    eng_vacuum_stats a = vacuum(db, what);
    cr_assert(vacuum_kept_is(&a, live), "%s: vacuum counted %llu versions and removed %llu; %llu keys are live", what,
              (unsigned long long)a.versions, (unsigned long long)a.removed, (unsigned long long)live);
    eng_vacuum_stats b = vacuum(db, what);
    cr_assert_eq(b.removed, 0, "%s: a second vacuum removed %llu more versions", what, (unsigned long long)b.removed);
    cr_assert_eq(b.versions, live, "%s: a second vacuum saw %llu versions, %llu keys are live", what,
                 (unsigned long long)b.versions, (unsigned long long)live);
}

static inline eng_db *open_checked(const char *dir, const eng_options *o, tu_reports *rep, const char *what) {
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

static inline int ends_with(const char *s, const char *suffix) {
    size_t a = s ? strlen(s) : 0, b = strlen(suffix);
    return s && a >= b && !strcmp(s + a - b, suffix);
}
static inline int is_data_file(const eng_io_op *op) { return ends_with(op->path, "/data"); }
static inline int is_wal_file(const eng_io_op *op) { return op->path && strstr(op->path, "/wal/") != NULL; }

/* In a crash child (it never asserts): DIR opened with O, or _exit. */
static inline eng_db *child_open(const char *dir, const eng_options *o) {
    eng_db *db = NULL;
    if (eng_open(dir, o, &db)) _exit(CU_EXIT_FAIL);
    return db;
}

/* ---- reopening clean -------------------------------------------------------- */

/* DIR reopened with O agrees with G (N keys), verify is clean and nothing
 * was reported as corruption. */
static inline void vf_reopen_clean(const char *dir, const eng_options *o, const int32_t *g, uint64_t n,
                                   const char *what) {
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
static inline void release_vacuum_reopen_clean(eng_db *db, eng_snapshot *s, const char *dir, const eng_options *o,
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

#endif /* TESTS_MVCC_HELPERS_H */
