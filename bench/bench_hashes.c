/*
 * bench_hashes.c -- what per key-value protection's hashes cost on this CPU
 * (bench/README.md, "One pass at load").
 *
 *   bench_hashes [--rounds K] [--cell N]
 *
 * Per-KV codes hash every cell of a leaf that enters the pool and the
 * found cell of every get, so below a cache holding everything their cost
 * follows the hash's time per cell and per page.  Prints the medians, over
 * K interleaved rounds (default 21), as JSON on stdout (make bench-hashes
 * writes build/bench/hashes.json).
 *
 * Per cell of N bytes (default 255: a 32-byte key, a 200-byte value and the
 * 23-byte leaf header of make bench-protection), over the same 4,096 cells
 * (1 MiB, in L2), 200,000 cells a round:
 *
 *   entry_code_ns    the engine's entry code (engine/kvprot.c
 *                    kv_leaf_entry_code at w = 4, the function a check
 *                    runs): the page hash's sum of the cell, murmur3's
 *                    finalizer, the parity bits
 *   clmul_ns         carry-less multiply-accumulate with AVX2 (32 bytes a
 *                    step, one key per word), folded without reduction
 *   multilinear_ns   32-bit words times 32-bit keys summed mod 2^64
 *                    (VPMULUDQ, XXH3's accumulate): the fastest, but two
 *                    flips can cancel for fixed positions with odds near
 *                    2^-33, too weak for w = 8's 2^-61
 *   xxh3_ns          XXH3-64 in chunks of at most 240 bytes
 *
 * Per 8 KiB leaf of the bench's cells (31 of them), 64 leaves (512 KiB)
 * taken in turn, 640 a round:
 *
 *   page_xxh3_ns     XXH3-64 of the page (the format 2 checksum, with
 *                    libxxhash's dispatch)
 *   page_hash_ns     page_checksum: the page hash, one plain pass
 *   load_pass_ns     kv_compute_checked at w = 4: the checksum and the
 *                    codes from one pass (what a load costs with w > 0)
 *   codes_ns         kv_compute at w = 4: the codes alone (a load with data
 *                    checksums off, or a recode after a change)
 *
 * Only entry_code_ns and the page figures are the engine's, called in
 * libengine.a so they follow any change to it; the other cell figures are
 * candidates, written here to be timed.  A candidate the CPU lacks reports
 * null.  The JSON names the page hash implementation the CPU got
 * ("page_hash_impl": scalar, pclmul or avx512).
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
/* The format 2 checksum as the engine ran it: libxxhash's entry point that
 * picks AVX-512 or AVX2 at run time (its header cannot be included here,
 * where XXH_INLINE_ALL makes the library's functions static). */
#if defined(__x86_64__) && defined(__has_include)
#if __has_include(<xxh_x86dispatch.h>)
XXH64_hash_t XXH3_64bits_withSeed_dispatch(const void *input, size_t len, XXH64_hash_t seed);
#define PAGE_XXH3 XXH3_64bits_withSeed_dispatch
#endif
#endif
#ifndef PAGE_XXH3
#define PAGE_XXH3 XXH3_64bits_withSeed
#endif

#define NCELLS    4096
#define STRIDE    256
#define PER_ROUND 200000

static uint64_t keys[64];

/* The engine's entry code of a leaf cell at w = 4 (every width runs the
 * same pass; w = 8 keeps more of the finalizer's bits), called in
 * libengine.a, not copied.  The cell is taken as lying at offset 0x1000 of
 * a page whose blocks around it are readable (the cells have 64 bytes of
 * room on either side). */
static uint64_t h_entry(const uint8_t *p, size_t len) { return kv_leaf_entry_code(p, len, 0x1000, 4); }

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

/* ---- per page ------------------------------------------------------------------- */

#define NPAGES     64
#define PAGE_BYTES 8192u
#define PAGE_ROUND 640

/* NPAGES leaves of the bench's cells (key, 200-byte value, xmin 1), as
 * many as fit, each with its checksum set. */
static uint8_t *make_leaves(void) {
    uint8_t *pages = aligned_alloc(4096, (size_t)NPAGES * PAGE_BYTES);
    if (!pages) return NULL;
    uint64_t k = 0;
    for (unsigned i = 0; i < NPAGES; i++) {
        uint8_t *p = pages + (size_t)i * PAGE_BYTES, cell[LEAF_CELL_HDR + BENCH_KEY_LEN + BENCH_VALUE_LEN];
        page_init(p, PAGE_BYTES, 100 + i, PAGE_LEAF, 0);
        for (;; k++) {
            char key[BENCH_KEY_LEN];
            uint8_t val[BENCH_VALUE_LEN];
            bench_key(k, key);
            bench_value(k, val);
            size_t sz = leaf_cell_encode(cell, key, BENCH_KEY_LEN, BENCH_VALUE_LEN, val, 0, 0, 1, 0);
            if (page_reclaimable(p) < sz + 2) break;
            page_insert_cell(p, PAGE_BYTES, ph_get_nslots(p), cell, sz);
        }
        page_set_checksum(p, PAGE_BYTES, 100 + i);
    }
    return pages;
}

