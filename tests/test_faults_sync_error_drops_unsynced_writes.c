/*
 * test_faults_sync_error_drops_unsynced_writes.c -- a failed fsync drops
 * the unsynced writes of its file back to what the last good fsync made
 * durable, one ledger line each, and the reopened engine keeps exactly the
 * prefix recovery reports; short I/O is retried and a paused context
 * injects nothing.
 *
 * Part of the faults suite (once test_faults.c); the helpers it shares
 * with the other test_faults_*.c files are in faults_helpers.h.
 */
#include "faults_helpers.h"

/* ---- sync_error: the dirty data of the failed file is dropped ------------------------------- */

/* Every key of M reads back (gets and a full scan), and verify is clean. */
static void check_reopened(const char *dir, int backend, const tu_model *m, const char *what) {
    eng_options o = eopts(backend, NULL, NULL);
    eng_db *db = tu_open(dir, &o);
    tu_check_gets(db, m, what);
    tu_check_scan(db, m, what);
    uint64_t problems = 99;
    cr_assert_eq(eng_verify(db, NULL, NULL, &problems), ENG_OK, "%s: verify", what);
    cr_assert_eq(problems, 0, "%s: verify found %llu problems", what, (unsigned long long)problems);
    tu_close(db);
}

/* Puts, a good checkpoint (the data file synced), more puts through a
 * 16-frame cache (evictions write pages back: unsynced writes), all of
 * them made durable in the log (commit: each put; off: eng_sync), then a
 * checkpoint whose fsync of the data file fails.  The data file must be
 * back to what the good checkpoint synced, byte for byte: every write
 * since then rolled back, one ledger line each (newest first), nothing
 * else changed; the handle poisoned; and the reopened database must hold
 * every acknowledged put: the engine never trusted the dropped pages. */
