/*
 * test_engine_kv.c -- the public key-value API does what engine.h says.
 *
 * Every test runs once per I/O backend (io_uring, psync).  Proves:
 *   - put/get/delete round trips, overwrite, NOTFOUND, empty values;
 *   - key length limits (1..ENG_MAX_KEY accepted, others rejected with
 *     ENG_INVALID and nothing changed);
 *   - values from 1 byte to over 1 MiB (overflow chains) read back exactly,
 *     grow, shrink and delete;
 *   - a long random operation sequence matches an in-memory model, with the
 *     default cache and with a 16-page cache that forces eviction;
 *   - iterators: bounds, seek, seek_prev, direction changes, empty ranges;
 *   - persistence across close/reopen for 4, 8 and 16 KiB pages;
 *   - a second open of an open database is ENG_BUSY; eng_sync and stats.
 */
#include "testutil.h"

#define T_TIMEOUT .timeout = 240, .fini = tu_cleanup

static const uint32_t page_sizes[] = {4096, 8192, 16384};

/* ---- basic round trips ---------------------------------------------------- */

static void expect_get(eng_db *db, const char *k, const void *v, size_t vl) {
    eng_buf b = {0};
    int rc = eng_get(db, k, strlen(k), &b);
    cr_assert_eq(rc, ENG_OK, "get %s: %s", k, eng_strerror(rc));
    cr_assert(tu_bytes_eq(b.data, b.len, v, vl), "get %s: value len %zu, expected %zu", k, b.len, vl);
    eng_buf_free(&b);
}

static void expect_notfound(eng_db *db, const char *k) {
    eng_buf b = {0};
    int rc = eng_get(db, k, strlen(k), &b);
    cr_assert_eq(rc, ENG_NOTFOUND, "get %s: %s, expected notfound", k, eng_strerror(rc));
    eng_buf_free(&b);
}

TU_BACKEND_TEST(kv, put_get_delete_round_trip, T_TIMEOUT) {
    const char *dir = tu_tmpdir();
    eng_options o = tu_opts(*backend, 0, 0, NULL);
    eng_db *db = tu_open(dir, &o);

    expect_notfound(db, "alpha");
    cr_assert_eq(eng_put(db, "alpha", 5, "one", 3, NULL), ENG_OK);
    cr_assert_eq(eng_put(db, "beta", 4, "two", 3, NULL), ENG_OK);
    expect_get(db, "alpha", "one", 3);
    expect_get(db, "beta", "two", 3);
    expect_notfound(db, "alph");
    expect_notfound(db, "alphab");
    expect_notfound(db, "gamma");

    /* overwrite, same and different sizes */
    cr_assert_eq(eng_put(db, "alpha", 5, "uno", 3, NULL), ENG_OK);
    expect_get(db, "alpha", "uno", 3);
    cr_assert_eq(eng_put(db, "alpha", 5, "a much longer value", 19, NULL), ENG_OK);
    expect_get(db, "alpha", "a much longer value", 19);
    cr_assert_eq(eng_put(db, "alpha", 5, "x", 1, NULL), ENG_OK);
    expect_get(db, "alpha", "x", 1);

    /* delete; delete of a missing key */
    cr_assert_eq(eng_delete(db, "alpha", 5, NULL), ENG_OK);
    expect_notfound(db, "alpha");
    cr_assert_eq(eng_delete(db, "alpha", 5, NULL), ENG_NOTFOUND);
    cr_assert_eq(eng_delete(db, "never", 5, NULL), ENG_NOTFOUND);
    expect_get(db, "beta", "two", 3);

    /* re-insert after delete */
    cr_assert_eq(eng_put(db, "alpha", 5, "again", 5, NULL), ENG_OK);
    expect_get(db, "alpha", "again", 5);

    /* empty value is a value, not an absence */
    cr_assert_eq(eng_put(db, "empty", 5, "", 0, NULL), ENG_OK);
    expect_get(db, "empty", "", 0);
    cr_assert_eq(eng_put(db, "empty2", 6, NULL, 0, NULL), ENG_OK);
    expect_get(db, "empty2", "", 0);
    cr_assert_eq(eng_delete(db, "empty", 5, NULL), ENG_OK);
    expect_notfound(db, "empty");

    /* binary keys with NUL bytes; shorter key first on a common prefix */
    cr_assert_eq(eng_put(db, "k\0a", 3, "1", 1, NULL), ENG_OK);
    cr_assert_eq(eng_put(db, "k\0", 2, "2", 1, NULL), ENG_OK);
    eng_buf b = {0};
    cr_assert_eq(eng_get(db, "k\0a", 3, &b), ENG_OK);
    cr_assert(tu_bytes_eq(b.data, b.len, "1", 1));
    cr_assert_eq(eng_get(db, "k\0", 2, &b), ENG_OK);
    cr_assert(tu_bytes_eq(b.data, b.len, "2", 1));
    cr_assert_eq(eng_get(db, "k", 1, &b), ENG_NOTFOUND);
    eng_buf_free(&b);

    tu_close(db);
    db = tu_open(dir, &o);
    expect_get(db, "alpha", "again", 5);
    expect_get(db, "beta", "two", 3);
    expect_get(db, "empty2", "", 0);
    expect_notfound(db, "empty");
    tu_close(db);
}

