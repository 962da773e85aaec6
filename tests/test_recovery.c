/*
 * test_recovery.c -- crashes at any point of the write path lose no
 * acknowledged commit, keep batches whole, rebuild torn pages from their
 * images, trim only a torn tail and report damage to the synced log
 * (DESIGN 3.4, 3.8; wal.h W1-W4; recovery.h).
 *
 * A crash is a child process that dies: SIGKILL from the parent, _exit()
 * from an I/O hook at the Nth write, or _exit() without eng_close.  The
 * page cache survives a process crash, so a "torn" page or log tail is
 * made by editing the files after the child is gone.  Children report to
 * the parent through a pipe, only after a call returned (an
 * acknowledgement); the parent reopens the directory and asserts:
 *   P  prefix: the keys present are exactly 0..m-1, with their values (keys
 *      are written in index order, one batch per key unless said), and
 *      recovery_info.recovered_seq == m (sequences start at 1);
 *   A  every acknowledged write is present; at most the one write in
 *      flight at the crash is present beyond them;
 *   B  a multi-op batch is wholly present or wholly absent;
 *   C  corruption in the synced part of the log fails the open with
 *      ENG_CORRUPTION (layer wal_record) and changes nothing on disk; a
 *      torn page without an image is detected, never returned as data;
 *   V  eng_verify finds nothing after every successful recovery.
 * Tests (each once per I/O backend; rounds name their seed):
 *   sigkill_during_commit_load_recovers_exact_prefix      P A V
 *   torn_page_after_crash_is_rebuilt_from_its_image       FPI restores a torn leaf
 *   torn_page_without_image_is_detected_not_returned      C (full_page_writes off)
 *   wal_compression_zstd_round_trip                       zstd FPIs, smaller, restore
 *   corrupted_record_in_synced_middle_is_reported         C (W3)
 *   torn_tail_is_trimmed                                  trimmed == 1, P A, log goes on
 *   batch_interrupted_by_crash_leaves_no_trace            B A, crash at the Nth write
 *   crash_during_recovery_reaches_the_same_state          recovery interrupted, then redone
 *   group_commit_acknowledges_nothing_before_its_fsync    W2, one fsync for many
 *   failed_fsync_poisons_the_handle                       W4, A
 *   sync_off_survives_clean_close_and_recovers_after_crash
 *   checkpoint_removes_and_archives_segments
 * Children are made with cu_fork (crashutil.h): they die with the test
 * process and after CU_CHILD_ALARM seconds at the latest.  Seeds derive
 * from CU_SEED (environment) and every message names its round's seed.
 */
#include <stdarg.h>
#include <stdatomic.h>

#include "crashutil.h"
#include "wal.h"

#define T_OPTS .timeout = 300, .fini = cu_fini

#define SEG (64u << 10)
#define PS 8192u

/* ---- shared pieces ---------------------------------------------------------- */

static int all_zero(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

static size_t val_plain(void *ctx, uint64_t i, uint8_t buf[CU_VMAX]) {
    (void)ctx;
    return cu_val(buf, i, 0, 0, 0);
}

static int put_plain(eng_db *db, uint64_t i, uint64_t *seq) {
    char k[CU_KLEN + 1];
    uint8_t v[CU_VMAX];
    size_t kl = cu_key(k, i), vl = cu_val(v, i, 0, 0, 0);
    return eng_put(db, k, kl, v, vl, seq);
}

static int put_gen(eng_db *db, uint64_t i, uint32_t gen, int compressible) {
    char k[CU_KLEN + 1];
    uint8_t v[CU_VMAX];
    size_t kl = cu_key(k, i), vl = cu_val(v, i, gen, 0, compressible);
    return eng_put(db, k, kl, v, vl, NULL);
}

/* Options most rounds share. */
static eng_options base_opts(int backend, int sync_mode, size_t cache, uint64_t ckpt_bytes) {
    eng_options o;
    eng_options_init(&o);
    o.io_backend = backend;
    o.sync_mode = sync_mode;
    o.wal_segment_size = SEG;
    o.checkpoint_wal_bytes = ckpt_bytes;
    if (cache) o.cache_size = cache;
    return o;
}

/* A fresh, empty directory at PATH (reused between rounds). */
static void fresh_dir(const char *path) {
    tu_rm_rf(path);
    cr_assert(mkdir(path, 0700) == 0, "mkdir %s: %s", path, strerror(errno));
}

/* Reopen DIR, check P and V with VAL (batches of PER_BATCH keys), close;
 * returns m and the recovery info in *RI. */
static uint64_t reopen_check_batches(const char *dir, const eng_options *o, cu_valfn val, void *ctx,
                                     eng_recovery_info *ri, const char *what, uint64_t per_batch) {
    tu_reports rep;
    tu_reports_init(&rep);
    eng_options oo = *o;
    oo.io_hooks = NULL;
    oo.on_corruption = tu_collect;
    oo.on_corruption_ctx = &rep;
    eng_db *db = NULL;
    int rc = eng_open(dir, &oo, &db);
    char buf[2048];
    cr_assert_eq(rc, ENG_OK, "%s: reopen after the crash: %s\n%s", what, eng_strerror(rc),
                 tu_reports_str(&rep, buf, sizeof buf));
    eng_get_recovery_info(db, ri);
    uint64_t m = cu_check_prefix(db, val, ctx, what);
    cr_assert_eq(m % per_batch, 0, "%s: batch %llu is cut: %llu of its %llu keys present", what,
                 (unsigned long long)(m / per_batch), (unsigned long long)(m % per_batch),
                 (unsigned long long)per_batch);
    uint64_t b = m / per_batch;
    /* Sequences are transaction ids: a batch cut by an earlier crash kept
     * its id (aborted, never reused), so the last committed sequence may
     * count one more than the batches present. */
    /* ... and after a crash, ids restart above the lease (engine.c
     * XID_LEASE): the batches present are then fewer than the last id. */
    cr_assert(ri->recovered_seq >= b,
              "%s: recovered_seq %llu but %llu batches are present (committed %llu aborted %llu)", what,
              (unsigned long long)ri->recovered_seq, (unsigned long long)b,
              (unsigned long long)ri->txns_committed, (unsigned long long)ri->txns_aborted);
    /* A batch cut by the crash keeps its id (aborted, never reused). */
    /* Ids are never reused: a restart continues above the id lease
     * (engine.c XID_LEASE), so the last id used may lie well above. */
    cr_assert(eng_last_seq(db) >= b,
              "%s: eng_last_seq %llu after recovering %llu batches", what,
              (unsigned long long)eng_last_seq(db), (unsigned long long)b);
    cu_verify_clean(db, what);
    rc = eng_close(db);
    cr_assert_eq(rc, ENG_OK, "%s: close after recovery: %s", what, eng_strerror(rc));
    return m;
}

static uint64_t reopen_check(const char *dir, const eng_options *o, cu_valfn val, void *ctx,
                             eng_recovery_info *ri, const char *what) {
    return reopen_check_batches(dir, o, val, ctx, ri, what, 1);
}

/* Messages from children: pairs (tag, value). */
enum { MSG_ACK = 1, MSG_FAIL = 2, MSG_COUNT = 3, MSG_VAL = 4 };
typedef struct msg {
    uint32_t tag, step;
    uint64_t v;
} msg;

static void child_send(int fd, uint32_t tag, uint32_t step, uint64_t v) {
    msg m = { tag, step, v };
    if (cu_write_all(fd, &m, sizeof m) != 0) _exit(CU_EXIT_FAIL);
}

/* A step of the child failed with RC: tell the parent and die. */
static void child_fail(int fd, uint32_t step, int rc) {
    child_send(fd, MSG_FAIL, step, (uint64_t)(uint32_t)rc);
    _exit(CU_EXIT_FAIL);
}

/* Read every message of a child to EOF, then reap it.  Returns the wait
 * status; messages go to MSGS (up to CAP; *N gets the count). */
static int child_collect(pid_t pid, int fd, msg *msgs, size_t cap, size_t *n) {
    *n = 0;
    msg m;
    while (cu_read_all(fd, &m, sizeof m) == sizeof m) {
        if (*n < cap) msgs[*n] = m;
        (*n)++;
    }
    close(fd);
    return cu_wait(pid);
}

/* Fail the test if a child reported a failed step. */
static void assert_no_child_fail(const msg *msgs, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++)
        cr_assert(msgs[i].tag != MSG_FAIL, "%s: the child's step %u failed: %s", what, msgs[i].step,
                  eng_strerror((int)msgs[i].v));
}

