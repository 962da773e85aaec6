/*
 * cacheflip.c -- bitflip_cache: a flip drawn at a tick into a resident
 * frame (flt_tick_cache; pinned, flt_flip_cache_at), and with flip patterns (--bitflip_cache_patterns,
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
 * (eng_debug_frame_check, KV4's) runs, which reports a mismatch through
 * the corruption callback, and the bits flip back: no thread ever sees
 * the damaged frame, so one trial cannot hide or reveal another, and an
 * escaped flip leaves nothing behind.  The ledger line is written after
 * the trial, with its outcome (the one exception to FL1: the damage never
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
#include <stdlib.h>
#include <string.h>

#include "cacheflip.h"
#include "damage_int.h"
#include "door.h"

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

/* One trial: the frame, the entry drawn in it and the bits to flip. */
typedef struct trial {
    int pat, rg, leaf;
    uint64_t block;
    size_t ps;
    uint8_t *p;             /* the frame, latched exclusively */
    span sl, hd, rest, hdr; /* the entry's parts, and the page header's */
    span reg, part;         /* the region's bytes, and the part they lie in */
    uint64_t bits[8];
    int nb;
} trial;

/* Latches a resident slotted page with entries, of the region's type when
 * one of sixteen draws finds it (internal pages are few); 0 when none was
 * found. */
static int latch_page(flt_ctx *f, flt_thr *t, eng_db *db, uint64_t nblocks, trial *tr) {
    for (int k = 0; k < 24; k++) {
        /* One frame latched at a time (the caller of eng_debug_frame_bytes
         * holds no other latch): a misfit is released before the next. */
        uint64_t b = draw(f, t, nblocks);
        size_t s = 0;
        uint8_t *q = eng_debug_frame_bytes(db, b, &s);
        if (!q) continue;
        int type = q[PH_TYPE_OFF], rg = tr->rg;
        int fits = (type == PAGE_LEAF || type == PAGE_INTERNAL) && get16(q + PH_NSLOTS_OFF) > 0;
        int want = rg == RG_SEPARATOR ? type == PAGE_INTERNAL : rg <= RG_VERSION ? type == PAGE_LEAF : 1;
        if (fits && (want || k >= 16)) {
            tr->p = q, tr->ps = s, tr->block = b;
            return 1;
        }
        eng_debug_frame_release(db, b);
    }
    return 0;
}

static void place_region(flt_ctx *f, flt_thr *t, trial *tr) {
    span rest = tr->rest;
    size_t klen = rest.b - rest.a; /* key bytes within rest */
    if (tr->leaf) klen = get16(tr->p + tr->hd.a);
    switch (tr->rg) {
    case RG_KEY: tr->reg = (span){rest.a, rest.a + klen}, tr->part = rest; break;
    case RG_VALUE:
        tr->reg = rest.a + klen < rest.b ? (span){rest.a + klen, rest.b} : (span){rest.a, rest.a + klen};
        tr->part = rest;
        break;
    case RG_VERSION: tr->reg = tr->part = tr->hd; break;
    case RG_SLOT: tr->reg = tr->part = tr->sl; break;
    case RG_HEADER: tr->reg = tr->part = tr->hdr; break;
    default: tr->reg = tr->part = draw(f, t, 2) ? rest : tr->hd; break; /* separator: its key or its header */
    }
}

/* The bits the pattern flips, in the region (and for double_parts in
 * another part of the entry). */