/* ---- key length limits ------------------------------------------------------ */

static size_t count_keys(eng_db *db) {
    eng_iter *it;
    eng_iter_options io = {0};
    cr_assert_eq(eng_iter_open(db, &io, &it), ENG_OK);
    size_t n = 0;
    int rc;
    for (rc = eng_iter_first(it); rc == ENG_OK; rc = eng_iter_next(it)) n++;
    cr_assert_eq(rc, ENG_NOTFOUND);
    eng_iter_close(it);
    return n;
}

TU_BACKEND_TEST(kv, max_key_accepted_longer_rejected_unchanged, T_TIMEOUT) {
    const char *dir = tu_tmpdir();
    eng_options o = tu_opts(*backend, 0, 0, NULL);
    eng_db *db = tu_open(dir, &o);
    static uint8_t k[ENG_MAX_KEY + 8];
    tu_fill(k, sizeof k, 7);
    eng_buf b = {0};

    /* ENG_MAX_KEY accepted, many of them (several per page), read back */
    for (int i = 0; i < 40; i++) {
        k[0] = (uint8_t)i;
        cr_assert_eq(eng_put(db, k, ENG_MAX_KEY, &i, sizeof i, NULL), ENG_OK, "put 1024-byte key %d", i);
    }
    for (int i = 0; i < 40; i++) {
        k[0] = (uint8_t)i;
        cr_assert_eq(eng_get(db, k, ENG_MAX_KEY, &b), ENG_OK);
        cr_assert(tu_bytes_eq(b.data, b.len, &i, sizeof i));
    }
    cr_assert_eq(count_keys(db), 40);

    /* 1025 rejected with INVALID, nothing changed */
    k[0] = 3;
    int rc = eng_put(db, k, ENG_MAX_KEY + 1, "zz", 2, NULL);
    cr_assert_eq(rc, ENG_INVALID, "put of 1025-byte key: %s", eng_strerror(rc));
    rc = eng_put(db, k, ENG_MAX_KEY + 1, NULL, 0, NULL);
    cr_assert_eq(rc, ENG_INVALID, "put of 1025-byte key, empty value: %s", eng_strerror(rc));
    cr_assert_eq(count_keys(db), 40, "a rejected put changed the key count");
    int three = 3;
    cr_assert_eq(eng_get(db, k, ENG_MAX_KEY, &b), ENG_OK);
    cr_assert(tu_bytes_eq(b.data, b.len, &three, sizeof three), "the 1024-byte prefix key was changed");
    rc = eng_get(db, k, ENG_MAX_KEY + 1, &b);
    cr_assert(rc == ENG_INVALID || rc == ENG_NOTFOUND, "get of 1025-byte key: %s", eng_strerror(rc));
    rc = eng_delete(db, k, ENG_MAX_KEY + 1, NULL);
    cr_assert(rc == ENG_INVALID || rc == ENG_NOTFOUND, "delete of 1025-byte key: %s", eng_strerror(rc));

    /* empty key rejected */
    rc = eng_put(db, "", 0, "v", 1, NULL);
    cr_assert_eq(rc, ENG_INVALID, "put of empty key: %s", eng_strerror(rc));
    cr_assert_eq(count_keys(db), 40);

    /* value over ENG_MAX_VALUE rejected before touching the buffer */
    rc = eng_put(db, "big", 3, k, (size_t)ENG_MAX_VALUE + 1, NULL);
    cr_assert_eq(rc, ENG_INVALID, "put of ENG_MAX_VALUE+1 value: %s", eng_strerror(rc));
    cr_assert_eq(count_keys(db), 40);

    tu_close(db);
    db = tu_open(dir, &o);
    cr_assert_eq(count_keys(db), 40, "after reopen");
    eng_buf_free(&b);
    tu_close(db);
}

/* ---- large values ------------------------------------------------------------ */