/* ========================================================================= */
/* 1. SIGKILL during a load with commit sync: the recovered state is exactly
 *    the acknowledged prefix (plus at most the put in flight).             */
/* ========================================================================= */

#define KILL_ROUNDS 5
#define KILL_NMAX 1000000u

static eng_options kill_opts(int backend) {
    /* 256 KiB of cache evicts dirty pages during the load; checkpoints
     * every 256 KiB of log happen during it, and 64 KiB segments are
     * removed (or recycled) by them. */
    return base_opts(backend, ENG_SYNC_COMMIT, 256u << 10, 256u << 10);
}

static void child_commit_load(const char *dir, int backend, int fd) {
    eng_options o = kill_opts(backend);
    eng_db *db = NULL;
    int rc = eng_open(dir, &o, &db);
    if (rc) child_fail(fd, 1, rc);
    for (uint64_t i = 0; i < KILL_NMAX; i++) {
        uint64_t seq = 0;
        rc = put_plain(db, i, &seq);
        if (rc) child_fail(fd, 2, rc);
        if (seq != i + 1) child_fail(fd, 3, ENG_INVALID);
        child_send(fd, MSG_ACK, 0, i);
    }
    _exit(CU_EXIT_DONE);
}

TU_BACKEND_TEST_FN(recovery, sigkill_during_commit_load_recovers_exact_prefix, T_OPTS) {
    const char *dir = tu_tmpdir_db();
    for (int r = 0; r < KILL_ROUNDS; r++) {
        uint64_t seed = cu_seed(0x100 + (uint64_t)backend * 16 + (uint64_t)r);
        tu_rng rng = { seed };
        /* r 0: a short delay from the start (the kill may land in the
         * creation); odd rounds: after K acknowledgements; even: a delay
         * after the first acknowledgement. */
        int mode = r == 0 ? 0 : (r % 2 ? 1 : 2);
        uint64_t k_acks = tu_range(&rng, 1, 2500);
        uint64_t delay = mode == 0 ? tu_range(&rng, 0, 30) : tu_range(&rng, 0, 250);
        char what[200];
        snprintf(what, sizeof what, "%s round %d seed 0x%llx (%s %llu)", tu_backend_name(backend), r,
                 (unsigned long long)seed, mode == 1 ? "kill after acks" : "kill after ms",
                 (unsigned long long)(mode == 1 ? k_acks : delay));
        tu_rm_rf(dir); /* the child creates the database (mode 0 may kill it then) */

        int fd;
        pid_t pid = cu_fork_piped(&fd);
        if (pid == 0) child_commit_load(dir, backend, fd);
        uint64_t t0 = cu_now_ms(), t_first = 0, nacks = 0;
        int64_t last = -1;
        int killed = 0;
        msg m;
        size_t have = 0;
        uint8_t *mb = (uint8_t *)&m;
        for (;;) {
            int fire = 0;
            uint64_t now = cu_now_ms();
            if (!killed) {
                if (mode == 0) fire = now - t0 >= delay;
                else if (mode == 1) fire = nacks >= k_acks;
                else fire = t_first && now - t_first >= delay;
                if (nacks > 200000) fire = 1; /* never let a child run on */
            }
            if (fire) {
                kill(pid, SIGKILL);
                killed = 1;
            }
            struct pollfd pf = { fd, POLLIN, 0 };
            int pr = poll(&pf, 1, killed ? 1000 : 2);
            if (pr < 0 && errno == EINTR) continue;
            if (pr == 0) continue;
            ssize_t got = read(fd, mb + have, sizeof m - have);
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) break; /* EOF: the child is gone */
            have += (size_t)got;
            if (have < sizeof m) continue;
            have = 0;
            cr_assert(m.tag == MSG_ACK, "%s: the child's step %u failed: %s", what, m.step,
                      eng_strerror((int)m.v));
            cr_assert_eq((int64_t)m.v, last + 1, "%s: acknowledgements out of order", what);
            last = (int64_t)m.v;
            nacks++;
            if (!t_first) t_first = cu_now_ms();
        }
        close(fd);
        int st = cu_wait(pid);
        char sb[64];
        cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "%s: the child ended with %s, not by the kill",
                  what, cu_status_str(st, sb, sizeof sb));

        eng_options o = kill_opts(backend);
        eng_recovery_info ri;
        uint64_t got_m = reopen_check(dir, &o, val_plain, NULL, &ri, what);
        cr_log_info("%s: last ack %lld, %llu keys recovered; redo %llu end %llu, %llu records, %llu images "
                    "restored, %u batch ops completed, trimmed %d", what, (long long)last,
                    (unsigned long long)got_m, (unsigned long long)ri.redo_lsn, (unsigned long long)ri.end_lsn,
                    (unsigned long long)ri.records, (unsigned long long)ri.images_restored,
                    ri.batch_ops_completed, ri.trimmed);
        cr_assert(got_m >= (uint64_t)(last + 1), "%s: %llu keys recovered but key %lld was acknowledged", what,
                  (unsigned long long)got_m, (long long)last);
        cr_assert(got_m <= (uint64_t)(last + 2),
                  "%s: %llu keys recovered but only %lld were acknowledged (one more may be in flight)", what,
                  (unsigned long long)got_m, (long long)(last + 1));
    }
}

/* ========================================================================= */
/* 2, 10. A page torn by the crash is rebuilt from its full-page image;      */
/*        without images the tear is detected, never returned as data.       */
/* ========================================================================= */

#define TORN_NKEYS 3000
#define TORN_MAXLEAF 512

typedef struct torn_fixture {
    int backend, fpw, zstd;
    const char *dir;       /* built, checkpointed and closed; then crashed */
    uint64_t leaf;         /* the block torn */
    int nleaf;
    uint64_t leaf_keys[TORN_MAXLEAF];
    uint8_t in_leaf[TORN_NKEYS];
    uint8_t old[PS];       /* the leaf as the checkpoint left it */
    uint8_t newp[PS];      /* the leaf as the crashed child wrote it back */
    uint64_t images, image_bytes, image_raw_bytes; /* the child's stats */
} torn_fixture;

static torn_fixture TF;

static size_t val_torn(void *ctx, uint64_t i, uint8_t buf[CU_VMAX]) {
    torn_fixture *f = ctx;
    return cu_val(buf, i, i < TORN_NKEYS && f->in_leaf[i] ? 1 : 0, 0, f->zstd);
}

static eng_options torn_opts(const torn_fixture *f, size_t cache) {
    eng_options o = base_opts(f->backend, ENG_SYNC_COMMIT, cache, 0);
    o.full_page_writes = f->fpw;
    o.wal_compression = f->zstd ? ENG_WAL_COMPRESSION_ZSTD : ENG_WAL_COMPRESSION_NONE;
    o.page_size = PS;
    return o;
}

/* Child: update every key of the leaf (same lengths, generation 1), sync
 * the log, then read the rest of the tree through a 16-page cache until
 * the leaf has been written back; die without closing. */
