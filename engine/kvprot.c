/*
 * kvprot.c -- per key-value codes of cached pages (contract in kvprot.h).
 *
 * An entry code is made from the page hash's sum of its cell (checksum.h:
 * a span of the page, keyed by position), so the pass that checks a page
 * read from disk makes the codes of its cells on the way (kv_compute_checked)
 * and a check recomputes one cell's sum alone.  The page code of a slotted
 * page covers 24 header bytes, checked on every level of every lookup, and
 * takes the CRC instruction where the CPU has it (three steps); pages
 * without slots take the page hash's sum of their bytes from offset 16.
 */
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "checksum.h"
#include "crc32c.h"
#include "kvprot.h"

static inline unsigned parity(const uint8_t *p, size_t n) {
    uint64_t x = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        x ^= w;
    }
    for (; i < n; i++) x ^= p[i];
    return (unsigned)__builtin_parityll(x);
}

/* The slotted page code's hash where the CPU has no CRC32C: XXH3 (a
 * 24-byte input stays on its short path), the seed mixed in after. */
static inline uint64_t kv_hash(const uint8_t *p, size_t len, uint64_t seed) {
    return XXH3_64bits(p, len) ^ seed * 0x9E3779B97F4A7C15ull;
}

#if CRC32C_HW
/* The slotted page code's hash: CRC32C in hardware over the 24 header
 * bytes (three steps), the bytes' parity from the same pass, murmur3's
 * 32-bit finalizer after it (a CRC is linear: a flip pattern at a given
 * place would change a truncated CRC by the same bits whatever the data;
 * the finalizer, a bijection, makes the kept bits of the change depend on
 * the data).  LEN is at most 64. */
CRC32C_HW_TARGET static uint64_t crc_hash(const uint8_t *p, size_t len, uint64_t seed, unsigned *par) {
    uint64_t a = (uint32_t)seed ^ 0x9E3779B9u, x = 0;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        a = crc32c_step64(a, w);
        x ^= w;
    }
    if (i < len) {
        uint64_t w = 0;
        for (size_t k = 0; i + k < len; k++) w |= (uint64_t)p[i + k] << (8 * k);
        a = crc32c_step64(a, w);
        x ^= w;
    }
    *par = (unsigned)__builtin_parityll(x);
    uint32_t h = (uint32_t)a ^ (uint32_t)len;
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return (uint64_t)h << 32 | h;
}
static int have_crc_hw = -1; /* crc32c_have_hw(), kept here: asked once per code */
static inline int use_crc(void) {
    int h = __atomic_load_n(&have_crc_hw, __ATOMIC_RELAXED);
    if (h < 0) {
        h = crc32c_have_hw();
        __atomic_store_n(&have_crc_hw, h, __ATOMIC_RELAXED);
    }
    return h;
}
#else
static inline int use_crc(void) { return 0; }
static uint64_t crc_hash(const uint8_t *p, size_t len, uint64_t seed, unsigned *par) {
    *par = parity(p, len);
    return kv_hash(p, len, seed);
}
#endif

static inline uint64_t truncate_code(uint64_t h, unsigned w) { return w >= 8 ? h : h & ((1ull << (8 * w)) - 1); }

uint64_t kv_code(const uint8_t *p, size_t len, uint64_t seed, unsigned w) {
    return truncate_code((kv_hash(p, len, seed) & ~1ull) | parity(p, len), w);
}

/* An entry's code: the hash of the cell with three parity bits: bit 0 over
 * the cell's fixed header (lengths, flags, xmin, xmax), bit 1 over the
 * slot offset (SEED), bit 2 over the rest (key and value).  A single
 * flipped bit changes exactly one of them over a span left intact: a flip
 * in a length changes the span of the rest, but its own header bit already
 * differs; a flip in the slot changes the cell hashed, but its own bit
 * differs.  So every single flip is caught, whatever the hash bits do.
 * (One pass of parity per part: the hash itself carries none.) */
/* Parity of a cell's first HDR bytes (at most 24: a leaf's 23, an internal
 * cell's 6): three masked words when the cell has 24 bytes, which the
 * compiler folds for a constant HDR. */