static void drop_case(int backend, int sync_mode, const char *point) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    flt_options fo = fopts(run, dir, seed_for_sync_route(47, point));
    fo.one_in[FLT_SYNC_ERROR] = 1;
    flt_ctx *f = fopen_ok(&fo);
    cr_assert_not_null(flt_get_journal(f), "sync_error opens the journal");
    flt_pause(f, 1);
    flt_thread_start(f, 0);
    dw *w = calloc(1, sizeof *w);
    cr_assert(w != NULL);
    w->inner = flt_hooks(f);
    w->f = f;
    w->hooks = (eng_io_hooks){.ctx = w, .before = dw_before, .after = dw_after};
    eng_options o = eopts(backend, &w->hooks, NULL);
    o.sync_mode = sync_mode;
    eng_db *db = tu_open(dir, &o);
    tu_model m = {0};
    char k[32], path[4096];
    uint8_t v[512];
    size_t kl, vl;
    for (uint64_t i = 0; i < 300; i++) {
        kv(i, 0, k, &kl, v, &vl);
        cr_assert_eq(eng_put(db, k, kl, v, vl, NULL), ENG_OK);
        tu_model_put(&m, k, kl, v, vl);
    }
    cr_assert_eq(eng_checkpoint(db), ENG_OK);
    cr_assert_eq(w->nw, 0, "the checkpoint synced every data write");
    size_t synced_len;
    uint8_t *synced = slurp(tu_path(path, sizeof path, dir, "data"), &synced_len);
    for (uint64_t i = 0; i < 400; i++) {
        uint64_t key = (i * 7) % 500;
        kv(key, 1, k, &kl, v, &vl);
        cr_assert_eq(eng_put(db, k, kl, v, vl, NULL), ENG_OK);
        tu_model_put(&m, k, kl, v, vl);
    }
    cr_assert(w->nw > 0, "no page was written back before the checkpoint: grow the workload");
    if (sync_mode == ENG_SYNC_OFF) cr_assert_eq(eng_sync(db), ENG_OK);
    w->armed = 1;
    flt_op(f, 1);
    int rc = eng_checkpoint(db);
    cr_assert(w->failed, "the data file's fsync was not failed");
    cr_assert_eq(rc, ENG_IOERR, "checkpoint: %s", eng_strerror(rc));

    /* The disk: the synced state again, though it had changed. */
    cr_assert(w->pre_len != synced_len || memcmp(w->pre, synced, synced_len) != 0,
              "the unsynced writes changed nothing: nothing to prove");
    cr_assert_eq(w->post_len, synced_len, "data file is %zu bytes after the drop, %zu when last synced", w->post_len,
                 synced_len);
    size_t d = first_diff(w->post, synced, synced_len);
    cr_assert_eq(d, synced_len, "data file byte %zu (block %zu) is not what the last fsync made durable", d, d / PS);

    /* The ledger: the failure, then one drop per unsynced write, newest
     * first; bytes no drop names did not change. */
    lg l = lg_read(run);
    cr_assert_eq(l.n, 1 + w->nw_at_fail, "ledger: %zu lines for %zu unsynced writes", l.n, w->nw_at_fail);
    cr_assert(line_is(l.lines[0], "point", point) && line_is(l.lines[0], "file", "data"), "%s", l.lines[0]);
    cr_assert(line_is(l.lines[0], "class", "sync_error") && line_is(l.lines[0], "err", "EIO"), "%s", l.lines[0]);
    uint8_t *named = calloc(w->pre_len > synced_len ? w->pre_len : synced_len, 1);
    cr_assert(named != NULL);
    for (size_t i = 0; i < w->nw_at_fail; i++) {
        const char *line = l.lines[1 + i];
        size_t wi = w->nw_at_fail - 1 - i;
        cr_assert(line_is(line, "class", "sync_error") && line_is(line, "point", "sync/drop_dirty") &&
                      line_is(line, "file", "data"),
                  "%s", line);
        cr_assert(jnum(line, "offset") == (int64_t)w->w[wi].off && jnum(line, "len") == (int64_t)w->w[wi].len,
                  "drop %zu names %lld+%lld, the write was %llu+%llu: %s", i, (long long)jnum(line, "offset"),
                  (long long)jnum(line, "len"), (unsigned long long)w->w[wi].off, (unsigned long long)w->w[wi].len,
                  line);
        cr_assert_eq(jnum(line, "op"), 1, "%s", line);
        cr_assert_eq(jnum(line, "thread"), 0, "%s", line);
        for (uint64_t x = w->w[wi].off; x < w->w[wi].off + w->w[wi].len && x < w->pre_len; x++) named[x] = 1;
    }
    for (size_t x = 0; x < w->pre_len && x < synced_len; x++)
        if (!named[x])
            cr_assert_eq(w->pre[x], w->post[x], "byte %zu (block %zu) changed though no drop names it", x, x / PS);
    free(named);
    lg_free(&l);

    /* Poisoned: never retried as if the fsync had been safe. */
    kv(1, 2, k, &kl, v, &vl);
    cr_assert_eq(eng_put(db, k, kl, v, vl, NULL), ENG_POISONED);
    cr_assert_eq(eng_sync(db), ENG_POISONED);
    cr_assert_eq(eng_checkpoint(db), ENG_POISONED);
    cr_assert_eq(eng_close(db), ENG_POISONED);
    check_counts(f, run);
    flt_close(f);
    check_reopened(dir, backend, &m, sync_mode == ENG_SYNC_OFF ? "sync off, after eng_sync" : "sync commit");
    tu_model_free(&m);
    free(synced);
    free(w->pre);
    free(w->post);
    free(w);
}

TU_BACKEND_TEST(faults, sync_error_drops_unsynced_writes_sync_off, T_OPTS) {
    drop_case(*backend, ENG_SYNC_OFF, "hook/sync");
}

TU_BACKEND_TEST(faults, sync_error_drops_unsynced_writes_sync_commit, T_OPTS) {
    drop_case(*backend, ENG_SYNC_COMMIT, "hook/sync");
}