static void child_torn(torn_fixture *f, int fd) {
    eng_options o = torn_opts(f, 16 * PS);
    eng_db *db = NULL;
    int rc = eng_open(f->dir, &o, &db);
    if (rc) child_fail(fd, 1, rc);
    char k[CU_KLEN + 1];
    uint8_t v[CU_VMAX];
    for (int j = 0; j < f->nleaf; j++) {
        uint64_t i = f->leaf_keys[j];
        size_t vl = cu_val(v, i, 1, 0, f->zstd);
        if ((rc = eng_put(db, k, cu_key(k, i), v, vl, NULL))) child_fail(fd, 2, rc);
    }
    if ((rc = eng_sync(db))) child_fail(fd, 3, rc);
    eng_stats st;
    eng_get_stats(db, &st);
    char path[4200];
    snprintf(path, sizeof path, "%s/data", f->dir);
    int dfd = open(path, O_RDONLY);
    if (dfd < 0) child_fail(fd, 4, ENG_IOERR);
    uint8_t page[PS];
    eng_buf b = { 0 };
    int written = 0;
    for (int pass = 0; pass < 8 && !written; pass++) {
        for (uint64_t i = 0; i < TORN_NKEYS; i++) {
            if (f->in_leaf[i]) continue;
            if ((rc = eng_get(db, k, cu_key(k, i), &b))) child_fail(fd, 5, rc);
        }
        if (pread(dfd, page, PS, (off_t)(f->leaf * PS)) != (ssize_t)PS) child_fail(fd, 6, ENG_IOERR);
        written = memcmp(page, f->old, PS) != 0;
    }
    if (!written) child_fail(fd, 7, ENG_BUSY); /* the leaf never left the cache */
    child_send(fd, MSG_VAL, 1, st.images);
    child_send(fd, MSG_VAL, 2, st.image_bytes);
    child_send(fd, MSG_VAL, 3, st.image_raw_bytes);
    _exit(CU_EXIT_DONE); /* a crash: no close, no checkpoint */
}

/* Build, checkpoint, close; pick a leaf; crash a child that rewrites it. */
static void torn_setup(int backend, int fpw, int zstd) {
    torn_fixture *f = &TF;
    memset(f, 0, sizeof *f);
    f->backend = backend;
    f->fpw = fpw;
    f->zstd = zstd;
    f->dir = tu_tmpdir();
    eng_options o = torn_opts(f, 0);
    eng_db *db = tu_open(f->dir, &o);
    for (uint64_t i = 0; i < TORN_NKEYS; i++)
        cr_assert_eq(put_gen(db, i, 0, zstd), ENG_OK);
    cr_assert_eq(eng_checkpoint(db), ENG_OK);
    tu_close(db);

    /* The leaf: one in the middle of the leaves, with many keys. */
    uint64_t nb = tu_data_nblocks(f->dir, PS);
    uint64_t cand[4096];
    int nc = 0;
    uint8_t page[PS];
    for (uint64_t b = 1; b < nb && nc < 4096; b++) {
        tu_read_page(f->dir, b, PS, page);
        int z = 0;
        page_problem pr;
        if (page_verify(page, PS, b, nb, 1, &z, &pr) != ENG_OK || z) continue;
        if (ph_get_type(page) == PAGE_LEAF && ph_get_nslots(page) >= 20) cand[nc++] = b;
    }
    cr_assert(nc >= 3, "fixture: only %d leaves with 20+ keys", nc);
    f->leaf = cand[nc / 2];
    tu_read_page(f->dir, f->leaf, PS, f->old);
    unsigned ns = ph_get_nslots(f->old);
    cr_assert(ns <= TORN_MAXLEAF);
    for (unsigned s = 0; s < ns; s++) {
        leaf_cell c;
        page_leaf_cell(f->old, s, &c);
        int64_t idx = cu_key_index(c.key, c.klen);
        cr_assert(idx >= 0 && idx < TORN_NKEYS, "fixture: leaf %llu slot %u holds a foreign key",
                  (unsigned long long)f->leaf, s);
        f->leaf_keys[f->nleaf++] = (uint64_t)idx;
        f->in_leaf[idx] = 1;
    }

    int fd;
    pid_t pid = cu_fork_piped(&fd);
    if (pid == 0) child_torn(f, fd);
    msg msgs[16];
    size_t n;
    int st = child_collect(pid, fd, msgs, 16, &n);
    assert_no_child_fail(msgs, n < 16 ? n : 16, "torn-page child");
    char sb[64];
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == CU_EXIT_DONE, "torn-page child: %s",
              cu_status_str(st, sb, sizeof sb));
    for (size_t i = 0; i < n && i < 16; i++) {
        if (msgs[i].tag != MSG_VAL) continue;
        if (msgs[i].step == 1) f->images = msgs[i].v;
        if (msgs[i].step == 2) f->image_bytes = msgs[i].v;
        if (msgs[i].step == 3) f->image_raw_bytes = msgs[i].v;
    }
    tu_read_page(f->dir, f->leaf, PS, f->newp);
    cr_assert(ph_get_lsn(f->newp) > ph_get_lsn(f->old),
              "fixture: the leaf written back has LSN %llu, the checkpointed one %llu",
              (unsigned long long)ph_get_lsn(f->newp), (unsigned long long)ph_get_lsn(f->old));
    if (fpw) cr_assert(f->images >= 1, "the first change after the checkpoint logged no image");
    else cr_assert_eq(f->images, 0, "full_page_writes off, yet %llu images were logged (the updates split nothing)",
                      (unsigned long long)f->images);
}

enum { TEAR_OLD_AFTER_512, TEAR_ZERO_AFTER_HALF, TEAR_OLD_AFTER_K, TEAR_KINDS };
/* Names kind T (with K when it matters) into BUF. */
static const char *tear_name(char *buf, size_t cap, int t, unsigned k) {
    if (t == TEAR_OLD_AFTER_512) snprintf(buf, cap, "new first 512 bytes, old rest");
    else if (t == TEAR_ZERO_AFTER_HALF) snprintf(buf, cap, "new first half, zeros after");
    else snprintf(buf, cap, "new first %u*512 bytes, old rest", k);
    return buf;
}

/* The torn bytes of kind T (K sectors for TEAR_OLD_AFTER_K). */
static void make_tear(const torn_fixture *f, int t, unsigned k, uint8_t *out) {
    size_t keep = t == TEAR_OLD_AFTER_512 ? 512 : t == TEAR_ZERO_AFTER_HALF ? PS / 2 : 512u * k;
    memcpy(out, f->newp, keep);
    if (t == TEAR_ZERO_AFTER_HALF) memset(out + keep, 0, PS - keep);
    else memcpy(out + keep, f->old + keep, PS - keep);
}

/* Copy the crashed dir to WORK and tear the leaf there; returns 0 if this
 * tear would leave the new page whole (nothing to test). */
static int tear_copy(const torn_fixture *f, const char *work, int t, unsigned k) {
    uint8_t torn[PS];
    make_tear(f, t, k, torn);
    if (memcmp(torn, f->newp, PS) == 0) return 0;
    tu_copy_dir(f->dir, work);
    tu_write_page(work, f->leaf, PS, torn);
    return 1;
}