static inline unsigned head_parity(const uint8_t *p, size_t len, size_t hdr) {
    if (len < 24 || hdr > 24) return parity(p, hdr < len ? hdr : len);
    uint64_t x = 0;
    for (size_t k = 0; k < 3; k++) {
        uint64_t v;
        memcpy(&v, p + 8 * k, 8);
        if (hdr >= 8 * k + 8)
            x ^= v;
        else if (hdr > 8 * k)
            x ^= v & ((1ull << (8 * (hdr - 8 * k))) - 1);
    }
    return (unsigned)__builtin_parityll(x);
}

/* The code from the hash H and the parities of the cell header, the rest
 * of the cell, and the slot offset SEED. */
/* The code's bits that are parities (the rest are hash bits); both ways of
 * making codes (finish_code, codes_512) take them from here. */
#ifdef ENG_BROKEN_KV_NO_PARITY
/* planted bug (tests/mutants.txt): the three parity bits are hash bits, a
 * truncated hash like RocksDB's: a single flip escapes with odds 2^-8w. */
#define PARITY_BITS 0ull
#else
#define PARITY_BITS 7ull
#endif
static inline uint64_t finish_code(uint64_t h, unsigned phdr, unsigned prest, uint64_t seed, unsigned w) {
    uint64_t par = (uint64_t)phdr | (uint64_t)__builtin_parityll(seed) << 1 | (uint64_t)prest << 2;
    return truncate_code((h & ~PARITY_BITS) | (par & PARITY_BITS), w);
}

/* The code of a cell whose page hash sum is SUM (checksum.h: the span of
 * its bytes, keyed by their place in the page), PALL the parity of all its
 * bytes, PHDR of its header, SEED its slot's offset.  The sum is linear in
 * the bytes: a flip pattern changes it by a fixed amount (never zero for
 * one or two flipped bits, 2^-64 for any other change); murmur3's
 * finalizer, a bijection, turns that into a change of the 64 bits that
 * depends on the data, so the 8w - 3 hash bits a code keeps let a pattern
 * through with odds 2^-(8w-3). */
static inline uint64_t code_of_sum(uint64_t sum, unsigned phdr, unsigned pall, uint64_t seed, unsigned w) {
    return finish_code(cs_fmix64(sum ^ seed * 0x9E3779B97F4A7C15ull), phdr, pall ^ phdr, seed, w);
}

/* A store of the width's size (memcpy of a variable length is a call into
 * libc per code); little-endian, as get_code reads it. */
static inline void put_code(uint8_t *dst, uint64_t v, unsigned w) {
    switch (w) {
    case 1: dst[0] = (uint8_t)v; break;
    case 2: memcpy(dst, &v, 2); break;
    case 4: memcpy(dst, &v, 4); break;
    default: memcpy(dst, &v, 8); break;
    }
}
/* A load of the width's size, not memcpy with a variable length (a call
 * into libc on every check). */
static inline uint64_t get_code(const uint8_t *src, unsigned w) {
    switch (w) {
    case 1: return src[0];
    case 2: return rd16(src);
    case 4: return rd32(src);
    default: return rd64(src);
    }
}

#ifdef ENG_BROKEN_KV_CHECKS_NOTHING
/* planted bug (tests/mutants.txt): every check passes (codes made, never
 * compared): any flip in a cached page escapes. */
#define KV_CHECKS_NOTHING return 0
#else
#define KV_CHECKS_NOTHING (void)0
#endif

static inline int slotted(int type) { return type == PAGE_LEAF || type == PAGE_INTERNAL; }

/* Where the page code of a page without slots starts, and how many bytes
 * it covers: the page from byte 16 on. */
#define SLOTLESS_FROM 16u
static inline uint32_t slotless_len(uint32_t ps) {
#ifdef ENG_BROKEN_KV_SLOTLESS_PAGE_CODE_SHORT
    /* planted bug (tests/mutants.txt): the length of a page without slots
     * subtracts the header size instead of the code's start offset, so the
     * last 24 bytes of overflow and commit-log pages are covered by no code:
     * a flip there in the cache is returned or written back unseen. */
    return ps - PAGE_HDR;
#else
    return ps - SLOTLESS_FROM;
#endif
}
/* The page code of a page without slots from the page hash's sum of the
 * bytes it covers and their parity. */
static inline uint32_t slotless_code(uint64_t sum, unsigned par) {
    return (uint32_t)((cs_fmix64(sum ^ 0x6b76) & ~1ull) | par);
}

