/*
 * test_recovery_fsyncs_and_segments_keep_their_promises.c -- group commit
 * acknowledges nothing before its fsync (W2), a failed fsync poisons the
 * handle (W4), checkpoints remove old segments after archiving identical
 * copies, and segment names are made durable by whoever relies on the
 * segments.
 *
 * Part of the recovery suite (once test_recovery.c); the helpers it shares
 * with the other test_recovery_*.c files are in recovery_helpers.h.
 */
#include "recovery_helpers.h"

/* ========================================================================= */
/* 6. Group commit: no put returns before an fsync that began after it.     */
/* ========================================================================= */

#define GC_THREADS 4
#define GC_PUTS    200

static struct {
    atomic_int armed;
    atomic_ulong begun, completed, max_done_idx;
    atomic_int failed;
    pthread_mutex_t mu;
    char msg[512];
    eng_db *db;
} G6;
static _Thread_local uint64_t g6_idx;

static int is_wal_path(const char *p) { return p && strstr(p, "/wal/") != NULL; }

static int g6_before(void *ctx, eng_io_op *op) {
    (void)ctx;
    if (op->kind == ENG_IO_SYNC && atomic_load(&G6.armed) && is_wal_path(op->path)) {
        g6_idx = atomic_fetch_add(&G6.begun, 1) + 1;
        usleep(2000);
    }
    return 0;
}

static void g6_after(void *ctx, eng_io_op *op) {
    (void)ctx;
    if (op->kind == ENG_IO_SYNC && atomic_load(&G6.armed) && is_wal_path(op->path) && op->result >= 0) {
        uint64_t idx = g6_idx, cur = atomic_load(&G6.max_done_idx);
        while (cur < idx && !atomic_compare_exchange_weak(&G6.max_done_idx, &cur, idx)) {}
        atomic_fetch_add(&G6.completed, 1);
    }
}

static void g6_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void g6_fail(const char *fmt, ...) {
    pthread_mutex_lock(&G6.mu);
    if (!atomic_load(&G6.failed)) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(G6.msg, sizeof G6.msg, fmt, ap);
        va_end(ap);
        atomic_store(&G6.failed, 1);
    }
    pthread_mutex_unlock(&G6.mu);
}

static void *g6_thread(void *arg) {
    uint64_t t = (uint64_t)(uintptr_t)arg;
    for (uint64_t j = 0; j < GC_PUTS && !atomic_load(&G6.failed); j++) {
        uint64_t i = t * GC_PUTS + j, seq = 0;
        uint64_t c0 = atomic_load(&G6.completed), b0 = atomic_load(&G6.begun);
        int rc = put_plain(G6.db, i, &seq);
        uint64_t c1 = atomic_load(&G6.completed), mx = atomic_load(&G6.max_done_idx);
        if (rc) {
            g6_fail("thread %llu put %llu: %s", (unsigned long long)t, (unsigned long long)i, eng_strerror(rc));
            break;
        }
        if (c1 <= c0)
            g6_fail("thread %llu put %llu (seq %llu) returned with no log fsync completed during it (%llu before, "
                    "%llu after)",
                    (unsigned long long)t, (unsigned long long)i, (unsigned long long)seq, (unsigned long long)c0,
                    (unsigned long long)c1);
        if (mx <= b0)
            g6_fail("thread %llu put %llu (seq %llu) returned though every completed log fsync began before "
                    "the call (%llu begun then, latest completed is #%llu)",
                    (unsigned long long)t, (unsigned long long)i, (unsigned long long)seq, (unsigned long long)b0,
                    (unsigned long long)mx);
        uint64_t d = eng_durable_seq(G6.db);
        if (d < seq)
            g6_fail("put %llu returned seq %llu, but eng_durable_seq is %llu", (unsigned long long)i,
                    (unsigned long long)seq, (unsigned long long)d);
    }
    return NULL;
}