TU_BACKEND_TEST(kv, large_values_round_trip_grow_shrink_delete, T_TIMEOUT) {
    const char *dir = tu_tmpdir();
    eng_options o = tu_opts(*backend, 0, 0, NULL);
    eng_db *db = tu_open(dir, &o);
    const size_t sizes[] = {1, 100, 4000, 8000, 8192, 8193, 20000, 100 * 1000, (1u << 20) + 17, 3u << 20};
    const size_t ns = sizeof sizes / sizeof sizes[0];
    size_t maxsz = sizes[ns - 1];
    uint8_t *v = malloc(maxsz);
    cr_assert(v);
    tu_model m = {0};
    char key[32];

    /* one key per size, plus neighbours so the big values share leaves */
    for (size_t i = 0; i < ns; i++) {
        tu_fill(v, sizes[i], 1000 + i);
        snprintf(key, sizeof key, "big%02zu", i);
        cr_assert_eq(eng_put(db, key, strlen(key), v, sizes[i], NULL), ENG_OK, "put %zu bytes", sizes[i]);
        tu_model_put(&m, key, strlen(key), v, sizes[i]);
        snprintf(key, sizeof key, "big%02zu-small", i);
        cr_assert_eq(eng_put(db, key, strlen(key), "s", 1, NULL), ENG_OK);
        tu_model_put(&m, key, strlen(key), "s", 1);
    }
    tu_check_gets(db, &m, "after first puts");
    tu_check_scan(db, &m, "after first puts");

    cr_assert_eq(eng_sync(db), ENG_OK);

    /* rotate sizes: each key gets the next size (larger), then previous (smaller) */
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < ns; i++) {
            size_t sz = round == 0 ? sizes[(i + 1) % ns] : sizes[(i + ns - 1) % ns];
            tu_fill(v, sz, 5000 + 100 * round + i);
            snprintf(key, sizeof key, "big%02zu", i);
            cr_assert_eq(eng_put(db, key, strlen(key), v, sz, NULL), ENG_OK, "update to %zu bytes", sz);
            tu_model_put(&m, key, strlen(key), v, sz);
        }
        tu_check_gets(db, &m, round == 0 ? "after growing" : "after shrinking");
        tu_check_scan(db, &m, round == 0 ? "after growing" : "after shrinking");
    }
    tu_close(db);
    db = tu_open(dir, &o);
    tu_check_gets(db, &m, "after reopen");
    tu_check_scan(db, &m, "after reopen");

    /* delete the big ones */
    eng_buf b = {0};
    for (size_t i = 0; i < ns; i++) {
        snprintf(key, sizeof key, "big%02zu", i);
        cr_assert_eq(eng_delete(db, key, strlen(key), NULL), ENG_OK);
        tu_model_del(&m, key, strlen(key));
        cr_assert_eq(eng_get(db, key, strlen(key), &b), ENG_NOTFOUND);
    }
    tu_check_gets(db, &m, "after deletes");
    tu_check_scan(db, &m, "after deletes");

    /* pages of deleted chains are reused: rewriting the same volume again
     * does not double the file */
    tu_close(db);
    uint64_t size_before = tu_file_size(dir, "data");
    db = tu_open(dir, &o);
    for (size_t i = 0; i < ns; i++) {
        tu_fill(v, sizes[i], 9000 + i);
        snprintf(key, sizeof key, "big%02zu", i);
        cr_assert_eq(eng_put(db, key, strlen(key), v, sizes[i], NULL), ENG_OK);
        tu_model_put(&m, key, strlen(key), v, sizes[i]);
    }
    cr_assert_eq(eng_sync(db), ENG_OK);
    eng_stats st;
    cr_assert_eq(eng_get_stats(db, &st), ENG_OK);
    cr_assert_gt(st.overflow_pages_written, 0, "values up to 3 MiB written and synced, stats count no overflow pages");
    tu_close(db);
    db = tu_open(dir, &o);
    tu_check_gets(db, &m, "after re-put");
    tu_check_scan(db, &m, "after re-put");
    tu_close(db);
    uint64_t size_after = tu_file_size(dir, "data");
    cr_assert(size_after <= size_before + size_before / 4 + 64 * 8192,
              "data file grew from %llu to %llu bytes: freed overflow pages not reused",
              (unsigned long long)size_before, (unsigned long long)size_after);
    eng_buf_free(&b);
    tu_model_free(&m);
    free(v);
}

/* ---- random operations against the model ------------------------------------ */

#define RK_NKEYS 5000

typedef struct rkeys {
    uint8_t k[RK_NKEYS][64];
    uint8_t kl[RK_NKEYS];
} rkeys;