/* Header fields that steer reads; for pages without slots, everything. */
/* A get checks one per level, so a slotted page's 24 header bytes go
 * through the CRC (three steps) where the hardware has it; the parity
 * bit is the same either way. */
static uint32_t page_code(const uint8_t *page, uint32_t ps, uint64_t *hashed) {
    if (!slotted(ph_get_type(page))) {
        unsigned par;
        uint32_t len = slotless_len(ps);
        if (hashed) *hashed += len;
        uint64_t sum = cs_span(page, SLOTLESS_FROM, SLOTLESS_FROM + len, &par);
        return slotless_code(sum, par);
    }
    size_t len = PAGE_HDR - 16;
    if (hashed) *hashed += len;
    if (use_crc()) {
        unsigned par;
        uint64_t h = crc_hash(page + 16, len, 0x6b76, &par);
        return (uint32_t)((h & ~1ull) | par);
    }
    return (uint32_t)kv_code(page + 16, len, 0x6b76, 4);
}

/* Cell at SLOT: its bytes, clamped to the page (a damaged length hashes
 * other bytes, which is a mismatch, never an overrun). */
static inline __attribute__((always_inline)) void cell_span(const uint8_t *page, uint32_t ps, unsigned slot,
                                                            const uint8_t **p, size_t *len, uint16_t *off) {
    unsigned base = page_slot_base(page);
    size_t so = base + 2u * slot;
    uint16_t o = so + 2 <= ps ? rd16(page + so) : 0;
    *off = o;
    if (o < PAGE_HDR || o >= ps) {
        *p = page;
        *len = 0;
        return;
    }
    size_t sz, klen = (uint32_t)o + 2u <= ps ? rd16(page + o) : 0;
    if (ph_get_type(page) == PAGE_LEAF)
        sz = o + LEAF_CELL_HDR <= ps ? leaf_cell_size(klen, rd32(page + o + 3), page[o + 2] & CELL_OVERFLOW) : ps - o;
    else
        sz = internal_cell_size(klen);
    if (sz > ps - o) sz = ps - o;
    *p = page + o;
    *len = sz;
}

/* A way to sum a span of a page (cs_span, or the inline AVX-512 kernel). */
typedef uint64_t (*span_fn)(const uint8_t *, uint32_t, uint32_t, unsigned *);

/* The code of the cell of LEN bytes at P (offset SEED of its page), its
 * span summed by SPAN (a constant where this is inlined). */
static inline __attribute__((always_inline)) uint64_t entry_code_of(span_fn span, const uint8_t *page, const uint8_t *p,
                                                                    size_t len, size_t hdr, uint64_t seed, unsigned w) {
    unsigned pall, phdr = head_parity(p, len, hdr);
    uint32_t at = (uint32_t)(p - page);
    uint64_t sum = span(page, at, at + (uint32_t)len, &pall);
    return code_of_sum(sum, phdr, pall, seed, w);
}

uint64_t kv_leaf_entry_code(const uint8_t *p, size_t len, uint64_t seed, unsigned w) {
    return entry_code_of(cs_span, p - seed, p, len, LEAF_CELL_HDR, seed, w);
}

int kv_hash_impl(void) { return cs_impl(); }

/* The code of entry SLOT, computed as a check does (one per lookup level:
 * the kernel inlined where the CPU has AVX-512, so a check makes no call
 * for its hash). */
static inline __attribute__((always_inline)) uint64_t entry_code_with(span_fn span, const uint8_t *page, uint32_t ps,
                                                                      unsigned slot, unsigned w, uint64_t *hashed) {
    const uint8_t *p;
    size_t len;
    uint16_t off;
    cell_span(page, ps, slot, &p, &len, &off);
    if (hashed) *hashed += len;
    /* A constant header size per branch, so head_parity folds. */
    if (ph_get_type(page) == PAGE_LEAF) return entry_code_of(span, page, p, len, LEAF_CELL_HDR, off, w);
    return entry_code_of(span, page, p, len, INTERNAL_CELL_HDR, off, w);
}
#if CS_HAVE_512
CS_TARGET_512 static uint64_t entry_code_512(const uint8_t *page, uint32_t ps, unsigned slot, unsigned w,
                                             uint64_t *hashed) {
    return entry_code_with(cs_span_512, page, ps, slot, w, hashed);
}
#endif
static uint64_t entry_code(const uint8_t *page, uint32_t ps, unsigned slot, unsigned w, uint64_t *hashed) {
#if CS_HAVE_512
    if (cs_impl_fast() == CS_IMPL_AVX512) return entry_code_512(page, ps, slot, w, hashed);
#endif
    return entry_code_with(cs_span, page, ps, slot, w, hashed);
}

