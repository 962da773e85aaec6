/*
 * test_powerloss_engine_survives_every_state.c -- end to end, per I/O
 * backend: the engine killed during a commit-sync load and reopened from
 * every power-loss state keeps every acknowledged key, a prefix, with
 * verify clean.
 *
 * Part of the powerloss suite (once test_powerloss.c); the helpers it shares
 * with the other test_powerloss_*.c files are in powerloss_helpers.h.
 */
#include "powerloss_helpers.h"

/* ---- 8. end to end: the engine survives every power-loss state ------------------------------ */

static int jh_before(void *ctx, eng_io_op *op) { return flt_journal_before(ctx, op); }
static void jh_after(void *ctx, eng_io_op *op) { flt_journal_after(ctx, op); }

static eng_options e2e_opts(int backend) {
    eng_options o;
    eng_options_init(&o);
    o.io_backend = backend;
    o.sync_mode = ENG_SYNC_COMMIT;
    o.wal_segment_size = 64u << 10;      /* segments created, recycled, removed */
    o.checkpoint_wal_bytes = 256u << 10; /* checkpoints: control renamed, data synced */
    o.cache_size = 128u << 10;           /* evictions: unsynced data-page writes */
    return o;
}

/* Keys are written in a scattered order (step s writes key perm(s)), so
 * dirty leaves all over the tree are evicted between checkpoints: those
 * page writes are what power loss rolls back.  perm is a bijection of
 * [0, 2^20). */
#define E2E_SPACE (1u << 20)
#define E2E_MUL   0x9E3779B1u /* odd */
static uint64_t e2e_perm(uint64_t s) { return (s * E2E_MUL + 12345u) & (E2E_SPACE - 1); }