static void torn_page_rebuilt_rounds(int backend, int zstd) {
    torn_setup(backend, 1, zstd);
    torn_fixture *f = &TF;
    const char *work = tu_tmpdir();
    tu_rng rng = { cu_seed(0x200 + (uint64_t)backend + 8u * (uint64_t)zstd) };
    int tested = 0;
    for (int t = 0; t < TEAR_KINDS; t++) {
        unsigned k = (unsigned)tu_range(&rng, 2, PS / 512 - 1);
        if (!tear_copy(f, work, t, k)) continue;
        tested++;
        char what[200], tn[64];
        snprintf(what, sizeof what, "%s%s, leaf %llu torn (%s)", tu_backend_name(backend),
                 zstd ? " zstd" : "", (unsigned long long)f->leaf, tear_name(tn, sizeof tn, t, k));
        eng_options o = torn_opts(f, 16 * PS);
        eng_recovery_info ri;
        /* Every key is back, the leaf's with their updated values. */
        tu_reports rep;
        tu_reports_init(&rep);
        o.on_corruption = tu_collect;
        o.on_corruption_ctx = &rep;
        eng_db *db = NULL;
        int rc = eng_open(work, &o, &db);
        char buf[2048];
        cr_assert_eq(rc, ENG_OK, "%s: open: %s\n%s", what, eng_strerror(rc), tu_reports_str(&rep, buf, sizeof buf));
        eng_get_recovery_info(db, &ri);
        cr_assert(ri.images_restored >= 1, "%s: recovery restored no image", what);
        cu_verify_clean(db, what);
        uint64_t m = cu_check_prefix(db, val_torn, f, what);
        cr_assert_eq(m, TORN_NKEYS, "%s: %llu keys after recovery", what, (unsigned long long)m);
        cr_assert_eq(rep.total, 0, "%s: recovery reported corruption:\n%s", what,
                     tu_reports_str(&rep, buf, sizeof buf));
        rc = eng_close(db);
        cr_assert_eq(rc, ENG_OK, "%s: close: %s", what, eng_strerror(rc));
        /* And the block on disk is whole again. */
        uint8_t page[PS];
        tu_read_page(work, f->leaf, PS, page);
        int z = 0;
        page_problem pr;
        cr_assert_eq(page_verify(page, PS, f->leaf, tu_data_nblocks(work, PS), 1, &z, &pr), ENG_OK,
                     "%s: the leaf on disk after recovery and close: %s", what, pr.detail);
    }
    cr_assert(tested >= 2, "only %d tears differ from the new page", tested);
    if (zstd)
        cr_assert(f->image_bytes < f->image_raw_bytes,
                  "zstd: images took %llu bytes for %llu raw bytes (%llu images)",
                  (unsigned long long)f->image_bytes, (unsigned long long)f->image_raw_bytes,
                  (unsigned long long)f->images);
}

TU_BACKEND_TEST(recovery, torn_page_after_crash_is_rebuilt_from_its_image, T_OPTS) {
    torn_page_rebuilt_rounds(*backend, 0);
}

TU_BACKEND_TEST(recovery, wal_compression_zstd_round_trip, T_OPTS) {
    torn_page_rebuilt_rounds(*backend, 1);
}

TU_BACKEND_TEST_FN(recovery, torn_page_without_image_is_detected_not_returned, T_OPTS) {
    torn_setup(backend, 0, 0);
    torn_fixture *f = &TF;
    const char *work = tu_tmpdir();
    tu_rng rng = { cu_seed(0x280 + (uint64_t)backend) };
    int tested = 0;
    for (int t = 0; t < TEAR_KINDS; t++) {
        unsigned k = (unsigned)tu_range(&rng, 2, PS / 512 - 1);
        if (!tear_copy(f, work, t, k)) continue;
        tested++;
        char what[200], tn[64];
        snprintf(what, sizeof what, "%s fpw off, leaf %llu torn (%s)", tu_backend_name(backend),
                 (unsigned long long)f->leaf, tear_name(tn, sizeof tn, t, k));
        tu_reports rep;
        tu_reports_init(&rep);
        eng_options o = torn_opts(f, 16 * PS);
        o.on_corruption = tu_collect;
        o.on_corruption_ctx = &rep;
        eng_db *db = NULL;
        int rc = eng_open(work, &o, &db);
        char buf[2048];
        if (rc != ENG_OK) {
            cr_assert_eq(rc, ENG_CORRUPTION, "%s: open: %s", what, eng_strerror(rc));
            cr_assert(tu_reports_has(&rep, -1, "data", (int64_t)f->leaf),
                      "%s: open failed on corruption without naming data block %llu:\n%s", what,
                      (unsigned long long)f->leaf, tu_reports_str(&rep, buf, sizeof buf));
            cr_log_info("%s: open detected it: %s", what, tu_reports_str(&rep, buf, sizeof buf));
            continue;
        }
        /* Open went through: then reads of the leaf's keys and eng_verify
         * must say corruption at the leaf, and no read returns a value
         * other than the one last written. */
        eng_buf b = { 0 };
        char kb[CU_KLEN + 1];
        uint8_t want[CU_VMAX];
        int detected = 0;
        for (uint64_t i = 0; i < TORN_NKEYS; i++) {
            rc = eng_get(db, kb, cu_key(kb, i), &b);
            if (rc == ENG_CORRUPTION) { detected++; continue; }
            cr_assert_eq(rc, ENG_OK, "%s: get of key %llu: %s", what, (unsigned long long)i, eng_strerror(rc));
            size_t wl = val_torn(f, i, want);
            cr_assert(tu_bytes_eq(b.data, b.len, want, wl), "%s: key %llu read back a wrong value%s", what,
                      (unsigned long long)i, f->in_leaf[i] ? " (a key of the torn leaf)" : "");
        }
        eng_buf_free(&b);
        uint64_t problems = 0;
        tu_reports vrep;
        tu_reports_init(&vrep);
        rc = eng_verify(db, tu_collect, &vrep, &problems);
        cr_assert(detected > 0 || problems > 0, "%s: the torn leaf was neither reported by gets nor by verify",
                  what);
        cr_assert(tu_reports_has(&rep, -1, "data", (int64_t)f->leaf) ||
                      tu_reports_has(&vrep, -1, "data", (int64_t)f->leaf),
                  "%s: no report names data block %llu:\n%s", what, (unsigned long long)f->leaf,
                  tu_reports_str(&rep, buf, sizeof buf));
        eng_close(db); /* may fail: the tree holds a corrupt page */
    }
    cr_assert(tested >= 2, "only %d tears differ from the new page", tested);
}

/* ========================================================================= */
/* 3. A damaged record with synced log behind it fails the open.            */
/* ========================================================================= */

typedef struct log_child_out {
    uint64_t n;        /* puts acknowledged */
    uint64_t end[4096]; /* wal_insert_lsn after put i (the first 4096) */
} log_child_out;

/* Child: commit-sync puts with no checkpoint until the log reaches
 * UNTIL_LSN (or N_MAX puts), reporting each put's end LSN; die. */
static void child_log_load(const char *dir, int backend, uint64_t until_lsn, uint64_t n_max, int fd) {
    eng_options o = base_opts(backend, ENG_SYNC_COMMIT, 0, 0);
    eng_db *db = NULL;
    int rc = eng_open(dir, &o, &db);
    if (rc) child_fail(fd, 1, rc);
    eng_stats st;
    for (uint64_t i = 0; i < n_max; i++) {
        if ((rc = put_plain(db, i, NULL))) child_fail(fd, 2, rc);
        eng_get_stats(db, &st);
        child_send(fd, MSG_ACK, 0, st.wal_insert_lsn);
        if (st.wal_durable_lsn < st.wal_insert_lsn) child_fail(fd, 3, ENG_INVALID);
        if (st.wal_insert_lsn >= until_lsn) break;
    }
    _exit(CU_EXIT_DONE);
}

static void run_log_child(const char *dir, int backend, uint64_t until_lsn, uint64_t n_max, log_child_out *out) {
    int fd;
    pid_t pid = cu_fork_piped(&fd);
    if (pid == 0) child_log_load(dir, backend, until_lsn, n_max, fd);
    static msg msgs[8192];
    size_t n;
    int st = child_collect(pid, fd, msgs, 8192, &n);
    cr_assert(n <= 8192);
    assert_no_child_fail(msgs, n, "log child");
    char sb[64];
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == CU_EXIT_DONE, "log child: %s", cu_status_str(st, sb, sizeof sb));
    out->n = n;
    for (size_t i = 0; i < n && i < 4096; i++) out->end[i] = msgs[i].v;
}

/* Bytes of every segment file, to prove a failed open changed nothing. */
static void snapshot_wal(const char *dir, cu_wal *w) { cu_wal_load(dir, SEG, w); }