/* Keys of leaf cells A and B (clamped spans) are equal: the length, then
 * the last word (adjacent keys in sorted order differ most often there),
 * then the rest. */
static inline int leaf_keys_equal(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
    if (alen < LEAF_CELL_HDR || blen < LEAF_CELL_HDR) return 0;
    size_t ka = rd16(a), kb = rd16(b);
    if (ka != kb || ka > alen - LEAF_CELL_HDR || kb > blen - LEAF_CELL_HDR) return 0;
    a += LEAF_CELL_HDR;
    b += LEAF_CELL_HDR;
    if (ka >= 8) {
        uint64_t x, y;
        memcpy(&x, a + ka - 8, 8);
        memcpy(&y, b + ka - 8, 8);
        if (x != y) return 0;
    }
    return memcmp(a, b, ka) == 0;
}

/* The page code as stored: the flags flip its parity bit (bit 0). */
static inline uint32_t page_code_with(uint32_t pc, unsigned flags) { return pc ^ (flags & KV_UNIQUE_KEYS); }

/* The codes of the N cells of a slotted page into C, each cell's span,
 * its sum from the page hash (SPAN), its code.  Returns the leaf's flags
 * (KV_UNIQUE_KEYS while no two adjacent entries have one key; 0 for
 * internal pages); adds the cells' bytes to *BYTES and the xor of their
 * sums to *SUM_ALL.  code_cells_512 is the same on 8 cells at a time. */
static inline __attribute__((always_inline)) unsigned code_cells_with(span_fn span, kv_codes *c, const uint8_t *page,
                                                                      uint32_t ps, unsigned n, unsigned w,
                                                                      uint64_t *bytes, uint64_t *sum_all) {
    int leaf = ph_get_type(page) == PAGE_LEAF;
    unsigned flags = leaf ? KV_UNIQUE_KEYS : 0;
    const uint8_t *prev = NULL;
    size_t prevlen = 0;
    uint64_t all = 0, total = 0;
    for (unsigned i = 0; i < n; i++) {
        const uint8_t *p;
        size_t len;
        uint16_t seed;
        unsigned pall;
        cell_span(page, ps, i, &p, &len, &seed);
        total += len;
        uint32_t at = (uint32_t)(p - page);
        uint64_t sum = span(page, at, at + (uint32_t)len, &pall);
        all ^= sum;
        /* a constant header size per branch, so head_parity folds */
        unsigned phdr = leaf ? head_parity(p, len, LEAF_CELL_HDR) : head_parity(p, len, INTERNAL_CELL_HDR);
        put_code(c->code + (size_t)i * w, code_of_sum(sum, phdr, pall, seed, w), w);
        if (leaf && prev && leaf_keys_equal(prev, prevlen, p, len)) flags = 0;
        prev = p;
        prevlen = len;
    }
    *bytes += total;
    *sum_all = all;
    return flags;
}

#if CS_HAVE_512
/* code_of_sum on 8 lanes: the sums as their 128-bit products (LO, HI) not
 * yet reduced, X the xor of each cell's words (its parity), PHDR the header
 * parities, SEED the slot offsets; the same codes, bit for bit. */