/* The same drop when the engine's own point engine/io/fsync fails the
 * fsync (the other half of sync_error's firings). */
TU_BACKEND_TEST(faults, sync_error_at_engine_fsync_point_drops_unsynced_writes_sync_off, T_OPTS) {
    drop_case(*backend, ENG_SYNC_OFF, "engine/io/fsync");
}

TU_BACKEND_TEST(faults, sync_error_at_engine_fsync_point_drops_unsynced_writes_sync_commit, T_OPTS) {
    drop_case(*backend, ENG_SYNC_COMMIT, "engine/io/fsync");
}

/* Open DIR with O, retrying while recovery itself meets failed fsyncs;
 * counts the failures in *FAILED. */
static eng_db *open_retrying(const char *dir, const eng_options *o, int *failed, uint64_t op) {
    eng_db *db = NULL;
    for (int tries = 0;; tries++) {
        int rc = eng_open(dir, o, &db);
        if (rc == ENG_OK) return db;
        db = NULL;
        ++*failed;
        cr_assert(rc == ENG_IOERR, "op %llu: open: %s", (unsigned long long)op, eng_strerror(rc));
        cr_assert(tries < 50, "op %llu: open keeps failing", (unsigned long long)op);
    }
}

/* Failed fsyncs anywhere (log segments, the data file, control), each
 * dropping its file's unsynced writes, under puts, deletes, syncs and
 * checkpoints; every failure is met by closing the poisoned handle and
 * reopening (recovery runs with faults too: a failed open is retried).
 * Then recovery must report a commit sequence at least the durable one
 * the engine last announced (every put acknowledged under sync_mode
 * commit) and at most the last assigned, and hold exactly that prefix of
 * the writes: no durable write lost, none resurrected or made up, even
 * though the pages and log blocks the engine wrote went back to their old
 * contents under it. */