enum { P_XXH3, P_HASH, P_LOAD, P_CODES, P_COUNT };
static const char *const page_names[P_COUNT] = {"page_xxh3_ns", "page_hash_ns", "load_pass_ns", "codes_ns"};

static double page_round_ns(int which, const uint8_t *pages, kv_codes *c, uint64_t *sink) {
    uint64_t acc = 0, sum = 0;
    double t0 = bench_now();
    for (int i = 0; i < PAGE_ROUND; i++) {
        const uint8_t *p = pages + (size_t)(i % NPAGES) * PAGE_BYTES;
        uint32_t block = 100 + (uint32_t)(i % NPAGES);
        if (which == P_XXH3)
            acc += PAGE_XXH3(p + PAGE_CHECKSUM_FROM, PAGE_BYTES - PAGE_CHECKSUM_FROM, block);
        else if (which == P_HASH)
            acc += page_checksum(p, PAGE_BYTES, block);
        else if (which == P_LOAD)
            acc += (uint64_t)kv_compute_checked(c, p, PAGE_BYTES, 4, block, &sum, NULL) + sum;
        else
            acc += (uint64_t)kv_compute(c, p, PAGE_BYTES, 4, NULL) + c->page;
    }
    double t = (bench_now() - t0) / PAGE_ROUND * 1e9;
    *sink += acc;
    return t;
}

/* The medians (and extremes) of each of the N figures of T, as JSON fields. */
static void print_medians(double **t, const char *const *names, const int *have, int n, int rounds) {
    for (int j = 0; j < n; j++) {
        if (!have[j]) {
            printf(", \"%s\": null", names[j]);
            continue;
        }
        qsort(t[j], (size_t)rounds, sizeof(double), cmp_double);
        printf(", \"%s\": %.2f, \"%s_min\": %.2f, \"%s_max\": %.2f", names[j], t[j][rounds / 2], names[j], t[j][0],
               names[j], t[j][rounds - 1]);
    }
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
    int have[4] = {1, __builtin_cpu_supports("avx2") && __builtin_cpu_supports("vpclmulqdq"),
                   __builtin_cpu_supports("avx2"), 1};
    const char *names[4] = {"entry_code_ns", "clmul_ns", "multilinear_ns", "xxh3_ns"};
    hash_fn fns[4] = {h_entry, h_clmul, h_multilinear, h_xxh3};

    uint64_t s = 0x2545F4914F6CDD1Dull;
    for (int i = 0; i < 64; i++) keys[i] = bench_xorshift(&s) | 1;
    /* 64 bytes of room before and after the cells: the entry code reads
     * the page's whole 64-byte blocks around a cell */
    size_t room = (size_t)NCELLS * (STRIDE + 16) + 128;
    uint8_t *mem = malloc(room), *cells = mem + 64, *pages = make_leaves();
    if (!mem || !pages) return 1;
    for (size_t i = 0; i < room; i++) mem[i] = (uint8_t)bench_xorshift(&s);

    double *t[4], *tp[P_COUNT];
    uint64_t sink = 0;
    kv_codes c = {0};
    for (int j = 0; j < 4; j++) t[j] = calloc((size_t)rounds, sizeof(double));
    for (int j = 0; j < P_COUNT; j++) tp[j] = calloc((size_t)rounds, sizeof(double));
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < 4; k++) {
            int j = (r + k) % 4; /* the order rotates every round */
            if (have[j]) t[j][r] = round_ns(fns[j], cells, len, &sink);
        }
        for (int k = 0; k < P_COUNT; k++) {
            int j = (r + k) % P_COUNT;
            tp[j][r] = page_round_ns(j, pages, &c, &sink);
        }
    }
    static const char *const impl_name[] = {"scalar", "pclmul", "avx512"};
    printf("{\"cell_bytes\": %zu, \"rounds\": %d, \"page_bytes\": %u, \"page_cells\": %u, \"page_hash_impl\": \"%s\"",
           len, rounds, PAGE_BYTES, ph_get_nslots(pages), impl_name[kv_hash_impl()]);
    print_medians(t, names, have, 4, rounds);
    int all[P_COUNT] = {1, 1, 1, 1};
    print_medians(tp, page_names, all, P_COUNT, rounds);
    printf(", \"sink\": %llu}\n", (unsigned long long)(sink & 1));
    kv_free(&c);
    return 0;
}