CS_TARGET_512 static inline __m512i codes_512(__m512i lo, __m512i hi, __m512i x, __m512i phdr, __m512i seed) {
    /* cs_gf_reduce */
    __m512i t = _mm512_ternarylogic_epi64(_mm512_srli_epi64(hi, 63), _mm512_srli_epi64(hi, 61),
                                          _mm512_srli_epi64(hi, 60), 0x96);
    __m512i r = _mm512_ternarylogic_epi64(lo, hi, _mm512_slli_epi64(hi, 1), 0x96);
    r = _mm512_ternarylogic_epi64(r, _mm512_slli_epi64(hi, 3), _mm512_slli_epi64(hi, 4), 0x96);
    r = _mm512_ternarylogic_epi64(r, t, _mm512_slli_epi64(t, 1), 0x96);
    r = _mm512_ternarylogic_epi64(r, _mm512_slli_epi64(t, 3), _mm512_slli_epi64(t, 4), 0x96);
    /* cs_fmix64(sum ^ seed * golden) */
    __m512i k = _mm512_xor_si512(r, _mm512_mullo_epi64(seed, _mm512_set1_epi64((long long)0x9E3779B97F4A7C15ull)));
    k = _mm512_xor_si512(k, _mm512_srli_epi64(k, 33));
    k = _mm512_mullo_epi64(k, _mm512_set1_epi64((long long)0xFF51AFD7ED558CCDull));
    k = _mm512_xor_si512(k, _mm512_srli_epi64(k, 33));
    k = _mm512_mullo_epi64(k, _mm512_set1_epi64((long long)0xC4CEB9FE1A85EC53ull));
    k = _mm512_xor_si512(k, _mm512_srli_epi64(k, 33));
    /* finish_code */
    const __m512i one = _mm512_set1_epi64(1);
    __m512i pall = _mm512_and_si512(_mm512_popcnt_epi64(x), one);
    __m512i pseed = _mm512_and_si512(_mm512_popcnt_epi64(seed), one);
    __m512i par = _mm512_ternarylogic_epi64(phdr, _mm512_slli_epi64(pseed, 1),
                                            _mm512_slli_epi64(_mm512_xor_si512(pall, phdr), 2), 0xFE);
    const __m512i bits = _mm512_set1_epi64((long long)PARITY_BITS);
    return _mm512_ternarylogic_epi64(bits, k, par, 0xAC); /* bits ? par : k, bit by bit */
}

/* Store the K <= 8 codes of V, W bytes each, at DST. */
CS_TARGET_512 static inline void store_codes_512(uint8_t *dst, __m512i v, unsigned k, unsigned w) {
    __mmask8 m = (__mmask8)((1u << k) - 1);
    switch (w) {
    case 1: _mm512_mask_cvtepi64_storeu_epi8(dst, m, v); break;
    case 2: _mm512_mask_cvtepi64_storeu_epi16(dst, m, v); break;
    case 4: _mm512_mask_cvtepi64_storeu_epi32(dst, m, v); break;
    default: _mm512_mask_storeu_epi64(dst, m, v); break;
    }
}

/* code_cells on a CPU with AVX-512: 8 cells at a time, each cell's span
 * summed by the inline kernel (cs_span_512 without its last steps), the 8
 * codes made at once (codes_512). */
CS_TARGET_512 static unsigned code_cells_512(kv_codes *c, const uint8_t *page, uint32_t ps, unsigned n, unsigned w,
                                             uint64_t *bytes, uint64_t *sum_all) {
    int leaf = ph_get_type(page) == PAGE_LEAF;
    unsigned flags = leaf ? KV_UNIQUE_KEYS : 0;
    const uint8_t *prev = NULL;
    size_t prevlen = 0;
    uint64_t total = 0;
    __m128i all = _mm_setzero_si128();
    for (unsigned i0 = 0; i0 < n; i0 += 8) {
        unsigned k = n - i0 < 8 ? n - i0 : 8;
        /* lane j of each: cell i0 + j (built in registers: a vector load
         * of 8 separate stores would wait for them to leave the store
         * buffer) */
        __m512i lo = _mm512_setzero_si512(), hi = lo, x = lo, phdr = lo, seed = lo;
        for (unsigned j = 0; j < k; j++) {
            const uint8_t *p;
            size_t len;
            uint16_t sd;
            __m128i prod, xw;
            cell_span(page, ps, i0 + j, &p, &len, &sd);
            total += len;
            uint32_t at = (uint32_t)(p - page);
            cs_span_512_raw(page, at, at + (uint32_t)len, &prod, &xw);
            all = _mm_xor_si128(all, prod);
            __mmask8 m = (__mmask8)(1u << j);
            lo = _mm512_mask_broadcastq_epi64(lo, m, prod);
            hi = _mm512_mask_broadcastq_epi64(hi, m, _mm_unpackhi_epi64(prod, prod));
            x = _mm512_mask_broadcastq_epi64(x, m, _mm_xor_si128(xw, _mm_unpackhi_epi64(xw, xw)));
            unsigned ph = leaf ? head_parity(p, len, LEAF_CELL_HDR) : head_parity(p, len, INTERNAL_CELL_HDR);
            phdr = _mm512_mask_set1_epi64(phdr, m, (long long)ph);
            seed = _mm512_mask_set1_epi64(seed, m, (long long)sd);
            if (leaf && prev && leaf_keys_equal(prev, prevlen, p, len)) flags = 0;
            prev = p;
            prevlen = len;
        }
        store_codes_512(c->code + (size_t)i0 * w, codes_512(lo, hi, x, phdr, seed), k, w);
    }
    *bytes += total;
    *sum_all = cs_gf_reduce((uint64_t)_mm_cvtsi128_si64(all), (uint64_t)_mm_extract_epi64(all, 1));
    return flags;
}
#endif

