/*
 * bench_protection.c -- the engine's side of `make bench-protection`
 * (docs/engine.md, Per key-value protection): what
 * block_protection_bytes_per_key costs in readrandom, the shape of RocksDB's
 * PR 11287 (32-byte keys, 200-byte values).
 *
 *   bench_protection DIR --phase load --num N [--checksums 1|0]
 *       fillseq of N keys into a fresh DIR (sync off; data checksums on
 *       unless --checksums 0), then vacuum (every version hinted: later
 *       reads set no hint and dirty no page) and a checkpoint, close.
 *       Prints one JSON line: {"num", "data_bytes", "page_size",
 *       "leaves_hinted", "load_s", "data_checksums"}.
 *   bench_protection DIR --phase read --num N --width W --cache-size B
 *                    [--reads R] [--warm-reads X] [--threads T] [--seed S]
 *       open DIR read-only with protection width W and a cache of B bytes;
 *       warm the cache (one full scan, then X random gets, default R/4);
 *       then R random gets spread over T threads (default 1), timed.  Every
 *       value is checked, so a wrong answer fails the run instead of
 *       flattering it; the run fails too if the reads wrote a page or set a
 *       hint (the timed reads must read clean pages only).  Prints one JSON
 *       line: {"width", "cache_size", "ops", "seconds", "cpu_ops" (gets per
 *       CPU-second of the reader threads, times T), "kv_bytes",
 *       "kv_pages", "kv_keys", "kv_checks", "kv_check_bytes", "kv_code_bytes", "kv_lazy_leaves" (leaves
 *       loaded and left uncoded, KV0), "kv_lazy_coded" (of those, coded at a
 *       later use), "cache_pages", "misses",
 *       "hits"}: the kv_protection_* memory figures as the timed gets left
 *       them; kv_checks, misses and hits counted over the timed gets.
 *
 *   bench_protection DIR --phase pair --twin DIR2 --num N --width W
 *                    --cache-size B [--reads R] [--rounds K] [--warm-reads X]
 *                    [--threads T] [--seed S] [--kv-lazy auto|always|never]
 *       DIR at w = 0 and DIR2 (a copy) at w = W open side by side, both
 *       warmed, then K rounds (default 20) of R / K gets on each, the same
 *       keys on both, the order alternating every round.  Prints one JSON
 *       line: the read phase's fields for the w side, "ops_0", "cpu_ops_0",
 *       "ops_0_min", "ops_0_max" for the w = 0 side, and "ratio" (median of
 *       the rounds' ops_w / ops_0), "ratio_min", "ratio_max", "cpu_ratio"
 *       (the same from the reader threads' CPU time), "rounds", "hits_0",
 *       "misses_0".
 *
 * bench/run_protection.sh drives it (interleaving, medians, the table).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "bench_util.h"

static int fail(const char *what, int rc) {
    fprintf(stderr, "bench_protection: %s: %s\n", what, eng_strerror(rc));
    return 3;
}

typedef struct reader {
    pthread_t th;
    eng_db *db;
    uint64_t num, n, seed;
    double cpu; /* CPU seconds of this thread (user + system) */
    int rc;     /* engine status, or -1: wrong value */
} reader;

static double thread_cpu(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *read_random(void *arg) {
    reader *r = arg;
    eng_buf b = {0};
    char k[BENCH_KEY_LEN];
    uint8_t v[BENCH_VALUE_LEN];
    uint64_t s = r->seed | 1;
    double c0 = thread_cpu();
    for (uint64_t i = 0; i < r->n; i++) {
        uint64_t x = bench_xorshift(&s) % r->num;
        bench_key(x, k);
        int rc = eng_get(r->db, k, BENCH_KEY_LEN, &b);
        if (rc) {
            r->rc = rc;
            break;
        }
        bench_value(x, v);
        if (b.len != BENCH_VALUE_LEN || memcmp(b.data, v, BENCH_VALUE_LEN)) {
            r->rc = -1;
            break;
        }
    }
    r->cpu = thread_cpu() - c0;
    eng_buf_free(&b);
    return NULL;
}

/* N random gets on T threads; returns wall seconds (and the threads' CPU
 * seconds in *CPU), or < 0 on failure. */
static double run_gets(eng_db *db, uint64_t num, uint64_t n, int threads, uint64_t seed, double *cpu) {
    reader rs[64];
    double t0 = bench_now();
    for (int t = 0; t < threads; t++) {
        rs[t] = (reader){
            .db = db, .num = num, .n = n / (uint64_t)threads, .seed = seed * 0x9E3779B97F4A7C15ull + (uint64_t)t};
        if (pthread_create(&rs[t].th, NULL, read_random, &rs[t])) return -1;
    }
    int bad = 0;
    if (cpu) *cpu = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(rs[t].th, NULL);
        if (cpu) *cpu += rs[t].cpu;
        if (rs[t].rc) {
            if (rs[t].rc < 0)
                fprintf(stderr, "bench_protection: wrong value\n");
            else
                fprintf(stderr, "bench_protection: get: %s\n", eng_strerror(rs[t].rc));
            bad = 1;
        }
    }
    double t1 = bench_now();
    return bad ? -1 : t1 - t0;
}

