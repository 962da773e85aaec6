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

#if CRC32C_HW
/* For codes of up to 4 bytes: CRC32C in hardware (SSE 4.2, the step of
 * crc32c.h), three streams over interleaved words so the instructions'
 * latency overlaps, combined by rotation; several times cheaper than XXH3
 * on a 255-byte cell, which matters most when pages enter the pool (every
 * entry of a page is coded then).  A change confined to one stream always
 * changes its CRC for errors within 32 bits; anything else cancels with
 * odds 2^-32. */
CRC32C_HW_TARGET static uint64_t crc_hash(const uint8_t *p, size_t len, uint64_t seed, unsigned *par) {
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
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        a = crc32c_step64(a, w);
        x ^= w;
    }
    for (; i < len; i++) {
        b = crc32c_step8((uint32_t)b, p[i]);
        x ^= p[i];
    }
    *par = (unsigned)__builtin_parityll(x); /* the bytes' parity, from the same pass */
    uint32_t h = (uint32_t)a ^ (uint32_t)((b << 11) | (b >> 21)) ^ (uint32_t)((c << 22) | (c >> 10)) ^ (uint32_t)len;
    return (uint64_t)h << 32 | h;
}
static inline int use_crc(unsigned w) { return w <= 4 && crc32c_have_hw(); }
#else
static inline int use_crc(unsigned w) {
    (void)w;
    return 0;
}
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
static inline uint64_t entry_code_of(const uint8_t *p, size_t len, size_t hdr, uint64_t seed, unsigned w) {
    if (hdr > len) hdr = len;
    unsigned phdr = parity(p, hdr), prest, pall;
    uint64_t h;
    if (use_crc(w)) {
        h = crc_hash(p, len, seed, &pall);
        prest = pall ^ phdr;
    } else {
        h = kv_hash(p, len, seed);
        prest = parity(p + hdr, len - hdr);
    }
    uint64_t par = (uint64_t)phdr | (uint64_t)__builtin_parityll(seed) << 1 | (uint64_t)prest << 2;
    return truncate_code((h & ~7ull) | par, w);
}

static inline void put_code(uint8_t *dst, uint64_t v, unsigned w) { memcpy(dst, &v, w); /* little-endian */ }
static inline uint64_t get_code(const uint8_t *src, unsigned w) {
    uint64_t v = 0;
    memcpy(&v, src, w);
    return v;
}

static inline int slotted(int type) { return type == PAGE_LEAF || type == PAGE_INTERNAL; }

/* Header fields that steer reads; for pages without slots, everything. */
static uint32_t page_code(const uint8_t *page, uint32_t ps) {
    size_t len = slotted(ph_get_type(page)) ? PAGE_HDR - 16 : ps - 16;
    return (uint32_t)kv_code(page + 16, len, 0x6b76, 4);
}

/* Cell at SLOT: its bytes, clamped to the page (a damaged length hashes
 * other bytes, which is a mismatch, never an overrun). */
static void cell_span(const uint8_t *page, uint32_t ps, unsigned slot, const uint8_t **p, size_t *len, uint16_t *off) {
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

static uint64_t entry_code(const uint8_t *page, uint32_t ps, unsigned slot, unsigned w) {
    const uint8_t *p;
    size_t len;
    uint16_t off;
    cell_span(page, ps, slot, &p, &len, &off);
    size_t hdr = ph_get_type(page) == PAGE_LEAF ? LEAF_CELL_HDR : INTERNAL_CELL_HDR;
    return entry_code_of(p, len, hdr, off, w);
}

int64_t kv_compute(kv_codes *c, const uint8_t *page, uint32_t ps, unsigned w) {
    int64_t before = c->code || c->n || c->page ? (int64_t)kv_memory(c->n, w) : 0;
    if (!w) {
        kv_free(c);
        return -before;
    }
    unsigned n = slotted(ph_get_type(page)) ? ph_get_nslots(page) : 0;
    if (n > ps / 2) n = 0; /* a page that was proven has fewer; be safe */
    if (n != c->n || (!c->code && n != 0)) {
        uint8_t *p = realloc(c->code, n ? (size_t)n * w : 1);
        if (!p) {
            n = 0;
        } else
            c->code = p;
    }
    c->n = n;
    c->page = page_code(page, ps);
    for (unsigned i = 0; i < n; i++) put_code(c->code + (size_t)i * w, entry_code(page, ps, i, w), w);
    return (int64_t)kv_memory(n, w) - before;
}

void kv_free(kv_codes *c) {
    free(c->code);
    c->code = NULL;
    c->n = 0;
    c->page = 0;
}

int kv_check_page(const kv_codes *c, const uint8_t *page, uint32_t ps, unsigned w, uint64_t *exp, uint64_t *found) {
    (void)w;
    uint32_t pc = page_code(page, ps);
    unsigned n = slotted(ph_get_type(page)) ? ph_get_nslots(page) : 0;
    if (pc == c->page && n == c->n) return 0;
    *exp = pc == c->page ? c->n : c->page;
    *found = pc == c->page ? n : pc;
    return 1;
}

int kv_check_entry(const kv_codes *c, const uint8_t *page, uint32_t ps, unsigned w, unsigned slot, uint64_t *exp,
                   uint64_t *found) {
    if (slot >= c->n) {
        *exp = c->n;
        *found = slot;
        return 1;
    }
    uint64_t want = get_code(c->code + (size_t)slot * w, w), got = entry_code(page, ps, slot, w);
    if (want == got) return 0;
    *exp = want;
    *found = got;
    return 1;
}

int kv_check_all(const kv_codes *c, const uint8_t *page, uint32_t ps, unsigned w, int32_t *entry, uint64_t *exp,
                 uint64_t *found) {
    *entry = -1;
#ifdef ENG_BROKEN_KV_CHECK_ALL_SKIPS_PAGE_CODE
    /* planted bug (tests/mutants.txt): the whole-page check (K3, and K4
     * before write-back) verifies every entry but not the page code, so a
     * flipped header bit in a dirty frame is written under a fresh
     * checksum. */
#else
    if (kv_check_page(c, page, ps, w, exp, found)) return 1;
#endif
    for (unsigned i = 0; i < c->n; i++)
        if (kv_check_entry(c, page, ps, w, i, exp, found)) {
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