static void assert_wal_unchanged(const char *dir, const cu_wal *before, const char *what) {
    cu_wal now;
    cu_wal_load(dir, SEG, &now);
    cr_assert_eq(now.l.n, before->l.n, "%s: the failed open changed the set of segments (%d -> %d)", what,
                 before->l.n, now.l.n);
    for (int i = 0; i < now.l.n; i++) {
        cr_assert(now.l.start[i] == before->l.start[i] && now.l.size[i] == before->l.size[i] &&
                      memcmp(now.data[i], before->data[i], now.l.size[i]) == 0,
                  "%s: the failed open changed segment %016llx", what, (unsigned long long)now.l.start[i]);
    }
    cu_wal_free(&now);
}

enum { FLIP_PAYLOAD, FLIP_REC_HEADER, FLIP_BLOCK_HEADER, FLIP_KINDS };

TU_BACKEND_TEST_FN(recovery, corrupted_record_in_synced_middle_is_reported, T_OPTS) {
    const char *crashed = tu_tmpdir(), *work = tu_tmpdir();
    static log_child_out lo;
    run_log_child(crashed, backend, 4 * SEG + SEG / 2, 100000, &lo);
    cu_seglist segs;
    cu_list_segments(crashed, "wal", &segs);
    cr_assert(segs.n >= 5 && cu_seglist_has(&segs, SEG) && cu_seglist_has(&segs, 3 * SEG),
              "fixture: %d segments after %llu puts", segs.n, (unsigned long long)lo.n);
    tu_rng rng = { cu_seed(0x300 + (uint64_t)backend) };

    for (int kind = 0; kind < FLIP_KINDS; kind++) {
        /* A record starting in a block of segment 1 (segments 2..4 follow,
         * all synced): its payload, its header, or its block's header. */
        tu_copy_dir(crashed, work);
        cu_wal w;
        cu_wal_load(work, SEG, &w);
        uint64_t blk = SEG + CU_WBLK * tu_range(&rng, 1, SEG / CU_WBLK - 10), pos = 0;
        int found = 0;
        for (int tries = 0; tries < 8; tries++, blk += CU_WBLK)
            if ((found = cu_wal_first_in_block(&w, blk, &pos))) break;
        cr_assert(found, "fixture: no record found in segment 1 near block %llu: the log is not laid out as "
                         "wal.h draws it", (unsigned long long)blk);
        uint32_t len = 0;
        int type = 0;
        cu_wal_rec_at(&w, pos, &len, &type);
        uint64_t target;
        const char *what_kind;
        if (kind == FLIP_PAYLOAD) {
            /* A payload byte inside the same block. */
            uint64_t room = CU_WBLK - pos % CU_WBLK;
            uint64_t plen = len - CU_WHDR;
            if (plen == 0 || room <= CU_WHDR) target = pos + (room > 24 ? 24 : 0); /* its checksum instead */
            else /* record byte 32 + k, wherever the trailers put it */
                target = cu_wal_skip(cu_wal_advance(pos, CU_WHDR + tu_below(&rng, plen < room - CU_WHDR ? plen : room - CU_WHDR)));
            what_kind = "payload byte";
        } else if (kind == FLIP_REC_HEADER) {
            target = pos + 1; /* xl_len: the framing */
            what_kind = "record length";
        } else {
            target = blk + 3; /* wb_lsn of the record's block */
            what_kind = "block header";
        }
        cu_wal_free(&w);
        char seg[4200], what[256];
        cu_seg_path(seg, sizeof seg, work, target & ~(uint64_t)(SEG - 1));
        uint64_t off = target & (SEG - 1);
        uint8_t mask = (uint8_t)(1u << tu_below(&rng, 8));
        snprintf(what, sizeof what, "%s: %s flipped at LSN %llu (record at %llu, type %d, len %u, mask 0x%02x)",
                 tu_backend_name(backend), what_kind, (unsigned long long)target, (unsigned long long)pos, type,
                 len, mask);
        cu_flip_byte(seg, off, mask);
        cu_wal before;
        snapshot_wal(work, &before);

        tu_reports rep;
        tu_reports_init(&rep);
        eng_options o = base_opts(backend, ENG_SYNC_COMMIT, 0, 0);
        o.on_corruption = tu_collect;
        o.on_corruption_ctx = &rep;
        eng_db *db = NULL;
        int rc = eng_open(work, &o, &db);
        if (rc == ENG_OK) {
            eng_recovery_info ri;
            eng_get_recovery_info(db, &ri);
            uint64_t present = 0;
            eng_buf b = { 0 };
            char kb[CU_KLEN + 1];
            for (uint64_t i = 0; i < lo.n; i++) present += eng_get(db, kb, cu_key(kb, i), &b) == ENG_OK;
            eng_buf_free(&b);
            eng_close(db);
            cr_assert_fail("%s: open succeeded (trimmed=%d, recovered_seq %llu, %llu of %llu keys present): "
                           "the synced log was cut silently", what, ri.trimmed,
                           (unsigned long long)ri.recovered_seq, (unsigned long long)present,
                           (unsigned long long)lo.n);
        }
        char buf[2048];
        cr_assert_eq(rc, ENG_CORRUPTION, "%s: open returned %s", what, eng_strerror(rc));
        cr_assert(tu_reports_has(&rep, ENG_LAYER_WAL, NULL, -1), "%s: no wal_record report:\n%s", what,
                  tu_reports_str(&rep, buf, sizeof buf));
        assert_wal_unchanged(work, &before, what);
        cu_wal_free(&before);

        /* Undo the flip: nothing was lost by the failed open. */
        cu_flip_byte(seg, off, mask);
        eng_recovery_info ri;
        uint64_t m = reopen_check(work, &o, val_plain, NULL, &ri, what);
        cr_assert_eq(m, lo.n, "%s: after undoing the flip %llu of %llu keys", what, (unsigned long long)m,
                     (unsigned long long)lo.n);
    }
}

/* ========================================================================= */
/* 4. A torn log tail is trimmed; nothing synced before it is lost.          */
/* ========================================================================= */

enum { TAIL_ZERO, TAIL_GARBAGE, TAIL_TRUNCATE, TAIL_KINDS };