static int phase_load(const char *dir, uint64_t num, int checksums) {
    eng_options o;
    eng_options_init(&o);
    o.data_checksums = checksums;
    o.sync_mode = ENG_SYNC_OFF;
    o.checkpoint_wal_bytes = 256u << 20;
    o.cache_size = 256u << 20;
    o.error_if_exists = 1;
    eng_db *db;
    int rc = eng_open(dir, &o, &db);
    if (rc) return fail("open", rc);
    char k[BENCH_KEY_LEN];
    uint8_t v[BENCH_VALUE_LEN];
    double t0 = bench_now();
    for (uint64_t i = 0; i < num; i++) {
        bench_key(i, k);
        bench_value(i, v);
        if ((rc = eng_put(db, k, BENCH_KEY_LEN, v, BENCH_VALUE_LEN, NULL))) return fail("put", rc);
    }
    eng_vacuum_stats vs;
    if ((rc = eng_vacuum(db, &vs))) return fail("vacuum", rc);
    if ((rc = eng_checkpoint(db))) return fail("checkpoint", rc);
    double t1 = bench_now();
    if (vs.versions != num) {
        fprintf(stderr, "bench_protection: vacuum saw %llu versions, expected %llu\n", (unsigned long long)vs.versions,
                (unsigned long long)num);
        return 1;
    }
    eng_stats st;
    eng_get_stats(db, &st);
    if ((rc = eng_close(db))) return fail("close", rc);
    printf("{\"num\": %llu, \"data_bytes\": %llu, \"page_size\": %u, \"leaves_hinted\": %llu, \"load_s\": %.3f, "
           "\"data_checksums\": %s}\n",
           (unsigned long long)num, (unsigned long long)st.data_file_bytes, st.page_size, (unsigned long long)vs.leaves,
           t1 - t0, checksums ? "true" : "false");
    return 0;
}

/* kv_lazy_leaves of the handles (--kv-lazy auto|always|never: 0, 1, -1),
 * for the A/B of KV0 in bench/README.md. */
static int kv_lazy;

/* Open DIR read-only at width WIDTH with a cache of CACHE bytes and warm
 * it: one full scan (every leaf passes through the pool), then WARM random
 * gets, so the cache holds a random mix.  Returns the handle or NULL. */
static eng_db *open_warm(const char *dir, uint64_t num, int width, uint64_t cache, uint64_t warm, int threads,
                         uint64_t seed) {
    eng_options o;
    eng_options_init(&o);
    o.cache_size = cache;
    o.block_protection_bytes_per_key = width;
    o.kv_lazy_leaves = kv_lazy;
    o.read_only = 1; /* the timed reads can write nothing */
    o.create_if_missing = 0;
    eng_db *db;
    int rc = eng_open(dir, &o, &db);
    if (rc) {
        fail("open", rc);
        return NULL;
    }
    eng_iter *it;
    if ((rc = eng_iter_open(db, NULL, &it))) {
        fail("iter", rc);
        return NULL;
    }
    uint64_t n = 0;
    for (rc = eng_iter_first(it); rc == ENG_OK; rc = eng_iter_next(it)) n++;
    eng_iter_close(it);
    if (rc != ENG_NOTFOUND) {
        fail("warm scan", rc);
        return NULL;
    }
    if (n != num) {
        fprintf(stderr, "bench_protection: warm scan saw %llu keys, expected %llu\n", (unsigned long long)n,
                (unsigned long long)num);
        return NULL;
    }
    if (warm && run_gets(db, num, warm, threads, seed ^ 0x5741524dull, NULL) < 0) return NULL;
    eng_stats st;
    if (eng_get_stats(db, &st) || st.block_protection_bytes_per_key != width) {
        fprintf(stderr, "bench_protection: the engine does not run w=%d\n", width);
        return NULL;
    }
    return db;
}

/* The reads wrote nothing (a clean, hinted database): else the figures
 * would time write-back. */
static int clean_reads(const eng_stats *st) {
    if (!st->page_writes && !st->hints_set) return 1;
    fprintf(stderr,
            "bench_protection: the reads wrote %llu pages and set %llu hints: the database is not clean "
            "(load it with --phase load, which vacuums and checkpoints)\n",
            (unsigned long long)st->page_writes, (unsigned long long)st->hints_set);
    return 0;
}