static void random_ops(int backend, uint32_t page_size, size_t cache_pages, uint64_t seed, int nops) {
    const char *dir = tu_tmpdir();
    eng_options o = tu_opts(backend, page_size, cache_pages, NULL);
    eng_db *db = tu_open(dir, &o);
    tu_rng r = {seed};
    rkeys *ks = malloc(sizeof *ks);
    cr_assert(ks);
    for (int i = 0; i < RK_NKEYS; i++) {
        ks->kl[i] = (uint8_t)tu_range(&r, 1, 64);
        /* a small alphabet for short keys makes prefixes and near-collisions common */
        for (int j = 0; j < ks->kl[i]; j++) ks->k[i][j] = (uint8_t)(i % 3 == 0 ? 'a' + tu_below(&r, 4) : tu_next(&r));
    }
    size_t vmax = 300 * 1000;
    uint8_t *v = malloc(vmax);
    cr_assert(v);
    tu_model m = {0};
    eng_buf b = {0};
    char what[96];

    uint64_t nputs = 0, ndels = 0, ngets = 0;
    for (int op = 0; op < nops; op++) {
        int i = (int)tu_below(&r, RK_NKEYS);
        const uint8_t *k = ks->k[i];
        size_t kl = ks->kl[i];
        uint64_t dice = tu_below(&r, 1000);
        int rc;
        snprintf(what, sizeof what, "seed %llu op %d key %d", (unsigned long long)seed, op, i);
        if (dice < 450) {
            size_t vl;
            uint64_t big = tu_below(&r, 1000);
            if (big < 3)
                vl = tu_range(&r, 20000, vmax); /* a few large values */
            else if (big < 15)
                vl = tu_range(&r, 600, 9000); /* around a page */
            else
                vl = tu_range(&r, 0, 600);
            tu_fill(v, vl, tu_next(&r));
            rc = eng_put(db, k, kl, v, vl, NULL);
            nputs++;
            cr_assert_eq(rc, ENG_OK, "%s: put (%zu bytes): %s", what, vl, eng_strerror(rc));
            tu_model_put(&m, k, kl, v, vl);
        } else if (dice < 600) {
            rc = eng_delete(db, k, kl, NULL);
            ndels++;
            int had = tu_model_del(&m, k, kl);
            cr_assert_eq(rc, had ? ENG_OK : ENG_NOTFOUND, "%s: delete: %s (model had it: %d)", what, eng_strerror(rc),
                         had);
        } else {
            rc = eng_get(db, k, kl, &b);
            ngets++;
            const tu_kv *e = tu_model_get(&m, k, kl);
            if (e) {
                cr_assert_eq(rc, ENG_OK, "%s: get: %s", what, eng_strerror(rc));
                cr_assert(tu_bytes_eq(b.data, b.len, e->v, e->vl), "%s: get: value len %zu, model %zu", what, b.len,
                          e->vl);
            } else {
                cr_assert_eq(rc, ENG_NOTFOUND, "%s: get of absent key: %s", what, eng_strerror(rc));
            }
        }
        if ((op + 1) % 7500 == 0) tu_check_scan(db, &m, what);
    }
    snprintf(what, sizeof what, "seed %llu end", (unsigned long long)seed);
    tu_check_scan(db, &m, what);
    tu_check_gets(db, &m, what);

    eng_stats st;
    cr_assert_eq(eng_get_stats(db, &st), ENG_OK);
    cr_assert_eq(st.puts, nputs, "stats count %llu puts, %llu done", (unsigned long long)st.puts,
                 (unsigned long long)nputs);
    cr_assert_eq(st.deletes, ndels, "stats count %llu deletes, %llu done", (unsigned long long)st.deletes,
                 (unsigned long long)ndels);
    cr_assert_geq(st.gets, ngets, "stats count %llu gets, at least %llu done", (unsigned long long)st.gets,
                  (unsigned long long)ngets);
    if (cache_pages) { cr_assert_gt(st.evictions, 0, "a %zu-page cache never evicted", cache_pages); }
    tu_close(db);

    /* reopen (with the default cache) and everything is still there */
    eng_options o2 = tu_opts(backend, page_size, 0, NULL);
    db = tu_open(dir, &o2);
    snprintf(what, sizeof what, "seed %llu after reopen", (unsigned long long)seed);
    tu_check_scan(db, &m, what);
    tu_check_gets(db, &m, what);
    uint64_t probs = 99;
    tu_reports rep;
    tu_reports_init(&rep);
    int rc = eng_verify(db, tu_collect, &rep, &probs);
    char rs[2048];
    cr_assert_eq(rc, ENG_OK, "%s: eng_verify: %s, %llu problems:\n%s", what, eng_strerror(rc),
                 (unsigned long long)probs, tu_reports_str(&rep, rs, sizeof rs));
    cr_assert_eq(probs, 0);
    tu_close(db);

    eng_buf_free(&b);
    tu_model_free(&m);
    free(v);
    free(ks);
}

TU_BACKEND_TEST(kv, random_ops_match_model, T_TIMEOUT) { random_ops(*backend, 8192, 0, 0x5eed0001, 30000); }

TU_BACKEND_TEST(kv, random_ops_match_model_with_16_page_cache_evicting, T_TIMEOUT) {
    random_ops(*backend, 8192, 16, 0x5eed0002, 30000);
}

TU_BACKEND_TEST(kv, random_ops_match_model_4k_pages_16_page_cache, T_TIMEOUT) {
    random_ops(*backend, 4096, 16, 0x5eed0003, 12000);
}

/* ---- iterators ------------------------------------------------------------------ */

/* Reference cursor over the model restricted to [lower, upper). */
typedef struct refit {
    const tu_model *m;
    long lo, hi; /* valid indices [lo, hi) */
    long pos;    /* -1 = not valid */
} refit;

static void ref_init(refit *ri, const tu_model *m, const eng_iter_options *io) {
    ri->m = m;
    ri->lo = io->lower ? (long)tu_model_lb(m, io->lower, io->lower_len, NULL) : 0;
    ri->hi = io->upper ? (long)tu_model_lb(m, io->upper, io->upper_len, NULL) : (long)m->n;
    if (ri->hi < ri->lo) ri->hi = ri->lo;
    ri->pos = -1;
}
static int ref_set(refit *ri, long p) {
    ri->pos = (p >= ri->lo && p < ri->hi) ? p : -1;
    return ri->pos >= 0 ? ENG_OK : ENG_NOTFOUND;
}
static int ref_first(refit *ri) { return ref_set(ri, ri->lo); }
static int ref_last(refit *ri) { return ref_set(ri, ri->hi - 1); }
static int ref_seek(refit *ri, const void *k, size_t kl) {
    long p = (long)tu_model_lb(ri->m, k, kl, NULL);
    return ref_set(ri, p < ri->lo ? ri->lo : p);
}
static int ref_seek_prev(refit *ri, const void *k, size_t kl) {
    int ex;
    long p = (long)tu_model_lb(ri->m, k, kl, &ex) + ex - 1; /* last <= k */
    if (p >= ri->hi) p = ri->hi - 1;
    return ref_set(ri, p);
}

