/*
 * bench_hashes.c -- what a faster hash would buy per key-value protection
 * on this CPU (bench/README.md, "w = 8 on the CRC, and where the floor is").
 *
 *   bench_hashes [--rounds K] [--cell N]
 *
 * Per-KV codes hash every cell of a leaf that enters the pool and the
 * found cell of every get, so below a cache holding everything their cost
 * follows the hash's time per cell.  This times four ways of hashing one
 * cell of N bytes (default 255: a 32-byte key, a 200-byte value and the
 * 23-byte leaf header of make bench-protection), each over the same 4,096
 * cells (1 MiB, in L2), interleaved for K rounds (default 21), and prints
 * the medians as JSON on stdout (run_hashes writes build/bench/hashes.json):
 *
 *   crc32c_ns        the engine's codes (engine/kvprot.c kv_leaf_entry_code
 *                    at w = 4, the function the pool runs): CRC32C in
 *                    three interleaved streams, the bytes' parity from the
 *                    same pass, murmur3's finalizer, the parity bits
 *   clmul_ns         carry-less multiply-accumulate (VPCLMULQDQ, 32 bytes a
 *                    step, one 64-bit key per word): linear over GF(2),
 *                    every two-flip change non-zero, as a CRC
 *   multilinear_ns   32-bit words times 32-bit keys summed mod 2^64
 *                    (VPMULUDQ, XXH3's accumulate): the fastest, but two
 *                    flips can cancel for fixed positions with odds near
 *                    2^-33, too weak for w = 8's 2^-61
 *   xxh3_ns          XXH3-64 in chunks of at most 240 bytes, the codes'
 *                    hash before the CRC (engine/kvprot.c kv_hash)
 *
 * Only the first is the engine's; the others are candidates, written here
 * to be timed, not used.  Each value is the median over the rounds of one
 * round's time per cell (wall clock, 200,000 cells a round).  A candidate
 * the CPU lacks reports null.
 */
#define XXH_INLINE_ALL
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "bench_util.h"
#include "kvprot.h"

#define NCELLS    4096
#define STRIDE    256
#define PER_ROUND 200000

static uint64_t keys[64];

/* The engine's entry code of a leaf cell at w = 4 (the three CRC32C
 * streams folded into 32 bits; w = 8 runs the same pass with a wider
 * finalizer), called in libengine.a, not copied: the figure follows any
 * change to engine/kvprot.c. */
static uint64_t h_crc32c(const uint8_t *p, size_t len) { return kv_leaf_entry_code(p, len, 0x1000, 4); }

/* 32 bytes at P + I where I + 32 <= LEN; else the 32 bytes that end the
 * cell with the ones already hashed masked off (no copy, no read past the
 * cell; the tail keeps its offsets within that block). */
static const uint8_t mask_bytes[64] = {0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,
                                       0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,
                                       0,    0,    0,    0,    0,    0,    0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                                       0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                                       0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
__attribute__((target("avx2"))) static inline __m256i load_block(const uint8_t *p, size_t i, size_t len) {
    if (i + 32 <= len) return _mm256_loadu_si256((const __m256i *)(p + i));
    size_t r = len - i; /* 1..31 left; the cell has at least 32 bytes */
    return _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(p + len - 32)),
                            _mm256_loadu_si256((const __m256i *)(mask_bytes + r))); /* low 32 - r bytes zero */
}

__attribute__((target("avx2,vpclmulqdq,pclmul"))) static uint64_t h_clmul(const uint8_t *p, size_t len) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, par = a0;
    for (size_t i = 0; i < len; i += 32) {
        __m256i d = load_block(p, i, len), k = _mm256_loadu_si256((const __m256i *)(keys + i / 8));
        a0 = _mm256_xor_si256(a0, _mm256_clmulepi64_epi128(d, k, 0x00));
        a1 = _mm256_xor_si256(a1, _mm256_clmulepi64_epi128(d, k, 0x11));
        par = _mm256_xor_si256(par, d);
    }
    __m256i a = _mm256_xor_si256(a0, a1);
    __m128i s = _mm_xor_si128(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    __m128i q = _mm_xor_si128(_mm256_castsi256_si128(par), _mm256_extracti128_si256(par, 1));
    uint64_t lo = (uint64_t)_mm_cvtsi128_si64(s), hi = (uint64_t)_mm_extract_epi64(s, 1);
    uint64_t pp = (uint64_t)_mm_cvtsi128_si64(q) ^ (uint64_t)_mm_extract_epi64(q, 1);
    return (lo ^ hi * 0x9E3779B97F4A7C15ull) << 1 | (uint64_t)__builtin_parityll(pp);
}