/* The per-KV figures of ST since ST0, as JSON fields (no braces). */
static void kv_fields(const eng_stats *st0, const eng_stats *st) {
    printf("\"kv_bytes\": %llu, \"kv_pages\": %llu, \"kv_keys\": %llu, \"kv_checks\": %llu, \"kv_check_bytes\": %llu, "
           "\"kv_code_bytes\": %llu, \"kv_lazy_leaves\": %llu, \"kv_lazy_coded\": %llu, \"cache_pages\": %llu, "
           "\"misses\": %llu, \"hits\": %llu",
           (unsigned long long)st->kv_protection_bytes, (unsigned long long)st->kv_protection_pages,
           (unsigned long long)st->kv_protection_keys, (unsigned long long)(st->kv_checks - st0->kv_checks),
           (unsigned long long)(st->kv_check_bytes - st0->kv_check_bytes),
           (unsigned long long)(st->kv_code_bytes - st0->kv_code_bytes),
           (unsigned long long)(st->kv_lazy_leaves - st0->kv_lazy_leaves),
           (unsigned long long)(st->kv_lazy_coded - st0->kv_lazy_coded), (unsigned long long)st->cache_pages,
           (unsigned long long)(st->cache_misses - st0->cache_misses),
           (unsigned long long)(st->cache_hits - st0->cache_hits));
}

