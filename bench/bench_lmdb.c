/*
 * bench_lmdb.c -- LMDB's side of `make bench-engine`: the anchor for a
 * cached B+tree get, on the shape of the engine's rows (bench_engine.c:
 * 32-byte keys, 200-byte values, one thread, keys and values from
 * bench_util.h, the same xorshift sequence of random keys).
 *
 *   bench_lmdb DIR --num N [--phase fill|fillsync|read] [--reads R] [--map-size B]
 *
 * fill:  N puts in key order into a fresh DIR, one write transaction per
 *        put (as eng_put and db_bench's fillseq commit one put at a time),
 *        plain mdb_put (no MDB_APPEND: the engine gets no hint either).
 *        The environment is opened MDB_NOSYNC | MDB_NOMETASYNC: a commit
 *        writes its pages and meta page with no fsync, LMDB's nearest to
 *        the engine's sync_mode=off and db_bench's sync=0 (prints
 *        fillseq_ops).
 * fillsync: the same with LMDB's default flags, its durable commit: the
 *        data pages and then the meta page are each fdatasync'ed, two
 *        syncs per put (prints fillsync_ops).
 * read:  open DIR, warm the OS page cache and the mapping with one full
 *        cursor scan (LMDB has no cache of its own: it reads through the
 *        mmap, so "cached" is the page cache; there is no 8 MiB row), then
 *        R random gets (prints readrandom_ops).  Each get is its own read
 *        transaction (mdb_txn_renew ... mdb_txn_reset, LMDB's cheap reuse
 *        of one reader slot), as each eng_get is its own snapshot; every
 *        value is checked, so a wrong answer fails the run.
 * --map-size: the mapping's size (default N * 2 KiB + 64 MiB; in-order
 *        puts leave about 280 bytes a key in data.mdb, LMDB splitting the
 *        rightmost page at its end, so this is several times what the fill
 *        needs with its copy-on-write free pages; a full map fails the run
 *        with MDB_MAP_FULL, never a short figure).
 * Output: one line "NAME ops_per_sec" per measurement, like bench_engine.
 * Exit: 0, 1 on a wrong answer, 2 on a usage error, 3 on an LMDB error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lmdb.h>

#include "bench_util.h"

static uint64_t rng = 88172645463325252ull;

static int fail(const char *what, int rc) {
    fprintf(stderr, "bench_lmdb: %s: %s\n", what, mdb_strerror(rc));
    return 3;
}

/* Puts keys 0..NUM-1 in order, one committed write transaction each. */
static int lmdb_fill(MDB_env *env, MDB_dbi dbi, uint64_t num) {
    char k[BENCH_KEY_LEN];
    uint8_t v[BENCH_VALUE_LEN];
    MDB_txn *txn;
    int rc;
    for (uint64_t i = 0; i < num; i++) {
        bench_key(i, k);
        bench_value(i, v);
        MDB_val key = {BENCH_KEY_LEN, k}, val = {BENCH_VALUE_LEN, v};
        if ((rc = mdb_txn_begin(env, NULL, 0, &txn))) return fail("txn_begin", rc);
        if ((rc = mdb_put(txn, dbi, &key, &val, 0))) {
            mdb_txn_abort(txn);
            return fail("put", rc);
        }
        if ((rc = mdb_txn_commit(txn))) return fail("commit", rc);
    }
    return 0;
}

/* Scans every key once (the warm-up); 1 if the count is not NUM. */
static int lmdb_scan(MDB_env *env, MDB_dbi dbi, uint64_t num) {
    MDB_txn *txn;
    MDB_cursor *cur;
    MDB_val key, val;
    uint64_t n = 0, sum = 0;
    int rc;
    if ((rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn))) return fail("txn_begin", rc);
    if ((rc = mdb_cursor_open(txn, dbi, &cur))) return fail("cursor_open", rc);
    for (rc = mdb_cursor_get(cur, &key, &val, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT)) {
        sum += ((const uint8_t *)val.mv_data)[val.mv_size - 1]; /* touch the value's end */
        n++;
    }
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    if (rc != MDB_NOTFOUND) return fail("scan", rc);
    if (n != num) {
        fprintf(stderr, "bench_lmdb: warm scan saw %llu keys (sum %llu), expected %llu\n", (unsigned long long)n,
                (unsigned long long)sum, (unsigned long long)num);
        return 1;
    }
    return 0;
}

