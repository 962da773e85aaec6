/*
 * checksum.h -- the page hash: what a page checksum is made of, and the
 * sums of byte spans the per key-value codes take from the same pass
 * (definition in format.h, "The page hash"; docs/engine.md, Pages and
 * checksums).
 *
 * The page hash is linear and keyed by position: each aligned 8-byte word
 * d_j of a page (bytes [8j, 8j + 8), little-endian) is carry-less
 * multiplied by its own key K_j, the products are xored and reduced in
 * GF(2^64).  Because every word has its key whatever else is hashed, the
 * hash of a page is the xor of the sums of any spans that tile it: the
 * sum of a span [lo, hi) is the same value whether a check computes it
 * alone (cs_span) or the checksum's pass does while it covers the page
 * (cs_spans).  That is how one pass over a page loaded from disk yields
 * both its checksum and the codes of its cells (kvprot.c).
 *
 * Three implementations give the same values, chosen once at run time:
 * AVX-512 with VPCLMULQDQ (64 bytes a step), PCLMULQDQ (16 bytes a step),
 * and portable C (a carry-less multiply in software) for CPUs without
 * either.  cs_span_impl runs a named one, for the tests that hold them
 * equal.
 */
#ifndef ENGINE_CHECKSUM_H
#define ENGINE_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

#include "format.h"

/* The sum of bytes [LO, HI) of PAGE (0 <= LO <= HI <= the page size; the
 * word holding byte HI - 1 must lie inside the page's buffer): every
 * word overlapping the span, its bytes outside the span taken as zero,
 * times its key, reduced.  *PARITY (when not NULL): the parity of the
 * span's bits. */
uint64_t cs_span(const uint8_t *page, uint32_t lo, uint32_t hi, unsigned *parity);

/* The page checksum from the sum S of bytes [PAGE_CHECKSUM_FROM, PS) of
 * PAGE, for BLOCK: never 0 (format.h). */
uint64_t cs_checksum_of(uint64_t s, const uint8_t *page, size_t ps, uint64_t block);

/* murmur3's 64-bit finalizer: a bijection that spreads every bit. */
static inline uint64_t cs_fmix64(uint64_t k) {
    k ^= k >> 33;
    k *= 0xFF51AFD7ED558CCDull;
    k ^= k >> 33;
    k *= 0xC4CEB9FE1A85EC53ull;
    k ^= k >> 33;
    return k;
}

/* ---- one pass over a page: the sums of its cells (kvprot.c) ------------------
 *
 * The sums and parities of K spans of PAGE, [OFF[i], OFF[i] + LEN[i]), as
 * cs_span gives them, in one call (the kernel inlined in its loop).  A
 * pass that also wants the page checksum sums the bytes the spans leave
 * out (cs_span) and xors everything: each byte is read once.  That is the
 * checksum whenever the spans and the rest tile [PAGE_CHECKSUM_FROM, ps)
 * exactly, which the caller must know (for a slotted page: its structure
 * check passed and ph_frag is 0, page.c PS4 and PS5). */
void cs_spans(const uint8_t *page, const uint16_t *off, const uint16_t *len, unsigned k, uint64_t *sums, uint8_t *pars);

/* ---- the implementations, for tests and benchmarks ---------------------------- */

enum cs_impl { CS_IMPL_SCALAR = 0, CS_IMPL_PCLMUL = 1, CS_IMPL_AVX512 = 2 };
/* The implementation the CPU gets (the fastest it has). */
int cs_impl(void);
/* cs_impl without a call once it is known (the per-KV checks ask it on
 * every lookup level). */
extern int cs_impl_chosen;
static inline int cs_impl_fast(void) {
    int i = __atomic_load_n(&cs_impl_chosen, __ATOMIC_ACQUIRE);
    return i >= 0 ? i : cs_impl();
}
/* 1 if this CPU can run IMPL. */
int cs_have_impl(int impl);
/* For tests: every call from now on runs IMPL (which the CPU must have),
 * the per-KV codes' loops too; returns the one before. */
int cs_set_impl(int impl);
/* cs_span with IMPL (which the CPU must have). */
uint64_t cs_span_impl(int impl, const uint8_t *page, uint32_t lo, uint32_t hi, unsigned *parity);
/* Key J of the page hash (J < PAGE_HASH_KEYS). */
uint64_t cs_key(unsigned j);
/* A times B in GF(2^64) mod the page hash's polynomial, in plain C. */
uint64_t cs_gf_mul(uint64_t a, uint64_t b);

/* ---- the AVX-512 kernel, inline for loops over many spans (kvprot.c) ------------ */