static int phase_read(const char *dir, uint64_t num, int width, uint64_t cache, uint64_t reads, uint64_t warm,
                      int threads, uint64_t seed) {
    eng_db *db = open_warm(dir, num, width, cache, warm, threads, seed);
    if (!db) return 1;
    eng_stats st0, st;
    int rc;
    if ((rc = eng_get_stats(db, &st0))) return fail("stats", rc);
    double cpu = 0, secs = run_gets(db, num, reads, threads, seed, &cpu);
    if (secs < 0) return 1;
    if ((rc = eng_get_stats(db, &st))) return fail("stats", rc);
    if (!clean_reads(&st)) return 1;
    uint64_t done = reads / (uint64_t)threads * (uint64_t)threads;
    printf("{\"width\": %d, \"cache_size\": %llu, \"ops\": %.0f, \"seconds\": %.4f, \"cpu_ops\": %.0f, ", width,
           (unsigned long long)cache, (double)done / secs, secs, (double)done * threads / cpu);
    kv_fields(&st0, &st);
    printf("}\n");
    if ((rc = eng_close(db))) return fail("close", rc);
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* w = 0 and w = WIDTH side by side in one process: DIR at w = 0 and TWIN
 * (a copy of DIR: the engine locks a directory to one handle) at WIDTH,
 * both warmed, then ROUNDS rounds of READS / ROUNDS gets on each, the
 * same keys on both, in an order that alternates every round.  A busy
 * machine slows both sides of a round alike (they are tens of
 * milliseconds apart), so the per-round ratios are steadier than ratios of
 * runs seconds apart; prints their medians, min and max. */
static int phase_pair(const char *dir, const char *twin, uint64_t num, int width, uint64_t cache, uint64_t reads,
                      uint64_t warm, int threads, uint64_t seed, int rounds) {
    eng_db *db[2];
    db[0] = open_warm(dir, num, 0, cache, warm, threads, seed);
    db[1] = db[0] ? open_warm(twin, num, width, cache, warm, threads, seed) : NULL;
    if (!db[0] || !db[1]) return 1;
    eng_stats st0[2], st[2];
    int rc;
    for (int k = 0; k < 2; k++)
        if ((rc = eng_get_stats(db[k], &st0[k]))) return fail("stats", rc);
    uint64_t per = reads / (uint64_t)rounds / (uint64_t)threads * (uint64_t)threads;
    double *ratio = calloc((size_t)rounds, sizeof(double)), *cratio = calloc((size_t)rounds, sizeof(double));
    double wall[2] = {0, 0}, cpu[2] = {0, 0}, opmin[2] = {1e30, 1e30}, opmax[2] = {0, 0};
    if (!ratio || !cratio || !per) return fail("rounds", ENG_NOMEM);
    for (int r = 0; r < rounds; r++) {
        double w1[2], c1[2];
        for (int j = 0; j < 2; j++) {
            int k = (r + j) % 2;
            w1[k] = run_gets(db[k], num, per, threads, seed + (uint64_t)r * 7919u, &c1[k]);
            if (w1[k] < 0) return 1;
            wall[k] += w1[k];
            cpu[k] += c1[k];
            double ops = (double)per / w1[k];
            if (ops < opmin[k]) opmin[k] = ops;
            if (ops > opmax[k]) opmax[k] = ops;
        }
        ratio[r] = w1[0] / w1[1]; /* ops_w / ops_0 */
        cratio[r] = c1[0] / c1[1];
    }
    for (int k = 0; k < 2; k++) {
        if ((rc = eng_get_stats(db[k], &st[k]))) return fail("stats", rc);
        if (!clean_reads(&st[k])) return 1;
    }
    double done = (double)per * rounds;
    double rmin = 1e30, rmax = 0;
    for (int r = 0; r < rounds; r++) {
        if (ratio[r] < rmin) rmin = ratio[r];
        if (ratio[r] > rmax) rmax = ratio[r];
    }
    double rmed = median(ratio, rounds), cmed = median(cratio, rounds);
    printf("{\"width\": %d, \"cache_size\": %llu, \"rounds\": %d, \"ops_0\": %.0f, \"cpu_ops_0\": %.0f, \"ops_0_min\": "
           "%.0f, \"ops_0_max\": %.0f, \"ops\": %.0f, \"cpu_ops\": %.0f, \"ops_min\": %.0f, \"ops_max\": %.0f, "
           "\"ratio\": %.4f, \"ratio_min\": %.4f, \"ratio_max\": %.4f, \"cpu_ratio\": %.4f, ",
           width, (unsigned long long)cache, rounds, done / wall[0], done * threads / cpu[0], opmin[0], opmax[0],
           done / wall[1], done * threads / cpu[1], opmin[1], opmax[1], rmed, rmin, rmax, cmed);
    kv_fields(&st0[1], &st[1]);
    printf(", \"hits_0\": %llu, \"misses_0\": %llu}\n", (unsigned long long)(st[0].cache_hits - st0[0].cache_hits),
           (unsigned long long)(st[0].cache_misses - st0[0].cache_misses));
    free(ratio);
    free(cratio);
    for (int k = 0; k < 2; k++)
        if ((rc = eng_close(db[k]))) return fail("close", rc);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: bench_protection DIR --phase load|read|pair --num N [--width W] [--cache-size B] "
                        "[--reads R] [--warm-reads X] [--threads T] [--seed S] [--twin DIR2] [--rounds K] "
                        "[--kv-lazy auto|always|never] [--checksums 1|0]\n");
        return 2;
    }
    const char *dir = argv[1], *phase = NULL;
    const char *twin = NULL;
    uint64_t num = 0, cache = 64u << 20, reads = 200000, warm = UINT64_MAX, seed = 88172645463325252ull;
    int width = 0, threads = 1, rounds = 20, checksums = 1;
    for (int i = 2; i < argc; i += 2) {
        if (i + 1 >= argc) {
            fprintf(stderr, "bench_protection: %s needs a value\n", argv[i]);
            return 2;
        }
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--phase"))
            phase = v;
        else if (!strcmp(a, "--num"))
            num = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--width"))
            width = atoi(v);
        else if (!strcmp(a, "--cache-size"))
            cache = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--reads"))
            reads = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--warm-reads"))
            warm = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--threads"))
            threads = atoi(v);
        else if (!strcmp(a, "--seed"))
            seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--twin"))
            twin = v;
        else if (!strcmp(a, "--rounds"))
            rounds = atoi(v);
        else if (!strcmp(a, "--checksums") && (!strcmp(v, "0") || !strcmp(v, "1")))
            checksums = atoi(v);
        else if (!strcmp(a, "--kv-lazy") && (!strcmp(v, "auto") || !strcmp(v, "always") || !strcmp(v, "never")))
            kv_lazy = !strcmp(v, "always") ? 1 : !strcmp(v, "never") ? -1 : 0;
        else {
            fprintf(stderr, "bench_protection: unknown option %s\n", a);
            return 2;
        }
    }
    if (!phase || !num) {
        fprintf(stderr, "bench_protection: --phase and --num are required\n");
        return 2;
    }
    if (threads < 1 || threads > 64) {
        fprintf(stderr, "bench_protection: --threads 1..64\n");
        return 2;
    }
    if (width != 0 && width != 1 && width != 2 && width != 4 && width != 8) {
        fprintf(stderr, "bench_protection: --width 0, 1, 2, 4 or 8\n");
        return 2;
    }
    if (warm == UINT64_MAX) warm = reads / 4;
    if (!strcmp(phase, "load")) return phase_load(dir, num, checksums);
    if (!strcmp(phase, "read")) return phase_read(dir, num, width, cache, reads, warm, threads, seed);
    if (!strcmp(phase, "pair")) {
        if (!twin || rounds < 1 || rounds > 10000) {
            fprintf(stderr, "bench_protection: --phase pair needs --twin DIR2 and --rounds 1..10000\n");
            return 2;
        }
        return phase_pair(dir, twin, num, width, cache, reads, warm, threads, seed, rounds);
    }
    fprintf(stderr, "bench_protection: unknown phase %s\n", phase);
    return 2;
}