static void iter_matches(eng_iter *it, const refit *ri, int rc, int want, const char *what) {
    cr_assert_eq(rc, want, "%s: status %s, expected %s", what, eng_strerror(rc), eng_strerror(want));
    cr_assert_eq(eng_iter_valid(it), ri->pos >= 0, "%s: valid=%d, expected %d", what, eng_iter_valid(it), ri->pos >= 0);
    if (ri->pos < 0) return;
    const tu_kv *e = &ri->m->a[ri->pos];
    size_t kl, vl;
    const void *k = eng_iter_key(it, &kl), *v = eng_iter_value(it, &vl);
    cr_assert(tu_bytes_eq(k, kl, e->k, e->kl), "%s: positioned on the wrong key (expected index %ld)", what, ri->pos);
    cr_assert(tu_bytes_eq(v, vl, e->v, e->vl), "%s: wrong value at index %ld", what, ri->pos);
}

static void build_even_keys(eng_db *db, tu_model *m, int n, int bigevery) {
    char k[16];
    static uint8_t v[40000];
    for (int i = 0; i < n; i++) {
        size_t kl = tu_key(k, (uint64_t)2 * i);
        size_t vl = (bigevery && i % bigevery == 0) ? 20000 + (size_t)i : (size_t)(i % 50);
        tu_fill(v, vl, (uint64_t)i);
        cr_assert_eq(eng_put(db, k, kl, v, vl, NULL), ENG_OK);
        tu_model_put(m, k, kl, v, vl);
    }
}

TU_BACKEND_TEST(kv, iterator_empty_db_and_empty_ranges, T_TIMEOUT) {
    const char *dir = tu_tmpdir();
    eng_options o = tu_opts(*backend, 0, 0, NULL);
    eng_db *db = tu_open(dir, &o);
    eng_iter *it;
    eng_iter_options io = {0};
    cr_assert_eq(eng_iter_open(db, &io, &it), ENG_OK);
    cr_assert(!eng_iter_valid(it), "fresh iterator is valid");
    cr_assert_eq(eng_iter_first(it), ENG_NOTFOUND);
    cr_assert(!eng_iter_valid(it));
    cr_assert_eq(eng_iter_last(it), ENG_NOTFOUND);
    cr_assert_eq(eng_iter_seek(it, "a", 1), ENG_NOTFOUND);
    cr_assert_eq(eng_iter_seek_prev(it, "z", 1), ENG_NOTFOUND);
    cr_assert(!eng_iter_valid(it));
    eng_iter_close(it);

    tu_model m = {0};
    build_even_keys(db, &m, 500, 0);
    char lo[16], hi[16];
    /* bounds between two adjacent keys: nothing inside */
    size_t lol = tu_key(lo, 101), hil = tu_key(hi, 102);
    eng_iter_options b1 = {lo, lol, hi, hil, NULL};
    /* lower == upper */
    eng_iter_options b2 = {hi, hil, hi, hil, NULL};
    /* everything above the last key / below the first */
    char top[16];
    size_t topl = tu_key(top, 5000);
    eng_iter_options b3 = {top, topl, NULL, 0, NULL};
    eng_iter_options b4 = {NULL, 0, "k", 1, NULL};
    const eng_iter_options *bs[] = {&b1, &b2, &b3, &b4};
    for (int j = 0; j < 4; j++) {
        cr_assert_eq(eng_iter_open(db, bs[j], &it), ENG_OK);
        cr_assert_eq(eng_iter_first(it), ENG_NOTFOUND, "bounds %d: first", j);
        cr_assert(!eng_iter_valid(it));
        cr_assert_eq(eng_iter_last(it), ENG_NOTFOUND, "bounds %d: last", j);
        cr_assert_eq(eng_iter_seek(it, "k", 1), ENG_NOTFOUND, "bounds %d: seek", j);
        cr_assert_eq(eng_iter_seek(it, hi, hil), ENG_NOTFOUND, "bounds %d: seek inside", j);
        cr_assert_eq(eng_iter_seek_prev(it, "l", 1), ENG_NOTFOUND, "bounds %d: seek_prev", j);
        cr_assert_eq(eng_iter_seek_prev(it, hi, hil), ENG_NOTFOUND, "bounds %d: seek_prev inside", j);
        cr_assert(!eng_iter_valid(it));
        eng_iter_close(it);
    }
    tu_model_free(&m);
    tu_close(db);
}

