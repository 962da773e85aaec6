/*
 * adapter_helpers.h -- the contract of stress/adapter.h as scenarios that
 * any adapter must pass (tests/test_adapter_*_keeps_the_contract.c run
 * them on SQLite's and RocksDB's): put, get and delete; a batch is
 * atomic for a concurrent reader and gets one sequence; a snapshot sees
 * exactly the commits up to its sequence; iterators are ordered and
 * bounded, and show only the driver's keys; a reopen, after a close or
 * after a process that died without one, keeps every synced commit and
 * reports the last one's sequence.
 */
#ifndef TESTS_ADAPTER_HELPERS_H
#define TESTS_ADAPTER_HELPERS_H

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "adapter.h"

typedef struct ad_run {
    const st_engine *E;
    char root[64], dir[128];
    st_open_options o;
    st_db *db;
    int reports;
    char last_layer[64], last_file[128];
} ad_run;

static void ad_on_report(void *ctx, const st_corruption *r) {
    ad_run *a = ctx;
    a->reports++;
    snprintf(a->last_layer, sizeof a->last_layer, "%s", r->layer ? r->layer : "");
    snprintf(a->last_file, sizeof a->last_file, "%s", r->file ? r->file : "");
}

/* The driver's defaults (stress/options.c), a fresh directory. */
static void ad_init(ad_run *a, const st_engine *E) {
    memset(a, 0, sizeof *a);
    a->E = E;
    snprintf(a->root, sizeof a->root, "/tmp/adapter-test-XXXXXX");
    cr_assert_not_null(mkdtemp(a->root));
    snprintf(a->dir, sizeof a->dir, "%s/db", a->root);
    a->o = (st_open_options){.page_size = 8192,
                             .cache_size = 8u << 20,
                             .data_checksums = 1,
                             .full_page_writes = 1,
                             .vacuum_freeze_min_age = 1000,
                             .sync_mode = 0,
                             .wal_segment_size = 16u << 20,
                             .first_xid = 1,
                             .checkpoint_wal_bytes = 64u << 20,
                             .rocksdb_wal_recovery_mode = 2,
                             .on_corruption = ad_on_report,
                             .on_corruption_ctx = a};
}

static void ad_open(ad_run *a) {
    char why[512] = "";
    cr_assert_eq(a->E->check_options(&a->o, why, sizeof why), ST_OK, "check_options: %s", why);
    cr_assert_eq(a->E->open(a->dir, &a->o, &a->db), ST_OK);
}

static void ad_close(ad_run *a) {
    cr_assert_eq(a->E->close(a->db), ST_OK);
    a->db = NULL;
}

static void ad_done(ad_run *a) {
    if (a->db) ad_close(a);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", a->root);
    cr_assert_eq(system(cmd), 0);
}

static void ad_key(char k[17], unsigned i) { snprintf(k, 17, "k%015u", i); }

/* Put key I = VAL (a string) alone; returns its sequence. */
static uint64_t ad_put(ad_run *a, unsigned i, const char *val) {
    char k[17];
    ad_key(k, i);
    st_op op = {ST_PUT, k, 16, val, strlen(val)};
    uint64_t seq = 0;
    cr_assert_eq(a->E->write(a->db, &op, 1, &seq), ST_OK);
    return seq;
}

static uint64_t ad_del(ad_run *a, unsigned i) {
    char k[17];
    ad_key(k, i);
    st_op op = {ST_DELETE, k, 16, NULL, 0};
    uint64_t seq = 0;
    cr_assert_eq(a->E->write(a->db, &op, 1, &seq), ST_OK);
    return seq;
}

/* Key I's value through snapshot S (NULL: the latest) as a string in OUT
 * ("" absent); the status. */
static int ad_get(ad_run *a, st_snap *s, unsigned i, char *out, size_t cap) {
    char k[17];
    ad_key(k, i);
    st_buf b = {0};
    int st = s ? a->E->get_at(a->db, s, k, 16, &b) : a->E->get(a->db, k, 16, &b);
    out[0] = 0;
    if (st == ST_OK) snprintf(out, cap, "%.*s", (int)b.len, (const char *)b.data);
    st_buf_free(&b);
    return st;
}

static void ad_expect(ad_run *a, st_snap *s, unsigned i, const char *want) {
    char v[256];
    int st = ad_get(a, s, i, v, sizeof v);
    if (!want) {
        cr_expect_eq(st, ST_NOTFOUND, "key %u: %s, '%s' where absent was expected", i, st_status_name(st), v);
    } else {
        cr_expect_eq(st, ST_OK, "key %u: %s", i, st_status_name(st));
        cr_expect_str_eq(v, want, "key %u", i);
    }
}