static void drop_stress(int backend, int sync_mode) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    flt_options fo = fopts(run, dir, 48);
    fo.one_in[FLT_SYNC_ERROR] = 6;
    flt_ctx *f = fopen_ok(&fo);
    flt_thread_start(f, 0);
    eng_options o = eopts(backend, flt_hooks(f), NULL);
    o.sync_mode = sync_mode;
    enum { NK = 300, NOPS = 900 };
    /* Per key: its generation as last verified (-1: absent); then every
     * write since, with its sequence (acknowledged or failed). */
    static int64_t base[NK];
    static struct {
        uint64_t seq;
        uint32_t key;
        int64_t gen;
    } log[NOPS];
    size_t nlog = 0;
    for (int i = 0; i < NK; i++) base[i] = -1;
    tu_rng r = {48 + (uint64_t)sync_mode};
    int reopens = 0, failed_opens = 0;
    char k[32];
    uint8_t v[512];
    size_t kl, vl;
    eng_buf b = {0};
    eng_db *db = open_retrying(dir, &o, &failed_opens, 0);
    for (uint64_t i = 0; i < NOPS; i++) {
        flt_op(f, i);
        int rc;
        if (i % 37 == 36) {
            rc = eng_checkpoint(db);
        } else if (sync_mode == ENG_SYNC_OFF && i % 11 == 10) {
            rc = eng_sync(db);
        } else {
            uint32_t key = (uint32_t)tu_below(&r, NK);
            int del = tu_below(&r, 5) == 0;
            kv(key, (uint32_t)i + 1, k, &kl, v, &vl);
            uint64_t before = eng_last_seq(db), seq = 0;
            rc = del ? eng_delete(db, k, kl, &seq) : eng_put(db, k, kl, v, vl, &seq);
            if (rc == ENG_NOTFOUND && del) rc = ENG_OK;
            if (rc != ENG_OK) seq = eng_last_seq(db) > before ? eng_last_seq(db) : 0; /* logged, then failed */
            if (seq) log[nlog++] = (__typeof__(log[0])){seq, key, del ? -1 : (int64_t)i + 1};
        }
        if (rc == ENG_OK) continue;
        cr_assert(rc == ENG_IOERR || rc == ENG_POISONED, "op %llu: %s", (unsigned long long)i, eng_strerror(rc));
        uint64_t durable = eng_durable_seq(db), last = eng_last_seq(db);
        cr_assert_eq(eng_close(db), ENG_POISONED);
        reopens++;
        db = open_retrying(dir, &o, &failed_opens, i);
        eng_recovery_info ri;
        eng_get_recovery_info(db, &ri);
        cr_assert(ri.recovered_seq >= durable && ri.recovered_seq <= last,
                  "op %llu, reopen %d: recovered to sequence %llu; durable was %llu, last assigned %llu",
                  (unsigned long long)i, reopens, (unsigned long long)ri.recovered_seq, (unsigned long long)durable,
                  (unsigned long long)last);
        for (size_t w = 0; w < nlog && log[w].seq <= ri.recovered_seq; w++) base[log[w].key] = log[w].gen;
        nlog = 0;
        for (uint32_t x = 0; x < NK; x++) {
            kv(x, 0, k, &kl, v, &vl);
            int grc = eng_get(db, k, kl, &b);
            cr_assert(grc == ENG_OK || grc == ENG_NOTFOUND, "key %u after reopen %d: %s", x, reopens,
                      eng_strerror(grc));
            if (base[x] < 0) {
                cr_assert_eq(grc, ENG_NOTFOUND, "key %u after reopen %d (recovered to %llu): resurrected or made up", x,
                             reopens, (unsigned long long)ri.recovered_seq);
                continue;
            }
            cr_assert_eq(grc, ENG_OK, "key %u after reopen %d (recovered to %llu): lost (generation %lld)", x, reopens,
                         (unsigned long long)ri.recovered_seq, (long long)base[x]);
            kv(x, (uint32_t)base[x], k, &kl, v, &vl);
            cr_assert(tu_bytes_eq(b.data, b.len, v, vl),
                      "key %u after reopen %d (recovered to %llu): not generation %lld", x, reopens,
                      (unsigned long long)ri.recovered_seq, (long long)base[x]);
        }
    }
    flt_pause(f, 1);
    uint64_t durable = eng_durable_seq(db);
    cr_assert_eq(eng_sync(db), ENG_OK);
    cr_assert(eng_durable_seq(db) >= durable);
    for (size_t w = 0; w < nlog; w++) base[log[w].key] = log[w].gen; /* all durable now */
    tu_close(db);
    check_counts(f, run);
    lg l = lg_read(run);
    size_t drops = 0, wal = 0, data = 0, other = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (!line_is(l.lines[i], "point", "sync/drop_dirty")) continue;
        char file[64] = "";
        jstr(l.lines[i], "file", file, sizeof file);
        drops++;
        if (!strncmp(file, "wal/", 4))
            wal++;
        else if (!strcmp(file, "data"))
            data++;
        else
            other++;
    }
    lg_free(&l);
    cr_assert(reopens >= 10 && wal >= 5 && data >= 5,
              "only %d reopens (%d failed opens); %zu drops: %zu of log writes, %zu of pages, %zu of others", reopens,
              failed_opens, drops, wal, data, other);
    flt_close(f);
    /* And a clean reopen without faults holds exactly that state. */
    tu_model m = {0};
    for (uint32_t x = 0; x < NK; x++) {
        if (base[x] < 0) continue;
        kv(x, (uint32_t)base[x], k, &kl, v, &vl);
        tu_model_put(&m, k, kl, v, vl);
    }
    check_reopened(dir, backend, &m, "final");
    tu_model_free(&m);
    eng_buf_free(&b);
}