__attribute__((target("avx2"))) static uint64_t h_multilinear(const uint8_t *p, size_t len) {
    __m256i acc = _mm256_setzero_si256(), par = acc;
    for (size_t i = 0; i < len; i += 32) {
        __m256i d = load_block(p, i, len), k = _mm256_loadu_si256((const __m256i *)(keys + i / 8));
        __m256i dk = _mm256_add_epi32(d, k);
        acc = _mm256_add_epi64(acc, _mm256_mul_epu32(dk, _mm256_srli_epi64(dk, 32)));
        par = _mm256_xor_si256(par, d);
    }
    __m128i s = _mm_add_epi64(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    __m128i q = _mm_xor_si128(_mm256_castsi256_si128(par), _mm256_extracti128_si256(par, 1));
    uint64_t pp = (uint64_t)_mm_cvtsi128_si64(q) ^ (uint64_t)_mm_extract_epi64(q, 1);
    return ((uint64_t)_mm_cvtsi128_si64(s) ^ (uint64_t)_mm_extract_epi64(s, 1)) << 1 | (uint64_t)__builtin_parityll(pp);
}

static uint64_t h_xxh3(const uint8_t *p, size_t len) {
    size_t n = len < 240 ? len : 240;
    uint64_t h = XXH3_64bits(p, n);
    for (size_t off = n; off < len; off += n) {
        n = len - off < 240 ? len - off : 240;
        h = XXH3_64bits_withSeed(p + off, n, h);
    }
    return h;
}

typedef uint64_t (*hash_fn)(const uint8_t *, size_t);

static double round_ns(hash_fn f, const uint8_t *cells, size_t len, uint64_t *sink) {
    uint64_t acc = 0;
    double t0 = bench_now();
    for (int i = 0; i < PER_ROUND; i++) acc += f(cells + (size_t)(i % NCELLS) * (STRIDE + 16) + (i & 15), len);
    double t = (bench_now() - t0) / PER_ROUND * 1e9;
    *sink += acc;
    return t;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    int rounds = 21;
    size_t len = 255;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && !strcmp(argv[i], "--rounds"))
            rounds = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--cell"))
            len = (size_t)atol(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_hashes [--rounds K] [--cell N]\n");
            return 2;
        }
    }
    if (rounds < 1 || rounds > 1000 || len < 32 || len > 256) {
        fprintf(stderr, "bench_hashes: --rounds 1..1000, --cell 32..256\n");
        return 2;
    }
    __builtin_cpu_init();
    int have[4] = {__builtin_cpu_supports("sse4.2"),
                   __builtin_cpu_supports("avx2") && __builtin_cpu_supports("vpclmulqdq"),
                   __builtin_cpu_supports("avx2"), 1};
    const char *names[4] = {"crc32c_ns", "clmul_ns", "multilinear_ns", "xxh3_ns"};
    hash_fn fns[4] = {h_crc32c, h_clmul, h_multilinear, h_xxh3};

    uint64_t s = 0x2545F4914F6CDD1Dull;
    for (int i = 0; i < 64; i++) keys[i] = bench_xorshift(&s) | 1;
    uint8_t *cells = malloc((size_t)NCELLS * (STRIDE + 16) + 64);
    if (!cells) return 1;
    for (size_t i = 0; i < (size_t)NCELLS * (STRIDE + 16) + 64; i++) cells[i] = (uint8_t)bench_xorshift(&s);

    double *t[4];
    uint64_t sink = 0;
    for (int j = 0; j < 4; j++) t[j] = calloc((size_t)rounds, sizeof(double));
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < 4; k++) {
            int j = (r + k) % 4; /* the order rotates every round */
            if (have[j]) t[j][r] = round_ns(fns[j], cells, len, &sink);
        }
    printf("{\"cell_bytes\": %zu, \"rounds\": %d", len, rounds);
    for (int j = 0; j < 4; j++) {
        if (!have[j]) {
            printf(", \"%s\": null", names[j]);
            continue;
        }
        qsort(t[j], (size_t)rounds, sizeof(double), cmp_double);
        printf(", \"%s\": %.2f, \"%s_min\": %.2f, \"%s_max\": %.2f", names[j], t[j][rounds / 2], names[j], t[j][0],
               names[j], t[j][rounds - 1]);
    }
    printf(", \"sink\": %llu}\n", (unsigned long long)(sink & 1));
    return 0;
}