/* The keys an iterator over [LO, HI) (UINT_MAX: open) shows through S,
 * as their numbers in OUT; the count.  Every key must be the driver's
 * shape and the scan must end with ST_NOTFOUND. */
static size_t ad_scan(ad_run *a, st_snap *s, unsigned lo, unsigned hi, unsigned *out, size_t cap) {
    char l[17], h[17];
    ad_key(l, lo);
    ad_key(h, hi);
    st_iter *it = NULL;
    int st = s ? a->E->iter_open_at(a->db, s, l, 16, hi == ~0u ? NULL : h, hi == ~0u ? 0 : 16, &it)
               : a->E->iter_open(a->db, l, 16, hi == ~0u ? NULL : h, hi == ~0u ? 0 : 16, &it);
    cr_assert_eq(st, ST_OK);
    size_t n = 0;
    for (st = a->E->iter_first(it); st == ST_OK; st = a->E->iter_next(it)) {
        size_t kl;
        const char *k = a->E->iter_key(it, &kl);
        cr_assert_eq(kl, 16, "a key of %zu bytes in the driver's key space", kl);
        cr_assert_eq(k[0], 'k');
        if (n < cap) out[n] = (unsigned)strtoul(k + 1, NULL, 10);
        n++;
    }
    cr_assert_eq(st, ST_NOTFOUND, "the scan ended with %s", st_status_name(st));
    a->E->iter_close(it);
    return n;
}

/* ---- the scenarios ---- */

static void ad_put_get_delete(const st_engine *E) {
    ad_run a;
    ad_init(&a, E);
    ad_open(&a);
    ad_expect(&a, NULL, 1, NULL);
    uint64_t s1 = ad_put(&a, 1, "one");
    uint64_t s2 = ad_put(&a, 1, "uno");
    cr_expect_gt(s2, s1);
    ad_expect(&a, NULL, 1, "uno");
    uint64_t s3 = ad_del(&a, 1);
    cr_expect_gt(s3, s2);
    ad_expect(&a, NULL, 1, NULL);
    uint64_t s4 = ad_del(&a, 7); /* a delete of an absent key is a sequenced write too */
    cr_expect_eq(s4, s3 + 1);
    uint64_t problems = 99;
    cr_expect_eq(E->verify(a.db, &problems), ST_OK);
    cr_expect_eq(problems, 0);
    cr_expect_eq(a.reports, 0);
    ad_done(&a);
}

typedef struct ad_race {
    ad_run *a;
    _Atomic int stop, torn, seen;
} ad_race;

/* Reader: keys 10..12 always hold one generation together, or none. */
static void *ad_batch_reader(void *p) {
    ad_race *r = p;
    while (!r->stop) {
        char l[17], h[17];
        ad_key(l, 10);
        ad_key(h, 13);
        st_iter *it = NULL;
        if (r->a->E->iter_open(r->a->db, l, 16, h, 16, &it) != ST_OK) continue;
        char vals[3][32];
        size_t n = 0;
        for (int st = r->a->E->iter_first(it); st == ST_OK && n < 3; st = r->a->E->iter_next(it), n++) {
            size_t vl;
            const char *v = r->a->E->iter_value(it, &vl);
            snprintf(vals[n], sizeof vals[n], "%.*s", (int)vl, v);
        }
        r->a->E->iter_close(it);
        if (n != 0 && (n != 3 || strcmp(vals[0], vals[1]) || strcmp(vals[1], vals[2]))) r->torn++;
        if (n == 3) r->seen++;
    }
    return NULL;
}