static unsigned code_cells(kv_codes *c, const uint8_t *page, uint32_t ps, unsigned n, unsigned w, uint64_t *bytes,
                           uint64_t *sum_all) {
#if CS_HAVE_512
    if (cs_impl_fast() == CS_IMPL_AVX512) return code_cells_512(c, page, ps, n, w, bytes, sum_all);
#endif
    return code_cells_with(cs_span, c, page, ps, n, w, bytes, sum_all);
}

/* A code buffer in C for N codes of width W.  Every code is rewritten, so
 * a buffer that fits is kept and one that does not is replaced without
 * copying (realloc's copy of the old codes cost as much as a tenth of the
 * coding when frames cycle through pages of different sizes); one far too
 * large (an internal page's, now holding a leaf) is given back.  The size
 * held is kept in c->cap (asking malloc_usable_size was 7% of the
 * coding's time).  Returns N, or 0 when no memory was left. */
static unsigned code_buffer(kv_codes *c, unsigned n, unsigned w) {
    size_t need = (size_t)n * w, have = c->code ? (size_t)c->cap * 64 : 0;
    if (!c->code || have < need || have > need + need / 2 + 64) {
        free(c->code);
        size_t sz = (need + 64) & ~(size_t)63; /* n <= ps / 2: at most 1025 units */
        c->code = malloc(sz);
        c->cap = c->code ? (uint16_t)(sz / 64) : 0;
        if (!c->code) n = 0;
    }
    return n;
}

/* The page code of PAGE, and with WANT the page hash's sum of all its
 * bytes into *SUM from the same pass: the sum of the cells (CELLS, from
 * code_cells) and of the bytes before them, [8, upper), which is the whole
 * page's when the cells tile [upper, ps): the structure check's PS4 and
 * PS5 with ph_frag 0.  A slotted page with dead cells is summed again
 * whole; a page without slots is summed in two spans, its code's and the
 * rest. */
static uint32_t page_code_summed(const uint8_t *page, uint32_t ps, int want, uint64_t cells, uint64_t *sum,
                                 uint64_t *bytes) {
    if (slotted(ph_get_type(page))) {
        if (want) {
            uint32_t upper = ph_get_upper(page);
            upper = upper < PAGE_CHECKSUM_FROM ? PAGE_CHECKSUM_FROM : upper > ps ? ps : upper;
            *sum = ph_get_frag(page) ? cs_span(page, PAGE_CHECKSUM_FROM, ps, NULL)
                                     : cells ^ cs_span(page, PAGE_CHECKSUM_FROM, upper, NULL);
        }
        return page_code(page, ps, bytes);
    }
    uint16_t at = SLOTLESS_FROM, len = (uint16_t)slotless_len(ps);
    uint64_t s;
    uint8_t par;
    cs_spans(page, &at, &len, 1, &s, &par);
    *bytes += len;
    if (want)
        *sum =
            s ^ cs_span(page, PAGE_CHECKSUM_FROM, SLOTLESS_FROM, NULL) ^ cs_span(page, SLOTLESS_FROM + len, ps, NULL);
    return slotless_code(s, par);
}

/* kv_compute, and the page checksum from the same pass when BLOCK is not
 * NO_CHECKSUM. */