TU_BACKEND_TEST_FN(recovery, torn_tail_is_trimmed, T_OPTS) {
    const char *crashed = tu_tmpdir(), *work = tu_tmpdir();
    static log_child_out lo;
    run_log_child(crashed, backend, 2 * SEG + SEG / 3, 4000, &lo);
    cr_assert(lo.n >= 10 && lo.n <= 4096);
    uint64_t n = lo.n, e_last = lo.end[n - 1], e_prev = lo.end[n - 2];
    tu_rng rng = { cu_seed(0x400 + (uint64_t)backend) };

    /* The records of the last put: its batch record and what follows. */
    cu_wal w;
    cu_wal_load(crashed, SEG, &w);
    uint64_t last_start = cu_wal_next_start(e_prev);
    uint32_t len;
    int type;
    cr_assert(cu_wal_rec_at(&w, last_start, &len, &type),
              "fixture: no record at LSN %llu, where the last put's first record should start",
              (unsigned long long)last_start);
    uint64_t p = last_start, nrec = 0, last_rec = last_start;
    while (p < e_last) {
        cr_assert(cu_wal_rec_at(&w, p, &len, &type), "fixture: no record at LSN %llu (walking to %llu)",
                  (unsigned long long)p, (unsigned long long)e_last);
        last_rec = p;
        uint64_t end = cu_wal_advance(p, len);
        nrec++;
        if (end >= e_last) {
            cr_assert_eq(end, e_last, "fixture: the last record ends at %llu, the log at %llu",
                         (unsigned long long)end, (unsigned long long)e_last);
            break;
        }
        p = cu_wal_next_start(end);
    }
    /* A cut in the middle of the last record, before its last nonzero
     * byte (a cut that removes only zero bytes removes nothing: the reader
     * reads a short block as zero-filled). */
    uint64_t cut = last_rec + (e_last - last_rec) / 2;
    while (cut > last_rec + 1) {
        int nz = 0;
        for (uint64_t x = cut; x < e_last && !nz; x++) nz = cu_wal_byte(&w, x) > 0;
        if (nz) break;
        cut--;
    }
    cu_wal_free(&w);
    cr_assert(nrec >= 1);

    for (int kind = 0; kind < TAIL_KINDS; kind++) {
        tu_copy_dir(crashed, work);
        /* Damage [d, e_last): from inside the last put's records (only
         * bytes a crash during its fsync could tear) to the end.  Damage
         * reaching into an earlier put's records would hit bytes that the
         * last block's witness (wb_durable) declares durable: by W3 that is
         * corruption, not a torn tail, so "the last 512 bytes" start no
         * earlier than the last put's first record. */
        uint64_t d;
        if (kind == TAIL_TRUNCATE) {
            d = cut; /* inside the last record */
        } else {
            d = e_last > 512 ? e_last - 512 : 0;
            if (d <= last_start + 8) d = last_start + 16; /* inside the batch record's header */
        }
        char what[256];
        snprintf(what, sizeof what, "%s: %s from LSN %llu to the end %llu (last put's records from %llu)",
                 tu_backend_name(backend),
                 kind == TAIL_TRUNCATE ? "truncated" : kind == TAIL_ZERO ? "zeroed" : "garbage",
                 (unsigned long long)d, (unsigned long long)e_last, (unsigned long long)last_start);
        char seg[4200];
        uint64_t s0 = d & ~(uint64_t)(SEG - 1);
        if (kind == TAIL_TRUNCATE) {
            cr_assert(truncate(cu_seg_path(seg, sizeof seg, work, s0), (off_t)(d - s0)) == 0, "truncate: %s",
                      strerror(errno));
        } else {
            for (uint64_t x = d; x < e_last; x++) {
                uint8_t c = kind == TAIL_ZERO ? 0 : (uint8_t)tu_next(&rng);
                uint64_t s = x & ~(uint64_t)(SEG - 1);
                cu_pwrite_file(cu_seg_path(seg, sizeof seg, work, s), &c, 1, x - s);
            }
            /* A tear leaves whole sectors, each from some write and so
             * passing its own check (wal.h W3): give every sector the
             * damage touched the check of what it now holds (a sector
             * wholly zero stays zero: "never written").  Without that it
             * would be damage, which W3 reports. */
            for (uint64_t x = d & ~(uint64_t)(WAL_SECTOR - 1); x < e_last; x += WAL_SECTOR) {
                uint64_t s = x & ~(uint64_t)(SEG - 1);
                uint8_t sec[WAL_SECTOR];
                cu_seg_path(seg, sizeof seg, work, s);
                int fd = open(seg, O_RDWR);
                cr_assert(fd >= 0 && pread(fd, sec, WAL_SECTOR, (off_t)(x - s)) == WAL_SECTOR, "%s: %s", seg,
                          strerror(errno));
                if (!all_zero(sec, WAL_SECTOR - WAL_SECTOR_TRAILER)) wal_sector_seal(sec);
                else memset(sec, 0, WAL_SECTOR);
                cr_assert(pwrite(fd, sec, WAL_SECTOR, (off_t)(x - s)) == WAL_SECTOR);
                close(fd);
            }
        }
        eng_options o = base_opts(backend, ENG_SYNC_COMMIT, 0, 0);
        eng_recovery_info ri;
        uint64_t m = reopen_check(work, &o, val_plain, NULL, &ri, what);
        cr_assert(m >= n - 1 && m <= n, "%s: %llu keys after recovery, %llu acknowledged", what,
                  (unsigned long long)m, (unsigned long long)n);
        cr_assert(ri.end_lsn <= d, "%s: the log was said to end at %llu, past the damage at %llu", what,
                  (unsigned long long)ri.end_lsn, (unsigned long long)d);
        cr_assert_eq(ri.trimmed, 1, "%s: recovery_info.trimmed = %d", what, ri.trimmed);

        /* The log goes on after the trim: more puts, a clean close, and a
         * reopen that sees them all. */
        eng_db *db = tu_open(work, &o);
        for (uint64_t i = m; i < m + 300; i++) cr_assert_eq(put_plain(db, i, NULL), ENG_OK, "%s: put %llu", what,
                                                           (unsigned long long)i);
        tu_close(db);
        uint64_t m2 = reopen_check(work, &o, val_plain, NULL, &ri, what);
        cr_assert_eq(m2, m + 300, "%s: after the trim and 300 more puts, %llu keys", what, (unsigned long long)m2);
    }
}

/* ========================================================================= */
/* 5. A crash at the Nth write leaves every multi-op batch whole or absent. */
/* ========================================================================= */

#define BATCH_OPS 50
#define BATCH_N 40
#define BATCH_ROUNDS 30

typedef struct crash_hook {
    uint64_t target;  /* die at this write (1-based); 0 = only count */
    uint64_t count;
    int tear;         /* shorten the fatal write to whole sectors, then die */
    int dying;
    tu_rng rng;
} crash_hook;

static int crash_before(void *ctx, eng_io_op *op) {
    crash_hook *h = ctx;
    if (op->kind != ENG_IO_WRITE) return 0;
    h->count++;
    if (!h->target || h->count != h->target) return 0;
    if (h->tear && op->len > 512) {
        size_t sectors = (op->len - 1) / 512; /* keep 1..sectors sectors: less than all */
        op->len = 512u * (size_t)tu_range(&h->rng, 1, sectors);
        h->dying = 1;
        return 0;
    }
    _exit(CU_EXIT_HOOK);
}

static void crash_after(void *ctx, eng_io_op *op) {
    (void)op;
    crash_hook *h = ctx;
    if (h->dying) _exit(CU_EXIT_HOOK);
}

static size_t val_batch(void *ctx, uint64_t i, uint8_t buf[CU_VMAX]) {
    (void)ctx;
    return cu_val(buf, i, 0, (uint32_t)(i / BATCH_OPS), 0);
}

static eng_options batch_opts(int backend, int small_cache) {
    return base_opts(backend, ENG_SYNC_COMMIT, small_cache ? 16 * PS : 0, 256u << 10);
}

static void child_batches(const char *dir, int backend, int small_cache, crash_hook *h, int fd) {
    static eng_io_hooks hooks;
    hooks = (eng_io_hooks){ h, crash_before, crash_after };
    eng_options o = batch_opts(backend, small_cache);
    o.io_hooks = &hooks;
    eng_db *db = NULL;
    int rc = eng_open(dir, &o, &db);
    if (rc) child_fail(fd, 1, rc);
    static char keys[BATCH_OPS][CU_KLEN + 1];
    static uint8_t vals[BATCH_OPS][CU_VMAX];
    eng_op ops[BATCH_OPS];
    for (uint32_t b = 0; b < BATCH_N; b++) {
        for (uint32_t j = 0; j < BATCH_OPS; j++) {
            uint64_t i = (uint64_t)b * BATCH_OPS + j;
            ops[j] = (eng_op){ .kind = ENG_OP_PUT, .key = keys[j], .klen = cu_key(keys[j], i), .val = vals[j],
                               .vlen = val_batch(NULL, i, vals[j]) };
        }
        uint64_t seq = 0;
        if ((rc = eng_write(db, ops, BATCH_OPS, &seq))) child_fail(fd, 2, rc);
        if (seq != b + 1) child_fail(fd, 3, ENG_INVALID);
        child_send(fd, MSG_ACK, 0, b);
    }
    if ((rc = eng_close(db))) child_fail(fd, 4, rc);
    child_send(fd, MSG_COUNT, 0, h->count);
    _exit(CU_EXIT_DONE);
}