TU_BACKEND_TEST(faults, sync_error_drops_keep_exact_prefix_sync_commit, T_OPTS) {
    drop_stress(*backend, ENG_SYNC_COMMIT);
}

TU_BACKEND_TEST(faults, sync_error_drops_keep_exact_prefix_sync_off, T_OPTS) { drop_stress(*backend, ENG_SYNC_OFF); }

TU_BACKEND_TEST(faults, short_io_is_retried, T_OPTS) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    flt_options fo = fopts(run, dir, 45);
    fo.one_in[FLT_SHORT_IO] = 2;
    flt_ctx *f = fopen_ok(&fo);
    flt_thread_start(f, 0);
    eng_options o = eopts(*backend, flt_hooks(f), NULL);
    o.sync_mode = ENG_SYNC_COMMIT;
    eng_db *db = tu_open(dir, &o);
    tu_model m = {0};
    char k[32];
    uint8_t v[512];
    size_t kl, vl;
    for (uint64_t i = 0; i < 300; i++) {
        flt_op(f, i);
        kv(i, 1, k, &kl, v, &vl);
        cr_assert_eq(eng_put(db, k, kl, v, vl, NULL), ENG_OK, "put %llu", (unsigned long long)i);
        tu_model_put(&m, k, kl, v, vl);
        if (i % 100 == 99) cr_assert_eq(eng_checkpoint(db), ENG_OK);
    }
    tu_close(db);
    db = tu_open(dir, &o); /* recovery and cold reads, short too */
    tu_check_gets(db, &m, "after short transfers");
    tu_close(db);
    tu_model_free(&m);
    check_counts(f, run);
    flt_counts c;
    flt_get_counts(f, &c);
    cr_assert(c.injected[FLT_SHORT_IO] >= 10, "only %llu short transfers",
              (unsigned long long)c.injected[FLT_SHORT_IO]);
    int idx = point_index("engine/io/short");
    cr_assert_eq(c.point_hits[idx], c.injected[FLT_SHORT_IO]);
    cr_assert(c.point_checks[idx] > c.point_hits[idx], "odds 1 in 2 but every check fired");
    flt_close(f);
}

/* Paused: nothing fires, the engine is disarmed (no checks), and
 * unpausing brings the points back. */
Test(faults, pause_stops_injection, T_OPTS) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    populate(dir, ENG_IO_PSYNC, 600);
    flt_options fo = fopts(run, dir, 46);
    fo.one_in[FLT_READ_ERROR] = 1;
    fo.one_in[FLT_BITFLIP_INFLIGHT] = 1;
    fo.one_in[FLT_BITFLIP_PAGE] = 1;
    flt_ctx *f = fopen_ok(&fo);
    flt_pause(f, 1);
    eng_options o = eopts(ENG_IO_PSYNC, flt_hooks(f), NULL);
    eng_db *db = tu_open(dir, &o);
    eng_buf b = {0};
    char k[32];
    uint8_t v[512];
    size_t kl, vl;
    for (uint64_t i = 0; i < 600; i++) {
        kv(i, 0, k, &kl, v, &vl);
        cr_assert_eq(eng_get(db, k, kl, &b), ENG_OK);
        flt_tick(f, db);
    }
    flt_counts c;
    flt_get_counts(f, &c);
    cr_assert_eq(c.point_checks[point_index("engine/io/read")], 0);
    lg l = lg_read(run);
    cr_assert_eq(l.n, 0);
    lg_free(&l);
    tu_close(db);
    db = tu_open(dir, &o);
    flt_pause(f, 0);
    int rc = ENG_OK;
    for (uint64_t i = 0; i < 600 && rc == ENG_OK; i++) {
        kv(i, 0, k, &kl, v, &vl);
        rc = eng_get(db, k, kl, &b);
    }
    cr_assert_eq(rc, ENG_IOERR);
    flt_pause(f, 1);
    eng_buf_free(&b);
    eng_close(db);
    check_counts(f, run);
    flt_close(f);
}