static void ad_batch_atomic(const st_engine *E) {
    ad_run a;
    ad_init(&a, E);
    a.o.sync_mode = 2; /* many batches quickly: atomicity is not durability */
    if (!strcmp(E->name, "sqlite")) a.o.sqlite_synchronous = 0;
    ad_open(&a);
    ad_race r = {.a = &a};
    pthread_t th;
    pthread_create(&th, NULL, ad_batch_reader, &r);
    uint64_t prev = 0;
    /* At least 400 batches, and on until the reader has read the three
     * keys whole a few times (a loaded machine may not schedule it at
     * first). */
    unsigned g = 1;
    for (; g <= 400 || (r.seen < 20 && g <= 1000000); g++) {
        char v[32], k[3][17];
        snprintf(v, sizeof v, "gen%u", g);
        st_op ops[3];
        for (unsigned i = 0; i < 3; i++) {
            ad_key(k[i], 10 + i);
            ops[i] = (st_op){ST_PUT, k[i], 16, v, strlen(v)};
        }
        uint64_t seq = 0;
        cr_assert_eq(E->write(a.db, ops, 3, &seq), ST_OK);
        cr_assert_eq(seq, prev + 1, "one sequence per batch, in commit order");
        prev = seq;
    }
    r.stop = 1;
    pthread_join(th, NULL);
    cr_expect_eq(r.torn, 0, "a reader saw a batch half applied %d times", (int)r.torn);
    cr_expect_gt(r.seen, 0);
    char last[32];
    snprintf(last, sizeof last, "gen%u", g - 1);
    ad_expect(&a, NULL, 11, last);
    ad_done(&a);
}

static void ad_snapshot_isolation(const st_engine *E) {
    ad_run a;
    ad_init(&a, E);
    ad_open(&a);
    ad_put(&a, 1, "a1");
    uint64_t s2 = ad_put(&a, 2, "b1");
    st_snap *s = NULL;
    uint64_t sseq = 0;
    cr_assert_eq(E->snapshot(a.db, &s, &sseq), ST_OK);
    cr_expect_eq(sseq, s2, "the snapshot's sequence is the last commit it sees");
    ad_put(&a, 1, "a2");
    ad_del(&a, 2);
    ad_put(&a, 3, "c2");
    ad_expect(&a, s, 1, "a1");
    ad_expect(&a, s, 2, "b1");
    ad_expect(&a, s, 3, NULL);
    unsigned keys[8];
    size_t n = ad_scan(&a, s, 0, 10, keys, 8);
    cr_expect_eq(n, 2);
    cr_expect(keys[0] == 1 && keys[1] == 2);
    ad_expect(&a, NULL, 1, "a2");
    ad_expect(&a, NULL, 2, NULL);
    ad_expect(&a, NULL, 3, "c2");
    n = ad_scan(&a, NULL, 0, 10, keys, 8);
    cr_expect(n == 2 && keys[0] == 1 && keys[1] == 3);
    E->snapshot_release(a.db, s);
    st_snap *t = NULL;
    uint64_t tseq = 0;
    cr_assert_eq(E->snapshot(a.db, &t, &tseq), ST_OK);
    cr_expect_eq(tseq, s2 + 3);
    E->snapshot_release(a.db, t);
    ad_done(&a);
}

static void ad_iterator_order_and_bounds(const st_engine *E) {
    ad_run a;
    ad_init(&a, E);
    ad_open(&a);
    unsigned order[] = {7, 3, 9, 1, 5, 2, 8};
    for (size_t i = 0; i < 7; i++) ad_put(&a, order[i], "v");
    unsigned keys[16];
    size_t n = ad_scan(&a, NULL, 2, 8, keys, 16);
    cr_expect_eq(n, 4);
    unsigned want[] = {2, 3, 5, 7};
    for (size_t i = 0; i < 4 && i < n; i++) cr_expect_eq(keys[i], want[i]);
    n = ad_scan(&a, NULL, 6, ~0u, keys, 16); /* no upper bound: to the end, and nothing but the driver's keys */
    cr_expect(n == 3 && keys[0] == 7 && keys[1] == 8 && keys[2] == 9);
    n = ad_scan(&a, NULL, 4, 5, keys, 16);
    cr_expect_eq(n, 0);
    /* No lower bound at all: still only the driver's keys. */
    st_iter *it = NULL;
    cr_assert_eq(E->iter_open(a.db, NULL, 0, NULL, 0, &it), ST_OK);
    size_t all = 0;
    for (int st = E->iter_first(it); st == ST_OK; st = E->iter_next(it)) {
        size_t kl;
        const char *k = E->iter_key(it, &kl);
        cr_expect(kl == 16 && k[0] == 'k', "a key that is not the driver's: %zu bytes", kl);
        all++;
    }
    E->iter_close(it);
    cr_expect_eq(all, 7);
    ad_done(&a);
}