/* Create the database (closed) at DIR and run one child on it. */
static int run_batch_child(const char *dir, int backend, int small_cache, crash_hook *h, uint64_t *acks,
                           uint64_t *count) {
    fresh_dir(dir);
    eng_options o = batch_opts(backend, small_cache);
    tu_close(tu_open(dir, &o));
    int fd;
    pid_t pid = cu_fork_piped(&fd);
    if (pid == 0) child_batches(dir, backend, small_cache, h, fd);
    static msg msgs[BATCH_N + 8];
    size_t n;
    int st = child_collect(pid, fd, msgs, BATCH_N + 8, &n);
    assert_no_child_fail(msgs, n, "batch child");
    *acks = 0;
    *count = 0;
    for (size_t i = 0; i < n; i++) {
        if (msgs[i].tag == MSG_ACK) {
            cr_assert_eq(msgs[i].v, *acks, "batch child: acknowledgements out of order");
            (*acks)++;
        }
        if (msgs[i].tag == MSG_COUNT) *count = msgs[i].v;
    }
    return st;
}

TU_BACKEND_TEST_FN(recovery, batch_interrupted_by_crash_leaves_no_trace, T_OPTS) {
    const char *dir = tu_tmpdir_db();
    /* How many writes a whole run makes, with each cache size. */
    uint64_t total[2];
    for (int sc = 0; sc < 2; sc++) {
        crash_hook h = { 0 };
        uint64_t acks, count;
        int st = run_batch_child(dir, backend, sc, &h, &acks, &count);
        char sb[64];
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == CU_EXIT_DONE, "dry run: %s", cu_status_str(st, sb, sizeof sb));
        cr_assert_eq(acks, BATCH_N);
        cr_assert(count > 10, "dry run: only %llu writes", (unsigned long long)count);
        total[sc] = count;
    }
    for (int r = 0; r < BATCH_ROUNDS; r++) {
        uint64_t seed = cu_seed(0x500 + (uint64_t)backend * 64 + (uint64_t)r);
        tu_rng rng = { seed };
        int sc = r % 2, tear = r % 3 == 2;
        crash_hook h = { .target = tu_range(&rng, 1, total[sc] + total[sc] / 20), .tear = tear,
                         .rng = { tu_next(&rng) } };
        char what[200];
        snprintf(what, sizeof what, "%s round %d seed 0x%llx: %s cache, %s write %llu of ~%llu",
                 tu_backend_name(backend), r, (unsigned long long)seed, sc ? "16-page" : "default",
                 tear ? "torn and crash at" : "crash before", (unsigned long long)h.target,
                 (unsigned long long)total[sc]);
        uint64_t acks, count;
        int st = run_batch_child(dir, backend, sc, &h, &acks, &count);
        char sb[64];
        int finished = WIFEXITED(st) && WEXITSTATUS(st) == CU_EXIT_DONE;
        cr_assert(finished || (WIFEXITED(st) && WEXITSTATUS(st) == CU_EXIT_HOOK), "%s: child ended with %s", what,
                  cu_status_str(st, sb, sizeof sb));
        eng_options o = batch_opts(backend, sc);
        eng_recovery_info ri;
        /* reopen_check proves the prefix of keys; batches are whole when
         * it ends on a batch boundary. */
        tu_reports rep;
        tu_reports_init(&rep);
        o.on_corruption = tu_collect;
        o.on_corruption_ctx = &rep;
        eng_db *db = NULL;
        int rc = eng_open(dir, &o, &db);
        char buf[2048];
        cr_assert_eq(rc, ENG_OK, "%s: reopen: %s\n%s", what, eng_strerror(rc), tu_reports_str(&rep, buf, sizeof buf));
        eng_get_recovery_info(db, &ri);
        uint64_t m = cu_check_prefix(db, val_batch, NULL, what);
        cr_assert_eq(m % BATCH_OPS, 0, "%s: batch %llu is cut: %llu of its %d keys present", what,
                     (unsigned long long)(m / BATCH_OPS), (unsigned long long)(m % BATCH_OPS), BATCH_OPS);
        uint64_t B = m / BATCH_OPS;
        cr_log_info("%s: %s, %llu acked, %llu batches present, %u ops completed by recovery, trimmed %d", what,
                    finished ? "finished" : "crashed", (unsigned long long)acks, (unsigned long long)B,
                    ri.batch_ops_completed, ri.trimmed);
        cr_assert(B >= acks, "%s: %llu batches present, %llu acknowledged", what, (unsigned long long)B,
                  (unsigned long long)acks);
        cr_assert(B <= acks + 1, "%s: %llu batches present, only %llu acknowledged and one in flight", what,
                  (unsigned long long)B, (unsigned long long)acks);
        if (finished)
            cr_assert_eq(B, BATCH_N, "%s: the child finished, yet %llu batches", what, (unsigned long long)B);
        cr_assert_eq(ri.recovered_seq, B, "%s: recovered_seq %llu with %llu batches present", what,
                     (unsigned long long)ri.recovered_seq, (unsigned long long)B);
        cu_verify_clean(db, what);
        rc = eng_close(db);
        cr_assert_eq(rc, ENG_OK, "%s: close: %s", what, eng_strerror(rc));
    }
}

/* ========================================================================= */
/* 5b. A crash during recovery (redo, completing the last batch, the end-of- */
/*     recovery checkpoint) changes nothing: the next recovery reaches the   */
/*     same state as an uninterrupted one.                                  */
/* ========================================================================= */

#define RR_ROUNDS 12

static void child_recover(const char *dir, int backend, int small_cache, crash_hook *h) {
    static eng_io_hooks hooks;
    hooks = (eng_io_hooks){ h, crash_before, crash_after };
    eng_options o = batch_opts(backend, small_cache);
    o.io_hooks = &hooks;
    eng_db *db = NULL;
    int rc = eng_open(dir, &o, &db);
    _exit(rc == ENG_OK ? CU_EXIT_DONE : CU_EXIT_FAIL); /* recovered: crash before doing anything else */
}

TU_BACKEND_TEST_FN(recovery, crash_during_recovery_reaches_the_same_state, T_OPTS) {
    const char *dir = tu_tmpdir_db(), *ref = tu_tmpdir();
    uint64_t total[2];
    for (int sc = 0; sc < 2; sc++) {
        crash_hook h = { 0 };
        uint64_t acks, count;
        run_batch_child(dir, backend, sc, &h, &acks, &count);
        total[sc] = count;
    }
    int tested = 0;
    for (int r = 0; r < RR_ROUNDS; r++) {
        uint64_t seed = cu_seed(0x580 + (uint64_t)backend * 64 + (uint64_t)r);
        tu_rng rng = { seed };
        int sc = r % 2;
        /* First crash: somewhere in the load (never at its very end). */
        crash_hook h1 = { .target = tu_range(&rng, 1, total[sc] - 1), .tear = r % 3 == 1, .rng = { tu_next(&rng) } };
        uint64_t acks, count;
        int st = run_batch_child(dir, backend, sc, &h1, &acks, &count);
        char sb[64];
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == CU_EXIT_HOOK, "round %d: first child %s", r,
                  cu_status_str(st, sb, sizeof sb));
        /* The reference: an uninterrupted recovery of a copy, counting its
         * writes. */
        tu_copy_dir(dir, ref);
        crash_hook cnt = { 0 };
        eng_io_hooks ch = { &cnt, crash_before, crash_after };
        eng_options o = batch_opts(backend, sc);
        o.io_hooks = &ch;
        eng_db *db = tu_open(ref, &o);
        uint64_t rec_writes = cnt.count;
        eng_recovery_info ri_ref;
        eng_get_recovery_info(db, &ri_ref);
        uint64_t m_ref = cu_check_prefix(db, val_batch, NULL, "reference recovery");
        tu_close(db);
        if (rec_writes == 0) continue; /* nothing to interrupt */
        tested++;
        /* Second crash: at a write of the recovery itself. */
        crash_hook h2 = { .target = tu_range(&rng, 1, rec_writes), .tear = r % 4 == 3, .rng = { tu_next(&rng) } };
        char what[240];
        snprintf(what, sizeof what,
                 "%s round %d seed 0x%llx: %s cache, load crashed at write %llu (%llu batches acked), "
                 "recovery %s write %llu of %llu",
                 tu_backend_name(backend), r, (unsigned long long)seed, sc ? "16-page" : "default",
                 (unsigned long long)h1.target, (unsigned long long)acks,
                 h2.tear ? "torn and crashed at" : "crashed before", (unsigned long long)h2.target,
                 (unsigned long long)rec_writes);
        pid_t pid = cu_fork();
        if (pid == 0) child_recover(dir, backend, sc, &h2);
        st = cu_wait(pid);
        cr_assert(WIFEXITED(st) && (WEXITSTATUS(st) == CU_EXIT_HOOK || WEXITSTATUS(st) == CU_EXIT_DONE),
                  "%s: the recovering child ended with %s", what, cu_status_str(st, sb, sizeof sb));
        eng_options oc = batch_opts(backend, sc);
        eng_recovery_info ri;
        uint64_t m = reopen_check_batches(dir, &oc, val_batch, NULL, &ri, what, BATCH_OPS);
        cr_assert_eq(m, m_ref, "%s: %llu keys after the interrupted recovery, %llu after an uninterrupted one",
                     what, (unsigned long long)m, (unsigned long long)m_ref);
        cr_assert(m % BATCH_OPS == 0 && m / BATCH_OPS >= acks, "%s: %llu keys, %llu batches acked", what,
                  (unsigned long long)m, (unsigned long long)acks);
        cr_log_info("%s: %llu batches both ways (reference: %u ops completed, %llu records)", what,
                    (unsigned long long)(m / BATCH_OPS), ri_ref.batch_ops_completed,
                    (unsigned long long)ri_ref.records);
    }
    cr_assert(tested >= RR_ROUNDS / 2, "only %d rounds had a recovery that writes", tested);
}

