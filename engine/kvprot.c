/*
 * kvprot.c -- per key-value codes of cached pages (contract in kvprot.h).
 *
 * Speed: the codes are checked on every lookup, so the hashes are small
 * and inlined (XXH_INLINE_ALL: a call per 20-byte separator would cost as
 * much as the hash); only whole-page codes of pages without slots use the
 * dispatching entry point.
 */
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

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

/* The hash part of a code: XXH3 over chunks of at most 240 bytes, which
 * stay on its short-input paths (one long call pays the long path's setup,
 * several times the cost of a 255-byte cell's hash), the seed mixed in
 * after (XXH3 with a seed derives a secret per call on long inputs). */
static inline uint64_t kv_hash(const uint8_t *p, size_t len, uint64_t seed) {
    size_t n = len < 240 ? len : 240;
    uint64_t h = XXH3_64bits(p, n);
    for (size_t off = n; off < len; off += n) {
        n = len - off < 240 ? len - off : 240;
        h = XXH3_64bits_withSeed(p + off, n, h);
    }
    return h ^ seed * 0x9E3779B97F4A7C15ull;
}

/* murmur3's 64-bit finalizer: a bijection that spreads every input bit. */
static inline uint64_t fmix64(uint64_t k) {
    k ^= k >> 33;
    k *= 0xFF51AFD7ED558CCDull;
    k ^= k >> 33;
    k *= 0xC4CEB9FE1A85EC53ull;
    k ^= k >> 33;
    return k;
}

#if CRC32C_HW
/* The codes' hash where the CPU has it: CRC32C in hardware (SSE 4.2, the
 * step of crc32c.h), three streams over interleaved words so the
 * instructions' latency overlaps; several times cheaper than XXH3 on a
 * 255-byte cell, which matters most when pages enter the pool (every
 * entry of a page is coded then).  The rest after the 24-byte rounds (up
 * to 23 bytes) goes whole words to a and b and its last bytes as one
 * zero-padded word to c, so no stream runs more than one step past the
 * others (a byte at a time on one stream made that stream's chain of
 * dependent steps the longest: 17 steps for a 255-byte cell, now 11).  A
 * change confined to one stream always changes its CRC for errors within
 * 32 bits (and for two flipped bits anywhere in a cell: CRC32C's period is
 * far longer than a page); anything else cancels with odds 2^-32.
 *
 * WIDE (w = 8, the caller's constant) keeps all 96 bits of the three
 * streams: a 64-bit bijection of a and b, another of c and the length,
 * xored.  A flip pattern changes (a, b, c) by a fixed non-zero amount, and
 * the two bijections turn that into a change of the 64 bits that depends
 * on the data; it cancels with odds about 2^-64, so the 61 kept bits give
 * 2^-61 as XXH3's did (w <= 4 fold the streams into 32 bits: 2^-32 is
 * below the 2^-29 they keep). */