/* READS random gets of keys below NUM, one read transaction each, every
 * value checked. */
static int lmdb_readrandom(MDB_env *env, MDB_dbi dbi, uint64_t num, uint64_t reads) {
    char k[BENCH_KEY_LEN];
    uint8_t v[BENCH_VALUE_LEN];
    MDB_txn *txn;
    int rc;
    if ((rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn))) return fail("txn_begin", rc);
    mdb_txn_reset(txn);
    for (uint64_t i = 0; i < reads; i++) {
        uint64_t x = bench_xorshift(&rng) % num;
        bench_key(x, k);
        MDB_val key = {BENCH_KEY_LEN, k}, val;
        if ((rc = mdb_txn_renew(txn))) return fail("txn_renew", rc);
        if ((rc = mdb_get(txn, dbi, &key, &val))) {
            fprintf(stderr, "bench_lmdb: get: %s\n", mdb_strerror(rc));
            return 1;
        }
        bench_value(x, v);
        if (val.mv_size != BENCH_VALUE_LEN || memcmp(val.mv_data, v, BENCH_VALUE_LEN)) {
            fprintf(stderr, "bench_lmdb: wrong value\n");
            return 1;
        }
        mdb_txn_reset(txn);
    }
    mdb_txn_abort(txn);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_lmdb DIR --num N [--phase fill|fillsync|read] [--reads R] [--map-size B]\n");
        return 2;
    }
    const char *dir = argv[1], *phase = "fill";
    uint64_t num = 200000, reads = 0, map = 0;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--num"))
            num = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--phase"))
            phase = argv[i + 1];
        else if (!strcmp(argv[i], "--reads"))
            reads = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--map-size"))
            map = strtoull(argv[i + 1], NULL, 10);
        else {
            fprintf(stderr, "bench_lmdb: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (!num) {
        fprintf(stderr, "bench_lmdb: --num must be > 0\n");
        return 2;
    }
    if (!reads) reads = num;
    if (!map) map = num * 2048 + (64ull << 20);
    int fill = !strcmp(phase, "fill"), fillsync = !strcmp(phase, "fillsync"), read = !strcmp(phase, "read");
    if (!fill && !fillsync && !read) {
        fprintf(stderr, "bench_lmdb: unknown phase %s\n", phase);
        return 2;
    }
    if (!read && mkdir(dir, 0755) && errno != EEXIST) {
        perror(dir);
        return 3;
    }

    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    int rc;
    if ((rc = mdb_env_create(&env))) return fail("env_create", rc);
    if ((rc = mdb_env_set_mapsize(env, map))) return fail("set_mapsize", rc);
    unsigned flags = fill ? MDB_NOSYNC | MDB_NOMETASYNC : read ? MDB_RDONLY : 0;
    if ((rc = mdb_env_open(env, dir, flags, 0644))) return fail("env_open", rc);
    if ((rc = mdb_txn_begin(env, NULL, read ? MDB_RDONLY : 0, &txn))) return fail("txn_begin", rc);
    if ((rc = mdb_dbi_open(txn, NULL, 0, &dbi))) return fail("dbi_open", rc);
    if ((rc = mdb_txn_commit(txn))) return fail("commit", rc);

    if (read) {
        if ((rc = lmdb_scan(env, dbi, num))) return rc;
        double t0 = bench_now();
        if ((rc = lmdb_readrandom(env, dbi, num, reads))) return rc;
        printf("readrandom_ops %.0f\n", (double)reads / (bench_now() - t0));
    } else {
        double t0 = bench_now();
        if ((rc = lmdb_fill(env, dbi, num))) return rc;
        printf("%s_ops %.0f\n", fill ? "fillseq" : "fillsync", (double)num / (bench_now() - t0));
        /* MDB_NOSYNC leaves the last commits to the OS; flush them outside
         * the timed loop so the next run reads a settled file. */
        if (fill && (rc = mdb_env_sync(env, 1))) return fail("env_sync", rc);
    }
    mdb_env_close(env);
    return 0;
}