/* ========================================================================= */
/* 6. Group commit: no put returns before an fsync that began after it.     */
/* ========================================================================= */

#define GC_THREADS 4
#define GC_PUTS 200

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
                    "%llu after)", (unsigned long long)t, (unsigned long long)i, (unsigned long long)seq,
                    (unsigned long long)c0, (unsigned long long)c1);
        if (mx <= b0)
            g6_fail("thread %llu put %llu (seq %llu) returned though every completed log fsync began before "
                    "the call (%llu begun then, latest completed is #%llu)", (unsigned long long)t,
                    (unsigned long long)i, (unsigned long long)seq, (unsigned long long)b0, (unsigned long long)mx);
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
    static eng_io_hooks hooks = { NULL, g6_before, g6_after };
    eng_options o = base_opts(backend, ENG_SYNC_GROUP, 0, 0);
    o.io_hooks = &hooks;
    G6.db = tu_open(dir, &o);
    atomic_store(&G6.armed, 1);
    pthread_t th[GC_THREADS];
    for (uintptr_t t = 0; t < GC_THREADS; t++)
        cr_assert_eq(pthread_create(&th[t], NULL, g6_thread, (void *)t), 0);
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
    eng_buf b = { 0 };
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

#define POISON_ROUNDS 5
#define POISON_PUTS 300
#define POISON_CKPT_EVERY 40
#define CKPT_AT 120

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
    static eng_io_hooks hooks = { NULL, g7_before, NULL };
    for (int r = 0; r < POISON_ROUNDS; r++) {
        uint64_t seed = cu_seed(0x700 + (uint64_t)backend * 16 + (uint64_t)r);
        tu_rng rng = { seed };
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
            snprintf(what, sizeof what, "%s round %d seed 0x%llx: sync #%llu fails (%s)", tu_backend_name(backend),
                     r, (unsigned long long)seed, (unsigned long long)G7.k,
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
        eng_op op = { .kind = ENG_OP_DELETE, .key = "k000000000000000", .klen = CU_KLEN };
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
/* 8. sync_mode off: a clean close keeps everything; after a crash all that  */
/*    eng_sync made durable is there, and the rest is a prefix.             */
/* ========================================================================= */

#define OFF_N1 1500
#define OFF_N2 700

static void child_sync_off(const char *dir, int backend, uint64_t ckpt, int fd) {
    eng_options o = base_opts(backend, ENG_SYNC_OFF, 16 * PS, ckpt);
    eng_db *db = NULL;
    int rc = eng_open(dir, &o, &db);
    if (rc) child_fail(fd, 1, rc);
    for (uint64_t i = 0; i < OFF_N1; i++)
        if ((rc = put_plain(db, i, NULL))) child_fail(fd, 2, rc);
    if ((rc = eng_sync(db))) child_fail(fd, 3, rc);
    child_send(fd, MSG_VAL, 1, eng_durable_seq(db));
    for (uint64_t i = OFF_N1; i < OFF_N1 + OFF_N2; i++)
        if ((rc = put_plain(db, i, NULL))) child_fail(fd, 4, rc);
    _exit(CU_EXIT_DONE);
}

TU_BACKEND_TEST_FN(recovery, sync_off_survives_clean_close_and_recovers_after_crash, T_OPTS) {
    const char *dir = tu_tmpdir_db();

    /* Clean close. */
    fresh_dir(dir);
    eng_options o = base_opts(backend, ENG_SYNC_OFF, 16 * PS, 0);
    eng_db *db = tu_open(dir, &o);
    for (uint64_t i = 0; i < OFF_N1; i++) cr_assert_eq(put_plain(db, i, NULL), ENG_OK);
    tu_close(db);
    eng_recovery_info ri;
    uint64_t m = reopen_check(dir, &o, val_plain, NULL, &ri, "sync off, clean close");
    cr_assert_eq(m, OFF_N1, "sync off, clean close: %llu of %d keys", (unsigned long long)m, OFF_N1);

    /* Crash after eng_sync, without and with checkpoints on the way. */
    for (int v = 0; v < 2; v++) {
        uint64_t ckpt = v ? 256u << 10 : 0;
        char what[160];
        snprintf(what, sizeof what, "%s sync off, crash after eng_sync (checkpoint_wal_bytes %llu)",
                 tu_backend_name(backend), (unsigned long long)ckpt);
        fresh_dir(dir);
        int fd;
        pid_t pid = cu_fork_piped(&fd);
        if (pid == 0) child_sync_off(dir, backend, ckpt, fd);
        msg msgs[8];
        size_t n;
        int st = child_collect(pid, fd, msgs, 8, &n);
        assert_no_child_fail(msgs, n < 8 ? n : 8, what);
        char sb[64];
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == CU_EXIT_DONE, "%s: child %s", what,
                  cu_status_str(st, sb, sizeof sb));
        cr_assert(n >= 1 && msgs[0].tag == MSG_VAL);
        cr_assert_eq(msgs[0].v, OFF_N1, "%s: eng_durable_seq after eng_sync is %llu, %d puts were made", what,
                     (unsigned long long)msgs[0].v, OFF_N1);
        eng_options oc = base_opts(backend, ENG_SYNC_OFF, 16 * PS, ckpt);
        m = reopen_check(dir, &oc, val_plain, NULL, &ri, what);
        cr_assert(m >= OFF_N1 && m <= OFF_N1 + OFF_N2, "%s: %llu keys after the crash (%d synced, %d more made)",
                  what, (unsigned long long)m, OFF_N1, OFF_N2);
    }
}

/* ========================================================================= */
/* 9. Checkpoints remove old segments, archiving identical copies first.   */
/* ========================================================================= */

#define ARCH_PHASES 4
#define ARCH_PUTS 800

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
                cr_assert(gone,
                          "phase %d: segment %016llx lies wholly below the redo point %llu but is still in wal/", ph,
                          (unsigned long long)s, (unsigned long long)e);
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
            cr_assert(memcmp(a, before.data[i], alen) == 0, "phase %d: archived %016llx differs from the segment",
                      ph, (unsigned long long)s);
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