static void ad_reopen_keeps_synced_commits(const st_engine *E) {
    ad_run a;
    ad_init(&a, E);
    ad_open(&a);
    uint64_t last = 0;
    for (unsigned i = 0; i < 50; i++) last = ad_put(&a, i, i % 2 ? "odd" : "even");
    cr_expect_eq(E->durable_seq(a.db), last, "sync_mode commit: durable on return");
    ad_close(&a);
    ad_open(&a);
    st_recovery rec;
    E->recovery(a.db, &rec);
    cr_expect_eq(rec.recovered_seq, last);
    for (unsigned i = 0; i < 50; i++) ad_expect(&a, NULL, i, i % 2 ? "odd" : "even");
    cr_expect_eq(ad_put(&a, 60, "next"), last + 1, "numbers go on after a reopen");
    ad_close(&a);
    uint64_t problems = 99;
    cr_expect_eq(E->verify_dir(a.dir, &a.o, &problems), ST_OK);
    cr_expect_eq(problems, 0);
    ad_done(&a);
}

/* A process that dies without closing: every acknowledged (synced) commit
 * is there after the reopen, and recovered_seq is the last of them. */
static void ad_crash_keeps_synced_commits(const st_engine *E) {
    ad_run a;
    ad_init(&a, E);
    int fd[2];
    cr_assert_eq(pipe(fd), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(fd[0]);
        if (E->open(a.dir, &a.o, &a.db) != ST_OK) _exit(3);
        uint64_t last = 0;
        for (unsigned i = 0; i < 100; i++) {
            char k[17], v[16];
            ad_key(k, i % 30);
            snprintf(v, sizeof v, "v%u", i);
            st_op op = {ST_PUT, k, 16, v, strlen(v)};
            if (E->write(a.db, &op, 1, &last) != ST_OK) _exit(4);
        }
        if (write(fd[1], &last, sizeof last) != sizeof last) _exit(5);
        _exit(0); /* no close */
    }
    close(fd[1]);
    uint64_t last = 0;
    cr_assert_eq(read(fd[0], &last, sizeof last), (ssize_t)sizeof last);
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ad_open(&a);
    st_recovery rec;
    E->recovery(a.db, &rec);
    cr_expect_eq(rec.recovered_seq, last);
    for (unsigned i = 70; i < 100; i++) {
        char v[16];
        snprintf(v, sizeof v, "v%u", i);
        ad_expect(&a, NULL, i % 30, v);
    }
    ad_done(&a);
}

static void ad_refuses_hook_options(const st_engine *E) {
    ad_run a;
    ad_init(&a, E);
    a.o.hook_options = "read_fault_one_in,kill_random_test";
    char why[512] = "";
    cr_expect_eq(E->check_options(&a.o, why, sizeof why), ST_NOTSUP);
    cr_expect(strstr(why, "--read_fault_one_in") && strstr(why, "--kill_random_test"), "%s", why);
    a.o.hook_options = NULL;
    a.o.changed_options = "db,threads,wal_log_hints";
    cr_expect_eq(E->check_options(&a.o, why, sizeof why), ST_NOTSUP);
    cr_expect(strstr(why, "--wal_log_hints"), "%s", why);
    a.o.changed_options = "db,threads,page_size,cache_size";
    cr_expect_eq(E->check_options(&a.o, why, sizeof why), ST_OK, "%s", why);
    cr_expect_eq(E->fault_point_count(), 0);
    ad_done(&a);
}

/* An open of A's damaged directory: refused as corruption, reported at
 * FILE (a handle it opened all the same is closed). */
static inline void ad_open_refused_at(ad_run *a, const char *file) {
    int st = a->E->open(a->dir, &a->o, &a->db);
    cr_expect_eq(st, ST_CORRUPTION, "%s", st_status_name(st));
    cr_expect_gt(a->reports, 0);
    cr_expect_str_eq(a->last_file, file, "layer %s, %d reports", a->last_layer, a->reports);
    if (st == ST_OK) ad_close(a);
    a->db = NULL;
}

/* Flip bytes at OFF of FILE (under A's directory). */
static void ad_damage(ad_run *a, const char *file, long off, size_t n) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", a->dir, file);
    FILE *f = fopen(p, "r+b");
    cr_assert_not_null(f, "%s", p);
    unsigned char buf[4096];
    cr_assert_leq(n, sizeof buf);
    cr_assert_eq(fseek(f, off, SEEK_SET), 0);
    cr_assert_eq(fread(buf, 1, n, f), n);
    for (size_t i = 0; i < n; i++) buf[i] ^= 0x5a;
    cr_assert_eq(fseek(f, off, SEEK_SET), 0);
    cr_assert_eq(fwrite(buf, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

#endif