static void e2e_child(const char *dir, const char *run, int backend, int fd) {
    flt_journal *j = NULL;
    if (flt_journal_open(run, dir, &j) != 0) _exit(CU_EXIT_FAIL);
    eng_io_hooks h = {.ctx = j, .before = jh_before, .after = jh_after};
    eng_options o = e2e_opts(backend);
    o.io_hooks = &h;
    eng_db *db = NULL;
    if (eng_open(dir, &o, &db) != ENG_OK) _exit(CU_EXIT_FAIL);
    for (uint64_t s = 0;; s++) {
        char k[CU_KLEN + 1];
        uint8_t v[CU_VMAX];
        uint64_t i = e2e_perm(s);
        size_t kl = cu_key(k, i), vl = cu_val(v, i, 0, 0, 0);
        if (eng_put(db, k, kl, v, vl, NULL) != ENG_OK) _exit(CU_EXIT_FAIL);
        if (cu_write_all(fd, &s, sizeof s) != 0) _exit(CU_EXIT_FAIL);
    }
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Reopen DIR without hooks: the keys present are exactly those of steps
 * 0..m-1 (a prefix of the commits) with their values, every acknowledged
 * step among them (at most the put in flight beyond), verify clean. */
static void e2e_check(const char *dir, int backend, uint64_t acked, const char *what) {
    eng_options o = e2e_opts(backend);
    tu_reports rep;
    tu_reports_init(&rep);
    o.on_corruption = tu_collect;
    o.on_corruption_ctx = &rep;
    eng_db *db = NULL;
    int rc = eng_open(dir, &o, &db);
    char buf[2048];
    cr_assert_eq(rc, ENG_OK, "%s: reopen after power loss: %s\n%s", what, eng_strerror(rc),
                 tu_reports_str(&rep, buf, sizeof buf));
    size_t cap = acked + 16, m = 0;
    uint64_t *steps = malloc(cap * sizeof *steps);
    cr_assert(steps);
    uint64_t inv = 1; /* E2E_MUL^-1 mod 2^64 by Newton's iteration, then masked */
    for (int k = 0; k < 6; k++) inv *= 2 - (uint64_t)E2E_MUL * inv;
    eng_iter *it = NULL;
    eng_iter_options io = {0};
    cr_assert_eq(eng_iter_open(db, &io, &it), ENG_OK);
    uint8_t want[CU_VMAX];
    for (rc = eng_iter_first(it); rc == ENG_OK; rc = eng_iter_next(it)) {
        size_t kl, vl;
        const void *k = eng_iter_key(it, &kl), *v = eng_iter_value(it, &vl);
        int64_t idx = cu_key_index(k, kl);
        cr_assert(idx >= 0 && idx < (int64_t)E2E_SPACE, "%s: a key that was never written", what);
        size_t wl = cu_val(want, (uint64_t)idx, 0, 0, 0);
        cr_assert(tu_bytes_eq(v, vl, want, wl), "%s: key %lld has a wrong value", what, (long long)idx);
        cr_assert(m < cap, "%s: more than %zu keys present, %llu acknowledged", what, m, (unsigned long long)acked);
        steps[m++] = (((uint64_t)idx - 12345u) * inv) & (E2E_SPACE - 1);
    }
    cr_assert_eq(rc, ENG_NOTFOUND, "%s: scan ended with %s", what, eng_strerror(rc));
    eng_iter_close(it);
    qsort(steps, m, sizeof *steps, cmp_u64);
    for (size_t i = 0; i < m; i++)
        cr_assert_eq(steps[i], i, "%s: not a prefix of the commits: step %zu missing (%zu keys present)", what, i, m);
    cr_assert(m >= acked && m <= acked + 1, "%s: %zu keys present, %llu acknowledged", what, m,
              (unsigned long long)acked);
    free(steps);
    cu_verify_clean(db, what);
    rc = eng_close(db);
    cr_assert_eq(rc, ENG_OK, "%s: close: %s", what, eng_strerror(rc));
}

static void e2e_run(int backend) {
    size_t undone = 0;
    int round;
    /* Two crashes, and more (up to six) while none left anything to undo:
     * a kill right after a checkpoint's data sync leaves nothing unsynced. */
    for (round = 0; round < 2 || (undone == 0 && round < 6); round++) {
        fx f;
        fx_init(&f);
        tu_rm_rf(f.db); /* the child creates the database */
        uint64_t seed = cu_seed(0x900 + (uint64_t)backend * 8 + (uint64_t)round);
        tu_rng rng = {seed};
        uint64_t target = tu_range(&rng, 1500, 5000);
        int fds[2];
        cu_pipe(fds);
        pid_t pid = cu_fork();
        if (pid == 0) {
            close(fds[0]);
            e2e_child(f.db, f.run, backend, fds[1]);
        }
        close(fds[1]);
        uint64_t acked = 0, idx;
        while (acked < target && cu_read_all(fds[0], &idx, sizeof idx) == sizeof idx) {
            cr_assert_eq(idx, acked);
            acked++;
        }
        kill(pid, SIGKILL);
        while (cu_read_all(fds[0], &idx, sizeof idx) == sizeof idx) acked++; /* acks already sent */
        close(fds[0]);
        int st = cu_wait(pid);
        char sb[64];
        cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "round %d: the child ended with %s after %llu acks",
                  round, cu_status_str(st, sb, sizeof sb), (unsigned long long)acked);

        static const char *const modes[] = {"rollback", "tear", "mixed"};
        char seedbuf[32];
        snprintf(seedbuf, sizeof seedbuf, "%llu", (unsigned long long)seed);
        for (int mi = 0; mi < 3; mi++) {
            char prefix[200];
            snprintf(prefix, sizeof prefix, "%s/%s-", f.root, modes[mi]);
            pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", seedbuf, "--variants", "3", "--mode", modes[mi],
                             "--out-prefix", prefix, NULL));
            for (int v = 0; v < 3; v++) {
                char dir[256], what[400];
                snprintf(dir, sizeof dir, "%s%d", prefix, v);
                snprintf(what, sizeof what, "%s round %d seed %s mode %s variant %d (%llu acked)",
                         tu_backend_name(backend), round, seedbuf, modes[mi], v, (unsigned long long)acked);
                e2e_check(dir, backend, acked, what);
                tu_rm_rf(dir);
            }
        }
        lrecs L = {0};
        ledger_load(&f, &L);
        undone += L.n;
        free(L.r);

        /* In place, then the journal is reset. */
        pl_ok(&f, run_pl(&f, f.db, "--run-dir", f.run, "--seed", seedbuf, "--mode", "mixed", NULL));
        cr_assert_eq(size_of(f.run, "journal"), 0);
        char what[200];
        snprintf(what, sizeof what, "%s round %d seed %s in place", tu_backend_name(backend), round, seedbuf);
        e2e_check(f.db, backend, acked, what);
        tu_cleanup();
    }
    /* Not vacuous: some state lost something (the kill lands at random,
     * but scattered keys leave evicted pages unsynced nearly always). */
    cr_assert(undone > 0, "no power-loss decision undid anything in %d crashes of 10 states each", round);
    cr_log_info("%s: %zu undo decisions over %d crashes", tu_backend_name(backend), undone, round);
}

TU_BACKEND_TEST(powerloss, engine_survives_every_power_loss_state, T_OPTS) { e2e_run(*backend); }