TU_BACKEND_TEST(kv, iterator_bounds_seek_and_direction_changes_match_model, T_TIMEOUT) {
    const char *dir = tu_tmpdir();
    eng_options o = tu_opts(*backend, 4096, 32, NULL);
    eng_db *db = tu_open(dir, &o);
    tu_model m = {0};
    const int n = 3000; /* keys k00000000, k00000002, ... k00005998; every 97th value overflows */
    build_even_keys(db, &m, n, 97);

    /* fixed cases first, readable */
    eng_iter *it;
    char lo[16], hi[16], k[16];
    size_t lol = tu_key(lo, 1001), hil = tu_key(hi, 1100);
    eng_iter_options io = {lo, lol, hi, hil, NULL};
    refit ri;
    ref_init(&ri, &m, &io);
    cr_assert_eq(eng_iter_open(db, &io, &it), ENG_OK);
    iter_matches(it, &ri, eng_iter_first(it), ref_first(&ri), "first >= lower (k1002)");
    cr_assert_eq(ri.pos, 501);
    iter_matches(it, &ri, eng_iter_last(it), ref_last(&ri), "last < upper (k1098)");
    cr_assert_eq(ri.pos, 549);
    size_t kl = tu_key(k, 1050);
    iter_matches(it, &ri, eng_iter_seek(it, k, kl), ref_seek(&ri, k, kl), "seek exact");
    kl = tu_key(k, 1051);
    iter_matches(it, &ri, eng_iter_seek(it, k, kl), ref_seek(&ri, k, kl), "seek between -> next key");
    iter_matches(it, &ri, eng_iter_prev(it), ref_set(&ri, ri.pos - 1), "prev after seek");
    iter_matches(it, &ri, eng_iter_next(it), ref_set(&ri, ri.pos + 1), "next after prev");
    iter_matches(it, &ri, eng_iter_seek_prev(it, k, kl), ref_seek_prev(&ri, k, kl), "seek_prev between");
    iter_matches(it, &ri, eng_iter_next(it), ref_set(&ri, ri.pos + 1), "next after seek_prev");
    kl = tu_key(k, 10);
    iter_matches(it, &ri, eng_iter_seek(it, k, kl), ref_seek(&ri, k, kl), "seek below lower -> lower");
    iter_matches(it, &ri, eng_iter_prev(it), ref_set(&ri, ri.pos - 1), "prev off the lower bound");
    kl = tu_key(k, 5000);
    iter_matches(it, &ri, eng_iter_seek_prev(it, k, kl), ref_seek_prev(&ri, k, kl), "seek_prev above upper");
    iter_matches(it, &ri, eng_iter_next(it), ref_set(&ri, ri.pos + 1), "next off the upper bound");
    iter_matches(it, &ri, eng_iter_seek(it, hi, hil), ref_seek(&ri, hi, hil), "seek to upper -> none");
    kl = tu_key(k, 1000);
    iter_matches(it, &ri, eng_iter_seek_prev(it, k, kl), ref_seek_prev(&ri, k, kl), "seek_prev below lower");
    eng_iter_close(it);

    /* random walks with random bounds */
    tu_rng r = {42};
    for (int walk = 0; walk < 120; walk++) {
        char lb[16], ub[16];
        size_t lbl = 0, ubl = 0;
        eng_iter_options bo = {0};
        int kind = (int)tu_below(&r, 4);
        if (kind & 1) {
            lbl = tu_key(lb, tu_below(&r, 2 * n + 10));
            bo.lower = lb;
            bo.lower_len = lbl;
        }
        if (kind & 2) {
            uint64_t base = bo.lower ? strtoull(lb + 1, NULL, 10) : 0;
            ubl = tu_key(ub, base + tu_below(&r, walk % 3 == 0 ? 40 : 2 * n));
            bo.upper = ub;
            bo.upper_len = ubl;
        }
        ref_init(&ri, &m, &bo);
        cr_assert_eq(eng_iter_open(db, &bo, &it), ENG_OK);
        char what[80];
        for (int step = 0; step < 60; step++) {
            snprintf(what, sizeof what, "walk %d step %d", walk, step);
            int c = (int)tu_below(&r, ri.pos >= 0 ? 10 : 4);
            uint64_t kn = tu_below(&r, 2 * n + 10);
            kl = tu_key(k, kn);
            switch (c) {
            case 0: iter_matches(it, &ri, eng_iter_first(it), ref_first(&ri), what); break;
            case 1: iter_matches(it, &ri, eng_iter_last(it), ref_last(&ri), what); break;
            case 2: iter_matches(it, &ri, eng_iter_seek(it, k, kl), ref_seek(&ri, k, kl), what); break;
            case 3: iter_matches(it, &ri, eng_iter_seek_prev(it, k, kl), ref_seek_prev(&ri, k, kl), what); break;
            case 4:
            case 5:
            case 6: iter_matches(it, &ri, eng_iter_next(it), ref_set(&ri, ri.pos + 1), what); break;
            default: iter_matches(it, &ri, eng_iter_prev(it), ref_set(&ri, ri.pos - 1), what); break;
            }
        }
        eng_iter_close(it);
    }

    /* a long run across many leaves, changing direction at every leaf-ish */
    cr_assert_eq(eng_iter_open(db, &(eng_iter_options){0}, &it), ENG_OK);
    ref_init(&ri, &m, &(eng_iter_options){0});
    iter_matches(it, &ri, eng_iter_first(it), ref_first(&ri), "zigzag first");
    for (int step = 0; step < 4000 && ri.pos >= 0; step++) {
        int back = step % 7 == 6;
        if (back)
            iter_matches(it, &ri, eng_iter_prev(it), ref_set(&ri, ri.pos - 1), "zigzag prev");
        else
            iter_matches(it, &ri, eng_iter_next(it), ref_set(&ri, ri.pos + 1), "zigzag next");
    }
    eng_iter_close(it);
    tu_model_free(&m);
    tu_close(db);
}