TU_BACKEND_TEST_FN(recovery, group_commit_acknowledges_nothing_before_its_fsync, T_OPTS) {
    const char *dir = tu_tmpdir();
    memset(&G6, 0, sizeof G6);
    pthread_mutex_init(&G6.mu, NULL);
    static eng_io_hooks hooks = {NULL, g6_before, g6_after};
    eng_options o = base_opts(backend, ENG_SYNC_GROUP, 0, 0);
    o.io_hooks = &hooks;
    G6.db = tu_open(dir, &o);
    atomic_store(&G6.armed, 1);
    pthread_t th[GC_THREADS];
    for (uintptr_t t = 0; t < GC_THREADS; t++) cr_assert_eq(pthread_create(&th[t], NULL, g6_thread, (void *)t), 0);
    for (int t = 0; t < GC_THREADS; t++) pthread_join(th[t], NULL);
    atomic_store(&G6.armed, 0);
    cr_assert(!atomic_load(&G6.failed), "%s: %s", tu_backend_name(backend), G6.msg);
    uint64_t syncs = atomic_load(&G6.completed);
    cr_assert(syncs > 0, "no log fsync was seen (are segments under DIR/wal/?)");
    cr_assert(syncs < GC_THREADS * GC_PUTS, "%s: %llu log fsyncs for %d puts: no fsync served two commits",
              tu_backend_name(backend), (unsigned long long)syncs, GC_THREADS * GC_PUTS);
    tu_close(G6.db);
    eng_recovery_info ri;
    eng_options o2 = base_opts(backend, ENG_SYNC_GROUP, 0, 0);
    eng_db *db = tu_open(dir, &o2);
    eng_get_recovery_info(db, &ri);
    char kb[CU_KLEN + 1];
    uint8_t want[CU_VMAX];
    eng_buf b = {0};
    for (uint64_t i = 0; i < GC_THREADS * GC_PUTS; i++) {
        int rc = eng_get(db, kb, cu_key(kb, i), &b);
        cr_assert_eq(rc, ENG_OK, "key %llu after reopen: %s", (unsigned long long)i, eng_strerror(rc));
        size_t wl = val_plain(NULL, i, want);
        cr_assert(tu_bytes_eq(b.data, b.len, want, wl), "key %llu: wrong value", (unsigned long long)i);
    }
    eng_buf_free(&b);
    cr_assert_eq(ri.recovered_seq, GC_THREADS * GC_PUTS);
    cu_verify_clean(db, "group commit");
    tu_close(db);
}

/* ========================================================================= */
/* 7. A failed fsync poisons the handle; nothing acknowledged is lost.       */
/* ========================================================================= */

#define POISON_ROUNDS     5
#define POISON_PUTS       300
#define POISON_CKPT_EVERY 40
#define CKPT_AT           120

static struct {
    int armed;
    uint64_t count, k;
    int persistent, fired;
} G7;

static int g7_before(void *ctx, eng_io_op *op) {
    (void)ctx;
    if (!G7.armed || op->kind != ENG_IO_SYNC) return 0;
    uint64_t n = G7.count++;
    if (n == G7.k || (G7.persistent && n > G7.k)) {
        G7.fired++;
        return -EIO;
    }
    return 0;
}

