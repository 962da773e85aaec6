/*
 * cacheflip.c -- bitflip_cache with flip patterns (--bitflip_cache_patterns,
 * crashtest.py protection): flips drawn on purpose against the layout of
 * the per-KV codes (engine/kvprot.h), each one checked right away and
 * undone, so every flip is one trial of the codes with a known outcome.
 *
 * One firing of bitflip_cache draws a pattern and a region:
 *
 *   pattern       bits flipped                           parts (kvprot.h)
 *   single        one bit of the region                  one, odd
 *   double_part   two bits of one part                   one, even
 *   double_parts  one bit of the region, one of another  two, odd each
 *                 part of the same entry (the header:
 *                 one of the entry's slot or cell)
 *   burst         2 to 8 adjacent bits within one part   one, odd or even
 *   byte          all 8 bits of one byte of the region   one, even
 *
 *   region        bytes (leaf: L, internal: I)           part
 *   key           L cell's key                           key and value
 *   value         L cell's value (or overflow pointer)   key and value
 *   version       L cell's 23-byte header (lengths,      cell header
 *                 flags, xmin, xmax)
 *   slot          the entry's 2-byte slot                slot offset
 *   page_header   [16, 40): what the page code covers    page code
 *   separator     I cell: header (klen, child) or key    cell header or key
 *
 * The frame's other bytes are left alone: [0, 16) (checksum and LSN,
 * stamped at every write-back) and a leaf's hint nibbles are outside the
 * codes by design (kvprot.h).  Under the frame's exclusive latch
 * (eng_debug_frame_bytes) the bits flip, the engine's whole-page check
 * (eng_debug_frame_check, K4's) runs, which reports a mismatch through
 * the corruption callback, and the bits flip back: no thread ever sees
 * the damaged frame, so one trial cannot hide or reveal another, and an
 * escaped flip leaves nothing behind.  The ledger line is written after
 * the trial, with its outcome (the one exception to F1: the damage never
 * outlives the latch; a kill in between loses the trial, and its report,
 * with the process).  Ledger fields beyond bitflip_cache's
 * (docs/formats.md): pattern, region, nbits, bits (the flipped bits'
 * indices in the page, comma-separated), parity ("odd": some part got an
 * odd count, always caught; every part even: "page", the page code may
 * collide; "entry", the entry's hash bits may; "span", a length changed
 * so the rest's parity is a coin toss too; "slot", the slot points
 * elsewhere so both cell parities are), check ("detected", "escaped",
 * or "none" when the frame carries no codes).
 */
#include <stdio.h>
#include <string.h>

#include "cacheflip.h"

enum { PAT_SINGLE, PAT_DOUBLE_PART, PAT_DOUBLE_PARTS, PAT_BURST, PAT_BYTE, PAT_COUNT };
static const char *const pat_names[PAT_COUNT] = {"single", "double_part", "double_parts", "burst", "byte"};
enum { RG_KEY, RG_VALUE, RG_VERSION, RG_SLOT, RG_HEADER, RG_SEPARATOR, RG_COUNT };
static const char *const rg_names[RG_COUNT] = {"key", "value", "version", "slot", "page_header", "separator"};

static unsigned get16(const uint8_t *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }
static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* One part: bytes [a, b). */
typedef struct span {
    size_t a, b;
} span;

/* The parts of entry SLOT of a slotted page: its slot, its cell's header,
 * its cell's rest (key and value; an internal cell's key).  0 when the
 * page's layout does not hold together (a page the check would reject
 * anyway is no trial of the codes). */
static int entry_parts(const uint8_t *p, size_t ps, unsigned slot, span *sl, span *hd, span *rest) {
    int leaf = p[PH_TYPE_OFF] == PAGE_LEAF;
    size_t base = PAGE_HDR + (leaf ? LEAF_HINT_BYTES(ps) : 0), so = base + 2u * slot;
    if (so + 2 > ps) return 0;
    size_t o = get16(p + so), hdr = leaf ? LEAF_CELL_HDR : INTERNAL_CELL_HDR;
    if (o < base || o + hdr > ps) return 0;
    size_t klen = get16(p + o), sz = hdr + klen;
    if (leaf) sz += (p[o + 2] & CELL_OVERFLOW) ? 4u : get32(p + o + 3);
    if (sz > ps - o || klen == 0) return 0;
    *sl = (span){so, so + 2};
    *hd = (span){o, o + hdr};
    *rest = (span){o + hdr, o + sz};
    return 1;
}

