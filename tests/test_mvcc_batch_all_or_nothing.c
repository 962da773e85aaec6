/*
 * test_mvcc_batch_all_or_nothing.c -- a batch is whole or absent: failed by
 * a read error, cut by a crash, read while it is applied, aborted after a
 * delete, or writing one key twice (sections 1a, 1b, 6, 12, 13 below;
 * mvcc_helpers.h lists every test of the suite).
 *
 * Part of the mvcc suite (once test_mvcc.c); the helpers it shares
 * with the other test_mvcc_*.c files are in mvcc_helpers.h.
 */
#include "mvcc_helpers.h"

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
    static eng_io_hooks hooks = {NULL, re_before, NULL};
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
    eng_buf vb = {0};
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
        cr_assert_gt(seq2, s0.last_seq + 1, "%s: the aborted batch did not consume its sequence (next got %llu)", what,
                     (unsigned long long)seq2);
        check_all(db, NULL, g, n, "after the next batch");
        tu_close(db);
    } else {
        eng_buf tmp = {0};
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

#define CB_BASE   2000u  /* keys committed before the batch */
#define CB_OVER   1000u  /* the batch overwrites keys 0..CB_OVER-1 */
#define CB_DEL    500u   /* and deletes the next CB_DEL */
#define CB_OPS    30000u /* and inserts new keys up to this many ops */
#define CB_NEW    (CB_OPS - CB_OVER - CB_DEL)
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
    hooks = (eng_io_hooks){h, cb_before, NULL};
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
    uint64_t msg[4] = {(uint64_t)rc, h->wal_writes, h->data_writes, h->wal_before_data};
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
    cb_hook h = {0};
    uint64_t msg[4] = {0};
    int reported = 0;
    int st = cb_run(dir, backend, &h, msg, &reported);
    char sb[64];
    cr_assert(reported && WIFEXITED(st) && WEXITSTATUS(st) == CU_EXIT_DONE, "dry run: %s, eng_write %s",
              cu_status_str(st, sb, sizeof sb), reported ? eng_strerror((int)msg[0]) : "(no report)");
    uint64_t wal_w = msg[1], data_w = msg[2], wal_early = msg[3], wal_late = wal_w - wal_early;
    cr_log_info("dry run: the %u-op batch made %llu WAL writes (%llu before its first data write) and %llu data "
                "writes",
                CB_OPS, (unsigned long long)wal_w, (unsigned long long)wal_early, (unsigned long long)data_w);
    cr_assert_geq(wal_early, 1, "the batch wrote no log before its first data write");
    cr_assert_geq(wal_late, 4, "the batch made only %llu WAL writes after its first data write",
                  (unsigned long long)wal_late);
    cr_assert_geq(data_w, 4, "the batch made only %llu data writes (16-page cache): nothing evicted mid-batch",
                  (unsigned long long)data_w);

    for (int r = 0; r < CB_ROUNDS; r++) {
        uint64_t seed = cu_seed(0xb100 + (uint64_t)r);
        tu_rng rng = {seed};
        cb_hook c = {0};
        c.how = 1 + r % 3;
        /* Never later than half-way through the batch's writes. */
        uint64_t of = c.how == CB_EARLY ? wal_early : c.how == CB_LOGGED ? wal_late : data_w;
        c.target = tu_range(&rng, 1, c.how == CB_EARLY ? of : of / 2);
        char what[200];
        snprintf(what, sizeof what, "round %d seed 0x%llx: %s before %s write %llu of %llu", r,
                 (unsigned long long)seed, c.how == CB_DATA ? "SIGKILL" : "_exit",
                 c.how == CB_EARLY    ? "WAL"
                 : c.how == CB_LOGGED ? "the post-eviction WAL"
                                      : "data",
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
        if (c.how != CB_EARLY) cr_assert_geq(ri.txns_aborted, 1, "%s: recovery counted no aborted transaction", what);
        cr_assert_eq(ri.txns_committed, 0,
                     "%s: recovery counted %llu committed transactions after the last "
                     "checkpoint; none committed there",
                     what, (unsigned long long)ri.txns_committed);
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
/* 6. Readers running while a batch is applied see it whole, and the hints  */
/*    they set on its versions (in progress) never hide it once committed.  */
/* ========================================================================= */

#define RB_BASE 2000u
#define RB_OPS  20000u

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
    tu_rng rng = {cu_seed(0x4b)};
    eng_buf b = {0};
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
                    snprintf(s->first_bad, sizeof s->first_bad,
                             "key %llu read as before the batch after another "
                             "key was read as after it",
                             (unsigned long long)i);
            }
        }
        /* a scan (its own snapshot) sees all of the batch or none of it */
        eng_iter *it = NULL;
        if (eng_iter_open(s->db, NULL, &it)) {
            s->errors++;
            continue;
        }
        uint64_t n = 0, before = 0, after = 0;
        int rc;
        for (rc = eng_iter_first(it); rc == ENG_OK; rc = eng_iter_next(it), n++) {
            size_t kl, vl;
            const void *kk = eng_iter_key(it, &kl), *v = eng_iter_value(it, &vl);
            int64_t i = cu_key_index(kk, kl);
            eng_buf vb = {(void *)v, vl, vl};
            int c = i < 0 ? -1 : rb_classify((uint64_t)i, ENG_OK, &vb);
            before += c == 0;
            after += c == 1;
        }
        eng_iter_close(it);
        s->scans++;
        if (rc != ENG_NOTFOUND)
            s->errors++;
        else if (!((before == RB_BASE && after == 0 && n == RB_BASE) || (after == RB_OPS && n == RB_OPS))) {
            if (!s->partial_scans++)
                snprintf(s->first_bad, sizeof s->first_bad,
                         "a scan saw %llu keys: %llu as before the batch, %llu "
                         "as after it",
                         (unsigned long long)n, (unsigned long long)before, (unsigned long long)after);
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
                 (unsigned long long)s.bad_gets, (unsigned long long)s.regressions, (unsigned long long)s.partial_scans,
                 (unsigned long long)s.errors, s.first_bad);
    check_all(db, NULL, g, RB_OPS + 1, "after the batch, with the hints the readers set");
    cr_assert_eq(eng_checkpoint(db), ENG_OK);
    tu_close(db);
    vf_reopen_clean(dir, &o, g, RB_OPS + 1, "reopened after the batch");
    free(g);
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
            case 0:
                batch_add(&b, j, gen);
                batch_add(&b, j, gen + 1);
                g[j] = gen + 1;
                break;
            case 1:
                batch_add(&b, j, gen);
                batch_add(&b, j, -1);
                g[j] = -1;
                break;
            case 2:
                batch_add(&b, j, -1);
                batch_add(&b, j, gen + 2);
                g[j] = gen + 2;
                break;
            case 3:
                batch_add(&b, j, gen);
                batch_add(&b, j, -1);
                batch_add(&b, j, gen + 3);
                g[j] = gen + 3;
                break;
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
    const uint64_t keep[2] = {k1, kbig};
    re_load_and_list_blocks(dir, &o, g, keep, 2, k2, "aborted delete");

    eng_db *db = tu_open(dir, &o);
    eng_stats s0 = stats_of(db);
    static uint8_t big[20000];
    tu_fill(big, sizeof big, 0xb16);
    char kb1[CU_KLEN + 1], kbb[CU_KLEN + 1], kb2[CU_KLEN + 1];
    uint8_t v2[CU_VMAX];
    eng_op ops[3] = {
        {.kind = ENG_OP_DELETE, .key = kb1, .klen = cu_key(kb1, k1)},
        {.kind = ENG_OP_PUT, .key = kbb, .klen = cu_key(kbb, kbig), .val = big, .vlen = sizeof big},
        {.kind = ENG_OP_PUT, .key = kb2, .klen = cu_key(kb2, k2), .val = v2, .vlen = mv_val(v2, k2, 5)},
    };
    RE.mode = 2;
    int rc = eng_write(db, ops, 3, NULL);
    RE.mode = 0;
    cr_assert(RE.failed > 0 && rc != ENG_OK, "the read of the third op's leaf did not fail the batch (%s)",
              eng_strerror(rc));
    cr_assert(!eng_poisoned(db), "a read error before the third op changed anything poisoned the handle");
    eng_stats s1 = stats_of(db);
    cr_log_info("the aborted batch wrote %llu overflow pages",
                (unsigned long long)(s1.overflow_pages_written - s0.overflow_pages_written));
    check_all(db, NULL, g, n, "after the aborted batch"); /* sets hints on the aborted xmax too */
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
    cr_assert_leq(eng_debug_nblocks(db), nb,
                  "a value as large as the aborted one grew the file from %llu to %llu "
                  "blocks",
                  (unsigned long long)nb, (unsigned long long)eng_debug_nblocks(db));
    cu_verify_clean(db, "after reuse");
    tu_close(db);
    db = tu_open(dir, &o);
    g[kbig] = -2; /* checked by hand below */
    eng_buf b = {0};
    cr_assert_eq(eng_get(db, kbb, cu_key(kbb, kbig), &b), ENG_OK);
    cr_assert(tu_bytes_eq(b.data, b.len, big, sizeof big), "the large value reads back wrong after reopen");
    eng_buf_free(&b);
    g[kbig] = -1;
    for (uint64_t i = 0; i < n; i++)
        if (i != kbig && g[i] >= 0) {
            uint8_t w[CU_VMAX];
            cr_assert_eq(eng_get(db, kb1, cu_key(kb1, i), &b), ENG_OK, "key %llu after reopen", (unsigned long long)i);
            cr_assert(tu_bytes_eq(b.data, b.len, w, mv_val(w, i, g[i])), "key %llu after reopen",
                      (unsigned long long)i);
        }
    eng_buf_free(&b);
    cu_verify_clean(db, "reopened");
    tu_close(db);
    free(g);
}
