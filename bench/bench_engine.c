/*
 * bench_engine.c -- the engine's side of `make bench-engine`: the shape of
 * RocksDB's per-KV checksum PR (32-byte keys, 200-byte values, one thread,
 * sync off, no compression).
 *
 *   bench_engine DIR --num N [--cache-size B] [--phase fill|read] [--reads R]
 *
 * fill:  fillseq of N keys into a fresh DIR, then close (prints fillseq_ops)
 * read:  open DIR with the given cache, warm it (one full scan), then R
 *        random gets (prints readrandom_ops); every value is checked, so a
 *        wrong answer fails the run instead of flattering it.
 * Output: one line "NAME ops_per_sec" per measurement.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"

#define KEY_LEN 32
#define VALUE_LEN 200

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void key_of(uint64_t i, char *k) { snprintf(k, KEY_LEN + 1, "%032llu", (unsigned long long)i); }

static void value_of(uint64_t i, uint8_t *v) {
    uint64_t x = i * 0x9E3779B97F4A7C15ull + 1;
    for (int j = 0; j < VALUE_LEN; j++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        v[j] = (uint8_t)x;
    }
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: bench_engine DIR --num N [--cache-size B] [--phase fill|read] [--reads R]\n"); return 2; }
    const char *dir = argv[1], *phase = "fill";
    uint64_t num = 1000000, cache = 1ull << 30, reads = 0;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--num")) num = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--cache-size")) cache = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--phase")) phase = argv[i + 1];
        else if (!strcmp(argv[i], "--reads")) reads = strtoull(argv[i + 1], NULL, 10);
        else { fprintf(stderr, "bench_engine: unknown option %s\n", argv[i]); return 2; }
    }
    if (!reads) reads = num;
    eng_options o;
    eng_options_init(&o);
    o.cache_size = cache;
    o.sync_mode = ENG_SYNC_OFF;
    o.checkpoint_wal_bytes = 256u << 20;
    eng_db *db;
    int rc = eng_open(dir, &o, &db);
    if (rc) { fprintf(stderr, "bench_engine: open: %s\n", eng_strerror(rc)); return 3; }
    char k[KEY_LEN + 1];
    uint8_t v[VALUE_LEN];
    if (!strcmp(phase, "fill")) {
        double t0 = now();
        for (uint64_t i = 0; i < num; i++) {
            key_of(i, k);
            value_of(i, v);
            if ((rc = eng_put(db, k, KEY_LEN, v, VALUE_LEN, NULL))) {
                fprintf(stderr, "bench_engine: put: %s\n", eng_strerror(rc));
                return 3;
            }
        }
        double t1 = now();
        printf("fillseq_ops %.0f\n", (double)num / (t1 - t0));
    } else {
        eng_iter *it;
        eng_iter_open(db, NULL, &it);
        uint64_t n = 0;
        for (rc = eng_iter_first(it); rc == ENG_OK; rc = eng_iter_next(it)) n++;
        eng_iter_close(it);
        if (n != num) { fprintf(stderr, "bench_engine: warm scan saw %llu keys, expected %llu\n", (unsigned long long)n, (unsigned long long)num); return 1; }
        eng_buf b = {0};
        double t0 = now();
        for (uint64_t i = 0; i < reads; i++) {
            uint64_t x = next_rand() % num;
            key_of(x, k);
            if ((rc = eng_get(db, k, KEY_LEN, &b)) || b.len != VALUE_LEN) {
                fprintf(stderr, "bench_engine: get: %s\n", eng_strerror(rc));
                return 1;
            }
            value_of(x, v);
            if (memcmp(b.data, v, VALUE_LEN)) { fprintf(stderr, "bench_engine: wrong value\n"); return 1; }
        }
        double t1 = now();
        printf("readrandom_ops %.0f\n", (double)reads / (t1 - t0));
        eng_buf_free(&b);
    }
    rc = eng_close(db);
    if (rc) { fprintf(stderr, "bench_engine: close: %s\n", eng_strerror(rc)); return 3; }
    return 0;
}