TU_BACKEND_TEST_FN(recovery, failed_fsync_poisons_the_handle, T_OPTS) {
    const char *dir = tu_tmpdir_db();
    static eng_io_hooks hooks = {NULL, g7_before, NULL};
    for (int r = 0; r < POISON_ROUNDS; r++) {
        uint64_t seed = cu_seed(0x700 + (uint64_t)backend * 16 + (uint64_t)r);
        tu_rng rng = {seed};
        memset(&G7, 0, sizeof G7);
        G7.persistent = r % 2;
        /* Rounds 0 and 1: puts only, sync #K fails (a commit's).  Later
         * rounds also checkpoint every POISON_CKPT_EVERY puts, and the
         * failure is aimed at the checkpoint after put CKPT_AT: its data
         * file sync (round 2), its log sync (3) or the control file's (4). */
        uint64_t ckpt_every = r < 2 ? 0 : POISON_CKPT_EVERY, ckpt_offset = (uint64_t)(r - 2);
        G7.k = r < 2 ? tu_range(&rng, 0, POISON_PUTS * 3 / 4) : UINT64_MAX / 2;
        char what[200];
        if (r < 2)
            snprintf(what, sizeof what, "%s round %d seed 0x%llx: sync #%llu fails (%s)", tu_backend_name(backend), r,
                     (unsigned long long)seed, (unsigned long long)G7.k,
                     G7.persistent ? "and every later one" : "once");
        else
            snprintf(what, sizeof what, "%s round %d: sync %llu of the checkpoint after put %d fails (%s)",
                     tu_backend_name(backend), r, (unsigned long long)ckpt_offset, CKPT_AT,
                     G7.persistent ? "and every later one" : "once");
        fresh_dir(dir);
        eng_options o = base_opts(backend, ENG_SYNC_COMMIT, 0, 0);
        o.io_hooks = &hooks;
        eng_db *db = tu_open(dir, &o);
        G7.armed = 1;
        int64_t failed_put = -1;
        int failed_call = 0; /* 1 put, 2 checkpoint */
        uint64_t acked = 0;
        for (uint64_t i = 0; i < POISON_PUTS && !failed_call; i++) {
            int rc;
            if (ckpt_every && i && i % ckpt_every == 0) {
                if (i == CKPT_AT) G7.k = G7.count + ckpt_offset;
                rc = eng_checkpoint(db);
                if (rc != ENG_OK) {
                    cr_assert_eq(rc, ENG_IOERR, "%s: the checkpoint that met the failed fsync returned %s", what,
                                 eng_strerror(rc));
                    failed_call = 2;
                    break;
                }
            }
            rc = put_plain(db, i, NULL);
            if (rc == ENG_OK) {
                acked++;
                continue;
            }
            cr_assert_eq(rc, ENG_IOERR, "%s: put %llu, the first to meet the failed fsync, returned %s", what,
                         (unsigned long long)i, eng_strerror(rc));
            failed_put = (int64_t)i;
            failed_call = 1;
        }
        cr_assert(failed_call, "%s: no call met the failed fsync (%llu syncs)", what, (unsigned long long)G7.count);
        cr_log_info("%s: %s failed first, after %llu acknowledged puts", what,
                    failed_call == 1 ? "a put" : "a checkpoint", (unsigned long long)acked);
        cr_assert(G7.fired >= 1);
        /* Poisoned: nothing that writes or syncs works any more, even
         * when the next fsync would succeed. */
        int rc = put_plain(db, POISON_PUTS + 1000, NULL);
        cr_assert_eq(rc, ENG_POISONED, "%s: put after the failure: %s", what, eng_strerror(rc));
        cr_assert_eq(eng_sync(db), ENG_POISONED, "%s: eng_sync after the failure", what);
        cr_assert_eq(eng_checkpoint(db), ENG_POISONED, "%s: eng_checkpoint after the failure", what);
        eng_op op = {.kind = ENG_OP_DELETE, .key = "k000000000000000", .klen = CU_KLEN};
        rc = eng_write(db, &op, 1, NULL);
        cr_assert_eq(rc, ENG_POISONED, "%s: delete after the failure: %s", what, eng_strerror(rc));
        rc = eng_close(db);
        cr_assert_neq(rc, ENG_OK, "%s: eng_close of a poisoned handle returned ok", what);
        G7.armed = 0;

        eng_options o2 = base_opts(backend, ENG_SYNC_COMMIT, 0, 0);
        eng_recovery_info ri;
        uint64_t m = reopen_check(dir, &o2, val_plain, NULL, &ri, what);
        cr_assert(m >= acked, "%s: %llu keys after reopen, %llu acknowledged", what, (unsigned long long)m,
                  (unsigned long long)acked);
        if (r >= 2) cr_assert_eq(failed_call, 2, "%s: the checkpoint did not fail", what);
        if (failed_call == 1)
            cr_assert(m <= acked + 1, "%s: %llu keys after reopen: %llu acknowledged and put %lld in doubt", what,
                      (unsigned long long)m, (unsigned long long)acked, (long long)failed_put);
        else
            cr_assert_eq(m, acked, "%s: %llu keys after reopen, %llu acknowledged and none in doubt", what,
                         (unsigned long long)m, (unsigned long long)acked);
    }
}

/* ========================================================================= */
/* 9. Checkpoints remove old segments, archiving identical copies first.   */
/* ========================================================================= */

#define ARCH_PHASES 4
#define ARCH_PUTS   800

TU_BACKEND_TEST_FN(recovery, checkpoint_removes_and_archives_segments, T_OPTS) {
    const char *dir = tu_tmpdir(), *aroot = tu_tmpdir();
    char arch[256];
    snprintf(arch, sizeof arch, "%s/archive", aroot);
    eng_options o = base_opts(backend, ENG_SYNC_COMMIT, 0, 0);
    o.archive_dir = arch;
    eng_db *db = tu_open(dir, &o);
    uint64_t next = 0, removed = 0;
    for (int ph = 0; ph < ARCH_PHASES; ph++) {
        for (int j = 0; j < ARCH_PUTS; j++, next++) cr_assert_eq(put_plain(db, next, NULL), ENG_OK);
        cr_assert_eq(eng_sync(db), ENG_OK);
        eng_stats st;
        eng_get_stats(db, &st);
        uint64_t e = st.wal_insert_lsn;
        cu_wal before;
        cu_wal_load(dir, SEG, &before);
        cr_assert_eq(eng_checkpoint(db), ENG_OK, "phase %d: checkpoint", ph);
        cu_seglist after;
        cu_list_segments(dir, "wal", &after);
        for (int i = 0; i < before.l.n; i++) {
            uint64_t s = before.l.start[i];
            int gone = !cu_seglist_has(&after, s);
            if (s + SEG <= e)
                cr_assert(gone, "phase %d: segment %016llx lies wholly below the redo point %llu but is still in wal/",
                          ph, (unsigned long long)s, (unsigned long long)e);
            if (s <= e && e < s + SEG)
                cr_assert(!gone, "phase %d: the current segment %016llx was removed", ph, (unsigned long long)s);
            if (!gone || s > e) continue;
            removed++;
            char ap[4200];
            snprintf(ap, sizeof ap, "%s/%016llx", arch, (unsigned long long)s);
            cr_assert(cu_exists(ap), "phase %d: segment %016llx removed without an archived copy", ph,
                      (unsigned long long)s);
            size_t alen;
            uint8_t *a = cu_read_file(ap, &alen);
            cr_assert_eq(alen, before.l.size[i], "phase %d: archived %016llx has %zu bytes, the segment had %llu", ph,
                         (unsigned long long)s, alen, (unsigned long long)before.l.size[i]);
            cr_assert(memcmp(a, before.data[i], alen) == 0, "phase %d: archived %016llx differs from the segment", ph,
                      (unsigned long long)s);
            free(a);
        }
        cu_wal_free(&before);
    }
    cr_assert(removed >= 4, "only %llu segments were removed by %d checkpoints", (unsigned long long)removed,
              ARCH_PHASES);
    eng_stats st;
    eng_get_stats(db, &st);
    cr_assert(st.segments_archived >= removed, "stats: %llu segments archived, %llu removed",
              (unsigned long long)st.segments_archived, (unsigned long long)removed);
    tu_close(db);
    eng_recovery_info ri;
    uint64_t m = reopen_check(dir, &o, val_plain, NULL, &ri, "after archiving");
    cr_assert_eq(m, next, "after archiving: %llu of %llu keys", (unsigned long long)m, (unsigned long long)next);
}