static void draw_bits(flt_ctx *f, flt_thr *t, trial *tr) {
    uint64_t *bits = tr->bits;
    span reg = tr->reg, part = tr->part;
    int nb = 0;
    switch (tr->pat) {
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
        if (part.a != tr->sl.a) others[no++] = tr->sl;
        if (part.a != tr->hd.a) others[no++] = tr->hd;
        if (part.a != tr->rest.a) others[no++] = tr->rest;
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
    tr->nb = nb;
}

/* The ledger's parity: "odd" when some part got an odd count of flips
 * (always caught), else which parities still vouch. */
static const char *parity_of(const trial *tr) {
    const uint64_t *bits = tr->bits;
    int nb = tr->nb, odd = 0;
    span parts[4] = {tr->sl, tr->hd, tr->rest, tr->hdr};
    for (int k = 0; k < 4; k++) {
        int c = 0;
        for (int i = 0; i < nb; i++) c += bits[i] / 8 >= parts[k].a && bits[i] / 8 < parts[k].b;
        odd |= c & 1;
    }
    if (odd) return "odd";
    /* Flips in a slot make the code hash another cell, whose header and
     * rest parities are then coin tosses; flips in a length (klen, vlen,
     * the overflow flag) move where the rest ends, whose parity is then a
     * coin toss. */
    const char *even = tr->part.a == tr->hdr.a ? "page" : "entry";
    if (tr->part.a == tr->sl.a) even = "slot";
    if (tr->part.a == tr->hd.a) {
        size_t ha = tr->hd.a;
        int leaf = tr->leaf, ovfl = leaf && (tr->p[ha + 2] & CELL_OVERFLOW);
        for (int i = 0; i < nb; i++) {
            size_t o = bits[i] / 8 - ha;
            if (o < 2 || (leaf && ((o == 2 && bits[i] % 8 == 0) || (o >= 3 && o < 7 && !ovfl)))) even = "span";
        }
    }
    return even;
}

/* Flips the bits, runs the engine's whole-page check, flips them back and
 * releases the frame; returns the check's result. */
static int check_flipped(eng_db *db, trial *tr) {
    for (int i = 0; i < tr->nb; i++) tr->p[tr->bits[i] / 8] ^= (uint8_t)(1u << (tr->bits[i] % 8));
    int rc = eng_debug_frame_check(db, tr->block);
    for (int i = 0; i < tr->nb; i++) tr->p[tr->bits[i] / 8] ^= (uint8_t)(1u << (tr->bits[i] % 8));
    eng_debug_frame_release(db, tr->block);
    tr->p = NULL;
    return rc;
}

static void record_trial(flt_ctx *f, flt_thr *t, const trial *tr, const char *parity, int rc) {
    char list[8 * 8];
    size_t ll = 0;
    list[0] = 0;
    for (int i = 0; i < tr->nb; i++)
        ll += (size_t)snprintf(list + ll, sizeof list - ll, "%s%llu", i ? "," : "", (unsigned long long)tr->bits[i]);
    flt_event e = flt_event_for(f, t, FLT_BITFLIP_CACHE, "tick/cache");
    e.file = "data";
    e.block = (int64_t)tr->block;
    e.offset = (int64_t)(tr->block * tr->ps);
    e.len = (int64_t)tr->ps;
    e.bit = (int64_t)tr->bits[0];
    e.mask = 1u << (tr->bits[0] % 8);
    e.part_offset = (int64_t)tr->part.a;
    e.part_len = (int64_t)(tr->part.b - tr->part.a);
    e.part_code = tr->part.a == tr->hdr.a ? "page" : "entry";
    e.pattern = pat_names[tr->pat];
    e.region = rg_names[tr->rg];
    e.nbits = tr->nb;
    e.bits = list;
    e.parity = parity;
    e.check = rc < 0 ? "none" : rc ? "detected" : "escaped";
    flt_record(f, FLT_BITFLIP_CACHE, &e);
}

void flt_cache_pattern(flt_ctx *f, flt_thr *t, eng_db *db) {
    uint64_t nblocks = eng_debug_nblocks(db);
    if (!nblocks) return;
    trial tr;
    memset(&tr, 0, sizeof tr);
    tr.pat = (int)draw(f, t, PAT_COUNT);
    tr.rg = (int)draw(f, t, RG_COUNT);
    if (!latch_page(f, t, db, nblocks, &tr)) return; /* none resident: nothing to flip, no line */
    /* A leaf a reader loaded and nobody used since carries no codes yet
     * (the pool proves it by its page checksum until its next use): code
     * it now, so the trial measures the codes, not the checksum.  Random
     * flips (inject.c) leave such frames as they are, so the checksum's
     * watch over them is exercised there. */
    if (eng_debug_frame_code(db, tr.block) != 0) {
        eng_debug_frame_release(db, tr.block);
        return;
    }
    tr.leaf = tr.p[PH_TYPE_OFF] == PAGE_LEAF;
    if (!tr.leaf && tr.rg <= RG_VERSION) tr.rg = RG_SEPARATOR;
    if (tr.leaf && tr.rg == RG_SEPARATOR) tr.rg = RG_KEY;
    unsigned n = get16(tr.p + PH_NSLOTS_OFF), slot = (unsigned)draw(f, t, n);
    tr.hdr = (span){PH_BLOCK_OFF, PAGE_HDR};
    if (!entry_parts(tr.p, tr.ps, slot, &tr.sl, &tr.hd, &tr.rest)) {
        eng_debug_frame_release(db, tr.block);
        return;
    }
    place_region(f, t, &tr);
    draw_bits(f, t, &tr);
    const char *parity = parity_of(&tr);
    int rc = check_flipped(db, &tr);
    record_trial(f, t, &tr, parity, rc);
}

/* ---- a drawn flip (flt_tick) or a pinned one (flt_flip_cache_at) ---- */

static size_t clamp(size_t v, size_t lo, size_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The bytes of a cached page that hold something: the header, then for
 * leaves and internal pages the slot array [HDR, lower) and the cells
 * [upper, ps); for other types the payload their header says they carry.
 * Fills R with up to three [start, end) ranges; returns their count.  The
 * header fields are read from memory a fault may already have changed, so
 * every range is clamped to the page. */
static int used_ranges(const uint8_t *p, size_t ps, size_t r[3][2]) {
    int n = 0;
    size_t hdr = PAGE_HDR;
    r[n][0] = 0, r[n][1] = hdr, n++;
    switch (p[PH_TYPE_OFF]) {
    case PAGE_LEAF:
    case PAGE_INTERNAL: {
        size_t lower = clamp(get16(p + PH_LOWER_OFF), hdr, ps);
        size_t upper = clamp(get16(p + PH_UPPER_OFF), lower, ps);
        if (lower > hdr) r[n][0] = hdr, r[n][1] = lower, n++;
        if (upper < ps) r[n][0] = upper, r[n][1] = ps, n++;
        break;
    }
    case PAGE_OVERFLOW: r[0][1] = hdr + clamp(get32(p + PH_AUX_OFF), 0, ps - hdr); break;
    case PAGE_META:
        r[0][1] = META_OFF_CLOGN; /* magic .. height */
        break;
    case PAGE_FREE: r[0][1] = hdr + 4 * clamp(get32(p + PH_AUX_OFF), 0, (ps - hdr) / 4); break;
    default: break;
    }
    return n;
}

/* The bytes around BYTE that one parity bit of the engine's per-KV codes
 * covers, as far as the page's layout tells (engine/kvprot.h), and which
 * code that is (*CODE, the ledger's part_code): the header's steering
 * fields [16, 40) and a page without slots from byte 16 on ("page": the
 * 4-byte page code); a slot, or a cell taken from its start to the next
 * cell's (dead bytes between included: wider is safe) ("entry": the w-byte
 * entry codes); the checksum and LSN fields [0, 16) and a leaf's hint byte
 * ("none": no code covers them, and no read follows them to an answer:
 * a hint is used only where the transaction status agrees).  Two flips
 * in one part may cancel in a code's parity and escape with the odds of
 * that code's hash bits; in different parts never. */
static void flip_part(const uint8_t *p, size_t ps, size_t byte, size_t *off, size_t *len, const char **code) {
    unsigned type = p[PH_TYPE_OFF];
    *off = 0, *len = ps, *code = "page";
    if (byte < PH_BLOCK_OFF) {
        *len = PH_BLOCK_OFF, *code = "none";
        return;
    }
    if (byte < PAGE_HDR) {
        *off = PH_BLOCK_OFF, *len = PAGE_HDR - PH_BLOCK_OFF;
        return;
    }
    if (type != PAGE_LEAF && type != PAGE_INTERNAL) {
        *off = PAGE_HDR;
        *len = ps - PAGE_HDR;
        return;
    }
    *code = "entry";
    size_t base = PAGE_HDR + (type == PAGE_LEAF ? LEAF_HINT_BYTES(ps) : 0);
    size_t lower = clamp(get16(p + PH_LOWER_OFF), PAGE_HDR, ps);
    if (byte < base) {
        *off = byte, *len = 1, *code = "none";
        return;
    }
    if (byte < lower) {
        *off = base + (byte - base) / 2 * 2, *len = 2;
        return;
    }
    size_t start = clamp(get16(p + PH_UPPER_OFF), lower, ps), end = ps;
    size_t n = clamp(get16(p + PH_NSLOTS_OFF), 0, (ps - base) / 2);
    for (size_t i = 0; i < n; i++) {
        size_t o = get16(p + base + 2 * i);
        if (o <= byte && o > start) start = o;
        if (o > byte && o < end) end = o;
    }
    if (start > byte) start = byte;
    *off = start, *len = end - start;
}

/* The seq of an earlier cache flip of this process in BLOCK's part [PO,
 * PO + PL) whose byte still holds the value that flip left in frame P
 * (it may still be there: the page was neither reloaded nor rewritten
 * there since), or -1.  A flip whose page was dropped when a check found
 * it, or whose bytes an edit replaced, pairs with nothing: counting every
 * earlier flip of the part over a whole run let 978 flips at w = 1 allow
 * 12 escapes.  A byte that holds the value again by chance only widens
 * the oracle's bound.  Under dmg_mu. */
static int64_t crecent_pair(flt_ctx *f, uint64_t block, const uint8_t *p, size_t po, size_t pl) {
    int64_t pair = -1;
    for (flt_crecent **rp = &f->crecent[block % FLT_CRECENT_BUCKETS]; *rp;) {
        flt_crecent *r = *rp;
        if (r->block == block && p[r->byte] != r->val) { /* gone: a reload or an edit took it */
            *rp = r->next;
            free(r);
            continue;
        }
        if (r->block == block && r->byte >= po && r->byte < po + pl) pair = (int64_t)r->seq;
        rp = &r->next;
    }
    return pair;
}

/* 1 if flipping MASK at BYTE of BLOCK undoes an earlier flip still noted
 * there (crecent_pair has dropped the ones that are gone).  Under dmg_mu. */
static int crecent_undoes(flt_ctx *f, uint64_t block, size_t byte, uint8_t mask) {
    for (flt_crecent *r = f->crecent[block % FLT_CRECENT_BUCKETS]; r; r = r->next)
        if (r->block == block && r->byte == byte && r->mask == mask) return 1;
    return 0;
}

/* The ledger's pair_check for a flip of MASK at BYTE of BLOCK's held
 * frame P that pairs with an earlier one in a part CODE covers: the
 * frame's codes are tested with the bit flipped and without (restored
 * before anyone else can latch the frame).  A part of the page code
 * escaped when the flip makes that code match again; an entry's part
 * (which lies under one entry code) when fewer entry codes mismatch with
 * the flip: the part holds an even count of flips its code cannot see
 * ("escaped").  Under dmg_mu, before the flip's ledger line. */
static const char *pair_check(flt_ctx *f, eng_db *db, uint64_t block, uint8_t *p, size_t byte, uint8_t mask,
                              const char *code) {
    if (crecent_undoes(f, block, byte, mask)) return "none"; /* the part is as it was */
    if (strcmp(code, "page") && strcmp(code, "entry")) return "none";
    int pb, pa;
    int before = eng_debug_frame_mismatches(db, block, &pb);
    p[byte] ^= mask;
    int after = eng_debug_frame_mismatches(db, block, &pa);
    p[byte] ^= mask;
    if (before < 0 || after < 0) return "none";
    int escaped = !strcmp(code, "page") ? pb && !pa : after < before;
    return escaped ? "escaped" : "detected";
}

/* Note the flip SEQ that left VAL at BYTE of BLOCK's frame.  Under dmg_mu.
 * Without memory it is not noted: a later flip then names no pair, which
 * errs toward failing. */
static void crecent_note(flt_ctx *f, uint64_t seq, uint64_t block, size_t byte, uint8_t val, uint8_t mask) {
    flt_crecent *r = malloc(sizeof *r);
    if (!r) return;
    *r = (flt_crecent){seq, block, (uint32_t)byte, val, mask, f->crecent[block % FLT_CRECENT_BUCKETS]};
    f->crecent[block % FLT_CRECENT_BUCKETS] = r;
}

/* Flip bit BIT of BLOCK's frame P (PS bytes, held by eng_debug_frame_bytes,
 * released here) with its ledger line at tick/cache: a tick's drawn
 * flip and a replayed trace's pinned one (flt_flip_cache_at) alike. */
static void flip_cache_bit(flt_ctx *f, flt_thr *t, eng_db *db, uint64_t block, uint8_t *p, size_t ps, uint64_t bit) {
    size_t byte = (size_t)(bit / 8);
    uint8_t mask = (uint8_t)(1u << (bit % 8));
    flt_event e = flt_page_event(f, t, FLT_BITFLIP_CACHE, "tick/cache", block, block * ps, ps);
    e.bit = (int64_t)bit;
    e.mask = mask;
    size_t po, pl;
    flip_part(p, ps, byte, &po, &pl, &e.part_code);
    e.part_offset = (int64_t)po;
    e.part_len = (int64_t)pl;
    uint64_t seq;
    /* dmg_mu held from the pair test to the note: another thread's flip
     * of the same frame cannot come between (the frame latch keeps it
     * out too). */
    pthread_mutex_lock(&f->dmg_mu);
    e.pair_of = crecent_pair(f, block, p, po, pl);
    if (e.pair_of >= 0) e.pair_check = pair_check(f, db, block, p, byte, mask, e.part_code);
    int rc = flt_record_seq(f, FLT_BITFLIP_CACHE, &e, &seq);
    if (rc == 0) {
        p[byte] ^= mask;
        crecent_note(f, seq, block, byte, p[byte], mask);
    }
    pthread_mutex_unlock(&f->dmg_mu);
    if (rc == 0) flt_cflip_note(f, seq, block, p, ps, byte, mask);
    eng_debug_frame_release(db, block);
}

void flt_tick_cache(flt_ctx *f, flt_thr *t, eng_db *db) {
    if (f->o.cache_patterns) {
        flt_cache_pattern(f, t, db);
        return;
    }
    uint64_t nblocks = eng_debug_nblocks(db);
    if (!nblocks) return;
    /* Up to eight blocks are tried for one that is resident: with a cache
     * much smaller than the database, one try finds a frame rarely, and a
     * class drawn 1 in N ops would flip far fewer than that. */
    uint64_t block = 0;
    size_t ps = 0;
    uint8_t *p = NULL;
    for (int k = 0; k < 8 && !p; k++) {
        block = flt_below(f, t, FLT_BITFLIP_CACHE, nblocks);
        p = eng_debug_frame_bytes(db, block, &ps);
    }
    if (!p) return; /* none resident: nothing to flip, no line */
    size_t r[3][2];
    int n = used_ranges(p, ps, r);
    uint64_t total = 0;
    for (int i = 0; i < n; i++) total += r[i][1] - r[i][0];
    /* One flip in four lands in the header (a 40-byte range that uniform
     * draws over the used bytes would hit about 1% of the time): the page
     * code (KV3, KV4 before write-back) is the header's only guard. */
    int in_header = flt_below(f, t, FLT_BITFLIP_CACHE, 4) == 0;
    uint64_t k = flt_below(f, t, FLT_BITFLIP_CACHE, (in_header ? r[0][1] - r[0][0] : total) * 8);
    uint64_t byte = 0;
    for (int i = 0; i < (in_header ? 1 : n); i++) {
        uint64_t sz = r[i][1] - r[i][0];
        if (k < sz * 8) {
            byte = r[i][0] + k / 8;
            break;
        }
        k -= sz * 8;
    }
    flip_cache_bit(f, t, db, block, p, ps, byte * 8 + k % 8);
}

void flt_flip_cache_at(flt_ctx *f, eng_db *db, uint64_t block, uint64_t bit) {
    if (!f || !db || block >= eng_debug_nblocks(db)) return;
    size_t ps = 0;
    uint8_t *p = eng_debug_frame_bytes(db, block, &ps);
    if (!p) return; /* not resident: nothing to flip, no line (as a draw that finds no frame) */
    /* Any read of the file here is the library's, as flt_tick's (door.h). */
    flt_door_bypass(1);
    flip_cache_bit(f, flt_thr_get(f), db, block, p, ps, bit % ((uint64_t)ps * 8));
    flt_door_bypass(0);
}