/* ---- persistence ------------------------------------------------------------------- */

TU_BACKEND_TEST(kv, close_reopen_keeps_everything_all_page_sizes, T_TIMEOUT) {
    for (size_t p = 0; p < 3; p++) {
        const char *dir = tu_tmpdir();
        uint32_t ps = page_sizes[p];
        eng_options o = tu_opts(*backend, ps, 0, NULL);
        eng_db *db = tu_open(dir, &o);
        tu_model m = {0};
        tu_rng r = {77 + p};
        static uint8_t v[70000];
        for (int i = 0; i < 3000; i++) {
            char k[16];
            size_t kl = tu_key(k, tu_below(&r, 100000));
            size_t vl = i % 200 == 0 ? tu_range(&r, ps, 60000) : tu_range(&r, 0, 300);
            tu_fill(v, vl, tu_next(&r));
            cr_assert_eq(eng_put(db, k, kl, v, vl, NULL), ENG_OK);
            tu_model_put(&m, k, kl, v, vl);
            if (i % 5 == 0) {
                kl = tu_key(k, tu_below(&r, 100000));
                int rc = eng_delete(db, k, kl, NULL);
                cr_assert_eq(rc, tu_model_del(&m, k, kl) ? ENG_OK : ENG_NOTFOUND);
            }
        }
        tu_close(db);

        /* reopen asking for another page size: the stored one wins */
        eng_options o2 = tu_opts(*backend, page_sizes[(p + 1) % 3], 0, NULL);
        db = tu_open(dir, &o2);
        eng_stats st;
        cr_assert_eq(eng_get_stats(db, &st), ENG_OK);
        cr_assert_eq(st.page_size, ps, "page size %u after reopen, created with %u", st.page_size, ps);
        cr_assert_eq(tu_file_size(dir, "data") % ps, 0, "data file is not a whole number of pages");
        char what[64];
        snprintf(what, sizeof what, "page size %u after reopen", ps);
        tu_check_gets(db, &m, what);
        tu_check_scan(db, &m, what);
        /* write more, reopen again */
        for (int i = 0; i < 300; i++) {
            char k[16];
            size_t kl = tu_key(k, 200000 + (uint64_t)i);
            cr_assert_eq(eng_put(db, k, kl, k, kl, NULL), ENG_OK);
            tu_model_put(&m, k, kl, k, kl);
        }
        tu_close(db);
        db = tu_open(dir, &o);
        snprintf(what, sizeof what, "page size %u second reopen", ps);
        tu_check_gets(db, &m, what);
        tu_check_scan(db, &m, what);
        tu_close(db);
        tu_model_free(&m);
    }
}

TU_BACKEND_TEST(kv, second_open_of_open_db_is_busy, T_TIMEOUT) {
    const char *dir = tu_tmpdir();
    eng_options o = tu_opts(*backend, 0, 0, NULL);
    eng_db *db = tu_open(dir, &o);
    cr_assert_eq(eng_put(db, "k", 1, "v", 1, NULL), ENG_OK);
    eng_db *db2 = (eng_db *)&o; /* must be reset to NULL */
    int rc = eng_open(dir, &o, &db2);
    cr_assert_eq(rc, ENG_BUSY, "second open: %s", eng_strerror(rc));
    cr_assert_null(db2, "failed open left *out non-NULL");
    /* the first handle is unaffected */
    expect_get(db, "k", "v", 1);
    cr_assert_eq(eng_put(db, "k2", 2, "v2", 2, NULL), ENG_OK);
    tu_close(db);
    /* after close, open works */
    db = tu_open(dir, &o);
    expect_get(db, "k2", "v2", 2);
    tu_close(db);
}

