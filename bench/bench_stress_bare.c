/*
 * bench_stress_bare.c -- the bare engine doing what `stress` does, with no
 * oracle: the same op mix (45% get, 30% put, 10% delete, 10% scans of
 * 1-32 keys, 5% batches of 2-8 keys), the same keys ("k" + 15 digits),
 * the same value sizes (8..256 bytes), the same threads, no checks.
 * `make bench-stress` divides stress's verified ops/s by this figure to
 * give the oracle's cost.
 *
 *   bench_stress_bare DIR --threads T --ops N [--max-key K] [--fill]
 *                         [--cache-size B]
 *
 * --fill first writes every key once (one thread, in key order), as the
 * stress benchmark's fill run does.  Prints "bare_ops_per_s X".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/keys.h"
#include "common/rng.h"
#include "engine.h"

static eng_db *db;
static uint64_t max_key = 100000, ops = 100000;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Draws are common/rng.h's (stress's: multiply-high bounds), keys
 * common/keys.h's. */

/* A value as long as stress would write (12..256 bytes), cheap bytes: no
 * oracle header, nothing reads them back (common/keys.h says why values
 * stay apart). */
static size_t value_of(uint64_t key, uint64_t v, uint8_t *buf) {
    size_t len = 12 + (size_t)(rng_mix64(key * 0x100000001b3ull ^ v) % (256 - 12 + 1));
    uint64_t x = rng_mix64(key ^ (v << 32));
    for (size_t i = 0; i < len; i += 8) {
        x = rng_mix64(x);
        memcpy(buf + i, &x, len - i < 8 ? len - i : 8);
    }
    return len;
}

static void *worker(void *arg) {
    uint64_t s = (uint64_t)(uintptr_t)arg * 0x5851f42d4c957f2dull + 1;
    uint8_t vals[8][264];
    char keys[8][KEY_LEN + 1];
    eng_buf b = {0};
    for (uint64_t i = 0; i < ops; i++) {
        uint64_t p = rng_below(&s, 100), key = rng_below(&s, max_key);
        key_format(key, keys[0]);
        if (p < 45) {
            eng_get(db, keys[0], KEY_LEN, &b);
        } else if (p < 75) {
            size_t n = value_of(key, rng_next(&s), vals[0]);
            eng_put(db, keys[0], KEY_LEN, vals[0], n, NULL);
        } else if (p < 85) {
            eng_delete(db, keys[0], KEY_LEN, NULL);
        } else if (p < 95) {
            uint64_t n = 1 + rng_below(&s, 32);
            if (key + n > max_key) n = max_key - key;
            char hi[KEY_LEN + 1];
            key_format(key + n, hi);
            eng_iter_options o = {keys[0], KEY_LEN, hi, KEY_LEN, NULL};
            eng_iter *it;
            if (eng_iter_open(db, &o, &it) == ENG_OK) {
                for (int rc = eng_iter_first(it); rc == ENG_OK; rc = eng_iter_next(it)) {
                    size_t kl, vl;
                    (void)eng_iter_key(it, &kl);
                    (void)eng_iter_value(it, &vl);
                }
                eng_iter_close(it);
            }
        } else {
            eng_op opv[8];
            size_t n = 2 + rng_below(&s, 7);
            for (size_t j = 0; j < n; j++) {
                uint64_t k = rng_below(&s, max_key);
                key_format(k, keys[j]);
                int del = rng_below(&s, 4) == 0;
                opv[j] = (eng_op){.kind = del ? ENG_OP_DELETE : ENG_OP_PUT, .key = keys[j], .klen = KEY_LEN};
                if (!del) opv[j].val = vals[j], opv[j].vlen = value_of(k, rng_next(&s), vals[j]);
            }
            eng_write(db, opv, n, NULL);
        }
    }
    eng_buf_free(&b);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_stress_bare DIR --threads T --ops N [--max-key K] [--fill] [--cache-size B]\n");
        return 2;
    }
    int threads = 2, fill = 0;
    uint64_t cache = 64u << 20;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--fill"))
            fill = 1;
        else if (i + 1 < argc && !strcmp(argv[i], "--threads"))
            threads = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--ops"))
            ops = strtoull(argv[++i], NULL, 10);
        else if (i + 1 < argc && !strcmp(argv[i], "--max-key"))
            max_key = strtoull(argv[++i], NULL, 10);
        else if (i + 1 < argc && !strcmp(argv[i], "--cache-size"))
            cache = strtoull(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "bench_stress_bare: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (threads < 1 || threads > 64) return 2;
    eng_options o;
    eng_options_init(&o);
    o.sync_mode = ENG_SYNC_OFF;
    o.cache_size = cache;
    int rc = eng_open(argv[1], &o, &db);
    if (rc) {
        fprintf(stderr, "bench_stress_bare: open: %s\n", eng_strerror(rc));
        return 3;
    }
    if (fill) {
        uint8_t v[264];
        char k[KEY_LEN + 1];
        for (uint64_t i = 0; i < max_key; i++) {
            key_format(i, k);
            size_t n = value_of(i, 1, v);
            if ((rc = eng_put(db, k, KEY_LEN, v, n, NULL))) {
                fprintf(stderr, "fill: %s\n", eng_strerror(rc));
                return 3;
            }
        }
    }
    pthread_t th[64];
    double t0 = now();
    for (int i = 0; i < threads; i++) pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
    double t = now() - t0;
    printf("bare_ops_per_s %.0f\n", (double)ops * threads / t);
    eng_close(db);
    return 0;
}