static uint64_t draw(flt_ctx *f, flt_thr *t, uint64_t n) { return flt_below(f, t, FLT_BITFLIP_CACHE, n ? n : 1); }

/* A bit of [s.a, s.b) other than those in BITS[0..N). */
static uint64_t other_bit(flt_ctx *f, flt_thr *t, span s, const uint64_t *bits, int n) {
    uint64_t nb = 8 * (s.b - s.a);
    for (;;) {
        uint64_t b = 8 * s.a + draw(f, t, nb);
        int dup = 0;
        for (int i = 0; i < n; i++) dup |= bits[i] == b;
        if (!dup || nb <= (uint64_t)n) return b;
    }
}

void flt_cache_pattern(flt_ctx *f, flt_thr *t, eng_db *db) {
    uint64_t nblocks = eng_debug_nblocks(db);
    if (!nblocks) return;
    int pat = (int)draw(f, t, PAT_COUNT), rg = (int)draw(f, t, RG_COUNT);
    /* A resident slotted page with entries, of the region's type when one
     * of sixteen draws finds it (internal pages are few). */
    uint64_t block = 0;
    size_t ps = 0;
    uint8_t *p = NULL;
    for (int k = 0; k < 24 && !p; k++) {
        /* One frame latched at a time (the caller of eng_debug_frame_bytes
         * holds no other latch): a misfit is released before the next. */
        uint64_t b = draw(f, t, nblocks);
        size_t s = 0;
        uint8_t *q = eng_debug_frame_bytes(db, b, &s);
        if (!q) continue;
        int type = q[PH_TYPE_OFF];
        int fits = (type == PAGE_LEAF || type == PAGE_INTERNAL) && get16(q + PH_NSLOTS_OFF) > 0;
        int want = rg == RG_SEPARATOR ? type == PAGE_INTERNAL : rg <= RG_VERSION ? type == PAGE_LEAF : 1;
        if (fits && (want || k >= 16)) {
            p = q, ps = s, block = b;
            break;
        }
        eng_debug_frame_release(db, b);
    }
    if (!p) return; /* none resident: nothing to flip, no line */
    /* A leaf a reader loaded and nobody used since carries no codes yet
     * (the pool proves it by its page checksum until its next use): code
     * it now, so the trial measures the codes, not the checksum.  Random
     * flips (inject.c) leave such frames as they are, so the checksum's
     * watch over them is exercised there. */
    if (eng_debug_frame_code(db, block) != 0) {
        eng_debug_frame_release(db, block);
        return;
    }
    int leaf = p[PH_TYPE_OFF] == PAGE_LEAF;
    if (!leaf && rg <= RG_VERSION) rg = RG_SEPARATOR;
    if (leaf && rg == RG_SEPARATOR) rg = RG_KEY;
    unsigned n = get16(p + PH_NSLOTS_OFF), slot = (unsigned)draw(f, t, n);
    span sl, hd, rest, hdrspan = {PH_BLOCK_OFF, PAGE_HDR};
    if (!entry_parts(p, ps, slot, &sl, &hd, &rest)) {
        eng_debug_frame_release(db, block);
        return;
    }
    size_t klen = rest.b - rest.a; /* key bytes within rest */
    if (leaf) klen = get16(p + hd.a);
    /* The region's bytes, and the part they lie in. */
    span reg, part;
    switch (rg) {
    case RG_KEY: reg = (span){rest.a, rest.a + klen}, part = rest; break;
    case RG_VALUE:
        reg = rest.a + klen < rest.b ? (span){rest.a + klen, rest.b} : (span){rest.a, rest.a + klen};
        part = rest;
        break;
    case RG_VERSION: reg = part = hd; break;
    case RG_SLOT: reg = part = sl; break;
    case RG_HEADER: reg = part = hdrspan; break;
    default: reg = part = draw(f, t, 2) ? rest : hd; break; /* separator: its key or its header */
    }
    uint64_t bits[8] = {0};
    int nb = 0;
    switch (pat) {
    case PAT_SINGLE: bits[nb++] = other_bit(f, t, reg, bits, 0); break;
    case PAT_DOUBLE_PART:
        bits[nb++] = other_bit(f, t, reg, bits, 0);
        bits[nb] = other_bit(f, t, reg, bits, nb), nb++;
        break;
    case PAT_DOUBLE_PARTS: {
        bits[nb++] = other_bit(f, t, reg, bits, 0);
        /* Another part of the same entry (for the header: of the entry). */
        span others[3];
        int no = 0;
        if (part.a != sl.a) others[no++] = sl;
        if (part.a != hd.a) others[no++] = hd;
        if (part.a != rest.a) others[no++] = rest;
        bits[nb] = other_bit(f, t, others[draw(f, t, (uint64_t)no)], bits, nb), nb++;
        break;
    }
    case PAT_BURST: {
        uint64_t k = 2 + draw(f, t, 7), lo = 8 * part.a, hi = 8 * part.b;
        if (hi - lo < k) k = hi - lo;
        uint64_t start = 8 * reg.a + draw(f, t, 8 * (reg.b - reg.a));
        if (start + k > hi) start = hi - k;
        for (uint64_t i = 0; i < k; i++) bits[nb++] = start + i;
        break;
    }
    default: { /* byte */
        uint64_t b = reg.a + draw(f, t, reg.b - reg.a);
        for (int i = 0; i < 8; i++) bits[nb++] = 8 * b + (uint64_t)i;
        break;
    }
    }
    /* Parity per part: odd anywhere is always caught. */
    int odd = 0;
    span parts[4] = {sl, hd, rest, hdrspan};
    for (int k = 0; k < 4; k++) {
        int c = 0;
        for (int i = 0; i < nb; i++) c += bits[i] / 8 >= parts[k].a && bits[i] / 8 < parts[k].b;
        odd |= c & 1;
    }
    /* Even everywhere: which parities still vouch.  Flips in a slot make
     * the code hash another cell, whose header and rest parities are then
     * coin tosses; flips in a length (klen, vlen, the overflow flag) move
     * where the rest ends, whose parity is then a coin toss. */
    const char *even = part.a == hdrspan.a ? "page" : "entry";
    if (part.a == sl.a) even = "slot";
    if (part.a == hd.a) {
        int ovfl = leaf && (p[hd.a + 2] & CELL_OVERFLOW);
        for (int i = 0; i < nb; i++) {
            size_t o = bits[i] / 8 - hd.a;
            if (o < 2 || (leaf && ((o == 2 && bits[i] % 8 == 0) || (o >= 3 && o < 7 && !ovfl)))) even = "span";
        }
    }
    char list[8 * 8];
    size_t ll = 0;
    list[0] = 0;
    for (int i = 0; i < nb; i++)
        ll += (size_t)snprintf(list + ll, sizeof list - ll, "%s%llu", i ? "," : "", (unsigned long long)bits[i]);
    for (int i = 0; i < nb; i++) p[bits[i] / 8] ^= (uint8_t)(1u << (bits[i] % 8));
    int rc = eng_debug_frame_check(db, block);
    for (int i = 0; i < nb; i++) p[bits[i] / 8] ^= (uint8_t)(1u << (bits[i] % 8));
    eng_debug_frame_release(db, block);

    flt_event e = flt_event_for(f, t, FLT_BITFLIP_CACHE, "tick/cache");
    e.file = "data";
    e.block = (int64_t)block;
    e.offset = (int64_t)(block * ps);
    e.len = (int64_t)ps;
    e.bit = (int64_t)bits[0];
    e.mask = 1u << (bits[0] % 8);
    e.part_offset = (int64_t)part.a;
    e.part_len = (int64_t)(part.b - part.a);
    e.part_code = part.a == hdrspan.a ? "page" : "entry";
    e.pattern = pat_names[pat];
    e.region = rg_names[rg];
    e.nbits = nb;
    e.bits = list;
    e.parity = odd ? "odd" : even;
    e.check = rc < 0 ? "none" : rc ? "detected" : "escaped";
    flt_record(f, FLT_BITFLIP_CACHE, &e);
}