TU_BACKEND_TEST(kv, sync_then_reopen_and_stats, T_TIMEOUT) {
    const char *dir = tu_tmpdir();
    eng_options o = tu_opts(*backend, 16384, 0, NULL);
    eng_db *db = tu_open(dir, &o);
    tu_model m = {0};
    for (int i = 0; i < 2000; i++) {
        char k[16], v[64];
        size_t kl = tu_key(k, (uint64_t)i * 7919 % 2000);
        size_t vl = (size_t)snprintf(v, sizeof v, "value-%d", i);
        cr_assert_eq(eng_put(db, k, kl, v, vl, NULL), ENG_OK);
        tu_model_put(&m, k, kl, v, vl);
    }
    cr_assert_eq(eng_sync(db), ENG_OK);
    eng_stats st;
    cr_assert_eq(eng_get_stats(db, &st), ENG_OK);
    cr_assert_eq(st.page_size, 16384);
    cr_assert_eq(st.data_checksums, 1);
    cr_assert_eq(st.io_backend, *backend);
    cr_assert_gt(st.page_writes, 0, "no page writes after sync");
    cr_assert_gt(st.syncs, 0, "no syncs counted after eng_sync");
    cr_assert_geq(st.puts, 2000);
    cr_assert_geq(st.high_water_mark, 2, "high-water mark %llu after sync", (unsigned long long)st.high_water_mark);
    cr_assert_geq(st.data_file_bytes, st.high_water_mark * 16384);
    for (int l = 0; l < ENG_LAYER_COUNT; l++) cr_assert_eq(st.corruption[l], 0);
    tu_check_gets(db, &m, "after sync");
    cr_assert_eq(eng_sync(db), ENG_OK, "second sync");
    tu_close(db);
    db = tu_open(dir, &o);
    tu_check_gets(db, &m, "after sync + reopen");
    tu_check_scan(db, &m, "after sync + reopen");
    eng_stats st2;
    cr_assert_eq(eng_get_stats(db, &st2), ENG_OK);
    cr_assert_eq(st2.page_size, 16384);
    tu_close(db);
    tu_model_free(&m);
}

TU_BACKEND_TEST(kv, cache_of_16_pages_is_honored, T_TIMEOUT) {
    /* engine.h: cache_size "min 16 pages" */
    const char *dir = tu_tmpdir();
    eng_options o = tu_opts(*backend, 8192, 16, NULL);
    eng_db *db = tu_open(dir, &o);
    eng_stats st;
    cr_assert_eq(eng_get_stats(db, &st), ENG_OK);
    cr_assert_eq(st.cache_pages, 16, "cache_size = 16 pages gave a %llu-page cache",
                 (unsigned long long)st.cache_pages);
    cr_assert_eq(st.cache_size, 16 * 8192);
    tu_close(db);
}

TU_BACKEND_TEST(kv, existing_db_without_lock_file_opens, T_TIMEOUT) {
    /* LOCK holds no data: a database restored without it (a backup of
     * data + control) is still that database, not a missing one. */
    const char *dir = tu_tmpdir();
    eng_options o = tu_opts(*backend, 0, 0, NULL);
    eng_db *db = tu_open(dir, &o);
    cr_assert_eq(eng_put(db, "a", 1, "1", 1, NULL), ENG_OK);
    tu_close(db);
    char p[4096];
    cr_assert_eq(unlink(tu_path(p, sizeof p, dir, "LOCK")), 0);
    o.create_if_missing = 0;
    o.read_only = 1;
    db = NULL;
    int rc = eng_open(dir, &o, &db);
    cr_assert_eq(rc, ENG_OK, "read-only open of an existing db without LOCK: %s", eng_strerror(rc));
    expect_get(db, "a", "1", 1);
    tu_close(db);
    o.read_only = 0;
    rc = eng_open(dir, &o, &db);
    cr_assert_eq(rc, ENG_OK, "open (create_if_missing=0) of an existing db without LOCK: %s", eng_strerror(rc));
    expect_get(db, "a", "1", 1);
    tu_close(db);
}

TU_BACKEND_TEST(kv, read_only_handle_reads_and_refuses_writes, T_TIMEOUT) {
    const char *dir = tu_tmpdir();
    eng_options o = tu_opts(*backend, 0, 0, NULL);
    eng_db *db = tu_open(dir, &o);
    cr_assert_eq(eng_put(db, "a", 1, "1", 1, NULL), ENG_OK);
    tu_close(db);
    o.read_only = 1;
    db = tu_open(dir, &o);
    expect_get(db, "a", "1", 1);
    int rc = eng_put(db, "b", 1, "2", 1, NULL);
    cr_assert_eq(rc, ENG_READONLY, "put on read-only handle: %s", eng_strerror(rc));
    rc = eng_delete(db, "a", 1, NULL);
    cr_assert_eq(rc, ENG_READONLY, "delete on read-only handle: %s", eng_strerror(rc));
    expect_get(db, "a", "1", 1);
    tu_close(db);
}

TU_BACKEND_TEST(kv, invalid_page_size_rejected, T_TIMEOUT) {
    const char *dir = tu_tmpdir();
    char sub[256];
    snprintf(sub, sizeof sub, "%s/db", dir);
    eng_options o = tu_opts(*backend, 5000, 0, NULL);
    eng_db *db = (eng_db *)&o;
    int rc = eng_open(sub, &o, &db);
    cr_assert_eq(rc, ENG_INVALID, "page_size 5000: %s", eng_strerror(rc));
    cr_assert_null(db);
    o.page_size = 8192;
    o.create_if_missing = 0;
    rc = eng_open(sub, &o, &db);
    cr_assert_neq(rc, ENG_OK, "open of a missing db without create_if_missing succeeded");
    cr_assert_null(db);
}
