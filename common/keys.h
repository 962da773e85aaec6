/*
 * keys.h -- the key convention of the stress driver, the oracle,
 * engine-tool load/check, the crash and recovery suites and the bare
 * stress benchmark: key number I is the 16 bytes
 *
 *     "k" + I's 15 decimal digits, zero-padded      ("k000000000000042")
 *
 * so bytewise order is numeric order, a scan's bounds are keys too, and a
 * database written by one of them reads in another (engine-tool check on
 * a stress database, a report line's key= in the oracle's terms).  Key
 * numbers are below KEY_SPACE (10^15); a larger number keeps its last 15
 * digits (no caller gets near: stress caps max_key at 2^32, engine-tool
 * --keys at 10^15).  Header only, static inline; the engine never includes
 * it.
 *
 * Values are not shared, on purpose: each program's values prove a
 * different thing, so each keeps its own generator (all draw on
 * common/rng.h):
 *   - the oracle (orc_value, used by stress): the first 12 bytes carry the
 *     key number and version, so a misplaced or stale value names whose it
 *     is (orc_value_whose); the length depends on (key, version);
 *   - engine-tool: a splitmix64 stream of (index, --seed) over the whole
 *     --value-size bytes, so a check with another seed finds every value
 *     wrong;
 *   - the crash suites (cu_val): a header of (index, generation, tag) and
 *     an optionally compressible body, the length fixed per key;
 *   - bench_stress_bare: stress's length range with cheap bytes and no
 *     header, since nothing reads them back (it measures the bare engine).
 * Other key shapes are other conventions, kept apart: the engine suites'
 * 9-byte tu_key ("k%08llu", tests/testutil.h) and the RocksDB-shaped
 * benchmarks' 32-byte keys (bench/bench_util.h).
 */
#ifndef COMMON_KEYS_H
#define COMMON_KEYS_H

#include <stddef.h>
#include <stdint.h>

#define KEY_LEN   16                  /* "k" + 15 digits, no NUL */
#define KEY_SPACE 1000000000000000ull /* 10^15: key numbers are below it */

/* Write key number I (mod KEY_SPACE) to OUT: KEY_LEN bytes and a NUL. */
static inline void key_format(uint64_t i, char out[KEY_LEN + 1]) {
    out[0] = 'k';
    for (int d = KEY_LEN - 1; d >= 1; d--) {
        out[d] = (char)('0' + i % 10);
        i /= 10;
    }
    out[KEY_LEN] = 0;
}

/* If the LEN bytes at P are a key of this convention, set *I to its
 * number and return 0; else return -1 and leave *I alone. */
static inline int key_parse(const void *p, size_t len, uint64_t *i) {
    const char *c = p;
    if (len != KEY_LEN || c[0] != 'k') return -1;
    uint64_t x = 0;
    for (size_t d = 1; d < KEY_LEN; d++) {
        if (c[d] < '0' || c[d] > '9') return -1;
        x = x * 10 + (uint64_t)(c[d] - '0');
    }
    *i = x;
    return 0;
}

#endif /* COMMON_KEYS_H */