/* The keys; filled by the first call of cs_impl (or any function above),
 * read by the inline kernel only after it. */
extern uint64_t cs_keys[PAGE_HASH_KEYS];

/* (LO, HI) mod P: x^64 = x^4 + x^3 + x + 1, applied twice (the first fold
 * leaves at most 4 bits above bit 63). */
static inline uint64_t cs_gf_reduce(uint64_t lo, uint64_t hi) {
    uint64_t t = hi >> 63 ^ hi >> 61 ^ hi >> 60;
    return lo ^ hi ^ hi << 1 ^ hi << 3 ^ hi << 4 ^ t ^ t << 1 ^ t << 3 ^ t << 4;
}
static inline unsigned cs_parity64(uint64_t x) { return (unsigned)__builtin_parityll(x); }

#if defined(__x86_64__)
#include <immintrin.h>
#define CS_HAVE_512 1
#define CS_TARGET_512 \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vpopcntdq,vpclmulqdq,pclmul,popcnt,sse4.1")))

/* Block C of PAGE (64 bytes, aligned to the page, so every load lies inside
 * it and, in the pool's aligned frames, inside one cache line) with the
 * bytes outside M zeroed, its 8 words times their keys xored into *ACC;
 * returns the masked block (for the parity). */
CS_TARGET_512 static inline __attribute__((always_inline)) __m512i cs_block_512(const uint8_t *page, uint32_t c,
                                                                                __mmask64 m, __m512i *acc) {
    __m512i d = _mm512_maskz_mov_epi8(m, _mm512_loadu_si512(page + 64u * c));
    __m512i kk = _mm512_load_si512(cs_keys + 8u * c);
    *acc = _mm512_ternarylogic_epi64(*acc, _mm512_clmulepi64_epi128(d, kk, 0x00), _mm512_clmulepi64_epi128(d, kk, 0x11),
                                     0x96);
    return d;
}

/* The span [LO, HI) of PAGE as its 128-bit sum of products not yet
 * reduced (*PROD: low 64 bits, then high) and the xor of its words folded
 * to 128 bits (*X: the span's parity is that of its bits), on a CPU with
 * AVX-512 and VPCLMULQDQ (cs_impl() == CS_IMPL_AVX512), for a caller
 * compiled with CS_TARGET_512: the blocks the span overlaps, the first and
 * last masked. */
CS_TARGET_512 static inline __attribute__((always_inline)) void
cs_span_512_raw(const uint8_t *page, uint32_t lo, uint32_t hi, __m128i *prod, __m128i *x) {
    if (lo >= hi) {
        *prod = *x = _mm_setzero_si128();
        return;
    }
    uint32_t c = lo / 64, last = (hi - 1) / 64;
    __mmask64 first = ~0ull << (lo & 63), end = ~0ull >> (63 - ((hi - 1) & 63));
    __m512i acc = _mm512_setzero_si512(), d;
    if (c == last) {
        d = cs_block_512(page, c, first & end, &acc);
    } else {
        d = cs_block_512(page, c, first, &acc);
        for (c++; c < last; c++) d = _mm512_xor_si512(d, cs_block_512(page, c, ~0ull, &acc));
        d = _mm512_xor_si512(d, cs_block_512(page, c, end, &acc));
    }
    __m256i a4 = _mm256_xor_si256(_mm512_castsi512_si256(acc), _mm512_extracti64x4_epi64(acc, 1));
    *prod = _mm_xor_si128(_mm256_castsi256_si128(a4), _mm256_extracti128_si256(a4, 1));
    __m256i x4 = _mm256_xor_si256(_mm512_castsi512_si256(d), _mm512_extracti64x4_epi64(d, 1));
    *x = _mm_xor_si128(_mm256_castsi256_si128(x4), _mm256_extracti128_si256(x4, 1));
}

/* cs_span on a CPU with AVX-512 and VPCLMULQDQ, for a caller compiled with
 * CS_TARGET_512. */
CS_TARGET_512 static inline __attribute__((always_inline)) uint64_t cs_span_512(const uint8_t *page, uint32_t lo,
                                                                                uint32_t hi, unsigned *par) {
    __m128i a2, x2;
    cs_span_512_raw(page, lo, hi, &a2, &x2);
    if (par) *par = cs_parity64((uint64_t)_mm_cvtsi128_si64(x2) ^ (uint64_t)_mm_extract_epi64(x2, 1));
    return cs_gf_reduce((uint64_t)_mm_cvtsi128_si64(a2), (uint64_t)_mm_extract_epi64(a2, 1));
}
#else
#define CS_HAVE_512 0
#endif

#endif