CRC32C_HW_TARGET static inline __attribute__((always_inline)) uint64_t
crc_core(const uint8_t *p, size_t len, uint64_t seed, unsigned *par, const int wide) {
    uint64_t a = (uint32_t)seed ^ 0x9E3779B9u, b = 0x85EBCA6Bu, c = 0xC2B2AE35u, x = 0;
    size_t i = 0;
    for (; i + 24 <= len; i += 24) {
        uint64_t w0, w1, w2;
        memcpy(&w0, p + i, 8);
        memcpy(&w1, p + i + 8, 8);
        memcpy(&w2, p + i + 16, 8);
        a = crc32c_step64(a, w0);
        b = crc32c_step64(b, w1);
        c = crc32c_step64(c, w2);
        x ^= w0 ^ w1 ^ w2;
    }
    if (i + 8 <= len) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        a = crc32c_step64(a, w);
        x ^= w;
        i += 8;
        if (i + 8 <= len) {
            memcpy(&w, p + i, 8);
            b = crc32c_step64(b, w);
            x ^= w;
            i += 8;
        }
    }
    if (i < len) {
        /* The last r < 8 bytes, zero-padded: from the word that ends at
         * the cell's end (shifted down) when the cell has 8 bytes. */
        size_t r = len - i;
        uint64_t w = 0;
        if (len >= 8) {
            memcpy(&w, p + len - 8, 8);
            w >>= 8 * (8 - r);
        } else {
            for (size_t k = 0; k < r; k++) w |= (uint64_t)p[i + k] << (8 * k);
        }
        c = crc32c_step64(c, w);
        x ^= w;
    }
    *par = (unsigned)__builtin_parityll(x); /* the bytes' parity, from the same pass */
    if (wide)
        return fmix64((uint32_t)a | (uint64_t)(uint32_t)b << 32) ^
               fmix64((uint32_t)c | (uint64_t)(len ^ 0x27D4EB2Fu) << 32);
    uint32_t h = (uint32_t)a ^ (uint32_t)((b << 11) | (b >> 21)) ^ (uint32_t)((c << 22) | (c >> 10)) ^ (uint32_t)len;
    /* A CRC is linear: a flip pattern at a given place changes it by the
     * same bits whatever the data, so a truncated CRC lets some patterns
     * through every time (crashtest.py protection measured a whole byte
     * flipped at two places of 16-byte keys escaping w = 1 in over half
     * the trials, 7% of all key byte flips against 1 in 32).  murmur3's
     * finalizer (a bijection) makes the kept bits of the change depend on
     * the data: 2^-(8w-3) per pattern, as kvprot.h claims. */
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return (uint64_t)h << 32 | h;
}
CRC32C_HW_TARGET static uint64_t crc_hash(const uint8_t *p, size_t len, uint64_t seed, unsigned *par, int wide) {
    return wide ? crc_core(p, len, seed, par, 1) : crc_core(p, len, seed, par, 0);
}
static int have_crc_hw = -1; /* crc32c_have_hw(), kept here: asked once per code */
/* Every width hashes with the CRC where the CPU has it (w = 8 keeps the
 * three streams' 96 bits, crc_core). */
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
static uint64_t crc_hash(const uint8_t *p, size_t len, uint64_t seed, unsigned *par, int wide) {
    (void)wide;
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
    if (len < 24 || hdr > 24) return parity(p, hdr);
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
static inline uint64_t finish_code(uint64_t h, unsigned phdr, unsigned prest, uint64_t seed, unsigned w) {
#ifdef ENG_BROKEN_KV_NO_PARITY
    /* planted bug (tests/mutants.txt): the three parity bits are hash
     * bits, a truncated hash like RocksDB's: a single flip escapes with
     * odds 2^-8w. */
    return (void)phdr, (void)prest, (void)seed, truncate_code(h, w);
#endif
    uint64_t par = (uint64_t)phdr | (uint64_t)__builtin_parityll(seed) << 1 | (uint64_t)prest << 2;
    return truncate_code((h & ~7ull) | par, w);
}

static inline __attribute__((always_inline)) uint64_t entry_code_of(const uint8_t *p, size_t len, size_t hdr,
                                                                    uint64_t seed, unsigned w) {
    if (hdr > len) hdr = len;
    unsigned phdr = head_parity(p, len, hdr), prest, pall;
    uint64_t h;
    if (use_crc()) {
        h = crc_hash(p, len, seed, &pall, w > 4);
        prest = pall ^ phdr;
    } else {
        h = kv_hash(p, len, seed);
        prest = parity(p + hdr, len - hdr);
    }
    return finish_code(h, phdr, prest, seed, w);
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

/* Header fields that steer reads; for pages without slots, everything. */
/* A get checks one per level, so a slotted page's 24 header bytes go
 * through the CRC (three steps) where the hardware has it; the parity
 * bit is the same either way. */
static uint32_t page_code(const uint8_t *page, uint32_t ps, uint64_t *hashed) {
#ifdef ENG_BROKEN_KV_SLOTLESS_PAGE_CODE_SHORT
    /* planted bug (tests/mutants.txt): the length of a page without slots
     * subtracts the header size instead of the code's start offset, so the
     * last 24 bytes of overflow and commit-log pages are covered by no code:
     * a flip there in the cache is returned or written back unseen. */
    size_t len = slotted(ph_get_type(page)) ? PAGE_HDR - 16 : ps - PAGE_HDR;
#else
    size_t len = slotted(ph_get_type(page)) ? PAGE_HDR - 16 : ps - 16;
#endif
    if (hashed) *hashed += len;
    if (len <= 64 && use_crc()) {
        unsigned par;
        uint64_t h = crc_hash(page + 16, len, 0x6b76, &par, 0);
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

uint64_t kv_leaf_entry_code(const uint8_t *p, size_t len, uint64_t seed, unsigned w) {
    return entry_code_of(p, len, LEAF_CELL_HDR, seed, w);
}

static uint64_t entry_code(const uint8_t *page, uint32_t ps, unsigned slot, unsigned w, uint64_t *hashed) {
    const uint8_t *p;
    size_t len;
    uint16_t off;
    cell_span(page, ps, slot, &p, &len, &off);
    if (hashed) *hashed += len;
    /* A constant header size per branch, so head_parity folds. */
    if (ph_get_type(page) == PAGE_LEAF) return entry_code_of(p, len, LEAF_CELL_HDR, off, w);
    return entry_code_of(p, len, INTERNAL_CELL_HDR, off, w);
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

#if CRC32C_HW
/* kv_compute's loop over a leaf's cells when the codes are CRCs, compiled
 * for the CRC instruction so the hash is inlined and one cell's chains
 * overlap the next cell's start (coding a page that enters the pool is
 * what small caches pay for per-KV protection). */
CRC32C_HW_TARGET static unsigned code_leaf_crc(kv_codes *c, const uint8_t *page, uint32_t ps, unsigned n, unsigned w,
                                               uint64_t *bytes) {
    unsigned flags = KV_UNIQUE_KEYS;
    const uint8_t *prev = NULL;
    size_t prevlen = 0;
    for (unsigned i = 0; i < n; i++) {
        const uint8_t *p;
        size_t len;
        uint16_t off;
        cell_span(page, ps, i, &p, &len, &off);
        *bytes += len;
        size_t hdr = len < LEAF_CELL_HDR ? len : LEAF_CELL_HDR;
        unsigned phdr = head_parity(p, len, hdr), pall;
        uint64_t h = w > 4 ? crc_core(p, len, off, &pall, 1) : crc_core(p, len, off, &pall, 0);
        put_code(c->code + (size_t)i * w, finish_code(h, phdr, pall ^ phdr, off, w), w);
        if (prev && leaf_keys_equal(prev, prevlen, p, len)) flags = 0;
        prev = p;
        prevlen = len;
    }
    return flags;
}
#endif

int64_t kv_compute(kv_codes *c, const uint8_t *page, uint32_t ps, unsigned w, uint64_t *hashed) {
    int64_t before = c->code || c->n || c->page ? (int64_t)kv_memory(c->n, w) : 0;
    if (!w) {
        kv_free(c);
        return -before;
    }
    unsigned n = slotted(ph_get_type(page)) ? ph_get_nslots(page) : 0;
    if (n > ps / 2) n = 0; /* a page that was proven has fewer; be safe */
    /* Every code is rewritten, so a buffer that fits is kept and one that
     * does not is replaced without copying (realloc's copy of the old
     * codes cost as much as a tenth of the coding when frames cycle
     * through pages of different sizes); one far too large (an internal
     * page's, now holding a leaf) is given back.  The size held is kept
     * in c->cap (asking malloc_usable_size was 7% of the coding's time). */
    size_t need = (size_t)n * w, have = c->code ? (size_t)c->cap * 64 : 0;
    if (!c->code || have < need || have > need + need / 2 + 64) {
        free(c->code);
        size_t sz = (need + 64) & ~(size_t)63; /* n <= ps / 2: at most 1025 units */
        c->code = malloc(sz);
        c->cap = c->code ? (uint16_t)(sz / 64) : 0;
        if (!c->code) n = 0;
    }
    c->n = (uint16_t)n;
    int leaf = ph_get_type(page) == PAGE_LEAF;
    unsigned flags = leaf ? KV_UNIQUE_KEYS : 0;
    const uint8_t *prev = NULL;
    size_t prevlen = 0;
    unsigned todo = n;
#if CRC32C_HW
    if (leaf && use_crc()) {
        uint64_t bytes = 0;
        flags = code_leaf_crc(c, page, ps, n, w, &bytes);
        if (hashed) *hashed += bytes;
        todo = 0; /* done */
    }
#endif
    for (unsigned i = 0; i < todo; i++) {
        const uint8_t *p;
        size_t len;
        uint16_t off;
        cell_span(page, ps, i, &p, &len, &off);
        if (hashed) *hashed += len;
        uint64_t code =
            leaf ? entry_code_of(p, len, LEAF_CELL_HDR, off, w) : entry_code_of(p, len, INTERNAL_CELL_HDR, off, w);
        put_code(c->code + (size_t)i * w, code, w);
        if (leaf && prev && leaf_keys_equal(prev, prevlen, p, len)) flags = 0;
        prev = p;
        prevlen = len;
    }
    c->flags = (uint16_t)(flags & 0xF);
    c->page = page_code_with(page_code(page, ps, hashed), flags);
    return (int64_t)kv_memory(n, w) - before;
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
