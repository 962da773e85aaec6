/*
 * test_mvcc_vacuum_changes_nothing_visible.c -- vacuum freezes by age and
 * never what a snapshot must not see, and a crash in the middle of one
 * changes nothing readers see (sections 5, 10).
 *
 * Part of the mvcc suite (once test_mvcc.c); the helpers it shares
 * with the other test_mvcc_*.c files are in mvcc_helpers.h.
 */
#include "mvcc_helpers.h"

/* ========================================================================= */
/* 5. Vacuum: freezing by age, hints, snapshots; reopen is clean after it.   */
/* ========================================================================= */

#define VF_BATCHES 50u
#define VF_PER     100u
#define VF_KEYS    (VF_BATCHES * VF_PER)

/* Fresh database with FREEZE_MIN_AGE (UINT64_MAX: the default), loaded with VF_BATCHES batches. */
static eng_db *vf_load(const char *dir, uint64_t freeze_min_age, int32_t *g, eng_options *o) {
    *o = mv_opts(ENG_IO_PSYNC, 256);
    if (freeze_min_age != UINT64_MAX) o->vacuum_freeze_min_age = freeze_min_age;
    eng_db *db = tu_open(dir, o);
    uint64_t last = load_keys(db, g, 0, VF_KEYS, VF_PER);
    cr_assert_eq(last, VF_BATCHES, "the load's last sequence is %llu, not %u", (unsigned long long)last, VF_BATCHES);
    return db;
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
/* 10. A crash in the middle of a vacuum (removing, freeing overflow pages, */
/*     freezing, hinting; pages evicted as it goes), with the page being    */
/*     written torn at 512-byte sectors in some rounds, changes nothing a   */
/*     reader sees, and verify is clean after recovery.                     */
/* ========================================================================= */

#define CV2_KEYS   3000u
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
        hooks = (eng_io_hooks){h, vk_before, vk_after};
        eng_options o = vk_opts();
        o.io_hooks = &hooks;
        eng_db *db = child_open(dir, &o);
        eng_vacuum_stats vs;
        h->armed = 1;
        int rc = eng_vacuum(db, &vs);
        if (rc == ENG_OK) rc = eng_checkpoint(db);
        h->armed = 0;
        uint64_t m[2] = {h->wal_writes, h->data_writes};
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
    vk_hook h = {0};
    uint64_t counts[2];
    int st = vk_run(dir, &h, counts);
    char sb[64];
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == CU_EXIT_DONE, "dry run: %s", cu_status_str(st, sb, sizeof sb));
    cr_log_info("dry run: vacuum + checkpoint made %llu WAL writes and %llu data writes", (unsigned long long)counts[0],
                (unsigned long long)counts[1]);
    cr_assert_geq(counts[0], 2, "vacuum wrote almost no log");
    cr_assert_geq(counts[1], 4, "vacuum wrote almost no pages");

    for (int r = 0; r < CV2_ROUNDS; r++) {
        uint64_t seed = cu_seed(0x7ac + (uint64_t)r);
        tu_rng rng = {seed};
        vk_hook c = {0};
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