/* ========================================================================= */
/* 10. Segment names are made durable by whoever relies on the segments.    */
/* ========================================================================= */

/* Found by crashtest.py whitebox (sync_mode=off, a handle poisoned by
 * ENOSPC at engine/wal/append, reopened, killed inside a later checkpoint,
 * a power loss): the crashed handle had created segments and never synced
 * the log directory (nothing was synced yet); recovery fsynced their bytes,
 * the reopened handle kept writing into them and checkpointed pages from
 * their records, but no one synced the directory, so the power loss took
 * the segments' names while the pages stayed: wrong, lost and resurrected
 * keys after the next recovery.  Opening after a crash must sync the log
 * directory before it relies on the segments it found. */
static int dirsync_seen_, data_written_before_;
static char dirsync_want_[4200];
static int ds_before(void *ctx, eng_io_op *op) {
    (void)ctx;
    size_t n = op->path ? strlen(op->path) : 0;
    if (op->kind == ENG_IO_DIRSYNC && op->path && !strcmp(op->path, dirsync_want_)) dirsync_seen_++;
    /* A page written back from the found segments' records. */
    if (op->kind == ENG_IO_WRITE && n >= 5 && !strcmp(op->path + n - 5, "/data") && !dirsync_seen_)
        data_written_before_++;
    return 0;
}
static void ds_after(void *ctx, eng_io_op *op) { (void)ctx, (void)op; }

TU_BACKEND_TEST_FN(recovery, open_after_a_crash_syncs_the_names_of_the_segments_it_relies_on, T_OPTS) {
    const char *dir = tu_tmpdir_db();
    fresh_dir(dir);
    snprintf(dirsync_want_, sizeof dirsync_want_, "%s/wal", dir);
    pid_t pid = cu_fork();
    if (pid == 0) {
        /* Many segments, no sync at all, then a crash. */
        eng_options o = base_opts(backend, ENG_SYNC_OFF, 16 * PS, 0);
        eng_db *db = NULL;
        if (eng_open(dir, &o, &db) != ENG_OK) _exit(CU_EXIT_FAIL);
        for (uint64_t i = 0; i < 3000; i++)
            if (put_plain(db, i, NULL) != ENG_OK) _exit(CU_EXIT_FAIL);
        _exit(CU_EXIT_DONE); /* no close: the handle dies with the process */
    }
    char sb[64];
    int st = cu_wait(pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == CU_EXIT_DONE, "child %s", cu_status_str(st, sb, sizeof sb));
    cu_seglist segs;
    cu_list_segments(dir, "wal", &segs);
    cr_assert_gt(segs.n, 2, "the child should have filled several segments (%zu)", (size_t)segs.n);
    eng_io_hooks hooks = {.before = ds_before, .after = ds_after};
    eng_options o = base_opts(backend, ENG_SYNC_OFF, 16 * PS, 0);
    o.io_hooks = &hooks;
    dirsync_seen_ = data_written_before_ = 0;
    eng_db *db = tu_open(dir, &o);
    cr_assert_gt(dirsync_seen_, 0, "[%s] the open recovered from %zu segments without syncing %s",
                 tu_backend_name(backend), (size_t)segs.n, dirsync_want_);
    cr_assert_eq(data_written_before_, 0,
                 "[%s] recovery wrote %d pages from the records of %zu segments before syncing their names",
                 tu_backend_name(backend), data_written_before_, (size_t)segs.n);
    tu_close(db);
}