#define NO_CHECKSUM UINT64_MAX
static int64_t compute(kv_codes *c, const uint8_t *page, uint32_t ps, unsigned w, uint64_t block, uint64_t *checksum,
                       uint64_t *hashed) {
    int64_t before = c->code || c->n || c->page ? (int64_t)kv_memory(c->n, w) : 0;
    int want = block != NO_CHECKSUM;
    if (!w) {
        kv_free(c);
        if (want) *checksum = page_checksum(page, ps, block);
        return -before;
    }
    int type = ph_get_type(page);
    unsigned n = slotted(type) ? ph_get_nslots(page) : 0;
    if (n > ps / 2) n = 0; /* a page that was proven has fewer; be safe */
    c->n = (uint16_t)(n = code_buffer(c, n, w));
    /* The coding reads the cells in slot order, not in the order they lie
     * in: the page's lines are asked for all at once first. */
    for (uint32_t o = 0; o < ps; o += 64) __builtin_prefetch(page + o);
    uint64_t bytes = 0, cells = 0, sum = 0;
    unsigned flags = code_cells(c, page, ps, n, w, &bytes, &cells);
    uint32_t pc = page_code_summed(page, ps, want, cells, &sum, &bytes);
    if (hashed) *hashed += bytes;
    if (want) *checksum = cs_checksum_of(sum, page, ps, block);
    c->flags = (uint16_t)(flags & 0xF);
    c->page = page_code_with(pc, flags);
    return (int64_t)kv_memory(n, w) - before;
}

int64_t kv_compute(kv_codes *c, const uint8_t *page, uint32_t ps, unsigned w, uint64_t *hashed) {
    return compute(c, page, ps, w, NO_CHECKSUM, NULL, hashed);
}

int64_t kv_compute_checked(kv_codes *c, const uint8_t *page, uint32_t ps, unsigned w, uint32_t block,
                           uint64_t *checksum, uint64_t *hashed) {
    return compute(c, page, ps, w, block, checksum, hashed);
}

void kv_free(kv_codes *c) {
    free(c->code);
    c->code = NULL;
    c->cap = 0;
    c->n = 0;
    c->flags = 0;
    c->page = 0;
}

int kv_check_page(const kv_codes *c, const uint8_t *page, uint32_t ps, unsigned w, uint64_t *exp, uint64_t *found,
                  uint64_t *hashed) {
    KV_CHECKS_NOTHING;
    (void)w;
    uint32_t pc = page_code_with(page_code(page, ps, hashed), c->flags);
    unsigned n = slotted(ph_get_type(page)) ? ph_get_nslots(page) : 0;
    if (pc == c->page && n == c->n) return 0;
    *exp = pc == c->page ? c->n : c->page;
    *found = pc == c->page ? n : pc;
    return 1;
}

int kv_check_entry(const kv_codes *c, const uint8_t *page, uint32_t ps, unsigned w, unsigned slot, uint64_t *exp,
                   uint64_t *found, uint64_t *hashed) {
    KV_CHECKS_NOTHING;
    if (slot >= c->n) {
        *exp = c->n;
        *found = slot;
        return 1;
    }
    uint64_t want = get_code(c->code + (size_t)slot * w, w), got = entry_code(page, ps, slot, w, hashed);
    if (want == got) return 0;
    *exp = want;
    *found = got;
    return 1;
}

int kv_check_all(const kv_codes *c, const uint8_t *page, uint32_t ps, unsigned w, int32_t *entry, uint64_t *exp,
                 uint64_t *found, uint64_t *hashed) {
    KV_CHECKS_NOTHING;
    *entry = -1;
#ifdef ENG_BROKEN_KV_CHECK_ALL_SKIPS_PAGE_CODE
    /* planted bug (tests/mutants.txt): the whole-page check (KV3, and KV4
     * before write-back) verifies every entry but not the page code, so a
     * flipped header bit in a dirty frame is written under a fresh
     * checksum. */
#else
    if (kv_check_page(c, page, ps, w, exp, found, hashed)) return 1;
#endif
    for (unsigned i = 0; i < c->n; i++)
        if (kv_check_entry(c, page, ps, w, i, exp, found, hashed)) {
            *entry = (int32_t)i;
            return 1;
        }
    if (ph_get_type(page) == PAGE_LEAF) {
        for (unsigned i = 0; i < LEAF_HINT_BYTES(ps) * 2u; i++) {
            unsigned h = page_hint(page, i);
            if (i < c->n ? !hint_valid(h) : h != 0) {
                *entry = i < c->n ? (int32_t)i : -1;
                *exp = 0;
                *found = h;
                return 1;
            }
        }
    }
    return 0;
}
