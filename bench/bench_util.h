/*
 * bench_util.h -- what the benchmarks of RocksDB's per-KV checksum shape
 * (bench_engine, bench_protection) share: 32-byte keys, 200-byte values
 * that are a pure function of the key's number (so every read checks its
 * value), a monotonic clock and xorshift64.  Static inline: each benchmark
 * is one .c file that includes it.
 */
#ifndef BENCH_BENCH_UTIL_H
#define BENCH_BENCH_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define BENCH_KEY_LEN   32
#define BENCH_VALUE_LEN 200

/* Seconds on the monotonic clock. */
static inline double bench_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Key I: "%032llu", BENCH_KEY_LEN bytes into K (no NUL written). */
static inline void bench_key(uint64_t i, char *k) {
    char tmp[BENCH_KEY_LEN + 1];
    snprintf(tmp, sizeof tmp, "%032llu", (unsigned long long)i);
    memcpy(k, tmp, BENCH_KEY_LEN);
}

/* Value of key I: BENCH_VALUE_LEN bytes into V. */
static inline void bench_value(uint64_t i, uint8_t *v) {
    uint64_t x = i * 0x9E3779B97F4A7C15ull + 1;
    for (int j = 0; j < BENCH_VALUE_LEN; j++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v[j] = (uint8_t)x;
    }
}

/* One xorshift64 step of the state *S (never 0); returns the new state. */
static inline uint64_t bench_xorshift(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

#endif /* BENCH_BENCH_UTIL_H */
