/*
 * test_recovery_crash_keeps_the_acknowledged_prefix.c -- a SIGKILL during a
 * commit-sync load, a crash at the Nth write of multi-op batches, a crash
 * during recovery itself, and a crash with sync_mode off: every
 * acknowledged write is there, batches are whole or absent, and the state
 * is a prefix (P A B V).
 *
 * Part of the recovery suite (once test_recovery.c); the helpers it shares
 * with the other test_recovery_*.c files are in recovery_helpers.h.
 */
#include "recovery_helpers.h"

/* ========================================================================= */
/* 1. SIGKILL during a load with commit sync: the recovered state is exactly
 *    the acknowledged prefix (plus at most the put in flight).             */
/* ========================================================================= */

#define KILL_ROUNDS 5
#define KILL_NMAX   1000000u

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
        tu_rng rng = {seed};
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
                if (mode == 0)
                    fire = now - t0 >= delay;
                else if (mode == 1)
                    fire = nacks >= k_acks;
                else
                    fire = t_first && now - t_first >= delay;
                if (nacks > 200000) fire = 1; /* never let a child run on */
            }
            if (fire) {
                kill(pid, SIGKILL);
                killed = 1;
            }
            struct pollfd pf = {fd, POLLIN, 0};
            int pr = poll(&pf, 1, killed ? 1000 : 2);
            if (pr < 0 && errno == EINTR) continue;
            if (pr == 0) continue;
            ssize_t got = read(fd, mb + have, sizeof m - have);
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) break; /* EOF: the child is gone */
            have += (size_t)got;
            if (have < sizeof m) continue;
            have = 0;
            cr_assert(m.tag == MSG_ACK, "%s: the child's step %u failed: %s", what, m.step, eng_strerror((int)m.v));
            cr_assert_eq((int64_t)m.v, last + 1, "%s: acknowledgements out of order", what);
            last = (int64_t)m.v;
            nacks++;
            if (!t_first) t_first = cu_now_ms();
        }
        close(fd);
        int st = cu_wait(pid);
        char sb[64];
        cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "%s: the child ended with %s, not by the kill", what,
                  cu_status_str(st, sb, sizeof sb));

        eng_options o = kill_opts(backend);
        eng_recovery_info ri;
        uint64_t got_m = reopen_check(dir, &o, val_plain, NULL, &ri, what);
        cr_log_info("%s: last ack %lld, %llu keys recovered; redo %llu end %llu, %llu records, %llu images "
                    "restored, %u batch ops completed, trimmed %d",
                    what, (long long)last, (unsigned long long)got_m, (unsigned long long)ri.redo_lsn,
                    (unsigned long long)ri.end_lsn, (unsigned long long)ri.records,
                    (unsigned long long)ri.images_restored, ri.batch_ops_completed, ri.trimmed);
        cr_assert(got_m >= (uint64_t)(last + 1), "%s: %llu keys recovered but key %lld was acknowledged", what,
                  (unsigned long long)got_m, (long long)last);
        cr_assert(got_m <= (uint64_t)(last + 2),
                  "%s: %llu keys recovered but only %lld were acknowledged (one more may be in flight)", what,
                  (unsigned long long)got_m, (long long)(last + 1));
    }
}

/* ========================================================================= */
/* 5. A crash at the Nth write leaves every multi-op batch whole or absent. */
/* ========================================================================= */

#define BATCH_OPS    50
#define BATCH_N      40
#define BATCH_ROUNDS 30

typedef struct crash_hook {
    uint64_t target; /* die at this write (1-based); 0 = only count */
    uint64_t count;
    int tear; /* shorten the fatal write to whole sectors, then die */
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
    hooks = (eng_io_hooks){h, crash_before, crash_after};
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
            ops[j] = (eng_op){.kind = ENG_OP_PUT,
                              .key = keys[j],
                              .klen = cu_key(keys[j], i),
                              .val = vals[j],
                              .vlen = val_batch(NULL, i, vals[j])};
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
        crash_hook h = {0};
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
        tu_rng rng = {seed};
        int sc = r % 2, tear = r % 3 == 2;
        crash_hook h = {.target = tu_range(&rng, 1, total[sc] + total[sc] / 20), .tear = tear, .rng = {tu_next(&rng)}};
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
        if (finished) cr_assert_eq(B, BATCH_N, "%s: the child finished, yet %llu batches", what, (unsigned long long)B);
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
    hooks = (eng_io_hooks){h, crash_before, crash_after};
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
        crash_hook h = {0};
        uint64_t acks, count;
        run_batch_child(dir, backend, sc, &h, &acks, &count);
        total[sc] = count;
    }
    int tested = 0;
    for (int r = 0; r < RR_ROUNDS; r++) {
        uint64_t seed = cu_seed(0x580 + (uint64_t)backend * 64 + (uint64_t)r);
        tu_rng rng = {seed};
        int sc = r % 2;
        /* First crash: somewhere in the load (never at its very end). */
        crash_hook h1 = {.target = tu_range(&rng, 1, total[sc] - 1), .tear = r % 3 == 1, .rng = {tu_next(&rng)}};
        uint64_t acks, count;
        int st = run_batch_child(dir, backend, sc, &h1, &acks, &count);
        char sb[64];
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == CU_EXIT_HOOK, "round %d: first child %s", r,
                  cu_status_str(st, sb, sizeof sb));
        /* The reference: an uninterrupted recovery of a copy, counting its
         * writes. */
        tu_copy_dir(dir, ref);
        crash_hook cnt = {0};
        eng_io_hooks ch = {&cnt, crash_before, crash_after};
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
        crash_hook h2 = {.target = tu_range(&rng, 1, rec_writes), .tear = r % 4 == 3, .rng = {tu_next(&rng)}};
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
        cr_assert_eq(m, m_ref, "%s: %llu keys after the interrupted recovery, %llu after an uninterrupted one", what,
                     (unsigned long long)m, (unsigned long long)m_ref);
        cr_assert(m % BATCH_OPS == 0 && m / BATCH_OPS >= acks, "%s: %llu keys, %llu batches acked", what,
                  (unsigned long long)m, (unsigned long long)acks);
        cr_log_info("%s: %llu batches both ways (reference: %u ops completed, %llu records)", what,
                    (unsigned long long)(m / BATCH_OPS), ri_ref.batch_ops_completed,
                    (unsigned long long)ri_ref.records);
    }
    cr_assert(tested >= RR_ROUNDS / 2, "only %d rounds had a recovery that writes", tested);
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
        cr_assert(m >= OFF_N1 && m <= OFF_N1 + OFF_N2, "%s: %llu keys after the crash (%d synced, %d more made)", what,
                  (unsigned long long)m, OFF_N1, OFF_N2);
    }
}
