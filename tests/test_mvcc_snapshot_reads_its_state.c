/*
 * test_mvcc_snapshot_reads_its_state.c -- a snapshot (or an iterator) reads
 * exactly the state at its start across writes and vacuums, large values
 * included, also from another thread (sections 2, 8, 9).
 *
 * Part of the mvcc suite (once test_mvcc.c); the helpers it shares
 * with the other test_mvcc_*.c files are in mvcc_helpers.h.
 */
#include "mvcc_helpers.h"

/* ========================================================================= */
/* 2. Snapshots held across thousands of writes and vacuums.                 */
/* ========================================================================= */

#define SN_BASE    3000u
#define SN_BATCHES 4000u
#define SN_MAX     (SN_BASE + SN_BATCHES * 5u)

Test(mvcc, snapshot_reads_old_values_across_writes_and_vacuum, T_OPTS) {
    uint64_t seed = cu_seed(0x5a);
    tu_rng rng = {seed};
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
/* 8. Large values (overflow chains): a snapshot keeps its old ones across   */
/*    overwrites, deletes and vacuums; vacuum frees their pages after        */
/*    release and the file stops growing under overwrite + vacuum cycles.    */
/* ========================================================================= */

#define LV_KEYS 60u
#define LV_MAX  13000u

static size_t lv_val(uint8_t *buf, uint64_t i, int32_t gen) {
    size_t len = 1500 + (size_t)(rng_mix64(i * 31u + (uint64_t)gen) % (LV_MAX - 1500));
    uint32_t h[2] = {(uint32_t)i, (uint32_t)gen};
    memcpy(buf, h, sizeof h);
    tu_fill(buf + sizeof h, len - sizeof h, rng_mix64(i * 7919u + (uint64_t)gen * 104729u));
    return len;
}

static void lv_check(eng_db *db, const eng_snapshot *s, const int32_t *g, const char *what) {
    static uint8_t want[LV_MAX];
    eng_buf b = {0};
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
    eng_iter_options io = {0};
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
        if (g[i] < 0)
            ops[n] = (eng_op){.kind = ENG_OP_DELETE, .key = keys[n], .klen = kl};
        else
            ops[n] = (eng_op){
                .kind = ENG_OP_PUT, .key = keys[n], .klen = kl, .val = vals[n], .vlen = lv_val(vals[n], i, g[i])};
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
    for (uint64_t i = 0; i < LV_KEYS; i += 3)
        if (g[i] >= 0) g[i] = 2;
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
    cr_assert_leq(nb, nb1 + nb1 / 4,
                  "the data file grew from %llu to %llu blocks over five overwrite + vacuum "
                  "cycles of the same %u values",
                  (unsigned long long)nb1, (unsigned long long)nb, LV_KEYS);
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
    eng_buf b = {0};
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
        eng_iter_options io = {0};
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
                     (unsigned long long)c->passes, (unsigned long long)n,
                     rc < 0 ? "wrong key or value" : eng_strerror(rc));
        c->passes++;
    }
    eng_buf_free(&b);
    return NULL;
}

Test(mvcc, snapshot_read_concurrently_with_writes_and_vacuums_stays_exact, T_OPTS) {
    uint64_t seed = cu_seed(0xc5);
    tu_rng rng = {seed};
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
